//! The profile-store commands through the built binary: `profiles export` and
//! `import` round trip, an import refusing another platform's profiles, a
//! damaged store file named and left as it was, `calibrate` storing what
//! `calibrate --show` prints, a simulated platform's own calibration, and the
//! warnings a run gives when `resense` lacks profiles. Every test uses its own
//! store in a temporary directory (`--db`, or `XDG_DATA_HOME` for runs, which
//! read the default store).

use std::path::Path;
use std::process::Output;

use coloc_model::profile::{
    AppIdentity, AppProfile, LevelProfile, LevelResult, PlatformFingerprint, Sensitivity, Signal,
};
use coloc_model::topology::ResourceKind;
use coloc_store::Store;

mod common;

fn coloc(args: &[&str], data_home: Option<&Path>) -> Output {
    let mut cmd = common::coloc();
    cmd.args(args);
    if let Some(d) = data_home {
        cmd.env("XDG_DATA_HOME", d);
    }
    cmd.output().unwrap()
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Runs and expects success; returns stdout, stderr.
fn ok(args: &[&str]) -> (String, String) {
    let o = coloc(args, None);
    let (out, err) = text(&o);
    assert!(o.status.success(), "coloc {args:?} failed:\n{err}\n{out}");
    (out, err)
}

/// Runs and expects failure; returns stdout, stderr.
fn fails(args: &[&str]) -> (String, String) {
    let o = coloc(args, None);
    let (out, err) = text(&o);
    assert!(!o.status.success(), "coloc {args:?} succeeded:\n{out}");
    (out, err)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn this_machine() -> PlatformFingerprint {
    PlatformFingerprint::of(&coloc_linux::topology::host_topology().unwrap())
}

/// A profile with an L2 score from task-clock runs (baseline 1000, contention
/// 1000 − 10·score, twice).
fn profile(name: &str, platform: PlatformFingerprint, score: f64) -> AppProfile {
    AppProfile {
        sharing: None,
        identity: AppIdentity::model(name, name),
        platform,
        levels: vec![LevelProfile {
            level: ResourceKind::Cache { level: 2 },
            result: LevelResult::Scored(
                Sensitivity::from_runs(
                    Signal::TaskClock,
                    2,
                    vec![1000.0, 1000.0],
                    vec![1000.0 - 10.0 * score; 2],
                )
                .unwrap(),
            ),
        }],
    }
}

/// Export from one store, import into another: the same profiles, listed the
/// same; `show` prints one in full and `-` exports to standard output.
#[test]
fn export_import_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, file) = (
        dir.path().join("a.db"),
        dir.path().join("b.db"),
        dir.path().join("export.json"),
    );
    let here = this_machine();
    let store = Store::open(&a).unwrap();
    store.put(&profile("sc", here.clone(), 14.5)).unwrap();
    store.put(&profile("mg", here.clone(), -7.25)).unwrap();
    drop(store);

    let (_, err) = ok(&["profiles", "export", s(&file), "--db", s(&a)]);
    assert!(err.contains("exported 2 profile(s)"), "{err}");
    let (out, _) = ok(&["profiles", "import", s(&file), "--db", s(&b)]);
    assert!(out.contains("imported: model sc"), "{out}");
    assert!(out.contains("2 imported into"), "{out}");

    let (sa, sb) = (Store::open(&a).unwrap(), Store::open(&b).unwrap());
    assert_eq!(
        sa.for_platform(&here).unwrap(),
        sb.for_platform(&here).unwrap()
    );
    let (list, _) = ok(&["profiles", "list", "--db", s(&b)]);
    let rows: Vec<&str> = list.lines().filter(|l| l.starts_with("| model")).collect();
    assert_eq!(rows.len(), 2, "{list}");
    assert!(rows.iter().any(|r| r.contains("L2 -7.25")), "{list}");
    assert!(rows
        .iter()
        .all(|r| r.contains("(this machine)") && r.contains("task-clock")));

    let (show, _) = ok(&["profiles", "show", "sc", "--db", s(&b)]);
    assert!(show.contains("key: model:sc"), "{show}");
    assert!(show.contains("+14.50"), "{show}");

    let (json, _) = ok(&["profiles", "export", "--db", s(&b)]);
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(doc["profiles"].as_array().map(Vec::len), Some(2));

    let (_, err) = fails(&["profiles", "show", "nobody", "--db", s(&b)]);
    assert!(err.contains("stored apps: mg, sc"), "{err}");
}

/// Profiles of another platform are refused with the reason naming both, and
/// not stored; the exit status says something was refused.
#[test]
fn import_refuses_another_platform() {
    let dir = tempfile::tempdir().unwrap();
    let (db, file) = (dir.path().join("p.db"), dir.path().join("other.json"));
    let here = this_machine();
    let other = PlatformFingerprint {
        cpu_model: "Intel Xeon E5-2680".into(),
        shape_hash: here.shape_hash ^ 1,
    };
    let source = Store::open(dir.path().join("src.db")).unwrap();
    source.put(&profile("sc", other, 3.0)).unwrap();
    let mut json = Vec::new();
    source.export_json(&mut json).unwrap();
    std::fs::write(&file, json).unwrap();

    let (out, err) = fails(&["profiles", "import", s(&file), "--db", s(&db)]);
    assert!(
        out.contains("refused: model sc was measured on \"Intel Xeon E5-2680\"")
            && out.contains("not on this platform"),
        "{out}"
    );
    assert!(out.contains("0 imported"), "{out}");
    assert!(err.contains("1 profile(s) refused"), "{err}");
    assert!(Store::open(&db).unwrap().list().unwrap().is_empty());

    // Not an export at all: the field is named, nothing stored.
    std::fs::write(&file, r#"{"format": "csv", "version": 1, "profiles": []}"#).unwrap();
    let (_, err) = fails(&["profiles", "import", s(&file), "--db", s(&db)]);
    assert!(err.contains("`format` is \"csv\""), "{err}");
}

/// `--sim PLATFORM` imports for that simulated platform: its profiles are
/// kept, this machine's are refused.
#[test]
fn import_for_a_simulated_platform() {
    let dir = tempfile::tempdir().unwrap();
    let (db, file) = (dir.path().join("p.db"), dir.path().join("mixed.json"));
    let kvm = PlatformFingerprint::of(&coloc_sim::platform("kvm-2cpu").unwrap().topology);
    let source = Store::open(dir.path().join("src.db")).unwrap();
    source.put(&profile("cg", kvm.clone(), 1.0)).unwrap();
    source.put(&profile("sc", this_machine(), 2.0)).unwrap();
    let mut json = Vec::new();
    source.export_json(&mut json).unwrap();
    std::fs::write(&file, json).unwrap();

    let (out, _) = fails(&[
        "profiles",
        "import",
        s(&file),
        "--sim",
        "kvm-2cpu",
        "--db",
        s(&db),
    ]);
    assert!(
        out.contains("imported: model cg") && out.contains("refused: model sc"),
        "{out}"
    );
    let stored = Store::open(&db).unwrap().for_platform(&kvm).unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].identity.name, "cg");
}

/// A damaged store file is named by every command and left byte for byte as
/// it was, before any measuring.
#[test]
fn damaged_store_is_named_and_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("damaged.db");
    let garbage: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&db, &garbage).unwrap();
    let export = dir.path().join("e.json");
    std::fs::write(
        &export,
        r#"{"format": "coloc-profiles", "version": 1, "profiles": []}"#,
    )
    .unwrap();
    let cases: [&[&str]; 5] = [
        &["profiles", "list"],
        &["profiles", "show", "sc"],
        &["profiles", "import", s(&export)],
        &["calibrate", "--show"],
        &[
            "calibrate",
            "--max-threads",
            "1",
            "--mb",
            "1",
            "--iters",
            "1",
        ],
    ];
    for args in cases {
        let mut args = args.to_vec();
        args.extend(["--db", s(&db)]);
        let (out, err) = fails(&args);
        assert!(
            err.contains(&format!("profile store {}", db.display()))
                && err.contains("damaged or is not an SQLite database"),
            "{args:?}: {err}"
        );
        assert!(!out.contains("GB/s"), "{args:?} measured: {out}");
        assert_eq!(std::fs::read(&db).unwrap(), garbage, "{args:?} changed it");
    }
}

/// A short calibration of this machine is stored and `--show` prints it;
/// `--from` recomputes exactly it from the runs' traces (docs/trace-format.md,
/// Measurement procedures); a missing store is not created by reading
/// commands.
#[test]
fn calibrate_stores_what_show_prints() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("p.db");
    let (_, err) = fails(&["calibrate", "--show", "--db", s(&db)]);
    assert!(err.contains("run `coloc calibrate`"), "{err}");
    let (out, _) = ok(&["profiles", "list", "--db", s(&db)]);
    assert!(out.contains("no profile store at"), "{out}");
    assert!(!db.exists());

    let (out, _) = ok(&[
        "calibrate",
        "--max-threads",
        "1",
        "--mb",
        "16",
        "--iters",
        "2",
        "--repeat",
        "1",
        "--db",
        s(&db),
        "--out",
        s(&dir.path().join("runs")),
    ]);
    assert!(out.contains("| 0 -> 0 "), "{out}");
    let (again, _) = ok(&["calibrate", "--from", s(&dir.path().join("runs"))]);
    let measured = &out[..out.find("stored in").expect("a stored line")];
    assert!(
        again.ends_with(measured),
        "measured:\n{measured}\nrecomputed:\n{again}"
    );
    let stored = Store::open(&db)
        .unwrap()
        .calibration(&this_machine())
        .unwrap()
        .expect("a stored calibration");
    assert!(
        stored.method.starts_with("stream plateau"),
        "{}",
        stored.method
    );
    // The cache ladder ran, and its capacity is stored or the note says why not.
    assert!(out.contains("| stream working set, 1 thread |"), "{out}");
    assert!(
        stored.llc_bytes.is_some() || out.contains("LLC capacity not measured"),
        "{out}"
    );
    let gbs = stored.node_service_rate[0] * f64::from(stored.line_bytes) / 1e9;
    assert!(gbs > 0.0 && gbs.is_finite());
    let (show, _) = ok(&["calibrate", "--show", "--db", s(&db)]);
    assert!(
        show.contains(&format!("{gbs:.2}")),
        "{gbs:.2} not in\n{show}"
    );
    assert!(show.contains(&stored.measured_at), "{show}");
}

/// A simulated platform's calibration is its own figures, printed and not
/// stored.
#[test]
fn calibrate_sim_prints_the_platforms_figures() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("p.db");
    let westmere = coloc_sim::platform("westmere").unwrap();
    let (out, _) = ok(&["calibrate", "--sim", "westmere", "--db", s(&db)]);
    let mc = format!("{:.2}", westmere.params.mc_bandwidth_gbs);
    let link = format!("{:.2}", westmere.params.link_bandwidth_gbs);
    assert!(out.contains(&mc) && out.contains(&link), "{out}");
    assert!(out.contains("measured: never (given figures)"), "{out}");
    assert!(!db.exists(), "--sim stored something");
}

/// `resense` names each app it has no profile for, with the command that
/// makes one; a policy that reads no profiles warns about nothing.
#[test]
fn runs_warn_about_missing_profiles_only_for_resense() {
    let dir = tempfile::tempdir().unwrap();
    let workload = dir.path().join("pair.toml");
    std::fs::write(
        &workload,
        "name = \"pair\"\n\
         [[app]]\nname = \"a\"\nmodel = \"kernel-compute\"\nthreads = 1\n\
         [[app]]\nname = \"b\"\nmodel = \"kernel-stream\"\nthreads = 1\n",
    )
    .unwrap();
    // A's profile on the simulated platform, in the default store of this
    // data directory.
    let kvm = coloc_sim::platform("kvm-2cpu").unwrap();
    let store_dir = dir.path().join("coloc");
    std::fs::create_dir_all(&store_dir).unwrap();
    let store = Store::open(store_dir.join("profiles.sqlite")).unwrap();
    let mut a = profile("a", PlatformFingerprint::of(&kvm.topology), 5.0);
    a.identity = AppIdentity::model("a", "kernel-compute");
    store.put(&a).unwrap();
    drop(store);

    let run = |policy: &str| {
        // A run never reuses an existing trace: one directory per policy.
        let out = dir.path().join(format!("out-{policy}"));
        let o = coloc(
            &[
                "sim",
                s(&workload),
                "--platform",
                "kvm-2cpu",
                "--policy",
                policy,
                "--out",
                s(&out),
            ],
            Some(dir.path()),
        );
        let (stdout, err) = text(&o);
        assert!(o.status.success(), "{policy}: {err}\n{stdout}");
        err
    };
    let err = run("resense");
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].contains("no profile of app \"b\"")
            && warnings[0].contains("`coloc profile WORKLOAD --app b --sim kvm-2cpu`"),
        "{err}"
    );
    for policy in ["native", "nupoco"] {
        let err = run(policy);
        assert!(!err.contains("warning"), "{policy}: {err}");
    }
}
