//! What coloc learns about each program from the runs it manages
//! (docs/knowledge.md): plain records and pure functions over them.
//!
//! Problem: what a policy knows of an app before it runs (its solo times per
//! team size, how fast it ran beside others) was kept per workload file, so
//! the same program run from two workload files was two strangers, and the
//! node service, whose apps come from no workload file, knew nothing.
//!
//! Approach: every managed instance of a program leaves one [`Record`] when
//! it ends (and, while it runs long, a snapshot of the record so far), filed
//! under its [`ProgramKey`] — the executable's content hash and its
//! arguments — not under its name. A record keeps raw quantities (seconds
//! alone and shared, CPU time, OpenMP counts), never rates: the rates a
//! policy reads are computed when it reads them ([`derive`](mod@derive)), with the solo
//! times known then, as metrics are recomputed from traces
//! (docs/architecture.md, Conventions). Each record says under which
//! [`Arrangement`] and beside which [`Partner`] it was measured, so a reader
//! takes only what was measured the way it will be used. [`Learner`] makes
//! records from trace events, one at a time: the harness feeds it a finished
//! run's trace, the node service its events as they happen.

pub mod check;
pub mod derive;
mod learn;
pub mod provenance;
pub mod rate;
#[cfg(test)]
mod tests;
pub mod trials;

use std::fmt;

use serde::{Deserialize, Serialize};

pub use self::learn::{Learner, HELD, SNAPSHOT_EVERY};
pub use crate::arrangement::Arrangement;
use crate::profile::{AppIdentity, AppSource};

/// Records kept per program, team size, arrangement, partner and kind
/// (ended or snapshot): the latest, so that a program whose input or
/// behaviour changed is relearned. The co-run file this replaces kept the
/// same number per pair of apps (a comparison of five runs under each of
/// five policies adds up to 25 of an app's records).
pub const KEPT: usize = 32;

/// Which program a record is about: the executable's content hash and the
/// arguments it ran with, `argv[0]` left out (the hash says which file it
/// is, however it was named). A rebuilt binary is a new program; the same
/// binary with the same arguments under two workload names is one.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ProgramKey {
    /// `sha256:<hex>` of the executable, or `model:<name>` for a simulated
    /// model.
    pub exe: String,
    /// `argv[1..]`; None when they are not known (a process attached whose
    /// command line could not be read): the executable alone, which a lookup
    /// matches with every record of that executable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
}

impl ProgramKey {
    /// A real program: its executable's hash and its argv.
    pub fn program(exe_hash: &str, argv: &[String]) -> Self {
        Self {
            exe: exe_hash.to_string(),
            args: Some(argv.iter().skip(1).cloned().collect()),
        }
    }

    /// A simulated model.
    pub fn model(model: &str) -> Self {
        Self {
            exe: format!("model:{model}"),
            args: Some(Vec::new()),
        }
    }

    /// The key of the program a profile was measured for.
    pub fn of_identity(identity: &AppIdentity) -> Self {
        match &identity.source {
            AppSource::Program { command, exe_hash } => Self::program(exe_hash, command),
            AppSource::Model { model } => Self::model(model),
        }
    }

    /// The string the store files it under: the executable, then the
    /// arguments as JSON (which keeps `["a b"]` and `["a", "b"]` apart).
    pub fn key(&self) -> String {
        match &self.args {
            Some(args) => format!(
                "{} {}",
                self.exe,
                serde_json::to_string(args).unwrap_or_default()
            ),
            None => self.exe.clone(),
        }
    }

    /// Whether a record filed under `other` is about this program: the same
    /// executable, and the same arguments unless these are unknown.
    pub fn covers(&self, other: &ProgramKey) -> bool {
        self.exe == other.exe && (self.args.is_none() || self.args == other.args)
    }
}

impl fmt::Display for ProgramKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let exe = self.exe.strip_prefix("sha256:").map_or(&*self.exe, |h| {
            // 12 hex digits name a file among a machine's programs.
            &h[..h.len().min(12)]
        });
        match &self.args {
            Some(a) if a.is_empty() => write!(f, "{exe}"),
            Some(a) => write!(f, "{exe} {}", a.join(" ")),
            None => write!(f, "{exe} (any arguments)"),
        }
    }
}

/// Whom an instance shared the machine with.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Partner {
    /// No one.
    None,
    /// Exactly one other instance overlapped its life, so while it ran that
    /// one shared the machine with it alone: a clean pair.
    Program { program: ProgramKey, name: String },
    /// An instance of a program coloc could not identify, or several
    /// instances, this many.
    Others { instances: u32 },
}

impl Partner {
    /// The store's column: empty, the partner's key, or `*`.
    pub fn key(&self) -> String {
        match self {
            Partner::None => String::new(),
            Partner::Program { program, .. } => program.key(),
            Partner::Others { .. } => "*".into(),
        }
    }
}

/// Where a record came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// A harness run (`coloc run`, `compare`, `bench`, `sim`).
    Run,
    /// `coloc solo`: measured alone on purpose.
    Solo,
    /// The node service.
    Daemon,
    /// A workload's solo-time or co-run file of an earlier coloc.
    Migrated,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Run => "run",
            Source::Solo => "solo",
            Source::Daemon => "daemon",
            Source::Migrated => "migrated",
        }
    }
}

/// What an OpenMP runtime reported over an instance's life through the DoP
/// channel (its last observation): the region structure and progress.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OmpTotals {
    pub regions: u64,
    pub iterations: u64,
    /// `omp_get_max_threads()` calls outside regions (OpenBLAS: its calls).
    pub calls: u64,
    /// Seconds inside parallel regions.
    pub parallel_secs: f64,
    /// Seconds from the instance's start to the observation these come from.
    pub observed_secs: f64,
    /// The longest span over which one region was seen at consecutive
    /// observations, and the run's epoch: what a whole run says of how long
    /// its regions last (`coloc_model::metrics::regions`; the DoP policies'
    /// reversible-first rule reads them, docs/policies/auto.md). None in
    /// records made before they were kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub longest_region_secs: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epoch_secs: Option<f64>,
}

impl OmpTotals {
    /// Mean seconds per region, where any ended.
    pub fn mean_region_secs(&self) -> Option<f64> {
        (self.regions > 0).then(|| self.parallel_secs / self.regions as f64)
    }

    /// The share of the observed time outside parallel regions.
    pub fn serial_fraction(&self) -> Option<f64> {
        (self.observed_secs > 0.0)
            .then(|| (1.0 - self.parallel_secs / self.observed_secs).clamp(0.0, 1.0))
    }

    /// Progress per second: worksharing iterations where the runtime counted
    /// any, else calls, else regions (the order `auto`'s trial reads them
    /// in, docs/policies/auto.md), with the unit's name.
    pub fn progress_per_sec(&self) -> Option<(f64, &'static str)> {
        if self.observed_secs <= 0.0 {
            return None;
        }
        let (n, unit) = if self.iterations > 0 {
            (self.iterations, "iterations")
        } else if self.calls > 0 {
            (self.calls, "calls")
        } else if self.regions > 0 {
            (self.regions, "regions")
        } else {
            return None;
        };
        Some((n as f64 / self.observed_secs, unit))
    }
}

/// One instance of a program, as measured: what the store keeps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub program: ProgramKey,
    /// The app's name in that run (for people; never matched on).
    pub name: String,
    /// Which run instance (unique on the machine: the run's start, the app
    /// and the instance's pid), so a snapshot is replaced by the next one and
    /// an import adds a record once.
    pub instance: String,
    /// The team size it ran with for [`HELD`] of its life: its thread
    /// count, or the DoP coloc set; None when neither held.
    pub threads: Option<u32>,
    pub arrangement: Arrangement,
    pub partner: Partner,
    pub source: Source,
    /// When it was measured (its exit, or the snapshot), seconds since the
    /// Unix epoch; a simulated run's records are dated at the run's start
    /// (its times are simulated, not wall time).
    pub at_unix: i64,
    /// False for a snapshot of an instance still running.
    pub ended: bool,
    /// Seconds from its start to its exit (or the snapshot).
    pub wall_secs: f64,
    /// CPU time of all its threads and reaped children, where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_secs: Option<f64>,
    /// Seconds of its life another instance ran too.
    pub shared_secs: f64,
    /// Those seconds with a span shared by `n` instances counted as `2 / n`
    /// of one shared by two: the CPUs were split `n` ways, not two
    /// ([`derive`](mod@derive)'s rates).
    pub weighted_secs: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omp: Option<OmpTotals>,
}

impl Record {
    /// An ended run of `program` alone on the whole machine with a team of
    /// `threads`, `wall_secs` long: a solo time, as `coloc solo` measures
    /// one, a migrated file holds one, or a test states one.
    pub fn solo_time(
        program: ProgramKey,
        name: String,
        instance: String,
        threads: u32,
        wall_secs: f64,
        source: Source,
        at_unix: i64,
    ) -> Record {
        Record {
            program,
            name,
            instance,
            threads: Some(threads),
            arrangement: Arrangement::Alone,
            partner: Partner::None,
            source,
            at_unix,
            ended: true,
            wall_secs,
            cpu_secs: None,
            shared_secs: 0.0,
            weighted_secs: 0.0,
            omp: None,
        }
    }

    /// Whether it can serve as a solo time: it ended, ran alone on the whole
    /// machine at one team size.
    pub fn is_solo_time(&self) -> bool {
        self.ended && self.arrangement == Arrangement::Alone && self.threads.is_some()
    }
}
