//! [`OraclePolicy`]: replays one configuration found by the search as a plan,
//! so `coloc sim --policy oracle` runs through the unchanged Manager and prints
//! the same tables as every other policy.

use coloc_model::reason::PlanReason;
use coloc_model::{AppPlan, AppView, Cpu, CpuSet, Placement, Plan, View};
use coloc_policy::Policy;

use super::Config;

/// A `static`-like policy for one configuration: every app is admitted at
/// once, thread i of app k is pinned to `config.cpus[k][i]`, and malleable
/// apps get the configuration's DoP. Apps the configuration does not cover
/// (none, for the static workloads the oracle accepts) are left to Linux.
#[derive(Clone, Debug)]
pub struct OraclePolicy {
    config: Config,
}

impl OraclePolicy {
    pub fn new(config: Config) -> Self {
        Self { config }
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    fn plan_for(&self, a: &AppView) -> AppPlan {
        let k = a.id.app as usize;
        let Some(cpus) = self.config.cpus.get(k).filter(|c| !c.is_empty()) else {
            return AppPlan::native(a.id);
        };
        AppPlan {
            placement: placement(&a.threads, cpus),
            dop: self.config.dop.get(k).copied().flatten(),
            ..AppPlan::native(a.id)
        }
    }
}

/// Thread i on `cpus[i]`; threads not known yet (all of them at launch, new
/// workers until the decision that follows their creation pins them) may use
/// all of the app's CPUs — so that the OpenMP runtime, which reads the
/// affinity mask at start, sees as many CPUs as the configuration gives the
/// app, as it would on Linux.
fn placement(threads: &[coloc_model::Tid], cpus: &[Cpu]) -> Placement {
    Placement::PerThread {
        threads: threads
            .iter()
            .zip(cpus.iter().cycle())
            .map(|(t, c)| (*t, CpuSet::single(*c)))
            .collect(),
        rest: cpus.iter().copied().collect(),
    }
}

impl Policy for OraclePolicy {
    fn name(&self) -> &'static str {
        "oracle"
    }

    fn decide(&mut self, view: &View<'_>) -> Plan {
        let mut plan = Plan::of(view.apps.iter().map(|a| self.plan_for(a)).collect());
        plan.reasons.push(PlanReason::Oracle {
            sharing: self.config.sharing.to_string(),
        });
        plan
    }
}
