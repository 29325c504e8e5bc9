//! Reading what `run`, `sim`, `compare` and `demo` wrote, for `coloc report`
//! (and a comparison's manifest, written by `compare`).
//!
//! A run's directory holds `trace.jsonl`. A comparison's directory holds one
//! run directory per run, named `POLICY-K` (K counts from 1), and
//! [`MANIFEST`], which says the policies in their order, the baseline and the
//! solo times used, so that a report recomputes exactly what `compare` printed.
//! A comparison directory without a manifest (an older coloc) is still read:
//! policies in name order, the baseline given or `native` or the first.

use std::path::{Path, PathBuf};

use coloc_model::metrics::{Comparison, RunMetrics, SoloTimes};
use coloc_model::Trace;
use serde::{Deserialize, Serialize};

use crate::output::create_out_dir;
use crate::{read_trace, HarnessError};

/// The comparison's description, in its directory.
pub const MANIFEST: &str = "compare.json";

/// What `compare` records about itself.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub workload: String,
    /// In the order compared (the table's rows).
    pub policies: Vec<String>,
    pub baseline: String,
    pub repeat: u32,
    /// Solo times the comparison's Hmean speedups were computed with.
    #[serde(default)]
    pub solo: Option<SoloTimes>,
}

impl Manifest {
    pub fn write(&self, dir: &Path) -> Result<(), HarnessError> {
        create_out_dir(dir)?;
        let path = dir.join(MANIFEST);
        let write = || -> std::io::Result<()> {
            use std::io::Write;
            use std::os::unix::fs::OpenOptionsExt;
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o644)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&path)?;
            f.write_all(serde_json::to_string_pretty(self)?.as_bytes())
        };
        write().map_err(|source| HarnessError::Write {
            what: "writing",
            path,
            source,
        })
    }
}

/// A directory `coloc report` was pointed at.
#[derive(Debug)]
pub enum Saved {
    /// One run: its trace file.
    Run(PathBuf),
    Comparison(SavedComparison),
}

/// A comparison's runs on disk.
#[derive(Debug)]
pub struct SavedComparison {
    pub dir: PathBuf,
    pub manifest: Manifest,
    /// Per policy, in manifest order: its runs' trace files, in run order.
    pub runs: Vec<(String, Vec<PathBuf>)>,
}

/// What `path` holds: a trace file, a run directory or a comparison directory.
/// `baseline` overrides the manifest's (or, without one, the default).
pub fn open(path: &Path, baseline: Option<&str>) -> Result<Saved, HarnessError> {
    if !path.is_dir() {
        return Ok(Saved::Run(path.to_path_buf()));
    }
    let trace = path.join("trace.jsonl");
    if trace.exists() {
        return Ok(Saved::Run(trace));
    }
    let mut found: Vec<(String, u32, PathBuf)> = Vec::new();
    let unreadable = |source| HarnessError::Read {
        path: path.to_path_buf(),
        source,
    };
    for entry in std::fs::read_dir(path).map_err(unreadable)? {
        let entry = entry.map_err(unreadable)?;
        let trace = entry.path().join("trace.jsonl");
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some((policy, k)) = name.rsplit_once('-') else {
            continue;
        };
        if let (Ok(k), true) = (k.parse::<u32>(), trace.exists()) {
            found.push((policy.to_string(), k, trace));
        }
    }
    if found.is_empty() {
        return Err(HarnessError::NothingSaved {
            path: path.to_path_buf(),
        });
    }
    found.sort();
    let manifest_path = path.join(MANIFEST);
    let mut manifest = if manifest_path.exists() {
        let text =
            std::fs::read_to_string(&manifest_path).map_err(|source| HarnessError::Read {
                path: manifest_path.clone(),
                source,
            })?;
        serde_json::from_str::<Manifest>(&text).map_err(|source| HarnessError::Manifest {
            path: manifest_path.clone(),
            source,
        })?
    } else {
        let mut policies: Vec<String> = found.iter().map(|(p, _, _)| p.clone()).collect();
        policies.dedup();
        let baseline = if policies.iter().any(|p| p == "native") {
            "native".to_string()
        } else {
            policies[0].clone()
        };
        Manifest {
            workload: read_trace(&found[0].2)?.header.workload.name,
            repeat: 0,
            policies,
            baseline,
            solo: None,
        }
    };
    if let Some(b) = baseline {
        manifest.baseline = b.to_string();
    }
    let runs = manifest
        .policies
        .iter()
        .map(|p| {
            let traces = found
                .iter()
                .filter(|(q, _, _)| q == p)
                .map(|(_, _, t)| t.clone())
                .collect();
            (p.clone(), traces)
        })
        .collect();
    Ok(Saved::Comparison(SavedComparison {
        dir: path.to_path_buf(),
        manifest,
        runs,
    }))
}

impl SavedComparison {
    /// Every run's metrics, compared as `compare` did (each trace is read,
    /// measured and dropped, so a large comparison needs one trace in memory).
    pub fn comparison(&self) -> Result<Comparison, HarnessError> {
        let solo = self.manifest.solo.as_ref();
        let runs = self
            .runs
            .iter()
            .map(|(policy, traces)| {
                let metrics = traces
                    .iter()
                    .map(|t| Ok(RunMetrics::from_trace(&read_trace(t)?, solo)))
                    .collect::<Result<Vec<_>, HarnessError>>()?;
                Ok((policy.clone(), metrics))
            })
            .collect::<Result<Vec<_>, HarnessError>>()?;
        Ok(Comparison::new(&self.manifest.baseline, runs))
    }

    /// The first run of each policy that has one: policy, trace, metrics.
    pub fn first_runs(&self) -> Result<Vec<(String, Trace, RunMetrics)>, HarnessError> {
        self.runs
            .iter()
            .filter_map(|(p, traces)| Some((p, traces.first()?)))
            .map(|(p, t)| {
                let trace = read_trace(t)?;
                let metrics = RunMetrics::from_trace(&trace, self.manifest.solo.as_ref());
                Ok((p.clone(), trace, metrics))
            })
            .collect()
    }
}
