use super::close;
use crate::metrics::testtrace::{runs, simple_run, trace, Ev};
use crate::metrics::{Comparison, RunMetrics};
use crate::workload::{AppClass, MetricSpec};

fn three_by_three() -> Comparison {
    Comparison::new(
        "native",
        vec![
            runs("native", &[10.0, 11.0, 12.0]),
            runs("equal", &[8.0, 9.0, 10.0]),
            runs("batch", &[12.0, 12.0, 12.0]),
        ],
    )
}

#[test]
fn three_policies_three_runs() {
    let c = three_by_three();
    assert!(c.has_baseline());
    let names: Vec<&str> = c.policies.iter().map(|p| p.policy.as_str()).collect();
    assert_eq!(names, ["native", "equal", "batch"]);
    let [native, equal, batch] = &c.policies[..] else {
        panic!("three rows")
    };
    // NTT: geometric-mean makespan over native's, (8*9*10)^(1/3) / (10*11*12)^(1/3).
    assert_eq!(native.ntt, Some(1.0));
    assert!(close(equal.ntt.unwrap(), (720.0f64 / 1320.0).cbrt()));
    assert!(close(batch.ntt.unwrap(), (1728.0f64 / 1320.0).cbrt()));
    // The baseline is not tested against itself.
    assert_eq!(
        (native.p_makespan, native.p_art, native.ntt_ci95),
        (None, None, None)
    );
    // equal vs native, exact Mann-Whitney: midranks 1 2 3.5 | 3.5 5 6 (the two
    // 10s tie), U = 6.5 - 6 = 0.5, |U - 4.5| = 4; of the 20 splits of the
    // midranks 4 are as extreme: p = 0.2. batch [12 12 12] vs native: 8 of 20,
    // p = 0.4 (both counted with Python's itertools).
    assert!(close(equal.p_makespan.unwrap(), 0.2));
    assert!(close(batch.p_makespan.unwrap(), 0.4));
    // One instance per run: ART = makespan, so the same tests come out.
    assert_eq!(equal.p_art, equal.p_makespan);
    let (lo, hi) = equal.ntt_ci95.unwrap();
    assert!(
        lo < equal.ntt.unwrap() && equal.ntt.unwrap() < hi,
        "[{lo}, {hi}]"
    );
    assert_eq!(equal.samples.makespan, [8.0, 9.0, 10.0]);
    assert_eq!(
        equal.samples.app_wall,
        [("a".to_string(), vec![8.0, 9.0, 10.0])]
    );
    let m = native.makespan.unwrap();
    assert_eq!((m.n, m.mean, m.sd), (3, 11.0, Some(1.0)));
    assert_eq!(batch.makespan.unwrap().cv, Some(0.0));
    // Throughput of a run is 1 / its wall time.
    assert!(close(
        equal.throughput.unwrap().mean,
        (1.0 / 8.0 + 1.0 / 9.0 + 0.1) / 3.0
    ));
    // No solo times: no Hmean speedup.
    assert_eq!(native.hmean_speedup, None);
    let shown = c.render();
    assert!(!shown.contains("NaN"), "{shown}");
    assert!(shown.contains("| 0.2000 |"), "{shown}");
}

/// Per app: its wall time's mean and CV over the runs and the rank test
/// against the baseline's runs of the app; one app "a" of one instance per
/// run here, so its walls are the makespans.
#[test]
fn per_app_mean_cv_and_p() {
    let c = three_by_three();
    let [native, equal, batch] = &c.policies[..] else {
        panic!("three rows")
    };
    let app = |p: &crate::metrics::PolicyStats| {
        assert_eq!(p.apps.len(), 1);
        assert_eq!(p.apps[0].app, "a");
        let w = p.apps[0].wall.unwrap();
        (w.n, w.mean, w.cv, p.apps[0].p_wall)
    };
    // native 10, 11, 12: mean 11, sd 1, CV 1/11; not tested against itself.
    let (n, mean, cv, p) = app(native);
    assert_eq!((n, mean, p), (3, 11.0, None));
    assert!(close(cv.unwrap(), 1.0 / 11.0));
    // equal 8, 9, 10: mean 9, CV 1/9, p = 0.2 as for the makespans.
    let (_, mean, cv, p) = app(equal);
    assert_eq!(mean, 9.0);
    assert!(close(cv.unwrap(), 1.0 / 9.0));
    assert!(close(p.unwrap(), 0.2));
    // batch 12, 12, 12: CV 0, p = 0.4.
    let (_, _, cv, p) = app(batch);
    assert_eq!(cv, Some(0.0));
    assert!(close(p.unwrap(), 0.4));
    let shown = c.render();
    let rows: Vec<&str> = shown
        .lines()
        .skip_while(|l| !l.starts_with("| app "))
        .take(5)
        .collect();
    assert_eq!(
        rows,
        [
            "| app | policy | runs | mean s | CV % |      p |",
            "|-----|--------|------|--------|------|--------|",
            "| a   | native |    3 | 11.000 |  9.1 |        |",
            "| a   |  equal |    3 |  9.000 | 11.1 | 0.2000 |",
            "| a   |  batch |    3 | 12.000 |  0.0 | 0.4000 |",
        ]
    );
    assert!(shown.contains("per app: its wall time"), "{shown}");
}

#[test]
fn single_run_shows_dashes() {
    let c = Comparison::new(
        "native",
        vec![runs("native", &[10.0]), runs("equal", &[8.0])],
    );
    let equal = &c.policies[1];
    assert_eq!(equal.makespan.unwrap().sd, None);
    assert_eq!((equal.p_makespan, equal.p_art), (None, None));
    assert!(close(equal.ntt.unwrap(), 0.8));
    let shown = c.render();
    let table: Vec<&str> = shown.lines().take(4).collect();
    assert_eq!(
        table,
        [
            "| policy | runs | failed | makespan s | makespan 95% CI | CV % | p makespan |  ART s | ART 95% CI | p ART | throughput /s |   NTT | NTT 95% CI | Hmean speedup |",
            "|--------|------|--------|------------|-----------------|------|------------|--------|------------|-------|---------------|-------|------------|---------------|",
            "| native |    1 |      0 |     10.000 |               - |    - |            | 10.000 |          - |       |        0.1000 | 1.000 |            |             - |",
            "| equal  |    1 |      0 |      8.000 |               - |    - |          - |  8.000 |          - |     - |        0.1250 | 0.800 |          - |             - |",
        ]
    );
    assert!(shown
        .lines()
        .nth(4)
        .unwrap()
        .starts_with("makespan: first arrival"));
}

#[test]
fn baseline_not_among_the_policies() {
    let c = Comparison::new(
        "linux",
        vec![runs("native", &[10.0, 11.0]), runs("equal", &[8.0, 9.0])],
    );
    assert!(!c.has_baseline());
    for p in &c.policies {
        assert_eq!(
            (p.ntt, p.p_makespan, p.p_art),
            (None, None, None),
            "{}",
            p.policy
        );
    }
    assert!(c
        .render()
        .contains("baseline linux is not among the compared policies: no NTT or p-values"));
}

#[test]
fn failed_instances_and_empty_policies() {
    use crate::metrics::testtrace::{trace, Ev::*};
    let crashed = trace(
        "equal",
        &["a"],
        &[
            (0.0, Arrive(0, 0)),
            (0.0, Start(0, 0)),
            (3.0, Exit(0, 0, 1)),
        ],
    );
    let c = Comparison::new(
        "native",
        vec![
            runs("native", &[10.0, 11.0]),
            (
                "equal".into(),
                vec![
                    RunMetrics::from_trace(&crashed, None),
                    RunMetrics::from_trace(&simple_run("equal", 9.0), None),
                ],
            ),
            ("static".into(), Vec::new()),
        ],
    );
    let [_, equal, empty] = &c.policies[..] else {
        panic!("three rows")
    };
    // The crashed run still has a makespan (3 s) but no ART.
    assert_eq!(equal.failed, 1);
    assert_eq!(equal.makespan.unwrap().n, 2);
    assert_eq!(equal.art.unwrap().n, 1);
    assert_eq!(equal.p_art, None);
    assert_eq!((empty.runs, empty.makespan, empty.ntt), (0, None, None));
    let shown = c.render();
    assert!(shown.contains("| equal  |    2 |      1 |"), "{shown}");
    assert!(!shown.contains("NaN"), "{shown}");
}

/// A service's run: it arrives at 0, prints `values` one per second (an
/// observation repeating the last line brings no new sample), exits.
fn service_run(policy: &str, values: &[f64], higher_is_better: bool) -> RunMetrics {
    let mut events = vec![(0.0, Ev::Arrive(0, 0)), (0.0, Ev::Start(0, 0))];
    for (i, v) in values.iter().enumerate() {
        let lines = i as u64 + 1;
        events.push((lines as f64, Ev::Metric(0, 0, *v, lines)));
        events.push((lines as f64 + 0.5, Ev::Metric(0, 0, *v, lines)));
    }
    events.push((values.len() as f64 + 1.0, Ev::Exit(0, 0, 0)));
    let mut t = trace(policy, &["svc"], &events);
    let spec = &mut t.header.workload.apps[0];
    spec.class = AppClass::Latency;
    spec.metric = Some(MetricSpec {
        regex: "x".into(),
        file: None,
        higher_is_better,
        unit: Some("req/s".into()),
    });
    RunMetrics::from_trace(&t, None)
}

/// A latency app's live metric is pooled over a policy's runs: its median and
/// its worst-1% tail (the low end of a throughput, the high end of a latency)
/// get columns and a legend line; batch apps get none.
#[test]
fn latency_apps_metric_median_and_tail() {
    // 1..=100 over two runs: the median is 50.5; the 1st and 99th percentiles
    // lie within one sample of 1 and 100.
    let a: Vec<f64> = (1..=50).map(f64::from).collect();
    let b: Vec<f64> = (51..=100).map(f64::from).collect();
    let c = Comparison::new(
        "native",
        vec![
            (
                "native".into(),
                vec![
                    service_run("native", &a, true),
                    service_run("native", &b, true),
                ],
            ),
            ("atom".into(), vec![service_run("atom", &b, false)]),
        ],
    );
    let [native, atom] = &c.policies[..] else {
        panic!("two rows")
    };
    assert_eq!(native.service.len(), 1);
    let t = &native.service[0];
    assert_eq!((t.app.as_str(), t.samples), ("svc", 100));
    assert!(close(t.median, 50.5));
    assert!(t.p99 >= 1.0 && t.p99 < 2.0, "{}", t.p99);
    // Lower is better: the tail is the high end.
    assert!(atom.service[0].p99 > 99.0, "{}", atom.service[0].p99);
    let text = c.render();
    assert!(text.contains("svc median req/s"), "{text}");
    assert!(text.contains("svc p99 req/s"), "{text}");
    assert!(text.contains("APP p99"), "{text}");
    // A batch app: no columns, no legend line.
    let plain = three_by_three();
    assert!(plain.policies.iter().all(|p| p.service.is_empty()));
    assert!(!plain.render().contains("APP p99"));
}
