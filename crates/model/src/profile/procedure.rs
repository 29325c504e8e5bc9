//! The one shape of a measurement procedure (docs/trace-format.md,
//! Measurement procedures): a list of planned runs, each an ordinary run of
//! the Manager under the `static` policy with every app's thread i pinned to
//! its `cpus[i]`, writing an ordinary trace. What the procedure yields (a
//! profile's figures) is a pure function of those traces, so it can be
//! recomputed from a stored directory without running anything again, as
//! `coloc report` recomputes a report.
//!
//! The directory of a procedure holds `procedure.json` ([`ProcedureManifest`]:
//! the platform, each app's identity and its planned runs) and one
//! sub-directory per run with its `trace.jsonl`.

use serde::{Deserialize, Serialize};

use super::{AppIdentity, PlatformFingerprint};
use crate::cpuset::Cpu;

/// One app of a planned run: thread i pinned to `cpus[i]`, its DoP fixed at
/// `cpus.len()`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PinnedApp {
    /// The app's name: the characterized app's, or a probe's
    /// ([`PROBE`](super::substitute::PROBE)).
    pub name: String,
    pub cpus: Vec<Cpu>,
}

/// One run of a procedure, in the order it is made (the order alternates the
/// configurations compared, so a slow drift of the machine hits them alike).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedRun {
    /// Its directory, relative to the app's directory of the procedure.
    pub dir: String,
    /// What the run is to the procedure (`probe-alone`, `co-run`).
    pub role: String,
    /// Every app of the run, started together at time 0, once.
    pub apps: Vec<PinnedApp>,
}

/// The file name of a procedure's manifest in its directory.
pub const MANIFEST: &str = "procedure.json";

/// What a procedure's directory holds besides the traces: enough to recompute
/// every figure from them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProcedureManifest {
    pub platform: PlatformFingerprint,
    pub apps: Vec<ManifestApp>,
}

/// One characterized app of a manifest: its directory is `name`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ManifestApp {
    pub name: String,
    pub identity: AppIdentity,
    /// The sharing-substitute runs (docs/policies/tang-atom.md,
    /// Characteristics), empty where none were planned.
    #[serde(default)]
    pub sharing_runs: Vec<PlannedRun>,
    /// Why no sharing characteristics were measured, when none were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharing_not_measured: Option<String>,
}
