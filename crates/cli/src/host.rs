//! This machine: where coloc keeps its journal and data, and how a run on the real
//! machine is set up (DESIGN.md, Safety: stale journals are restored at every start).

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::{Context, Result};
use coloc_linux::machine::{recover_stale_journals, LinuxMachine, LinuxOptions};
use coloc_model::Topology;

/// Where journals of changed settings live: `/run/coloc` for root (cleared at boot,
/// when the processes it describes are gone too), else the user's runtime dir.
pub fn journal_dir() -> PathBuf {
    if nix::unistd::geteuid().is_root() {
        return PathBuf::from("/run/coloc");
    }
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(d) => Path::new(&d).join("coloc"),
        None => std::env::temp_dir().join(format!("coloc-{}", nix::unistd::geteuid())),
    }
}

/// coloc's data directory (solo times, profiles): `$XDG_DATA_HOME/coloc`, else
/// `~/.local/share/coloc`.
pub fn data_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("XDG_DATA_HOME").filter(|d| !d.is_empty()) {
        return Path::new(&d).join("coloc");
    }
    match std::env::var_os("HOME") {
        Some(h) => Path::new(&h).join(".local/share/coloc"),
        None => std::env::temp_dir().join("coloc-data"),
    }
}

/// The real machine, ready for runs: its topology, with settings left by a crashed
/// coloc restored first.
#[derive(Debug)]
pub struct Host {
    pub topology: Topology,
}

impl Host {
    pub fn new() -> Result<Self> {
        let dir = journal_dir();
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("creating the journal directory {}", dir.display()))?;
        let report = recover_stale_journals(&dir, Path::new("/proc"))
            .context("restoring settings from an earlier coloc's journal")?;
        if !report.is_empty() {
            eprintln!("coloc: {report}");
        }
        let topology =
            coloc_linux::topology::host_topology().context("reading the topology from sysfs")?;
        Ok(Self { topology })
    }

    /// A fresh backend for one run whose apps' output goes to `out`.
    pub fn machine(&self, out: &Path) -> Result<LinuxMachine> {
        LinuxMachine::new(
            self.topology.clone(),
            LinuxOptions {
                out_dir: out.to_path_buf(),
                journal_dir: journal_dir(),
                ..LinuxOptions::default()
            },
        )
        .context("setting up the Linux backend")
    }
}

/// A flag set by SIGINT / SIGTERM, so an interrupted run still restores settings and
/// closes its trace.
pub fn stop_flag() -> Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&flag))
            .context("installing the interrupt handler")?;
    }
    Ok(flag)
}
