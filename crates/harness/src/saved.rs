//! Reading what `run`, `sim`, `compare` and `demo` wrote, for `coloc report`.
//!
//! A run's directory holds `trace.jsonl`. A comparison's directory holds one
//! run directory per run, named `POLICY-K` (K counts from 1), and
//! [`MANIFEST`], which says the policies in their order, the baseline and the
//! solo times used, so that a report recomputes exactly what `compare` printed.
//! A comparison directory without a manifest (an older coloc) is still read:
//! policies in name order, the baseline given or `native` or the first.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use coloc_model::metrics::{Comparison, RunMetrics, SoloTimes};
use coloc_model::Trace;
use serde::{Deserialize, Serialize};

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
    pub fn write(&self, dir: &Path) -> Result<()> {
        coloc_harness::output::create_out_dir(dir)?;
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
        write().with_context(|| format!("writing {}", path.display()))
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

/// Reads a trace file and checks its app indices ([`coloc_harness::read_trace`]).
pub fn read_trace(path: &Path) -> Result<Trace> {
    Ok(coloc_harness::read_trace(path)?)
}

/// What `path` holds: a trace file, a run directory or a comparison directory.
/// `baseline` overrides the manifest's (or, without one, the default).
pub fn open(path: &Path, baseline: Option<&str>) -> Result<Saved> {
    if !path.is_dir() {
        return Ok(Saved::Run(path.to_path_buf()));
    }
    let trace = path.join("trace.jsonl");
    if trace.exists() {
        return Ok(Saved::Run(trace));
    }
    let mut found: Vec<(String, u32, PathBuf)> = Vec::new();
    for entry in std::fs::read_dir(path).with_context(|| format!("reading {}", path.display()))? {
        let entry = entry.with_context(|| format!("reading {}", path.display()))?;
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
        bail!(
            "{} holds neither trace.jsonl (a run) nor POLICY-K/trace.jsonl directories (a comparison)",
            path.display()
        );
    }
    found.sort();
    let manifest_path = path.join(MANIFEST);
    let mut manifest = if manifest_path.exists() {
        let text = std::fs::read_to_string(&manifest_path)
            .with_context(|| format!("reading {}", manifest_path.display()))?;
        serde_json::from_str::<Manifest>(&text)
            .with_context(|| format!("reading {}", manifest_path.display()))?
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
    pub fn comparison(&self) -> Result<Comparison> {
        let solo = self.manifest.solo.as_ref();
        let runs = self
            .runs
            .iter()
            .map(|(policy, traces)| {
                let metrics = traces
                    .iter()
                    .map(|t| Ok(RunMetrics::from_trace(&read_trace(t)?, solo)))
                    .collect::<Result<Vec<_>>>()?;
                Ok((policy.clone(), metrics))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Comparison::new(&self.manifest.baseline, runs))
    }

    /// The first run of each policy that has one: policy, trace, metrics.
    pub fn first_runs(&self) -> Result<Vec<(String, Trace, RunMetrics)>> {
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

    /// The comparison's page.
    pub fn html(&self, cmp: &Comparison) -> Result<String> {
        crate::html::comparison_page(&self.manifest.workload, cmp, &self.first_runs()?)
    }
}
