//! The journal of changed settings (docs/safety.md): before coloc changes a
//! task's setting for the first time it appends the original value, and the
//! line is on disk (fsync) before the syscall that changes it, so a crash at any
//! point leaves enough to put the task back.
//!
//! One file per coloc process, `<journal_dir>/<coloc pid>.journal`, JSON lines:
//! a header naming the coloc process (pid and start time, so a reused pid is not
//! mistaken for a live coloc), then `changed` lines (a task and one original
//! value) and `released` lines (a task coloc restored and let go of). The file
//! is removed once everything is restored. A long-lived coloc (the daemon,
//! app after app) compacts it: once released lines outnumber the rest and
//! reach [`COMPACT_AFTER`], the journal is rewritten without the released
//! tasks' lines (aside, synced, renamed over it: a crash leaves the old
//! journal or the new one, both complete).
//!
//! A journal tells a later `coloc restore` which tasks to change, so whoever can
//! write one can have coloc change processes (docs/safety.md). The directory is
//! therefore created 0700 whatever the umask, and used only when it is a real
//! directory (not a symlink) owned by the caller that no one else may write
//! ([`secure_dir`]); a journal is created 0600 with `O_EXCL | O_NOFOLLOW`, never
//! opened through a planted file or link.

use std::collections::HashMap;
use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use coloc_model::CpuSet;
use serde::{Deserialize, Serialize};

use super::tasks::TaskId;
use crate::cgroup::Version;

/// A setting's value before coloc changed it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Original {
    /// CPU list, as `Cpus_allowed_list` shows it.
    Affinity(CpuSet),
    Nice(i32),
    /// `sched_runtime` in ns as `sched_getattr` reported it (the EEVDF slice).
    SliceNs(u64),
    /// Where pages of the task's process were before coloc moved them
    /// (journaled with the process's main thread).
    PageNodes(Vec<super::pages::PageRun>),
}

/// One line of a journal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "event")]
pub(crate) enum Entry {
    /// The coloc process that writes this journal.
    Coloc {
        pid: u32,
        start: u64,
    },
    Changed {
        pid: u32,
        tid: u32,
        start: u64,
        original: Original,
    },
    Released {
        pid: u32,
        tid: u32,
        start: u64,
    },
    /// coloc is about to make cgroup `rel` of the cpuset hierarchy mounted at
    /// `mount` (`slice.rs`); `enabled`: it also turns the cpuset controller
    /// on for the parent's children (cgroup v2's `subtree_control`).
    CgroupMade {
        mount: PathBuf,
        version: Version,
        rel: PathBuf,
        enabled: bool,
    },
    /// coloc is about to move process `pid` (started at `start`) from cgroup
    /// `from` into `to`, one of its own: its processes go back to `from`.
    CgroupMoved {
        mount: PathBuf,
        pid: u32,
        start: u64,
        from: PathBuf,
        to: PathBuf,
    },
    /// coloc moved the processes of its cgroup `rel` back and removed it.
    CgroupRemoved {
        mount: PathBuf,
        rel: PathBuf,
    },
}

impl Entry {
    pub fn changed(task: &TaskId, original: Original) -> Self {
        Entry::Changed {
            pid: task.pid,
            tid: task.tid,
            start: task.start,
            original,
        }
    }

    pub fn released(task: &TaskId) -> Self {
        Entry::Released {
            pid: task.pid,
            tid: task.tid,
            start: task.start,
        }
    }
}

/// Why the journal could not be written; coloc then changes nothing.
#[derive(Debug, thiserror::Error)]
#[error("writing the journal {}: {source}", path.display())]
pub struct JournalError {
    /// The journal file, or its directory when the directory is at fault.
    pub path: PathBuf,
    #[source]
    pub source: io::Error,
}

/// Makes `dir` fit to hold journals, or says why it is not: created (with its
/// parents) if missing, the last component with mode 0700 whatever the umask; an
/// existing one must be a directory, not a symlink, owned by the effective user.
/// One the caller owns that others could write (left by an older coloc under
/// a permissive umask) is tightened to 0700, and a warning says so.
pub fn secure_dir(dir: &Path) -> Result<(), JournalError> {
    let err = |source| JournalError {
        path: dir.to_path_buf(),
        source,
    };
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(err)?;
    }
    match DirBuilder::new().mode(0o700).create(dir) {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(err(e)),
        _ => {}
    }
    let meta = fs::symlink_metadata(dir).map_err(err)?;
    let refuse = |why: String| err(io::Error::new(io::ErrorKind::PermissionDenied, why));
    if !meta.file_type().is_dir() {
        return Err(refuse(
            "not a directory (a symlink or a file is refused)".into(),
        ));
    }
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return Err(refuse(format!(
            "owned by uid {}, not by this user (uid {me})",
            meta.uid()
        )));
    }
    if meta.mode() & 0o777 != 0o700 {
        if meta.mode() & 0o022 != 0 {
            tracing::warn!(
                "the journal directory {} was writable by others (mode {:o}); set to 0700",
                dir.display(),
                meta.mode() & 0o777
            );
        }
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700)).map_err(err)?;
    }
    Ok(())
}

/// This coloc's journal, created at the first change.
///
/// [`Journal::append`] waits for the disk. A plan that changes many threads
/// [`Journal::record`]s every original first and waits once ([`Journal::sync`])
/// before the first change: one fsync per apply instead of one per thread
/// and setting, which with thousands of threads held the loop for seconds.
#[derive(Debug)]
pub(crate) struct Journal {
    path: PathBuf,
    header: Entry,
    file: Option<File>,
    /// Lines written since the last sync.
    dirty: bool,
    /// Every line in the file after the header, in order (what a compaction
    /// keeps is chosen from them).
    lines: Vec<Entry>,
    /// How many of `lines` a compaction would drop.
    dead: usize,
    /// `changed` lines of each task (pid, tid, start) not released yet.
    changed: HashMap<(u32, u32, u64), usize>,
}

/// Released lines (and the lines of their tasks) a journal may hold before it
/// is compacted, once they are also the majority: a few hundred KiB of
/// lines, so a daemon's journal stays small whatever number of apps came and
/// went, and rewriting it costs O(1) per line appended (docs/safety.md, The
/// journal).
pub(crate) const COMPACT_AFTER: usize = 4096;

impl Journal {
    /// The journal of coloc process `pid` (started at `start`) in `dir`.
    pub fn new(dir: &Path, pid: u32, start: u64) -> Self {
        Self {
            path: journal_path(dir, pid),
            header: Entry::Coloc { pid, start },
            file: None,
            dirty: false,
            lines: Vec::new(),
            dead: 0,
            changed: HashMap::new(),
        }
    }

    /// Appends `entry` and waits until it (and every line before it) is on disk.
    pub fn append(&mut self, entry: &Entry) -> Result<(), JournalError> {
        self.record(entry)?;
        self.sync()
    }

    /// Waits until every line written is on disk.
    pub fn sync(&mut self) -> Result<(), JournalError> {
        if let (true, Some(file)) = (self.dirty, self.file.as_mut()) {
            file.sync_data().map_err(|source| JournalError {
                path: self.path.clone(),
                source,
            })?;
        }
        self.dirty = false;
        if self.dead >= COMPACT_AFTER && self.dead * 2 >= self.lines.len() {
            self.compact()?;
        }
        Ok(())
    }

    /// Rewrites the journal without released tasks' lines: written aside
    /// (`O_EXCL | O_NOFOLLOW`, 0600), synced, then renamed over the journal,
    /// which is appended to from then on.
    fn compact(&mut self) -> Result<(), JournalError> {
        let kept = live_lines(std::mem::take(&mut self.lines));
        let tmp = self.path.with_extension("journal.compact");
        let err = |source| JournalError {
            path: tmp.clone(),
            source,
        };
        let mut text = Vec::new();
        push_line(&mut text, &self.header);
        for e in &kept {
            push_line(&mut text, e);
        }
        // A leftover of a compaction cut short by a crash (a link is
        // removed, never followed).
        let _ = fs::remove_file(&tmp);
        let written = OpenOptions::new()
            .create_new(true)
            .append(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)
            .and_then(|mut f| {
                f.write_all(&text)?;
                f.sync_data()?;
                fs::rename(&tmp, &self.path)?;
                Ok(f)
            });
        match written {
            Ok(f) => {
                self.file = Some(f);
                self.lines = kept;
                self.dead = 0;
                Ok(())
            }
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                // The old journal is intact and still appended to.
                self.lines = kept;
                self.dead = 0;
                Err(err(e))
            }
        }
    }

    /// Appends `entry` without waiting for the disk: a [`Journal::sync`] must
    /// follow before anything it records the original of is changed.
    pub fn record(&mut self, entry: &Entry) -> Result<(), JournalError> {
        let err = |source| JournalError {
            path: self.path.clone(),
            source,
        };
        let mut line = Vec::new();
        if self.file.is_none() {
            if let Some(dir) = self.path.parent() {
                secure_dir(dir)?;
            }
            // A new file of ours only: an existing one (or a link planted in its
            // place) is refused, not appended to.
            let file = OpenOptions::new()
                .create_new(true)
                .append(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&self.path)
                .map_err(err)?;
            self.file = Some(file);
            push_line(&mut line, &self.header);
        }
        push_line(&mut line, entry);
        let file = self.file.as_mut().expect("opened above");
        file.write_all(&line).map_err(err)?;
        self.dirty = true;
        match entry {
            Entry::Changed {
                pid, tid, start, ..
            } => *self.changed.entry((*pid, *tid, *start)).or_default() += 1,
            Entry::Released { pid, tid, start } => {
                self.dead += 1 + self.changed.remove(&(*pid, *tid, *start)).unwrap_or(0)
            }
            _ => {}
        }
        self.lines.push(entry.clone());
        Ok(())
    }

    /// Removes the file: everything it recorded has been restored.
    pub fn remove(&mut self) -> Result<(), JournalError> {
        if self.file.take().is_none() {
            return Ok(());
        }
        match fs::remove_file(&self.path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(JournalError {
                path: self.path.clone(),
                source: e,
            }),
            _ => Ok(()),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// `lines` without what a released task left: its `changed` lines before its
/// `released` one and that line itself (a restore reads the rest the same
/// way, `recover.rs`). Cgroup lines are kept: they are few, and a restore
/// reads them as a history.
fn live_lines(lines: Vec<Entry>) -> Vec<Entry> {
    let mut dead = vec![false; lines.len()];
    let mut changed: HashMap<(u32, u32, u64), Vec<usize>> = HashMap::new();
    for (i, e) in lines.iter().enumerate() {
        match e {
            Entry::Changed {
                pid, tid, start, ..
            } => changed.entry((*pid, *tid, *start)).or_default().push(i),
            Entry::Released { pid, tid, start } => {
                dead[i] = true;
                for j in changed.remove(&(*pid, *tid, *start)).unwrap_or_default() {
                    dead[j] = true;
                }
            }
            _ => {}
        }
    }
    lines
        .into_iter()
        .zip(dead)
        .filter_map(|(e, d)| (!d).then_some(e))
        .collect()
}

fn push_line(buf: &mut Vec<u8>, entry: &Entry) {
    serde_json::to_writer(&mut *buf, entry).expect("journal entries serialize");
    buf.push(b'\n');
}

/// `<dir>/<pid>.journal`.
pub(crate) fn journal_path(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("{pid}.journal"))
}

/// The coloc pid a journal file name stands for.
pub(crate) fn journal_pid(path: &Path) -> Option<u32> {
    path.file_name()?
        .to_str()?
        .strip_suffix(".journal")?
        .parse()
        .ok()
}

/// Opens a journal for reading only if it is a regular file (not a link, not a
/// FIFO) owned by the effective user: anyone else's journal is not replayed.
pub(crate) fn open_own(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    let me = nix::unistd::geteuid().as_raw();
    if !meta.file_type().is_file() {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "not a regular file",
        ));
    }
    if meta.uid() != me {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("owned by uid {}, not by this user (uid {me})", meta.uid()),
        ));
    }
    Ok(file)
}

/// The longest journal read back (a journal holds a few lines per thread; a
/// bigger one was not written by coloc).
const MAX_JOURNAL_BYTES: u64 = 64 << 20;

/// Entries of a journal, and the number of lines that did not parse (a line cut
/// short by a crash while it was written is expected at the end).
pub(crate) fn read_entries(path: &Path) -> io::Result<(Vec<Entry>, usize)> {
    use std::io::Read;
    let mut entries = Vec::new();
    let mut bad = 0;
    let file = open_own(path)?.take(MAX_JOURNAL_BYTES);
    for line in BufReader::new(file).lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(&line) {
            Ok(e) => entries.push(e),
            Err(_) => bad += 1,
        }
    }
    Ok((entries, bad))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_after_a_header_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::new(&dir.path().join("sub"), 42, 7);
        let task = TaskId {
            pid: 1,
            tid: 2,
            start: 3,
        };
        let a = Entry::changed(&task, Original::Affinity("0-3".parse().unwrap()));
        let b = Entry::changed(&task, Original::SliceNs(3_000_000));
        j.append(&a).unwrap();
        j.append(&b).unwrap();
        j.append(&Entry::released(&task)).unwrap();
        assert_eq!(journal_pid(j.path()), Some(42));
        let text = fs::read_to_string(j.path()).unwrap();
        assert!(
            text.starts_with(r#"{"event":"coloc","pid":42,"start":7}"#),
            "{text}"
        );
        assert!(text.contains(r#""original":{"affinity":"0-3"}"#), "{text}");
        let (entries, bad) = read_entries(j.path()).unwrap();
        assert_eq!(bad, 0);
        assert_eq!(
            entries,
            [
                Entry::Coloc { pid: 42, start: 7 },
                a,
                b,
                Entry::released(&task)
            ]
        );
        j.remove().unwrap();
        assert!(!j.path().exists());
    }

    #[test]
    fn a_torn_last_line_is_counted_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("9.journal");
        fs::write(
            &path,
            "{\"event\":\"coloc\",\"pid\":9,\"start\":1}\n{\"event\":\"chan",
        )
        .unwrap();
        let (entries, bad) = read_entries(&path).unwrap();
        assert_eq!(entries.len(), 1);
        assert_eq!(bad, 1);
    }

    /// Under umask 000 the directory and the file would be world-writable,
    /// and anyone could then have root's `coloc restore` change their
    /// processes: modes are set explicitly.
    #[test]
    fn journals_are_private_under_a_permissive_umask() {
        let dir = tempfile::tempdir().unwrap();
        let old = nix::sys::stat::umask(nix::sys::stat::Mode::empty());
        let mut j = Journal::new(&dir.path().join("journal"), 7, 1);
        let appended = j.append(&Entry::released(&TaskId {
            pid: 1,
            tid: 1,
            start: 1,
        }));
        nix::sys::stat::umask(old);
        appended.unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().mode() & 0o777;
        assert_eq!(mode(&dir.path().join("journal")), 0o700);
        assert_eq!(mode(j.path()), 0o600);
    }

    #[test]
    fn a_journal_directory_others_can_write_is_tightened() {
        let dir = tempfile::tempdir().unwrap();
        let jd = dir.path().join("journal");
        fs::create_dir(&jd).unwrap();
        fs::set_permissions(&jd, fs::Permissions::from_mode(0o777)).unwrap();
        secure_dir(&jd).unwrap();
        assert_eq!(fs::metadata(&jd).unwrap().mode() & 0o777, 0o700);
    }

    #[test]
    fn a_symlinked_journal_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = dir.path().join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        let jd = dir.path().join("journal");
        std::os::unix::fs::symlink(&elsewhere, &jd).unwrap();
        let e = secure_dir(&jd).unwrap_err();
        assert_eq!(e.path, jd);
        assert!(e.to_string().contains("symlink"), "{e}");
    }

    /// A link planted where the journal will be is not followed: the file it
    /// points to is not appended to, and the change is refused.
    #[test]
    fn a_planted_journal_link_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        fs::write(&victim, "precious\n").unwrap();
        let jd = dir.path().join("journal");
        secure_dir(&jd).unwrap();
        std::os::unix::fs::symlink(&victim, journal_path(&jd, 9)).unwrap();
        let mut j = Journal::new(&jd, 9, 1);
        let task = TaskId {
            pid: 1,
            tid: 1,
            start: 1,
        };
        assert!(j.append(&Entry::released(&task)).is_err());
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");
        // Read back the same way, the link is not a journal either.
        assert!(read_entries(&journal_path(&jd, 9)).is_err());
    }

    #[test]
    fn nothing_written_nothing_to_remove() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::new(dir.path(), 5, 1);
        j.remove().unwrap();
        assert!(!j.path().exists());
    }
    /// The journal grew with every app a daemon managed and was never
    /// compacted: released tasks' lines are dropped once they are the
    /// majority, and what is left restores the same tasks.
    #[test]
    fn a_long_lived_journal_is_compacted_to_its_unreleased_tasks() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::new(dir.path(), 11, 5);
        let task = |n: u32| TaskId {
            pid: n,
            tid: n,
            start: u64::from(n),
        };
        let kept = task(1);
        j.append(&Entry::changed(&kept, Original::Nice(3))).unwrap();
        // Ten thousand apps come and go, each a line changed and released
        // (synced fifty at a time: a sync is where a journal is compacted).
        for n in 2..10_002 {
            j.record(&Entry::changed(&task(n), Original::Nice(0)))
                .unwrap();
            j.record(&Entry::released(&task(n))).unwrap();
            if n % 50 == 0 {
                j.sync().unwrap();
            }
        }
        let last = task(20_000);
        j.append(&Entry::changed(
            &last,
            Original::Affinity("0".parse().unwrap()),
        ))
        .unwrap();
        let (entries, bad) = read_entries(j.path()).unwrap();
        assert_eq!(bad, 0);
        assert!(
            entries.len() < COMPACT_AFTER * 2 + 3,
            "{} lines after 10,000 released apps",
            entries.len()
        );
        assert_eq!(entries[0], Entry::Coloc { pid: 11, start: 5 });
        assert_eq!(entries[1], Entry::changed(&kept, Original::Nice(3)));
        assert_eq!(
            entries.last(),
            Some(&Entry::changed(
                &last,
                Original::Affinity("0".parse().unwrap())
            ))
        );
        // Every task the journal still names is unreleased or released
        // after the compaction, never one released before it.
        let live = live_lines(entries[1..].to_vec());
        assert!(live.contains(&Entry::changed(&kept, Original::Nice(3))));
        assert!(live.len() <= 3, "{live:?}");
        // Nothing is left beside it, and it is still private.
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [std::ffi::OsString::from("11.journal")]);
        assert_eq!(fs::metadata(j.path()).unwrap().mode() & 0o777, 0o600);
    }

    /// What a compaction keeps: a task changed again after it was released
    /// keeps its new lines; a released one loses all of its own.
    #[test]
    fn compaction_keeps_what_a_restore_would_read() {
        let t = |n: u32| TaskId {
            pid: n,
            tid: n,
            start: 1,
        };
        let lines = vec![
            Entry::changed(&t(1), Original::Nice(1)),
            Entry::changed(&t(2), Original::Nice(2)),
            Entry::released(&t(1)),
            Entry::changed(&t(1), Original::Nice(5)),
            Entry::CgroupRemoved {
                mount: "/sys/fs/cgroup".into(),
                rel: "coloc.slice/x".into(),
            },
        ];
        assert_eq!(
            live_lines(lines.clone()),
            [lines[1].clone(), lines[3].clone(), lines[4].clone()]
        );
    }
}
