//! Parsing and validating workload files.
//!
//! # Format
//!
//! TOML, one `[[app]]` table per application (docs/workload-format.md):
//!
//! ```toml
//! name = "two-barriers"   # optional; defaults to the file stem
//! epoch = "100ms"         # optional policy epoch, >= 1ms
//!
//! [[app]]
//! name = "bar-a"          # required, unique; letters, digits, `.`, `_`, `-`
//! command = ["kernel:barrier", "--regions", "20000"]
//! threads = 2             # 0..=4096; 0 = one per usable CPU (default 0)
//! arrive_at = "0s"        # default 0
//! repeat = 1              # >= 1 (default 1)
//! class = "batch"         # "batch" | "latency" (default "batch")
//! malleable = false       # coloc may change the OpenMP DoP (default false)
//! cap_threads = false     # runtimes' thread variables = the team at launch
//! cpus = "0-1"            # `static` policy mapping (see below)
//! env = { OMP_PROC_BIND = "false" }
//! memory = "interleave"   # "default" | "local" | "interleave"
//! sched = { nice = 0, slice_us = 3000 }
//!
//! [app.metric]
//! regex = 'coloc-metric: ([0-9.eE+-]+)'
//! higher_is_better = true # default true
//! unit = "GB/s"
//! # file = "out.txt"      # read this file after exit instead of stdout
//! ```
//!
//! # Decisions, and why
//!
//! - **`command` is an argv array, never a shell line.** coloc execs the program
//!   itself so that the process it tracks is the app, not a shell; quoting rules
//!   would also be one more thing to get wrong. `argv[0]` must be non-empty; later
//!   arguments may be empty (`--sep ""` is legitimate). No argument may contain a
//!   NUL byte, which `execve` cannot pass. `kernel:NAME` as `argv[0]` names a
//!   built-in kernel; the CLI resolves it (this stage does not know the kernels).
//! - **Exactly one of `command` and `model`.** `model` names a simulated app for
//!   `coloc sim`; a workload may mix both kinds, the CLI refuses simulated apps on
//!   the real machine.
//! - **`threads = 0` means one per usable CPU**, what an OpenMP program does when
//!   `OMP_NUM_THREADS` is unset. 4096 is the upper bound: more threads than any
//!   machine coloc targets has CPUs is a typo, not an experiment.
//! - **`env` may not set `OMP_NUM_THREADS`.** coloc sets it from `threads` (and the
//!   DoP channel changes it later); two sources of truth would silently disagree.
//!   Values must be strings (`"4"`, not `4`): the environment is text, and saying
//!   so beats guessing how a float should be printed.
//! - **Durations** (`arrive_at`, `epoch`) are strings with units, as `humantime`
//!   reads them (`"1.5s"`, `"200ms"`, `"1m 30s"`), or plain numbers of seconds
//!   (`2`, `0.25`). At most 30 days, to keep the manager's time arithmetic far from
//!   overflow. `epoch` is at least 1 ms: traces store milliseconds.
//! - **`cpus`** is a kernel CPU list (`"0-3,8"`, as in `taskset -c`) shared by all
//!   of the app's threads, or an array of lists, one per thread in creation order
//!   (thread `i` gets entry `i mod len`). Empty sets are refused: a mapping with no
//!   CPU cannot run. Whether the CPUs exist is checked later, against the machine.
//! - **`sched.slice_us`** is 100..=100000: the range Linux clamps `sched_runtime`
//!   to for fair-class threads, so a value outside it would be silently changed.
//!   `sched.nice` is -20..=19, the kernel's range.
//! - **`metric.regex`** must compile and have exactly one capture group, the
//!   number; the last match in the output counts.
//! - **App names** are 1 to 64 characters from letters, digits, `.`, `_`, `-`, not
//!   starting with `.` or `-`: they become table rows, file names in reports and
//!   cgroup directory names, where `/` or white space would break things.
//! - **Unknown keys are errors**, naming the closest valid key and listing all of
//!   them: a misspelt `thread = 2` silently ignored would run a different
//!   experiment than the one written down.
//!
//! Errors name the file, line, column, app and field, and say what was expected and
//! what was found (see [`WorkloadError`]). The first problem in check order is
//! reported: top-level keys, then each app in file order, within an app unknown
//! keys first, then the fields in the order documented above.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::Duration;

use regex::Regex;
use toml::de::{DeTable, DeValue};

use super::error::{Source, WorkloadError};
use super::fields::{Fields, Value, MAX_DURATION};
use super::suite::{suite_entry, SuiteEntry, SuiteProgram};
use super::{AppClass, AppSpec, MetricSpec, StaticMapping, Workload};
use crate::cpuset::CpuSet;
use crate::settings::{MemPolicy, SchedSettings};

/// Most threads an app may ask for (see the module doc).
pub const MAX_THREADS: u32 = 4096;

/// Shortest policy epoch: traces store times in milliseconds.
pub const MIN_EPOCH: Duration = Duration::from_millis(1);

/// Longest policy epoch, the workload format's longest duration (30 days).
pub const MAX_EPOCH: Duration = MAX_DURATION;

/// An epoch the Manager cannot run with, wherever it came from (a workload
/// file or `--epoch`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("epoch {0:?} is out of range: it must be between 1ms and 30 days")]
pub struct EpochOutOfRange(pub Duration);

/// Whether `epoch` is one the loop can run with: at least [`MIN_EPOCH`]
/// (traces store milliseconds, and an epoch of 0 would decide in a busy loop
/// that never waits) and at most [`MAX_EPOCH`].
pub fn check_epoch(epoch: Duration) -> Result<(), EpochOutOfRange> {
    if epoch < MIN_EPOCH || epoch > MAX_EPOCH {
        return Err(EpochOutOfRange(epoch));
    }
    Ok(())
}

const TOP_KEYS: &[&str] = &["name", "epoch", "suite", "app"];
const APP_KEYS: &[&str] = &[
    "name",
    "command",
    "model",
    "threads",
    "arrive_at",
    "repeat",
    "class",
    "malleable",
    "cap_threads",
    "cpus",
    "env",
    "memory",
    "sched",
    "metric",
];
const METRIC_KEYS: &[&str] = &["regex", "higher_is_better", "unit", "file"];
const SCHED_KEYS: &[&str] = &["nice", "slice_us"];

/// Parses and validates a workload from TOML text; `file` names it in errors and
/// gives the default workload name (its stem). Pure: reads nothing but `text`.
/// A `[suite]` table (a program of the bench suite, [`super::suite`]) is
/// checked and otherwise ignored, so a program's file runs as a workload.
pub fn parse_workload(file: &str, text: &str) -> Result<Workload, WorkloadError> {
    parse_document(file, text).map(|d| d.workload)
}

/// Parses a program of the suite: a workload file with a `[suite]` table and
/// exactly one app. Pure: reads nothing but `text`.
pub fn parse_program(file: &str, text: &str) -> Result<SuiteProgram, WorkloadError> {
    let doc = parse_document(file, text)?;
    let src = Source { file, text };
    let Some(suite) = doc.suite else {
        return Err(src.error(
            &(0..0),
            None,
            Some("suite".into()),
            "missing: a program of the suite needs a [suite] table with its `kind` \
             (\"openmp\", \"pthreads\" or \"processes\"), `packages` and `needs`"
                .into(),
        ));
    };
    if let Some(second) = doc.app_spans.get(1) {
        return Err(src.error(
            second,
            None,
            Some("app".into()),
            format!(
                "a program of the suite is one app, found {} [[app]] tables: give each \
                 program its own file",
                doc.app_spans.len()
            ),
        ));
    }
    let app = doc
        .workload
        .apps
        .into_iter()
        .next()
        .expect("a parsed workload has at least one app");
    Ok(SuiteProgram { suite, app })
}

/// A workload file as parsed: the workload, its `[suite]` table and where
/// each `[[app]]` starts (for errors about the file as a whole).
pub(super) struct Document {
    pub workload: Workload,
    pub suite: Option<SuiteEntry>,
    pub app_spans: Vec<std::ops::Range<usize>>,
}

/// [`parse_workload`], keeping what [`parse_program`] checks
/// beyond it.
pub(super) fn parse_document(file: &str, text: &str) -> Result<Document, WorkloadError> {
    let src = Source { file, text };
    let doc = DeTable::parse(text).map_err(|e| src.syntax(&e))?;
    let top = Fields::new(
        src,
        None,
        String::new(),
        doc.get_ref(),
        doc.span(),
        TOP_KEYS,
        "the workload file",
    )?;

    let name = match top.non_empty_str("name", "a workload name")? {
        Some((s, _)) => s.to_string(),
        None => Path::new(file)
            .file_stem()
            .map_or_else(|| file.to_string(), |s| s.to_string_lossy().into_owned()),
    };
    let epoch = top.duration("epoch")?;
    if let (Some(d), Some(v)) = (epoch, top.get("epoch")) {
        if d < MIN_EPOCH {
            return Err(top.error(
                &v.span(),
                "epoch",
                format!(
                    "expected at least 1ms, found {}",
                    humantime::format_duration(d)
                ),
            ));
        }
    }

    let suite = suite_entry(&top)?;

    let tables = app_tables(&top)?;
    let app_spans = tables.iter().map(|t| t.span()).collect();
    let mut apps = Vec::with_capacity(tables.len());
    // Name -> span of the app that used it first, for duplicate-name errors.
    let mut seen: HashMap<String, std::ops::Range<usize>> = HashMap::new();
    for (index, table) in tables.into_iter().enumerate() {
        let app = parse_app(src, index, table)?;
        if let Some(first) = seen.get(&app.spec.name) {
            let first = super::error::Position::of_offset(text, first.start);
            return Err(src.error(
                &app.name_span,
                Some(&app.label),
                Some("name".into()),
                format!(
                    "the name \"{}\" is already used by the app at line {}; app names must be unique",
                    app.spec.name, first.line
                ),
            ));
        }
        seen.insert(app.spec.name.clone(), app.name_span.clone());
        apps.push(app.spec);
    }

    Ok(Document {
        workload: Workload { name, epoch, apps },
        suite,
        app_spans,
    })
}

/// The `[[app]]` tables, refusing anything else under `app`.
fn app_tables<'a, 'i>(top: &Fields<'a, 'i>) -> Result<Vec<Value<'a, 'i>>, WorkloadError> {
    const NONE: &str =
        "a workload needs at least one application: add an [[app]] table with a name and a command";
    let Some(v) = top.get("app") else {
        return Err(top
            .src
            .error(&(0..0), None, Some("app".into()), NONE.into()));
    };
    let items = match v.get_ref() {
        DeValue::Array(a) => a,
        DeValue::Table(_) => {
            return Err(top.error(
                &v.span(),
                "app",
                "expected an array of tables, found a table: write `[[app]]` (double brackets) once per application, and sub-tables such as `[app.metric]` after the `[[app]]` they belong to".into(),
            ))
        }
        _ => return Err(top.expected("app", v, "an array of tables, one `[[app]]` per application")),
    };
    if items.is_empty() {
        return Err(top.error(&v.span(), "app", NONE.into()));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| match item.get_ref() {
            DeValue::Table(_) => Ok(item),
            _ => Err(top.expected(&format!("app[{i}]"), item, "a table with the app's fields")),
        })
        .collect()
}

/// An app as parsed, with what duplicate-name checks need.
#[derive(Debug)]
struct ParsedApp {
    spec: AppSpec,
    label: String,
    name_span: std::ops::Range<usize>,
}

fn parse_app(
    src: Source<'_>,
    index: usize,
    item: Value<'_, '_>,
) -> Result<ParsedApp, WorkloadError> {
    let DeValue::Table(table) = item.get_ref() else {
        unreachable!("app_tables only returns tables")
    };
    // Label errors with the app's name as soon as it has a usable one; until then
    // (or if the name itself is wrong) with its index.
    let label = match table.get("name").map(|v| v.get_ref()) {
        Some(DeValue::String(s)) if valid_app_name(s).is_ok() => format!("app \"{s}\""),
        _ => format!("app[{index}]"),
    };
    let f = Fields::new(
        src,
        Some(&label),
        String::new(),
        table,
        item.span(),
        APP_KEYS,
        "[[app]]",
    )?;

    let (name, name_span) = f
        .str("name")?
        .ok_or_else(|| f.missing("name", "every app needs a unique `name`"))?;
    if let Err(why) = valid_app_name(name) {
        return Err(f.error(&name_span, "name", format!("{why}, found {name:?}")));
    }

    let (command, model) = command_or_model(&f)?;
    let threads = f.int(
        "threads",
        0..=i64::from(MAX_THREADS),
        "a whole number from 0 to 4096 (0 = one per usable CPU)",
    )?;
    let arrive_at = f.duration("arrive_at")?.unwrap_or_default();
    let repeat = f.int("repeat", 1..=i64::from(u32::MAX), "a whole number >= 1")?;
    let class = f.choice(
        "class",
        &[("batch", AppClass::Batch), ("latency", AppClass::Latency)],
    )?;
    let malleable = f.bool("malleable")?.unwrap_or(false);
    let cap_threads = f.bool("cap_threads")?.unwrap_or(false);
    let cpus = cpus(&f)?;
    let env = env(&f, cap_threads)?;
    let memory = f.choice(
        "memory",
        &[
            ("default", MemPolicy::Default),
            ("local", MemPolicy::Local),
            ("interleave", MemPolicy::Interleave),
        ],
    )?;
    let sched = sched(&f)?;
    let metric = metric(&f)?;

    Ok(ParsedApp {
        spec: AppSpec {
            name: name.to_string(),
            command,
            model,
            // Both bounded by the ranges passed to `int`.
            threads: threads.map_or(0, |t| t as u32),
            arrive_at,
            repeat: repeat.map_or(1, |r| r as u32),
            class: class.unwrap_or_default(),
            metric,
            env,
            malleable,
            cap_threads,
            cpus,
            memory,
            sched,
        },
        label,
        name_span,
    })
}

/// Why `name` cannot be an app name, if it cannot (see the module doc). The
/// node service's requests are held to the same rule (docs/service.md).
pub fn valid_app_name(name: &str) -> Result<(), &'static str> {
    const EXPECTED: &str =
        "expected 1 to 64 letters, digits, `.`, `_` or `-`, not starting with `.` or `-`";
    let ok_chars = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if name.is_empty() || name.len() > 64 || !ok_chars || name.starts_with(['.', '-']) {
        Err(EXPECTED)
    } else {
        Ok(())
    }
}

/// `text` made into a valid app name: characters outside the set become `_`,
/// a leading `.` or `-` is dropped, at most 64 are kept; "app" when nothing
/// is left (a default name taken from a program's file name or a process's
/// `comm`, which may hold anything).
pub fn to_app_name(text: &str) -> String {
    let name: String = text
        .trim_start_matches(['.', '-'])
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if name.is_empty() {
        "app".into()
    } else {
        name
    }
}

type Program = (Option<Vec<String>>, Option<String>);

/// Exactly one of `command` (argv) and `model`.
fn command_or_model(f: &Fields<'_, '_>) -> Result<Program, WorkloadError> {
    match (f.get("command"), f.get("model")) {
        (None, None) => Err(f.missing(
            "command",
            "give `command`, the program's argv as an array of strings (e.g. [\"kernel:stream\", \"--mb\", \"64\"]), or `model`, a simulated app",
        )),
        (Some(_), Some(m)) => Err(f.error(
            &m.span(),
            "model",
            "give either `command` (a real program) or `model` (a simulated app), not both".into(),
        )),
        (None, Some(_)) => {
            let model = f.non_empty_str("model", "the name of a simulated app model")?;
            Ok((None, model.map(|(m, _)| m.to_string())))
        }
        (Some(v), None) => command(f, v).map(|argv| (Some(argv), None)),
    }
}

fn command(f: &Fields<'_, '_>, v: Value<'_, '_>) -> Result<Vec<String>, WorkloadError> {
    const EXPECTED: &str =
        "the program's argv as an array of strings, e.g. [\"./app\", \"--size\", \"10\"]";
    let items = match v.get_ref() {
        DeValue::Array(a) => a,
        DeValue::String(_) => {
            return Err(f.expected(
                "command",
                v,
                &format!("{EXPECTED} (coloc runs no shell, so it does not split a command line)"),
            ))
        }
        _ => return Err(f.expected("command", v, EXPECTED)),
    };
    if items.is_empty() {
        return Err(f.error(
            &v.span(),
            "command",
            format!("expected {EXPECTED}, found an empty array"),
        ));
    }
    let mut argv = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let key = format!("command[{i}]");
        let DeValue::String(arg) = item.get_ref() else {
            return Err(f.expected(&key, item, "a string"));
        };
        if arg.contains('\0') {
            return Err(f.error(
                &item.span(),
                &key,
                "arguments cannot contain a NUL character (execve cannot pass it)".into(),
            ));
        }
        if i == 0 {
            if arg.trim().is_empty() {
                return Err(f.error(
                    &item.span(),
                    &key,
                    "expected the program to run (a path, a name on PATH, or kernel:NAME), found an empty string".into(),
                ));
            }
            if arg.strip_prefix("kernel:") == Some("") {
                return Err(f.error(
                    &item.span(),
                    &key,
                    "expected a built-in kernel name after `kernel:` (stream, compute, share, barrier, lock), found nothing".into(),
                ));
            }
        }
        argv.push(arg.to_string());
    }
    Ok(argv)
}

/// `cpus`: one CPU list for all threads, or one per thread.
fn cpus(f: &Fields<'_, '_>) -> Result<Option<StaticMapping>, WorkloadError> {
    const EXPECTED: &str = "a CPU list such as \"0-3,8\", or an array of CPU lists, one per thread";
    let Some(v) = f.get("cpus") else {
        return Ok(None);
    };
    let list = |key: &str, item: Value<'_, '_>| -> Result<CpuSet, WorkloadError> {
        let DeValue::String(s) = item.get_ref() else {
            return Err(f.expected(key, item, EXPECTED));
        };
        let set = CpuSet::parse_list(s).map_err(|e| {
            f.error(
                &item.span(),
                key,
                format!("expected {EXPECTED}, found {:?}: {e}", s.as_ref()),
            )
        })?;
        if set.is_empty() {
            return Err(f.error(
                &item.span(),
                key,
                "expected at least one CPU, found an empty list (threads mapped to no CPU cannot run)".into(),
            ));
        }
        Ok(set)
    };
    match v.get_ref() {
        DeValue::String(_) => Ok(Some(StaticMapping::Shared(list("cpus", v)?))),
        DeValue::Array(items) => {
            if items.is_empty() || items.len() > MAX_THREADS as usize {
                return Err(f.error(
                    &v.span(),
                    "cpus",
                    format!(
                        "expected 1 to {MAX_THREADS} CPU lists (one per thread), found {}",
                        items.len()
                    ),
                ));
            }
            let sets = items
                .iter()
                .enumerate()
                .map(|(i, item)| list(&format!("cpus[{i}]"), item))
                .collect::<Result<_, _>>()?;
            Ok(Some(StaticMapping::PerThread(sets)))
        }
        _ => Err(f.expected("cpus", v, EXPECTED)),
    }
}

/// `env`: extra environment variables, string to string.
fn env(f: &Fields<'_, '_>, cap_threads: bool) -> Result<BTreeMap<String, String>, WorkloadError> {
    let Some(v) = f.get("env") else {
        return Ok(BTreeMap::new());
    };
    let DeValue::Table(table) = v.get_ref() else {
        return Err(f.expected(
            "env",
            v,
            "a table of environment variables, e.g. { OMP_PROC_BIND = \"false\" }",
        ));
    };
    // The tree keeps keys sorted; report problems in file order instead.
    let mut entries: Vec<_> = table.iter().collect();
    entries.sort_by_key(|(k, _)| k.span().start);
    let mut env = BTreeMap::new();
    for (key, value) in entries {
        let name = key.get_ref().as_ref();
        let path = format!("env.{name}");
        if name.is_empty() || name.contains(['=', '\0']) {
            return Err(f.error(
                &key.span(),
                &path,
                format!("expected a variable name without `=` or NUL, found {name:?}"),
            ));
        }
        if name == "OMP_NUM_THREADS" {
            return Err(f.error(
                &key.span(),
                &path,
                "set the thread count with the app's `threads` field: coloc sets OMP_NUM_THREADS from it".into(),
            ));
        }
        if cap_threads && super::caps::CAPPED_VARS.contains(&name) {
            return Err(f.error(
                &key.span(),
                &path,
                format!("`cap_threads = true` sets {name} to the team the policy chooses at launch: remove it from env, or cap_threads"),
            ));
        }
        let DeValue::String(s) = value.get_ref() else {
            return Err(f.expected(
                &path,
                value,
                "a string (environment values are text: write \"4\", not 4)",
            ));
        };
        if s.contains('\0') {
            return Err(f.error(
                &value.span(),
                &path,
                "values cannot contain a NUL character".into(),
            ));
        }
        env.insert(name.to_string(), s.to_string());
    }
    Ok(env)
}

/// `sched`: nice and time slice.
fn sched(f: &Fields<'_, '_>) -> Result<Option<SchedSettings>, WorkloadError> {
    let Some(t) = f.table("sched", SCHED_KEYS, "[app.sched]")? else {
        return Ok(None);
    };
    let nice = t.int("nice", -20..=19, "a nice value from -20 to 19")?;
    let slice_us = t.int(
        "slice_us",
        100..=100_000,
        "a time slice from 100 to 100000 microseconds (the range Linux accepts for sched_runtime)",
    )?;
    Ok(Some(SchedSettings {
        // Both bounded by the ranges passed to `int`.
        nice: nice.map(|n| n as i8),
        slice_us: slice_us.map(|s| s as u32),
    }))
}

/// `[app.metric]`: how to read the app's own performance number.
fn metric(f: &Fields<'_, '_>) -> Result<Option<MetricSpec>, WorkloadError> {
    let Some(t) = f.table("metric", METRIC_KEYS, "[app.metric]")? else {
        return Ok(None);
    };
    let (regex, span) = t.str("regex")?.ok_or_else(|| {
        t.missing(
            "regex",
            "a metric needs a `regex` with one capture group around the number, e.g. 'coloc-metric: ([0-9.eE+-]+)'",
        )
    })?;
    let compiled = Regex::new(regex).map_err(|e| {
        // regex's messages are multi-line drawings; the last line says why.
        let why = e.to_string();
        let why = why.lines().last().unwrap_or("").trim().to_string();
        t.error(
            &span,
            "regex",
            format!("expected a regular expression, found {regex:?}: {why}"),
        )
    })?;
    let groups = compiled.captures_len() - 1;
    if groups != 1 {
        return Err(t.error(
            &span,
            "regex",
            format!(
                "expected exactly one capture group (the number), found {groups} in {regex:?}; use (?:...) for groups that only bracket"
            ),
        ));
    }
    let higher_is_better = t.bool("higher_is_better")?.unwrap_or(true);
    let unit = t.str("unit")?.map(|(s, _)| s.to_string());
    let file = t
        .non_empty_str("file", "a file name")?
        .map(|(s, _)| s.to_string());
    Ok(Some(MetricSpec {
        regex: regex.to_string(),
        file,
        higher_is_better,
        unit,
    }))
}
