//! The profile's measurement procedure (docs/trace-format.md, Measurement
//! procedures; [`crate::procedure`]): ReSense's level runs and Tang et al.'s
//! sharing runs, and the profile's figures as pure functions of their traces.
//!
//! The directory of a procedure holds `procedure.json` ([`ProcedureManifest`]:
//! the platform, each app's identity and its planned runs) and one
//! sub-directory per run with its `trace.jsonl`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::ProcedureError;
use super::{
    AppIdentity, Configurations, NotCharacterizable, PlatformFingerprint, Sensitivity, Signal,
};
use crate::procedure::finished;
use crate::topology::ResourceKind;
use crate::trace::Trace;

pub use crate::procedure::{PinnedApp, PlannedRun};

/// The file name of a procedure's manifest in its directory.
pub const MANIFEST: &str = "procedure.json";

/// What a procedure's directory holds besides the traces: enough to recompute
/// every figure from them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProcedureManifest {
    pub platform: PlatformFingerprint,
    /// What ReSense's runs are measured by.
    pub signal: Signal,
    pub apps: Vec<ManifestApp>,
}

/// One characterized app of a manifest: its directory is `name`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ManifestApp {
    pub name: String,
    pub identity: AppIdentity,
    /// ReSense's levels, innermost first, as the profile lists them.
    #[serde(default)]
    pub levels: Vec<ManifestLevel>,
    /// The sharing-substitute runs (docs/policies/tang-atom.md,
    /// Characteristics), empty where none were planned.
    #[serde(default)]
    pub sharing_runs: Vec<PlannedRun>,
    /// Why no sharing characteristics were measured, when none were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharing_not_measured: Option<String>,
}

/// One ReSense level of a manifest (§2.2): its planned baseline and
/// contention runs, or why it was not characterized.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ManifestLevel {
    pub level: ResourceKind,
    /// Threads of each run (the score's `threads`).
    pub threads: u32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<PlannedRun>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_characterizable: Option<NotCharacterizable>,
    /// Each run's cycles by its `dir`, where they were counted around the run
    /// because the backend's traces do not hold them (this machine with
    /// hardware counters: `coloc_linux::usage`); they stand in for the
    /// trace's `exit` `usage.cycles` of that run.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metered_cycles: BTreeMap<String, f64>,
}

/// Role of a ReSense run with the app's threads over two instances of the level.
pub const BASELINE: &str = "baseline";
/// Role of a ReSense run with all of them under one instance.
pub const CONTENTION: &str = "contention";

/// What one run of `app` consumed, in `signal`'s unit, from its trace: its
/// whole-life CPU time or cycles as the `exit` event carries them, or the
/// time from its `start` to its `exit`; or why the run gives none (it
/// failed, or the trace does not hold that figure).
pub fn run_figure(trace: &Trace, app: &str, signal: Signal) -> Result<f64, ProcedureError> {
    let run = finished(trace, app)?;
    let missing = |what| ProcedureError::NotCounted { what };
    Ok(match signal {
        Signal::Wall => run.elapsed.as_nanos() as f64,
        Signal::TaskClock => run.usage.ok_or_else(|| missing("usage"))?.cpu_ns as f64,
        Signal::Cycles => run
            .usage
            .and_then(|u| u.cycles)
            .ok_or_else(|| missing("cycles"))? as f64,
    })
}

/// A level's score from its runs and their traces (in the order of `runs`):
/// Equation 1 over the baseline and contention figures of `app`, each its
/// [`run_figure`], or for cycles the level's `metered_cycles` of that run
/// where it has them (the run must still have succeeded).
pub fn level_from_traces(
    level: &ManifestLevel,
    app: &str,
    signal: Signal,
    traces: &[Trace],
) -> Result<Sensitivity, ProcedureError> {
    let runs = level.runs.iter().zip(traces);
    score_runs(runs, signal, level.threads, |run, trace| {
        if signal == Signal::Cycles && !level.metered_cycles.is_empty() {
            // Counted around the run: its trace says only whether it succeeded.
            run_figure(trace, app, Signal::Wall).and_then(|_| {
                level
                    .metered_cycles
                    .get(&run.dir)
                    .copied()
                    .ok_or(ProcedureError::CyclesNotMetered)
            })
        } else {
            run_figure(trace, app, signal)
        }
    })
}

/// Equation 1 over paired runs, each with its trace: each run's `figure` (in
/// `signal`'s unit), by its role, baseline or contention; a run that gives
/// none, or has another role, names its directory. ReSense's levels and Tang
/// et al.'s data sharing substitute ([`super::shared_cache`]) score their
/// runs this way.
pub fn score_runs<'a>(
    runs: impl IntoIterator<Item = (&'a PlannedRun, &'a Trace)>,
    signal: Signal,
    threads: u32,
    figure: impl Fn(&PlannedRun, &Trace) -> Result<f64, ProcedureError>,
) -> Result<Sensitivity, ProcedureError> {
    let (mut baseline, mut contention) = (Vec::new(), Vec::new());
    for (run, trace) in runs {
        let figure = figure(run, trace).map_err(|e| e.in_run(&run.dir))?;
        match run.role.as_str() {
            BASELINE => baseline.push(figure),
            CONTENTION => contention.push(figure),
            other => {
                let role = other.to_string();
                return Err(ProcedureError::UnknownRole { role }.in_run(&run.dir));
            }
        }
    }
    Ok(Sensitivity::from_runs(
        signal, threads, baseline, contention,
    )?)
}

/// A level's planned runs: `repeat` times the baseline then the contention
/// configuration, one thread per CPU listed.
pub fn level_runs(app: &str, label: &str, c: &Configurations, repeat: u32) -> Vec<PlannedRun> {
    (0..repeat)
        .flat_map(|rep| {
            [(BASELINE, &c.baseline), (CONTENTION, &c.contention)].map(|(role, cpus)| PlannedRun {
                dir: format!("{label}-{role}-{rep}"),
                role: role.into(),
                apps: vec![PinnedApp {
                    name: app.into(),
                    cpus: cpus.clone(),
                    args: Vec::new(),
                }],
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpuset::Cpu;
    use crate::metrics::testtrace::{trace, Ev};
    use crate::procedure::FinishedError;

    /// The plan of a level: `repeat` pairs, baseline then contention, one
    /// directory each, the app's threads on the configuration's CPUs.
    #[test]
    fn level_runs_alternate() {
        let c = Configurations {
            threads: 2,
            baseline: vec![0, 2],
            contention: vec![0, 1],
            caveats: Vec::new(),
        };
        let got: Vec<(String, String, Vec<Cpu>)> = level_runs("a", "L2", &c, 2)
            .into_iter()
            .map(|r| {
                assert_eq!(r.apps.len(), 1);
                assert_eq!(r.apps[0].name, "a");
                (r.dir, r.role, r.apps[0].cpus.clone())
            })
            .collect();
        let want = [
            ("L2-baseline-0", BASELINE, vec![0, 2]),
            ("L2-contention-0", CONTENTION, vec![0, 1]),
            ("L2-baseline-1", BASELINE, vec![0, 2]),
            ("L2-contention-1", CONTENTION, vec![0, 1]),
        ]
        .map(|(d, r, c)| (d.to_string(), r.to_string(), c));
        assert_eq!(got, want);
    }

    /// Each signal's figure from a trace: wall from start to exit, CPU time
    /// and cycles from the exit's usage; what a trace lacks is an error.
    #[test]
    fn run_figure_per_signal() {
        let with = |cycles| {
            trace(
                "static",
                &["probe", "a"],
                &[
                    (0.5, Ev::Start(1, 0)),
                    (2.0, Ev::ExitUsage(1, 0, 3000, cycles)),
                ],
            )
        };
        let failed = trace(
            "static",
            &["a"],
            &[(0.0, Ev::Start(0, 0)), (1.0, Ev::Exit(0, 0, 2))],
        );
        let unknown = ProcedureError::Finished(FinishedError::NoApp { app: "b".into() });
        let no_cycles = ProcedureError::NotCounted { what: "cycles" };
        let code_2 =
            ProcedureError::Finished(FinishedError::Failed(crate::trace::ExitStatus::Code(2)));
        assert_eq!(
            no_cycles.to_string(),
            "its exit holds no cycles (this backend does not count it)"
        );
        let cases: [(&Trace, &str, Signal, Result<f64, ProcedureError>); 6] = [
            (&with(Some(7)), "a", Signal::Wall, Ok(1.5e9)),
            (&with(Some(7)), "a", Signal::TaskClock, Ok(3e9)),
            (&with(Some(7)), "a", Signal::Cycles, Ok(7.0)),
            (&with(None), "a", Signal::Cycles, Err(no_cycles)),
            (&with(None), "b", Signal::Wall, Err(unknown)),
            (&failed, "a", Signal::Wall, Err(code_2)),
        ];
        for (t, app, signal, want) in cases {
            assert_eq!(run_figure(t, app, signal), want, "{app} {signal}");
        }
    }

    /// Equation 1 over the figures of the level's runs, by role; a run that
    /// gives no figure names its directory; cycles counted around the runs
    /// stand in for the traces' (which lack them), one missing is an error.
    #[test]
    fn level_from_traces_scores_by_role() {
        let c = Configurations {
            threads: 2,
            baseline: vec![0, 2],
            contention: vec![0, 1],
            caveats: Vec::new(),
        };
        let mut level = ManifestLevel {
            level: ResourceKind::Cache { level: 2 },
            threads: 2,
            runs: level_runs("a", "L2", &c, 1),
            not_characterizable: None,
            metered_cycles: BTreeMap::new(),
        };
        let run = |cpu_ms| {
            trace(
                "static",
                &["a"],
                &[
                    (0.0, Ev::Start(0, 0)),
                    (1.0, Ev::ExitUsage(0, 0, cpu_ms, None)),
                ],
            )
        };
        let traces = [run(1000), run(1250)];
        let score = |level: &ManifestLevel, signal| level_from_traces(level, "a", signal, &traces);
        let want = |signal, b, c| Sensitivity::from_runs(signal, 2, vec![b], vec![c]);
        assert_eq!(
            score(&level, Signal::TaskClock),
            Ok(want(Signal::TaskClock, 1e9, 1.25e9).unwrap())
        );
        assert_eq!(
            score(&level, Signal::Cycles),
            Err(ProcedureError::NotCounted { what: "cycles" }.in_run("L2-baseline-0"))
        );
        level.metered_cycles.insert("L2-baseline-0".into(), 4e9);
        let not_metered = score(&level, Signal::Cycles).unwrap_err();
        assert_eq!(
            not_metered,
            ProcedureError::CyclesNotMetered.in_run("L2-contention-0")
        );
        assert_eq!(
            not_metered.to_string(),
            "run L2-contention-0: its cycles were not counted"
        );
        level.metered_cycles.insert("L2-contention-0".into(), 3e9);
        assert_eq!(
            score(&level, Signal::Cycles),
            Ok(want(Signal::Cycles, 4e9, 3e9).unwrap())
        );
    }
}
