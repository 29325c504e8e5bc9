//! What coloc learned of each program (docs/knowledge.md), for the harness
//! commands: the store opened for one workload on one target, its apps
//! identified ([`ProgramKey`]: executable hash and arguments, or the
//! simulator's model), what its policies read derived from their programs'
//! records, and every run's records added. Below the commands and the policy
//! context, so neither reaches into the other for it.

mod migrate;

use std::path::Path;

use coloc_model::knowledge::derive::{self, KnownApp, Learned};
use coloc_model::knowledge::{Learner, ProgramKey, Source};
use coloc_model::metrics::{SoloCurves, SoloTimes};
use coloc_model::profile::PlatformFingerprint;
use coloc_model::{AppSpec, Trace, TraceEvent, Workload};
use coloc_store::Store;

use crate::data::default_store;
use crate::{HarnessError, Target};

/// The store, opened for one workload on one target.
#[derive(Debug)]
pub struct Knowledge {
    store: Store,
    platform: PlatformFingerprint,
    cpus: u32,
    /// Each app's program, in workload order (None: not identified, e.g. an
    /// executable that is not there).
    programs: Vec<Option<ProgramKey>>,
    /// The apps' names, in workload order.
    names: Vec<String>,
}

/// The program `app` runs on `target`: its model in the simulator; on this
/// machine its executable's hash and arguments (None when the executable
/// cannot be read: the run will say why).
pub fn program_of(target: &Target, app: &AppSpec) -> Option<ProgramKey> {
    match target {
        Target::Sim { .. } => app.model.as_deref().map(ProgramKey::model),
        Target::Host(_) => coloc_linux::program::program_key(app.command.as_deref()?).ok(),
    }
}

impl Knowledge {
    /// Opens the default store (creating it; a damaged one is set aside with
    /// a warning) for `workload` on `target`, identifies the workload's apps
    /// and migrates the solo-time and co-run files an earlier coloc wrote
    /// for it. None, with a warning, when the store cannot be opened: a run
    /// goes on without what it would have learned.
    pub fn open_or_warn(target: &Target, workload: &Workload) -> Option<Knowledge> {
        match Knowledge::open(&default_store(), target, workload) {
            Ok(k) => Some(k),
            Err(e) => {
                crate::said::warning(&format!(
                    "{}; running without what earlier runs learned",
                    crate::error::chain(&e)
                ));
                None
            }
        }
    }

    /// [`Knowledge::open_or_warn`] on the store at `path`, its error returned.
    pub fn open(
        path: &Path,
        target: &Target,
        workload: &Workload,
    ) -> Result<Knowledge, HarnessError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| HarnessError::Write {
                what: "creating",
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let (store, aside) =
            Store::open_or_set_aside(path).map_err(|source| HarnessError::Store {
                path: path.to_path_buf(),
                source: Box::new(source),
            })?;
        if let Some(a) = aside {
            crate::said::warning(&format!(
                "{}; it was moved to {} and a new store started",
                a.error,
                a.moved_to.display()
            ));
        }
        let k = Knowledge {
            store,
            platform: PlatformFingerprint::of(target.topology()),
            cpus: target.topology().cpus().len() as u32,
            programs: workload
                .apps
                .iter()
                .map(|a| program_of(target, a))
                .collect(),
            names: workload.apps.iter().map(|a| a.name.clone()).collect(),
        };
        for line in migrate::legacy_files(&k, target, workload)? {
            crate::said::notice(&line);
        }
        Ok(k)
    }

    pub fn path(&self) -> &Path {
        self.store.path()
    }

    /// The workload's identified apps with their programs' records.
    fn known(&self, workload: &Workload) -> Result<Vec<KnownApp>, HarnessError> {
        let mut apps = Vec::new();
        for (a, program) in workload.apps.iter().zip(&self.programs) {
            let Some(program) = program else { continue };
            apps.push(KnownApp {
                name: a.name.clone(),
                program: program.clone(),
                threads: a.threads_on(self.cpus as usize),
                records: self.store.records(&self.platform, program)?,
            });
        }
        Ok(apps)
    }

    /// What the policies read of the workload's apps: solo times per team
    /// size, rates beside others, how long their regions last and the
    /// stored pairs of earlier trials of the sets they can form (the node
    /// service derives the same of the apps it manages, `coloc_daemon`'s
    /// `Learning::known`).
    pub fn learned(&self, workload: &Workload) -> Result<Learned, HarnessError> {
        let known = self.known(workload)?;
        let programs: Vec<ProgramKey> = known.iter().map(|a| a.program.clone()).collect();
        let pairs = self.store.pairs_with(&self.platform, &programs)?;
        Ok(derive::learned(&known, self.cpus).with_trials(&known, pairs))
    }

    /// The apps' solo times per team size (reference points of a mix).
    pub fn solo_curves(&self, workload: &Workload) -> Result<SoloCurves, HarnessError> {
        Ok(derive::solo_curves(&self.known(workload)?))
    }

    /// The apps' solo times at their own thread counts (speedups), None when
    /// none is known.
    pub fn solo_times(&self, workload: &Workload) -> Result<Option<SoloTimes>, HarnessError> {
        let times = derive::solo_times(&self.known(workload)?);
        Ok((times != SoloTimes::default()).then_some(times))
    }

    /// Adds the records of a run of `workload` (its trace), and the pairs
    /// its trials measured on sets of identified programs; returns how many
    /// records.
    pub fn learn(
        &self,
        workload: &Workload,
        trace: &Trace,
        source: Source,
    ) -> Result<usize, HarnessError> {
        let mut learner = Learner::new(source);
        for (i, (a, program)) in workload.apps.iter().zip(&self.programs).enumerate() {
            if let Some(p) = program {
                learner.identify(i as u32, p.clone(), &a.name);
            }
        }
        self.put(learner, trace)
    }

    /// Adds the records of a run of the workload's app `app` alone (its
    /// only app, as `coloc solo` runs it).
    pub fn learn_app(
        &self,
        app: usize,
        trace: &Trace,
        source: Source,
    ) -> Result<usize, HarnessError> {
        let mut learner = Learner::new(source);
        if let Some(Some(p)) = self.programs.get(app) {
            learner.identify(0, p.clone(), &self.names[app]);
        }
        self.put(learner, trace)
    }

    fn put(&self, mut learner: Learner, trace: &Trace) -> Result<usize, HarnessError> {
        let header = TraceEvent::Header(Box::new(trace.header.clone()));
        let records: Vec<_> = std::iter::once(&header)
            .chain(&trace.events)
            .flat_map(|e| learner.feed(e))
            .collect();
        let written = self.store.put_records(&self.platform, &records)?;
        self.store
            .put_pairs(&self.platform, &learner.take_pairs())?;
        Ok(written)
    }
}
