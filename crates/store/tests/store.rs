//! The profile store on real files: round trips, export/import between platforms,
//! the files it must refuse, and readers working while a writer writes.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use coloc_model::calibration::MemoryCalibration;
use coloc_model::profile::{
    AppIdentity, AppProfile, LevelProfile, LevelResult, NotCharacterizable, PlatformFingerprint,
    Sensitivity, Signal,
};
use coloc_model::topology::ResourceKind;
use coloc_model::Topology;
use coloc_store::{Store, StoreError};
use rusqlite::Connection;

fn platform(description: &str) -> PlatformFingerprint {
    PlatformFingerprint::of(&Topology::synthetic("p", description).unwrap())
}

fn yorkfield() -> PlatformFingerprint {
    platform("package:1 l2(6M):2 core:2")
}

fn westmere() -> PlatformFingerprint {
    platform("package:2 numa:1 l3(12M):1 core:6")
}

/// A profile with an L3 score (baseline 1000 cycles, contention 1000 − 10·score)
/// and an uncharacterizable socket level.
fn profile(identity: AppIdentity, platform: PlatformFingerprint, score: f64) -> AppProfile {
    AppProfile {
        sharing: None,
        identity,
        platform,
        levels: vec![
            LevelProfile {
                level: ResourceKind::Cache { level: 3 },
                result: LevelResult::Scored(
                    Sensitivity::from_runs(
                        Signal::TaskClock,
                        6,
                        vec![1000.0, 1000.0],
                        vec![1000.0 - 10.0 * score, 1000.0 - 10.0 * score],
                    )
                    .unwrap(),
                ),
            },
            LevelProfile {
                level: ResourceKind::Package,
                result: LevelResult::NotCharacterizable {
                    reason: NotCharacterizable::SingleInstance,
                },
            },
        ],
    }
}

fn sc() -> AppIdentity {
    AppIdentity::model("streamcluster", "streamcluster")
}

fn prog() -> AppIdentity {
    AppIdentity::program(
        "solver",
        vec!["./solver".into(), "--size".into(), "big".into()],
        "sha256:ab12",
    )
}

#[test]
fn round_trip_and_replace() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("profiles.db");
    let store = Store::open(&path).unwrap();
    let cases = [
        profile(sc(), westmere(), 14.5),
        profile(prog(), westmere(), -7.2),
        profile(sc(), yorkfield(), 9.9),
    ];
    for p in &cases {
        store.put(p).unwrap();
    }
    for p in &cases {
        assert_eq!(
            store.get(&p.identity, &p.platform).unwrap().as_ref(),
            Some(p)
        );
    }
    assert_eq!(store.get(&prog(), &yorkfield()).unwrap(), None);

    // Same identity and platform: replaced, even under another display name.
    let renamed = profile(AppIdentity::model("sc", "streamcluster"), westmere(), 3.0);
    store.put(&renamed).unwrap();
    assert_eq!(
        store.get(&sc(), &westmere()).unwrap().as_ref(),
        Some(&renamed)
    );
    drop(store);

    // Reopened: still there; listing and per-platform selection.
    let store = Store::open(&path).unwrap();
    let on_westmere = store.for_platform(&westmere()).unwrap();
    let names: Vec<&str> = on_westmere
        .iter()
        .map(|p| p.identity.name.as_str())
        .collect();
    assert_eq!(names, ["sc", "solver"]);
    let list = store.list().unwrap();
    assert_eq!(list.len(), 3);
    let solver = list.iter().find(|s| s.identity == prog()).unwrap();
    assert_eq!(solver.platform, westmere());
    assert_eq!(solver.levels[1], ("socket".to_string(), None));
    assert!((solver.levels[0].1.unwrap() + 7.2).abs() < 1e-9);
    // The uncharacterizable socket level has no signal; L3's is listed once.
    assert_eq!(solver.signals, [Signal::TaskClock]);
    assert!(solver.updated_unix > 1_600_000_000);
}

/// `coloc profiles show`'s choice: an app's name or its identity key picks
/// its profiles on every platform; any other names none, and the error
/// lists the apps stored.
#[test]
fn an_apps_profiles_are_named_by_name_or_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("profiles.db");
    let store = Store::open(&path).unwrap();
    store.put(&profile(sc(), westmere(), 1.0)).unwrap();
    store.put(&profile(sc(), yorkfield(), 2.0)).unwrap();
    store.put(&profile(prog(), westmere(), 3.0)).unwrap();
    assert_eq!(store.named("streamcluster").unwrap().len(), 2);
    let by_key = store.named(&prog().key()).unwrap();
    assert_eq!(by_key.len(), 1);
    assert_eq!(by_key[0].identity, prog());
    let e = store.named("nope").unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "no stored profile of \"nope\" in {} (stored apps: solver, streamcluster)",
            path.display()
        )
    );
}

/// An export imported on another machine keeps that machine's profiles and
/// refuses the others, naming both platforms.
#[test]
fn export_import_refuses_other_platforms() {
    let dir = tempfile::tempdir().unwrap();
    let a = Store::open(dir.path().join("a.db")).unwrap();
    a.put(&profile(sc(), westmere(), 14.5)).unwrap();
    a.put(&profile(prog(), westmere(), -7.2)).unwrap();
    a.put(&profile(sc(), yorkfield(), 9.9)).unwrap();
    let mut json = Vec::new();
    assert_eq!(a.export_json(&mut json).unwrap(), 3);

    let b = Store::open(dir.path().join("b.db")).unwrap();
    let report = b.import_json(json.as_slice(), &westmere()).unwrap();
    // In export order: by platform, then app name.
    assert_eq!(report.imported, vec![prog(), sc()]);
    assert_eq!(report.refused.len(), 1);
    let refused = &report.refused[0];
    assert_eq!(refused.identity, sc());
    assert!(
        refused.reason.contains(&yorkfield().to_string())
            && refused.reason.contains(&westmere().to_string()),
        "{}",
        refused.reason
    );
    assert_eq!(b.for_platform(&westmere()).unwrap().len(), 2);
    assert!(b.for_platform(&yorkfield()).unwrap().is_empty());

    // Not an export at all, or one from the future.
    let bad = [
        (r#"{"profiles": []}"#, "missing field"),
        (
            r#"{"format": "other", "version": 1, "profiles": []}"#,
            "`format` is \"other\"",
        ),
        (
            r#"{"format": "coloc-profiles", "version": 9, "profiles": []}"#,
            "export version 9",
        ),
    ];
    for (text, want) in bad {
        let err = b.import_json(text.as_bytes(), &westmere()).unwrap_err();
        assert!(
            matches!(err, StoreError::Import(_)) && err.to_string().contains(want),
            "{err}"
        );
    }
}

fn open_err(path: &Path) -> StoreError {
    Store::open(path).unwrap_err()
}

/// Files that are not a usable store: each error names the file and says what is
/// wrong, and the file is left as it was.
#[test]
fn refuses_garbage_foreign_and_newer_files() {
    let dir = tempfile::tempdir().unwrap();

    let garbage = dir.path().join("garbage.db");
    let bytes: Vec<u8> = (0..8192u32).map(|i| (i * 7919 % 251) as u8).collect();
    std::fs::write(&garbage, &bytes).unwrap();
    let err = open_err(&garbage);
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    assert_eq!(std::fs::read(&garbage).unwrap(), bytes, "left untouched");

    let foreign = dir.path().join("foreign.db");
    Connection::open(&foreign)
        .unwrap()
        .execute_batch("CREATE TABLE users (id INTEGER); CREATE TABLE orders (id INTEGER);")
        .unwrap();
    let err = open_err(&foreign);
    assert!(matches!(err, StoreError::Foreign { .. }), "{err}");
    assert!(err.to_string().contains("orders, users"), "{err}");

    let newer = dir.path().join("newer.db");
    drop(Store::open(&newer).unwrap());
    Connection::open(&newer)
        .unwrap()
        .execute("UPDATE coloc_schema SET version = 7", [])
        .unwrap();
    let err = open_err(&newer);
    assert!(
        matches!(
            err,
            StoreError::Newer {
                found: 7,
                supported: coloc_store::SCHEMA_VERSION,
                ..
            }
        ),
        "{err}"
    );

    let incomplete = dir.path().join("incomplete.db");
    drop(Store::open(&incomplete).unwrap());
    Connection::open(&incomplete)
        .unwrap()
        .execute("DROP TABLE profiles", [])
        .unwrap();
    let err = open_err(&incomplete);
    assert!(matches!(err, StoreError::Damaged { .. }), "{err}");

    let missing_dir = dir.path().join("no/such/dir/p.db");
    assert!(matches!(open_err(&missing_dir), StoreError::Open { .. }));

    for (path, err) in [
        (&garbage, open_err(&garbage)),
        (&foreign, open_err(&foreign)),
        (&newer, open_err(&newer)),
        (&incomplete, open_err(&incomplete)),
        (&missing_dir, open_err(&missing_dir)),
    ] {
        assert!(
            err.to_string().contains(&path.display().to_string()),
            "{err}"
        );
    }
}

/// A store whose data pages were overwritten: opening works (the schema page is
/// intact) but reading the profiles reports the damage, naming the file.
#[test]
fn damaged_pages_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("damaged.db");
    {
        let store = Store::open(&path).unwrap();
        for i in 0..200 {
            let id = AppIdentity::model(&format!("app{i}"), &format!("model{i}"));
            store
                .put(&profile(id, westmere(), f64::from(i % 50)))
                .unwrap();
        }
    }
    // Closing the last connection checkpointed the WAL into the file.
    let mut bytes = std::fs::read(&path).unwrap();
    assert!(bytes.len() > 16 * 4096, "{} bytes", bytes.len());
    for b in &mut bytes[4096..] {
        *b = 0x5a;
    }
    std::fs::write(&path, &bytes).unwrap();
    let err = Store::open(&path).and_then(|s| s.list()).unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("damaged.db"), "{err}");
}

/// Several readers, each with its own connection, read while one writer writes
/// (WAL plus the busy timeout): no reader fails, each sees a growing, complete
/// set of profiles, and at the end everything written is there.
#[test]
fn concurrent_readers_and_a_writer() {
    const WRITES: usize = 60;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    drop(Store::open(&path).unwrap());
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let path = path.clone();
            let done = done.clone();
            std::thread::spawn(move || {
                let store = Store::open(&path).unwrap();
                let mut seen = 0;
                let mut reads = 0;
                while !done.load(Ordering::Acquire) || reads == 0 {
                    let all = store.for_platform(&westmere()).unwrap();
                    assert!(all.len() >= seen, "went back from {seen} to {}", all.len());
                    seen = all.len();
                    assert!(all.iter().all(|p| p.platform == westmere()));
                    assert!(store.list().unwrap().len() >= seen);
                    reads += 1;
                }
                reads
            })
        })
        .collect();
    let writer = {
        let path = path.clone();
        std::thread::spawn(move || {
            let store = Store::open(&path).unwrap();
            for i in 0..WRITES {
                let id = AppIdentity::model(&format!("app{i}"), &format!("model{i}"));
                store.put(&profile(id, westmere(), i as f64)).unwrap();
            }
        })
    };
    writer.join().unwrap();
    done.store(true, Ordering::Release);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    let store = Store::open(&path).unwrap();
    assert_eq!(store.for_platform(&westmere()).unwrap().len(), WRITES);
}

/// A version-1 store (profiles only) is upgraded in place when opened: its
/// profiles stay, calibrations can be stored, the version is the current one.
#[test]
fn version_one_stores_are_upgraded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.db");
    {
        let store = Store::open(&path).unwrap();
        store.put(&profile(sc(), westmere(), 14.5)).unwrap();
    }
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch("DROP TABLE calibrations; UPDATE coloc_schema SET version = 1;")
        .unwrap();
    drop(conn);
    let store = Store::open(&path).unwrap();
    assert!(store.get(&sc(), &westmere()).unwrap().is_some());
    let topo = Topology::synthetic("p", "package:2 numa:1 l3(12M):1 core:6").unwrap();
    store
        .put_calibration(&westmere(), &MemoryCalibration::assumed(&topo))
        .unwrap();
    let version: i64 = Connection::open(&path)
        .unwrap()
        .query_row("SELECT version FROM coloc_schema", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, coloc_store::SCHEMA_VERSION);
}

/// Calibrations are filed by platform, replaced on rewrite, and refused for a
/// platform of another shape.
#[test]
fn calibrations_by_platform() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("c.db")).unwrap();
    let topo = Topology::synthetic("p", "package:2 numa:1 l3(12M):1 core:6").unwrap();
    let mut c = MemoryCalibration::assumed(&topo);
    assert_eq!(store.calibration(&westmere()).unwrap(), None);
    store.put_calibration(&westmere(), &c).unwrap();
    assert_eq!(store.calibration(&westmere()).unwrap().as_ref(), Some(&c));
    c.node_service_rate[0] *= 2.0;
    store.put_calibration(&westmere(), &c).unwrap();
    assert_eq!(store.calibration(&westmere()).unwrap().as_ref(), Some(&c));
    assert_eq!(store.calibration(&yorkfield()).unwrap(), None);
    let err = store.put_calibration(&yorkfield(), &c).unwrap_err();
    assert!(
        matches!(err, StoreError::CalibrationMismatch { .. }) && err.to_string().contains("c.db"),
        "{err}"
    );
}

/// Tang et al.'s characteristics travel with the profile: stored, read back,
/// exported and imported unchanged, the substitute's data sharing runs too; a
/// profile written before they existed (no `sharing` key) still reads,
/// without them.
#[test]
fn sharing_characteristics_round_trip() {
    use coloc_model::profile::{SharedCacheRuns, SharingCharacteristics, SharingSignal};
    let dir = tempfile::tempdir().unwrap();
    let a = Store::open(dir.path().join("a.db")).unwrap();
    let mut p = profile(sc(), westmere(), 3.0);
    p.sharing = Some(SharingCharacteristics {
        signal: SharingSignal::SimCounters,
        threads: 6,
        data_sharing: Some(0.4),
        bandwidth_gbs: Some(0.17),
        llc_miss_rate: Some(2660.0),
        llc_footprint: Some(1596.0),
        missing: vec!["nothing".into()],
        data_sharing_runs: None,
    });
    let mut substitute = profile(sc(), westmere(), 2.0);
    substitute.identity = AppIdentity::model("sub", "substituted");
    substitute.sharing = Some(SharingCharacteristics {
        signal: SharingSignal::StreamCoRuns,
        threads: 1,
        data_sharing: Some(0.1),
        bandwidth_gbs: Some(1.0),
        llc_miss_rate: Some(15625.0),
        llc_footprint: Some(14062.5),
        missing: Vec::new(),
        data_sharing_runs: Some(SharedCacheRuns {
            cache: "core".into(),
            runs: Sensitivity::from_runs(Signal::TaskClock, 2, vec![2e9], vec![1.8e9]).unwrap(),
        }),
    });
    a.put(&substitute).unwrap();
    a.put(&p).unwrap();
    assert_eq!(a.get(&sc(), &westmere()).unwrap(), Some(p.clone()));
    let mut json = Vec::new();
    a.export_json(&mut json).unwrap();
    let b = Store::open(dir.path().join("b.db")).unwrap();
    b.import_json(json.as_slice(), &westmere()).unwrap();
    assert_eq!(b.get(&sc(), &westmere()).unwrap(), Some(p.clone()));
    let id = &substitute.identity;
    assert_eq!(b.get(id, &westmere()).unwrap(), Some(substitute.clone()));

    let mut old = serde_json::to_value(profile(sc(), yorkfield(), 1.0)).unwrap();
    assert!(old.get("sharing").is_none());
    old.as_object_mut().unwrap().remove("sharing");
    let back: AppProfile = serde_json::from_value(old).unwrap();
    assert_eq!(back.sharing, None);
}
