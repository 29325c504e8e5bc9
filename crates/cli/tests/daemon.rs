//! The node service on the real machine (docs/service.md): `coloc daemon`
//! with `coloc exec`, `attach`, `release` and `status`, checked against /proc.
//! Tests that change other processes need root and say so when they skip;
//! every process a test starts is ended when it ends, passed or failed.

mod common;
#[path = "../../linux/tests/support/users.rs"]
#[allow(dead_code)] // chown: the other tests' part of it
mod users;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use coloc_daemon::protocol::Status;
use coloc_model::CpuSet;
use common::service::{
    affinities, is_root, placed_by_plan, running_their_commands, wait_for, RootUntouched, Service,
    Started, KERNEL,
};
use common::{allowed_here, coloc, text};
use users::TestUser;

/// Two `coloc exec` OpenMP kernels from two processes are placed by the plan;
/// the daemon is killed with SIGKILL and they go on; a new daemon re-adopts
/// them and places them again; when it stops, their settings are back, and
/// each `coloc exec` exits with its command's status.
#[test]
fn exec_kernels_are_placed_and_readopted_after_the_daemon_is_killed() {
    if !is_root() {
        return;
    }
    let svc = Service::new();
    let mut started = Started::default();
    let first = svc.start("equal", &mut started);
    let mut execs = Vec::new();
    for name in ["k1", "k2"] {
        execs.push(svc.exec_kernel(
            &["--malleable", "--name", name],
            Stdio::piped(),
            &mut started,
        ));
    }
    let mut status = Status::default();
    wait_for("two running apps placed by the plan", || {
        status = svc.status();
        status.apps.len() == 2
            && status.apps.iter().all(|a| a.state == "running")
            && running_their_commands(&status)
            && placed_by_plan(&status)
    });
    let pids: Vec<u32> = status.apps.iter().map(|a| a.pid).collect();
    started.pids.extend(&pids);
    // equal on this machine: the two apps get CPU sets of their own.
    let sets: Vec<CpuSet> = status
        .apps
        .iter()
        .map(|a| a.plan.as_ref().unwrap().placement.cpus())
        .collect();
    if allowed_here().len() >= 2 {
        assert!(sets[0].is_disjoint(&sets[1]), "{sets:?}");
    }

    let daemon = &mut started.children[first];
    daemon.kill().unwrap();
    daemon.wait().unwrap();
    for &pid in &pids {
        assert!(
            !affinities(pid).is_empty(),
            "app {pid} ended with the daemon"
        );
    }

    let second = svc.start("equal", &mut started);
    wait_for("both apps re-adopted and placed", || {
        status = svc.status();
        status.apps.len() == 2
            && status.apps.iter().all(|a| a.kind == "readopted")
            && placed_by_plan(&status)
    });
    let mut found: Vec<u32> = status.apps.iter().map(|a| a.pid).collect();
    found.sort();
    let mut want = pids.clone();
    want.sort();
    assert_eq!(found, want);
    assert!(svc.log().contains("re-adopting k1"), "{}", svc.log());

    // A stopped daemon lets its apps go with their settings back.
    let daemon = &mut started.children[second];
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(daemon.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert!(daemon.wait().unwrap().success(), "{}", svc.log());
    let here = allowed_here();
    for &pid in &pids {
        for (tid, cpus) in affinities(pid) {
            assert_eq!(cpus, here, "thread {tid} of {pid} kept coloc's CPUs");
        }
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGTERM,
        )
        .unwrap();
    }
    for &i in &execs {
        let status = started.children[i].wait().unwrap();
        // The command's status: killed by SIGTERM, as a shell reports it.
        assert_eq!(status.code(), Some(128 + 15));
    }
    assert!(!svc.socket().exists(), "the socket outlived its daemon");
}

/// `cmd` run as `user` (its uid as group, no other groups).
fn as_user(user: &TestUser, cmd: &Command) -> Command {
    common::service::as_uid(user.uid, cmd)
}

/// An unprivileged user's `--malleable` exec under root's daemon gets DoP
/// control: the shim, extracted where every user can read it, is loaded,
/// and the DoP record, given to the user, is mapped by the app.
#[test]
fn a_users_malleable_exec_under_roots_daemon_gets_its_dop_managed() {
    if !is_root() {
        return;
    }
    let Some(user) = TestUser::create("dop") else {
        return;
    };
    let svc = Service::new();
    let mut started = Started::default();
    let daemon = svc.start("equal", &mut started);
    let daemon_pid = started.children[daemon].id();
    let root = RootUntouched::new(&mut started, Some(daemon_pid));
    let mut exec = svc.coloc(&["exec", "--malleable", "--name", "theirs", "--"]);
    exec.args(KERNEL);
    let child = as_user(&user, &exec)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    started.children.push(child);
    let mut pid = 0;
    wait_for("the user's kernel running its program", || {
        let s = svc.status();
        running_their_commands(&s)
            && s.apps.iter().any(|a| {
                pid = a.pid;
                a.state == "running" && a.uid == user.uid
            })
    });
    started.pids.push(pid);
    let app = svc.status().apps.remove(0);
    assert!(
        !app.notes.iter().any(|n| n.contains("not managed")),
        "{app:?}"
    );
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    let record = environ
        .split(|b| *b == 0)
        .find_map(|v| v.strip_prefix(b"COLOC_OMP_RECORD="))
        .map(|v| PathBuf::from(String::from_utf8_lossy(v).into_owned()))
        .expect("the record's path in the app's environment");
    use std::os::unix::fs::MetadataExt;
    assert_eq!(std::fs::metadata(&record).unwrap().uid(), user.uid);
    wait_for("the shim to map the record", || {
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
        maps.contains("libcoloc_omp") && maps.contains(record.to_str().unwrap())
    });
    root.check(&svc.log());
    // A daemon that stops removes the record, the user's as its own.
    let daemon = &mut started.children[daemon];
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(daemon.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert!(daemon.wait().unwrap().success(), "{}", svc.log());
    assert!(!record.exists(), "{} outlived the daemon", record.display());
    drop(started);
    drop(user);
}

/// An unprivileged user is refused on root's process and accepted on its
/// own; its status shows its own apps only.
#[test]
fn a_user_manages_only_its_own_processes() {
    if !is_root() {
        return;
    }
    let Some(user) = TestUser::create("dmn") else {
        return;
    };
    let svc = Service::new();
    let mut started = Started::default();
    let d = svc.start("equal", &mut started);
    // root_pid below is attached by root; this one is left alone.
    let daemon_pid = started.children[d].id();
    let root = RootUntouched::new(&mut started, Some(daemon_pid));
    let as_user = |cmd: &mut Command| as_user(&user, cmd);
    let root_pid = started.sleeper();
    let own = as_user(Command::new("sleep").arg("60")).spawn().unwrap();
    let own_pid = own.id();
    started.children.push(own);

    let out = as_user(&mut svc.coloc(&["attach", &root_pid.to_string()]))
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(stderr.contains("belongs to uid 0"), "{stderr}");
    assert!(svc.log().contains("refused"), "{}", svc.log());

    let out = as_user(&mut svc.coloc(&["attach", &own_pid.to_string()]))
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("managing process"), "{stdout}");
    assert!(stdout.contains("DoP is not managed"), "{stdout}");

    // Root attaches its own; the user can neither release nor see it.
    let out = svc
        .coloc(&["attach", &root_pid.to_string()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out).1);
    let out = as_user(&mut svc.coloc(&["release", &root_pid.to_string()]))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        text(&out).1.contains("may release only its own"),
        "{}",
        text(&out).1
    );
    let out = as_user(&mut svc.coloc(&["status", "--json"]))
        .output()
        .unwrap();
    let seen: Status = serde_json::from_str(&text(&out).0).unwrap();
    let pids: Vec<u32> = seen.apps.iter().map(|a| a.pid).collect();
    assert_eq!(pids, vec![own_pid]);
    assert_eq!(svc.status().apps.len(), 2);

    // Released: its CPUs are back.
    let out = as_user(&mut svc.coloc(&["release", &own_pid.to_string()]))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out).1);
    let here = allowed_here();
    for (tid, cpus) in affinities(own_pid) {
        assert_eq!(cpus, here, "thread {tid} kept coloc's CPUs after release");
    }
    root.check(&svc.log());
    drop(started);
    drop(user);
}

/// Short commands in a row and at once: each exits with its own status, and
/// the daemon is left with nothing managed and still serving.
#[test]
fn short_execs_in_a_row_and_at_once_all_finish() {
    if !is_root() {
        return;
    }
    let svc = Service::new();
    let mut started = Started::default();
    let daemon = svc.start("equal", &mut started);
    for i in 0..50 {
        let code = i % 3;
        let out = svc
            .coloc(&["exec", "--", "sh", "-c", &format!("exit {code}")])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(code), "{}", text(&out).1);
    }
    let at_once: Vec<Child> = (0..10)
        .map(|_| {
            svc.coloc(&["exec", "--", "true"])
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in at_once {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", text(&out).1);
    }
    wait_for("no app left", || svc.status().apps.is_empty());
    assert!(started.children[daemon].try_wait().unwrap().is_none());
    assert!(!svc.log().contains("ERROR"), "{}", svc.log());
}

/// `coloc exec --cap-threads` hands the command the runtimes' thread-count
/// variables at the team of its launch (`native` plans no DoP: `--threads`),
/// the JVM's cap after the options its own environment had; without the
/// flag none is set.
#[test]
fn exec_cap_threads_sets_the_runtimes_variables() {
    if !is_root() {
        return;
    }
    let svc = Service::new();
    let mut started = Started::default();
    svc.start("native", &mut started);
    let show = "echo \"$GOMAXPROCS|$OPENBLAS_NUM_THREADS|$JAVA_TOOL_OPTIONS\"";
    let run = |flags: &[&str]| {
        let mut args = vec!["exec", "--threads", "1"];
        args.extend(flags);
        args.extend(["--", "sh", "-c", show]);
        let out = svc
            .coloc(&args)
            .env("JAVA_TOOL_OPTIONS", "-Xmx64m")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out).1);
        let (stdout, stderr) = text(&out);
        (stdout.trim().to_string(), stderr)
    };
    let (vars, said) = run(&["--cap-threads"]);
    assert_eq!(vars, "1|1|-Xmx64m -XX:ActiveProcessorCount=1");
    // It says what it found in the program and the levers that act.
    assert!(
        said.contains(
            "levers: placement, no DoP channel (not malleable), thread caps at launch (1)"
        ),
        "{said}"
    );
    let (vars, said) = run(&[]);
    assert_eq!(vars, "||-Xmx64m");
    assert!(!said.contains("levers"), "{said}");
}

/// With no daemon, `coloc exec` says so; `--or-run` runs the command
/// unmanaged and exits with its status.
#[test]
fn exec_without_a_daemon_says_so_or_runs_unmanaged() {
    let dir = tempfile::tempdir().unwrap();
    let socket: &Path = &dir.path().join("none.sock");
    let out = coloc()
        .args(["exec", "--socket"])
        .arg(socket)
        .args(["--", "sh", "-c", "exit 7"])
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr.contains("no coloc daemon"), "{stderr}");
    assert!(stderr.contains("--or-run"), "{stderr}");
    let out = coloc()
        .args(["exec", "--or-run", "--socket"])
        .arg(socket)
        .args(["--", "sh", "-c", "exit 7"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(7), "{}", text(&out).1);
}

/// A request of another protocol version is refused, naming both versions.
#[test]
fn a_request_of_another_protocol_version_is_refused() {
    if !is_root() {
        return;
    }
    use std::io::{BufRead, BufReader, Write};
    let svc = Service::new();
    let mut started = Started::default();
    svc.start("native", &mut started);
    let mut s = std::os::unix::net::UnixStream::connect(svc.socket()).unwrap();
    s.write_all(b"{\"v\":99,\"request\":\"status\"}\n").unwrap();
    let mut line = String::new();
    BufReader::new(s).read_line(&mut line).unwrap();
    assert!(line.contains("protocol version 99"), "{line}");
}

/// The tmux server of one test, ended with the test.
struct Tmux(String);

impl Tmux {
    fn cmd(&self) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.0]);
        c
    }

    fn capture(&self) -> String {
        let out = self
            .cmd()
            .args(["capture-pane", "-p", "-t", "top"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").status();
    }
}

/// `coloc top` in a real terminal (tmux): the policy, a line per CPU with
/// the app planned there, the app's row; `q` quits it.
#[test]
fn top_shows_the_apps_per_cpu_in_a_terminal() {
    if !is_root() {
        return;
    }
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("skipped: tmux is not installed (scripts/setup installs it)");
        return;
    }
    let svc = Service::new();
    let mut started = Started::default();
    svc.start("equal", &mut started);
    let pid = started.sleeper();
    let out = svc
        .coloc(&["attach", &pid.to_string(), "--name", "napper"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out).1);

    let tmux = Tmux(format!("coloc-top-{}", std::process::id()));
    let top = format!(
        "{} top --interval 200ms --socket {}",
        env!("CARGO_BIN_EXE_coloc"),
        svc.socket().display()
    );
    let ok = tmux
        .cmd()
        .args([
            "new-session",
            "-d",
            "-s",
            "top",
            "-x",
            "120",
            "-y",
            "30",
            &top,
        ])
        .status()
        .unwrap();
    assert!(ok.success());
    let mut screen = String::new();
    wait_for("coloc top's screen", || {
        screen = tmux.capture();
        screen.contains("napper") && screen.contains("CPU   0")
    });
    assert!(screen.contains("policy equal"), "{screen}");
    let planned = screen
        .lines()
        .find(|l| l.contains("CPU") && l.contains("planned: napper"));
    assert!(planned.is_some(), "no CPU planned for the app:\n{screen}");
    assert!(screen.contains("1 managed app(s)"), "{screen}");

    tmux.cmd()
        .args(["send-keys", "-t", "top", "q"])
        .status()
        .unwrap();
    wait_for("coloc top to quit on q", || {
        !tmux
            .cmd()
            .args(["has-session", "-t", "top"])
            .status()
            .is_ok_and(|s| s.success())
    });
}
