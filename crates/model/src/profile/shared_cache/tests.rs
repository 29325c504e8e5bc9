use super::*;
use crate::cpuset::Cpu;
use crate::metrics::testtrace::{trace, Ev};
use crate::procedure::FinishedError;
use crate::testutils::fixture_topologies;

fn one_core(baseline: &[Cpu], contention: &[Cpu]) -> Result<SharedCachePlan, ProcedureError> {
    Ok(SharedCachePlan::OneCore(Configurations {
        threads: 2,
        baseline: baseline.to_vec(),
        contention: contention.to_vec(),
        caveats: Vec::new(),
    }))
}

fn llc(level: u8, label: &str) -> Result<SharedCachePlan, ProcedureError> {
    Ok(SharedCachePlan::LlcLevel {
        level: ResourceKind::Cache { level },
        label: label.into(),
    })
}

/// Machines with two LLCs compare one against two with ReSense's runs of the
/// LLC level (the fixture Xeon's L3 per socket, the Opteron's per node,
/// Clovertown's L2 pairs under an FSB); one LLC leaves a core's own caches:
/// two threads on the first PU against the first PUs of two cores (SMT
/// siblings never the "apart" pair); one core has nothing to compare.
#[test]
fn configurations_by_topology() {
    let fixtures = fixture_topologies();
    let synthetic = |d: &str| Topology::synthetic("t", d).unwrap();
    let clovertown = synthetic("package:2 group(FSB):1 l2(4M):2 core:2");
    let smt = synthetic("package:1 l3(8M):1 core:2 pu:2");
    let no_cache = synthetic("package:1 core:2");
    let single = synthetic("package:1 l3(8M):1 core:1 pu:2");
    let cases: [(&Topology, Result<SharedCachePlan, ProcedureError>); 7] = [
        (&fixtures[0], llc(3, "L3+MC+socket")),
        (&fixtures[1], llc(3, "L3+MC")),
        (&fixtures[2], one_core(&[0, 1], &[0, 0])),
        (&clovertown, llc(2, "L2")),
        (&smt, one_core(&[0, 2], &[0, 0])),
        (&no_cache, one_core(&[0, 1], &[0, 0])),
        (&single, Err(ProcedureError::SharingCores { cores: 1 })),
    ];
    for (i, (t, want)) in cases.into_iter().enumerate() {
        assert_eq!(shared_cache_plan(t), want, "case {i}");
    }
}

/// The LLC level runs nothing of its own (the profile's ReSense runs are
/// read); one core runs `repeat` pairs, apart then together.
#[test]
fn runs_of_each_plan() {
    assert_eq!(llc(3, "L3").unwrap().runs("a", 3), Vec::new());
    let got: Vec<(String, String, Vec<Cpu>)> = one_core(&[0, 1], &[0, 0])
        .unwrap()
        .runs("a", 2)
        .into_iter()
        .map(|r| (r.dir, r.role, r.apps[0].cpus.clone()))
        .collect();
    let want = [
        ("sharing-core-baseline-0", BASELINE, vec![0, 1]),
        ("sharing-core-contention-0", CONTENTION, vec![0, 0]),
        ("sharing-core-baseline-1", BASELINE, vec![0, 1]),
        ("sharing-core-contention-1", CONTENTION, vec![0, 0]),
    ]
    .map(|(d, r, c)| (d.to_string(), r.to_string(), c));
    assert_eq!(got, want);
}

/// The app's own one-core runs score by CPU time: 2.0 and 2.2 s apart, 1.8
/// and 1.9 s together, means 2.1 and 1.85: (2.1 − 1.85) × 100 / 2.1 = 11.9,
/// a data sharing of 0.119; the probe's runs among them are not read. Without
/// them the LLC level's ReSense score is read, or its reason; no cache level
/// at all says no runs were made; a failed run names its directory.
#[test]
fn figures_from_own_runs_or_the_llc_level() {
    let cpu = |ms: u64| {
        trace(
            "static",
            &["a"],
            &[(0.0, Ev::Start(0, 0)), (1.0, Ev::ExitUsage(0, 0, ms, None))],
        )
    };
    let mut runs = one_core(&[0, 1], &[0, 0]).unwrap().runs("a", 2);
    runs.insert(
        0,
        PlannedRun {
            dir: "sharing-probe-alone-0".into(),
            role: "probe-alone".into(),
            apps: Vec::new(),
        },
    );
    let traces = [cpu(1), cpu(2000), cpu(1800), cpu(2200), cpu(1900)];
    let got = shared_cache_runs("a", runs.iter().zip(&traces), &[]).unwrap();
    assert_eq!(got.cache, ONE_CORE);
    assert_eq!(
        (got.runs.signal, got.runs.threads, got.runs.baseline.len()),
        (Signal::TaskClock, 2, 2)
    );
    assert!((got.data_sharing() - 0.25 / 2.1).abs() < 1e-9, "{got:?}");

    let failed = [cpu(1), cpu(2000), trace("static", &["b"], &[])];
    let e = shared_cache_runs("a", runs.iter().zip(&failed), &[]).unwrap_err();
    assert_eq!(
        e,
        ProcedureError::Finished(FinishedError::NoApp { app: "a".into() })
            .in_run("sharing-core-contention-0")
    );
    assert_eq!(
        e.to_string(),
        "run sharing-core-contention-0: no app \"a\" in the trace"
    );

    let scored = Sensitivity::from_runs(Signal::Cycles, 8, vec![4e9], vec![5e9]).unwrap();
    let level = |kind, result| LevelProfile {
        level: kind,
        result,
    };
    let l3 = ResourceKind::Cache { level: 3 };
    let levels = [
        level(
            ResourceKind::Cache { level: 2 },
            LevelResult::Scored(scored.clone()),
        ),
        level(l3.clone(), LevelResult::Scored(scored.clone())),
        level(ResourceKind::Package, LevelResult::Scored(scored.clone())),
    ];
    let got = shared_cache_runs("a", [], &levels).unwrap();
    // Slower together: (4 − 5) × 100 / 4 = −25, no data sharing.
    assert_eq!((got.cache.as_str(), got.data_sharing()), ("L3", 0.0));
    assert_eq!(got.runs, scored);
    let single = [level(
        l3.clone(),
        LevelResult::NotCharacterizable {
            reason: crate::profile::NotCharacterizable::SingleInstance,
        },
    )];
    let e = shared_cache_runs("a", [], &single).unwrap_err();
    assert_eq!(
        e,
        ProcedureError::SharedCacheLevel {
            level: l3,
            reason: crate::profile::NotCharacterizable::SingleInstance
        }
    );
    assert!(e.to_string().ends_with("L3: a single instance on this machine: there is no second one to spread the threads over"), "{e}");
    let e = shared_cache_runs("a", [], &[]).unwrap_err();
    assert_eq!(e, ProcedureError::NoSharedCacheRuns);
    assert_eq!(
        e.to_string(),
        "no runs of the app's threads sharing a cache against apart were made"
    );
}
