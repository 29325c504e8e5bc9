//! The real machine as a backend for runs: its topology and how each run's
//! Linux backend is set up. Claiming the machine (one manager per machine)
//! and restoring what a crashed coloc left (docs/safety.md) happen once, at
//! the binary's start, before a `Host` is made.

use std::path::{Path, PathBuf};

use coloc_linux::machine::{LinuxMachine, LinuxOptions};
use coloc_model::Topology;

use crate::HarnessError;

/// The real machine, ready for runs.
#[derive(Debug)]
pub struct Host {
    pub topology: Topology,
    /// Track threads by the kernel's process connector where it is available
    /// ([`LinuxOptions::process_events`]); on unless a benchmark measures
    /// polling.
    pub process_events: bool,
    /// Where each run's journal of changed settings goes (docs/safety.md,
    /// The journal).
    pub journal_dir: PathBuf,
}

impl Host {
    /// A fresh backend for one run whose apps' output goes to `out`.
    pub fn machine(&self, out: &Path) -> Result<LinuxMachine, HarnessError> {
        self.machine_with(self.options(out))
    }

    /// The backend's options for a run whose apps' output goes to `out`.
    pub fn options(&self, out: &Path) -> LinuxOptions {
        LinuxOptions {
            out_dir: out.to_path_buf(),
            journal_dir: self.journal_dir.clone(),
            process_events: self.process_events,
            ..LinuxOptions::default()
        }
    }

    /// A fresh backend with `opts`.
    pub fn machine_with(&self, opts: LinuxOptions) -> Result<LinuxMachine, HarnessError> {
        LinuxMachine::new(self.topology.clone(), opts).map_err(HarnessError::LinuxBackend)
    }
}
