//! The oracle (docs/simulator.md, The oracle): on a 4-CPU machine of two L2 pairs it finds
//! what brute force over every raw placement (and DoP) finds; its counts are
//! the hand-computed ones; a space larger than `max_configs` is searched
//! bounded and says so; its best plan replays through the Manager as a policy
//! with the workload's own epoch to the same result.

use std::time::Duration;

use coloc_manager::{run, RunOptions};
use coloc_model::workload::parse_workload;
use coloc_model::{Cpu, TraceEvent, Workload};
use coloc_sim::oracle::{search, Config, Metric, OracleError, OracleOptions, OraclePolicy};
use coloc_sim::{platform, Platform, SimMachine};

/// Two L2s of 4 MiB, two CPUs each (CPUs 0,1 and 2,3), default figures.
fn pairs() -> Platform {
    Platform::from_topology(
        coloc_model::Topology::synthetic("pairs", "package:1 l2(4M):2 core:2").unwrap(),
    )
}

/// A sharing app and a streaming one, 2 threads each; the streaming one is
/// malleable (DoP 1 or 2).
const WORKLOAD: &str = r#"
name = "pair"

[[app]]
name = "sc"
model = "streamcluster"
threads = 2

[[app]]
name = "mg"
model = "mg"
threads = 2
malleable = true
"#;

fn workload(text: &str) -> Workload {
    parse_workload("w.toml", text).unwrap()
}

/// Runs `config` through the Manager with the given epoch; exit times per app.
fn replay(p: &Platform, w: &Workload, config: &Config, epoch: Duration) -> Vec<f64> {
    let mut m = SimMachine::new(p.clone(), 1);
    let mut policy = OraclePolicy::new(config.clone());
    let opts = RunOptions::simulated(epoch, 1);
    let mut trace: Vec<TraceEvent> = Vec::new();
    run(&mut m, &mut policy, w, &opts, &mut trace).unwrap();
    let mut exits = vec![f64::NAN; w.apps.len()];
    for e in &trace {
        if let TraceEvent::Exit { t, app, .. } = e {
            exits[app.app as usize] = t.as_secs_f64();
        }
    }
    exits
}

/// Every way to put `threads` threads on the 4 CPUs, one per CPU (CPU lists
/// in increasing order: the threads of one app are alike).
fn subsets(threads: usize, cpus: &[Cpu]) -> Vec<Vec<Cpu>> {
    if threads == 0 {
        return vec![Vec::new()];
    }
    let mut out = Vec::new();
    for (i, &c) in cpus.iter().enumerate() {
        for mut rest in subsets(threads - 1, &cpus[i + 1..]) {
            rest.insert(0, c);
            out.push(rest);
        }
    }
    out
}

#[test]
fn finds_the_brute_force_optimum() {
    let p = pairs();
    let w = workload(WORKLOAD);
    let report = search(&p, &w, &OracleOptions::default()).unwrap();
    // DoP of mg 1: sc's 2 threads on one L2 or split (2 configurations), mg's
    // thread beside one of them; DoP 2: {aa}{bb} or {ab}{ab} (2). Hand count:
    // DoP 1: {aa}{b}, {ab}{a} = 2 of 4!/(2!·1!·1!) = 12 raw; DoP 2: 2 of 6.
    assert_eq!(report.configurations, Some(4.0));
    assert_eq!(report.raw_placements, Some(18.0));
    assert_eq!(report.dop_splits, 2);
    assert!(!report.bounded);
    assert_eq!(report.evaluated, 4);
    assert_eq!(report.raw_covered, 18.0);

    // Brute force: every DoP of mg, every CPU subset of each app, disjoint.
    let all: Vec<Cpu> = vec![0, 1, 2, 3];
    let mut best = f64::INFINITY;
    let mut runs = 0;
    for mg_dop in [1, 2] {
        for sc in subsets(2, &all) {
            let free: Vec<Cpu> = all.iter().copied().filter(|c| !sc.contains(c)).collect();
            for mg in subsets(mg_dop, &free) {
                let config = Config {
                    cpus: vec![sc.clone(), mg],
                    dop: vec![None, Some(mg_dop as u32)],
                    sharing: String::new(),
                };
                let exits = replay(&p, &w, &config, Duration::from_secs(3600));
                best = best.min(exits.iter().copied().fold(0.0, f64::max));
                runs += 1;
            }
        }
    }
    assert_eq!(runs, 18);
    let found = report.best_for(Metric::Makespan).unwrap();
    assert!(
        (found.value - best).abs() <= 1e-9 * best,
        "oracle {} vs brute force {best}",
        found.value
    );
    // The report names what it did.
    let text = report.to_string();
    assert!(text.contains("exhaustive"), "{text}");
    assert!(text.contains("a = sc, b = mg"), "{text}");
}

/// Replaying the makespan-best configuration as a policy with the workload's
/// epoch (100 ms decisions) gives the exit times the search measured.
#[test]
fn best_plan_replays_as_a_policy() {
    let p = pairs();
    let w = workload(WORKLOAD);
    let report = search(&p, &w, &OracleOptions::default()).unwrap();
    let best = report.best_for(Metric::Makespan).unwrap();
    let exits = replay(&p, &w, &best.config, Duration::from_millis(100));
    for (got, want) in exits.iter().zip(&best.scores.exit_s) {
        assert!((got - want).abs() <= 1e-6 * want, "{got} vs {want}");
    }
    assert_eq!(
        report.policy(Metric::Makespan).unwrap().config(),
        &best.config
    );
}

/// Opteron 48 cores, 4 apps of 8 threads: far more configurations than the
/// budget, so the search is bounded, evaluates no more than the budget, and
/// says that its values are bounds.
#[test]
fn a_large_space_is_searched_bounded() {
    let p = platform("opteron48").unwrap();
    let mut text = String::new();
    for (i, m) in ["ep", "ep", "swaptions", "swaptions"].iter().enumerate() {
        text.push_str(&format!(
            "[[app]]\nname = \"a{i}\"\nmodel = \"{m}\"\nthreads = 8\n"
        ));
    }
    let w = workload(&text);
    let calls = std::sync::atomic::AtomicUsize::new(0);
    let progress = |_: &coloc_sim::oracle::Progress| {
        calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    };
    let opts = OracleOptions {
        max_configs: 6,
        progress: Some(&progress),
        ..OracleOptions::default()
    };
    let report = search(&p, &w, &opts).unwrap();
    assert!(report.bounded);
    assert!(
        report.evaluated <= 6 && report.evaluated > 0,
        "{}",
        report.evaluated
    );
    assert!(report.configurations.unwrap() > 1e6);
    assert!(calls.into_inner() > 0);
    assert!(report.to_string().contains("BOUNDED"), "{report}");
}

/// Dynamic workloads, simulated-only requirements and solo times are checked
/// before anything runs.
#[test]
fn refuses_what_it_cannot_search() {
    let p = pairs();
    let cases = [
        (
            "[[app]]\nname = \"x\"\nmodel = \"mg\"\nthreads = 2\narrive_at = \"1s\"\n",
            "arrives at",
        ),
        (
            "[[app]]\nname = \"x\"\nmodel = \"mg\"\nthreads = 2\nrepeat = 2\n",
            "repeats 2 times",
        ),
        (
            "[[app]]\nname = \"x\"\nmodel = \"quake\"\nthreads = 2\n",
            "unknown model `quake`",
        ),
        (
            "[[app]]\nname = \"x\"\ncommand = [\"true\"]\nthreads = 2\n",
            "no `model`",
        ),
    ];
    for (text, want) in cases {
        let err = search(&p, &workload(text), &OracleOptions::default()).unwrap_err();
        assert!(err.to_string().contains(want), "{err}");
    }
    let opts = OracleOptions {
        solo_s: Some(vec![1.0]),
        ..OracleOptions::default()
    };
    let err = search(&p, &workload(WORKLOAD), &opts).unwrap_err();
    assert_eq!(err, OracleError::Solo(1, 2));
}

/// With solo times the Hmean speedup is scored too (n / Σ co-located/solo),
/// and the report does not depend on the number of worker threads.
#[test]
fn hmean_with_solo_times() {
    let p = pairs();
    let w = workload(WORKLOAD);
    let opts = OracleOptions {
        solo_s: Some(vec![10.0, 10.0]),
        threads: 1,
        ..OracleOptions::default()
    };
    let report = search(&p, &w, &opts).unwrap();
    let h = report.best_for(Metric::Hmean).unwrap();
    let s = &h.scores;
    let want = 2.0 / (s.exit_s[0] / 10.0 + s.exit_s[1] / 10.0);
    assert!((h.value - want).abs() < 1e-12);
    assert_eq!(report.best.len(), 4);
    // One worker thread or several: the same result.
    let parallel = search(&p, &w, &OracleOptions { threads: 2, ..opts }).unwrap();
    assert_eq!(parallel, report);
}

/// A bounded search (seeded samples, then local improvement batch after
/// batch around each metric's best) finds the same configurations with one
/// worker thread or two: batches are fixed and their results taken in order,
/// so how the workers share a batch cannot change which configuration is
/// best. Opteron 48, two malleable mg beside streamcluster and ep, 4
/// threads each: far more configurations than the budget of 40, so 21
/// seeds and samples, then local improvement, in four batches.
#[test]
fn a_bounded_search_does_not_depend_on_the_worker_threads() {
    let p = platform("opteron48").unwrap();
    let mut text = String::new();
    for (i, m) in ["mg", "mg", "streamcluster", "ep"].iter().enumerate() {
        text.push_str(&format!(
            "[[app]]\nname = \"a{i}\"\nmodel = \"{m}\"\nthreads = 4\nmalleable = true\n"
        ));
    }
    let w = workload(&text);
    let opts = |threads| OracleOptions {
        max_configs: 40,
        threads,
        ..OracleOptions::default()
    };
    let one = search(&p, &w, &opts(1)).unwrap();
    assert!(one.bounded && one.evaluated > 32, "{one}");
    let two = search(&p, &w, &opts(2)).unwrap();
    assert_eq!(one, two);
}
