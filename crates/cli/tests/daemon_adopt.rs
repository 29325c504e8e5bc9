//! What root's node service adopts, and as whom (docs/service.md,
//! Permissions and Restart): each test names the defect it pins and checks
//! /proc. Root only; a user made for a test (`useradd`, removed after) plays
//! the one who asks where it matters.

mod common;
#[path = "../../linux/tests/support/users.rs"]
#[allow(dead_code)] // chown: the other tests' part of it
mod users;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::service::{
    affinities, as_uid, is_root, start_time, wait_for, RootUntouched, Service, Started, KERNEL,
};
use common::{allowed_here, text};
use users::TestUser;

/// `coloc attach PID` as root: its refusal, or None when it was accepted.
fn attach_refusal(svc: &Service, pid: u32) -> Option<String> {
    let out = svc.coloc(&["attach", &pid.to_string()]).output().unwrap();
    (!out.status.success()).then(|| text(&out).1)
}

/// The children of `pid` (its first thread's).
fn children(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|c| c.parse().ok())
        .collect()
}

/// `attach` accepted pid 1, the daemon itself, kernel threads, a thread id,
/// a zombie and a child of a managed process (two instances then managed one
/// thread). Each is refused with its reason, and nothing is managed.
#[test]
fn attach_refuses_init_itself_kernel_threads_thread_ids_zombies_and_managed_trees() {
    if !is_root() {
        return;
    }
    let svc = Service::new();
    let mut started = Started::default();
    let d = svc.start("equal", &mut started);
    let daemon = started.children[d].id();
    let me = std::process::id();
    let thread = std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| t.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .find(|t| *t != me)
        .expect("the test harness runs tests on threads");
    let zombie = Command::new("true").spawn().unwrap();
    let z = zombie.id();
    wait_for("a zombie", || {
        std::fs::read_to_string(format!("/proc/{z}/stat"))
            .is_ok_and(|s| s.rsplit_once(')').is_some_and(|(_, r)| r.starts_with(" Z")))
    });
    started.children.push(zombie);
    for (pid, why) in [
        (1, "process 1 is init"),
        (daemon, "the coloc daemon itself"),
        (me, "an ancestor of the coloc daemon"),
        (2, "a kernel thread"),
        (thread, &format!("a thread of process {me}") as &str),
        (z, "has ended (a zombie"),
    ] {
        let refusal = attach_refusal(&svc, pid).unwrap_or_else(|| panic!("{pid} was attached"));
        assert!(refusal.contains(why), "{pid}: {refusal}");
    }
    // A tree: a shell and its child.
    let sh = Command::new("sh")
        .args(["-c", "sleep 60 & wait"])
        .spawn()
        .unwrap();
    let parent = sh.id();
    started.children.push(sh);
    wait_for("the shell's child", || !children(parent).is_empty());
    let child = children(parent)[0];
    started.pids.push(child);
    assert_eq!(attach_refusal(&svc, child), None);
    let refusal = attach_refusal(&svc, parent).expect("the parent of a managed app");
    assert!(refusal.contains("in its tree"), "{refusal}");
    let out = svc
        .coloc(&["release", &child.to_string()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out).1);
    assert_eq!(attach_refusal(&svc, parent), None);
    let refusal = attach_refusal(&svc, child).expect("the child of a managed app");
    assert!(refusal.contains("inside app"), "{refusal}");
    let apps: Vec<u32> = svc.status().apps.iter().map(|a| a.pid).collect();
    assert_eq!(apps, vec![parent]);
    assert!(start_time(daemon).is_some(), "the daemon died");
}

/// The daemon of `svc`, started by a process that never reaps it (`sh`
/// that execs `sleep`): killed, it stays a zombie. Returns the pid of the
/// daemon and of its parent.
fn unreaped_daemon(svc: &Service, started: &mut Started) -> (u32, u32) {
    let script = format!(
        "'{}' daemon --foreground --log-level info --policy equal --socket '{}' --state '{}' \
         2>>'{}' & exec sleep 600",
        env!("CARGO_BIN_EXE_coloc"),
        svc.socket().display(),
        svc.dir.path().join("daemon.state").display(),
        svc.dir.path().join("daemon.log").display(),
    );
    let parent = Command::new("sh")
        .args(["-c", &script])
        .env("COLOC_JOURNAL_DIR", svc.journal())
        .env(common::SHARE_MACHINE, "1")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let sleep = parent.id();
    started.children.push(parent);
    wait_for("the daemon's socket", || {
        std::os::unix::net::UnixStream::connect(svc.socket()).is_ok()
    });
    let daemon = children(sleep)[0];
    started.pids.push(daemon);
    (daemon, sleep)
}

/// A daemon restarted while its killed predecessor was a zombie took the
/// zombie for alive, skipped its journal, re-adopted the apps with the
/// pinning as their own CPUs, and said every setting was restored while
/// they stayed pinned. A zombie is dead: the successor restores its journal
/// first, says so, and at its own stop the apps get their own CPUs back.
#[test]
fn a_successor_restores_a_zombie_predecessors_journal_before_readopting() {
    if !is_root() {
        return;
    }
    let here = allowed_here();
    if here.len() < 2 {
        eprintln!("skipped: placing two apps apart needs 2 CPUs");
        return;
    }
    let svc = Service::new();
    let mut started = Started::default();
    let (daemon, _) = unreaped_daemon(&svc, &mut started);
    for name in ["z1", "z2"] {
        svc.exec_kernel(&["--name", name], Stdio::null(), &mut started);
    }
    let mut pids = Vec::new();
    // Every thread journaled (the daemon has seen them all: a thread that
    // inherited coloc's CPUs is journaled when it is first seen, and one a
    // killed coloc never saw is no journal's).
    wait_for(
        "two apps placed on one CPU each, all their threads seen",
        || {
            let s = svc.status();
            pids = s.apps.iter().map(|a| a.pid).collect();
            s.apps.len() == 2
                && s.apps.iter().all(|a| {
                    let threads = affinities(a.pid);
                    threads.len() >= 2
                        && a.threads == threads.len()
                        && threads.iter().all(|(_, c)| c.len() == 1)
                })
        },
    );
    started.pids.extend(&pids);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(daemon as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    wait_for("the killed daemon a zombie", || {
        std::fs::read_to_string(format!("/proc/{daemon}/stat"))
            .is_ok_and(|s| s.rsplit_once(')').is_some_and(|(_, r)| r.starts_with(" Z")))
    });
    let second = svc.start("equal", &mut started);
    let log = svc.log();
    assert!(
        log.contains("restored settings from 1 stale journal"),
        "the zombie's journal was not restored:\n{log}"
    );
    wait_for("both re-adopted", || {
        svc.status()
            .apps
            .iter()
            .filter(|a| a.kind == "readopted")
            .count()
            == 2
    });
    let d2 = started.children[second].id();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(d2 as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert!(
        started.children[second].wait().unwrap().success(),
        "{}",
        svc.log()
    );
    for pid in &pids {
        for (tid, cpus) in affinities(*pid) {
            assert_eq!(
                cpus,
                here,
                "thread {tid} of {pid} stayed pinned:\n{}",
                svc.log()
            );
        }
    }
}

/// Sets the pid the next process gets (`ns_last_pid`) and starts `cmd`
/// until it gets `pid`; None when other processes keep taking it.
fn spawn_at_pid(pid: u32, cmd: &mut Command) -> Option<Child> {
    for _ in 0..200 {
        std::fs::write("/proc/sys/kernel/ns_last_pid", (pid - 1).to_string()).ok()?;
        let child = cmd.spawn().unwrap();
        if child.id() == pid {
            return Some(child);
        }
        let mut child = child;
        let _ = child.kill();
        let _ = child.wait();
    }
    None
}

/// Ownership was checked when a request came but no start time was kept;
/// adoption came at admission, possibly much later, and took whatever held
/// the pid then: with the pid reused, a user's request adopted a root
/// process as that user's app. The request's start time now goes with it to
/// adoption, which refuses another process.
#[test]
fn a_users_waiting_request_never_adopts_a_root_process_that_took_its_pid() {
    if !is_root() {
        return;
    }
    let Some(user) = TestUser::create("reuse") else {
        return;
    };
    let svc = Service::new();
    let mut started = Started::default();
    // batch: one app at a time, the others wait.
    let d = svc.start("batch", &mut started);
    let daemon = started.children[d].id();
    let root = RootUntouched::new(&mut started, Some(daemon));
    let first = started.sleeper();
    let out = svc.coloc(&["attach", &first.to_string()]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out).1);
    let theirs = as_uid(user.uid, Command::new("sleep").arg("600"))
        .spawn()
        .unwrap();
    let pid = theirs.id();
    let waiting = as_uid(user.uid, &svc.coloc(&["attach", &pid.to_string()]))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the user's app waiting", || {
        svc.status()
            .apps
            .iter()
            .any(|a| a.pid == pid && a.state == "waiting")
    });
    let mut theirs = theirs;
    theirs.kill().unwrap();
    theirs.wait().unwrap();
    // A start time counts clock ticks (10 ms at the usual 100 Hz): a pid
    // taken again within the tick its first process started in cannot be
    // told from it by its start, and only the owner's check refuses it (a
    // quiet machine gets here that fast). Two ticks later, the start time
    // tells them apart, which is what this test is about.
    std::thread::sleep(Duration::from_millis(50));
    let Some(root_proc) = spawn_at_pid(pid, Command::new("sleep").arg("600")) else {
        eprintln!("skipped: pid {pid} could not be taken again (other processes took it)");
        let mut waiting = waiting;
        let _ = waiting.kill();
        let _ = waiting.wait();
        return;
    };
    started.children.push(root_proc);
    let own = affinities(pid);
    let out = svc
        .coloc(&["release", &first.to_string()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out).1);
    let out = waiting.wait_with_output().unwrap();
    let (_, stderr) = text(&out);
    assert!(!out.status.success(), "the user's attach succeeded");
    assert!(stderr.contains("its pid was reused"), "{stderr}");
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until {
        assert!(
            !svc.status().apps.iter().any(|a| a.pid == pid),
            "root's process {pid} is managed"
        );
        assert_eq!(affinities(pid), own, "root's process was changed");
        std::thread::sleep(Duration::from_millis(100));
    }
    root.check(&svc.log());
    drop(started);
    drop(user);
}

/// `coloc exec --malleable -- PATH` made root's daemon read PATH itself, on
/// its loop: a FIFO froze the loop, `/dev/zero` grew it to 2 GB, and the
/// answer told whether root could see a path the user could not. The check
/// runs off the loop as the user, refuses what is not a regular file, and
/// answers as the user would be answered.
#[test]
fn a_malleable_exec_of_a_fifo_a_device_or_a_hidden_path_harms_nothing() {
    if !is_root() {
        return;
    }
    let Some(user) = TestUser::create("prog") else {
        return;
    };
    let svc = Service::new();
    let mut started = Started::default();
    let d = svc.start("equal", &mut started);
    let daemon = started.children[d].id();
    let root = RootUntouched::new(&mut started, Some(daemon));
    let fifo = svc.dir.path().join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o666)).unwrap();
    std::os::unix::fs::chown(&fifo, Some(user.uid), None).unwrap();
    // A directory only root may enter, holding one OpenMP program.
    let hidden = svc.dir.path().join("hidden");
    std::fs::create_dir(&hidden).unwrap();
    std::fs::set_permissions(&hidden, std::fs::Permissions::from_mode(0o700)).unwrap();
    let kernel = coloc_workloads::resolve_argv(&[KERNEL[0].to_string()]).unwrap();
    std::fs::copy(&kernel[0], hidden.join("app")).unwrap();
    // A root app keeps the loop deciding meanwhile.
    svc.exec_kernel(&["--name", "steady"], Stdio::null(), &mut started);
    let exec_note = |program: &Path| -> String {
        let exec = svc.coloc(&["exec", "--malleable", "--"]);
        let mut exec = as_uid(user.uid, &exec);
        exec.arg(program);
        let child = exec.stderr(Stdio::piped()).spawn().unwrap();
        let out = child.wait_with_output().unwrap();
        text(&out).1
    };
    let asked = Instant::now();
    let said = exec_note(&fifo);
    assert!(said.contains("a FIFO, not a regular file"), "{said}");
    let said = exec_note(Path::new("/dev/zero"));
    assert!(said.contains("a character device"), "{said}");
    assert!(
        asked.elapsed() < Duration::from_secs(20),
        "{:?}",
        asked.elapsed()
    );
    let there = exec_note(&hidden.join("app"));
    let missing = exec_note(&hidden.join("none"));
    assert!(there.contains("Permission denied"), "{there}");
    assert_eq!(
        there.replace("/app", "/X"),
        missing.replace("/none", "/X"),
        "the answers differ by what root can see"
    );
    let (rss, _) = common::service::rss_and_threads(daemon);
    assert!(rss < 96 * 1024, "the daemon's RSS is {rss} KiB");
    root.check(&svc.log());
    assert!(svc.status().apps.iter().any(|a| a.name == "steady"));
    drop(started);
    drop(user);
}
