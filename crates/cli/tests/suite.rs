//! The real-program suite (`bench/suite/README.md`) without its programs:
//! every program file parses and the suite holds what it promises, `scripts/
//! setup --bench` installs every package a program names, and `coloc gen
//! --suite` writes the same mix for a seed and says which set the seed is in.
//! With a program: one cheap real program (the suite's `xz`, on a small
//! input this test makes) through `coloc bench mixes --suite … --fresh`
//! end to end.

mod common;

use std::path::{Path, PathBuf};

use coloc_model::workload::parse_program;
use coloc_model::workload::parse_workload;
use coloc_model::workload::suite::{ProgramKind, SuiteProgram};
use common::{coloc, repo, text};

fn programs() -> Vec<(PathBuf, SuiteProgram)> {
    let dir = repo("bench/suite/programs");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(&f).unwrap();
            let p = parse_program(&f.display().to_string(), &text).unwrap();
            (f, p)
        })
        .collect()
}

/// At least 12 programs, 6 of them OpenMP; each named after its file; each
/// script it runs from the repository is there and executable; each input
/// it needs from the repository (not made by setup) is there.
#[test]
fn the_suite_holds_twelve_programs_six_of_them_openmp() {
    use std::os::unix::fs::PermissionsExt;
    let all = programs();
    let openmp = all
        .iter()
        .filter(|(_, p)| p.suite.kind == ProgramKind::Openmp)
        .count();
    assert!(all.len() >= 12, "{} programs", all.len());
    assert!(openmp >= 6, "{openmp} OpenMP programs");
    for (file, p) in &all {
        assert_eq!(
            file.file_stem().unwrap().to_str().unwrap(),
            p.app.name,
            "{}: a program's file is named after it",
            file.display()
        );
        assert!(
            !p.suite.packages.is_empty(),
            "{}: no package",
            file.display()
        );
        let argv0 = &p.app.command.as_ref().unwrap()[0];
        if argv0.starts_with("bench/suite/") {
            let mode = std::fs::metadata(repo(argv0)).unwrap().permissions().mode();
            assert!(mode & 0o111 != 0, "{argv0} is not executable");
        }
        for need in p
            .suite
            .needs
            .iter()
            .filter(|n| n.starts_with("bench/suite/"))
        {
            assert!(repo(need).exists(), "{}: {need} is missing", file.display());
        }
    }
}

/// `scripts/setup --bench` installs every Debian package a program names.
#[test]
fn setup_installs_every_package_of_the_suite() {
    let setup = std::fs::read_to_string(repo("scripts/setup")).unwrap();
    let start = setup
        .find("pkgs=(")
        .expect("setup lists the bench packages");
    let end = start + setup[start..].find(')').unwrap();
    let listed: Vec<&str> = setup[start + 6..end].split_whitespace().collect();
    for (file, p) in programs() {
        for pkg in &p.suite.packages {
            assert!(
                listed.contains(&pkg.as_str()),
                "{}: package {pkg} is not in scripts/setup's list {listed:?}",
                file.display()
            );
        }
    }
}

fn gen(args: &[&str]) -> (bool, String, String) {
    let o = coloc().arg("gen").args(args).output().unwrap();
    let (out, err) = text(&o);
    (o.status.success(), out, err)
}

/// Same seed, same file; the comment names the seed's set; the file parses
/// as a workload of 2 to 4 of the suite's programs, the first at 0 s.
#[test]
fn gen_suite_writes_the_same_mix_for_a_seed_and_names_its_set() {
    let suite = repo("bench/suite");
    let suite = suite.to_str().unwrap();
    let (ok, a, err) = gen(&["--suite", suite, "--seed", "101"]);
    assert!(ok, "{err}");
    assert_eq!(a, gen(&["--suite", suite, "--seed", "101"]).1);
    assert!(a.contains("--seed 101` (held out seed"), "{a}");
    let w = parse_workload("mix.toml", &a).unwrap();
    assert_eq!(w.name, "suite-101");
    assert!((2..=4).contains(&w.apps.len()), "{a}");
    assert_eq!(w.apps[0].arrive_at, std::time::Duration::ZERO);
    let names: Vec<String> = programs().into_iter().map(|(_, p)| p.app.name).collect();
    assert!(w.apps.iter().all(|a| names.contains(&a.name)), "{a}");
    let (_, tuning, _) = gen(&["--suite", suite, "--seed", "3"]);
    assert!(tuning.contains("(tuning seed"), "{tuning}");
    assert_ne!(a, tuning);
}

#[test]
fn gen_suite_refuses_a_bad_suite_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, _, err) = gen(&["--suite", dir.path().to_str().unwrap(), "--seed", "1"]);
    assert!(!ok && err.contains("suite.toml"), "{err}");
    std::fs::write(
        dir.path().join("suite.toml"),
        "tuning = \"1..10\"\nheld_out = \"5..20\"\n",
    )
    .unwrap();
    let (ok, _, err) = gen(&["--suite", dir.path().to_str().unwrap(), "--seed", "1"]);
    assert!(
        !ok && err.contains("held_out") && err.contains("overlap"),
        "{err}"
    );
    // --platform belongs to the model generator.
    let (ok, _, err) = gen(&["--suite", "bench/suite", "--platform", "kvm-2cpu"]);
    assert!(!ok && err.contains("--platform"), "{err}");
}

/// A suite of one real program: the suite's own `xz` file with its input
/// replaced by 16 MiB of text this test writes.
fn one_program_suite(dir: &Path) -> PathBuf {
    let suite = dir.join("suite");
    std::fs::create_dir_all(suite.join("programs")).unwrap();
    std::fs::write(
        suite.join("suite.toml"),
        "tuning = \"1\"\nheld_out = \"2..3\"\nmin_apps = 1\nmax_apps = 1\n",
    )
    .unwrap();
    let input = dir.join("text.bin");
    let line = "coloc measures co-located programs with nothing stored beforehand\n";
    std::fs::write(&input, line.repeat(16 * 1024 * 1024 / line.len())).unwrap();
    let xz = std::fs::read_to_string(repo("bench/suite/programs/xz.toml")).unwrap();
    assert!(xz.contains("bench/data/text-64m.bin"));
    let xz = xz.replace("bench/data/text-64m.bin", input.to_str().unwrap());
    std::fs::write(suite.join("programs/xz.toml"), xz).unwrap();
    suite
}

/// `coloc bench mixes --suite DIR --seeds 2 --fresh`: the mix says it is a
/// held-out seed; each run had its own data directory and left the user's
/// empty (nothing stored, before or after); the solo runs came after the
/// mix and gave the CPU-work bound; the summary over all mixes is printed.
#[test]
fn bench_mixes_runs_a_suite_seed_with_nothing_stored_beforehand() {
    let missing: Vec<&str> = ["xz", "cmp", "bash"]
        .into_iter()
        .filter(|c| {
            !std::process::Command::new("sh")
                .args(["-c", &format!("command -v {c}")])
                .output()
                .unwrap()
                .status
                .success()
        })
        .collect();
    if !missing.is_empty() {
        eprintln!("skipped: needs {missing:?} on PATH");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let suite = one_program_suite(dir.path());
    let data = dir.path().join("user-data");
    let out = dir.path().join("out");
    let o = coloc()
        .current_dir(repo(""))
        .env("XDG_DATA_HOME", &data)
        // Registered as the machine's manager, as a user's bench is: each
        // fresh `coloc run` plans under its parent's marks (docs/safety.md,
        // One manager per machine), not beside it.
        .env_remove(common::SHARE_MACHINE)
        .args(["bench", "mixes", "--suite"])
        .arg(&suite)
        .args([
            "--seeds",
            "2",
            "--fresh",
            "--repeat",
            "1",
            "--policies",
            "native,auto",
        ])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("## suite-2 (") && stdout.contains("seed 2, held out)"),
        "{stdout}"
    );
    assert!(stdout.contains("## All 1 mixes"), "{stdout}");
    assert!(
        stdout.contains("geometric-mean makespan over 1 mixes"),
        "{stdout}"
    );
    assert!(
        stdout.contains("geometric-mean makespan / CPU-work bound"),
        "{stdout}"
    );
    for run in ["native-1", "auto-1"] {
        let run = out.join("suite-2").join(run);
        assert!(run.join("trace.jsonl").is_file(), "{}", run.display());
        assert!(
            run.join("data").is_dir(),
            "{}: its own data directory",
            run.display()
        );
    }
    assert!(out.join("solo").is_dir(), "solo runs after the mix");
    assert!(
        !data.join("coloc").exists(),
        "nothing stored in the user's data directory"
    );
    // Every instance succeeded: xz's round trip compared equal.
    let failed = stdout
        .lines()
        .filter(|l| l.starts_with("| native") || l.starts_with("| auto"))
        .map(|l| l.split('|').nth(3).unwrap().trim().to_string())
        .collect::<Vec<_>>();
    assert_eq!(failed, ["0", "0"], "{stdout}");
}
