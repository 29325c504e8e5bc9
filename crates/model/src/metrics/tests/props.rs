//! Arbitrary traces (events in any order, instances that never start or never
//! exit, repeated thread changes) never make the metrics panic or print NaN.

use proptest::prelude::*;

use crate::metrics::testtrace::{trace, Ev};
use crate::metrics::{Comparison, RunMetrics, SoloTimes};

fn instance() -> impl Strategy<Value = (u32, u32)> {
    (0u32..3, 0u32..2)
}

fn event() -> impl Strategy<Value = Ev> {
    const APPLIED: [&[(u32, u32)]; 4] = [&[], &[(0, 0)], &[(1, 0), (0, 1)], &[(2, 1), (0, 0)]];
    prop_oneof![
        instance().prop_map(|(a, r)| Ev::Arrive(a, r)),
        instance().prop_map(|(a, r)| Ev::Start(a, r)),
        instance().prop_map(|(a, r)| Ev::Threads(a, r)),
        (0u64..5).prop_map(Ev::Plan),
        (0usize..APPLIED.len()).prop_map(|i| Ev::Applied(APPLIED[i])),
        (instance(), -1i32..2).prop_map(|((a, r), c)| Ev::Exit(a, r, c)),
        (instance(), -1e3f64..1e3).prop_map(|((a, r), m)| Ev::ExitMetric(a, r, m)),
        instance().prop_map(|(a, r)| Ev::NoStart(a, r)),
        (0u64..100, 0u64..100).prop_map(|(c, w)| Ev::End(c, w)),
    ]
}

/// Events at non-decreasing times (steps of a quarter second, zero included).
fn events() -> impl Strategy<Value = Vec<(f64, Ev)>> {
    prop::collection::vec((0u32..4, event()), 0..30).prop_map(|steps| {
        let mut t = 0.0;
        steps
            .into_iter()
            .map(|(dt, ev)| {
                t += f64::from(dt) * 0.25;
                (t, ev)
            })
            .collect()
    })
}

fn run(policy: &str, events: &[(f64, Ev)]) -> RunMetrics {
    let mut solo = SoloTimes::default();
    solo.add("a", 1.0);
    solo.add("b", 2.0);
    RunMetrics::from_trace(&trace(policy, &["a", "b"], events), Some(&solo))
}

fn printable(text: &str) -> bool {
    !text.contains("NaN") && !text.contains("inf")
}

proptest! {
    #[test]
    fn run_metrics_are_sane(events in events()) {
        let m = run("native", &events);
        prop_assert!(printable(&m.render()), "{}", m.render());
        prop_assert!(m.wall_times_secs().iter().all(|t| *t >= 0.0));
        // Every response lies within first arrival .. last exit.
        if let (Some(art), Some(makespan)) = (m.figures.art_secs, m.makespan_secs()) {
            prop_assert!(art <= makespan, "ART {art} > makespan {makespan}");
        }
        for a in &m.apps {
            prop_assert_eq!(a.failed, a.reps.iter().filter(|r| r.failed()).count());
        }
    }

    #[test]
    fn comparisons_are_sane(
        runs in prop::collection::vec(prop::collection::vec(events(), 0..4), 1..4),
    ) {
        let named: Vec<(String, Vec<RunMetrics>)> = runs
            .iter()
            .enumerate()
            .map(|(i, rs)| {
                let policy = format!("p{i}");
                let metrics = rs.iter().map(|e| run(&policy, e)).collect();
                (policy, metrics)
            })
            .collect();
        let c = Comparison::new("p0", named);
        prop_assert!(printable(&c.render()), "{}", c.render());
        let base = &c.policies[0];
        if base.makespan.is_some_and(|m| m.gmean.is_some()) {
            prop_assert_eq!(base.ntt, Some(1.0));
        }
        for p in &c.policies {
            for v in [p.p_makespan, p.p_art].into_iter().flatten() {
                prop_assert!((0.0..=1.0).contains(&v));
            }
        }
    }
}
