//! A `coloc daemon` of one test, and the processes the test started (ended
//! with it, passed or failed), for the node service's tests
//! (docs/service.md).

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use coloc_daemon::protocol::Status;
use coloc_model::CpuSet;

use super::{coloc, cpus_allowed, status_of, text, tids_of};

pub fn is_root() -> bool {
    if nix::unistd::geteuid().is_root() {
        return true;
    }
    eprintln!("skipped: managing other processes' settings needs root");
    false
}

/// Processes a test started, ended (SIGKILL, reaped) when it ends however it
/// ends; `pids` are processes it did not spawn itself (the commands `coloc
/// exec` runs).
#[derive(Default)]
pub struct Started {
    pub children: Vec<Child>,
    pub pids: Vec<u32>,
}

impl Drop for Started {
    fn drop(&mut self) {
        // The commands of `coloc exec`s are their children: a test that
        // failed before it learnt their pids must not leave them running.
        let mut pids = self.pids.clone();
        for c in &self.children {
            pids.extend(descendants(c.id()));
        }
        for &pid in &pids {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Every process below `pid` (children, their children, ...), from /proc.
pub fn descendants(pid: u32) -> Vec<u32> {
    let parents: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let p: u32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
            // The parent is the second field after the command's ')'.
            let ppid = stat.rsplit_once(')')?.1.split_whitespace().nth(1)?;
            Some((p, ppid.parse().ok()?))
        })
        .collect();
    let mut found = vec![pid];
    let mut k = 0;
    while k < found.len() {
        let parent = found[k];
        found.extend(
            parents
                .iter()
                .filter(|(_, pp)| *pp == parent)
                .map(|(p, _)| *p),
        );
        k += 1;
    }
    found.split_off(1)
}

impl Started {
    /// A `sleep 600` of the test's, ended with it: a process to attach
    /// (alive through the longest test, the soak).
    pub fn sleeper(&mut self) -> u32 {
        let child = Command::new("sleep").arg("600").spawn().unwrap();
        let pid = child.id();
        self.children.push(child);
        pid
    }
}

/// A daemon's files in a directory of the test's.
pub struct Service {
    pub dir: tempfile::TempDir,
}

impl Service {
    pub fn new() -> Service {
        let dir = tempfile::tempdir().unwrap();
        // Reachable by a second user (the socket itself is 0666 for root).
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        Service { dir }
    }

    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("coloc.sock")
    }

    /// The daemon's journal directory, its own: nothing another test runs
    /// recovers its journal or shares its lock.
    pub fn journal(&self) -> PathBuf {
        self.dir.path().join("journal")
    }

    /// `coloc daemon --foreground` with `policy`, answering on its socket.
    pub fn start(&self, policy: &str, started: &mut Started) -> usize {
        self.start_with(policy, &[], started)
    }

    /// [`Service::start`] with more options of `coloc daemon`.
    pub fn start_with(&self, policy: &str, more: &[&str], started: &mut Started) -> usize {
        let log = std::fs::File::create(self.dir.path().join("daemon.log")).unwrap();
        let child = coloc()
            .args([
                "daemon",
                "--foreground",
                "--log-level",
                "info",
                "--policy",
                policy,
            ])
            .arg("--socket")
            .arg(self.socket())
            .arg("--state")
            .arg(self.dir.path().join("daemon.state"))
            .env("COLOC_JOURNAL_DIR", self.journal())
            .args(more)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        started.children.push(child);
        let at = started.children.len() - 1;
        let socket = self.socket();
        wait_for("the daemon's socket", || {
            // A daemon that refused to start fails the test with its log at
            // once, not after the wait.
            if let Some(status) = started.children[at].try_wait().unwrap() {
                panic!("the daemon exited with {status}:\n{}", self.log());
            }
            std::os::unix::net::UnixStream::connect(&socket).is_ok()
        });
        at
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("daemon.log")).unwrap_or_default()
    }

    /// `coloc CMD --socket S ARGS...`.
    pub fn coloc(&self, args: &[&str]) -> Command {
        let mut c = coloc();
        c.arg(args[0])
            .arg("--socket")
            .arg(self.socket())
            .args(&args[1..])
            .env("COLOC_JOURNAL_DIR", self.journal());
        c
    }

    /// `coloc exec --socket S OPTIONS -- KERNEL`, its output to `stderr`
    /// (stdout dropped), started among the test's children; its index there.
    pub fn exec_kernel(&self, options: &[&str], stderr: Stdio, started: &mut Started) -> usize {
        let child = self
            .coloc(&[&["exec"], options, &["--"]].concat())
            .args(KERNEL)
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .unwrap();
        started.children.push(child);
        started.children.len() - 1
    }

    pub fn status(&self) -> Status {
        let out = self.coloc(&["status", "--json"]).output().unwrap();
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "status: {stderr}\n{}", self.log());
        serde_json::from_str(&stdout).unwrap()
    }
}

/// `cmd` run as `uid` (its uid as group, no other groups).
pub fn as_uid(uid: u32, cmd: &Command) -> Command {
    let mut c = Command::new("setpriv");
    c.arg(format!("--reuid={uid}"))
        .arg(format!("--regid={uid}"))
        .arg("--clear-groups")
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .envs(cmd.get_envs().filter_map(|(k, v)| Some((k, v?))));
    c
}

/// The daemon's resident memory in KiB, and its thread count.
pub fn rss_and_threads(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("Threads:"))
}

/// A process's start time (field 22 of its stat): it is the same process.
pub fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(19)?
        .parse()
        .ok()
}

/// Polls `done` for up to 30 s (a loaded machine is slow, not wrong).
pub fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(30);
    while Instant::now() < until {
        if done() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("timed out waiting for {what}");
}

/// Every thread of `pid` and the CPUs it may use.
pub fn affinities(pid: u32) -> Vec<(u32, CpuSet)> {
    tids_of(pid)
        .into_iter()
        .filter_map(|t| Some((t, cpus_allowed(&status_of(pid, t)?)?)))
        .collect()
}

/// Whether every thread of every managed app runs where its plan says.
pub fn placed_by_plan(s: &Status) -> bool {
    s.apps.iter().all(|a| {
        let Some(plan) = &a.plan else { return false };
        let threads = affinities(a.pid);
        !threads.is_empty()
            && threads.iter().all(|(tid, cpus)| {
                plan.placement
                    .cpus_of(*tid)
                    .is_some_and(|want| want == cpus)
            })
    })
}

/// Whether every `exec` app runs its command: `coloc exec`'s child execs it
/// once the daemon's answer came (a daemon killed before answering leaves
/// the command unrun, by design).
pub fn running_their_commands(s: &Status) -> bool {
    s.apps.iter().all(|a| {
        a.kind != "exec"
            || std::fs::read_to_string(format!("/proc/{}/comm", a.pid))
                .is_ok_and(|c| c.trim() != "coloc")
    })
}

/// A long OpenMP kernel (ended by the test).
pub const KERNEL: &[&str] = &["kernel:compute", "--iters", "1000000000000"];

/// What a multi-user test must leave as it was, read from /proc (the node
/// service's hardening, docs/service.md, Limits): a process of root's (its
/// every thread's CPUs) and, when there is one, the daemon (the same
/// process: its pid with the same start time).
pub struct RootUntouched {
    pub root_pid: u32,
    root_cpus: Vec<(u32, CpuSet)>,
    daemon: Option<(u32, u64)>,
}

impl RootUntouched {
    /// Starts a process of root's among `started` and notes it, and the
    /// daemon `daemon` if any.
    pub fn new(started: &mut Started, daemon: Option<u32>) -> RootUntouched {
        let root_pid = started.sleeper();
        RootUntouched {
            root_pid,
            root_cpus: affinities(root_pid),
            daemon: daemon.map(|d| (d, start_time(d).expect("the daemon's start time"))),
        }
    }

    /// Panics unless root's process keeps its CPUs and the daemon is the
    /// same process; `log` is shown when the daemon is gone.
    pub fn check(&self, log: &str) {
        assert!(
            start_time(self.root_pid).is_some(),
            "root's process {} is gone",
            self.root_pid
        );
        assert_eq!(
            affinities(self.root_pid),
            self.root_cpus,
            "root's process {} was moved",
            self.root_pid
        );
        if let Some((pid, start)) = self.daemon {
            assert_eq!(start_time(pid), Some(start), "the daemon died:\n{log}");
        }
    }
}
