//! Thread Tranquilizer in the simulator (docs/policies/tranquilizer.md): on
//! the paper's machine (`opteron-8431`), run-to-run variation across seeds
//! under Linux alone (`native`) and under `tranquilizer`, per app: the
//! coefficient of variation of its execution time and its mean.

use std::collections::BTreeMap;
use std::time::Duration;

use coloc_manager::{run, RunOptions};
use coloc_model::stats::Summary;
use coloc_model::workload::parse_workload;
use coloc_model::TraceEvent;
use coloc_policy::PolicyContext;
use coloc_sim::model::{AppModel, Phase};
use coloc_sim::{platform, SimMachine};

/// `name` from the library, renamed, with one serial phase and one parallel
/// phase of `ginstr` 10^9 instructions.
fn short(name: &str, ginstr: f64) -> AppModel {
    let mut m = coloc_sim::model::model(name).unwrap();
    m.name = format!("t-{name}");
    m.phases = vec![Phase::serial(0.05), Phase::parallel(ginstr)];
    m
}

fn models() -> Vec<AppModel> {
    let mut mg_short = short("mg", 12.0);
    mg_short.name = "t-mg-short".into();
    vec![
        mg_short,
        short("mg", 60.0),
        short("streamcluster", 60.0),
        short("canneal", 40.0),
        short("swaptions", 600.0),
    ]
}

/// Execution time (s) of every app instance of a run, by app name.
fn times(policy: &str, workload: &str, seed: u64) -> BTreeMap<String, f64> {
    let w = parse_workload("t.toml", workload).unwrap();
    let mut m = SimMachine::new(platform("opteron-8431").unwrap(), seed).with_models(models());
    let mut p = coloc_policy::build(policy, &PolicyContext::default()).unwrap();
    let mut trace: Vec<TraceEvent> = Vec::new();
    run(
        &mut m,
        p.as_mut(),
        &w,
        &RunOptions::simulated(Duration::from_millis(100), seed),
        &mut trace,
    )
    .unwrap();
    let mut start = BTreeMap::new();
    let mut out = BTreeMap::new();
    for e in &trace {
        match e {
            TraceEvent::Start { t, app, .. } => {
                start.insert(*app, *t);
            }
            TraceEvent::Exit { t, app, .. } => {
                let name = w.apps[app.app as usize].name.clone();
                out.insert(name, (*t - start[app]).as_secs_f64());
            }
            _ => {}
        }
    }
    out
}

/// (CV, mean) of `values`.
fn cv_mean(values: &[f64]) -> (f64, f64) {
    let s = Summary::of(values).unwrap();
    (s.cv.unwrap_or(0.0), s.mean)
}

/// Per app: its times over seeds 1..=`seeds`, plus the makespan of each run
/// under `(makespan)` (every app starts at 0).
fn runs(policy: &str, workload: &str, seeds: u64) -> BTreeMap<String, Vec<f64>> {
    let mut by_app: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for seed in 1..=seeds {
        let t = times(policy, workload, seed);
        let makespan = t.values().copied().fold(0.0, f64::max);
        by_app.entry(MAKESPAN.into()).or_default().push(makespan);
        for (app, secs) in t {
            by_app.entry(app).or_default().push(secs);
        }
    }
    by_app
}

const MAKESPAN: &str = "(makespan)";

/// Per app: (CV, mean) of its time over `seeds`.
fn variation(policy: &str, workload: &str, seeds: u64) -> BTreeMap<String, (f64, f64)> {
    runs(policy, workload, seeds)
        .into_iter()
        .filter(|(app, _)| app != MAKESPAN)
        .map(|(app, v)| (app, cv_mean(&v)))
        .collect()
}

const SOLO_MG: &str = r#"
name = "mg-48"
[[app]]
name = "mg"
model = "t-mg"
threads = 48
"#;

/// Tranquilizer's memory-intensive target from the start, under Linux.
const SOLO_MG_FIXED: &str = r#"
name = "mg-48-interleaved"
[[app]]
name = "mg"
model = "t-mg"
threads = 48
memory = "interleave"
sched = { nice = 0, slice_us = 100000 }
"#;

const SOLO_SWAPTIONS: &str = r#"
name = "swaptions-48"
[[app]]
name = "swaptions"
model = "t-swaptions"
threads = 48
"#;

/// What Tranquilizer acts on exists in the model: on the paper's machine,
/// 48 threads of a memory-bound app under Linux vary with where the balancer
/// first put them (first touch) and where it moves them; the same app with
/// Tranquilizer's memory-intensive settings (interleaved pages, a fixed
/// 100 ms slice) from its start varies less, for at most 5% more time: in
/// the model first touch keeps native's threads beside their pages most of
/// the time, so interleaving's remote accesses (3 of 4 across HyperTransport
/// at 2.5× the latency) cost a little more than the refills it saves (the
/// paper's speed-up, §2.2, came from OpenSolaris moving threads away from
/// their pages far more often; docs/policies/tranquilizer.md).
/// Deterministic: five seeds, each a pure function of its seed.
#[test]
fn interleaving_a_memory_bound_app_evens_out_its_runs() {
    let short_mg = |memory: &str| {
        format!(
            "name = \"mg\"\n[[app]]\nname = \"mg\"\nmodel = \"t-mg-short\"\nthreads = 48\n{memory}"
        )
    };
    let native = short_mg("");
    let fixed = short_mg("memory = \"interleave\"\nsched = { nice = 0, slice_us = 100000 }\n");
    let (n_cv, n_mean) = variation("native", &native, 5)["mg"];
    let (f_cv, f_mean) = variation("native", &fixed, 5)["mg"];
    assert!(n_cv > 0.0, "native varies across seeds: {n_cv}");
    assert!(
        f_cv < n_cv && f_mean < 1.05 * n_mean,
        "interleaved: CV {f_cv:.4} mean {f_mean:.3} s; native: CV {n_cv:.4} mean {n_mean:.3} s"
    );
}

/// The policy itself, on the paper's machine over 10 seeds (§3, Table V):
/// a memory-bound app (mg, 48 threads on 24 cores, ~25 LLC misses per 1000
/// instructions, above Δ) is classified memory-intensive; interleaving its
/// pages takes away the home node the scheduler keeps pulling its threads
/// back to, so fewer migrations and cold-cache refills — a lower mean miss
/// rate with a smaller spread, which the judge keeps — and its time varies
/// less, for at most 5% more time than under Linux alone (see
/// `interleaving_a_memory_bound_app_evens_out_its_runs`). A compute-bound app
/// (swaptions, 0.3 accesses per 1000 instructions) only gets the CPU trial;
/// its time varies no more and is no longer than under Linux alone.
#[test]
fn tranquilizer_steadies_a_memory_bound_app_and_spares_a_compute_bound_one() {
    let (n_cv, n_mean) = variation("native", SOLO_MG, 10)["mg"];
    let (t_cv, t_mean) = variation("tranquilizer", SOLO_MG, 10)["mg"];
    assert!(
        t_cv < n_cv && t_mean < 1.05 * n_mean,
        "mg: tranquilizer CV {t_cv:.4} mean {t_mean:.3} s; native CV {n_cv:.4} mean {n_mean:.3} s"
    );
    let (n_cv, n_mean) = variation("native", SOLO_SWAPTIONS, 10)["swaptions"];
    let (t_cv, t_mean) = variation("tranquilizer", SOLO_SWAPTIONS, 10)["swaptions"];
    assert!(
        t_cv <= n_cv && t_mean <= n_mean,
        "swaptions: tranquilizer CV {t_cv:.4} mean {t_mean:.3} s; native CV {n_cv:.4} mean {n_mean:.3} s"
    );
}

#[test]
#[ignore = "measurement: prints the table"]
fn print_variation() {
    let only = std::env::var("TRANQ_CASES").unwrap_or_default();
    let cases = [
        (SOLO_MG, "mg-48", "native"),
        (SOLO_MG, "mg-48", "tranquilizer"),
        (SOLO_MG_FIXED, "mg-48 interleave+100ms fixed", "native"),
        (SOLO_SWAPTIONS, "swaptions-48", "native"),
        (SOLO_SWAPTIONS, "swaptions-48", "tranquilizer"),
    ];
    println!("| workload | policy | app | CV % | mean s |");
    println!("|---|---|---|---|---|");
    for (k, (w, name, policy)) in cases.into_iter().enumerate() {
        if !only.is_empty() && !only.split(',').any(|c| c == k.to_string()) {
            continue;
        }
        for (app, (cv, mean)) in variation(policy, w, 10) {
            println!(
                "| {name} | {policy} | {app} | {:.2} | {mean:.3} |",
                cv * 100.0
            );
        }
    }
}

/// Figure 9's co-run (§3.1.1): `examples/sim/tranquilizer-figure9.toml`,
/// four memory-intensive apps, 90 threads on 24 cores, under `native` and
/// `tranquilizer`, 10 seeds each: per app the CV and mean of its time, and
/// per run the makespan of the four (the figure's third row). Then `native`
/// with Tranquilizer's memory-intensive settings given to every app from its
/// start, interleaving alone and with the 100 ms slice, which separates what
/// each setting does to each app in the model. `FIG9_CASES=0,1` runs only
/// those rows.
#[test]
#[ignore = "measurement: prints the table (use --release)"]
fn print_figure9() {
    let workload = include_str!("../../../examples/sim/tranquilizer-figure9.toml");
    let with = |extra: &str| {
        workload
            .lines()
            .flat_map(|l| {
                let more = l.starts_with("threads =").then_some(extra);
                std::iter::once(l).chain(more)
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let cases = [
        ("native", "native", workload.to_string()),
        ("tranquilizer", "tranquilizer", workload.to_string()),
        (
            "native + interleave",
            "native",
            with("memory = \"interleave\""),
        ),
        (
            "native + interleave + 100 ms slice",
            "native",
            with("memory = \"interleave\"\nsched = { slice_us = 100000 }"),
        ),
    ];
    let only = std::env::var("FIG9_CASES").unwrap_or_default();
    println!("| run | app | CV % | mean s |");
    println!("|---|---|---|---|");
    for (k, (label, policy, w)) in cases.iter().enumerate() {
        if !only.is_empty() && !only.split(',').any(|c| c == k.to_string()) {
            continue;
        }
        for (app, v) in runs(policy, w, 10) {
            let (cv, mean) = cv_mean(&v);
            println!("| {label} | {app} | {:.2} | {mean:.3} |", cv * 100.0);
        }
    }
}
