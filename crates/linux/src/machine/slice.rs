//! Apps in cpuset cgroups of their own (docs/service.md, cgroup slices), for
//! `coloc daemon --cgroup-slice`.
//!
//! Problem: thread affinities hold an app to its plan only until someone
//! resets them, and say nothing of memory nodes. A cpuset cgroup holds every
//! thread of every process of the app, those it creates later too, and its
//! memory nodes; Kubernetes' CPU manager and NRI resource policies place
//! containers that way.
//!
//! Approach: an app placed by a plan gets `coloc.slice/<coloc>-app<app>-<pid>` with the
//! plan's CPUs (within what its own cgroup allows: never widened) and the
//! memory nodes of those CPUs when the plan sets a memory policy (else its
//! cgroup's), and its processes that share the main process's cgroup move
//! there; thread affinities are still set (a per-thread plan needs them).
//! Each step is journaled before it is taken: the cgroups made (and, in
//! cgroup v2, the controller turned on below the root), each process moved
//! with the cgroup it came from. When the app leaves or is let go, and at the
//! end, the processes in its cgroup go back (before the thread settings are
//! restored) and coloc's cgroups are removed; after a crash, recovery does
//! the same from the journal (`recover.rs`).
//!
//! Order: a cpuset's CPUs must hold every thread's affinity, else the kernel
//! changes the affinity (which would count as the app moving itself). So a
//! change of plan widens the cgroup to old ∪ new before the affinities change
//! ([`Slice::before`]) and narrows it after ([`Slice::after`]); a new app is
//! moved in after its first affinities are journaled and set, so the
//! originals journaled are its own, not the cgroup's.
//!
//! In cgroup v2 a process is in one cgroup for every controller: an app whose
//! cgroup (or an ancestor) limits memory, pids, CPU bandwidth or I/O stays
//! where it is, placed by affinity, and coloc says why (the move would lift
//! the limit). cgroup v1's cpuset hierarchy is its own, so there every app
//! can move.

use std::path::{Path, PathBuf};

use coloc_model::{AppPlan, CpuSet, MemPolicy};

use super::app_cgroup::{AppCgroup, InSlice};
use super::instance::Instance;
use super::journal::{Entry, Journal, JournalError};
use crate::cgroup::{CgroupError, Cpusets, Version};

/// coloc's cgroup under the hierarchy's root, parent of the apps' own.
pub const SLICE: &str = "coloc.slice";

/// The slice of one machine.
#[derive(Debug)]
pub(crate) struct Slice {
    sets: Cpusets,
    /// Made (and journaled) at the first app placed.
    made: bool,
    /// The cpuset controller was turned on below the root for it.
    enabled: bool,
}

/// Why an app could not be moved into a cgroup of its own.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SliceError {
    #[error(transparent)]
    Cgroup(#[from] CgroupError),
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// cgroup v2 (docs/service.md, cgroup slices): moving the app out of
    /// `home` would lift `limit` (a controller's file, `memory.max`…).
    #[error(
        "not moved out of cgroup {}: its {limit} would no longer hold it (cgroup v2 \
         has one cgroup per process for every controller)",
        home.display()
    )]
    OtherLimit { home: PathBuf, limit: String },
}

/// Why a step failed, for the apply's refusals.
fn said(e: impl std::fmt::Display) -> String {
    format!("cgroup slice: {e}")
}

impl Slice {
    pub fn new(sets: Cpusets) -> Slice {
        Slice {
            sets,
            made: false,
            enabled: false,
        }
    }

    pub fn sets(&self) -> &Cpusets {
        &self.sets
    }

    /// The CPUs and memory nodes `plan` gives an app whose own cgroup is
    /// `home`: within what `home` allows, never more (a plan that leaves the
    /// app unplaced gives it all of that).
    fn target(
        &self,
        home: &Path,
        plan: &AppPlan,
        nodes: &[u32],
    ) -> Result<(CpuSet, CpuSet), CgroupError> {
        let cpus_home = self.sets.effective_cpus(home)?;
        let mems_home = self.sets.effective_mems(home)?;
        let planned = plan.placement.cpus().intersection(&cpus_home);
        let cpus = if planned.is_empty() {
            cpus_home
        } else {
            planned
        };
        let near: CpuSet = nodes.iter().copied().collect();
        let mems = match mems_home.intersection(&near) {
            m if plan.memory != MemPolicy::Default && !m.is_empty() => m,
            _ => mems_home,
        };
        Ok((cpus, mems))
    }

    /// Before the threads' affinities change for `plan`: an app in its
    /// cgroup gets the union of its CPUs and memory nodes and the new ones.
    pub fn before(
        &self,
        inst: &Instance,
        plan: &AppPlan,
        nodes: &[u32],
        refused: &mut Vec<String>,
    ) {
        let InSlice::In(cg) = &inst.slice else {
            return;
        };
        let widened = self.target(&cg.home, plan, nodes).and_then(|(cpus, mems)| {
            if cpus.is_subset(&cg.cpus) && mems.is_subset(&cg.mems) {
                return Ok(());
            }
            self.sets
                .limit(&cg.rel, &cg.cpus.union(&cpus), &cg.mems.union(&mems))
        });
        if let Err(e) = widened {
            refused.push(said(e));
        }
    }

    /// After the threads' affinities changed for `plan`: the app's cgroup
    /// gets exactly the plan's CPUs and nodes; an app placed for the first
    /// time is moved into a new cgroup of its own.
    pub fn after(
        &mut self,
        inst: &mut Instance,
        plan: &AppPlan,
        nodes: &[u32],
        proc_root: &Path,
        journal: &mut Journal,
        refused: &mut Vec<String>,
    ) {
        match &mut inst.slice {
            InSlice::Refused => {}
            InSlice::Out if plan.placement.cpus().is_empty() => {}
            InSlice::Out => match self.enter(inst, plan, nodes, proc_root, journal) {
                Ok(cg) => inst.slice = InSlice::In(cg),
                Err(why) => {
                    refused.push(format!("{}; placed by affinity only", said(why)));
                    inst.slice = InSlice::Refused;
                }
            },
            InSlice::In(cg) => {
                let set = self.target(&cg.home, plan, nodes).and_then(|(cpus, mems)| {
                    if (&cpus, &mems) != (&cg.cpus, &cg.mems) {
                        self.sets.limit(&cg.rel, &cpus, &mems)?;
                        (cg.cpus, cg.mems) = (cpus, mems);
                    }
                    Ok(())
                });
                if let Err(e) = set {
                    refused.push(said(e));
                }
            }
        }
    }

    /// Makes the app's cgroup and moves its processes in, journaling first.
    fn enter(
        &mut self,
        inst: &Instance,
        plan: &AppPlan,
        nodes: &[u32],
        proc_root: &Path,
        journal: &mut Journal,
    ) -> Result<AppCgroup, SliceError> {
        let pid = inst.pid();
        let home = self.sets.cgroup_of(proc_root, pid)?;
        if let Some(limit) = self.sets.other_limit(&home) {
            return Err(SliceError::OtherLimit { home, limit });
        }
        let (cpus, mems) = self.target(&home, plan, nodes)?;
        self.make_slice(journal)?;
        // Named after this coloc too: a coloc recovering a dead daemon's
        // journal meanwhile removes that daemon's cgroups, never this one's.
        let me = std::process::id();
        let rel = Path::new(SLICE).join(format!("{me}-app{}-{pid}", inst.id));
        self.made(journal, &rel, false)?;
        self.sets.make(&rel)?;
        let cg = AppCgroup {
            rel,
            home,
            cpus,
            mems,
        };
        let moved = self
            .sets
            .limit(&cg.rel, &cg.cpus, &cg.mems)
            .map_err(SliceError::from)
            .and_then(|()| self.move_in(inst, &cg, proc_root, journal));
        if let Err(why) = moved {
            let _ = take_back(&self.sets, &cg.rel, &cg.home);
            let _ = journal.append(&self.removed(&cg.rel));
            return Err(why);
        }
        Ok(cg)
    }

    /// Moves the processes of `inst` that share its main process's cgroup.
    fn move_in(
        &self,
        inst: &Instance,
        cg: &AppCgroup,
        proc_root: &Path,
        journal: &mut Journal,
    ) -> Result<(), SliceError> {
        let main = (inst.pid(), inst.main.start);
        let others = inst.tracker.processes().filter(|p| *p != main);
        for (pid, start) in std::iter::once(main).chain(others) {
            if self.sets.cgroup_of(proc_root, pid).ok().as_ref() != Some(&cg.home) {
                continue;
            }
            journal.append(&Entry::CgroupMoved {
                mount: self.sets.mount.clone(),
                pid,
                start,
                from: cg.home.clone(),
                to: cg.rel.clone(),
            })?;
            match self.sets.attach(&cg.rel, pid) {
                Ok(()) => {}
                // Ended meanwhile: nothing to move.
                Err(_) if pid != main.0 => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Journals that cgroup `rel` is about to be made.
    fn made(&self, journal: &mut Journal, rel: &Path, enabled: bool) -> Result<(), JournalError> {
        journal.append(&Entry::CgroupMade {
            mount: self.sets.mount.clone(),
            version: self.sets.version,
            rel: rel.to_path_buf(),
            enabled,
        })
    }

    fn removed(&self, rel: &Path) -> Entry {
        Entry::CgroupRemoved {
            mount: self.sets.mount.clone(),
            rel: rel.to_path_buf(),
        }
    }

    /// Makes `coloc.slice` once, journaled: in v2 with the controller on below
    /// the root and below itself, in v1 with all of the root's CPUs and nodes
    /// (a v1 cgroup starts with none).
    fn make_slice(&mut self, journal: &mut Journal) -> Result<(), SliceError> {
        if self.made {
            return Ok(());
        }
        let root = Path::new("");
        let slice = Path::new(SLICE);
        let enable = !self.sets.enabled_below(root)?;
        self.made(journal, slice, enable)?;
        self.made = true;
        self.enabled = enable;
        let made = (|| {
            if enable {
                self.sets.enable_below(root)?;
            }
            self.sets.make(slice)?;
            match self.sets.version {
                Version::V1 => self.sets.limit(
                    slice,
                    &self.sets.effective_cpus(root)?,
                    &self.sets.effective_mems(root)?,
                ),
                Version::V2 => self.sets.enable_below(slice).map(drop),
            }
        })();
        Ok(made?)
    }

    /// Lets `inst` go: the processes in its cgroup go back to where its main
    /// process came from and the cgroup is removed (journaled). Returns what
    /// failed.
    pub fn release(&self, inst: &mut Instance, journal: &mut Journal) -> Vec<String> {
        let InSlice::In(cg) = std::mem::take(&mut inst.slice) else {
            return Vec::new();
        };
        match take_back(&self.sets, &cg.rel, &cg.home) {
            Ok(_) => match journal.append(&self.removed(&cg.rel)) {
                Ok(()) => Vec::new(),
                Err(e) => vec![said(e)],
            },
            Err(e) => vec![said(e)],
        }
    }

    /// Removes `coloc.slice` at the end (every app was let go), and turns the
    /// controller off below the root if coloc turned it on.
    pub fn finish(&mut self, journal: &mut Journal) -> Vec<String> {
        if !std::mem::take(&mut self.made) {
            return Vec::new();
        }
        let slice = Path::new(SLICE);
        let done = take_back(&self.sets, slice, Path::new("")).and_then(|_| {
            if self.enabled {
                self.sets.disable_below(Path::new(""))?;
            }
            Ok(())
        });
        match done.map_err(said).and_then(|()| {
            journal
                .append(&self.removed(slice))
                .map_err(|e: JournalError| said(e))
        }) {
            Ok(()) => Vec::new(),
            Err(e) => vec![e],
        }
    }
}

/// How many times the processes of a cgroup are moved out before it is
/// removed (a process forked meanwhile lands in it).
const TAKE_BACK_ROUNDS: usize = 3;

/// Moves every process of coloc's cgroup `rel` to `home` (or, if `home` was
/// removed meanwhile, its nearest ancestor that is still there) and removes
/// `rel`. Returns how many processes went back.
pub(crate) fn take_back(sets: &Cpusets, rel: &Path, home: &Path) -> Result<usize, CgroupError> {
    if !sets.dir(rel).exists() {
        return Ok(0);
    }
    let home = home
        .ancestors()
        .find(|a| sets.dir(a).is_dir())
        .unwrap_or(Path::new(""));
    let mut moved = 0;
    for _ in 0..TAKE_BACK_ROUNDS {
        let procs = sets.procs(rel)?;
        if procs.is_empty() {
            break;
        }
        for pid in procs {
            match sets.attach(home, pid) {
                Ok(()) => moved += 1,
                // Gone meanwhile (ESRCH): it left the cgroup by itself.
                Err(CgroupError::Io { source, .. })
                    if source.raw_os_error() == Some(libc::ESRCH) => {}
                Err(e) => return Err(e),
            }
        }
    }
    sets.remove(rel)?;
    Ok(moved)
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::PathBuf;

    use super::*;
    use crate::machine::journal::read_entries;

    /// cgroup v2: the controller is turned on below the root and below the
    /// slice, and the journal says so before (recovery turns it off again).
    #[test]
    fn a_v2_slice_is_journaled_then_made_with_the_controller_on() {
        let dir = tempfile::tempdir().unwrap();
        let mount = dir.path().join("cgroup");
        // What the kernel shows: the files of the root and of a new cgroup.
        fs::create_dir_all(mount.join(SLICE)).unwrap();
        fs::write(mount.join("cgroup.subtree_control"), "memory pids\n").unwrap();
        fs::write(mount.join(SLICE).join("cgroup.subtree_control"), "").unwrap();
        let mut journal = Journal::new(&dir.path().join("journal"), 1, 1);
        let mut slice = Slice::new(Cpusets::at(Version::V2, mount.clone()));
        slice.make_slice(&mut journal).unwrap();
        let (entries, _) = read_entries(journal.path()).unwrap();
        assert_eq!(
            entries[1],
            Entry::CgroupMade {
                mount: mount.clone(),
                version: Version::V2,
                rel: PathBuf::from(SLICE),
                enabled: true,
            }
        );
        // The kernel takes "+cpuset"; a plain file keeps what was written.
        let written = |p: &Path| fs::read_to_string(p.join("cgroup.subtree_control")).unwrap();
        assert_eq!(written(&mount), "+cpuset");
        assert_eq!(written(&mount.join(SLICE)), "+cpuset");
        // Made once per machine.
        slice.make_slice(&mut journal).unwrap();
        assert_eq!(read_entries(journal.path()).unwrap().0.len(), 2);
    }
}
