//! Thread caps at launch (`cap_threads`, docs/workload-format.md; per
//! runtime, docs/signals.md, Runtimes and levers): the
//! variables that threaded runtimes read once, when they start, to size
//! their thread pools. coloc cannot change such a pool later (it has no DoP
//! channel into them), so for an app marked `cap_threads` it sets them, at
//! launch, to the team the policy chose then.

/// Variables set to the team's size, one per runtime: OpenBLAS (its pthreads
/// build starts that many threads, the caller included; its OpenMP build
/// takes its teams from the DoP channel and this as a ceiling), Intel MKL,
/// Go (threads running Go code at once) and Rust's rayon (its global pool).
pub const CAPPED_VARS: [&str; 4] = [
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "GOMAXPROCS",
    "RAYON_NUM_THREADS",
];

/// The JVM's options variable: the cap is an option added to what it holds.
pub const JAVA_TOOL_OPTIONS: &str = "JAVA_TOOL_OPTIONS";

/// The environment a `cap_threads` app gets for a team of `team` threads
/// (at least 1): every variable of [`CAPPED_VARS`], and `JAVA_TOOL_OPTIONS`
/// with `-XX:ActiveProcessorCount=<team>` after the options it had
/// (`java_options_had`), so the JVM sizes its GC and compiler threads and its
/// common fork-join pool (team − 1 workers) as on a machine of that many
/// CPUs.
pub fn launch_caps(team: u32, java_options_had: Option<&str>) -> Vec<(String, String)> {
    let n = team.max(1).to_string();
    let mut env: Vec<(String, String)> = CAPPED_VARS
        .iter()
        .map(|v| (v.to_string(), n.clone()))
        .collect();
    let cap = format!("-XX:ActiveProcessorCount={n}");
    env.push((
        JAVA_TOOL_OPTIONS.to_string(),
        java_options(java_options_had, &cap),
    ));
    env
}

/// The options `own` (the JVM's options variable as it was) with `more`
/// after them: the JVM reads its options in order, so coloc's win.
pub fn java_options(own: Option<&str>, more: &str) -> String {
    match own.map(str::trim).filter(|o| !o.is_empty()) {
        Some(own) => format!("{own} {more}"),
        None => more.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_runtime_gets_the_team_and_the_jvm_keeps_its_options() {
        let env = launch_caps(3, Some("-Xmx1g"));
        let get = |k: &str| env.iter().find(|(v, _)| v == k).map(|(_, x)| x.as_str());
        for v in CAPPED_VARS {
            assert_eq!(get(v), Some("3"), "{v}");
        }
        assert_eq!(
            get(JAVA_TOOL_OPTIONS),
            Some("-Xmx1g -XX:ActiveProcessorCount=3")
        );
        let env = launch_caps(0, None);
        assert!(
            env.contains(&("GOMAXPROCS".into(), "1".into())),
            "a team is at least 1"
        );
        assert!(env.contains(&(
            JAVA_TOOL_OPTIONS.into(),
            "-XX:ActiveProcessorCount=1".into()
        )));
    }
}
