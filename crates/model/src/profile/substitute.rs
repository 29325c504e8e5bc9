//! Tang et al.'s memory bandwidth characteristic (ISCA 2011 §5, Figure 21) on
//! a machine without LLC counters, from co-runs with a probe: the `stream`
//! kernel (docs/policies/tang-atom.md, Characteristics).
//!
//! Problem: the paper counts bus transactions; a VM exposes no such counter.
//! What an app takes from the memory bus is still visible in what is left for
//! a neighbour that wants all of it.
//!
//! Approach: a single-threaded STREAM triad (the *probe*) on one core reports
//! the bandwidth it got. Alone it gets what one core can draw; next to one
//! thread of the app on another core it loses what the app's traffic takes
//! from the shared bus and memory controller. The procedure alternates
//! `probe-alone` and `co-run` runs ([`sharing_runs`]); the app's bandwidth per
//! thread is the mean probe bandwidth alone minus the mean in the co-runs
//! (never below 0), and its LLC miss rate is that bandwidth in 64-byte lines
//! (the inverse of the paper's "transactions × 64 B"). The probe's bandwidth
//! is counted per second it was on a CPU, not per second of wall time, so that
//! time it spent queued behind other processes is not taken for the app's
//! traffic ([`probe_bandwidth`]). A co-run counts only
//! when the app was still running when the probe ended, so the whole probe
//! ran next to it. Data sharing comes from other runs, the app's threads
//! sharing a cache against apart ([`super::shared_cache`]), and the LLC
//! footprint is Equation 1 of the probe's miss rate with it; where those runs
//! give nothing both are absent with the reason.

use super::ProcedureError;
use crate::cpuset::Cpu;
use crate::procedure::FinishedError;
use crate::topology::Topology;
use crate::trace::{Trace, TraceEvent};

use super::procedure::{PinnedApp, PlannedRun, BASELINE, CONTENTION};
use super::shared_cache::shared_cache_runs;
use super::sharing::{from_counter_trace, COUNTERS, LINE_BYTES};
use super::{llc_footprint, LevelProfile, SharedCacheRuns, SharingCharacteristics, SharingSignal};

/// The probe's app name in the co-run workloads (never an app's own name:
/// [`sharing_runs`] refuses an app of that name).
pub const PROBE: &str = "stream-probe";

/// Role of a run with the probe alone.
pub const PROBE_ALONE: &str = "probe-alone";
/// Role of a run with the probe next to the app.
pub const CO_RUN: &str = "co-run";

/// Where the app and the probe run: the first PU of the first core and the
/// first PU of the last core (two cores, never SMT siblings), or why the
/// machine cannot host the co-runs.
pub fn corun_cpus(topology: &Topology) -> Result<(Cpu, Cpu), ProcedureError> {
    let cores = topology.cores();
    match (
        cores.first().and_then(|c| c.first()),
        cores.last().and_then(|c| c.first()),
    ) {
        (Some(app), Some(probe)) if cores.len() >= 2 => Ok((app, probe)),
        _ => Err(ProcedureError::ProbeCores { cores: cores.len() }),
    }
}

/// The planned runs for `app`, `repeat` times a probe-alone run then a co-run.
pub fn sharing_runs(
    app: &str,
    (app_cpu, probe_cpu): (Cpu, Cpu),
    repeat: u32,
) -> Result<Vec<PlannedRun>, ProcedureError> {
    if app == PROBE {
        return Err(ProcedureError::ProbeName { probe: PROBE });
    }
    let probe = PinnedApp {
        name: PROBE.into(),
        cpus: vec![probe_cpu],
        args: Vec::new(),
    };
    Ok((0..repeat)
        .flat_map(|rep| {
            [
                PlannedRun {
                    dir: format!("sharing-{PROBE_ALONE}-{rep}"),
                    role: PROBE_ALONE.into(),
                    apps: vec![probe.clone()],
                },
                PlannedRun {
                    dir: format!("sharing-{CO_RUN}-{rep}"),
                    role: CO_RUN.into(),
                    apps: vec![
                        PinnedApp {
                            name: app.into(),
                            cpus: vec![app_cpu],
                            args: Vec::new(),
                        },
                        probe.clone(),
                    ],
                },
            ]
        })
        .collect())
}

/// The bandwidth the probe got while it was on a CPU in one run's trace: the
/// GB/s it reported at exit (over wall time) divided by its share of the time
/// it was runnable that it ran (schedstat's run / (run + wait) in its last
/// observation), so that other processes queueing on the probe's CPU do not
/// pass for the app's memory traffic; or why the run does not count.
pub fn probe_bandwidth(trace: &Trace) -> Result<f64, ProcedureError> {
    let names = &trace.header.workload.apps;
    let index = |name: &str| names.iter().position(|a| a.name == name);
    let no_probe = || FinishedError::NoApp { app: PROBE.into() };
    let probe = index(PROBE).ok_or_else(no_probe)?;
    let exits: Vec<(
        usize,
        std::time::Duration,
        &crate::trace::ExitStatus,
        Option<f64>,
    )> = trace
        .events
        .iter()
        .filter_map(|e| match e {
            TraceEvent::Exit {
                t,
                app,
                status,
                metric,
                ..
            } => Some((app.app as usize, *t, status, *metric)),
            _ => None,
        })
        .collect();
    for (i, _, status, _) in &exits {
        if !status.success() {
            return Err(ProcedureError::AppFailed {
                app: names[*i].name.clone(),
                status: (*status).clone(),
            });
        }
    }
    let (_, probe_end, _, metric) = exits
        .iter()
        .find(|(i, ..)| *i == probe)
        .ok_or(ProcedureError::ProbeNotExited)?;
    for (i, a) in names.iter().enumerate().filter(|(i, _)| *i != probe) {
        match exits.iter().find(|(j, ..)| *j == i) {
            Some((_, end, ..)) if end >= probe_end => {}
            _ => {
                return Err(ProcedureError::EndedBeforeProbe {
                    app: a.name.clone(),
                })
            }
        }
    }
    let gbs = metric.ok_or(ProcedureError::NoProbeMetric)?;
    let (run, wait) = trace
        .events
        .iter()
        .rev()
        .find_map(|e| match e {
            TraceEvent::Obs(o) => o.apps.iter().find(|a| a.app.app as usize == probe),
            _ => None,
        })
        .map(|a| {
            a.threads
                .iter()
                .fold((0u64, 0u64), |(r, w), t| (r + t.run_ns, w + t.wait_ns))
        })
        .ok_or(ProcedureError::ProbeNotObserved)?;
    if run == 0 {
        return Err(ProcedureError::ProbeNeverRan);
    }
    Ok(gbs * (run + wait) as f64 / run as f64)
}

impl SharingCharacteristics {
    /// A substitute record with no figure, every one absent for `why` (the
    /// co-runs could not be made or failed): `coloc profiles show` says so.
    pub fn not_measured(why: String) -> Self {
        Self {
            signal: SharingSignal::StreamCoRuns,
            threads: 1,
            data_sharing: None,
            bandwidth_gbs: None,
            llc_miss_rate: None,
            llc_footprint: None,
            missing: vec![format!("every figure: {why}")],
            data_sharing_runs: None,
        }
    }
}

/// The characteristics from the probe's bandwidth in the probe-alone runs and
/// in the co-runs with one thread of the app, and the app's data sharing
/// runs (or why there are none): Equation 1 of the miss rate with their data
/// sharing gives the footprint.
pub fn from_probe_runs(
    alone: &[f64],
    corun: &[f64],
    shared: Result<SharedCacheRuns, ProcedureError>,
) -> Result<SharingCharacteristics, ProcedureError> {
    let mean = |v: &[f64], role: &'static str| {
        if v.is_empty() || v.iter().any(|x| !(x.is_finite() && *x >= 0.0)) {
            Err(ProcedureError::Bandwidths {
                role,
                found: v.to_vec(),
            })
        } else {
            Ok(v.iter().sum::<f64>() / v.len() as f64)
        }
    };
    let taken = (mean(alone, PROBE_ALONE)? - mean(corun, CO_RUN)?).max(0.0);
    // GB/s = 1e6 bytes per ms.
    let miss_rate = taken * 1e6 / LINE_BYTES;
    let (data_sharing, missing) = match &shared {
        Ok(runs) => (Some(runs.data_sharing()), Vec::new()),
        Err(why) => (
            None,
            vec![
                format!("data sharing: {why}"),
                "LLC footprint: Equation 1 needs data sharing".to_string(),
            ],
        ),
    };
    Ok(SharingCharacteristics {
        signal: SharingSignal::StreamCoRuns,
        threads: 1,
        data_sharing,
        bandwidth_gbs: Some(taken),
        llc_miss_rate: Some(miss_rate),
        llc_footprint: data_sharing.map(|s| llc_footprint(miss_rate, s, 1.0)),
        missing,
        data_sharing_runs: shared.ok(),
    })
}

/// `app`'s characteristics from a procedure's sharing runs and their traces
/// (in the order of `runs`): one counter run ([`COUNTERS`]), or the
/// stream-probe runs with the data sharing runs, its own one-core runs among
/// `runs` or ReSense's runs of the LLC among `levels`
/// ([`shared_cache_runs`]). The pure function `coloc profile` and `coloc
/// profile --from` both apply.
pub fn sharing_from_traces(
    app: &str,
    runs: &[PlannedRun],
    traces: &[Trace],
    levels: &[LevelProfile],
) -> Result<SharingCharacteristics, ProcedureError> {
    if let ([run], [trace]) = (runs, traces) {
        if run.role == COUNTERS {
            let app = run.apps.first().ok_or(ProcedureError::CounterRunEmpty)?;
            return from_counter_trace(trace, &app.name, app.cpus.len() as u32)
                .map_err(|e| e.in_run(&run.dir));
        }
    }
    let (mut alone, mut corun) = (Vec::new(), Vec::new());
    for (run, trace) in runs.iter().zip(traces) {
        let role = run.role.as_str();
        if role == BASELINE || role == CONTENTION {
            continue;
        }
        let gbs = probe_bandwidth(trace).map_err(|e| e.in_run(&run.dir))?;
        match role {
            PROBE_ALONE => alone.push(gbs),
            CO_RUN => corun.push(gbs),
            other => {
                let role = other.to_string();
                return Err(ProcedureError::UnknownRole { role }.in_run(&run.dir));
            }
        }
    }
    from_probe_runs(
        &alone,
        &corun,
        shared_cache_runs(app, runs.iter().zip(traces), levels),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan: alternating runs, the probe on the last core, the app's one
    /// thread on the first; one core is too few; the probe's name is reserved.
    #[test]
    fn plan_alternates_and_pins() {
        let two = Topology::synthetic("t", "core:2").unwrap();
        let smt = Topology::synthetic("t", "core:2 pu:2").unwrap();
        let one = Topology::synthetic("t", "core:1 pu:2").unwrap();
        type Case<'a> = (&'a Topology, Result<(Cpu, Cpu), ProcedureError>);
        let cases: [Case; 3] = [
            (&two, Ok((0, 1))),
            (&smt, Ok((0, 2))),
            (&one, Err(ProcedureError::ProbeCores { cores: 1 })),
        ];
        for (t, want) in cases {
            assert_eq!(corun_cpus(t), want);
        }
        assert_eq!(
            corun_cpus(&one).unwrap_err().to_string(),
            "co-runs with the stream probe need two cores, this machine has 1"
        );
        let runs = sharing_runs("a", (0, 1), 2).unwrap();
        /// Directory, role, each app's name and CPUs.
        type Outline<'a> = (&'a str, &'a str, Vec<(&'a str, &'a [Cpu])>);
        let got: Vec<Outline> = runs
            .iter()
            .map(|r| {
                (
                    r.dir.as_str(),
                    r.role.as_str(),
                    r.apps
                        .iter()
                        .map(|a| (a.name.as_str(), a.cpus.as_slice()))
                        .collect(),
                )
            })
            .collect();
        let probe: (&str, &[Cpu]) = (PROBE, &[1]);
        assert_eq!(
            got,
            vec![
                ("sharing-probe-alone-0", PROBE_ALONE, vec![probe]),
                ("sharing-co-run-0", CO_RUN, vec![("a", &[0][..]), probe]),
                ("sharing-probe-alone-1", PROBE_ALONE, vec![probe]),
                ("sharing-co-run-1", CO_RUN, vec![("a", &[0][..]), probe]),
            ]
        );
        assert_eq!(
            sharing_runs(PROBE, (0, 1), 1),
            Err(ProcedureError::ProbeName { probe: PROBE })
        );
    }

    /// 10 and 8 GB/s alone, 6 and 6 beside the app: it takes 3 GB/s, 46 875
    /// lines per ms; a co-run faster than alone takes nothing.
    #[test]
    fn bandwidth_is_what_the_probe_loses() {
        let none = || Err(ProcedureError::NoSharedCacheRuns);
        let c = from_probe_runs(&[10.0, 8.0], &[6.0, 6.0], none()).unwrap();
        assert_eq!(c.signal, SharingSignal::StreamCoRuns);
        assert_eq!(
            (c.bandwidth_gbs, c.llc_miss_rate),
            (Some(3.0), Some(46875.0))
        );
        let c = from_probe_runs(&[5.0], &[6.0], none()).unwrap();
        assert_eq!(c.bandwidth_gbs, Some(0.0));
        let e = from_probe_runs(&[], &[1.0], none()).unwrap_err();
        let want = ProcedureError::Bandwidths {
            role: PROBE_ALONE,
            found: Vec::new(),
        };
        assert_eq!(e, want);
        let e = from_probe_runs(&[1.0], &[f64::NAN], none()).unwrap_err();
        assert!(
            matches!(&e, ProcedureError::Bandwidths { role: CO_RUN, found } if found[0].is_nan()),
            "{e}"
        );
        assert!(e.to_string().starts_with(CO_RUN), "{e}");
    }

    /// The footprint is Equation 1 of the probe's miss rate (3 GB/s, 46 875
    /// misses/ms) with the data sharing runs' share: 2.0 s of CPU apart and
    /// 1.8 s together save 10%, 46 875 × 0.9 = 42 187.5; together slower
    /// (2.2 s) saves nothing, the footprint is the miss rate; without the
    /// runs both figures are absent with the reason.
    #[test]
    fn footprint_is_equation_1_of_the_substitutes() {
        use crate::profile::{Sensitivity, Signal};
        let runs = |apart: f64, together: f64| {
            Ok(SharedCacheRuns {
                cache: "core".into(),
                runs: Sensitivity::from_runs(Signal::TaskClock, 2, vec![apart], vec![together])
                    .unwrap(),
            })
        };
        type Want = (Option<f64>, Option<f64>, usize);
        let two_cores = || Err(ProcedureError::SharingCores { cores: 1 });
        let cases: [(Result<SharedCacheRuns, ProcedureError>, Want); 3] = [
            (runs(2.0e9, 1.8e9), (Some(0.1), Some(42187.5), 0)),
            (runs(2.0e9, 2.2e9), (Some(0.0), Some(46875.0), 0)),
            (two_cores(), (None, None, 2)),
        ];
        for (shared, (sharing, footprint, missing)) in cases {
            let c = from_probe_runs(&[10.0, 8.0], &[6.0, 6.0], shared.clone()).unwrap();
            let close = |a: Option<f64>, b: Option<f64>| match (a, b) {
                (Some(a), Some(b)) => (a - b).abs() < 1e-6,
                (a, b) => a == b,
            };
            assert!(close(c.data_sharing, sharing), "{shared:?}: {c:?}");
            assert!(close(c.llc_footprint, footprint), "{shared:?}: {c:?}");
            assert_eq!(c.missing.len(), missing, "{c:?}");
            assert_eq!(c.data_sharing_runs, shared.ok());
        }
        let c = from_probe_runs(&[1.0], &[1.0], two_cores()).unwrap();
        assert_eq!(
            c.missing[0],
            "data sharing: data sharing needs two cores to compare, this machine has 1"
        );
    }
}
