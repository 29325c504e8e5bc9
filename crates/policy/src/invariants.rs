//! Invariants every plan must satisfy, checked by every policy's tests and by the
//! Manager before it applies a plan (a policy bug must never reach the machine).

use std::collections::BTreeMap;

use coloc_model::{Cpu, Placement, Plan, View};

/// A broken invariant.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Violation {
    #[error("app {0} in the view has no plan")]
    Missing(String),
    #[error("app {0} has more than one plan")]
    Duplicate(String),
    #[error("the plan names app {0}, which is not in the view")]
    Unknown(String),
    #[error("running app {0} would be held back (coloc never stops a running app)")]
    HoldsRunning(String),
    #[error("app {app} is given CPU {cpu}, which this machine does not offer")]
    ForeignCpu { app: String, cpu: Cpu },
    #[error("app {0} is placed on an empty CPU set")]
    NoCpus(String),
    #[error("app {0} gets a degree of parallelism of 0")]
    ZeroDop(String),
    #[error("CPU {cpu} is given to both {a} and {b}")]
    Shared { cpu: Cpu, a: String, b: String },
}

/// Checks what every plan of every policy must satisfy: one plan per app, running
/// apps stay admitted, only the topology's CPUs, no empty placement, DoP ≥ 1.
pub fn check(view: &View<'_>, plan: &Plan) -> Result<(), Vec<Violation>> {
    let mut errors = Vec::new();
    for a in view.apps {
        match plan.apps.iter().filter(|p| p.app == a.id).count() {
            0 => errors.push(Violation::Missing(a.id.to_string())),
            1 => {}
            _ => errors.push(Violation::Duplicate(a.id.to_string())),
        }
    }
    let usable = view.topology.cpus();
    // The app's name is formatted only for an error: the Manager checks
    // every plan of every run (docs/simulator.md, Speed).
    for p in &plan.apps {
        let id = || p.app.to_string();
        let Some(app) = view.apps.iter().find(|a| a.id == p.app) else {
            errors.push(Violation::Unknown(id()));
            continue;
        };
        if app.is_running() && !p.admit {
            errors.push(Violation::HoldsRunning(id()));
        }
        if p.dop == Some(0) {
            errors.push(Violation::ZeroDop(id()));
        }
        let empty = match &p.placement {
            Placement::Unmanaged => false,
            Placement::Shared(s) => s.is_empty(),
            Placement::PerThread { threads, rest } => {
                threads.iter().any(|(_, s)| s.is_empty()) || rest.is_empty()
            }
        };
        if empty {
            errors.push(Violation::NoCpus(id()));
        }
        let cpus = p.placement.cpus();
        if !cpus.is_subset(usable) {
            for cpu in cpus.difference(usable).iter() {
                errors.push(Violation::ForeignCpu { app: id(), cpu });
            }
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// For exclusive policies: no CPU is given to two admitted apps.
pub fn check_exclusive(plan: &Plan) -> Result<(), Violation> {
    let mut owner: BTreeMap<Cpu, String> = BTreeMap::new();
    for p in plan.apps.iter().filter(|p| p.admit) {
        for cpu in p.placement.cpus().iter() {
            if let Some(a) = owner.insert(cpu, p.app.to_string()) {
                return Err(Violation::Shared {
                    cpu,
                    a,
                    b: p.app.to_string(),
                });
            }
        }
    }
    Ok(())
}
