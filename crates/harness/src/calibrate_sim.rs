//! `coloc calibrate-sim --measure`'s runs (docs/simulator.md, Validation):
//! the calibration cases of `coloc_sim::calibrate` made on a machine, each
//! `reps` times, the run with the shortest makespan kept per case (a shared
//! machine's disturbances only ever slow a run down), with what the rest of
//! the machine used meanwhile, so that a disturbed run says so.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use coloc_manager::DEFAULT_EPOCH;
use coloc_model::metrics::RunMetrics;
use coloc_model::Trace;
use coloc_policy::PolicyContext;
use coloc_sim::calibrate::{self, Case, Measured, Side};
use procfs::{CurrentSI, KernelStats};

use crate::watch::Watch;
use crate::{HarnessError, Target};

/// CPU seconds the rest of the machine may use per second of a measured run
/// before the run is called disturbed: a tenth of a CPU (coloc's own share is
/// under 1 %).
const BUSY: f64 = 0.1;

/// Runs every case `reps` times on `target` (its `side`'s workload: `Real`
/// on this machine) and keeps, per case, the run with the shortest
/// makespan; returns the times and their TSV (`calibrate::MEASURED_HEADER`
/// first). Traces under `out/CASE-K`.
pub fn measure_cases(
    target: &Target,
    side: Side,
    cases: &[Case],
    reps: u32,
    out: &Path,
    stop: &Arc<AtomicBool>,
    watch: &dyn Watch,
) -> Result<(Vec<Measured>, String), HarnessError> {
    let reps = reps.max(1);
    let mut measured = Vec::new();
    let mut tsv = format!("{}\n", calibrate::MEASURED_HEADER);
    for (i, case) in cases.iter().enumerate() {
        let workload = target.resolve(case.workload(side))?;
        let mut best: Option<(Vec<f64>, f64)> = None;
        for rep in 0..reps {
            let label = format!("{}/{} {} #{}", i + 1, cases.len(), case.name, rep + 1);
            let mut progress = watch.run(&label, workload.apps.len() as u64);
            let before = Cpu::now()?;
            let (summary, events) = target.run(
                &workload,
                case.policy,
                &PolicyContext::default(),
                &out.join(format!("{}-{}", case.name, rep + 1)),
                DEFAULT_EPOCH,
                u64::from(rep),
                Some(stop.clone()),
                &mut *progress,
            )?;
            let others = Cpu::now()?.others_since(&before);
            if summary.interrupted || stop.load(Ordering::Relaxed) {
                return Err(HarnessError::Interrupted);
            }
            let trace = Trace::from_events(events).map_err(HarnessError::Events)?;
            let metrics = RunMetrics::from_trace(&trace, None);
            let wall_s = metrics
                .apps
                .iter()
                .map(|a| match a.reps.first() {
                    Some(r) if r.succeeded() => r.wall_secs,
                    _ => None,
                })
                .collect::<Option<Vec<f64>>>()
                .ok_or_else(|| HarnessError::CaseFailed {
                    case: case.name.clone(),
                })?;
            let makespan = |w: &[f64]| w.iter().copied().fold(0.0, f64::max);
            progress.finish(format!(
                "{} s, rest of the machine {others:.2} s CPU{}",
                wall_s
                    .iter()
                    .map(|w| format!("{w:.2}"))
                    .collect::<Vec<_>>()
                    .join(" / "),
                if others > BUSY * makespan(&wall_s) {
                    " (busy: this run is disturbed)"
                } else {
                    ""
                }
            ));
            if best
                .as_ref()
                .is_none_or(|(b, _)| makespan(&wall_s) < makespan(b))
            {
                best = Some((wall_s, others));
            }
        }
        let (wall_s, others) = best.expect("at least one run per case");
        tsv += &calibrate::measured_lines(case, &wall_s, others);
        measured.push(Measured {
            case: case.name.clone(),
            wall_s,
        });
    }
    Ok((measured, tsv))
}

/// CPU time of the whole machine and of coloc's finished children, seconds:
/// their difference over a run is what the rest of the machine (coloc itself
/// included) used meanwhile — how disturbed the measurement was.
struct Cpu {
    busy: f64,
    children: f64,
}

impl Cpu {
    fn now() -> Result<Self, HarnessError> {
        let ticks = procfs::ticks_per_second() as f64;
        let t = KernelStats::current()
            .map_err(|source| HarnessError::Proc {
                path: "/proc/stat",
                source,
            })?
            .total;
        let busy = t.user + t.nice + t.system + t.irq.unwrap_or(0) + t.softirq.unwrap_or(0);
        let me = procfs::process::Process::myself()
            .and_then(|p| p.stat())
            .map_err(|source| HarnessError::Proc {
                path: "/proc/self/stat",
                source,
            })?;
        Ok(Self {
            busy: busy as f64 / ticks,
            children: (me.cutime + me.cstime) as f64 / ticks,
        })
    }

    fn others_since(&self, before: &Cpu) -> f64 {
        ((self.busy - before.busy) - (self.children - before.children)).max(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::kvm;
    use crate::watch::seen::Seen;

    /// Two cases measured in the simulator (their `Sim` side) through the
    /// library alone, twice each: every run watched under its label and
    /// closed with its times, one time per app kept per case, and the TSV
    /// `calibrate-sim --measured` reads back giving the same times.
    #[test]
    fn cases_measured_in_the_simulator_keep_one_run_each_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let target = kvm();
        let cases: Vec<Case> = calibrate::cases()
            .into_iter()
            .filter(|c| c.name.starts_with("solo-"))
            .take(2)
            .collect();
        assert_eq!(cases.len(), 2);
        let seen = Seen::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (measured, tsv) =
            measure_cases(&target, Side::Sim, &cases, 2, dir.path(), &stop, &seen).unwrap();
        let runs = seen.runs();
        let labels: Vec<&str> = runs.iter().map(|r| r.label.as_str()).collect();
        let want: Vec<String> = cases
            .iter()
            .enumerate()
            .flat_map(|(i, c)| (1..=2).map(move |k| format!("{}/2 {} #{k}", i + 1, c.name)))
            .collect();
        assert_eq!(labels, want);
        assert!(
            runs.iter()
                .all(|r| r.line.contains(" s, rest of the machine ")),
            "{runs:?}"
        );
        for (m, c) in measured.iter().zip(&cases) {
            assert_eq!(m.case, c.name);
            assert_eq!(m.wall_s.len(), c.apps.len());
            assert!(m.wall_s.iter().all(|w| *w > 0.0), "{m:?}");
        }
        let again = calibrate::parse_measured(&tsv).unwrap();
        assert_eq!(again.len(), measured.len());
        for (a, m) in again.iter().zip(&measured) {
            assert_eq!(a.case, m.case);
            for (x, y) in a.wall_s.iter().zip(&m.wall_s) {
                assert!((x - y).abs() < 1e-3, "{x} {y}");
            }
        }
    }
}
