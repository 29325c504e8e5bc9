//! What the store keeps of each program: records by program key, bounded;
//! snapshots replaced; export and import between stores of one platform;
//! writers at once; a damaged file set aside; older stores upgraded.

use coloc_model::knowledge::{Arrangement, Partner, ProgramKey, Record, Source, KEPT};
use coloc_model::profile::PlatformFingerprint;
use coloc_model::Topology;
use coloc_store::{Store, StoreError};
use rusqlite::Connection;

fn platform(description: &str) -> PlatformFingerprint {
    PlatformFingerprint::of(&Topology::synthetic("p", description).unwrap())
}

fn here() -> PlatformFingerprint {
    platform("package:1 core:2")
}

fn elsewhere() -> PlatformFingerprint {
    platform("package:2 numa:1 l3(12M):1 core:6")
}

fn xz(level: &str) -> ProgramKey {
    ProgramKey::program("sha256:0123456789abcdef", &["xz".into(), level.into()])
}

/// An ended solo-time record of `program` at `at`, instance `n`.
fn record(program: ProgramKey, n: u32, at: i64, wall: f64) -> Record {
    Record {
        cpu_secs: Some(wall * 2.0),
        ..Record::solo_time(
            program,
            "xz".into(),
            format!("run/{n}"),
            2,
            wall,
            Source::Run,
            at,
        )
    }
}

fn walls(records: &[Record]) -> Vec<f64> {
    records.iter().map(|r| r.wall_secs).collect()
}

/// Records come back oldest first, by program: its arguments tell programs
/// apart, the executable alone covers them all; only the latest KEPT of a
/// kind stay; another platform's are apart.
#[test]
fn records_by_program_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("k.db")).unwrap();
    let many: Vec<Record> = (0..40)
        .map(|i| record(xz("-9"), i, 1000 + i64::from(i), f64::from(i)))
        .collect();
    store.put_records(&here(), &many).unwrap();
    store
        .put_records(&here(), &[record(xz("-1"), 99, 500, 0.5)])
        .unwrap();
    store
        .put_records(&elsewhere(), &[record(xz("-9"), 1, 2000, 7.0)])
        .unwrap();
    let got = store.records(&here(), &xz("-9")).unwrap();
    assert_eq!(got.len(), KEPT);
    assert_eq!(
        walls(&got),
        (40 - KEPT as u32..40).map(f64::from).collect::<Vec<_>>()
    );
    assert_eq!(got[0], many[40 - KEPT]);
    let exe = ProgramKey {
        args: None,
        ..xz("-9")
    };
    assert_eq!(store.records(&here(), &exe).unwrap().len(), KEPT + 1);
    assert_eq!(
        walls(&store.records(&elsewhere(), &xz("-9")).unwrap()),
        [7.0]
    );
    // Another kind (beside a partner) is bounded on its own.
    let mut beside = record(xz("-9"), 200, 3000, 9.0);
    beside.arrangement = Arrangement::Partitioned;
    beside.partner = Partner::Others { instances: 2 };
    store.put_records(&here(), &[beside]).unwrap();
    assert_eq!(store.records(&here(), &xz("-9")).unwrap().len(), KEPT + 1);
    let list = store.programs(Some(&here())).unwrap();
    assert_eq!(list.len(), 2);
    let nine = list.iter().find(|p| p.program == xz("-9")).unwrap();
    assert_eq!((nine.records, nine.last_unix), (KEPT + 1, 3000));
    assert_eq!(store.programs(None).unwrap().len(), 3);
    // Forgetting one program leaves the other and the other platform's.
    assert_eq!(store.forget(&here(), &xz("-9")).unwrap(), KEPT + 1);
    assert!(store.records(&here(), &xz("-9")).unwrap().is_empty());
    assert_eq!(store.programs(Some(&here())).unwrap().len(), 1);
    assert_eq!(store.records(&elsewhere(), &xz("-9")).unwrap().len(), 1);
}

/// A program is chosen on its platform by name or by the start of its key;
/// an argument that names none is the store's error, naming the platform,
/// the file and the names known there.
#[test]
fn a_program_is_chosen_on_its_platform_and_a_miss_names_what_is_known() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.db");
    let store = Store::open(&path).unwrap();
    store
        .put_records(&here(), &[record(xz("-9"), 1, 1000, 1.0)])
        .unwrap();
    store
        .put_records(&elsewhere(), &[record(xz("-1"), 2, 1000, 1.0)])
        .unwrap();
    let named = store.chosen(&here(), "xz").unwrap();
    assert_eq!(named.len(), 1);
    assert_eq!(named[0].program, xz("-9"));
    assert_eq!(store.chosen(&here(), "0123").unwrap()[0].program, xz("-9"));
    let e = store.chosen(&here(), "gz").unwrap_err();
    assert!(matches!(e, StoreError::Unchosen { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        format!(
            "no program named \"gz\" (a key's start needs at least 4 characters) on {} in {} \
             (known: xz)",
            here(),
            path.display()
        )
    );
    let none = Store::open(dir.path().join("empty.db")).unwrap();
    let e = none.chosen(&here(), "xz").unwrap_err().to_string();
    assert!(e.ends_with("(known: none)"), "{e}");
}

/// A snapshot is replaced by the next one of its instance, and both by its
/// ended record.
#[test]
fn snapshots_are_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("k.db")).unwrap();
    let snap = |at: i64, wall: f64| Record {
        ended: false,
        ..record(xz("-9"), 7, at, wall)
    };
    store.put_records(&here(), &[snap(100, 60.0)]).unwrap();
    store.put_records(&here(), &[snap(160, 120.0)]).unwrap();
    assert_eq!(walls(&store.records(&here(), &xz("-9")).unwrap()), [120.0]);
    store
        .put_records(&here(), &[record(xz("-9"), 7, 170, 130.0)])
        .unwrap();
    let got = store.records(&here(), &xz("-9")).unwrap();
    assert_eq!((walls(&got), got[0].ended), (vec![130.0], true));
}

/// Export then import into another store of the same platform gives the same
/// records and profiles; importing again adds nothing; an export of another
/// platform is refused whole with both platforms named.
#[test]
fn export_and_import_between_stores_of_one_platform() {
    let dir = tempfile::tempdir().unwrap();
    let a = Store::open(dir.path().join("a.db")).unwrap();
    let records: Vec<Record> = (0..5)
        .map(|i| record(xz("-9"), i, 100 + i64::from(i), 2.0 + f64::from(i)))
        .collect();
    a.put_records(&here(), &records).unwrap();
    a.put_records(&elsewhere(), &[record(xz("-1"), 9, 5, 1.0)])
        .unwrap();
    let mut out = Vec::new();
    assert_eq!(a.export_knowledge(&here(), &mut out).unwrap(), 5);
    let b = Store::open(dir.path().join("b.db")).unwrap();
    let got = b.import_knowledge(&out[..], &here()).unwrap();
    assert_eq!(got.records, 5);
    assert_eq!(b.records(&here(), &xz("-9")).unwrap(), records);
    b.import_knowledge(&out[..], &here()).unwrap();
    assert_eq!(b.records(&here(), &xz("-9")).unwrap(), records);
    assert!(b.records(&here(), &xz("-1")).unwrap().is_empty());
    let err = b.import_knowledge(&out[..], &elsewhere()).unwrap_err();
    assert!(matches!(err, StoreError::ForeignPlatform { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains(&here().to_string()) && msg.contains(&elsewhere().to_string()),
        "{msg}"
    );
    assert!(b.records(&elsewhere(), &xz("-9")).unwrap().is_empty());
    let err = b.import_knowledge(&b"{\"format\": \"x\"}"[..], &here());
    assert!(matches!(err, Err(StoreError::Import(_))), "{err:?}");
}

/// Two writers, each with its own connection, write at once: every record of
/// both is there.
#[test]
fn two_writers_at_once_lose_no_record() {
    const EACH: u32 = 150;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    drop(Store::open(&path).unwrap());
    let writers: Vec<_> = ["-1", "-9"]
        .into_iter()
        .map(|level| {
            let path = path.clone();
            std::thread::spawn(move || {
                let store = Store::open(&path).unwrap();
                for i in 0..EACH {
                    // Each its own instance and kind (team size), so the
                    // bound keeps them all.
                    let mut r = record(xz(level), i, i64::from(i), 1.0);
                    r.threads = Some(i);
                    store.put_records(&here(), &[r]).unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let store = Store::open(&path).unwrap();
    for level in ["-1", "-9"] {
        assert_eq!(
            store.records(&here(), &xz(level)).unwrap().len(),
            EACH as usize
        );
    }
}

/// A store file cut short is set aside with the reason, a new one takes its
/// place and works; an intact one is opened as it is; another program's
/// database is an error and left alone.
#[test]
fn a_truncated_store_is_set_aside() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.db");
    {
        let store = Store::open(&path).unwrap();
        let many: Vec<Record> = (0..400)
            .map(|i| {
                let mut r = record(xz(&format!("-{i}")), i, 1, 1.0);
                r.name = "x".repeat(200);
                r
            })
            .collect();
        store.put_records(&here(), &many).unwrap();
    }
    let (store, aside) = Store::open_or_set_aside(&path).unwrap();
    assert!(aside.is_none());
    drop(store);
    let len = std::fs::metadata(&path).unwrap().len();
    assert!(len > 20 * 4096, "{len} bytes");
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(len / 2).unwrap();
    drop(file);
    let (store, aside) = Store::open_or_set_aside(&path).unwrap();
    let aside = aside.expect("set aside");
    assert!(aside.moved_to.exists(), "{}", aside.moved_to.display());
    assert!(
        aside
            .moved_to
            .to_string_lossy()
            .starts_with(&*path.to_string_lossy()),
        "{}",
        aside.moved_to.display()
    );
    assert!(aside.error.to_string().contains("k.db"), "{}", aside.error);
    assert!(store.programs(None).unwrap().is_empty());
    store
        .put_records(&here(), &[record(xz("-9"), 1, 1, 1.0)])
        .unwrap();
    assert_eq!(store.records(&here(), &xz("-9")).unwrap().len(), 1);
    // Not ours: untouched.
    let other = dir.path().join("other.db");
    Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE t (x);")
        .unwrap();
    let err = Store::open_or_set_aside(&other).unwrap_err();
    assert!(matches!(err, StoreError::Foreign { .. }), "{err}");
    assert!(other.exists());
}

/// A version-2 store (profiles and calibrations) gains the knowledge tables
/// when opened; a migrated file is taken once.
#[test]
fn version_two_stores_are_upgraded_and_files_migrate_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v2.db");
    drop(Store::open(&path).unwrap());
    Connection::open(&path)
        .unwrap()
        .execute_batch(
            "DROP TABLE records; DROP TABLE programs; DROP TABLE migrated; \
             UPDATE coloc_schema SET version = 2;",
        )
        .unwrap();
    let store = Store::open(&path).unwrap();
    let version: i64 = Connection::open(&path)
        .unwrap()
        .query_row("SELECT version FROM coloc_schema", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, coloc_store::SCHEMA_VERSION);
    let recs = [record(xz("-9"), 1, 1, 3.0)];
    assert_eq!(store.migrated("w-threads.json").unwrap(), None);
    assert!(store
        .put_migrated("w-threads.json", &here(), &recs)
        .unwrap());
    assert!(!store
        .put_migrated("w-threads.json", &here(), &recs)
        .unwrap());
    assert!(store.migrated("w-threads.json").unwrap().is_some());
    assert_eq!(store.records(&here(), &xz("-9")).unwrap().len(), 1);
}
