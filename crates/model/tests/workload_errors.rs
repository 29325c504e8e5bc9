//! Every way a workload file can be wrong gets a message that names the file, the
//! line, the field, and what was expected. One row per bad file in
//! `tests/fixtures/workloads/bad/`; a new check gets a new file and a new row.

use std::path::Path;

use coloc_model::workload::{parse_workload, WorkloadError};

const BAD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/workloads/bad");

/// (file, line, field path, part of the message)
const CASES: &[(&str, usize, Option<&str>, &str)] = &[
    ("unknown-key", 6, Some("app \"a\".thread"), "unknown key `thread` in [[app]]; did you mean `threads`? the valid keys are: name, command, model, threads,"),
    ("unknown-top-key", 2, Some("apps"), "unknown key `apps` in the workload file; did you mean `app`? the valid keys are: name, epoch, suite, app"),
    ("unknown-metric-key", 6, Some("app \"a\".metric.regexp"), "did you mean `regex`? the valid keys are: regex, higher_is_better, unit, file"),
    ("negative-threads", 4, Some("app \"a\".threads"), "expected a whole number from 0 to 4096 (0 = one per usable CPU), found -2"),
    ("too-many-threads", 4, Some("app \"a\".threads"), "from 0 to 4096 (0 = one per usable CPU), found 5000"),
    ("threads-float", 4, Some("app \"a\".threads"), "expected a whole number from 0 to 4096 (0 = one per usable CPU), found 2.5"),
    ("zero-repeat", 8, Some("app \"a\".repeat"), "expected a whole number >= 1, found 0"),
    ("missing-command", 1, Some("app \"a\".command"), "missing: give `command`, the program's argv as an array of strings"),
    ("command-and-model", 4, Some("app \"a\".model"), "give either `command` (a real program) or `model` (a simulated app), not both"),
    ("empty-command", 3, Some("app \"a\".command"), "found an empty array"),
    ("empty-argv0", 3, Some("app \"a\".command[0]"), "expected the program to run (a path, a name on PATH, or kernel:NAME), found an empty string"),
    ("command-string", 3, Some("app \"a\".command"), "coloc runs no shell, so it does not split a command line), found \"./a.out --size 10\""),
    ("command-not-strings", 3, Some("app \"a\".command[1]"), "expected a string, found 10"),
    ("bad-duration", 4, Some("app \"a\".arrive_at"), "expected a duration such as \"1.5s\", \"200ms\" or \"2m\", or a number of seconds, found \"5 parsecs\" (unknown time unit \"parsecs\""),
    ("negative-duration", 4, Some("app \"a\".arrive_at"), "or a number of seconds >= 0, found -1"),
    ("duration-without-unit", 4, Some("app \"a\".arrive_at"), "found \"5\" (time unit needed"),
    ("epoch-too-short", 1, Some("epoch"), "expected at least 1ms, found 500us"),
    ("duplicate-names", 10, Some("app \"same\".name"), "the name \"same\" is already used by the app at line 2; app names must be unique"),
    ("bad-app-name", 2, Some("app[0].name"), "expected 1 to 64 letters, digits, `.`, `_` or `-`, not starting with `.` or `-`, found \"my app\""),
    ("bad-regex", 6, Some("app \"a\".metric.regex"), "expected a regular expression, found \"coloc-metric: ([0-9.+\": error: unclosed character class"),
    ("regex-without-group", 6, Some("app \"a\".metric.regex"), "expected exactly one capture group (the number), found 0"),
    ("metric-without-regex", 5, Some("app \"a\".metric.regex"), "missing: a metric needs a `regex` with one capture group"),
    ("bad-cpus", 4, Some("app \"a\".cpus"), "found \"0-x\": `x` is not a CPU number"),
    ("empty-cpus", 4, Some("app \"a\".cpus[1]"), "expected at least one CPU, found an empty list"),
    ("bad-class", 4, Some("app \"a\".class"), "expected one of \"batch\", \"latency\", found \"interactive\""),
    ("bad-memory", 4, Some("app \"a\".memory"), "expected one of \"default\", \"local\", \"interleave\", found \"numa\""),
    ("nice-out-of-range", 4, Some("app \"a\".sched.nice"), "expected a nice value from -20 to 19, found 25"),
    ("slice-zero", 4, Some("app \"a\".sched.slice_us"), "expected a time slice from 100 to 100000 microseconds"),
    ("env-not-string", 4, Some("app \"a\".env.OMP_WAIT_POLICY"), "expected a string (environment values are text: write \"4\", not 4), found 4"),
    ("env-omp-num-threads", 4, Some("app \"a\".env.OMP_NUM_THREADS"), "set the thread count with the app's `threads` field"),
    ("env-capped", 5, Some("app \"a\".env.GOMAXPROCS"), "`cap_threads = true` sets GOMAXPROCS to the team the policy chooses at launch"),
    ("syntax-error", 4, None, "invalid TOML: invalid basic string"),
    ("duplicate-key", 5, None, "invalid TOML: duplicate key (at `threads`)"),
    ("no-apps", 1, Some("app"), "a workload needs at least one application: add an [[app]] table"),
    ("single-app-table", 1, Some("app"), "expected an array of tables, found a table: write `[[app]]` (double brackets) once per application"),
    ("metric-before-app", 5, None, "invalid TOML: duplicate key (at `app`); `[[app]]` cannot follow an `[app]` or `[app.metric]` table"),
    ("metric-without-app", 2, Some("app"), "sub-tables such as `[app.metric]` after the `[[app]]` they belong to"),
];

fn parse_fixture(stem: &str) -> (String, WorkloadError) {
    let file = format!("bad/{stem}.toml");
    let text = std::fs::read_to_string(Path::new(BAD).join(format!("{stem}.toml")))
        .unwrap_or_else(|e| panic!("fixture {file}: {e}"));
    match parse_workload(&file, &text) {
        Ok(w) => panic!("{file} parsed, but should not have: {w:?}"),
        Err(e) => (file, e),
    }
}

#[test]
fn every_bad_file_is_refused_with_file_line_field_and_reason() {
    for &(stem, line, path, wanted) in CASES {
        let (file, err) = parse_fixture(stem);
        let shown = err.to_string();
        assert_eq!(err.file, file, "{shown}");
        assert_eq!(err.line(), Some(line), "{stem}: wrong line in: {shown}");
        assert_eq!(
            err.path().as_deref(),
            path,
            "{stem}: wrong field in: {shown}"
        );
        assert!(
            shown.starts_with(&format!("{file}:{line}:")),
            "{stem}: message does not start with file:line: {shown}"
        );
        if let Some(field) = &err.field {
            assert!(shown.contains(&format!("field `{field}`: ")), "{shown}");
        }
        assert!(
            shown.contains(wanted),
            "{stem}: expected {wanted:?} in:\n{shown}"
        );
    }
}

#[test]
fn every_fixture_has_a_row() {
    let mut stems: Vec<String> = std::fs::read_dir(BAD)
        .expect("fixture directory")
        .map(|e| {
            let p = e.expect("directory entry").path();
            p.file_stem()
                .expect("file name")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    stems.sort();
    let mut rows: Vec<&str> = CASES.iter().map(|c| c.0).collect();
    rows.sort();
    assert_eq!(stems, rows);
}

#[test]
fn columns_point_at_the_offending_value() {
    // `threads = -2`: the value starts in column 11.
    let (_, err) = parse_fixture("negative-threads");
    assert_eq!(err.position.map(|p| p.column), Some(11));
    // In an inline table the column is the value's, not the line's start:
    // `env = { OMP_PROC_BIND = "false", OMP_WAIT_POLICY = 4 }`.
    let (_, err) = parse_fixture("env-not-string");
    assert_eq!(err.position.map(|p| p.column), Some(52));
}

#[test]
fn unreadable_file_names_the_path_and_the_os_reason() {
    let path = Path::new(BAD).join("does-not-exist.toml");
    let io = std::fs::read_to_string(&path).expect_err("the file does not exist");
    let err = WorkloadError::unreadable(&path, &io);
    let shown = err.to_string();
    assert_eq!(err.line(), None);
    assert_eq!(err.path(), None);
    assert!(
        shown.starts_with(&format!(
            "{}: cannot read the workload file: ",
            path.display()
        )),
        "{shown}"
    );
    assert!(shown.contains("No such file or directory"), "{shown}");
}
