//! coloc's own CPU use on this machine: a run of two real apps under the equal
//! policy with a 100 ms epoch and 10 ms polling, the defaults. Its own test
//! binary, so `getrusage(RUSAGE_SELF)` counts the Manager and the machine only
//! (the apps are children, not counted).

mod support;

use std::time::Duration;

use coloc_manager::{run, RunOptions};
use coloc_model::{TraceEvent, Workload};
use support::*;

#[test]
fn coloc_uses_a_small_fraction_of_a_core() {
    if two_cpus().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut m = machine(dir.path());
    let workload = Workload {
        name: "overhead".into(),
        epoch: None,
        apps: vec![
            spec("a", 2, &["kernel:compute", "--iters", "12000000"]),
            spec("b", 2, &["kernel:compute", "--iters", "12000000"]),
        ],
    };
    let mut policy = coloc_policy::by_name("equal").unwrap();
    let mut events: Vec<TraceEvent> = Vec::new();
    let opts = RunOptions {
        epoch: Duration::from_millis(100),
        seed: None,
        started_unix: 0.0,
        stop: None,
    };
    let summary = run(&mut m, policy.as_mut(), &workload, &opts, &mut events).unwrap();
    let epochs = events
        .iter()
        .filter(|e| matches!(e, TraceEvent::Obs(_)))
        .count()
        .max(1);
    let usage = summary.usage;
    eprintln!(
        "coloc: {:.3} s CPU over {:.3} s wall = {:.2} % of a core; {} epochs, {:.0} us CPU per epoch",
        usage.cpu.as_secs_f64(),
        usage.wall.as_secs_f64(),
        usage.percent_of_core(),
        epochs,
        usage.cpu.as_secs_f64() * 1e6 / epochs as f64
    );
    // Generous: a loaded CI machine slows everything; the point is "small".
    assert!(usage.percent_of_core() < 20.0, "{usage:?}");
}
