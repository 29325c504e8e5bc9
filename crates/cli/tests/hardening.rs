//! Regressions of coloc under faults and hostile input, through the binary:
//! signals, bad `--epoch`, a closed stdout, runs whose apps all fail, logs in
//! files, `--db` in a missing directory, planted output files, hostile traces,
//! and a journal directory planted by another user.

mod common;

#[path = "../../linux/tests/support/users.rs"]
mod users;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use coloc_model::TraceEvent;
use common::{coloc, coloc_output, read_trace, run_command, text};
use users::TestUser;

/// A workload of one app running `argv`.
fn workload(dir: &Path, argv: &[&str]) -> PathBuf {
    let path = dir.join("w.toml");
    let cmd: Vec<String> = argv.iter().map(|a| format!("{a:?}")).collect();
    std::fs::write(
        &path,
        format!(
            "name = \"w\"\n[[app]]\nname = \"a\"\ncommand = [{}]\nthreads = 1\n",
            cmd.join(", ")
        ),
    )
    .unwrap();
    path
}

/// Whether `pid` exists and is not a zombie.
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        let state = s[s.rfind(')').unwrap() + 2..].chars().next();
        !matches!(state, Some('Z' | 'X'))
    })
}

/// `coloc run W --policy P --out OUT` in the background, stderr piped.
fn spawn_run(w: &Path, policy: &str, out: &Path, stdout: Stdio) -> std::process::Child {
    run_command(w, policy, out).stdout(stdout).spawn().unwrap()
}

/// The pid of the run's first app once its trace holds an `event` (within
/// 20 s): `start` once it has started, `applied` once a plan is in force.
fn started_pid(out: &Path, event: &str) -> u32 {
    let trace = out.join("trace.jsonl");
    let t0 = Instant::now();
    loop {
        let text = std::fs::read_to_string(&trace).unwrap_or_default();
        let events: Vec<serde_json::Value> = text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        if events.iter().any(|v| v["event"] == event) {
            if let Some(pid) = events
                .iter()
                .find_map(|v| (v["event"] == "start").then(|| v["pid"].as_u64())?)
            {
                return pid as u32;
            }
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "the app never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// SIGHUP (the terminal closed) and SIGQUIT killed coloc without restoring;
/// every terminating signal that can be handled now stops the run cleanly.
#[test]
fn sighup_and_sigquit_stop_the_run_and_restore() {
    for sig in [nix::sys::signal::SIGHUP, nix::sys::signal::SIGQUIT] {
        let dir = tempfile::tempdir().unwrap();
        let w = workload(dir.path(), &["sleep", "30"]);
        let out = dir.path().join("run");
        let mut child = spawn_run(&w, "equal", &out, Stdio::piped());
        // Wait until the app has started (its Start event is in the trace).
        let app_pid = started_pid(&out, "start");
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), sig).unwrap();
        let t0 = Instant::now();
        while child.try_wait().unwrap().is_none() {
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "{sig} did not stop coloc"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let output = child.wait_with_output().unwrap();
        let (_, err) = text(&output);
        assert!(!output.status.success());
        assert!(err.contains("interrupted"), "{sig}: {err}");
        assert!(!running(app_pid), "{sig}: the app is ended");
        let t = read_trace(&out);
        assert!(
            matches!(t.events.last(), Some(TraceEvent::End { .. })),
            "{sig}: the trace is closed"
        );
    }
}

/// `--epoch 0s` skipped the workload file's 1 ms check and spun forever.
#[test]
fn an_epoch_of_zero_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let w = workload(dir.path(), &["true"]);
    for epoch in ["0s", "31days"] {
        let o = coloc_output(&["run", w.to_str().unwrap(), "--epoch", epoch]);
        let (_, err) = text(&o);
        assert!(!o.status.success(), "--epoch {epoch} is refused");
        assert!(err.contains("between 1ms and 30 days"), "{err}");
    }
}

/// `coloc topo | head -1` panicked: Rust ignores SIGPIPE, so printing to a
/// closed pipe fails.
#[test]
fn a_closed_stdout_is_not_a_panic() {
    let mut child = coloc()
        .arg("topo")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The reader goes away before coloc writes.
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    let (_, err) = text(&output);
    assert!(!err.contains("panicked"), "{err}");
    assert!(output.status.success(), "{:?}: {err}", output.status);
}

/// A run in which every app failed to start exited with status 0; and its
/// logs, written to a file, were full of colour codes.
#[test]
fn a_run_whose_apps_all_fail_to_start_fails() {
    let dir = tempfile::tempdir().unwrap();
    let w = workload(dir.path(), &["/nonexistent/program"]);
    let out = dir.path().join("run");
    let o = coloc_output(&["run", w.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    let (_, err) = text(&o);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("every app instance failed"), "{err}");
}

#[test]
fn logs_written_to_a_file_have_no_colour_codes() {
    let dir = tempfile::tempdir().unwrap();
    let w = workload(dir.path(), &["/nonexistent/program"]);
    let out = dir.path().join("run");
    // stderr is a pipe here, as it is a file under `2> log`.
    let o = coloc_output(&["run", w.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    let (_, err) = text(&o);
    assert!(
        err.contains("/nonexistent/program"),
        "the error is logged: {err}"
    );
    assert!(!err.contains('\u{1b}'), "no escape codes: {err:?}");
}

/// `--db` in a directory that does not exist created the whole tree.
#[test]
fn a_db_in_a_missing_directory_is_an_error_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("no/such/dir/p.sqlite");
    let empty = dir.path().join("empty.json");
    std::fs::write(&empty, "").unwrap();
    let o = coloc_output(&[
        "profiles",
        "import",
        "--db",
        db.to_str().unwrap(),
        empty.to_str().unwrap(),
    ]);
    let (_, err) = text(&o);
    assert!(!o.status.success());
    assert!(err.contains("does not exist"), "{err}");
    assert!(!dir.path().join("no").exists(), "no directory was created");
}

/// A `trace.jsonl` symlink planted in the output directory made coloc
/// overwrite the file it points to.
#[test]
fn a_planted_trace_link_is_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let w = workload(dir.path(), &["true"]);
    let out = dir.path().join("run");
    std::fs::create_dir(&out).unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    std::os::unix::fs::symlink(&victim, out.join("trace.jsonl")).unwrap();
    let o = coloc_output(&["run", w.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    let (_, err) = text(&o);
    assert!(!o.status.success());
    assert!(err.contains("trace.jsonl"), "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
}

/// `coloc report` aborted (out of memory) on a trace naming app 4,000,000,000.
#[test]
fn a_trace_naming_a_huge_app_index_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let w = workload(dir.path(), &["true"]);
    let out = dir.path().join("run");
    let o = coloc_output(&["run", w.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o).1);
    let path = out.join("trace.jsonl");
    let good = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = good.lines().collect();
    let hostile = r#"{"event":"arrive","t":0,"app":{"app":4000000000,"rep":0}}"#.to_string();
    lines.insert(1, &hostile);
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, lines.join("\n")).unwrap();
    let o = coloc_output(&["report", bad.to_str().unwrap()]);
    let (_, err) = text(&o);
    assert!(!o.status.success());
    assert!(err.contains("app 4000000000"), "{err}");
}

/// Without `XDG_RUNTIME_DIR`, journals went to `/tmp/coloc-<uid>` whoever
/// owned it: another user could create it first and plant journals there. It
/// is now refused, said so, and a directory of the user's own is used.
#[test]
fn a_journal_directory_planted_by_another_user_is_not_used() {
    let Some(victim) = TestUser::create("vic") else {
        return;
    };
    let Some(attacker) = TestUser::create("atk") else {
        return;
    };
    let mut started = common::service::Started::default();
    let root = common::service::RootUntouched::new(&mut started, None);
    let home = tempfile::tempdir().unwrap();
    victim.chown(home.path());
    let planted = std::env::temp_dir().join(format!("coloc-{}", victim.uid));
    let _ = std::fs::remove_dir_all(&planted);
    std::fs::create_dir(&planted).unwrap();
    attacker.chown(&planted);
    let o = Command::new("runuser")
        .args([
            "-u",
            &victim.name,
            "--",
            "env",
            "-u",
            "XDG_RUNTIME_DIR",
            "-u",
            "XDG_STATE_HOME",
        ])
        .arg(format!("HOME={}", home.path().display()))
        .arg(env!("CARGO_BIN_EXE_coloc"))
        .arg("restore")
        .output()
        .unwrap();
    std::fs::remove_dir_all(&planted).unwrap();
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains(&format!("{} is not trusted", planted.display())),
        "{err}"
    );
    root.check("");
}

/// `sched` and `memory` in a workload file were parsed and applied by no
/// policy. Under `native` (which decides neither) the app now runs with them,
/// as /proc shows: nice in `stat`, the slice in `sched`, the memory policy in
/// `numa_maps`.
#[test]
fn workload_sched_and_memory_settings_are_applied_under_native() {
    let dir = tempfile::tempdir().unwrap();
    let w = dir.path().join("w.toml");
    std::fs::write(
        &w,
        "name = \"w\"\n[[app]]\nname = \"a\"\ncommand = [\"sleep\", \"30\"]\nthreads = 1\n\
         memory = \"interleave\"\nsched = { nice = 7, slice_us = 20000 }\n",
    )
    .unwrap();
    let out = dir.path().join("run");
    let child = spawn_run(&w, "native", &out, Stdio::null());
    // The first apply after the start: the plan is in force on every thread.
    let pid = started_pid(&out, "applied");
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let nice: i32 = stat[stat.rfind(')').unwrap() + 2..]
        .split(' ')
        .nth(16)
        .unwrap()
        .parse()
        .unwrap();
    let sched = std::fs::read_to_string(format!("/proc/{pid}/sched")).unwrap_or_default();
    let slice = sched
        .lines()
        .find(|l| l.starts_with("se.slice"))
        .and_then(|l| l.split(':').nth(1))
        .map(|v| v.trim().to_string());
    let numa = std::fs::read_to_string(format!("/proc/{pid}/numa_maps")).unwrap_or_default();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::SIGTERM,
    )
    .unwrap();
    let output = child.wait_with_output().unwrap();
    let (_, err) = text(&output);
    assert_eq!(nice, 7, "{err}");
    // Where the kernel shows the slice (EEVDF, Linux 6.12+), it is the one asked.
    if let Some(slice) = slice {
        assert_eq!(slice, "20000000", "se.slice in ns: {err}");
    } else {
        eprintln!("/proc/{pid}/sched has no se.slice: slice not checked");
    }
    if numa.is_empty() {
        eprintln!("no numa_maps (kernel without NUMA): memory policy not checked");
    } else {
        assert!(numa.contains("interleave"), "{numa}");
    }
}

/// `coloc ARGS`, which must fail within 20 s (a FIFO used to block for
/// ever, `/dev/zero` to take 2 GB first); its stderr.
fn fails_at_once(args: &[&str]) -> String {
    use wait_timeout::ChildExt;
    let mut child = coloc()
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = child.wait_timeout(Duration::from_secs(20)).unwrap();
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
        panic!("coloc {args:?} did not end within 20 s");
    }
    let out = child.wait_with_output().unwrap();
    let (_, err) = text(&out);
    assert!(!out.status.success(), "coloc {args:?} succeeded: {err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

/// `coloc report /dev/zero` and `/dev/zero` as a workload, an hwloc XML, a
/// platform or a profile export took 2 GB before failing, and a FIFO blocked
/// the reader for ever. Every file a user names is read by one helper that
/// refuses what is not a regular file, at once and naming what it is.
#[test]
fn a_device_or_fifo_named_as_any_input_is_refused_unread() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let fifo = fifo.to_str().unwrap();
    let w = common::repo("examples/sim/tang-pairs.toml");
    let w = w.to_str().unwrap();
    let db = dir.path().join("store.db");
    let db = db.to_str().unwrap();
    for (path, kind) in [("/dev/zero", "a character device"), (fifo, "a FIFO")] {
        for args in [
            vec!["run", path],
            vec!["report", path],
            vec!["topo", "--xml", path],
            vec!["sim", w, "--platform", path],
            vec!["profiles", "import", path, "--db", db],
        ] {
            let err = fails_at_once(&args);
            assert!(err.contains(kind), "coloc {args:?}: {err}");
        }
    }
}

/// `coloc topo|policies|restore > /dev/full` panicked (rc 101): output that
/// cannot be written is an error, said when stderr can be written.
#[test]
fn output_to_a_full_device_is_an_error_not_a_panic() {
    for args in [&["topo"][..], &["policies"], &["restore"]] {
        let out = coloc()
            .args(args)
            .stdout(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open("/dev/full")
                    .unwrap(),
            )
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let (_, err) = text(&out);
        assert_eq!(out.status.code(), Some(1), "coloc {args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(err.contains("No space left on device"), "{err}");
    }
}

/// `coloc top` without a terminal panicked: it says it needs one.
#[test]
fn top_without_a_terminal_says_it_needs_one() {
    let out = coloc()
        .args(["top", "--socket", "/nonexistent/coloc.sock"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("draws on a terminal"), "{err}");
}

/// Modes of `path` and of everything below it.
fn modes(path: &Path, out: &mut Vec<(PathBuf, u32)>) {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(path).unwrap();
    out.push((path.to_path_buf(), meta.mode() & 0o777));
    if meta.is_dir() {
        for e in std::fs::read_dir(path).unwrap().flatten() {
            modes(&e.path(), out);
        }
    }
}

/// `coloc ARGS` under `umask 000`.
fn under_umask_000(args: &[&str]) -> Command {
    let mut c = Command::new("sh");
    c.args([
        "-c",
        "umask 000; exec \"$@\"",
        "sh",
        env!("CARGO_BIN_EXE_coloc"),
    ])
    .args(args)
    .env("COLOC_JOURNAL_DIR", common::own_journal())
    .env(common::SHARE_MACHINE, "1");
    c
}

/// Under `umask 000`, runs' output directories and the daemon's `--trace`
/// were world-writable: they are 0755 and 0644 whatever the umask.
#[test]
fn outputs_are_not_writable_by_others_under_umask_000() {
    let dir = tempfile::tempdir().unwrap();
    let w = workload(dir.path(), &["true"]);
    let out = dir.path().join("a/b/run");
    let o = under_umask_000(&["run", w.to_str().unwrap(), "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o).1);
    let mut found = Vec::new();
    modes(&dir.path().join("a"), &mut found);
    assert!(found.len() >= 4, "{found:?}");
    let open: Vec<_> = found.iter().filter(|(_, m)| m & 0o022 != 0).collect();
    assert!(open.is_empty(), "writable by others: {open:?}");

    if !nix::unistd::geteuid().is_root() {
        return;
    }
    let trace = dir.path().join("daemon.jsonl");
    let socket = dir.path().join("s.sock");
    let mut daemon = under_umask_000(&[
        "daemon",
        "--foreground",
        "--trace",
        trace.to_str().unwrap(),
        "--socket",
        socket.to_str().unwrap(),
        "--state",
        dir.path().join("state").to_str().unwrap(),
    ])
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let until = Instant::now() + Duration::from_secs(30);
    while std::os::unix::net::UnixStream::connect(&socket).is_err() {
        assert!(Instant::now() < until, "the daemon never listened");
        std::thread::sleep(Duration::from_millis(50));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(daemon.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    daemon.wait().unwrap();
    let mut found = Vec::new();
    modes(&trace, &mut found);
    assert_eq!(found[0].1, 0o644, "{found:?}");
}

/// `--out` through a symlinked directory wrote where the link led: a link
/// another user planted on the way is refused, and nothing is written where
/// it points; the caller's own links are followed.
#[test]
fn an_out_dir_through_another_users_symlink_is_refused() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: giving a link to another user needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let w = workload(dir.path(), &["true"]);
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let planted = dir.path().join("planted");
    std::os::unix::fs::symlink(&elsewhere, &planted).unwrap();
    // nobody's link, as another user would plant it in /tmp.
    std::os::unix::fs::lchown(&planted, Some(65534), None).unwrap();
    for out in [planted.clone(), planted.join("run")] {
        let o = coloc()
            .args(["run", w.to_str().unwrap(), "--out", out.to_str().unwrap()])
            .output()
            .unwrap();
        let (_, err) = text(&o);
        assert!(!o.status.success(), "--out {}: {err}", out.display());
        assert!(err.contains("another user's link"), "{err}");
    }
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    // A link of the caller's own is followed.
    let mine = dir.path().join("mine");
    std::os::unix::fs::symlink(&elsewhere, &mine).unwrap();
    let o = coloc()
        .args([
            "run",
            w.to_str().unwrap(),
            "--out",
            mine.join("run").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o).1);
    assert!(elsewhere.join("run").is_dir());
}

/// `daemon.log` was never rotated: a detached daemon moves it to
/// `daemon.log.1` once it is over 16 MiB and goes on in a new one.
#[test]
fn a_detached_daemons_log_is_rotated_when_it_grows() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal");
    let socket = dir.path().join("d.sock");
    let out = coloc()
        .args(["daemon", "--socket", socket.to_str().unwrap()])
        .args(["--state", dir.path().join("state").to_str().unwrap()])
        .env("COLOC_JOURNAL_DIR", &journal)
        .output()
        .unwrap();
    let (said, err) = text(&out);
    assert!(out.status.success(), "{err}");
    // "coloc daemon PID listening on ..."
    let pid: i32 = said.split_whitespace().nth(2).unwrap().parse().unwrap();
    struct Stop(i32);
    impl Drop for Stop {
        fn drop(&mut self) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(self.0),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
    }
    let _stop = Stop(pid);
    let log = journal.join("daemon.log");
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        f.write_all(&vec![b'.'; 17 << 20]).unwrap();
    }
    let old = journal.join("daemon.log.1");
    let until = Instant::now() + Duration::from_secs(60);
    while !old.exists() {
        assert!(Instant::now() < until, "daemon.log was not rotated");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(std::fs::metadata(&old).unwrap().len() > 17 << 20);
    // The daemon writes to the new one.
    let until = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(&log).is_ok_and(|t| t.contains("log rotated")) {
        assert!(Instant::now() < until, "nothing in the new daemon.log");
        std::thread::sleep(Duration::from_millis(200));
    }
    use std::os::unix::fs::MetadataExt;
    assert_eq!(std::fs::metadata(&log).unwrap().mode() & 0o777, 0o600);
}

/// `coloc run` on a terminal that hung up panicked (rc 101) writing to it.
/// Its stdin, stdout and stderr are a pseudo-terminal, its controlling one
/// (a session of its own); the terminal's master end is closed while the
/// app runs, so the kernel hangs the terminal up (SIGHUP, then every write
/// fails). coloc stops as on any stop signal: an ordinary exit status, not a
/// panic nor the signal, the app ended, no journal left (every setting
/// restored, docs/safety.md).
#[test]
fn a_run_on_a_terminal_that_hangs_up_stops_restoring_not_panicking() {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    let dir = tempfile::tempdir().unwrap();
    let w = workload(dir.path(), &["sleep", "30"]);
    let out = dir.path().join("run");
    let pty = nix::pty::openpty(None, None).unwrap();
    // openpty(3) leaves both ends inheritable: coloc holding the master too
    // would keep its terminal from ever hanging up.
    nix::fcntl::fcntl(
        &pty.master,
        nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
    )
    .unwrap();
    let mut cmd = run_command(&w, "equal", &out);
    let journal = common::journal_of(&cmd);
    cmd.stdin(Stdio::from(pty.slave.try_clone().unwrap()))
        .stdout(Stdio::from(pty.slave.try_clone().unwrap()))
        .stderr(Stdio::from(pty.slave.try_clone().unwrap()));
    // SAFETY: between fork and exec only async-signal-safe calls: setsid
    // and ioctl on the child's own stdin.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    drop(pty.slave);
    // Drain the terminal (a full one would block coloc's writes) until the
    // app runs under a plan.
    nix::fcntl::fcntl(
        &pty.master,
        nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
    )
    .unwrap();
    let mut master = std::fs::File::from(pty.master);
    let until = Instant::now() + Duration::from_secs(30);
    let app = loop {
        let _ = std::io::Read::read(&mut master, &mut [0u8; 4096]);
        let trace = std::fs::read_to_string(out.join("trace.jsonl")).unwrap_or_default();
        if trace.contains("\"applied\"") {
            let start = trace
                .lines()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .find_map(|v| (v["event"] == "start").then(|| v["pid"].as_u64())?);
            if let Some(pid) = start {
                break pid as u32;
            }
        }
        assert!(Instant::now() < until, "no plan applied in 30 s");
        assert!(child.try_wait().unwrap().is_none(), "coloc ended early");
        std::thread::sleep(Duration::from_millis(50));
    };
    drop(master);
    drop(cmd);
    let until = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < until, "coloc did not stop on the hang-up");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.signal(), None, "coloc was killed: {status}");
    assert_ne!(status.code(), Some(101), "coloc panicked");
    assert!(!running(app), "the app outlived coloc");
    let left: Vec<_> = std::fs::read_dir(&journal)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n.to_string_lossy().ends_with(".journal"))
        .collect();
    assert!(left.is_empty(), "journals left: {left:?}");
    println!("a hung-up terminal: coloc run exited with {status}");
}

/// `coloc status` on a terminal that hung up panicked (rc 101): every write
/// fails (EIO), and that is an error, exit status 1.
#[test]
fn status_on_a_hung_up_terminal_is_an_error_not_a_panic() {
    if !common::service::is_root() {
        return;
    }
    let svc = common::service::Service::new();
    let mut started = common::service::Started::default();
    svc.start("equal", &mut started);
    let pid = started.sleeper();
    // An app, so there are lines to write.
    let out = svc.coloc(&["attach", &pid.to_string()]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out).1);
    let pty = nix::pty::openpty(None, None).unwrap();
    drop(pty.master);
    let status = svc
        .coloc(&["status"])
        .stdin(Stdio::null())
        .stdout(Stdio::from(pty.slave.try_clone().unwrap()))
        .stderr(Stdio::from(pty.slave))
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(1), "coloc status: {status}");
}
