//! Simulated applications (docs/simulator.md, Apps): what an app does, as the contention model
//! needs it — phases of work, how much of it touches the last-level cache and
//! memory, how big its working sets are, and how its threads synchronize.
//!
//! An app is a sequence of phases. A serial phase runs on the main thread; a
//! parallel phase splits its work evenly over a team (bulk-synchronous: the phase
//! ends when the slowest member is done, as with OpenMP's static schedule).
//! Work is counted in instructions, so the same model runs slower on a slower
//! platform or under contention.

mod library;

pub use library::{model, model_names, models};
use serde::{Deserialize, Serialize};

/// Serial (main thread only) or parallel (the whole team).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PhaseKind {
    Serial,
    Parallel,
}

/// One phase of an app.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Phase {
    pub kind: PhaseKind,
    /// Work of the phase, 10^9 instructions (all threads together).
    pub ginstr: f64,
}

impl Phase {
    pub fn serial(ginstr: f64) -> Self {
        Self {
            kind: PhaseKind::Serial,
            ginstr,
        }
    }

    pub fn parallel(ginstr: f64) -> Self {
        Self {
            kind: PhaseKind::Parallel,
            ginstr,
        }
    }
}

/// A simulated application's character (docs/simulator.md, Apps).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AppModel {
    /// The name workload files give as `model`.
    pub name: String,
    /// One line: which paper benchmark it stands for and what it stresses.
    pub about: String,
    pub phases: Vec<Phase>,
    /// Compute intensity: cycles per instruction when every access hits in the
    /// private caches.
    pub cpi: f64,
    /// Memory access rate: last-level-cache accesses (private-cache misses) per
    /// 1000 instructions.
    pub llc_apki: f64,
    /// Fraction of LLC accesses that would hit if the whole working set fit in
    /// the cache; the rest stream (compulsory misses whatever the cache size).
    pub reuse: f64,
    /// Private working set of each thread, MiB.
    pub private_mb: f64,
    /// Working set shared by all threads of the app, MiB (one copy per cache
    /// that holds it).
    pub shared_mb: f64,
    /// Fraction of LLC accesses that go to the shared working set.
    pub shared_fraction: f64,
    /// Fraction of shared accesses that touch lines another thread has written
    /// (coherence transfers when that thread is under another cache).
    pub write_sharing: f64,
    /// Memory-level parallelism: misses a core overlaps, dividing the unloaded
    /// memory latency it stalls for (prefetch-friendly streams overlap more).
    pub mlp: f64,
    /// Barriers per 10^9 instructions of each thread in parallel phases.
    pub barriers_per_ginstr: f64,
    /// Fraction of parallel work inside one lock (serialized across the team).
    pub lock_fraction: f64,
    /// Acquisitions of that lock per 10^9 instructions (of all threads
    /// together): each one taken over from a holder on another CPU moves the
    /// lock's lines between private caches (`engine/lock.rs`).
    #[serde(default)]
    pub lock_acquires_per_ginstr: f64,
    /// An OpenMP app: its team is created at the first parallel phase and its
    /// DoP may change at each parallel phase (when the workload says `malleable`).
    pub openmp: bool,
}

impl AppModel {
    /// The same app under `name`, doing `phases` instead of its own: a
    /// variant of a library model for a scenario (a test's one-long-region
    /// program written from SP's character).
    pub fn variant(&self, name: &str, phases: Vec<Phase>) -> Self {
        Self {
            name: name.into(),
            phases,
            ..self.clone()
        }
    }

    /// The same app with every phase's work multiplied by `factor`: a shorter
    /// (or longer) run of the same structure — serial setup, the same number
    /// of parallel regions, serial steps — for tests that need seconds of
    /// simulated time rather than minutes.
    pub fn scaled(&self, factor: f64) -> Self {
        let mut m = self.clone();
        for p in &mut m.phases {
            p.ginstr *= factor;
        }
        m
    }

    /// Total work, 10^9 instructions.
    pub fn total_ginstr(&self) -> f64 {
        self.phases.iter().map(|p| p.ginstr).sum()
    }

    /// Checks the ranges the contention model relies on, naming the field.
    pub fn validate(&self) -> Result<(), ModelError> {
        let fractions = [
            ("reuse", self.reuse),
            ("shared_fraction", self.shared_fraction),
            ("write_sharing", self.write_sharing),
            ("lock_fraction", self.lock_fraction),
        ];
        for (field, v) in fractions {
            if !(0.0..=1.0).contains(&v) {
                return Err(ModelError::NotAFraction {
                    model: self.name.clone(),
                    field,
                    value: v,
                });
            }
        }
        let non_negative = [
            ("llc_apki", self.llc_apki),
            ("private_mb", self.private_mb),
            ("shared_mb", self.shared_mb),
            ("barriers_per_ginstr", self.barriers_per_ginstr),
            ("lock_acquires_per_ginstr", self.lock_acquires_per_ginstr),
        ];
        for (field, v) in non_negative {
            if !(v.is_finite() && v >= 0.0) {
                return Err(ModelError::Negative {
                    model: self.name.clone(),
                    field,
                    value: v,
                });
            }
        }
        for (field, v) in [("cpi", self.cpi), ("mlp", self.mlp)] {
            if !(v.is_finite() && v > 0.0) {
                return Err(ModelError::NotPositive {
                    model: self.name.clone(),
                    field,
                    value: v,
                });
            }
        }
        if self.phases.is_empty()
            || self
                .phases
                .iter()
                .any(|p| p.ginstr.is_nan() || p.ginstr <= 0.0)
        {
            return Err(ModelError::NoWork {
                model: self.name.clone(),
            });
        }
        Ok(())
    }
}

/// A model field out of the range the contention model relies on
/// ([`AppModel::validate`]), naming the model and the field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    #[error("model {model}: `{field}` must be in [0, 1], found {value}")]
    NotAFraction {
        model: String,
        field: &'static str,
        value: f64,
    },
    #[error("model {model}: `{field}` must be >= 0, found {value}")]
    Negative {
        model: String,
        field: &'static str,
        value: f64,
    },
    #[error("model {model}: `{field}` must be > 0, found {value}")]
    NotPositive {
        model: String,
        field: &'static str,
        value: f64,
    },
    #[error("model {model}: needs at least one phase, each with work > 0")]
    NoWork { model: String },
}
