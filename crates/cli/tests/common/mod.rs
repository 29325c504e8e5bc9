//! What the integration tests share: the binary and its output, /proc readers
//! for the threads of the apps coloc runs and their CPU affinity, sampling them
//! while coloc runs, and the trace a run wrote.

// Every test crate compiles this module on its own and uses a part of it.
#![allow(dead_code)]

pub mod hostile;
pub mod service;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use coloc_model::trace::{Trace, TraceEvent};
use coloc_model::{AppId, CpuSet, Placement, Plan, Trigger};

/// `coloc`, learning into a data directory of its own and with a journal
/// directory of its own. coloc learns from every run it manages
/// (docs/knowledge.md), so without the first one test's runs would change
/// another's decisions; a test that wants two commands to share what they
/// learn sets `XDG_DATA_HOME` (or passes `--db`) itself. One coloc manager
/// runs per machine and per journal directory (docs/safety.md, One manager
/// per machine), and tests run many at once, here and in other checkouts:
/// each has a journal directory of its own and shares the machine on
/// purpose ([`SHARE_MACHINE`]); the tests of that rule remove it.
pub fn coloc() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_coloc"));
    c.env("XDG_DATA_HOME", fresh_data_dir());
    c.env("COLOC_JOURNAL_DIR", own_journal());
    c.env(SHARE_MACHINE, "1");
    c
}

/// The variable by which a manager shares the machine with others on
/// purpose (docs/safety.md, One manager per machine).
pub const SHARE_MACHINE: &str = "COLOC_SHARE_MACHINE";

/// A new, empty directory under the tests' temporary directory, kept (the
/// command that uses it outlives this call).
pub fn fresh_data_dir() -> PathBuf {
    tempfile::Builder::new()
        .prefix("data-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
        .keep()
}

/// A journal directory no other command uses (under cargo's scratch
/// directory for tests; made by the command).
pub fn own_journal() -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("journals")
        .join(format!("{}-{n}", std::process::id()))
}

/// The journal directory `cmd` was given.
pub fn journal_of(cmd: &Command) -> PathBuf {
    cmd.get_envs()
        .find(|(k, _)| *k == "COLOC_JOURNAL_DIR")
        .and_then(|(_, v)| v)
        .map(PathBuf::from)
        .expect("a command of coloc()")
}

/// Runs `coloc ARGS` to its end.
pub fn coloc_output(args: &[&str]) -> Output {
    coloc().args(args).output().unwrap()
}

/// Standard output and standard error, as text.
pub fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A file of the repository (examples/...).
pub fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}

/// CPUs this test process may use.
pub fn allowed_here() -> CpuSet {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    cpus_allowed(&status).unwrap()
}

/// `Cpus_allowed_list` of a /proc status file.
pub fn cpus_allowed(status: &str) -> Option<CpuSet> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .and_then(|v| v.trim().parse().ok())
}

pub fn status_of(pid: u32, tid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/status")).ok()
}

/// Direct children of `pid` (the instances coloc started).
pub fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for t in tasks.flatten() {
        let path = t.path().join("children");
        if let Ok(text) = std::fs::read_to_string(path) {
            out.extend(
                text.split_whitespace()
                    .filter_map(|s| s.parse::<u32>().ok()),
            );
        }
    }
    out
}

pub fn tids_of(pid: u32) -> Vec<u32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// A thread's time on a CPU so far, ns (`schedstat`'s first field).
pub fn run_ns(pid: u32, tid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/schedstat")).ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// Field 22 of /proc/<pid>/task/<tid>/stat, the thread's start in clock ticks
/// after boot.
pub fn start_ticks(pid: u32, tid: u32) -> Option<u64> {
    stat_field(pid, tid, 22)
}

/// Field `n` (1-based, as proc(5) numbers them) of
/// /proc/<pid>/task/<tid>/stat: 19 is the nice value, 41 the scheduling
/// policy. Fields are counted from the end of the command name, which is in
/// parentheses and may itself hold spaces and parentheses.
pub fn stat_field<T: std::str::FromStr>(pid: u32, tid: u32, n: usize) -> Option<T> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).ok()?;
    let after_comm = &stat[stat.rfind(')')? + 1..];
    // Field 3 (state) is the first one after the name.
    after_comm.split_whitespace().nth(n - 3)?.parse().ok()
}

/// Seconds since the Unix epoch, the clock of a trace's `started_unix`.
pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// One thread of an app coloc started, as /proc showed it.
#[derive(Clone, Debug)]
pub struct Sample {
    /// When the sampling round that saw it began, Unix seconds.
    pub at_unix: f64,
    /// The round's number: samples of one round were taken together.
    pub round: usize,
    pub pid: u32,
    pub tid: u32,
    pub cpus: CpuSet,
    /// The thread's start, clock ticks after boot (`stat` field 22).
    pub start_ticks: Option<u64>,
    /// Its time on a CPU so far, ns (`schedstat`'s first field).
    pub run_ns: Option<u64>,
}

/// Samples every thread of every process coloc (`child`) started, every
/// `every`, until coloc exits or `limit` passes.
pub fn sample_while_running(child: &mut Child, every: Duration, limit: Duration) -> Vec<Sample> {
    let coloc_pid = child.id();
    let mut samples = Vec::new();
    let t0 = Instant::now();
    let mut round = 0;
    while child.try_wait().unwrap().is_none() && t0.elapsed() < limit {
        let at_unix = unix_now();
        for pid in children(coloc_pid) {
            for tid in tids_of(pid) {
                if let Some(cpus) = status_of(pid, tid).as_deref().and_then(cpus_allowed) {
                    samples.push(Sample {
                        at_unix,
                        round,
                        pid,
                        tid,
                        cpus,
                        start_ticks: start_ticks(pid, tid),
                        run_ns: run_ns(pid, tid),
                    });
                }
            }
        }
        round += 1;
        std::thread::sleep(every);
    }
    samples
}

/// A `coloc run` that finished, with what /proc showed while it ran.
pub struct SampledRun {
    pub coloc_pid: u32,
    /// Its journal directory.
    pub journal: PathBuf,
    pub samples: Vec<Sample>,
    pub trace: Trace,
}

/// `coloc run WORKLOAD --policy POLICY --out OUT` with its output piped, for
/// a test to add what it needs (an environment) and spawn.
pub fn run_command(workload: &Path, policy: &str, out: &Path) -> Command {
    let mut c = coloc();
    c.arg("run")
        .arg(workload)
        .args(["--policy", policy, "--out"])
        .arg(out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// Waits for a run spawned from [`run_command`], which must succeed; its
/// stderr.
pub fn finished(child: Child) -> String {
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "coloc run failed: {stderr}");
    stderr
}

/// Runs `coloc run WORKLOAD --policy POLICY --out OUT`, sampling its apps'
/// threads every `every` (see [`sample_while_running`]); the run must succeed.
pub fn run_sampled(
    workload: &Path,
    policy: &str,
    out: &Path,
    every: Duration,
    limit: Duration,
) -> SampledRun {
    run_sampled_by(run_command(workload, policy, out), out, every, limit)
}

/// Runs `cmd` (a [`run_command`], with what the test added) writing to
/// `out`, sampling as [`run_sampled`] does; the run must succeed.
pub fn run_sampled_by(
    mut cmd: Command,
    out: &Path,
    every: Duration,
    limit: Duration,
) -> SampledRun {
    let journal = journal_of(&cmd);
    let mut child = cmd.spawn().unwrap();
    let coloc_pid = child.id();
    let samples = sample_while_running(&mut child, every, limit);
    finished(child);
    SampledRun {
        coloc_pid,
        journal,
        samples,
        trace: read_trace(out),
    }
}

/// The trace a run wrote to `out`.
pub fn read_trace(out: &Path) -> Trace {
    Trace::read(std::io::BufReader::new(
        std::fs::File::open(out.join("trace.jsonl")).unwrap(),
    ))
    .unwrap()
}

/// The app instance each started pid was.
pub fn apps_by_pid(trace: &Trace) -> BTreeMap<u32, AppId> {
    trace
        .events
        .iter()
        .filter_map(|e| match e {
            TraceEvent::Start { app, pid, .. } => Some((*pid, *app)),
            _ => None,
        })
        .collect()
}

/// How far a sample's time, converted to the trace's clock, may be off (the
/// trace's zero is the backend's start, taken just before `started_unix`).
pub const CLOCK_SLACK: f64 = 0.02;

/// How long after a plan the threads may still show the previous one (the
/// plan is applied right after it is made; a loaded machine delays that).
pub const APPLY_SLACK: f64 = 0.25;

/// A plan and when it was made and applied, trace seconds.
pub struct Decision<'a> {
    pub t: f64,
    pub applied: f64,
    pub trigger: Trigger,
    pub plan: &'a Plan,
}

/// Every plan of a run, in order.
pub fn decisions(trace: &Trace) -> Vec<Decision<'_>> {
    let mut out: Vec<Decision> = Vec::new();
    for e in &trace.events {
        match e {
            TraceEvent::Plan {
                t, trigger, plan, ..
            } => out.push(Decision {
                t: t.as_secs_f64(),
                applied: t.as_secs_f64(),
                trigger: *trigger,
                plan,
            }),
            TraceEvent::Applied { t, .. } => {
                if let Some(last) = out.last_mut() {
                    last.applied = t.as_secs_f64();
                }
            }
            _ => {}
        }
    }
    out
}

/// The CPUs `plan` gives thread `tid` of `app` (its own when it names it, the
/// app's `rest` otherwise); None when the plan does not place the app.
pub fn planned(plan: &Plan, app: AppId, tid: u32) -> Option<CpuSet> {
    match &plan.for_app(app)?.placement {
        Placement::Unmanaged => None,
        p => p.cpus_of(tid).cloned(),
    }
}

/// What the plans in force around trace time `at` (the last one made by then,
/// and those it replaced within [`APPLY_SLACK`]) give thread `tid` of `app`.
pub fn allowed_at(decisions: &[Decision], app: AppId, tid: u32, at: f64) -> Vec<CpuSet> {
    in_force(decisions, at)
        .filter_map(|d| planned(d.plan, app, tid))
        .collect()
}

/// The plans in force around trace time `at`: the last one made by then, and
/// those it replaced within [`APPLY_SLACK`].
pub fn in_force<'a>(
    decisions: &'a [Decision<'a>],
    at: f64,
) -> impl Iterator<Item = &'a Decision<'a>> {
    decisions.iter().enumerate().filter_map(move |(i, d)| {
        let until = decisions.get(i + 1).map_or(f64::INFINITY, |n| n.applied);
        (d.t <= at + CLOCK_SLACK && until >= at - APPLY_SLACK).then_some(d)
    })
}
