//! `coloc profile` end to end (ReSense §2.2): what it stores, read back with the
//! store crate, and what it says about levels it cannot characterize.

mod common;

use coloc_model::profile::shared_cache::{shared_cache_plan, SharedCachePlan, ONE_CORE};
use coloc_model::profile::{
    characterization_plan, llc_footprint, AppIdentity, AppProfile, AppSource, LevelResult,
    NotCharacterizable, PlatformFingerprint, SharingSignal, Signal,
};
use coloc_model::topology::ResourceKind;
use coloc_model::{Cpu, Trace, TraceEvent};
use coloc_store::Store;
use common::{coloc_output, repo, text};

fn result<'a>(p: &'a AppProfile, level: &ResourceKind) -> &'a LevelResult {
    &p.levels
        .iter()
        .find(|l| &l.level == level)
        .unwrap_or_else(|| panic!("{}: no level {}", p.identity, level.label()))
        .result
}

/// The profiles `coloc profile --from DIR --json` recomputes from the traces
/// in DIR.
fn recomputed(dir: &str) -> Vec<AppProfile> {
    let o = coloc_output(&["profile", "--from", dir, "--json"]);
    let (json, err) = text(&o);
    assert!(o.status.success(), "{json}\n{err}");
    serde_json::from_str(&json).unwrap()
}

/// The CPU each thread of the trace's first app last ran on (field 39 of
/// /proc/PID/task/TID/stat), in its last observation after a plan was
/// applied.
fn cpus_after_pinning(trace: &Trace) -> Vec<Cpu> {
    let applied = trace
        .events
        .iter()
        .find_map(|e| match e {
            TraceEvent::Applied { t, .. } => Some(*t),
            _ => None,
        })
        .expect("the static plan was applied");
    trace
        .events
        .iter()
        .rev()
        .find_map(|e| match e {
            TraceEvent::Obs(o) if o.at > applied => o
                .apps
                .iter()
                .find(|a| a.app.app == 0 && !a.threads.is_empty()),
            _ => None,
        })
        .expect("the app was observed after its plan was applied")
        .threads
        .iter()
        .filter_map(|t| t.cpu)
        .collect()
}

/// On simulated Yorkfield (two L2s of two cores under one FSB), the signs of
/// ReSense's Table IV at L2: streamcluster, which shares data, gains when its
/// two threads share an L2; MG, which streams, loses. The FSB has one
/// instance and is reported, and stored, as not characterizable.
#[test]
fn sim_profiles_have_the_signs_of_the_paper() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("profiles.sqlite");
    let workload = repo("examples/sim/resense-dynamic.toml");
    let o = coloc_output(&[
        "profile",
        "--sim",
        "yorkfield",
        workload.to_str().unwrap(),
        "--app",
        "streamcluster",
        "--app",
        "mg",
        "--repeat",
        "2",
        "--db",
        db.to_str().unwrap(),
        "--out",
        dir.path().join("runs").to_str().unwrap(),
    ]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert!(
        out.contains("FSB+socket: not characterizable: a single instance on this machine"),
        "{out}"
    );

    let yorkfield = coloc_sim::platform("yorkfield").unwrap();
    let store = Store::open(&db).unwrap();
    let profiles = store
        .for_platform(&PlatformFingerprint::of(&yorkfield.topology))
        .unwrap();
    assert_eq!(profiles.len(), 2, "{profiles:?}");
    let l2 = ResourceKind::Cache { level: 2 };
    let fsb = ResourceKind::Group { name: "FSB".into() };
    for (model, positive) in [("streamcluster", true), ("mg", false)] {
        let p = store
            .get(
                &AppIdentity::model(model, model),
                &PlatformFingerprint::of(&yorkfield.topology),
            )
            .unwrap()
            .unwrap_or_else(|| panic!("no profile of {model}"));
        let LevelResult::Scored(s) = result(&p, &l2) else {
            panic!("{model}: L2 not scored: {p:?}");
        };
        assert_eq!(s.score > 0.0, positive, "{model} L2 score {}", s.score);
        assert_eq!(s.score < 0.0, !positive, "{model} L2 score {}", s.score);
        assert_eq!((s.signal, s.threads), (Signal::Cycles, 2), "{model}");
        assert_eq!((s.baseline.len(), s.contention.len()), (2, 2), "{model}");
        assert_eq!(
            result(&p, &fsb),
            &LevelResult::NotCharacterizable {
                reason: NotCharacterizable::SingleInstance
            },
            "{model}"
        );
    }
}

/// In the simulator, `coloc profile` is the same procedure as on this
/// machine (planned runs through the Manager, docs/trace-format.md,
/// Measurement procedures): `coloc profile --from` recomputes exactly the
/// profile it stored from the traces it wrote, and that profile agrees with
/// the simulator's engine-level characterization of the model
/// ([`coloc_sim::characterize`]: the same pinned runs without the Manager).
#[test]
fn sim_profile_is_recomputed_exactly_from_its_traces() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("profiles.sqlite");
    let db = db.to_str().unwrap();
    let runs = dir.path().join("runs");
    let runs = runs.to_str().unwrap();
    let workload = repo("examples/sim/resense-dynamic.toml");
    let o = coloc_output(&[
        "profile",
        "--sim",
        "yorkfield",
        workload.to_str().unwrap(),
        "--app",
        "streamcluster",
        "--repeat",
        "2",
        "--db",
        db,
        "--out",
        runs,
    ]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    let yorkfield = coloc_sim::platform("yorkfield").unwrap();
    let stored = Store::open(std::path::Path::new(db))
        .unwrap()
        .for_platform(&PlatformFingerprint::of(&yorkfield.topology))
        .unwrap();
    assert_eq!(stored.len(), 1, "{stored:?}");

    assert_eq!(
        recomputed(runs),
        stored,
        "recomputed from the traces vs stored"
    );

    let model = coloc_sim::model::model("streamcluster").unwrap();
    let direct = coloc_sim::characterize::characterize(
        &yorkfield,
        &model,
        coloc_sim::characterize::CharacterizeOptions {
            repetitions: 2,
            seed: 0,
        },
    );
    let l2 = ResourceKind::Cache { level: 2 };
    let (LevelResult::Scored(got), LevelResult::Scored(want)) =
        (result(&stored[0], &l2), result(&direct, &l2))
    else {
        panic!("L2 not scored: {stored:?} {direct:?}");
    };
    assert!(
        (got.score - want.score).abs() < 0.05,
        "through the Manager {} vs engine {}",
        got.score,
        want.score
    );
    let (got, want) = (stored[0].sharing.as_ref(), direct.sharing.as_ref());
    let (got, want) = (got.unwrap(), want.unwrap());
    assert_eq!(got.signal, SharingSignal::SimCounters);
    let close = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => (a - b).abs() <= 1e-3 * b.abs().max(1e-9),
        _ => false,
    };
    assert!(
        close(got.data_sharing, want.data_sharing)
            && close(got.bandwidth_gbs, want.bandwidth_gbs)
            && close(got.llc_footprint, want.llc_footprint),
        "through the Manager {got:?} vs engine {want:?}"
    );
}

/// On this machine: every level the plan cannot characterize is named with
/// its reason, and each app's profile is stored under its program identity
/// (argv and the executable's SHA-256). Where no level can be characterized
/// (this VM: one L3), nothing runs and the stored levels carry the reasons.
#[test]
fn host_profile_names_what_cannot_be_characterized() {
    let topology = coloc_linux::topology::host_topology().unwrap();
    let plan = characterization_plan(&topology);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("profiles.sqlite");
    let workload = repo("examples/memory-compute.toml");
    let o = coloc_output(&[
        "profile",
        workload.to_str().unwrap(),
        "--repeat",
        "1",
        "--db",
        db.to_str().unwrap(),
        "--out",
        dir.path().join("runs").to_str().unwrap(),
    ]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    for l in &plan {
        if let Err(reason) = &l.setup {
            let line = format!("{}: not characterizable: {reason}", l.label());
            assert!(out.contains(&line), "missing {line:?} in\n{out}");
        }
    }
    let nothing_to_run = plan.iter().all(|l| l.setup.is_err());
    assert_eq!(
        out.contains("so no ReSense run is made"),
        nothing_to_run,
        "{out}"
    );

    let store = Store::open(&db).unwrap();
    let profiles = store
        .for_platform(&PlatformFingerprint::of(&topology))
        .unwrap();
    let names: Vec<&str> = profiles.iter().map(|p| p.identity.name.as_str()).collect();
    assert_eq!(names, ["compute", "stream"]);
    for p in &profiles {
        let AppSource::Program { command, exe_hash } = &p.identity.source else {
            panic!("{p:?}");
        };
        assert!(
            command[0].ends_with(&format!("/{}", p.identity.name)),
            "the kernel's path: {command:?}"
        );
        assert!(exe_hash.starts_with("sha256:"), "{exe_hash}");
        assert_eq!(p.levels.len(), plan.len());
        for (level, l) in p.levels.iter().zip(&plan) {
            match (&level.result, &l.setup) {
                (LevelResult::NotCharacterizable { reason }, Err(why)) => assert_eq!(reason, why),
                (LevelResult::Scored(s), Ok(_)) => {
                    assert!(matches!(s.signal, Signal::Cycles | Signal::TaskClock))
                }
                (got, want) => panic!("{}: stored {got:?} for {want:?}", l.label()),
            }
        }
    }
}

/// On this machine, without LLC counters: `coloc profile` of a kernel stores
/// Tang's sharing characteristics measured by the substitutes, the signal
/// named in the record and by `coloc profiles show`: the bandwidth from the
/// stream-probe co-runs, data sharing from the app's threads sharing a cache
/// against apart (with one LLC, two threads on one core, which /proc shows
/// both on that core's CPU), and the footprint by Equation 1 of the two; and
/// `coloc profile --from` recomputes exactly the stored profile (levels and
/// characteristics) from the traces the runs wrote (docs/policies/tang-atom.md, Characteristics).
#[test]
fn host_profile_stores_sharing_substitutes() {
    let topology = coloc_linux::topology::host_topology().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("profiles.sqlite");
    let db = db.to_str().unwrap();
    let runs = dir.path().join("runs");
    let runs = runs.to_str().unwrap();
    let workload = repo("examples/memory-compute.toml");
    let o = coloc_output(&[
        "profile",
        workload.to_str().unwrap(),
        "--app",
        "stream",
        "--repeat",
        "1",
        "--db",
        db,
        "--out",
        runs,
    ]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");

    let store = Store::open(std::path::Path::new(db)).unwrap();
    let profiles = store
        .for_platform(&PlatformFingerprint::of(&topology))
        .unwrap();
    assert_eq!(profiles.len(), 1, "{profiles:?}");
    let sharing = profiles[0]
        .sharing
        .as_ref()
        .unwrap_or_else(|| panic!("no sharing characteristics: {:?}", profiles[0]));
    assert_eq!(sharing.signal, SharingSignal::StreamCoRuns, "{sharing:?}");
    if topology.cores().len() >= 2 {
        let bw = sharing
            .bandwidth_gbs
            .unwrap_or_else(|| panic!("{sharing:?}"));
        assert!(bw >= 0.0 && bw.is_finite(), "{sharing:?}");
        // Within a rounding step: the store keeps JSON, whose parser may
        // land one unit in the last place away.
        let close = |got: Option<f64>, want: f64| {
            got.is_some_and(|g| (g - want).abs() <= want.abs() * 1e-12)
        };
        let miss_rate = bw * 1e6 / 64.0;
        assert!(close(sharing.llc_miss_rate, miss_rate), "{sharing:?}");
        let by = sharing
            .data_sharing_runs
            .as_ref()
            .unwrap_or_else(|| panic!("no data sharing runs: {sharing:?}"));
        let share = by.data_sharing();
        assert!(close(sharing.data_sharing, share), "{sharing:?}");
        let footprint = llc_footprint(miss_rate, share, 1.0);
        assert!(close(sharing.llc_footprint, footprint), "{sharing:?}");
        assert!(sharing.missing.is_empty(), "{sharing:?}");
        match shared_cache_plan(&topology).unwrap() {
            SharedCachePlan::LlcLevel { level, .. } => assert_eq!(by.cache, level.label()),
            SharedCachePlan::OneCore(c) => {
                assert_eq!(
                    (by.cache.as_str(), by.runs.signal, by.runs.baseline.len()),
                    (ONE_CORE, Signal::TaskClock, 1)
                );
                let run = std::path::Path::new(runs).join("stream/sharing-core-contention-0");
                let on = cpus_after_pinning(&common::read_trace(&run));
                assert_eq!(on.len(), 2, "both threads observed: {on:?}");
                assert!(on.iter().all(|&cpu| cpu == c.contention[0]), "{on:?}");
                assert!(
                    out.contains("data sharing by the substitute: 2 threads"),
                    "{out}"
                );
            }
        }
    }

    let o = coloc_output(&["profiles", "show", "stream", "--db", db]);
    let (shown, err) = text(&o);
    assert!(o.status.success(), "{shown}\n{err}");
    let rendered = coloc_model::profile::render_sharing(sharing);
    assert!(
        shown.contains("substitute: co-runs with the stream kernel") && shown.contains(&rendered),
        "{shown}"
    );

    let o = coloc_output(&["profile", "--from", runs]);
    let (again, err) = text(&o);
    assert!(o.status.success(), "{again}\n{err}");
    assert!(
        again.contains(&rendered),
        "stored:\n{rendered}\nrecomputed:\n{again}"
    );
    assert_eq!(
        recomputed(runs),
        profiles,
        "recomputed from the traces vs stored"
    );
}

/// Bad arguments are refused with the argument named and what was expected.
#[test]
fn bad_arguments_are_named() {
    let workload = repo("examples/sim/resense-dynamic.toml");
    let w = workload.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("p.sqlite");
    let db = db.to_str().unwrap();
    let cases: [(&[&str], &str); 3] = [
        (
            &["--app", "nope"],
            "--app nope: resense-medium has no app of that name (apps: streamcluster, canneal",
        ),
        (&["--repeat", "0"], "--repeat 0: expected at least 1"),
        (&["--signal", "wall"], "the simulator measures cycles"),
    ];
    for (extra, want) in cases {
        let mut args = vec!["profile", "--sim", "yorkfield", w, "--db", db];
        args.extend_from_slice(extra);
        let o = coloc_output(&args);
        let (_, err) = text(&o);
        assert!(!o.status.success(), "{extra:?} accepted");
        assert!(err.contains(want), "{extra:?}: {err}");
    }
}
