//! `coloc bench sim`'s table: the simulator's speed as
//! [`coloc_harness::timing::sim`] measures it, each figure beside a
//! baseline commit's ([`Baseline`]: `sim-baseline.toml`, the figures of the
//! commit before the simulator was made faster, unless `--baseline` names
//! another file).

use std::time::Duration;

use coloc_harness::timing::sim::{Baseline, SimSpeed, SimStep, ORACLE_CONFIGS};

/// The stored baseline's file.
const BASELINE: &str = include_str!("sim-baseline.toml");

/// The stored baseline (`sim-baseline.toml`).
pub fn stored_baseline() -> Baseline {
    Baseline::parse("sim-baseline.toml", BASELINE).expect("the stored baseline parses")
}

/// What starts next, as `bench sim` tells it on stderr.
pub fn step(s: SimStep<'_>) -> String {
    match s {
        SimStep::Engine(policy) => format!("engine: {policy} on nupoco-amd64"),
        SimStep::Oracle => format!("oracle: {ORACLE_CONFIGS} configurations on opteron48"),
    }
}

/// The engine's runs and the oracle's, each beside `base`'s figure with
/// their ratio.
pub fn render(speed: &SimSpeed, base: &Baseline) -> String {
    let secs = Duration::as_secs_f64;
    let beside = |now: f64, then: Option<f64>| match then {
        Some(b) if b > 0.0 => format!("{b:>12.0} {:>7.1}x", now / b),
        _ => format!("{:>12} {:>8}", "-", "-"),
    };
    let mut out =
        "engine: 8-app dynamic workload on nupoco-amd64 (64 cores), 100 ms epochs\n".to_string();
    out += &format!(
        "{:<16} {:>8} {:>7} {:>8} {:>10} {:>9} {:>9} {:>10} {:>10} {:>12} {:>8}\n",
        "policy",
        "events",
        "solves",
        "rounds",
        "simulated",
        "wall",
        "cpu",
        "events/s",
        "per cpu s",
        base.commit.as_str(),
        "ratio"
    );
    for e in &speed.engine {
        out += &format!(
            "{:<16} {:>8} {:>7} {:>8} {:>9.1}s {:>8.3}s {:>8.3}s {:>10.0} {:>10.0} {}\n",
            e.policy,
            e.steps,
            e.solves,
            e.rounds,
            secs(&e.simulated),
            secs(&e.wall),
            secs(&e.cpu),
            e.steps_per_s(),
            e.steps_per_cpu_s(),
            beside(e.steps_per_s(), base.events_per_s.get(e.policy).copied())
        );
    }
    let o = &speed.oracle;
    out += &format!(
        "oracle: 4 apps x 8 threads on opteron48 (48 cores), bounded search: {} configurations in {:.2} s on {} threads ({:.2} s CPU) = {:.2} configurations/s ({:.2} per CPU second); {}: {:.2}/s, {:.1}x\n",
        o.evaluated,
        secs(&o.wall),
        o.threads,
        secs(&o.cpu),
        o.configs_per_s(),
        o.configs_per_cpu_s(),
        base.commit,
        base.oracle_configs_per_s,
        o.configs_per_s() / base.oracle_configs_per_s
    );
    out
}

#[cfg(test)]
mod tests {
    use coloc_harness::timing::sim::{EngineSpeed, OracleSpeed};

    use super::*;

    /// The stored baseline parses and holds every default policy.
    #[test]
    fn the_stored_baseline_covers_the_default_policies() {
        let b = stored_baseline();
        for p in ["native", "equal", "resense", "nupoco"] {
            assert!(b.events_per_s.contains_key(p), "{p}");
        }
    }

    /// Each figure is printed beside the baseline's with their ratio; a
    /// policy the baseline lacks gets dashes.
    #[test]
    fn figures_are_printed_beside_the_baseline() {
        let secs = Duration::from_secs;
        let run = |policy, steps| EngineSpeed {
            policy,
            steps,
            solves: 1,
            rounds: 1,
            simulated: secs(10),
            wall: secs(2),
            cpu: secs(1),
        };
        let speed = SimSpeed {
            engine: vec![run("equal", 5000), run("tang", 10)],
            oracle: OracleSpeed {
                evaluated: 64,
                threads: 2,
                wall: secs(2),
                cpu: secs(4),
            },
        };
        let base = Baseline {
            commit: "abc1234".into(),
            events_per_s: [("equal".to_string(), 1250.0)].into(),
            oracle_configs_per_s: 16.0,
        };
        let out = render(&speed, &base);
        let equal = out.lines().find(|l| l.starts_with("equal")).unwrap();
        assert!(
            equal.contains(" 2500 ") && equal.contains(" 5000 "),
            "{equal}"
        );
        assert!(equal.ends_with(" 1250     2.0x"), "{equal}");
        let tang = out.lines().find(|l| l.starts_with("tang")).unwrap();
        assert!(tang.trim_end().ends_with("-        -"), "{tang}");
        assert!(
            out.contains("32.00 configurations/s (16.00 per CPU second); abc1234: 16.00/s, 2.0x"),
            "{out}"
        );
    }
}
