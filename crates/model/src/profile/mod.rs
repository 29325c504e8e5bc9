//! Application profiles: an app's sensitivity vector on one platform (ReSense §2.2)
//! and its memory-sharing characteristics (Tang et al. §5, [`SharingCharacteristics`]).
//!
//! A profile holds, for every shared-resource level of the machine (named as
//! [`Topology::shared_resources`](crate::Topology::shared_resources) names them:
//! `L2`, `L3`, `FSB`, `MC`, `socket`), the sensitivity score of Equation 1, the
//! signal and runs it came from, or why that level could not be characterized. The
//! pure parts of the characterization live here too: which runs to make
//! ([`characterization_plan`]) and how to score them ([`sensitivity_score`]);
//! running them is the CLI's (`coloc profile`) or the simulator's job.

mod characterization;
mod identity;
pub mod procedure;
mod render;
mod score;
pub mod shared_cache;
mod sharing;
pub mod substitute;

use serde::{Deserialize, Serialize};

pub use self::characterization::{
    characterization_plan, Configurations, LevelPlan, NotCharacterizable,
};
pub use self::identity::{AppIdentity, AppSource, Match, PlatformFingerprint};
pub use self::render::{render, render_sharing};
pub use self::score::{sensitivity_score, ScoreError, Sensitivity, Signal, Spread};
pub use self::shared_cache::SharedCacheRuns;
pub use self::sharing::{
    counter_run, counter_run_cpus, llc_footprint, CounterTotals, SharingCharacteristics,
    SharingError, SharingSignal, COUNTERS, LINE_BYTES,
};
use crate::procedure::FinishedError;
use crate::topology::{ResourceKind, SharedResource};
use crate::trace::ExitStatus;
use crate::workload::AppSpec;

/// Why a profile's traces give no figure, or its runs cannot be planned on a
/// machine (ReSense §2.2's levels, Tang et al. §5's sharing substitute): what
/// the profile stores or `coloc profile` prints in its place (the texts
/// `coloc profiles show` has always shown). A failed run names its directory.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ProcedureError {
    /// The run in directory `dir` (relative to the procedure's) gave none.
    #[error("run {dir}: {error}")]
    InRun {
        dir: String,
        error: Box<ProcedureError>,
    },
    #[error(transparent)]
    Finished(#[from] FinishedError),
    /// Another app of the run (the measured one, beside the stream probe)
    /// ended badly.
    #[error("app \"{app}\" {status}")]
    AppFailed { app: String, status: ExitStatus },
    /// The exit event carries no `usage` or no `cycles`.
    #[error("its exit holds no {what} (this backend does not count it)")]
    NotCounted { what: &'static str },
    #[error("its cycles were not counted")]
    CyclesNotMetered,
    #[error("its exit holds no LLC counts (this backend does not count them)")]
    NoLlcCounts,
    #[error("the probe printed no metric")]
    NoProbeMetric,
    #[error("unknown role \"{role}\"")]
    UnknownRole { role: String },
    #[error(transparent)]
    Score(#[from] ScoreError),
    #[error(transparent)]
    Sharing(#[from] SharingError),
    /// Tang et al.'s data sharing runs, on a machine with `cores`.
    #[error("data sharing needs two cores to compare, this machine has {cores}")]
    SharingCores { cores: usize },
    /// The co-runs with the stream probe, on a machine with `cores`.
    #[error("co-runs with the stream probe need two cores, this machine has {cores}")]
    ProbeCores { cores: usize },
    #[error("app \"{probe}\": the name is the stream probe's; rename the app")]
    ProbeName { probe: &'static str },
    #[error("the probe did not exit")]
    ProbeNotExited,
    #[error(
        "app \"{app}\" ended before the probe: give it more work so the probe runs \
         beside it throughout"
    )]
    EndedBeforeProbe { app: String },
    #[error("the probe was never observed, so its share of the CPU is unknown")]
    ProbeNotObserved,
    #[error("the probe never ran on a CPU in its observations")]
    ProbeNeverRan,
    /// The bandwidths of the runs of `role` are missing or not finite and
    /// non-negative.
    #[error("{role}: expected at least one finite bandwidth >= 0, found {found:?}")]
    Bandwidths { role: &'static str, found: Vec<f64> },
    #[error("the counter run has no app")]
    CounterRunEmpty,
    #[error("no runs of the app's threads sharing a cache against apart were made")]
    NoSharedCacheRuns,
    /// The level whose runs would have given data sharing could not be
    /// characterized.
    #[error(
        "no runs of the app's threads sharing a cache against apart: {}: {reason}",
        level.label()
    )]
    SharedCacheLevel {
        level: ResourceKind,
        reason: NotCharacterizable,
    },
}

impl ProcedureError {
    /// This error as the run in `dir` gave it.
    pub fn in_run(self, dir: &str) -> Self {
        ProcedureError::InRun {
            dir: dir.to_string(),
            error: Box::new(self),
        }
    }
}

/// The outcome of characterizing one level.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum LevelResult {
    Scored(Sensitivity),
    NotCharacterizable { reason: NotCharacterizable },
}

/// One level of a profile.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LevelProfile {
    /// The level's kind, as [`SharedResource::kind`] has it on the profiled platform.
    pub level: ResourceKind,
    pub result: LevelResult,
}

/// An app's sensitivity vector on one platform.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AppProfile {
    pub identity: AppIdentity,
    pub platform: PlatformFingerprint,
    /// One entry per shared level of the platform, innermost first.
    pub levels: Vec<LevelProfile>,
    /// Tang et al.'s memory-sharing characteristics (§5), where measured;
    /// profiles written before they existed have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharing: Option<SharingCharacteristics>,
}

impl AppProfile {
    /// The level measured for `resource` (matched by its kind or a kind it coincides with).
    pub fn level(&self, resource: &SharedResource) -> Option<&LevelProfile> {
        self.levels
            .iter()
            .find(|l| l.level == resource.kind || resource.same_as.contains(&l.level))
    }

    /// The sensitivity score for `resource`, if it was characterized.
    pub fn score(&self, resource: &SharedResource) -> Option<f64> {
        match &self.level(resource)?.result {
            LevelResult::Scored(s) => Some(s.score),
            LevelResult::NotCharacterizable { .. } => None,
        }
    }
}

/// The profile for the workload app `spec`: one whose identity matches what the app
/// runs (its model, or its argv), else one with the app's name; the first such in
/// `profiles`.
pub fn find<'a>(profiles: &'a [AppProfile], spec: &AppSpec) -> Option<(&'a AppProfile, Match)> {
    profiles
        .iter()
        .filter_map(|p| p.identity.matches(spec).map(|m| (p, m)))
        .min_by_key(|(_, m)| *m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutils::app_spec;
    use crate::topology::Topology;

    fn profile(identity: AppIdentity, score: f64) -> AppProfile {
        let yorkfield = Topology::synthetic("y", "package:1 l2(6M):2 core:2").unwrap();
        AppProfile {
            sharing: None,
            identity,
            platform: PlatformFingerprint::of(&yorkfield),
            levels: vec![LevelProfile {
                level: ResourceKind::Cache { level: 2 },
                result: LevelResult::Scored(
                    Sensitivity::from_runs(Signal::Cycles, 2, vec![100.0], vec![100.0 - score])
                        .unwrap(),
                ),
            }],
        }
    }

    /// Identity wins over name; name is the fallback; nothing else matches.
    #[test]
    fn find_prefers_identity_then_name() {
        let mut by_model = app_spec("sc", 2);
        by_model.command = None;
        by_model.model = Some("streamcluster".into());
        let by_command = app_spec("mine", 2); // command ["true"]
        let mut by_name = app_spec("canneal", 2);
        by_name.command = Some(vec!["./canneal".into()]);
        let mut nothing = app_spec("other", 2);
        nothing.command = None;
        let profiles = vec![
            profile(AppIdentity::model("sc", "canneal"), 1.0),
            profile(AppIdentity::model("canneal", "canneal"), 2.0),
            profile(AppIdentity::model("x", "streamcluster"), 3.0),
            profile(
                AppIdentity::program("t", vec!["true".into()], "sha256:00"),
                4.0,
            ),
        ];
        let l2 = &Topology::synthetic("y", "package:1 l2(6M):2 core:2")
            .unwrap()
            .shared_resources()[0];
        let cases = [
            (&by_model, Some((3.0, Match::Identity))),
            (&by_command, Some((4.0, Match::Identity))),
            (&by_name, Some((2.0, Match::Name))),
            (&nothing, None),
        ];
        for (spec, want) in cases {
            let got = find(&profiles, spec).map(|(p, m)| (p.score(l2).unwrap().round(), m));
            assert_eq!(got, want, "{}", spec.name);
        }
    }

    /// Keys: models by name; programs by hash and argv, keeping argument
    /// boundaries; the display name is not part of the key.
    #[test]
    fn identity_keys() {
        let a = AppIdentity::program("a", vec!["x".into(), "y z".into()], "h");
        let b = AppIdentity::program("b", vec!["x".into(), "y".into(), "z".into()], "h");
        assert_eq!(a.key(), r#"program:h:["x","y z"]"#);
        assert_ne!(a.key(), b.key());
        assert_eq!(
            AppIdentity::model("n1", "mg").key(),
            AppIdentity::model("n2", "mg").key()
        );
    }

    #[test]
    fn profile_json_round_trips() {
        let p = profile(AppIdentity::model("sc", "streamcluster"), 9.9);
        let text = serde_json::to_string(&p).unwrap();
        assert_eq!(serde_json::from_str::<AppProfile>(&text).unwrap(), p);
    }
}
