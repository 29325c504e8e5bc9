//! The options that choose where a workload runs (docs/architecture.md,
//! Machine backends), made a [`Target`] of the harness.

use anyhow::Result;
use clap::Args;
use coloc_harness::{resolve_platform, Target};

/// Options selecting the backend, shared by `run`, `compare`, `solo`.
#[derive(Debug, Clone, Args)]
pub struct MachineArgs {
    /// Run in the simulator on this platform instead of on this machine: a built-in
    /// name (`coloc sim --list-platforms`), an hwloc XML file (`lstopo --of xml`) or a
    /// TOML platform file.
    #[arg(long, value_name = "PLATFORM")]
    pub sim: Option<String>,
    /// Seed of the simulator's randomness (the Linux balancer model). Repeated runs
    /// of `compare` use SEED, SEED+1, ….
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

impl MachineArgs {
    /// The backend these options name: this machine (claimed, and what a
    /// crashed coloc left restored: [`crate::host::start`]) or the platform.
    pub fn target(&self) -> Result<Target> {
        Ok(match &self.sim {
            None => Target::Host(crate::host::start()?),
            Some(p) => Target::Sim {
                platform: resolve_platform(p)?,
                seed: self.seed,
            },
        })
    }
}
