//! The journal of changed settings (DESIGN.md, Safety): before coloc changes a
//! task's setting for the first time it appends the original value, and the
//! line is on disk (fsync) before the syscall that changes it, so a crash at any
//! point leaves enough to put the task back.
//!
//! One file per coloc process, `<journal_dir>/<coloc pid>.journal`, JSON lines:
//! a header naming the coloc process (pid and start time, so a reused pid is not
//! mistaken for a live coloc), then `changed` lines (a task and one original
//! value) and `released` lines (a task coloc restored and let go of). The file
//! is removed once everything is restored.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use coloc_model::CpuSet;
use serde::{Deserialize, Serialize};

use super::tasks::TaskId;

/// A setting's value before coloc changed it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Original {
    /// CPU list, as `Cpus_allowed_list` shows it.
    Affinity(CpuSet),
    Nice(i32),
    /// `sched_runtime` in ns as `sched_getattr` reported it (the EEVDF slice).
    SliceNs(u64),
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
    pub path: PathBuf,
    #[source]
    pub source: io::Error,
}

/// This coloc's journal, created at the first change.
#[derive(Debug)]
pub(crate) struct Journal {
    path: PathBuf,
    header: Entry,
    file: Option<File>,
}

impl Journal {
    /// The journal of coloc process `pid` (started at `start`) in `dir`.
    pub fn new(dir: &Path, pid: u32, start: u64) -> Self {
        Self {
            path: journal_path(dir, pid),
            header: Entry::Coloc { pid, start },
            file: None,
        }
    }

    /// Appends `entry` and waits until it is on disk.
    pub fn append(&mut self, entry: &Entry) -> Result<(), JournalError> {
        let err = |source| JournalError {
            path: self.path.clone(),
            source,
        };
        let mut line = Vec::new();
        if self.file.is_none() {
            if let Some(dir) = self.path.parent() {
                fs::create_dir_all(dir).map_err(err)?;
            }
            let file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)
                .map_err(err)?;
            self.file = Some(file);
            push_line(&mut line, &self.header);
        }
        push_line(&mut line, entry);
        let file = self.file.as_mut().expect("opened above");
        file.write_all(&line).map_err(err)?;
        file.sync_data().map_err(err)
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

/// Entries of a journal, and the number of lines that did not parse (a line cut
/// short by a crash while it was written is expected at the end).
pub(crate) fn read_entries(path: &Path) -> io::Result<(Vec<Entry>, usize)> {
    let mut entries = Vec::new();
    let mut bad = 0;
    for line in BufReader::new(File::open(path)?).lines() {
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

    #[test]
    fn nothing_written_nothing_to_remove() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::new(dir.path(), 5, 1);
        j.remove().unwrap();
        assert!(!j.path().exists());
    }
}
