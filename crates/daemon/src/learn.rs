//! What the node service learns of the programs it manages
//! (docs/knowledge.md, When): every event the loop records goes through a
//! [`Learner`]; an app's record is written to the store when it exits, and
//! a snapshot of it every [`SNAPSHOT_EVERY`] while it runs, so a service
//! that runs for months is learned too and a daemon killed with `kill -9`
//! loses at most that much.
//!
//! A store that cannot be opened, or that SQLite reports damaged, never
//! stops the service: a damaged file is set aside and a new one started
//! ([`Store::open_or_set_aside`]); any other failure is said once and the
//! daemon goes on without learning.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use coloc_model::knowledge::{Learner, ProgramKey, Record, Source, SNAPSHOT_EVERY};
use coloc_model::profile::PlatformFingerprint;
use coloc_model::TraceEvent;
use coloc_store::{Store, StoreError};

use crate::shared::{Kind, Shared};

/// The learner, the store it writes to, and what identifies each app.
#[derive(Debug)]
pub struct Learning {
    learner: Learner,
    store: Option<Store>,
    path: PathBuf,
    platform: PlatformFingerprint,
    shared: Shared,
    proc_root: PathBuf,
    /// Executable hashes by file identity, so a program started again is
    /// not read again.
    hashes: HashMap<(u64, u64, u64, SystemTime), String>,
}

impl Learning {
    /// Opens the store at `path` for `platform`; the lines say what was
    /// done (a damaged store set aside, or learning off and why).
    pub fn open(
        path: &Path,
        platform: PlatformFingerprint,
        shared: Shared,
        proc_root: &Path,
    ) -> (Learning, Vec<String>) {
        let mut said = Vec::new();
        let store = open(path, &mut said);
        if let Some(s) = &store {
            if let Ok(known) = s.programs(Some(&platform)) {
                said.push(format!(
                    "knowledge: {} program(s) known on this platform in {}",
                    known.len(),
                    path.display()
                ));
            }
        }
        let learning = Learning {
            learner: Learner::new(Source::Daemon).with_snapshots(SNAPSHOT_EVERY),
            store,
            path: path.to_path_buf(),
            platform,
            shared,
            proc_root: proc_root.to_path_buf(),
            hashes: HashMap::new(),
        };
        (learning, said)
    }

    /// Takes one event the loop recorded; writes the records it completes.
    pub fn feed(&mut self, event: &TraceEvent) {
        if let TraceEvent::Start { app, pid, .. } = event {
            if !self.learner.knows(app.app) {
                if let Some((program, name)) = self.identify(app.app, *pid) {
                    self.learner.identify(app.app, program, &name);
                }
            }
        }
        let records = self.learner.feed(event);
        if !records.is_empty() {
            self.put(&records);
        }
    }

    /// Writes `records`; a store found damaged is set aside and the write
    /// made once more into the new one.
    fn put(&mut self, records: &[Record]) {
        let Some(store) = &self.store else { return };
        match store.put_records(&self.platform, records) {
            Ok(_) => {}
            Err(StoreError::Corrupt { .. } | StoreError::Damaged { .. }) => {
                let mut said = Vec::new();
                self.store = open(&self.path, &mut said);
                for s in said {
                    tracing::warn!("{s}");
                }
                if let Some(store) = &self.store {
                    if let Err(e) = store.put_records(&self.platform, records) {
                        tracing::warn!("{e}; learning stops");
                        self.store = None;
                    }
                }
            }
            Err(e) => {
                tracing::warn!("{e}; learning stops");
                self.store = None;
            }
        }
    }

    /// App `app`'s program and name: for `exec` (and a Slurm task), the
    /// program it asked for (the process runs coloc's client, or Slurm's,
    /// until it is admitted);
    /// for an attached or re-adopted process, the executable it runs and
    /// its command line.
    fn identify(&mut self, app: u32, pid: u32) -> Option<(ProgramKey, String)> {
        let (name, kind, program, argv) = {
            let state = self.shared.lock();
            let e = state.apps.get(&app)?;
            (e.name.clone(), e.kind, e.program.clone(), e.argv.clone())
        };
        let (exe, argv) = match kind {
            Kind::Exec | Kind::Task => {
                // Not exec'd yet: the program it asked for, from where it
                // will run (`coloc exec` sends it resolved).
                let cwd = self.proc_root.join(format!("{pid}/cwd"));
                let exe = if program.contains('/') {
                    cwd.join(&program)
                } else {
                    coloc_linux::program::executable_path(
                        &program,
                        std::env::var_os("PATH").as_deref(),
                    )
                    .ok()?
                };
                (exe, argv)
            }
            Kind::Attach | Kind::Readopted => {
                let dir = self.proc_root.join(pid.to_string());
                let cmdline = std::fs::read(dir.join("cmdline")).ok()?;
                let argv = cmdline
                    .split(|b| *b == 0)
                    .filter(|a| !a.is_empty())
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect();
                (dir.join("exe"), argv)
            }
        };
        let hash = self.hash(&exe)?;
        let key = if argv.is_empty() {
            ProgramKey {
                exe: hash,
                args: None,
            }
        } else {
            ProgramKey::program(&hash, &argv)
        };
        Some((key, name))
    }

    fn hash(&mut self, exe: &Path) -> Option<String> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(exe).ok()?;
        let id = (m.dev(), m.ino(), m.size(), m.modified().ok()?);
        if let Some(h) = self.hashes.get(&id) {
            return Some(h.clone());
        }
        let h = coloc_linux::program::file_hash(exe).ok()?;
        self.hashes.insert(id, h.clone());
        Some(h)
    }
}

/// The store at `path`, set aside and made anew when damaged; None (said)
/// when it cannot be opened.
fn open(path: &Path, said: &mut Vec<String>) -> Option<Store> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if let Err(e) = std::fs::create_dir_all(dir) {
            said.push(format!(
                "knowledge: creating {}: {e}; not learning",
                dir.display()
            ));
            return None;
        }
    }
    match Store::open_or_set_aside(path) {
        Ok((store, aside)) => {
            if let Some(a) = aside {
                said.push(format!(
                    "knowledge: {}; it was moved to {} and a new store started",
                    a.error,
                    a.moved_to.display()
                ));
            }
            Some(store)
        }
        Err(e) => {
            said.push(format!("knowledge: {e}; not learning"));
            None
        }
    }
}
