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
    for p in &plan.apps {
        let id = p.app.to_string();
        let Some(app) = view.apps.iter().find(|a| a.id == p.app) else {
            errors.push(Violation::Unknown(id));
            continue;
        };
        if app.is_running() && !p.admit {
            errors.push(Violation::HoldsRunning(id.clone()));
        }
        if p.dop == Some(0) {
            errors.push(Violation::ZeroDop(id.clone()));
        }
        let sets: Vec<_> = match &p.placement {
            Placement::Unmanaged => Vec::new(),
            Placement::Shared(s) => vec![s],
            Placement::PerThread { threads, rest } => {
                threads.iter().map(|(_, s)| s).chain([rest]).collect()
            }
        };
        if sets.iter().any(|s| s.is_empty()) {
            errors.push(Violation::NoCpus(id.clone()));
        }
        for cpu in p.placement.cpus().iter() {
            if !usable.contains(cpu) {
                errors.push(Violation::ForeignCpu {
                    app: id.clone(),
                    cpu,
                });
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
