//! Valid workload files: the shipped examples, defaults, every field, and the
//! accepted spellings of durations and CPU mappings.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use coloc_model::workload::{parse_workload, to_toml, MetricSpec};
use coloc_model::{AppClass, AppSpec, CpuSet, MemPolicy, SchedSettings, StaticMapping, Workload};

const EXAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");

/// The built-in kernels (crates/workloads), which every example runs.
const KERNELS: &[&str] = &["stream", "compute", "share", "barrier", "lock"];

fn examples() -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(EXAMPLES)
        .expect("examples directory")
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    paths.sort();
    paths
}

fn parse(text: &str) -> Workload {
    parse_workload("dir/test-file.toml", text).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn every_example_parses_runs_kernels_and_reports_a_metric() {
    let paths = examples();
    let stems: Vec<String> = paths
        .iter()
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    for wanted in [
        "two-barriers",
        "memory-compute",
        "serial-scalable",
        "staggered",
        "static-mapping",
        "latency-batch",
    ] {
        assert!(
            stems.iter().any(|s| s == wanted),
            "examples/{wanted}.toml is missing"
        );
    }
    for path in &paths {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).expect("readable example");
        let w = parse_workload(&shown, &text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            Some(w.name.as_str()),
            path.file_stem().and_then(|s| s.to_str()),
            "{shown}"
        );
        for app in &w.apps {
            let argv = app
                .command
                .as_ref()
                .unwrap_or_else(|| panic!("{shown}: {} has no command", app.name));
            let kernel = argv[0]
                .strip_prefix("kernel:")
                .unwrap_or_else(|| panic!("{shown}: {argv:?}"));
            assert!(
                KERNELS.contains(&kernel),
                "{shown}: unknown kernel {kernel}"
            );
            let metric = app
                .metric
                .as_ref()
                .unwrap_or_else(|| panic!("{shown}: {} has no metric", app.name));
            let re = regex::Regex::new(&metric.regex).expect("validated regex");
            let caught = re
                .captures("coloc-metric: 12.5e3 GB/s")
                .map(|c| c[1].to_string());
            assert_eq!(caught.as_deref(), Some("12.5e3"), "{shown}: {}", app.name);
        }
        // The writer's output reads back to the same workload.
        assert_eq!(
            parse_workload(&shown, &to_toml(&w)).as_ref(),
            Ok(&w),
            "{shown}"
        );
    }
}

#[test]
fn example_features() {
    let load = |stem: &str| {
        let path = Path::new(EXAMPLES).join(format!("{stem}.toml"));
        parse_workload(stem, &std::fs::read_to_string(path).unwrap()).unwrap()
    };
    let two = load("two-barriers");
    assert_eq!(two.apps.len(), 2);
    assert!(two
        .apps
        .iter()
        .all(|a| a.threads == 0 && a.arrive_at == Duration::ZERO));

    let staggered = load("staggered");
    let arrivals: Vec<u64> = staggered
        .apps
        .iter()
        .map(|a| a.arrive_at.as_secs())
        .collect();
    assert_eq!(arrivals, [0, 1, 2]);
    assert!(staggered.apps.iter().all(|a| a.repeat == 2));

    let serial = load("serial-scalable");
    assert!(serial.apps.iter().all(|a| a.malleable));
    assert!(serial.apps[0]
        .command
        .as_ref()
        .unwrap()
        .contains(&"--serial-iters".to_string()));

    let fixed = load("static-mapping");
    assert!(fixed.apps.iter().all(|a| a.cpus.is_some()));
    assert_eq!(
        fixed.apps[2].cpus,
        Some(StaticMapping::PerThread(vec![
            CpuSet::single(0),
            CpuSet::single(1)
        ]))
    );

    let lat = load("latency-batch");
    let classes: Vec<AppClass> = lat.apps.iter().map(|a| a.class).collect();
    assert_eq!(classes, [AppClass::Latency, AppClass::Batch]);
}

#[test]
fn defaults_fill_what_the_file_leaves_out() {
    let w = parse("[[app]]\nname = \"only\"\ncommand = [\"./app\"]\n");
    assert_eq!(
        w,
        Workload {
            name: "test-file".into(),
            epoch: None,
            apps: vec![AppSpec {
                name: "only".into(),
                command: Some(vec!["./app".into()]),
                model: None,
                threads: 0,
                arrive_at: Duration::ZERO,
                repeat: 1,
                class: AppClass::Batch,
                metric: None,
                env: BTreeMap::new(),
                malleable: false,
                cap_threads: false,
                cpus: None,
                memory: None,
                sched: None,
            }],
        }
    );
    let m = parse("[[app]]\nname = \"m\"\nmodel = \"x\"\n[app.metric]\nregex = 'v=(\\d+)'\n");
    assert_eq!(
        m.apps[0].metric,
        Some(MetricSpec {
            regex: "v=(\\d+)".into(),
            file: None,
            higher_is_better: true,
            unit: None,
        })
    );
}

#[test]
fn every_field_is_read() {
    let w = parse(
        r#"
name = "full"
epoch = "250ms"

[[app]]
name = "a.b_c-1"
command = ["kernel:stream", "", "--mb", "ünïcode"]
threads = 4096
arrive_at = "1m 30s"
repeat = 7
class = "latency"
malleable = true
cap_threads = true
cpus = "0-2,5"
env = { OMP_PROC_BIND = "false", "WEIRD KEY" = "" }
memory = "local"
sched = { nice = -20, slice_us = 100 }

[app.metric]
regex = '^lat: (?:p99 )?([0-9.]+)'
higher_is_better = false
unit = "ms"
file = "out/latency.txt"

[[app]]
name = "sim"
model = "streamcluster"
cpus = ["0", "1-2"]
memory = "interleave"
sched = {}
"#,
    );
    assert_eq!(w.name, "full");
    assert_eq!(w.epoch, Some(Duration::from_millis(250)));
    let a = &w.apps[0];
    assert_eq!(
        a,
        &AppSpec {
            name: "a.b_c-1".into(),
            command: Some(vec![
                "kernel:stream".into(),
                "".into(),
                "--mb".into(),
                "ünïcode".into()
            ]),
            model: None,
            threads: 4096,
            arrive_at: Duration::from_secs(90),
            repeat: 7,
            class: AppClass::Latency,
            metric: Some(MetricSpec {
                regex: "^lat: (?:p99 )?([0-9.]+)".into(),
                file: Some("out/latency.txt".into()),
                higher_is_better: false,
                unit: Some("ms".into()),
            }),
            env: BTreeMap::from([
                ("OMP_PROC_BIND".into(), "false".into()),
                ("WEIRD KEY".into(), "".into()),
            ]),
            malleable: true,
            cap_threads: true,
            cpus: Some(StaticMapping::Shared(CpuSet::parse_list("0-2,5").unwrap())),
            memory: Some(MemPolicy::Local),
            sched: Some(SchedSettings {
                nice: Some(-20),
                slice_us: Some(100)
            }),
        }
    );
    let s = &w.apps[1];
    assert_eq!(s.command, None);
    assert_eq!(s.model.as_deref(), Some("streamcluster"));
    assert_eq!(
        s.cpus,
        Some(StaticMapping::PerThread(vec![
            CpuSet::single(0),
            CpuSet::parse_list("1-2").unwrap()
        ]))
    );
    assert_eq!(s.sched, Some(SchedSettings::default()));
}

#[test]
fn durations_in_units_or_seconds() {
    let cases: &[(&str, Duration)] = &[
        ("\"0s\"", Duration::ZERO),
        ("0", Duration::ZERO),
        ("\"1.5s\"", Duration::from_millis(1500)),
        ("\"200ms\"", Duration::from_millis(200)),
        ("\"1m 30s\"", Duration::from_secs(90)),
        ("\" 2s \"", Duration::from_secs(2)),
        ("\"750us\"", Duration::from_micros(750)),
        ("2", Duration::from_secs(2)),
        ("0.25", Duration::from_millis(250)),
        ("1e1", Duration::from_secs(10)),
        ("\"30days\"", Duration::from_secs(30 * 24 * 3600)),
    ];
    for (value, want) in cases {
        let w = parse(&format!(
            "[[app]]\nname = \"a\"\ncommand = [\"x\"]\narrive_at = {value}\n"
        ));
        assert_eq!(w.apps[0].arrive_at, *want, "arrive_at = {value}");
    }
    for value in ["\"31days\"", "-0.5", "nan", "inf", "true", "\"\""] {
        let text = format!("[[app]]\nname = \"a\"\ncommand = [\"x\"]\narrive_at = {value}\n");
        let err = parse_workload("f.toml", &text).expect_err(value);
        assert_eq!(err.path().as_deref(), Some("app \"a\".arrive_at"), "{err}");
        assert_eq!(err.line(), Some(4), "{err}");
    }
}

#[test]
fn apps_may_be_written_as_an_inline_array() {
    let w = parse("app = [{ name = \"a\", command = [\"x\"] }, { name = \"b\", model = \"m\", threads = 3 }]\n");
    let names: Vec<&str> = w.apps.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(w.apps[1].threads, 3);
    let err =
        parse_workload("f.toml", "app = [{ name = \"a\", command = [\"x\"] }, 3]\n").unwrap_err();
    assert_eq!(err.path().as_deref(), Some("app[1]"), "{err}");
    assert!(
        err.message
            .contains("expected a table with the app's fields, found 3"),
        "{err}"
    );
}

#[test]
fn names_that_are_not_valid_are_labelled_by_index() {
    let cases = [
        ("\"\"", "app[1].name"),
        ("\"-x\"", "app[1].name"),
        ("\".hidden\"", "app[1].name"),
        ("\"a/b\"", "app[1].name"),
        (&*format!("\"{}\"", "x".repeat(65)), "app[1].name"),
        ("3", "app[1].name"),
    ];
    for (name, path) in cases {
        let text = format!("[[app]]\nname = \"ok\"\ncommand = [\"x\"]\n[[app]]\nname = {name}\ncommand = [\"x\"]\n");
        let err = parse_workload("f.toml", &text).expect_err(name);
        assert_eq!(err.path().as_deref(), Some(path), "{err}");
        assert_eq!(err.line(), Some(5), "{err}");
    }
    let longest = format!(
        "[[app]]\nname = \"{}\"\ncommand = [\"x\"]\n",
        "x".repeat(64)
    );
    assert_eq!(parse(&longest).apps[0].name.len(), 64);
}
