//! The cost of NuPoCo's decisions at NuPoCo's scale (docs/architecture.md,
//! Conventions: performance figures come from commands that print them, never
//! from timed tests): `coloc bench nupoco` prints what [`nupoco_cost`]
//! measures.
//!
//! NuPoCo §7.5 reports 1.8 ms per thread-count selection (Algorithm 1) and
//! 1.5 ms per placement round (Algorithm 2) on its 64-core, 8-node AMD
//! machine with 8 co-located apps. Measured here on the same shape:
//! - **Algorithm 1 alone** ([`compute_dop`]) for 2, 4 and 8 apps in steady
//!   parallel sections, their memory request rates spread from CPU-bound to
//!   memory-bound (with 8 apps on 8 nodes each app is held to its one node;
//!   fewer apps leave Algorithm 1 real choices);
//! - **a whole steady-state decision** of `nupoco` for 8 apps: observation
//!   bookkeeping, Algorithm 1, an Algorithm 2 round and the plan, after every
//!   app has been profiled.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use coloc_model::observation::{Counters, Signals};
use coloc_model::reason::{Reason, Section, SectionPhase};
use coloc_model::{
    AppId, AppSample, AppSpec, AppState, AppView, Observation, OmpSample, Plan, ThreadSample,
    Topology, Trigger, View,
};

use coloc_policy::nupoco::{compute_dop, Nupoco, NupocoConfig, Variant};
use coloc_policy::Policy;

use crate::HarnessError;

/// The 64-core AMD machine of NuPoCo §7.1: 4 packages × 2 nodes × 8 cores, one
/// L3 per node, an L2 per core pair.
const TOPOLOGY: &str = "package:4 numa:2 l3(8M):1 l2(2M):4 core:2";

/// Apps of the steady decision (NuPoCo's largest mixes).
pub const APPS: u32 = 8;

/// Threads each app requests.
const THREADS: u32 = 8;

/// App counts Algorithm 1 is timed with.
pub const ALGORITHM1_APPS: [usize; 3] = [2, 4, 8];

/// Mean and fastest duration of a timed call.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Timing {
    pub mean: Duration,
    pub fastest: Duration,
}

impl Timing {
    /// Times `runs` calls of `f`.
    fn of(runs: u32, mut f: impl FnMut()) -> Self {
        let runs = runs.max(1);
        let mut fastest = Duration::MAX;
        let start = Instant::now();
        for _ in 0..runs {
            let t = Instant::now();
            f();
            fastest = fastest.min(t.elapsed());
        }
        Self {
            mean: start.elapsed() / runs,
            fastest,
        }
    }
}

/// What [`nupoco_cost`] measured.
#[derive(Clone, Debug, PartialEq)]
pub struct NupocoCost {
    pub cores: usize,
    pub nodes: usize,
    /// Calls timed per figure.
    pub runs: u32,
    /// Algorithm 1 alone, per app count.
    pub algorithm1: Vec<(usize, Timing)>,
    /// A whole steady decision with 8 apps.
    pub decide: Timing,
    /// The last steady plan (what the decision did).
    pub steady_plan: Plan,
}

/// Times Algorithm 1 and a steady `nupoco` decision, `runs` calls each.
pub fn nupoco_cost(runs: u32) -> Result<NupocoCost, HarnessError> {
    let topo = Topology::synthetic("nupoco-amd64", TOPOLOGY).map_err(|source| {
        HarnessError::BenchTopology {
            description: TOPOLOGY,
            source,
        }
    })?;
    // 1e3 .. 5e7 requests per second of CPU time per core.
    let rates: Vec<f64> = (0..APPS)
        .map(|i| 1e3 * 10f64.powf(f64::from(i) * 4.7 / f64::from(APPS - 1)))
        .collect();
    let algorithm1 = ALGORITHM1_APPS
        .iter()
        .map(|&n| {
            let mrr: Vec<f64> = rates
                .iter()
                .copied()
                .rev()
                .step_by(rates.len() / n)
                .collect();
            let t = Timing::of(runs, || {
                black_box(compute_dop(&topo, None, black_box(&mrr)));
            });
            (n, t)
        })
        .collect();
    let mut bench = Steady {
        topo: &topo,
        rates: &rates,
        apps: (0..APPS).map(malleable_app).collect(),
        policy: Nupoco::new(NupocoConfig::default(), Variant::Full, None),
        history: Vec::new(),
        now: Duration::from_secs(1),
    };
    // Profile every app (a 150 ms window each at 50 ms epochs, one app after
    // another, docs/policies/nupoco.md), then time steady decisions.
    let mut plan = bench.step(Duration::ZERO);
    for k in 0..5 * APPS {
        plan = bench.step(Duration::from_millis(50));
        if k >= 4 && !profiling(&plan) {
            break;
        }
    }
    if profiling(&plan) {
        return Err(HarnessError::StillProfiling {
            plan: Box::new(plan),
        });
    }
    let decide = Timing::of(runs, || {
        plan = black_box(bench.step(Duration::from_millis(50)));
    });
    Ok(NupocoCost {
        cores: topo.cores().len(),
        nodes: topo.numa_nodes(),
        runs,
        algorithm1,
        decide,
        steady_plan: plan,
    })
}

/// Whether some app's section is being profiled or waits for a window.
pub fn profiling(plan: &Plan) -> bool {
    plan.apps.iter().flat_map(|p| &p.reasons).any(|r| {
        matches!(
            r,
            Reason::Section(Section {
                phase: SectionPhase::Profiling { .. } | SectionPhase::Waiting,
                ..
            })
        )
    })
}

/// App `index`: a malleable OpenMP app running [`THREADS`] threads.
fn malleable_app(index: u32) -> AppView {
    let at = Duration::from_secs(u64::from(index));
    AppView {
        id: AppId { app: index, rep: 0 },
        spec: Arc::new(AppSpec {
            malleable: true,
            ..AppSpec::program(format!("app{index}"), vec!["bench".into()], THREADS)
        }),
        state: AppState::Running,
        arrived_at: at,
        started_at: Some(at),
        threads_requested: THREADS,
        threads: (0..THREADS).map(|k| 1000 * (index + 1) + k).collect(),
        current: None,
    }
}

/// The decision loop of a steady run: observe, decide, apply the plan to the
/// views.
struct Steady<'a> {
    topo: &'a Topology,
    /// Each app's memory request rate.
    rates: &'a [f64],
    apps: Vec<AppView>,
    policy: Nupoco,
    history: Vec<Observation>,
    now: Duration,
}

impl Steady<'_> {
    /// Advances the clock by `dt`, observes and decides.
    fn step(&mut self, dt: Duration) -> Plan {
        self.now += dt;
        self.history.push(self.observe());
        let n = self.history.len();
        let view = View {
            now: self.now,
            trigger: Trigger::Epoch,
            topology: self.topo,
            apps: &self.apps,
            last: self.history.last(),
            prev: (n >= 2).then(|| &self.history[n - 2]),
        };
        let plan = self.policy.decide(&view);
        for a in &mut self.apps {
            a.current = plan.for_app(a.id).cloned();
        }
        plan
    }

    /// Every app's threads busy since the start on the CPU their plan gave
    /// them, each issuing its app's request rate, inside a parallel region.
    fn observe(&self) -> Observation {
        let secs = self.now.as_secs_f64();
        let apps = self
            .apps
            .iter()
            .zip(self.rates)
            .map(|(a, rate)| {
                let misses = (rate * secs) as u64;
                AppSample {
                    app: a.id,
                    pid: a.threads[0],
                    threads: a
                        .threads
                        .iter()
                        .map(|&tid| ThreadSample {
                            pid: a.threads[0],
                            tid,
                            cpu: a
                                .current
                                .as_ref()
                                .and_then(|p| p.placement.cpus_of(tid))
                                .and_then(|s| s.first()),
                            run_ns: self.now.as_nanos() as u64,
                            counters: Some(Counters {
                                llc_misses: Some(misses),
                                llc_references: Some(2 * misses),
                                ..Counters::default()
                            }),
                            ..ThreadSample::default()
                        })
                        .collect(),
                    omp: Some(OmpSample {
                        in_parallel: true,
                        team_size: THREADS,
                        ..OmpSample::default()
                    }),
                    ..AppSample::default()
                }
            })
            .collect();
        Observation {
            at: self.now,
            signals: Signals {
                hw_counters: true,
                schedstat: true,
            },
            apps,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two calls per figure: the benchmark reaches a steady plan, times every
    /// app count, and reports the machine's shape (no timing asserted).
    #[test]
    fn measures_every_figure_on_a_steady_plan() {
        let cost = nupoco_cost(2).unwrap();
        assert_eq!((cost.cores, cost.nodes, cost.runs), (64, 8, 2));
        let counts: Vec<usize> = cost.algorithm1.iter().map(|(n, _)| *n).collect();
        assert_eq!(counts, ALGORITHM1_APPS);
        assert!(
            !profiling(&cost.steady_plan),
            "{}",
            coloc_model::explain::note("nupoco", &cost.steady_plan)
        );
        assert_eq!(cost.steady_plan.apps.len(), APPS as usize);
    }
}
