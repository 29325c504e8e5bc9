//! What coloc learns of each program (docs/knowledge.md), through the built
//! binary: shared by workload files that run the same program, not by a
//! rebuilt one; moved between stores of one platform with the same
//! decisions after, refused for another; the files of earlier versions
//! migrated once; several coloc processes writing one store at once.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use coloc_model::trace::{Trace, TraceEvent};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `coloc ARGS` learning into the store under `data` (`XDG_DATA_HOME`).
fn coloc_in(data: &Path, args: &[&str]) -> Output {
    common::coloc()
        .args(args)
        .env("XDG_DATA_HOME", data)
        .output()
        .unwrap()
}

/// [`coloc_in`], expected to succeed; stdout and stderr.
fn ok_in(data: &Path, args: &[&str]) -> (String, String) {
    let o = coloc_in(data, args);
    let (out, err) = common::text(&o);
    assert!(o.status.success(), "coloc {args:?} failed:\n{err}\n{out}");
    (out, err)
}

/// Writes workload `name` with apps (name, model) at 2 threads, arriving at
/// 0 s; returns its path.
fn models(dir: &Path, name: &str, apps: &[(&str, &str)]) -> PathBuf {
    let mut text = format!("name = \"{name}\"\n");
    for (app, model) in apps {
        text.push_str(&format!(
            "[[app]]\nname = \"{app}\"\nmodel = \"{model}\"\nthreads = 2\n"
        ));
    }
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

const SIM: [&str; 2] = ["--sim", "kvm-2cpu"];

/// The rows of `coloc knowledge list`: (name, records).
fn listed(data: &Path, sim: bool) -> Vec<(String, usize)> {
    let mut args = vec!["knowledge", "list"];
    if sim {
        args.extend(SIM);
    }
    let (out, _) = ok_in(data, &args);
    out.lines()
        .skip(2)
        .filter(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (cells[1].to_string(), cells[3].parse().unwrap())
        })
        .collect()
}

/// Solo times measured through one workload file are found through another
/// that runs the same programs under other names: `compare` on the second
/// has solo times (Hmean speedup, reference points) it never measured, and
/// the store knows two programs, not four.
#[test]
fn the_same_program_in_two_workload_files_shares_its_knowledge() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let first = models(
        data,
        "first",
        &[("a", "kernel-compute"), ("b", "kernel-stream")],
    );
    let second = models(
        data,
        "second",
        &[("compute", "kernel-compute"), ("stream", "kernel-stream")],
    );
    let compare = |w: &Path, out: &str| {
        let out = data.join(out);
        ok_in(
            data,
            &[
                &["compare"][..],
                &SIM,
                &[
                    s(w),
                    "--policies",
                    "native",
                    "--repeat",
                    "1",
                    "--out",
                    s(&out),
                ],
            ]
            .concat(),
        )
        .0
    };
    let blind = compare(&second, "c0");
    assert!(
        blind.contains("(no solo times for this workload"),
        "{blind}"
    );
    let solo_out = data.join("solo");
    ok_in(
        data,
        &[
            &["solo"][..],
            &SIM,
            &[s(&first), "--threads", "1,2", "--out", s(&solo_out)],
        ]
        .concat(),
    );
    let seen = compare(&second, "c1");
    assert!(!seen.contains("(no solo times"), "{seen}");
    assert!(seen.contains("makespan / bound"), "{seen}");
    let names: Vec<String> = listed(data, true).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["compute", "stream"], "named as they last ran");
}

/// An executable that does `body`.
fn script(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// On this machine a program is its executable's content and its
/// arguments: the same file under another workload and app name adds to its
/// records; the file rewritten ("rebuilt") is a new program.
#[test]
fn a_rebuilt_binary_is_a_new_program() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let exe = data.join("prog");
    script(&exe, "exit 0");
    let workload = |name: &str, app: &str| {
        let path = data.join(format!("{name}.toml"));
        std::fs::write(
            &path,
            format!(
                "name = \"{name}\"\n[[app]]\nname = \"{app}\"\ncommand = [\"{}\", \"--go\"]\nthreads = 1\n",
                s(&exe)
            ),
        )
        .unwrap();
        path
    };
    let run = |w: &Path, out: &str| {
        let out = data.join(out);
        ok_in(data, &["run", s(w), "--policy", "native", "--out", s(&out)]).0
    };
    let said = run(&workload("one", "x"), "r1");
    assert!(said.contains("learned: 1 record(s)"), "{said}");
    run(&workload("two", "y"), "r2");
    assert_eq!(listed(data, false), [("y".to_string(), 2)]);
    script(&exe, ": rebuilt\nexit 0");
    run(&workload("one", "x"), "r3");
    let mut got = listed(data, false);
    got.sort();
    assert_eq!(got, [("x".to_string(), 1), ("y".to_string(), 2)]);
}

/// The plans of a trace, with their times (decision times left out: they are
/// measured, not decided).
fn decisions(dir: &Path) -> Vec<String> {
    let file = std::fs::File::open(dir.join("trace.jsonl")).unwrap();
    let trace = Trace::read(std::io::BufReader::new(file)).unwrap();
    trace
        .events
        .iter()
        .filter_map(|e| match e {
            TraceEvent::Plan { t, plan, .. } => Some(format!("{t:?} {plan:?}")),
            TraceEvent::Start { t, app, .. } => Some(format!("{t:?} start {app}")),
            _ => None,
        })
        .collect()
}

/// What one store learned, exported and imported into a new store of the
/// same platform, gives the same decisions on the same (simulated) run; an
/// empty store gives others, so the knowledge is what decided. An export of
/// one platform is refused by another, naming both.
#[test]
fn export_and_import_give_the_same_decisions() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, empty) = (
        dir.path().join("a"),
        dir.path().join("b"),
        dir.path().join("c"),
    );
    for d in [&a, &b, &empty] {
        std::fs::create_dir(d).unwrap();
    }
    // Three apps on 2 CPUs: auto's admission decides by solo times.
    let w = models(
        dir.path(),
        "three",
        &[
            ("c1", "kernel-compute"),
            ("s", "kernel-stream"),
            ("c2", "kernel-compute"),
        ],
    );
    ok_in(
        &a,
        &[
            &["solo"][..],
            &SIM,
            &[
                s(&w),
                "--threads",
                "1,2",
                "--out",
                s(&dir.path().join("solo")),
            ],
        ]
        .concat(),
    );
    let export = dir.path().join("k.json");
    ok_in(
        &a,
        &[&["knowledge", "export", s(&export)][..], &SIM].concat(),
    );
    let (said, _) = ok_in(
        &b,
        &[&["knowledge", "import", s(&export)][..], &SIM].concat(),
    );
    assert!(said.contains("imported 18 record(s)"), "{said}");
    let run = |data: &Path, out: &str| {
        let out = dir.path().join(out);
        ok_in(
            data,
            &[
                &["run"][..],
                &SIM,
                &[s(&w), "--policy", "auto", "--out", s(&out)],
            ]
            .concat(),
        );
        decisions(&out)
    };
    let (from_a, from_b) = (run(&a, "ra"), run(&b, "rb"));
    assert_eq!(from_a, from_b);
    assert_ne!(run(&empty, "rc"), from_a, "knowledge changed no decision");
    let o = coloc_in(
        &b,
        &["knowledge", "import", s(&export), "--sim", "yorkfield"],
    );
    let (_, err) = common::text(&o);
    assert!(!o.status.success());
    assert!(
        err.contains("what one platform learned does not hold on another")
            && err.matches(" shape ").count() == 2,
        "{err}"
    );
}

/// The solo-time and co-run files of an earlier coloc are taken into the
/// store at the workload's first run, under its apps' programs, renamed, and
/// not taken again.
#[test]
fn files_of_earlier_versions_are_migrated_once() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let w = models(
        data,
        "old",
        &[("a", "kernel-compute"), ("b", "kernel-stream")],
    );
    let platform = coloc_sim::platform("kvm-2cpu").unwrap();
    let key = format!("sim-kvm-2cpu-{:016x}", platform.topology.shape_hash());
    let solo = data.join("coloc/solo");
    std::fs::create_dir_all(&solo).unwrap();
    let threads = solo.join(format!("old-{key}-threads.json"));
    std::fs::write(
        &threads,
        r#"{"wall": {"a": {"1": [7.5], "2": [4.25]}, "b": {"2": [3.0]}}}"#,
    )
    .unwrap();
    let coruns = solo.join(format!("old-{key}-coruns.json"));
    std::fs::write(&coruns, r#"[{"apps": ["a", "b"], "rates": [0.5, 0.75]}]"#).unwrap();
    let run = |out: &str| {
        let out = data.join(out);
        ok_in(
            data,
            &[
                &["run"][..],
                &SIM,
                &[s(&w), "--policy", "native", "--out", s(&out)],
            ]
            .concat(),
        )
    };
    let (_, err) = run("r1");
    assert!(
        err.contains("migrated 3 record(s) of") && err.contains("migrated 2 record(s) of"),
        "{err}"
    );
    assert!(!threads.exists() && !coruns.exists());
    let mut done = threads.into_os_string();
    done.push(".migrated");
    assert!(PathBuf::from(done).exists());
    let (_, err) = run("r2");
    assert!(!err.contains("migrated"), "{err}");
    let (shown, _) = ok_in(data, &[&["knowledge", "show", "a"][..], &SIM].concat());
    assert!(shown.contains("|  7.500 |"), "{shown}");
    // The rate comes back as it was, beside the partner program.
    let row = shown
        .lines()
        .find(|l| l.starts_with("| b ") && l.contains("mixed"))
        .unwrap_or_else(|| panic!("{shown}"));
    assert!(row.contains("0.500"), "{shown}");
}

/// Four coloc processes storing solo runs into one store at once: every
/// record of every one is there.
#[test]
fn writers_at_once_lose_no_record() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let models_of = [
        "kernel-compute",
        "kernel-stream",
        "kernel-barrier",
        "kernel-share",
    ];
    let children: Vec<_> = models_of
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let w = models(data, &format!("w{i}"), &[(m, m)]);
            common::coloc()
                .args(["solo", s(&w), "--threads", "1,2", "--repeat", "3", "--out"])
                .arg(data.join(format!("solo{i}")))
                .args(SIM)
                .env("XDG_DATA_HOME", data)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", common::text(&o).1);
    }
    let got = listed(data, true);
    assert_eq!(got.len(), models_of.len(), "{got:?}");
    for (name, records) in got {
        assert_eq!(records, 6, "{name}");
    }
}

/// What auto's trial measured of a set of programs reaches the next run of
/// the same programs (docs/knowledge.md, Trials of a set of programs), all
/// through the binary on the simulator's `kvm-2cpu`: a barrier team beside a
/// one-long-region program, run three times with one store (about 0.5 s
/// each in debug), at 60 ms intervals: the run's first set runs the own
/// arrangement until its age pays for a trial (16 intervals, 0.96 s;
/// docs/policies/auto.md, The cost of trying), so the first run's trial
/// ends open after 1 pair; the second counts it among its pairs and
/// settles after 2 of its own; the third
/// starts settled on the stored pairs, which `coloc run`'s last verdicts and
/// `coloc why` name. `coloc knowledge show` lists the set; forgetting one of
/// its programs forgets it, and the next run measures from nothing again.
#[test]
fn a_sets_trial_starts_from_what_earlier_runs_measured() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let w = data.join("pair.toml");
    std::fs::write(
        &w,
        "name = \"pair\"\nepoch = \"60ms\"\n[[app]]\nname = \"a\"\nmodel = \"kernel-barrier\"\nthreads = 2\n\
         malleable = true\n[[app]]\nname = \"b\"\nmodel = \"sp-one-region\"\nthreads = 2\n",
    )
    .unwrap();
    let sim = |run: &str| {
        let out = data.join(run);
        let (stdout, _) = ok_in(
            data,
            &[
                "sim",
                s(&w),
                "--platform",
                "kvm-2cpu",
                "--policy",
                "auto",
                "--out",
                s(&out),
            ],
        );
        stdout
    };
    let first = sim("run1");
    assert!(!first.contains("stored pair(s)"), "{first}");
    let second = sim("run2");
    assert!(
        second.contains("1 stored pair(s) of these programs (1 earlier trial(s)")
            && second.contains("counted among the pairs"),
        "{second}"
    );
    let third = sim("run3");
    assert!(third.contains("started settled on own from"), "{third}");
    let (why, _) = ok_in(data, &["why", "a", s(&data.join("run3"))]);
    assert!(why.contains("started settled on own from"), "{why}");
    let (show, _) = ok_in(data, &["knowledge", "show", "a", "--sim", "kvm-2cpu"]);
    assert!(
        show.contains("auto's trials beside others") && show.contains("a + b"),
        "{show}"
    );
    ok_in(data, &["knowledge", "forget", "b", "--sim", "kvm-2cpu"]);
    let (show, _) = ok_in(data, &["knowledge", "show", "a", "--sim", "kvm-2cpu"]);
    assert!(!show.contains("a + b"), "{show}");
    let again = sim("run4");
    assert!(!again.contains("stored pair(s)"), "{again}");
}
