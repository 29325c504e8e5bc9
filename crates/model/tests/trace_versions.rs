//! Traces of every version this coloc reads (docs/trace-format.md,
//! "Versions"): version 1 kept each plan's explanation as an English note,
//! version 2 as typed reasons and verdicts.

use std::io::BufReader;

use coloc_model::explain;
use coloc_model::reason::{Judge, PlanReason, Reason, TrialState, Verdict};
use coloc_model::trace::{Trace, TraceError, TraceEvent, TRACE_VERSION};
use coloc_model::{AppId, AppPlan, Plan};

const V1: &str = include_str!("fixtures/traces/v1-auto-kvm-2cpu.jsonl");

fn plans(trace: &Trace) -> Vec<&Plan> {
    trace
        .events
        .iter()
        .filter_map(|e| match e {
            TraceEvent::Plan { plan, .. } => Some(plan),
            _ => None,
        })
        .collect()
}

/// A version-1 trace reads: its plans have no reasons, and each keeps the
/// note it carried, which is what the edges show for it.
#[test]
fn a_version_1_trace_still_reads() {
    let trace = Trace::read(BufReader::new(V1.as_bytes())).unwrap();
    assert_eq!(trace.header.version, 1);
    let plans = plans(&trace);
    assert_eq!(plans.len(), 12);
    for p in &plans {
        assert!(p.reasons.is_empty() && p.verdicts.is_empty());
        assert!(p.apps.iter().all(|a| a.reasons.is_empty()));
        let note = p.legacy_note.as_deref().unwrap();
        assert!(note.starts_with("auto (makespan): ["), "{note}");
        assert_eq!(explain::note("auto", p), note);
    }
}

/// A plan written now carries its reasons and verdicts and no note, and reads
/// back equal.
#[test]
fn reasons_and_verdicts_round_trip() {
    let app = AppId { app: 0, rep: 0 };
    let plan = Plan {
        apps: vec![AppPlan::native(app).because(Reason::Borrowed {
            cpus: "1".parse().unwrap(),
        })],
        reasons: vec![PlanReason::ThreadsFit],
        verdicts: vec![Verdict {
            judge: Judge::Guard,
            apps: vec![app],
            state: TrialState::BackToLinux,
            estimate: None,
            cost: None,
            round: 1,
            pair: None,
            stored: None,
        }],
        legacy_note: None,
    };
    let json = serde_json::to_string(&plan).unwrap();
    assert!(!json.contains("\"note\""), "{json}");
    let back: Plan = serde_json::from_str(&json).unwrap();
    assert_eq!(back, plan);
}

/// A version this coloc does not know is refused with its number.
#[test]
fn an_unknown_version_is_refused() {
    let future = V1.replacen(
        "\"version\":1",
        &format!("\"version\":{}", TRACE_VERSION + 1),
        1,
    );
    match Trace::read(BufReader::new(future.as_bytes())) {
        Err(TraceError::Version(v)) => assert_eq!(v, TRACE_VERSION + 1),
        other => panic!("{other:?}"),
    }
}
