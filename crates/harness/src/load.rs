//! Loading a workload for the real machine: parse and validate the file (pure, in
//! the model), then resolve it against this machine (ripgrep's two stages) —
//! `kernel:NAME` commands become paths, static mappings must name CPUs coloc may
//! use, and simulated-only apps are refused with a pointer to `coloc sim`.

use std::io;
use std::path::{Path, PathBuf};

use coloc_model::user_file::{read_user_text, MAX_WORKLOAD};
use coloc_model::workload::{parse_workload, StaticMapping, WorkloadError};
use coloc_model::{CpuSet, Topology, Workload};

use crate::HarnessError;

/// The workload files (`*.toml`) of `dir`, by name.
pub fn toml_files(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    Ok(files)
}

/// Reads and validates a workload file (no machine needed).
pub fn read_workload(path: &Path) -> Result<Workload, HarnessError> {
    let name = path.display().to_string();
    let text = read_user_text(path, MAX_WORKLOAD)
        .map_err(|e| WorkloadError::unreadable(&name, &e.into_io()))?;
    Ok(parse_workload(&name, &text)?)
}

/// Resolves a parsed workload against this machine.
pub fn resolve_for_host(mut w: Workload, topo: &Topology) -> Result<Workload, HarnessError> {
    let usable = topo.cpus();
    for app in &mut w.apps {
        let Some(argv) = &app.command else {
            return Err(HarnessError::SimulatedOnly {
                app: app.name.clone(),
                model: app.model.clone().unwrap_or_default(),
            });
        };
        app.command =
            Some(
                coloc_workloads::resolve_argv(argv).map_err(|source| HarnessError::Command {
                    app: app.name.clone(),
                    source,
                })?,
            );
        let sets: Vec<&CpuSet> = match &app.cpus {
            None => Vec::new(),
            Some(StaticMapping::Shared(s)) => vec![s],
            Some(StaticMapping::PerThread(v)) => v.iter().collect(),
        };
        for s in sets {
            let foreign = s.difference(usable);
            if !foreign.is_empty() {
                return Err(HarnessError::ForeignCpus {
                    app: app.name.clone(),
                    foreign,
                    usable: usable.clone(),
                });
            }
        }
    }
    Ok(w)
}
