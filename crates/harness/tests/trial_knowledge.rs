//! What `auto` learns of a set of programs changes what it does next time
//! (docs/knowledge.md, Trials of a set of programs): the same mix run again
//! with one store, in the simulator (deterministic), through the harness's
//! own edge (`Knowledge`: what the policy reads, and the run's records and
//! pairs added).

use std::path::Path;
use std::time::Duration;

use coloc_harness::context::refresh;
use coloc_harness::knowledge::Knowledge;
use coloc_harness::Target;
use coloc_manager::{run, RunOptions};
use coloc_model::knowledge::trials::SetPair;
use coloc_model::knowledge::{ProgramKey, Source};
use coloc_model::reason::{Arrangement, Judge, TrialState, Verdict};
use coloc_model::workload::parse_workload;
use coloc_model::{Trace, TraceEvent};
use coloc_policy::{by_name_with, PolicyContext};
use coloc_sim::{platform, SimMachine};
use coloc_store::Store;

#[path = "../../sim/tests/support/long_pair.rs"]
mod long_pair;

/// What the plans' typed trial states say of one run: the decisions made
/// before the first verdict (the trial open), the verdict it reached, the
/// decisions that ran the other arrangement than it (the losing one), and
/// every verdict's stored evidence.
#[derive(Debug)]
struct Trialled {
    open: usize,
    verdict: Arrangement,
    losing: usize,
    verdicts: Vec<Verdict>,
    /// The last exit, s.
    makespan: f64,
}

/// Which arrangement a plan ran, by its verdict's state.
fn ran(state: TrialState) -> Option<Arrangement> {
    match state {
        TrialState::Open(a) | TrialState::Rechecking(a) => Some(a),
        TrialState::OwnKept => Some(Arrangement::Own),
        TrialState::BackToLinux => Some(Arrangement::Linux),
        _ => None,
    }
}

fn settled(state: TrialState) -> Option<Arrangement> {
    match state {
        TrialState::OwnKept | TrialState::Rechecking(Arrangement::Linux) => Some(Arrangement::Own),
        TrialState::BackToLinux | TrialState::Rechecking(Arrangement::Own) => {
            Some(Arrangement::Linux)
        }
        _ => None,
    }
}

fn trialled(events: &[TraceEvent]) -> Trialled {
    let verdicts: Vec<Verdict> = events
        .iter()
        .filter_map(|e| match e {
            TraceEvent::Plan { plan, .. } => plan.verdict(Judge::Auto).cloned(),
            _ => None,
        })
        .filter(|v| v.apps.len() == 2)
        .collect();
    let open = verdicts
        .iter()
        .take_while(|v| settled(v.state).is_none())
        .count();
    let verdict = verdicts
        .iter()
        .rev()
        .find_map(|v| settled(v.state))
        .expect("a verdict");
    let losing = verdicts
        .iter()
        .filter(|v| ran(v.state).is_some_and(|a| a != verdict))
        .count();
    let makespan = events
        .iter()
        .filter_map(|e| match e {
            TraceEvent::Exit { t, .. } => Some(t.as_secs_f64()),
            _ => None,
        })
        .fold(0.0, f64::max);
    Trialled {
        open,
        verdict,
        losing,
        verdicts,
        makespan,
    }
}

/// Runs the pair named `a`, `b` once on the simulator's `kvm-2cpu` with
/// the store at `db`, as `coloc run` would (what auto reads derived from
/// the store, the run's records and pairs added at its end), started at
/// `started_unix`.
fn run_with(db: &Path, (a, b): (&str, &str), started_unix: f64) -> Trialled {
    let w = parse_workload("mix.toml", &long_pair::named(a, b)).unwrap();
    let target = Target::Sim {
        platform: platform("kvm-2cpu").unwrap(),
        seed: 1,
    };
    let k = Knowledge::open(db, &target, &w).unwrap();
    let mut ctx = PolicyContext::default();
    refresh(&mut ctx, Some(&k), &w, &["auto"]).unwrap();
    let mut p = by_name_with("auto", &ctx).unwrap();
    let mut m = SimMachine::new(platform("kvm-2cpu").unwrap(), 1).with_models(long_pair::models());
    let opts = RunOptions {
        started_unix,
        ..RunOptions::simulated(Duration::from_millis(100), 1)
    };
    let mut events = Vec::new();
    let summary = run(&mut m, p.as_mut(), &w, &opts, &mut events).unwrap();
    assert_eq!(summary.failed, 0);
    let t = trialled(&events);
    k.learn(&w, &Trace::from_events(events).unwrap(), Source::Run)
        .unwrap();
    t
}

/// The same mix twice with one store: the second run's trial starts
/// settled on the first's verdict, so it is open for no decision and runs
/// the losing arrangement only in its re-checks; its verdict names the
/// stored pairs. Without the stored pairs (the feature off) both runs are
/// alike. The same programs under other names share them.
#[test]
fn the_same_mix_again_settles_at_once_and_loses_less_time() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store.sqlite");
    let first = run_with(&db, ("long", "barriers"), 1_800_000_000.0);
    let second = run_with(&db, ("long", "barriers"), 1_800_000_100.0);
    eprintln!(
        "first: open {} losing {} ({:?}, {:.3} s); second: open {} losing {} ({:?}, {:.3} s)",
        first.open,
        first.losing,
        first.verdict,
        first.makespan,
        second.open,
        second.losing,
        second.verdict,
        second.makespan
    );
    assert!(first.open > 0, "the first run's trial measured");
    assert!(first.verdicts.iter().all(|v| v.stored.is_none()));
    assert_eq!(second.verdict, first.verdict);
    assert_eq!(second.open, 0, "settled from its first decision");
    assert!(
        second.losing < first.losing,
        "{} decisions in the losing arrangement, {} the first time",
        second.losing,
        first.losing
    );
    // Simulated, so deterministic: less time in the losing arrangement is
    // no longer a makespan.
    assert!(second.makespan <= first.makespan, "{second:?}");
    let stored = second.verdicts[0].stored.expect("the stored pairs named");
    assert_eq!(stored.verdict, Some(first.verdict));
    assert!(stored.pairs >= 2, "{stored:?}");
    assert!(!second
        .verdicts
        .iter()
        .any(|v| v.stored.is_some_and(|s| s.dropped)));
    // Two workload names of the same programs: the same set.
    let renamed = run_with(&db, ("sp", "team"), 1_800_000_200.0);
    assert_eq!(renamed.open, 0);
    assert!(renamed.verdicts[0].stored.is_some());
}

/// A stored verdict the new pairs contradict is dropped, and the verdict
/// says so: the store is given pairs that say the other arrangement than
/// the one this mix settles on won by far, as if an earlier trial had
/// measured it.
#[test]
fn a_stored_verdict_the_mix_contradicts_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let fresh = run_with(
        &dir.path().join("fresh.sqlite"),
        ("long", "barriers"),
        1.8e9,
    );
    let db = dir.path().join("store.sqlite");
    let w = parse_workload("mix.toml", &long_pair::named("long", "barriers")).unwrap();
    let target = Target::Sim {
        platform: platform("kvm-2cpu").unwrap(),
        seed: 1,
    };
    drop(Knowledge::open(&db, &target, &w).unwrap());
    let wrong = match fresh.verdict {
        Arrangement::Own => 0.7_f64,
        Arrangement::Linux => 1.4,
    };
    let mut programs = vec![
        ProgramKey::model("long"),
        ProgramKey::model("barriers-long"),
    ];
    programs.sort();
    let pairs: Vec<SetPair> = (1..=3)
        .map(|seq| SetPair {
            programs: programs.clone(),
            names: vec!["x".into(), "y".into()],
            round: 1,
            log_ratio: (wrong * (1.0 + 0.01 * f64::from(seq))).ln(),
            verdict: None,
            dropped_prior: false,
            trial: "earlier".into(),
            seq,
            at_unix: 1_700_000_000,
        })
        .collect();
    let platform_key = coloc_model::profile::PlatformFingerprint::of(target.topology());
    Store::open(&db)
        .unwrap()
        .put_pairs(&platform_key, &pairs)
        .unwrap();
    let got = run_with(&db, ("long", "barriers"), 1_800_000_100.0);
    let first = got.verdicts[0]
        .stored
        .expect("started from the stored pairs");
    assert_ne!(first.verdict, Some(fresh.verdict), "{first:?}");
    assert!(first.verdict.is_some(), "{first:?}");
    assert_eq!(got.verdict, fresh.verdict, "the evidence wins");
    let dropped = got
        .verdicts
        .iter()
        .find(|v| v.stored.is_some_and(|s| s.dropped))
        .expect("the stored verdict dropped");
    assert!(dropped.to_string().contains("was dropped"), "{dropped}");
    // The store now says so too: the next run starts from the new pairs.
    let next = run_with(&db, ("long", "barriers"), 1_800_000_200.0);
    let stored = next.verdicts[0].stored.expect("stored pairs");
    assert_eq!(stored.verdict, Some(fresh.verdict), "{stored:?}");
}
