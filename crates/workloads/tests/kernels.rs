//! Runs every built-in kernel, as coloc would, with tiny sizes: the output
//! contract, thread counts, `--help` and argument errors.

use std::process::{Command, Output};

use coloc_workloads::{kernel_path, parse_report, KERNELS};

/// Arguments that make each kernel finish in milliseconds.
fn tiny_args(name: &str) -> &'static [&'static str] {
    match name {
        "stream" => &["--mb", "1", "--iters", "2"],
        "compute" => &[
            "--iters",
            "2000",
            "--serial-iters=500",
            "--short-regions",
            "3",
        ],
        "share" => &["--kb", "64", "--iters", "20"],
        "barrier" => &["--regions", "200", "--work=100"],
        "lock" => &["--ops", "20000", "--work", "5"],
        other => panic!("no tiny arguments for kernel {other}; add them here"),
    }
}

fn run(name: &str, args: &[&str], threads: u32) -> Output {
    let path = kernel_path(name).unwrap();
    Command::new(&path)
        .args(args)
        .env("OMP_NUM_THREADS", threads.to_string())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", path.display()))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn every_kernel_reports_a_metric_and_its_team_size() {
    for k in KERNELS {
        for threads in [1, 2] {
            let out = run(k.name, tiny_args(k.name), threads);
            let stdout = text(&out.stdout);
            assert!(
                out.status.success(),
                "{} with {threads} threads: {}\n{stdout}{}",
                k.name,
                out.status,
                text(&out.stderr)
            );
            let report = parse_report(&stdout).unwrap_or_else(|e| panic!("{}: {e}", k.name));
            assert!(report.metric > 0.0, "{}: {stdout}", k.name);
            assert_eq!(report.threads, threads, "{}: {stdout}", k.name);
            // One human line before the two contract lines.
            assert_eq!(stdout.lines().count(), 3, "{}: {stdout}", k.name);
        }
    }
}

#[test]
fn units_match_what_each_kernel_measures() {
    let units: Vec<String> = KERNELS
        .iter()
        .map(|k| {
            parse_report(&text(&run(k.name, tiny_args(k.name), 1).stdout))
                .unwrap()
                .unit
        })
        .collect();
    assert_eq!(units, ["GB/s", "Gflop/s", "GB/s", "regions/s", "Mops/s"]);
}

#[test]
fn help_prints_the_catalog_usage() {
    for k in KERNELS {
        let out = run(k.name, &["--help"], 1);
        assert!(out.status.success(), "{}", k.name);
        assert_eq!(
            text(&out.stdout),
            format!("usage: {}\n", k.usage),
            "{}",
            k.name
        );
    }
}

#[test]
fn bad_arguments_exit_2_and_name_the_flag() {
    for k in KERNELS {
        let first_flag = tiny_args(k.name)[0];
        let cases: [(Vec<&str>, String); 5] = [
            (vec!["--bogus", "1"], "'--bogus'".into()),
            (
                vec![first_flag, "many"],
                format!("{first_flag} needs an integer"),
            ),
            (
                vec![first_flag, "-5"],
                format!("{first_flag} needs an integer"),
            ),
            (
                vec![first_flag],
                format!("missing value for flag '{first_flag}'"),
            ),
            (vec!["stray"], "unexpected argument 'stray'".into()),
        ];
        for (args, expected) in cases {
            let out = run(k.name, &args, 1);
            let stderr = text(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{} {args:?}: {stderr}", k.name);
            assert!(stderr.contains(&expected), "{} {args:?}: {stderr}", k.name);
            assert!(out.stdout.is_empty(), "{} {args:?} ran anyway", k.name);
        }
    }
}

/// `stream --mem-node N` binds its arrays to node N (the calibration's
/// memory paths, NuPoCo §4.3): node 0 exists on every Linux machine; a node
/// beyond the range is refused by the parser, one the machine lacks by the
/// kernel with the node named.
#[test]
fn stream_binds_its_memory_to_a_node() {
    let out = run(
        "stream",
        &["--mb", "1", "--iters", "2", "--mem-node", "0"],
        1,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(parse_report(&text(&out.stdout)).unwrap().metric > 0.0);
    let out = run("stream", &["--mem-node", "1024"], 1);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("--mem-node needs an integer in [0, 1023]"));
    let out = run("stream", &["--mb", "1", "--mem-node", "1023"], 1);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).starts_with("stream: cannot bind memory to node 1023: "),
        "{}",
        text(&out.stderr)
    );
}
