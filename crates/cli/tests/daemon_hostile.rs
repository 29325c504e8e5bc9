//! Root's node service against a local user with hostile intent
//! (docs/service.md, Limits): each test names the defect it pins. The user is
//! made for the test (`useradd`, removed after), its clients are this test
//! binary run as that user (`common::hostile`); each test then checks from
//! /proc that the daemon is the same process, answers root, and that root's
//! processes were not touched.

mod common;
#[path = "../../linux/tests/support/users.rs"]
#[allow(dead_code)] // chown: the other tests' part of it
mod users;

use std::process::Command;
use std::time::{Duration, Instant};

use common::hostile::{self, said, RSS_BOUND_KIB};
use common::service::{
    as_uid, is_root, rss_and_threads, wait_for, RootUntouched, Service, Started,
};
use common::text;
use users::TestUser;

/// Plays a hostile client's role when this binary is run as one.
#[test]
fn hostile_client_role() {
    hostile::play();
}

/// What an attack must leave as it was: the daemon (same process, still
/// answering root within a second) and a process of root's.
struct Witness {
    daemon: u32,
    root: RootUntouched,
}

impl Witness {
    fn new(daemon: u32, started: &mut Started) -> Witness {
        Witness {
            daemon,
            root: RootUntouched::new(started, Some(daemon)),
        }
    }

    /// The daemon is the same process, within its memory bound, and answers
    /// root's `status` within a second; root's process is as it was.
    fn untouched(&self, svc: &Service) {
        self.root.check(&svc.log());
        let (rss, _) = rss_and_threads(self.daemon);
        assert!(rss < RSS_BOUND_KIB, "the daemon's RSS is {rss} KiB");
        let asked = Instant::now();
        let out = svc.coloc(&["status", "--json"]).output().unwrap();
        assert!(out.status.success(), "{}\n{}", text(&out).1, svc.log());
        // The process start is part of it; a second is the bar of the
        // issue, and a loaded CI machine is slow, not wrong: 5 s here, the
        // soak test (tests/daemon_soak.rs, a binary of its own) holds it to
        // the second.
        assert!(
            asked.elapsed() < Duration::from_secs(5),
            "{:?}",
            asked.elapsed()
        );
        assert!(
            !svc.status()
                .apps
                .iter()
                .any(|a| a.pid == self.root.root_pid),
            "root's process is managed"
        );
    }
}

fn setup(tag: &str) -> Option<(TestUser, Service, Started, Witness)> {
    if !is_root() {
        return None;
    }
    let user = TestUser::create(tag)?;
    let svc = Service::new();
    let mut started = Started::default();
    let d = svc.start("equal", &mut started);
    let daemon = started.children[d].id();
    let witness = Witness::new(daemon, &mut started);
    Some((user, svc, started, witness))
}

/// A request line without end was read whole (3 GB aborted the daemon): it
/// is refused at 64 KiB, and the daemon's memory stays within its bound.
#[test]
fn an_endless_request_line_no_longer_aborts_the_daemon() {
    let Some((user, svc, _started, witness)) = setup("long") else {
        return;
    };
    let out = hostile::spawn(user.uid, &svc.socket(), "long-line:268435456")
        .wait_with_output()
        .unwrap();
    let sent: usize = said(&out, "sent")[0].parse().unwrap();
    assert!(sent < 256 << 20, "the daemon took all {sent} bytes");
    let reply = &said(&out, "reply")[0];
    assert!(reply.contains("longer than 65536 bytes"), "{reply}");
    witness.untouched(&svc);
}

/// 2,000 idle connections made `thread::spawn` panic in the accept loop,
/// after which every client was refused: now a user's connections past its
/// bound are refused with the reason, the daemon keeps one thread for them
/// all, and root is answered while they are held.
#[test]
fn thousands_of_idle_connections_no_longer_deafen_the_daemon() {
    let Some((user, svc, _started, witness)) = setup("idle") else {
        return;
    };
    let (_, threads_before) = rss_and_threads(witness.daemon);
    let client = hostile::spawn(user.uid, &svc.socket(), "idle:2000:4");
    std::thread::sleep(Duration::from_secs(2));
    let (_, threads_during) = rss_and_threads(witness.daemon);
    witness.untouched(&svc);
    let out = client.wait_with_output().unwrap();
    let refused: usize = said(&out, "refused")[0].parse().unwrap();
    let connected: usize = said(&out, "connected")[0].parse().unwrap();
    assert_eq!(connected, 2000, "{}", String::from_utf8_lossy(&out.stdout));
    // 128 are the user's bound (docs/service.md, Limits).
    assert_eq!(
        refused,
        2000 - 128,
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        threads_during <= threads_before + 2,
        "threads {threads_before} -> {threads_during}"
    );
    // A root `coloc exec` is still admitted and run.
    let out = svc
        .coloc(&["exec", "--", "sh", "-c", "exit 3"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out).1);
    witness.untouched(&svc);
}

/// A connection that sent half a line held its thread for ever: it is
/// closed once its request is 5 s late.
#[test]
fn half_a_request_line_no_longer_holds_a_connection_for_ever() {
    let Some((user, svc, _started, witness)) = setup("half") else {
        return;
    };
    let out = hostile::spawn(user.uid, &svc.socket(), "half-line:50")
        .wait_with_output()
        .unwrap();
    let held: usize = said(&out, "held")[0].parse().unwrap();
    let ms: u64 = said(&out, "closed-after-ms")[0].parse().unwrap();
    assert_eq!(held, 50);
    assert!(
        (4_000..20_000).contains(&ms),
        "closed after {ms} ms (the request timeout is 5 s)"
    );
    witness.untouched(&svc);
}

/// `coloc exec --threads 4294967295` was accepted and the resense policies
/// allocated per thread until the daemon died: threads are bounded as in
/// workload files (0 to 4096) and the refusal names the field.
#[test]
fn an_exec_of_4294967295_threads_is_refused_naming_the_field() {
    let Some((user, svc, _started, witness)) = setup("thr") else {
        return;
    };
    let exec = svc.coloc(&["exec", "--threads", "4294967295", "--", "true"]);
    let out = as_uid(user.uid, &exec).output().unwrap();
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(stderr.contains("field `threads`"), "{stderr}");
    assert!(stderr.contains("0 to 4096"), "{stderr}");
    witness.untouched(&svc);
}

/// App names were unchecked: escape codes reached root's `coloc status`, a
/// name over 65,535 characters made it panic, 50 MB names grew the daemon.
/// Names given are refused unless 1 to 64 of `[A-Za-z0-9._-]`; a name taken
/// from a process's own `comm` is made into one; root's status shows no
/// control character.
#[test]
fn app_names_with_escape_codes_or_megabytes_never_reach_roots_terminal() {
    let Some((user, svc, mut started, witness)) = setup("name") else {
        return;
    };
    let huge = format!(
        "{{\"v\":1,\"request\":\"attach\",\"pid\":1,\"name\":\"{}\",\"class\":\"batch\"}}",
        "n".repeat(60_000)
    );
    for line in [hostile::BAD_LINES[0], huge.as_str()] {
        let role = format!("raw:{line}");
        let out = hostile::spawn(user.uid, &svc.socket(), &role)
            .wait_with_output()
            .unwrap();
        let reply = &said(&out, "reply")[0];
        assert!(reply.contains("field `name`"), "{reply}");
    }
    // A process of the user's that names itself with escape codes.
    let mut sh = Command::new("sh");
    sh.args([
        "-c",
        "printf '\\033]0;pwn\\007\\033[2J' > /proc/$$/comm; sleep 600 & wait",
    ]);
    let child = as_uid(user.uid, &sh).spawn().unwrap();
    // setpriv execs the shell: the child is it.
    let pid = child.id();
    started.children.push(child);
    wait_for("the shell to rename itself", || {
        std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.contains('\u{1b}'))
    });
    let attach = svc.coloc(&["attach", &pid.to_string()]);
    let out = as_uid(user.uid, &attach).output().unwrap();
    assert!(out.status.success(), "{}", text(&out).1);
    let out = svc.coloc(&["status"]).output().unwrap();
    let (stdout, _) = text(&out);
    assert!(
        !stdout.chars().any(|c| c.is_control() && c != '\n'),
        "{stdout:?}"
    );
    let app = svc
        .status()
        .apps
        .into_iter()
        .find(|a| a.pid == pid)
        .unwrap();
    assert!(
        coloc_model::workload::valid_app_name(&app.name).is_ok(),
        "{:?}",
        app.name
    );
    witness.untouched(&svc);
}

/// `coloc daemon --foreground` with `args` (and the test's journal
/// directory), which must refuse to start; its stderr.
fn daemon_refuses(svc: &Service, args: &[&str]) -> String {
    let out = common::coloc()
        .args(["daemon", "--foreground", "--policy", "native"])
        .args(args)
        .env("COLOC_JOURNAL_DIR", svc.journal())
        .output()
        .unwrap();
    let (_, err) = text(&out);
    assert!(!out.status.success(), "the daemon started with {args:?}");
    err
}

/// `--state PATH` renamed its file over whatever was at PATH (a device node
/// was replaced by a regular file) and `--socket PATH` deleted a regular
/// file there as a "stale socket". Only a regular file is replaced, only a
/// socket removed, a symlink never; and a daemon removes only its own
/// socket when it stops.
#[test]
fn state_and_socket_paths_are_checked_before_they_are_replaced_or_removed() {
    if !is_root() {
        return;
    }
    let svc = Service::new();
    let dir = svc.dir.path();
    let precious = dir.join("precious");
    std::fs::write(&precious, "keep me").unwrap();
    let link = dir.join("link");
    std::os::unix::fs::symlink(&precious, &link).unwrap();
    let state = dir.join("daemon.state");
    let socket = svc.socket();
    let s = |p: &std::path::Path| p.to_str().unwrap().to_string();
    for (args, said) in [
        (
            vec!["--socket", &s(&precious), "--state", &s(&state)],
            "is not a socket",
        ),
        (
            vec!["--socket", &s(&link), "--state", &s(&state)],
            "is not a socket",
        ),
        (
            vec!["--socket", &s(&socket), "--state", "/dev/null"],
            "a device",
        ),
        (
            vec!["--socket", &s(&socket), "--state", &s(&link)],
            "a symlink",
        ),
    ] {
        let args: Vec<&str> = args.iter().map(|a| a.as_ref()).collect();
        let err = daemon_refuses(&svc, &args);
        assert!(err.contains(said), "{args:?}: {err}");
    }
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "keep me");
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::metadata("/dev/null")
        .unwrap()
        .file_type()
        .is_char_device());
    // A daemon whose socket was replaced meanwhile leaves the new file.
    let mut started = Started::default();
    let d = svc.start("native", &mut started);
    std::fs::remove_file(&socket).unwrap();
    std::fs::write(&socket, "not a socket").unwrap();
    let daemon = &mut started.children[d];
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(daemon.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert!(daemon.wait().unwrap().success(), "{}", svc.log());
    assert_eq!(std::fs::read_to_string(&socket).unwrap(), "not a socket");
}

/// Two managers at once (a daemon and a `coloc run`, or two runs) planned
/// the same CPUs without knowing of each other. One manager per journal
/// directory: a run beside a daemon or another run is refused, naming the
/// manager; a run with a journal directory of its own goes on (tests and
/// experiments run many at once that way).
#[test]
fn a_run_beside_a_daemon_or_another_run_is_refused_naming_it() {
    if !is_root() {
        return;
    }
    let svc = Service::new();
    let workload = svc.dir.path().join("w.toml");
    std::fs::write(
        &workload,
        "name = \"w\"\n[[app]]\nname = \"nap\"\ncommand = [\"sleep\", \"30\"]\nthreads = 1\n",
    )
    .unwrap();
    let run = |out: &str| {
        let mut c = common::coloc();
        c.arg("run")
            .arg(&workload)
            .arg("--out")
            .arg(svc.dir.path().join(out))
            .env("COLOC_JOURNAL_DIR", svc.journal())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        c
    };
    let mut started = Started::default();
    let d = svc.start("native", &mut started);
    let daemon = started.children[d].id();
    let out = run("r1").output().unwrap();
    let (_, err) = text(&out);
    assert!(!out.status.success());
    assert!(
        err.contains("another coloc manages this machine's apps"),
        "{err}"
    );
    assert!(err.contains(&format!("pid {daemon}")), "{err}");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(daemon as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert!(started.children[d].wait().unwrap().success());
    // The daemon gone, a run starts; a second one beside it is refused.
    let first = run("r2").spawn().unwrap();
    let first_pid = first.id();
    started.children.push(first);
    wait_for("the first run's lock", || {
        std::fs::read_to_string(svc.journal().join("manager.lock"))
            .is_ok_and(|l| l.contains(&format!("pid {first_pid}")))
    });
    let out = run("r3").output().unwrap();
    let (_, err) = text(&out);
    assert!(!out.status.success());
    assert!(err.contains(&format!("pid {first_pid}: ")), "{err}");
    assert!(err.contains(" run "), "{err}");
    // With a journal directory of its own, sharing the machine on purpose
    // (`common::coloc` says so), it is another experiment.
    let mut own = run("r4");
    own.env("COLOC_JOURNAL_DIR", common::own_journal());
    let mut own = own.spawn().unwrap();
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        own.try_wait().unwrap().is_none(),
        "a run in its own directory was refused"
    );
    // Stopped as a user would (its app ended with it).
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(own.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let _ = own.wait();
}
