//! One manager per machine, machine-wide (docs/safety.md, One manager per
//! machine): two managers of different journal directories, or of different
//! users, planned the same CPUs without knowing of each other. Every manager
//! here runs without `COLOC_SHARE_MACHINE` (but the opt-in's test), so the
//! tests take turns ([`one_at_a_time`]). Users are made for the test
//! (`useradd`, removed after); each test checks from /proc that root's
//! process, and the daemon where there is one, are untouched.

mod common;
#[path = "../../linux/tests/support/users.rs"]
#[allow(dead_code)] // chown: the other tests' part of it
mod users;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use common::hostile;
use common::service::{as_uid, is_root, wait_for, RootUntouched, Started};
use common::{text, SHARE_MACHINE};
use users::TestUser;

/// Plays a hostile client's role when this binary is run as one.
#[test]
fn hostile_client_role() {
    hostile::play();
}

/// The managers of this file's tests would refuse one another's.
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

/// A directory of the test's that `user` (when given) owns and others can
/// enter, holding a workload of one `sleep 30`.
fn scratch(user: Option<&TestUser>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        dir.path().join("w.toml"),
        "name = \"w\"\n[[app]]\nname = \"nap\"\ncommand = [\"sleep\", \"30\"]\nthreads = 1\n",
    )
    .unwrap();
    if let Some(user) = user {
        user.chown(dir.path());
    }
    dir
}

/// `coloc ARGS` as a manager that does not share the machine, its journal,
/// data and home in `dir`.
fn manager(dir: &Path, args: &[&str]) -> Command {
    let mut c = common::coloc();
    c.args(args)
        .env_remove(SHARE_MACHINE)
        .env("COLOC_JOURNAL_DIR", dir.join("journal"))
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("HOME", dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c
}

/// `coloc daemon --foreground` with its socket (`d.sock`) and state in
/// `dir`.
fn daemon_in(dir: &Path) -> Command {
    manager(
        dir,
        &[
            "daemon",
            "--foreground",
            "--socket",
            dir.join("d.sock").to_str().unwrap(),
            "--state",
            dir.join("d.state").to_str().unwrap(),
        ],
    )
}

/// `coloc run w.toml` of `dir`.
fn run_in(dir: &Path) -> Command {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut c = manager(dir, &["run", dir.join("w.toml").to_str().unwrap()]);
    c.arg("--out").arg(dir.join(format!("out-{n}")));
    c
}

/// Spawns `cmd` (as `user` when given; its stderr to `stderr`) and waits
/// until its pid is registered as a manager; the child is kept in `started`.
fn registered(cmd: Command, user: Option<&TestUser>, stderr: Stdio, started: &mut Started) -> u32 {
    let mut cmd = match user {
        Some(u) => as_uid(u.uid, &cmd),
        None => cmd,
    };
    let child = cmd.stdout(Stdio::null()).stderr(stderr).spawn().unwrap();
    let pid = child.id();
    started.children.push(child);
    let at = started.children.len() - 1;
    wait_for(&format!("pid {pid}'s registration"), || {
        if let Some(status) = started.children[at].try_wait().unwrap() {
            let mut err = String::new();
            if let Some(mut e) = started.children[at].stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut err);
            }
            panic!("manager {pid} exited with {status}: {err}");
        }
        registrations().contains(&format!("@coloc-manager.{pid}."))
    });
    pid
}

fn registrations() -> String {
    std::fs::read_to_string("/proc/net/unix")
        .unwrap()
        .lines()
        .filter(|l| l.contains("@coloc-manager."))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs `cmd` (as `user` when given) to its end: it must be refused as
/// a second manager, naming `pid` and `owner`; returns its stderr.
fn refused_naming(cmd: Command, user: Option<&TestUser>, pid: u32, owner: &str) -> String {
    let mut cmd = match user {
        Some(u) => as_uid(u.uid, &cmd),
        None => cmd,
    };
    let out = cmd.stdin(Stdio::null()).output().unwrap();
    let (_, err) = text(&out);
    assert!(!out.status.success(), "not refused: {err}");
    assert!(
        err.contains("another coloc manages this machine's apps"),
        "{err}"
    );
    assert!(err.contains(&format!("pid {pid}, user {owner}")), "{err}");
    err
}

fn stop(child: &mut Child) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let _ = child.wait();
}

/// Two runs with journal directories of their own (`$COLOC_JOURNAL_DIR`)
/// each took their directory's lock and planned the same CPUs: the second
/// is refused, naming the first.
#[test]
fn a_run_with_its_own_journal_directory_beside_another_run_is_refused_naming_it() {
    if !is_root() {
        return;
    }
    let _turn = one_at_a_time();
    let (a, b) = (scratch(None), scratch(None));
    let mut started = Started::default();
    let root = RootUntouched::new(&mut started, None);
    let first = registered(run_in(a.path()), None, Stdio::piped(), &mut started);
    let err = refused_naming(run_in(b.path()), None, first, "root");
    assert!(err.contains(" run "), "{err}");
    assert!(
        err.contains("COLOC_SHARE_MACHINE=1"),
        "the opt-in is not named: {err}"
    );
    root.check("");
    assert!(
        common::service::start_time(first).is_some(),
        "the first run ended"
    );
}

/// A user's run did not see another user's (each had its own journal
/// directory and lock): it is refused, naming the other user's run.
#[test]
fn a_users_run_beside_another_users_run_is_refused_naming_it() {
    if !is_root() {
        return;
    }
    let _turn = one_at_a_time();
    let (Some(alice), Some(bob)) = (TestUser::create("oma"), TestUser::create("omb")) else {
        return;
    };
    let (a, b) = (scratch(Some(&alice)), scratch(Some(&bob)));
    let mut started = Started::default();
    let root = RootUntouched::new(&mut started, None);
    let first = registered(run_in(a.path()), Some(&alice), Stdio::piped(), &mut started);
    let err = refused_naming(run_in(b.path()), Some(&bob), first, &alice.name);
    // Bob cannot read alice's program: he is told so.
    assert!(err.contains("its program unreadable to you"), "{err}");
    root.check("");
}

/// Root's run did not see a user's own daemon (the user's lock is in the
/// user's journal directory): it is refused, naming the daemon.
#[test]
fn roots_run_beside_a_users_daemon_is_refused_naming_it() {
    if !is_root() {
        return;
    }
    let _turn = one_at_a_time();
    let Some(alice) = TestUser::create("omd") else {
        return;
    };
    let (a, b) = (scratch(Some(&alice)), scratch(None));
    let mut started = Started::default();
    let daemon = registered(
        daemon_in(a.path()),
        Some(&alice),
        Stdio::piped(),
        &mut started,
    );
    let root = RootUntouched::new(&mut started, Some(daemon));
    let err = refused_naming(run_in(b.path()), None, daemon, &alice.name);
    assert!(err.contains(" daemon "), "{err}");
    root.check("");
}

/// Any user may listen on a manager's name: root's daemon still starts,
/// since the listener's program is not coloc's (root can tell), and says
/// whom it did not count.
#[test]
fn a_users_fake_registration_does_not_stop_roots_daemon() {
    if !is_root() {
        return;
    }
    let _turn = one_at_a_time();
    let Some(mallory) = TestUser::create("omf") else {
        return;
    };
    let mut started = Started::default();
    let fake = hostile::spawn(mallory.uid, Path::new("/nonexistent"), "fake-manager:60");
    let fake_pid = fake.id();
    started.children.push(fake);
    wait_for("the fake registration", || {
        registrations().contains(&format!("@coloc-manager.{fake_pid}."))
    });
    let dir = scratch(None);
    let log = dir.path().join("daemon.log");
    let log_file = std::fs::File::create(&log).unwrap();
    let daemon = registered(daemon_in(dir.path()), None, log_file.into(), &mut started);
    let root = RootUntouched::new(&mut started, Some(daemon));
    wait_for("the daemon's socket", || {
        std::os::unix::net::UnixStream::connect(dir.path().join("d.sock")).is_ok()
    });
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(
        said.contains(&format!("pid {fake_pid}, user {}", mallory.name))
            && said.contains("its program is not this coloc's"),
        "{said}"
    );
    root.check(&said);
}

/// Tests and experiments that run several managers at once say so
/// (`COLOC_SHARE_MACHINE=1`): then two runs go on side by side.
#[test]
fn the_opt_in_lets_two_managers_share_the_machine() {
    if !is_root() {
        return;
    }
    let _turn = one_at_a_time();
    let (a, b) = (scratch(None), scratch(None));
    let mut started = Started::default();
    let root = RootUntouched::new(&mut started, None);
    let mut runs: Vec<Child> = [a.path(), b.path()]
        .iter()
        .map(|d| {
            run_in(d)
                .env(SHARE_MACHINE, "1")
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    std::thread::sleep(Duration::from_secs(2));
    for r in &mut runs {
        assert!(r.try_wait().unwrap().is_none(), "a sharing run was refused");
    }
    // Neither registered: none sees them.
    for r in &runs {
        assert!(
            !registrations().contains(&format!("@coloc-manager.{}.", r.id())),
            "{}",
            registrations()
        );
    }
    for r in &mut runs {
        stop(r);
    }
    root.check("");
}
