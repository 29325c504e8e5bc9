//! What the node service learns of the programs it manages
//! (docs/knowledge.md, When): every event the loop records goes through a
//! [`Learner`]; an app's record is written to the store when it exits, and
//! a snapshot of it every [`SNAPSHOT_EVERY`] while it runs, so a service
//! that runs for months is learned too and a daemon killed with `kill -9`
//! loses at most that much.
//!
//! The policy reads what was learned of the programs of the apps present
//! ([`Learning::known`]): their solo times, rates beside others and how long
//! their regions last (what the DoP policies read before cutting a team),
//! and the pairs `auto`'s earlier trials measured on the sets they can form
//! (written as each pair is measured), derived
//! from the store's records as the harness derives them
//! (`coloc_model::knowledge::derive`), looked up again whenever the apps
//! present change or a record was written.
//!
//! An app's program is identified by hashing its executable on a thread of
//! its own, as the app's user (docs/service.md, coloc exec: nothing a user
//! names is opened by root, nor on the loop): until that hash comes, the
//! app is a co-runner of others with no record of its own.
//!
//! A store that cannot be opened, or that SQLite reports damaged, never
//! stops the service: a damaged file is set aside and a new one started
//! ([`Store::open_or_set_aside`]); any other failure is said once and the
//! daemon goes on without learning.

use std::collections::{HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, TryRecvError};

use coloc_linux::credentials::{spawn_as, Creds};
use coloc_linux::machine::MAX_PROGRAM;
use coloc_model::knowledge::derive::{self, KnownApp, Learned};
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
    /// Identifications under way: the hash of the app's executable, made
    /// as its user off the loop, with the name and arguments it goes with.
    /// These three hold apps the daemon has registered only: each is
    /// forgotten at its exit and, should no exit come (a waiting app
    /// cancelled), when the apps present change ([`Learning::forget_gone`]),
    /// so they are bounded by the registered apps (docs/service.md, Limits).
    pending: HashMap<u32, Identifying>,
    /// Apps whose program could not be identified (not said again).
    unknown: HashSet<u32>,
    /// Each app's program and name, once identified.
    identities: HashMap<u32, (ProgramKey, String)>,
    /// Records written so far, and the apps and counts [`Learning::known`]
    /// last looked up, so it looks up again only when one changed.
    written: usize,
    looked_up: Option<(Vec<Present>, usize, usize)>,
}

/// An app's executable being hashed as its user.
#[derive(Debug)]
struct Identifying {
    hash: Receiver<io::Result<Result<String, NotIdentified>>>,
    name: String,
    argv: Vec<String>,
}

/// Why an app's program was not identified (said in the debug log; the app
/// is then a co-runner of others with no record of its own).
#[derive(Debug, thiserror::Error)]
enum NotIdentified {
    /// The app left before it could be looked at.
    #[error("not registered")]
    NotRegistered,
    /// An attached process's command line could not be read.
    #[error("reading {}: {source}", path.display())]
    Cmdline { path: PathBuf, source: io::Error },
    /// The process's owner could not be read.
    #[error("reading the credentials of process {pid}: {source}")]
    Credentials { pid: u32, source: io::Error },
    /// The executable could not be found or read.
    #[error("{0}")]
    Program(#[from] coloc_linux::program::ProgramError),
    /// The executable is not a regular file that may be opened.
    #[error("{0}")]
    File(#[from] coloc_model::user_file::UserFileError),
    /// The executable is too large to hash ([`MAX_PROGRAM`]).
    #[error("{} is over {MAX_PROGRAM} bytes: not hashed", path.display())]
    TooLarge { path: PathBuf },
    /// The thread that hashes as the app's user could not be started.
    #[error("starting the hash of its program: {0}")]
    Start(io::Error),
    /// Taking the app's user's credentials on that thread failed.
    #[error("hashing as the app's user: {0}")]
    AsUser(io::Error),
    /// That thread ended without an answer.
    #[error("the hashing thread ended")]
    ThreadEnded,
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
            pending: HashMap::new(),
            unknown: HashSet::new(),
            identities: HashMap::new(),
            written: 0,
            looked_up: None,
        };
        (learning, said)
    }

    /// Takes one event the loop recorded; writes the records it completes.
    pub fn feed(&mut self, event: &TraceEvent) {
        self.poll_pending();
        if let TraceEvent::Start { app, pid, .. } = event {
            self.identity(app.app, Some(*pid));
        }
        let records = self.learner.feed(event);
        if !records.is_empty() {
            self.put(&records);
        }
        let pairs = self.learner.take_pairs();
        if !pairs.is_empty() {
            self.put_pairs(&pairs);
        }
        if let TraceEvent::Exit { app, .. } = event {
            self.forget(app.app);
        }
    }

    /// Forgets what identifies app `app` (it exited: the learner has its
    /// record, and its id is never given again).
    fn forget(&mut self, app: u32) {
        self.pending.remove(&app);
        self.unknown.remove(&app);
        self.identities.remove(&app);
    }

    /// Forgets every app the daemon no longer has registered nor lists in
    /// `present`.
    fn forget_gone(&mut self, present: &[Present]) {
        let keep: HashSet<u32> = {
            let state = self.shared.lock();
            state
                .apps
                .keys()
                .copied()
                .chain(present.iter().map(|p| p.0))
                .collect()
        };
        self.pending.retain(|app, _| keep.contains(app));
        self.unknown.retain(|app| keep.contains(app));
        self.identities.retain(|app, _| keep.contains(app));
    }

    /// What was learned of the programs of the apps `present` on a machine of
    /// `cpus` CPUs: their solo times per team size, rates beside others and
    /// region records, by app name, as the harness derives them for a
    /// workload (docs/knowledge.md). None when neither the apps present nor the
    /// records written changed since the last call (the policy has it), or
    /// without a store. An app whose program cannot be identified (yet) is
    /// left out; a store that fails to read gives what the others gave.
    pub fn known(&mut self, present: &[Present], cpus: u32) -> Option<Learned> {
        self.poll_pending();
        let now = (present.to_vec(), self.written, self.identities.len());
        if self.store.is_none() || self.looked_up.as_ref() == Some(&now) {
            return None;
        }
        self.looked_up = Some(now);
        self.forget_gone(present);
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
        let programs: Vec<ProgramKey> = apps.iter().map(|a| a.program.clone()).collect();
        let pairs = match self.store.as_ref()?.pairs_with(&self.platform, &programs) {
            Ok(pairs) => pairs,
            Err(e) => {
                tracing::warn!("knowledge: {e}; trials start without stored pairs");
                Vec::new()
            }
        };
        Some(derive::learned(&apps, cpus).with_trials(&apps, pairs))
    }

    /// Takes the hashes that came since last asked.
    fn poll_pending(&mut self) {
        let waiting: Vec<u32> = self.pending.keys().copied().collect();
        for app in waiting {
            self.identity(app, None);
        }
    }

    /// App `app`'s program and name once identified ([`Learning::identify`]
    /// started, on `pid` where known, else the one it registered with; the
    /// learner is told as soon as the hash comes). None while the hash is
    /// being made, or when it could not be.
    fn identity(&mut self, app: u32, pid: Option<u32>) -> Option<(ProgramKey, String)> {
        if let Some(known) = self.identities.get(&app) {
            return Some(known.clone());
        }
        if self.unknown.contains(&app) {
            return None;
        }
        let Some(waiting) = self.pending.get(&app) else {
            let pid = pid.or_else(|| self.shared.lock().apps.get(&app).map(|e| e.pid))?;
            match self.identify(app, pid) {
                Ok(started) => {
                    self.pending.insert(app, started);
                }
                Err(why) => {
                    tracing::debug!(app, "knowledge: not identified: {why}");
                    self.unknown.insert(app);
                }
            }
            return None;
        };
        let hash = match waiting.hash.try_recv() {
            Err(TryRecvError::Empty) => return None,
            Ok(Ok(Ok(hash))) => Ok(hash),
            Ok(Ok(Err(why))) => Err(why),
            Ok(Err(e)) => Err(NotIdentified::AsUser(e)),
            Err(TryRecvError::Disconnected) => Err(NotIdentified::ThreadEnded),
        };
        let waiting = self.pending.remove(&app)?;
        let hash = match hash {
            Ok(hash) => hash,
            Err(why) => {
                tracing::debug!(app, "knowledge: not identified: {why}");
                self.unknown.insert(app);
                return None;
            }
        };
        let key = if waiting.argv.is_empty() {
            ProgramKey {
                exe: hash,
                args: None,
            }
        } else {
            ProgramKey::program(&hash, &waiting.argv)
        };
        let known = (key, waiting.name);
        self.learner.identify(app, known.0.clone(), &known.1);
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

    /// Writes the pairs `auto`'s trials measured (docs/knowledge.md, Trials
    /// of a set of programs); a store that fails is said, and the pairs
    /// lost: the records' writes ([`Learning::put`]) set a damaged store
    /// aside.
    fn put_pairs(&mut self, pairs: &[coloc_model::knowledge::trials::SetPair]) {
        let Some(store) = &self.store else { return };
        if let Err(e) = store.put_pairs(&self.platform, pairs) {
            tracing::warn!("knowledge: {e}; {} trial pair(s) not kept", pairs.len());
        }
    }

    /// Starts identifying app `app` (process `pid`): for `exec` (and a
    /// Slurm task), the program it asked for, as found from where it will
    /// run (the process runs coloc's client, or Slurm's, until it is
    /// admitted); for an attached or re-adopted process, the executable it
    /// runs and its command line. The executable is hashed on a thread of
    /// its own, as the user of the process, and only a regular file of at
    /// most [`MAX_PROGRAM`] bytes.
    fn identify(&mut self, app: u32, pid: u32) -> Result<Identifying, NotIdentified> {
        let (name, kind, program, argv) = {
            let state = self.shared.lock();
            let e = state.apps.get(&app).ok_or(NotIdentified::NotRegistered)?;
            (e.name.clone(), e.kind, e.program.clone(), e.argv.clone())
        };
        let dir = self.proc_root.join(pid.to_string());
        let (exe, argv) = match kind {
            // Not exec'd yet: resolved by the thread, as the user.
            Kind::Exec | Kind::Task => (None, argv),
            Kind::Attach | Kind::Readopted => {
                let cmdline = std::fs::read(dir.join("cmdline")).map_err(|source| {
                    NotIdentified::Cmdline {
                        path: dir.join("cmdline"),
                        source,
                    }
                })?;
                let argv = cmdline
                    .split(|b| *b == 0)
                    .filter(|a| !a.is_empty())
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect();
                (Some(dir.join("exe")), argv)
            }
        };
        let creds = Creds::of(&self.proc_root, pid)
            .map_err(|source| NotIdentified::Credentials { pid, source })?;
        let cwd = dir.join("cwd");
        let path = std::env::var_os("PATH");
        let hash = spawn_as(
            creds,
            move || {
                let exe = match exe {
                    Some(exe) => exe,
                    None if program.contains('/') => cwd.join(&program),
                    None => coloc_linux::program::executable_path(&program, path.as_deref())?,
                };
                let (_, len) = coloc_model::user_file::open_regular(&exe)?;
                if len > MAX_PROGRAM {
                    return Err(NotIdentified::TooLarge { path: exe });
                }
                Ok(coloc_linux::program::file_hash(&exe)?)
            },
            || {},
        )
        .map_err(NotIdentified::Start)?;
        Ok(Identifying { hash, name, argv })
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
    use coloc_model::Topology;

    use super::*;
    use crate::shared::Entry;

    /// An app registered by `exec` is looked up under its program (the
    /// executable's content, hashed off the loop as its user, and its
    /// arguments) whatever its name, before it starts, so that a decision
    /// on its admission or team size reads its solo times; the policy is
    /// told again only when the apps present, the apps identified or the
    /// records written change.
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
        let solo = |n: u32, threads: u32, wall: f64| {
            Record::solo_time(
                program.clone(),
                "xz".into(),
                format!("run/{n}"),
                threads,
                wall,
                Source::Solo,
                1_700_000_000 + i64::from(n),
            )
        };
        // A whole run whose regions lasted at most 0.05 s, epochs of 0.1 s.
        let mut short = solo(3, 2, 4.0);
        short.omp = Some(coloc_model::knowledge::OmpTotals {
            regions: 80,
            iterations: 0,
            calls: 0,
            parallel_secs: 3.8,
            observed_secs: 4.0,
            longest_region_secs: Some(0.05),
            epoch_secs: Some(0.1),
        });
        Store::open(&db)
            .unwrap()
            .put_records(&platform, &[solo(1, 1, 6.0), solo(2, 2, 4.0), short])
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
        // The first look-up starts the hash; the program is known once it
        // comes (a thread of its own: never waited for by the loop).
        let mut learned = learning.known(&present, 2).expect("looked up");
        let give_up = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while learned.solo.curve("compress").is_none() && std::time::Instant::now() < give_up {
            std::thread::sleep(std::time::Duration::from_millis(5));
            if let Some(l) = learning.known(&present, 2) {
                learned = l;
            }
        }
        let want: std::collections::BTreeMap<u32, f64> = [(1, 6.0), (2, 4.0)].into();
        assert_eq!(learned.solo.curve("compress"), Some(want));
        // And how long its regions last: what the DoP policies read before
        // cutting its team.
        let regions = learned.regions.get("compress").expect("region records");
        assert_eq!(regions.runs, 1);
        assert_eq!(regions.longest, std::time::Duration::from_millis(50));
        // Nothing changed: the policy has it.
        assert_eq!(learning.known(&present, 2), None);
        // An app whose program is not known yet is looked up, and gives
        // nothing of its own.
        let mut more = present.clone();
        more.push((app + 1, "stranger".into(), 2));
        let curves = learning.known(&more, 2).expect("looked up again").solo;
        assert_eq!(curves.curve("stranger"), None);
        assert!(curves.curve("compress").is_some());
    }

    /// The daemon hashes an app's program as the app's user, off its loop:
    /// a file only root may read, named by a user's `exec`, is not read
    /// (the app stays unidentified), where root's own read would have
    /// hashed it. Needs root (a process of another user).
    #[test]
    fn a_program_is_hashed_as_the_apps_user_never_as_root() {
        use std::os::unix::fs::PermissionsExt;
        use std::os::unix::process::CommandExt;
        if !nix::unistd::geteuid().is_root() {
            eprintln!("skipped: needs root to run a process as another user");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let exe = dir.path().join("secret");
        std::fs::write(&exe, b"root's eyes only").unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o600)).unwrap();
        let mut user = std::process::Command::new("sleep")
            .arg("30")
            .uid(65534)
            .gid(65534)
            .spawn()
            .unwrap();
        let shared = Shared::default();
        let app = shared.lock().register(Entry::new(
            "peek".into(),
            Kind::Exec,
            user.id(),
            65534,
            exe.display().to_string(),
        ));
        let platform =
            PlatformFingerprint::of(&Topology::synthetic("p", "package:1 core:2").unwrap());
        let db = dir.path().join("store.sqlite");
        let (mut learning, _) = Learning::open(&db, platform, shared, Path::new("/proc"));
        assert_eq!(learning.identity(app, None), None, "hashed on the loop");
        let give_up = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while learning.pending.contains_key(&app) && std::time::Instant::now() < give_up {
            std::thread::sleep(std::time::Duration::from_millis(5));
            learning.poll_pending();
        }
        let _ = user.kill();
        let _ = user.wait();
        assert!(
            learning.unknown.contains(&app),
            "root read the user's program"
        );
        assert!(learning.identities.is_empty());
    }

    /// What identifies each app was kept for the daemon's whole life (a
    /// service that runs for months grew without bound): it goes at the
    /// app's exit, or, for an app that never started, once the daemon no
    /// longer has it registered and the apps present change. 300 apps come
    /// and go, one at a time; at most the one registered is remembered.
    #[test]
    fn what_identifies_an_app_is_forgotten_once_it_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("prog");
        std::fs::write(&exe, b"a program").unwrap();
        let platform =
            PlatformFingerprint::of(&Topology::synthetic("p", "package:1 core:2").unwrap());
        let shared = Shared::default();
        let (mut learning, _) = Learning::open(
            &dir.path().join("store.sqlite"),
            platform,
            shared.clone(),
            Path::new("/proc"),
        );
        let remembered = |l: &Learning| l.pending.len() + l.unknown.len() + l.identities.len();
        for n in 0..300u32 {
            // Every third program cannot be hashed (it is gone): unknown.
            let program = if n % 3 == 0 {
                dir.path().join("missing").display().to_string()
            } else {
                exe.display().to_string()
            };
            let app = shared.lock().register(Entry::new(
                format!("app{n}"),
                Kind::Exec,
                std::process::id(),
                0,
                program,
            ));
            let present = vec![(app, format!("app{n}"), 1)];
            let give_up = std::time::Instant::now() + std::time::Duration::from_secs(30);
            learning.known(&present, 2);
            while learning.pending.contains_key(&app) && std::time::Instant::now() < give_up {
                std::thread::sleep(std::time::Duration::from_millis(1));
                learning.poll_pending();
            }
            assert!(remembered(&learning) >= 1, "app {n} was never identified");
            assert!(remembered(&learning) <= 2, "{n}: {}", remembered(&learning));
            shared.lock().apps.remove(&app);
            if n % 2 == 0 {
                // It ran and exited.
                learning.feed(&TraceEvent::Exit {
                    t: std::time::Duration::from_secs(u64::from(n)),
                    app: coloc_model::AppId { app, rep: 0 },
                    status: coloc_model::trace::ExitStatus::Code(0),
                    metric: None,
                    usage: None,
                });
            }
        }
        // The last app's cancel is seen when the apps present change.
        learning.known(&[], 2);
        assert_eq!(remembered(&learning), 0);
    }
}
