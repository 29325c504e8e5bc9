//! How long each policy takes to decide (`coloc bench decide`): every
//! policy of the registry with an empty context, on each fixture topology,
//! deciding for a view of N running apps of M threads each, timed over
//! many decisions of the same view.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use coloc_model::{AppId, AppSpec, AppState, AppView, Topology, Trigger, View};

use crate::HarnessError;

/// The fixture topologies, by name and synthetic description
/// (`coloc_model::Topology::synthetic`): NuPoCo's 64-core, 8-node AMD
/// machine and the simulator's `kvm-2cpu`.
pub const TOPOLOGIES: [(&str, &str); 2] = [
    ("amd-64core-8node", "package:4 numa:2 l3(8M):1 core:8"),
    ("kvm-2cpu", "package:1 l3(32M):1 core:2"),
];

/// What is timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecideBench {
    /// Apps in the view.
    pub apps: u32,
    /// Threads per app.
    pub threads: u32,
    /// Decisions timed per policy and topology.
    pub iterations: u32,
}

/// One policy's decisions on one topology.
#[derive(Clone, Debug, PartialEq)]
pub struct DecideTime {
    pub policy: &'static str,
    pub topology: String,
    /// Mean time of one decision.
    pub per_decision: Duration,
}

/// Times every policy on every fixture topology, telling `each` of every
/// figure as soon as it is measured.
pub fn decide_times(
    bench: DecideBench,
    each: &mut dyn FnMut(&DecideTime),
) -> Result<(), HarnessError> {
    for (name, description) in TOPOLOGIES {
        let topo = Topology::synthetic(name, description).map_err(|source| {
            HarnessError::BenchTopology {
                description,
                source,
            }
        })?;
        let views = running_apps(bench.apps, bench.threads);
        for info in coloc_policy::POLICIES {
            let mut policy = info.make(&coloc_policy::PolicyContext::default());
            let view = View {
                now: Duration::from_secs(1),
                trigger: Trigger::Epoch,
                topology: &topo,
                apps: &views,
                last: None,
                prev: None,
            };
            let t0 = Instant::now();
            for _ in 0..bench.iterations {
                black_box(policy.decide(black_box(&view)));
            }
            each(&DecideTime {
                policy: info.name,
                topology: topo.name.clone(),
                per_decision: t0.elapsed() / bench.iterations.max(1),
            });
        }
    }
    Ok(())
}

/// `apps` running apps of `threads` threads each, app i arrived and
/// started at i ms.
fn running_apps(apps: u32, threads: u32) -> Vec<AppView> {
    (0..apps)
        .map(|i| AppView {
            id: AppId { app: i, rep: 0 },
            spec: Arc::new(AppSpec::program(
                format!("app{i}"),
                vec!["true".into()],
                threads,
            )),
            state: AppState::Running,
            arrived_at: Duration::from_millis(u64::from(i)),
            started_at: Some(Duration::from_millis(u64::from(i))),
            threads_requested: threads,
            threads: (0..threads).map(|t| 1000 + i * 100 + t).collect(),
            current: None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One decision per policy and topology: every registry policy is timed
    /// on both fixture topologies, in order (no time asserted).
    #[test]
    fn every_policy_is_timed_on_every_topology() {
        let mut seen = Vec::new();
        let bench = DecideBench {
            apps: 2,
            threads: 2,
            iterations: 1,
        };
        decide_times(bench, &mut |t| seen.push((t.topology.clone(), t.policy))).unwrap();
        let want: Vec<(String, &str)> = TOPOLOGIES
            .iter()
            .flat_map(|(topo, _)| {
                coloc_policy::POLICIES
                    .iter()
                    .map(|p| (topo.to_string(), p.name))
            })
            .collect();
        assert_eq!(seen, want);
    }
}
