//! Solo times saved by `coloc solo`, per workload and machine, in coloc's data
//! directory: read by `compare` and `bench mixes` (Hmean speedup, reference
//! points) and by the policy context (`auto`'s admission reads solo times).
//! Beside them, the rates apps ran at beside others in earlier runs
//! (`coloc_model::metrics::corun`), which `auto`'s admission reads too.
//! Below both the commands and the context, so neither reaches into the
//! other for them.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use coloc_model::metrics::{CoRuns, SoloCurves, SoloTimes};
use coloc_model::{Trace, Workload};

use crate::host::data_dir;
use crate::target::Target;

/// Where solo times of a workload on a machine are kept.
fn saved_path(workload: &Workload, target: &Target) -> PathBuf {
    data_dir()
        .join("solo")
        .join(format!("{}-{}.json", workload.name, target.key()))
}

/// Where solo times per thread count of a workload on a machine are kept.
fn curves_path(workload: &Workload, target: &Target) -> PathBuf {
    data_dir()
        .join("solo")
        .join(format!("{}-{}-threads.json", workload.name, target.key()))
}

/// Where the co-run rates measured in runs of a workload on a machine are kept.
fn coruns_path(workload: &Workload, target: &Target) -> PathBuf {
    data_dir()
        .join("solo")
        .join(format!("{}-{}-coruns.json", workload.name, target.key()))
}

/// Co-run rates measured in earlier runs of this workload on this machine.
pub fn load_saved_coruns(workload: &Workload, target: &Target) -> Result<Option<CoRuns>> {
    load_json(&coruns_path(workload, target))
}

/// Adds a finished run's co-runs (`CoRuns::from_trace`) to `coruns` and
/// saves them for later runs; returns the file and how many records the run
/// added, None when it added none (no solo times, or no app shared the
/// machine long enough).
pub fn record_coruns(
    workload: &Workload,
    target: &Target,
    coruns: &mut CoRuns,
    trace: &Trace,
    solo: &SoloCurves,
) -> Result<Option<(PathBuf, usize)>> {
    let cpus = target.topology().cpus().len() as u32;
    let new = CoRuns::from_trace(trace, solo, cpus);
    if new.is_empty() {
        return Ok(None);
    }
    let added = new.len();
    coruns.extend(new);
    let path = coruns_path(workload, target);
    save(&path, coruns)?;
    Ok(Some((path, added)))
}

/// Solo times saved earlier for this workload on this machine, if any.
pub fn load_saved(workload: &Workload, target: &Target) -> Result<Option<SoloTimes>> {
    load_json(&saved_path(workload, target))
}

/// Solo times per thread count saved earlier (`--threads`), if any.
pub fn load_saved_curves(workload: &Workload, target: &Target) -> Result<Option<SoloCurves>> {
    load_json(&curves_path(workload, target))
}

fn load_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Option<T>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(serde_json::from_str(&text).with_context(|| {
            format!("reading solo times from {}", path.display())
        })?)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

fn save<T: serde::Serialize>(path: &Path, value: &T) -> Result<()> {
    std::fs::create_dir_all(path.parent().expect("a file path has a parent"))?;
    std::fs::write(path, serde_json::to_string_pretty(value)?)
        .with_context(|| format!("writing {}", path.display()))
}

/// Saves solo times per thread count for later `coloc bench mixes` runs.
pub fn save_curves(workload: &Workload, target: &Target, curves: &SoloCurves) -> Result<PathBuf> {
    let path = curves_path(workload, target);
    save(&path, curves)?;
    Ok(path)
}

/// Saves solo times at each app's own thread count for later `coloc compare`
/// runs.
pub fn save_times(workload: &Workload, target: &Target, times: &SoloTimes) -> Result<PathBuf> {
    let path = saved_path(workload, target);
    save(&path, times)?;
    Ok(path)
}
