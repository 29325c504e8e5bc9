use std::time::Duration;

use super::close;
use crate::metrics::testtrace::{trace, Ev};
use crate::metrics::{RunMetrics, SoloTimes};
use crate::trace::ExitStatus;

/// One figure per repetition.
type Column = Vec<Option<f64>>;

fn ms(ms: u64) -> Option<Duration> {
    Some(Duration::from_millis(ms))
}

/// Apps a (index 0) and b (index 1), two repetitions each; b waits 1 s to be
/// admitted. Instance by instance (arrive, start, exit -> wall, response):
///   a.0: 0, 0, 4   -> 4, 4        b.0: 0, 1, 6   -> 5, 6
///   a.1: 4, 4, 9   -> 5, 5        b.1: 6, 6, 10  -> 4, 4
fn two_by_two() -> crate::Trace {
    use Ev::*;
    trace(
        "resense",
        &["a", "b"],
        &[
            (0.0, Arrive(0, 0)),
            (0.0, Arrive(1, 0)),
            (0.0, Plan(2)),
            (0.0, Start(0, 0)),
            (0.5, Applied(&[(0, 0)])),
            (1.0, Plan(4)),
            (1.0, Start(1, 0)),
            (1.25, Applied(&[(0, 0), (1, 0)])),
            // Two thread changes of b.0 placed by one decision: measured from the first.
            (2.0, Threads(1, 0)),
            (2.5, Threads(1, 0)),
            (3.0, Applied(&[(1, 0)])),
            (4.0, Exit(0, 0, 0)),
            (4.0, Arrive(0, 1)),
            (4.0, Start(0, 1)),
            (4.75, Applied(&[(0, 1), (1, 0)])),
            (6.0, ExitMetric(1, 0, 5.0)),
            (6.0, Arrive(1, 1)),
            (6.0, Start(1, 1)),
            (6.125, Applied(&[(1, 1)])),
            (6.5, Threads(1, 1)),
            (7.0, Applied(&[(1, 1)])),
            // a.1 changes its threads and exits before any decision places them.
            (8.0, Threads(0, 1)),
            (9.0, Exit(0, 1, 0)),
            (10.0, ExitMetric(1, 1, 7.0)),
            (10.5, End(105, 10_500)),
        ],
    )
}

#[test]
fn two_apps_two_repetitions() {
    let m = RunMetrics::from_trace(&two_by_two(), None);
    assert_eq!(m.policy, "resense");
    let table: Vec<(&str, Column, Column, Column)> = m
        .apps
        .iter()
        .map(|a| {
            (
                a.name.as_str(),
                a.reps.iter().map(|r| r.wall_secs).collect(),
                a.reps.iter().map(|r| r.response_secs).collect(),
                a.reps.iter().map(|r| r.metric).collect(),
            )
        })
        .collect();
    assert_eq!(
        table,
        vec![
            (
                "a",
                vec![Some(4.0), Some(5.0)],
                vec![Some(4.0), Some(5.0)],
                vec![None, None]
            ),
            (
                "b",
                vec![Some(5.0), Some(4.0)],
                vec![Some(6.0), Some(4.0)],
                vec![Some(5.0), Some(7.0)]
            ),
        ]
    );
    assert_eq!(m.wall_times_secs(), vec![4.0, 5.0, 5.0, 4.0]);
    let f = &m.figures;
    assert_eq!((f.instances, f.failed, f.unfinished), (4, 0, 0));
    // ART = (4 + 5 + 6 + 4) / 4 = 4.75; throughput = 1/4 + 1/5 + 1/5 + 1/4 = 0.9.
    assert_eq!(f.art_secs, Some(4.75));
    assert!(close(f.throughput.unwrap(), 0.9));
    // First arrival 0, last exit 10.
    assert_eq!(m.makespan_secs(), Some(10.0));
    // 105 ms of CPU over 10.5 s; decisions took 2 and 4 ms.
    assert!(close(f.coloc_cpu_percent.unwrap(), 1.0));
    assert!(close(f.mean_decide_secs.unwrap(), 0.003));
    // No solo times: no speedup, and every app is named as missing.
    assert_eq!(f.hmean_speedup, None);
    assert_eq!(f.solo_missing, vec!["a", "b"]);
}

#[test]
fn reaction_delays() {
    let m = RunMetrics::from_trace(&two_by_two(), None);
    let delays: Vec<(Option<Duration>, Option<Duration>)> = m
        .apps
        .iter()
        .map(|a| (a.first_plan_delay, a.max_thread_placement_delay))
        .collect();
    assert_eq!(
        delays,
        vec![
            // a.0: 0 -> 0.5, a.1: 4 -> 4.75; its thread change at 8 was never placed.
            (ms(750), None),
            // b.0: 1 -> 1.25, b.1: 6 -> 6.125; thread changes: b.0 2 -> 3 (1 s,
            // the later change at 2.5 waits less), b.1 6.5 -> 7 (0.5 s).
            (ms(250), ms(1000)),
        ]
    );
}

#[test]
fn hmean_speedup_over_solo_times() {
    let mut solo = SoloTimes::default();
    solo.add("a", 2.0);
    solo.add("b", 2.5);
    let m = RunMetrics::from_trace(&two_by_two(), Some(&solo));
    // Speedups solo / wall: a 2/4, 2/5; b 2.5/5, 2.5/4. Their reciprocals sum to
    // 2 + 2.5 + 2 + 1.6 = 8.1, so Hmean = 4 / 8.1 = 0.493827.
    assert!(close(m.figures.hmean_speedup.unwrap(), 4.0 / 8.1));
    assert!(m.figures.solo_missing.is_empty());
}

#[test]
fn missing_solo_time_names_the_app() {
    // (solo times, apps named as missing)
    type Case = (&'static [(&'static str, f64)], Vec<&'static str>);
    let cases: [Case; 3] = [
        (&[("a", 2.0)], vec!["b"]),
        (&[], vec!["a", "b"]),
        // A zero solo time is no denominator either.
        (&[("a", 2.0), ("b", 0.0)], vec!["b"]),
    ];
    for (times, missing) in cases {
        let mut solo = SoloTimes::default();
        for (app, secs) in times {
            solo.add(app, *secs);
        }
        let m = RunMetrics::from_trace(&two_by_two(), Some(&solo));
        assert_eq!(m.figures.hmean_speedup, None, "{times:?}");
        assert_eq!(m.figures.solo_missing, missing, "{times:?}");
        let shown = format!("- (no solo time: {})", missing.join(", "));
        assert!(m.render().contains(&shown), "{}", m.render());
    }
}

#[test]
fn failed_and_unfinished_instances() {
    use Ev::*;
    // a.0 crashes after 3 s, b.0 cannot start, a.1 runs 2 s, b.1 never exits.
    let t = trace(
        "native",
        &["a", "b"],
        &[
            (0.0, Arrive(0, 0)),
            (0.0, Arrive(1, 0)),
            (0.0, Start(0, 0)),
            (0.5, NoStart(1, 0)),
            (0.5, Arrive(1, 1)),
            (1.0, Start(1, 1)),
            (3.0, Exit(0, 0, 1)),
            (3.0, Arrive(0, 1)),
            (3.0, Start(0, 1)),
            (5.0, Exit(0, 1, 0)),
        ],
    );
    let m = RunMetrics::from_trace(&t, None);
    let status: Vec<Vec<Option<ExitStatus>>> = m
        .apps
        .iter()
        .map(|a| a.reps.iter().map(|r| r.status.clone()).collect())
        .collect();
    assert_eq!(
        status,
        vec![
            vec![Some(ExitStatus::Code(1)), Some(ExitStatus::Code(0))],
            vec![Some(ExitStatus::FailedToStart("no such file".into())), None],
        ]
    );
    assert_eq!(m.apps.iter().map(|a| a.failed).collect::<Vec<_>>(), [1, 1]);
    let f = &m.figures;
    assert_eq!((f.instances, f.failed, f.unfinished), (4, 2, 1));
    // Only a.1 succeeded: wall 2 s, response 2 s; makespan counts the crash.
    assert_eq!(m.wall_times_secs(), vec![2.0]);
    assert_eq!(f.art_secs, Some(2.0));
    assert_eq!(f.throughput, Some(0.5));
    assert_eq!(f.makespan_secs, Some(5.0));
    // The failed and unfinished repetitions say so in the table.
    let shown = m.render();
    for cell in ["3.000(exit=1) 2.000", "(not started) (unfinished)"] {
        assert!(shown.contains(cell), "{cell} in\n{shown}");
    }
}

#[test]
fn degenerate_traces_have_no_figures() {
    use Ev::*;
    type Case = (&'static str, &'static [(f64, Ev)]);
    let cases: [Case; 3] = [
        ("empty", &[]),
        ("arrived only", &[(0.0, Arrive(0, 0))]),
        // Zero wall time: 1/T is infinite, so no throughput and no speedup.
        (
            "zero wall time",
            &[
                (0.0, Arrive(0, 0)),
                (1.0, Start(0, 0)),
                (1.0, Exit(0, 0, 0)),
            ],
        ),
    ];
    let mut solo = SoloTimes::default();
    solo.add("a", 1.0);
    for (name, events) in cases {
        let m = RunMetrics::from_trace(&trace("native", &["a"], events), Some(&solo));
        let f = &m.figures;
        assert_eq!(f.throughput, None, "{name}");
        assert_eq!(f.hmean_speedup, None, "{name}");
        assert_eq!(f.coloc_cpu_percent, None, "{name}");
        assert_eq!(f.mean_decide_secs, None, "{name}");
        let shown = m.render();
        assert!(
            !shown.contains("NaN") && !shown.contains("inf"),
            "{name}:\n{shown}"
        );
    }
}

#[test]
fn instances_of_apps_beyond_the_workload_are_kept() {
    use Ev::*;
    let t = trace(
        "native",
        &["a"],
        &[
            (0.0, Arrive(2, 0)),
            (0.0, Start(2, 0)),
            (1.0, Exit(2, 0, 0)),
        ],
    );
    let m = RunMetrics::from_trace(&t, None);
    let names: Vec<(&str, usize)> = m
        .apps
        .iter()
        .map(|a| (a.name.as_str(), a.reps.len()))
        .collect();
    assert_eq!(names, [("a", 0), ("app1", 0), ("app2", 1)]);
}

#[test]
fn rendered_report() {
    let m = RunMetrics::from_trace(&two_by_two(), None);
    assert_eq!(
        m.render(),
        "\
| app | reps | wall s (each rep) | mean wall s | mean response s | metric (each rep) | failed |
|-----|------|-------------------|-------------|-----------------|-------------------|--------|
| a   |    2 |       4.000 5.000 |       4.500 |           4.500 |                 - |      0 |
| b   |    2 |       5.000 4.000 |       4.500 |           5.000 |       5.000 7.000 |      0 |

| run                        |                  value |
|----------------------------|------------------------|
| instances                  |                      4 |
| failed instances           |                      0 |
| unfinished instances       |                      0 |
| ART (mean response) s      |                  4.750 |
| throughput (sum 1/wall) /s |                 0.9000 |
| makespan s                 |                 10.000 |
| Hmean speedup              | - (no solo time: a, b) |
| coloc CPU % of a core      |                   1.00 |
| mean decision ms           |                  3.000 |
"
    );
}

#[test]
fn json_has_seconds() {
    let m = RunMetrics::from_trace(&two_by_two(), None);
    let v = serde_json::to_value(&m).unwrap();
    assert_eq!(v["figures"]["makespan_secs"], 10.0);
    assert_eq!(v["apps"][0]["first_plan_delay"], 0.75);
    assert_eq!(
        v["apps"][0]["max_thread_placement_delay"],
        serde_json::Value::Null
    );
    assert_eq!(v["apps"][1]["reps"][0]["status"]["kind"], "code");
}
