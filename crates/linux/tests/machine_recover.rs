//! Restoring after a crash: journals of dead coloc processes are replayed
//! against the tasks still alive, journals of live ones are left alone.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command};

use coloc_linux::machine::{
    recover_stale_journals, remove_stale_dop_records, secure_dir, RecoveryError,
};
use coloc_model::CpuSet;
use nix::sched::{sched_setaffinity, CpuSet as NixCpuSet};
use nix::unistd::Pid;
use support::{cpus_of, two_cpus, TestUser};

/// Start time (field 22 of stat) of a process.
fn start_of(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    after.split(' ').nth(19).unwrap().parse().unwrap()
}

/// A pid that no process has now: a child that has exited and been reaped.
fn dead_pid() -> u32 {
    let mut c = Command::new("true").spawn().unwrap();
    c.wait().unwrap();
    c.id()
}

fn pin(pid: u32, cpu: u32) {
    let mut set = NixCpuSet::new();
    set.set(cpu as usize).unwrap();
    sched_setaffinity(Pid::from_raw(pid as i32), &set).unwrap();
}

fn journal_line(pid: u32, start: u64, original: &CpuSet) -> String {
    format!(
        r#"{{"event":"changed","pid":{pid},"tid":{pid},"start":{start},"original":{{"affinity":"{original}"}}}}"#
    )
}

struct Killed(Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A `sleep` pinned to `cpu` (killed when dropped), and its pid.
fn pinned_sleeper(cpu: u32) -> (Killed, u32) {
    let sleeper = Killed(Command::new("sleep").arg("30").spawn().unwrap());
    let pid = sleeper.0.id();
    pin(pid, cpu);
    (sleeper, pid)
}

#[test]
fn a_dead_colocs_journal_is_replayed_and_deleted() {
    let Some(cpus) = two_cpus() else { return };
    let dir = tempfile::tempdir().unwrap();
    let last = cpus.iter().last().unwrap();
    let (_sleeper, pid) = pinned_sleeper(last);
    assert_eq!(cpus_of(pid, pid), Some(CpuSet::single(last)));

    let dead = dead_pid();
    let journal = dir.path().join(format!("{dead}.journal"));
    let gone = dead_pid();
    std::fs::write(
        &journal,
        format!(
            "{{\"event\":\"coloc\",\"pid\":{dead},\"start\":1}}\n{}\n{}\n{{\"event\":\"chan",
            journal_line(pid, start_of(pid), &cpus),
            journal_line(gone, 12345, &cpus),
        ),
    )
    .unwrap();

    let report = recover_stale_journals(dir.path(), Path::new("/proc")).unwrap();
    assert_eq!(cpus_of(pid, pid), Some(cpus.clone()), "affinity is back");
    assert!(!journal.exists(), "the stale journal is deleted");
    assert!(!report.is_empty());
    assert_eq!(report.restored.len(), 1, "{report}");
    assert_eq!(report.gone.len(), 1, "{report}");
    let text = report.to_string();
    assert!(text.contains(&format!("thread {pid}")), "{text}");
    assert!(text.contains(&format!("CPUs {cpus}")), "{text}");

    // Nothing left: a second pass has nothing to say.
    let again = recover_stale_journals(dir.path(), Path::new("/proc")).unwrap();
    assert!(again.is_empty(), "{again}");
}

#[test]
fn a_live_colocs_journal_is_left_alone() {
    let Some(cpus) = two_cpus() else { return };
    let dir = tempfile::tempdir().unwrap();
    let last = cpus.iter().last().unwrap();
    let (_sleeper, pid) = pinned_sleeper(last);
    // This test process plays the live coloc.
    let me = std::process::id();
    let journal = dir.path().join(format!("{me}.journal"));
    let text = format!(
        "{{\"event\":\"coloc\",\"pid\":{me},\"start\":{}}}\n{}\n",
        start_of(me),
        journal_line(pid, start_of(pid), &cpus)
    );
    std::fs::write(&journal, &text).unwrap();
    let report = recover_stale_journals(dir.path(), Path::new("/proc")).unwrap();
    assert!(report.is_empty(), "{report}");
    assert_eq!(report.live, [me]);
    assert_eq!(std::fs::read_to_string(&journal).unwrap(), text);
    assert_eq!(cpus_of(pid, pid), Some(CpuSet::single(last)), "not touched");
}

#[test]
fn a_reused_coloc_pid_does_not_keep_a_journal_alive() {
    let Some(cpus) = two_cpus() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (_sleeper, pid) = pinned_sleeper(cpus.first().unwrap());
    // The journal names this process's pid with another start time: the coloc
    // that wrote it is dead and its pid was reused.
    let me = std::process::id();
    let journal = dir.path().join(format!("{me}.journal"));
    std::fs::write(
        &journal,
        format!(
            "{{\"event\":\"coloc\",\"pid\":{me},\"start\":{}}}\n{}\n",
            start_of(me) + 1,
            journal_line(pid, start_of(pid), &cpus)
        ),
    )
    .unwrap();
    let report = recover_stale_journals(dir.path(), Path::new("/proc")).unwrap();
    assert!(report.live.is_empty(), "{report}");
    assert_eq!(report.restored.len(), 1, "{report}");
    assert_eq!(cpus_of(pid, pid), Some(cpus));
}

#[test]
fn a_missing_directory_holds_no_journal() {
    let report =
        recover_stale_journals(Path::new("/nonexistent/coloc-journals"), Path::new("/proc"))
            .unwrap();
    assert!(report.is_empty());
    assert_eq!(report.to_string(), "no settings left to restore");
}

/// Another user plants a journal naming one of the caller's processes in the
/// caller's journal directory: it is not replayed, and the process is not
/// touched.
#[test]
fn a_journal_planted_by_another_user_is_not_replayed() {
    let Some(cpus) = two_cpus() else { return };
    let Some(attacker) = TestUser::create("plant") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let last = cpus.iter().last().unwrap();
    let (_sleeper, pid) = pinned_sleeper(last);
    let dead = dead_pid();
    let journal = dir.path().join(format!("{dead}.journal"));
    std::fs::write(
        &journal,
        format!(
            "{{\"event\":\"coloc\",\"pid\":{dead},\"start\":1}}\n{}\n",
            journal_line(pid, start_of(pid), &cpus)
        ),
    )
    .unwrap();
    attacker.chown(&journal);
    let report = recover_stale_journals(dir.path(), Path::new("/proc")).unwrap();
    assert_eq!(report.ignored.len(), 1, "{report}");
    assert!(report.restored.is_empty(), "{report}");
    assert!(journal.exists(), "left in place");
    assert_eq!(cpus_of(pid, pid), Some(CpuSet::single(last)), "not touched");
}

/// A journal directory another user made (the predictable `/tmp/coloc-<uid>`
/// created first by someone else) is neither written to nor replayed.
#[test]
fn a_journal_directory_owned_by_another_user_is_refused() {
    let Some(attacker) = TestUser::create("dir") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let jd = dir.path().join("coloc-victim");
    std::fs::create_dir(&jd).unwrap();
    std::fs::set_permissions(&jd, std::fs::Permissions::from_mode(0o777)).unwrap();
    attacker.chown(&jd);
    let e = secure_dir(&jd).unwrap_err();
    assert!(e.to_string().contains("owned by uid"), "{e}");
    match recover_stale_journals(&jd, Path::new("/proc")) {
        Err(RecoveryError::Untrusted { dir, .. }) => assert_eq!(dir, jd),
        other => panic!("expected the directory to be refused, got {other:?}"),
    }
}

/// A symlink planted as the journal directory is refused.
#[test]
fn a_symlinked_journal_directory_is_not_replayed() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let jd = dir.path().join("link");
    std::os::unix::fs::symlink(&real, &jd).unwrap();
    assert!(matches!(
        recover_stale_journals(&jd, Path::new("/proc")),
        Err(RecoveryError::Untrusted { .. })
    ));
}

/// A crashed coloc's DoP records stay in /dev/shm (RAM) until reboot unless
/// removed; those of live processes are kept.
#[test]
fn dop_records_of_a_dead_coloc_are_removed() {
    let dir = tempfile::tempdir().unwrap();
    let dead = dead_pid();
    let me = std::process::id();
    let stale = dir.path().join(format!("coloc-{dead}-0-0.0"));
    let live = dir.path().join(format!("coloc-{me}-0-0.0"));
    let other = dir.path().join("not-coloc");
    for f in [&stale, &live, &other] {
        std::fs::write(f, "").unwrap();
    }
    let removed = remove_stale_dop_records(dir.path(), Path::new("/proc")).unwrap();
    assert_eq!(removed, std::slice::from_ref(&stale));
    assert!(!stale.exists() && live.exists() && other.exists());
}

/// A zombie: a child that has exited and is not reaped yet (reaped when
/// dropped).
struct Zombie(Child);

impl Zombie {
    fn new() -> Zombie {
        let child = Command::new("true").spawn().unwrap();
        let pid = child.id();
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
        }) {
            assert!(std::time::Instant::now() < until, "no zombie");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        Zombie(child)
    }
}

impl Drop for Zombie {
    fn drop(&mut self) {
        let _ = self.0.wait();
    }
}

/// A killed coloc (a daemon) still a zombie, unreaped by its parent, was
/// taken for alive: its journal was skipped and its successor re-adopted the
/// apps with coloc's pinning as their own CPUs. A zombie is dead: its
/// journal is replayed and its DoP records removed.
#[test]
fn a_zombie_colocs_journal_is_replayed_not_left_alone() {
    let Some(cpus) = two_cpus() else { return };
    let dir = tempfile::tempdir().unwrap();
    let last = cpus.iter().last().unwrap();
    let (_sleeper, pid) = pinned_sleeper(last);
    let zombie = Zombie::new();
    let z = zombie.0.id();
    let journal = dir.path().join(format!("{z}.journal"));
    std::fs::write(
        &journal,
        format!(
            "{{\"event\":\"coloc\",\"pid\":{z},\"start\":{}}}\n{}\n",
            start_of(z),
            journal_line(pid, start_of(pid), &cpus)
        ),
    )
    .unwrap();
    let report = recover_stale_journals(dir.path(), Path::new("/proc")).unwrap();
    assert!(report.live.is_empty(), "{report}");
    assert_eq!(report.restored.len(), 1, "{report}");
    assert_eq!(cpus_of(pid, pid), Some(cpus));
    assert!(!journal.exists());

    let shm = tempfile::tempdir().unwrap();
    let record = shm.path().join(format!("coloc-{z}-0-0.0"));
    std::fs::write(&record, "").unwrap();
    let removed = remove_stale_dop_records(shm.path(), Path::new("/proc")).unwrap();
    assert_eq!(removed, [record]);
    drop(zombie);
}
