//! The `coloc` binary's contract: help, errors that name the bad field, topology
//! output, simulated runs, and `report` recomputing a run's metrics from its trace.

use std::path::{Path, PathBuf};
use std::process::Output;

mod common;

fn coloc(args: &[&str]) -> Output {
    common::coloc().args(args).output().unwrap()
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}

#[test]
fn help_lists_every_command() {
    let o = coloc(&["--help"]);
    let (out, _) = text(&o);
    assert!(o.status.success());
    for cmd in [
        "topo", "run", "sim", "report", "compare", "solo", "demo", "policies", "bench",
    ] {
        assert!(out.contains(cmd), "--help does not mention {cmd}:\n{out}");
    }
}

#[test]
fn policies_lists_the_baselines() {
    let (out, _) = text(&coloc(&["policies"]));
    for p in ["native", "batch", "equal", "static"] {
        assert!(out.contains(p), "{out}");
    }
    // auto, the default, says what it combines.
    let auto = out
        .lines()
        .find(|l| l.starts_with("auto"))
        .unwrap_or_else(|| panic!("no auto line:\n{out}"));
    for part in [
        "combines",
        "CPU partitions",
        "NuPoCo's DoP",
        "admission",
        "keep-or-revert",
    ] {
        assert!(auto.contains(part), "{part}: {auto}");
    }
}

#[test]
fn topo_json_is_the_topology() {
    let o = coloc(&["topo", "--json"]);
    assert!(o.status.success(), "{:?}", text(&o));
    let topo: coloc_model::Topology = serde_json::from_slice(&o.stdout).unwrap();
    assert!(!topo.cpus().is_empty());
}

#[test]
fn topo_reads_hwloc_xml() {
    let xml = repo("crates/model/tests/fixtures/hwloc");
    let Some(file) = std::fs::read_dir(&xml).ok().and_then(|d| {
        d.flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|e| e == "xml"))
    }) else {
        eprintln!("skipped: no hwloc fixture under {}", xml.display());
        return;
    };
    let o = coloc(&["topo", "--xml", file.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.contains("Shared resources"), "{out}");
}

#[test]
fn a_bad_workload_is_refused_naming_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(
        &path,
        "name = \"w\"\n[[app]]\nname = \"a\"\ncommand = [\"true\"]\nthreads = -2\n",
    )
    .unwrap();
    let o = coloc(&[
        "run",
        path.to_str().unwrap(),
        "--out",
        dir.path().join("o").to_str().unwrap(),
    ]);
    let (_, err) = text(&o);
    assert!(!o.status.success());
    assert!(err.contains("bad.toml"), "{err}");
    assert!(err.contains(":5"), "no line number: {err}");
    assert!(err.contains("threads"), "field not named: {err}");
    assert!(
        !dir.path().join("o").exists(),
        "nothing should have been started"
    );
}

#[test]
fn an_unknown_policy_is_refused_with_the_list() {
    let o = coloc(&[
        "run",
        repo("examples/two-barriers.toml").to_str().unwrap(),
        "--policy",
        "nope",
    ]);
    let (_, err) = text(&o);
    assert!(!o.status.success());
    assert!(err.contains("nope") && err.contains("equal"), "{err}");
}

#[test]
fn a_model_workload_is_refused_on_the_real_machine_with_a_pointer_to_sim() {
    let o = coloc(&[
        "run",
        repo("examples/sim/tang-pairs.toml").to_str().unwrap(),
    ]);
    let (_, err) = text(&o);
    assert!(!o.status.success());
    assert!(err.contains("coloc sim"), "{err}");
}

#[test]
fn sim_runs_a_workload_and_report_recomputes_the_same_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let o = coloc(&[
        "sim",
        repo("examples/sim/tang-pairs.toml").to_str().unwrap(),
        "--platform",
        "westmere",
        "--policy",
        "equal",
        "--json",
        "--out",
        out.to_str().unwrap(),
    ]);
    let (run_json, err) = text(&o);
    assert!(o.status.success(), "{err}");
    // It says which policy and machine it ran on (on stderr: stdout is JSON).
    assert!(
        err.contains("under equal on sim:westmere"),
        "the run names its policy and platform: {err}"
    );
    let r = coloc(&["report", out.to_str().unwrap(), "--json"]);
    let (report_json, err) = text(&r);
    assert!(r.status.success(), "{err}");
    let a: serde_json::Value = serde_json::from_str(&run_json).unwrap();
    let b: serde_json::Value = serde_json::from_str(&report_json).unwrap();
    assert_eq!(a, b, "report differs from the run's own metrics");
}

#[test]
fn sim_lists_platforms_and_refuses_an_unknown_one() {
    let (out, _) = text(&coloc(&["sim", "--list-platforms"]));
    assert!(out.contains("kvm-2cpu"), "{out}");
    let o = coloc(&[
        "sim",
        repo("examples/sim/tang-pairs.toml").to_str().unwrap(),
        "--platform",
        "nosuch",
    ]);
    let (_, err) = text(&o);
    assert!(!o.status.success());
    assert!(err.contains("nosuch") && err.contains("kvm-2cpu"), "{err}");
}

/// A simulated result means nothing without the machine it models: `coloc sim`
/// used to run on kvm-2cpu when `--platform` was left out.
#[test]
fn sim_without_a_platform_is_refused_instead_of_defaulting() {
    let o = coloc(&[
        "sim",
        repo("examples/sim/tang-pairs.toml").to_str().unwrap(),
    ]);
    let (_, err) = text(&o);
    assert!(!o.status.success());
    assert!(err.contains("--platform"), "{err}");
}

/// The README's first command runs the demo under native, equal and auto by
/// default; one run each here, with the apps' threads checked by the Linux
/// integration tests, so this checks the comparison's shape: every policy's
/// row, no failed instance, the traces written.
#[test]
fn the_demo_compares_native_equal_and_auto() {
    let out = tempfile::tempdir().unwrap();
    let o = coloc(&[
        "demo",
        "--repeat",
        "1",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("policies native, equal, auto"), "{stdout}");
    for policy in ["native", "equal", "auto"] {
        let row = stdout
            .lines()
            .find(|l| l.starts_with(&format!("| {policy} ")))
            .unwrap_or_else(|| panic!("no row for {policy}:\n{stdout}"));
        // | policy | runs | failed | ...
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        assert_eq!((cells[2], cells[3]), ("1", "0"), "{row}");
    }
    let traces = std::fs::read_dir(out.path()).unwrap().count();
    assert!(traces >= 3, "{traces} entries in {}", out.path().display());
}

/// `coloc run` says, per app, what its program holds and which levers act
/// (docs/signals.md, Runtimes and levers): a malleable libgomp kernel has
/// the DoP channel; `sleep` holds no threaded runtime and is not malleable;
/// with `cap_threads` the team its runtimes' variables got is named.
#[test]
fn run_says_what_each_program_holds_and_which_levers_act() {
    let dir = tempfile::tempdir().unwrap();
    let w = dir.path().join("w.toml");
    std::fs::write(
        &w,
        "name = \"levers\"\n\
         [[app]]\nname = \"omp\"\ncommand = [\"kernel:barrier\", \"--regions\", \"200\"]\nthreads = 1\nmalleable = true\n\
         [[app]]\nname = \"plain\"\ncommand = [\"sleep\", \"0.2\"]\nthreads = 1\ncap_threads = true\n",
    )
    .unwrap();
    let o = coloc(&[
        "run",
        w.to_str().unwrap(),
        "--policy",
        "native",
        "--out",
        dir.path().join("o").to_str().unwrap(),
    ]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let line = |app: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("{app}: ")))
            .unwrap_or_else(|| panic!("no line for {app}: {out}"))
            .to_string()
    };
    assert!(
        line("omp").ends_with("GNU libgomp; levers: placement, DoP channel (each region's team)"),
        "{out}"
    );
    assert!(
        line("plain").ends_with(
            "no threaded runtime coloc knows; levers: placement, no DoP channel (not malleable), \
             thread caps at launch (1)"
        ),
        "{out}"
    );
}
