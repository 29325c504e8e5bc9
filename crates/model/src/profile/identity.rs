//! Whose profile it is and on which machine it was measured.
//!
//! A sensitivity score belongs to one program on one platform (ReSense §2.2: the
//! characterization "needs to be done only once for a particular shared resource on
//! the target platform"). The identity says which program — what it runs, so that a
//! rebuilt binary or other arguments are profiled anew — and the fingerprint says
//! which platform, so that a profile is never applied to another machine.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::topology::Topology;
use crate::workload::AppSpec;

/// What a profile was measured for.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct AppIdentity {
    /// The app's name in the workload file, for people and as the fallback match.
    pub name: String,
    pub source: AppSource,
}

/// What the app runs.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum AppSource {
    /// A real program: its argv (inputs change an app's behaviour, so they are part
    /// of what was measured) and a content hash of the executable, written by whoever
    /// reads the file (the CLI), e.g. `sha256:<hex>`.
    Program {
        command: Vec<String>,
        exe_hash: String,
    },
    /// A simulated app model, by its library name.
    Model { model: String },
}

/// How a profile was matched to a workload app.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Match {
    /// Same model, or same argv.
    Identity,
    /// Only the app's name agrees.
    Name,
}

impl AppIdentity {
    /// A real program's identity.
    pub fn program(name: &str, command: Vec<String>, exe_hash: &str) -> Self {
        Self {
            name: name.to_string(),
            source: AppSource::Program {
                command,
                exe_hash: exe_hash.to_string(),
            },
        }
    }

    /// A simulated model's identity.
    pub fn model(name: &str, model: &str) -> Self {
        Self {
            name: name.to_string(),
            source: AppSource::Model {
                model: model.to_string(),
            },
        }
    }

    /// The key the profile store files it under: `model:<name>`, or
    /// `program:<hash>:<argv as JSON>` (JSON keeps `["a b"]` and `["a", "b"]`
    /// apart). The display name is not part of it: two workloads that call the same
    /// program differently share its profile.
    pub fn key(&self) -> String {
        match &self.source {
            AppSource::Model { model } => format!("model:{model}"),
            AppSource::Program { command, exe_hash } => format!(
                "program:{exe_hash}:{}",
                serde_json::to_string(command).unwrap_or_default()
            ),
        }
    }

    /// Whether this identity is the one of the workload app `spec`: by what it runs
    /// (the same model, or the same argv), else by name. The executable's hash cannot
    /// be checked here (policies do no I/O): whoever hands profiles to a policy (the
    /// CLI) hands only those whose hash matches the executable on this machine.
    pub fn matches(&self, spec: &AppSpec) -> Option<Match> {
        let same_source = match &self.source {
            AppSource::Model { model } => spec.model.as_ref() == Some(model),
            AppSource::Program { command, .. } => spec.command.as_ref() == Some(command),
        };
        if same_source {
            Some(Match::Identity)
        } else if self.name == spec.name {
            Some(Match::Name)
        } else {
            None
        }
    }
}

impl fmt::Display for AppIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.source {
            AppSource::Model { model } if *model == self.name => write!(f, "model {model}"),
            AppSource::Model { model } => write!(f, "{} (model {model})", self.name),
            AppSource::Program { command, .. } => {
                write!(f, "{} (`{}`)", self.name, command.join(" "))
            }
        }
    }
}

/// The platform a profile was measured on: the CPU model and the topology's shape.
/// Two machines with the same part and the same shape (and the same CPUs allowed)
/// are one platform.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PlatformFingerprint {
    /// `/proc/cpuinfo` "model name", or the simulated platform's description.
    pub cpu_model: String,
    /// [`Topology::shape_hash`].
    pub shape_hash: u64,
}

impl PlatformFingerprint {
    pub fn of(topology: &Topology) -> Self {
        Self {
            cpu_model: topology.cpu_model.clone(),
            shape_hash: topology.shape_hash(),
        }
    }

    /// The key the profile store files it under: `<shape hash, 16 hex digits>/<cpu model>`.
    pub fn key(&self) -> String {
        format!("{:016x}/{}", self.shape_hash, self.cpu_model)
    }
}

impl fmt::Display for PlatformFingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{}\" shape {:016x}", self.cpu_model, self.shape_hash)
    }
}
