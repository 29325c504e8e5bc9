//! Progress inside one long region (docs/signals.md): the `long_region`
//! program (c/long_region.c) stays in one parallel region and runs rounds
//! when told, so the record is read while the region runs.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use coloc_shim::{shim_path, DopChannel, OmpState};

/// Per round of long_region.c: N / CHUNK chunks, TASKS tasks, and two
/// barriers (the loop's end, the explicit one).
const CHUNKS: u64 = 4000 / 100;
const TASKS: u64 = 5;
const ROUND_SYNCS: u64 = 2;
/// Per command: the two barriers before the rounds.
const COMMAND_SYNCS: u64 = 2;
const N: u64 = 4000;

struct LongRegion {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl LongRegion {
    fn start(exe: &Path, threads: u32, record: &Path, preload: &Path) -> Self {
        let mut cmd = Command::new(exe);
        for var in ["LD_PRELOAD", "OMP_DYNAMIC", "OMP_PROC_BIND", "OMP_PLACES"] {
            cmd.env_remove(var);
        }
        let mut child = cmd
            .env("OMP_NUM_THREADS", threads.to_string())
            .env("OMP_WAIT_POLICY", "passive")
            .env("LD_PRELOAD", preload)
            .env("COLOC_OMP_RECORD", record)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start long_region");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Self {
            child,
            stdin,
            stdout,
        }
    }

    /// Sends one command and returns the line it answers.
    fn run(&mut self, command: &str) -> String {
        writeln!(self.stdin, "{command}").unwrap();
        self.stdin.flush().unwrap();
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        assert!(!line.is_empty(), "long_region exited early");
        line.trim_end().to_string()
    }

    /// The process's threads from /proc.
    fn tids(&self) -> Vec<u32> {
        let mut tids: Vec<u32> = std::fs::read_dir(format!("/proc/{}/task", self.child.id()))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_str().unwrap().parse().unwrap())
            .collect();
        tids.sort_unstable();
        tids
    }
}

impl Drop for LongRegion {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "end");
        let _ = self.child.wait();
    }
}

/// What the team must have counted for `commands` commands that ran
/// `rounds` rounds in all: the team's count, and the sum over its threads
/// (each thread passes every barrier). `chunks`: whether the runtime reports
/// the chunks of a dynamic loop (libgomp does; LLVM 14's OMPT does not).
fn expected_with(chunks: bool, commands: u64, rounds: u64, team: u64) -> (u64, u64) {
    let units = rounds * (if chunks { CHUNKS } else { 0 } + TASKS);
    let syncs = commands * COMMAND_SYNCS + rounds * ROUND_SYNCS;
    (units + syncs, units + team * syncs)
}

fn expected(commands: u64, rounds: u64, team: u64) -> (u64, u64) {
    expected_with(true, commands, rounds, team)
}

fn thread_sum(s: &OmpState) -> u64 {
    s.thread_steps.iter().map(|(_, n)| n).sum()
}

/// Runs the checks on `exe` (built for one runtime) with a team of 2.
fn progress_rises_inside_one_region(exe: &Path, chunks: bool) {
    let expected = |c, r, t| expected_with(chunks, c, r, t);
    let dir = tempfile::tempdir().unwrap();
    let chan = DopChannel::create(&dir.path().join("record"), &[], 2).unwrap();
    let shim = shim_path().unwrap();
    let mut app = LongRegion::start(exe, 2, chan.path(), &shim);

    assert_eq!(app.run("3"), "inside rounds 3 team 2");
    let first = chan.read();
    assert_eq!((first.in_parallel, first.team_size), (1, 2), "{first:?}");
    assert_eq!(first.regions_completed, 0, "one region, still running");
    assert_eq!(first.steps_completed, expected(1, 3, 2).0, "{first:?}");
    assert_eq!(first.iterations_completed, 3 * N, "loops ended so far");
    // The record's threads are the process's threads, as /proc lists them.
    let proc_tids = app.tids();
    assert_eq!(proc_tids.len(), 2, "a team of 2: {proc_tids:?}");
    let mut counted: Vec<u32> = first.thread_steps.iter().map(|(t, _)| *t).collect();
    counted.sort_unstable();
    assert_eq!(counted, proc_tids, "{first:?}");
    assert!(first.thread_steps.iter().all(|(_, n)| *n > 0));

    assert_eq!(app.run("5"), "inside rounds 8 team 2");
    let second = chan.read();
    assert_eq!(second.regions_completed, 0);
    assert_eq!(second.in_parallel, 1);
    assert_eq!(
        second.steps_completed,
        expected(2, 8, 2).0,
        "rose by five rounds and a command: {second:?}"
    );
    assert_eq!(second.iterations_completed, 8 * N);

    let done = app.run("end");
    assert!(done.ends_with(" ok"), "{done}");
    let last = chan.read();
    assert_eq!((last.regions_completed, last.in_parallel), (1, 0));
    // After the region, every thread's own count is in: each passed every
    // barrier, and their chunks and tasks add up to the team's. The last
    // `end` command passed one barrier.
    let (team, threads) = expected(2, 8, 2);
    assert_eq!(last.steps_completed, team + 1, "{last:?}");
    assert_eq!(thread_sum(&last), threads + 2, "{last:?}");
}

#[test]
fn libgomp_counts_progress_inside_one_long_region() {
    let exe = Path::new(env!("OUT_DIR")).join("long_region");
    assert!(
        exe.exists(),
        "long_region was not built (see the build warning)"
    );
    progress_rises_inside_one_region(&exe, true);
}

/// The same program built with clang, under the OMPT tool (c/ompt.c): the
/// same counts but for the chunks, which LLVM 14's runtime does not report.
#[test]
fn llvm_counts_progress_inside_one_long_region() {
    let exe = Path::new(env!("OUT_DIR")).join("long_region_llvm");
    if !exe.exists() {
        eprintln!(
            "skipped: {} was not built: needs clang and LLVM's libomp",
            exe.display()
        );
        return;
    }
    progress_rises_inside_one_region(&exe, false);
}

/// A team of one counts the same team progress: the count does not depend
/// on the team's size.
#[test]
fn team_progress_does_not_depend_on_the_team_size() {
    let exe = Path::new(env!("OUT_DIR")).join("long_region");
    let dir = tempfile::tempdir().unwrap();
    let chan = DopChannel::create(&dir.path().join("record"), &[], 1).unwrap();
    let shim = shim_path().unwrap();
    let mut app = LongRegion::start(&exe, 2, chan.path(), &shim);
    assert_eq!(app.run("4"), "inside rounds 4 team 1");
    let s = chan.read();
    assert_eq!(s.steps_completed, expected(1, 4, 1).0, "{s:?}");
    assert_eq!(s.thread_steps.len(), 1, "{s:?}");
    assert_eq!(thread_sum(&s), expected(1, 4, 1).1, "{s:?}");
}
