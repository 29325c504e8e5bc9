//! What the node service learns of the programs it manages
//! (docs/knowledge.md, When): every event the loop records goes through a
//! [`Learner`]; an app's record is written to the store when it exits, and
//! a snapshot of it every [`SNAPSHOT_EVERY`] while it runs, so a service
//! that runs for months is learned too and a daemon killed with `kill -9`
//! loses at most that much.
//!
//! The policy reads what was learned of the programs of the apps present
//! ([`Learning::known`]): their solo times and rates beside others, derived
//! from the store's records as the harness derives them
//! (`coloc_model::knowledge::derive`), looked up again whenever the apps
//! present change or a record was written.
//!
//! A store that cannot be opened, or that SQLite reports damaged, never
//! stops the service: a damaged file is set aside and a new one started
//! ([`Store::open_or_set_aside`]); any other failure is said once and the
//! daemon goes on without learning.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use coloc_model::knowledge::derive::{self, KnownApp};
use coloc_model::knowledge::{Learner, ProgramKey, Record, Source, SNAPSHOT_EVERY};
use coloc_model::metrics::{CoRuns, SoloCurves};
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
    /// Each app's program and name, once identified.
    identities: HashMap<u32, (ProgramKey, String)>,
    /// Records written so far, and the apps and count [`Learning::known`]
    /// last looked up, so it looks up again only when either changed.
    written: usize,
    looked_up: Option<(Vec<Present>, usize)>,
}

/// One app present, as the policy knows it: its id in the loop
/// (`AppId::app`), its name and the threads it starts with.
pub type Present = (u32, String, u32);

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
            identities: HashMap::new(),
            written: 0,
            looked_up: None,
        };
        (learning, said)
    }

    /// Takes one event the loop recorded; writes the records it completes.
    pub fn feed(&mut self, event: &TraceEvent) {
        if let TraceEvent::Start { app, pid, .. } = event {
            if !self.learner.knows(app.app) {
                if let Some((program, name)) = self.identity(app.app, Some(*pid)) {
                    self.learner.identify(app.app, program, &name);
                }
            }
        }
        let records = self.learner.feed(event);
        if !records.is_empty() {
            self.put(&records);
        }
    }

    /// What was learned of the programs of the apps `present` on a machine of
    /// `cpus` CPUs: their solo times per team size and rates beside others,
    /// by app name, as the harness derives them for a workload
    /// (docs/knowledge.md). None when neither the apps present nor the
    /// records written changed since the last call (the policy has it), or
    /// without a store. An app whose program cannot be identified (yet) is
    /// left out; a store that fails to read gives what the others gave.
    pub fn known(&mut self, present: &[Present], cpus: u32) -> Option<(SoloCurves, CoRuns)> {
        let now = (present.to_vec(), self.written);
        if self.store.is_none() || self.looked_up.as_ref() == Some(&now) {
            return None;
        }
        self.looked_up = Some(now);
        let mut apps = Vec::new();
        for (app, name, threads) in present {
            let Some((program, _)) = self.identity(*app, None) else {
                continue;
            };
            let store = self.store.as_ref()?;
            match store.records(&self.platform, &program) {
                Ok(records) => apps.push(KnownApp {
                    name: name.clone(),
                    program,
                    threads: *threads,
                    records,
                }),
                Err(e) => tracing::warn!("knowledge: {e}; {name} is looked up without it"),
            }
        }
        let solo = derive::solo_curves(&apps);
        let coruns = derive::coruns(&apps, &solo, cpus);
        Some((solo, coruns))
    }

    /// App `app`'s program and name, identified once ([`Learning::identify`];
    /// `pid` where known, else the one it registered with).
    fn identity(&mut self, app: u32, pid: Option<u32>) -> Option<(ProgramKey, String)> {
        if let Some(known) = self.identities.get(&app) {
            return Some(known.clone());
        }
        let pid = pid.or_else(|| self.shared.lock().apps.get(&app).map(|e| e.pid))?;
        let known = self.identify(app, pid)?;
        self.identities.insert(app, known.clone());
        Some(known)
    }

    /// Writes `records`; a store found damaged is set aside and the write
    /// made once more into the new one.
    fn put(&mut self, records: &[Record]) {
        let Some(store) = &self.store else { return };
        self.written += records.len();
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

#[cfg(test)]
mod tests {
    use coloc_model::knowledge::{Arrangement, Partner};
    use coloc_model::Topology;

    use super::*;
    use crate::shared::Entry;

    /// An app registered by `exec` is looked up under its program (the
    /// executable's content and its arguments) whatever its name, before it
    /// starts, so that its first decision (admission, team size) reads its
    /// solo times; the policy is told again only when the apps present or
    /// the records written change.
    #[test]
    fn the_policy_reads_what_was_learned_of_a_registered_program() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("xz");
        std::fs::write(&exe, b"a program").unwrap();
        let argv: Vec<String> = vec!["xz".into(), "-9".into()];
        let program = ProgramKey::program(&coloc_linux::program::file_hash(&exe).unwrap(), &argv);
        let platform =
            PlatformFingerprint::of(&Topology::synthetic("p", "package:1 core:2").unwrap());
        let db = dir.path().join("store.sqlite");
        let solo = |n: u32, threads: u32, wall: f64| Record {
            program: program.clone(),
            name: "xz".into(),
            instance: format!("run/{n}"),
            threads: Some(threads),
            arrangement: Arrangement::Alone,
            partner: Partner::None,
            source: Source::Solo,
            at_unix: 1_700_000_000 + i64::from(n),
            ended: true,
            wall_secs: wall,
            cpu_secs: None,
            shared_secs: 0.0,
            weighted_secs: 0.0,
            omp: None,
        };
        Store::open(&db)
            .unwrap()
            .put_records(&platform, &[solo(1, 1, 6.0), solo(2, 2, 4.0)])
            .unwrap();

        let shared = Shared::default();
        let app = {
            let mut e = Entry::new(
                "compress".into(),
                Kind::Exec,
                std::process::id(),
                0,
                exe.display().to_string(),
            );
            e.argv = argv.clone();
            shared.lock().register(e)
        };
        let (mut learning, _) = Learning::open(&db, platform, shared, Path::new("/proc"));
        let present = vec![(app, "compress".to_string(), 2)];
        let (curves, _) = learning.known(&present, 2).expect("looked up");
        let want: std::collections::BTreeMap<u32, f64> = [(1, 6.0), (2, 4.0)].into();
        assert_eq!(curves.curve("compress"), Some(want));
        // Nothing changed: the policy has it.
        assert_eq!(learning.known(&present, 2), None);
        // An app whose program is not known yet is looked up, and gives
        // nothing of its own.
        let mut more = present.clone();
        more.push((app + 1, "stranger".into(), 2));
        let (curves, _) = learning.known(&more, 2).expect("looked up again");
        assert_eq!(curves.curve("stranger"), None);
        assert!(curves.curve("compress").is_some());
    }
}
