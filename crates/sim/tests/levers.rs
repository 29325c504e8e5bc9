//! Levers that act: a malleable OpenMP program whose work is one long parallel
//! region, next to a co-runner that exits early, on the 2-CPU platform. OpenMP
//! applies a DoP when a region starts, so after the co-runner leaves no new DoP
//! reaches this program; a policy must give its team CPUs instead
//! (`docs/policies/nupoco.md`, levers), or one CPU idles for the rest of the
//! run while two threads share the other.

use std::time::Duration;

use coloc_manager::{run, RunOptions};
use coloc_model::reason::{Reason, Section, SectionPhase};
use coloc_model::workload::parse_workload;
use coloc_model::{AppId, Placement, TraceEvent};
use coloc_policy::by_name;
use coloc_sim::model::{model, AppModel, Phase};
use coloc_sim::{platform, SimMachine};

/// `one-region`: a short serial start, then one compute-bound region (EP's
/// character); `early`: a short compute-bound pthreads co-runner.
fn models() -> Vec<AppModel> {
    let mut long = model("ep").unwrap();
    long.name = "one-region".into();
    long.phases = vec![Phase::serial(0.02), Phase::parallel(6.0)];
    let mut early = model("swaptions").unwrap();
    early.name = "early".into();
    early.phases = vec![Phase::parallel(1.0)];
    vec![long, early]
}

const WORKLOAD: &str = r#"
name = "one-region"
epoch = "50ms"

[[app]]
name = "long"
model = "one-region"
threads = 2
malleable = true

[[app]]
name = "early"
model = "early"
threads = 2
arrive_at = "200ms"
"#;

const LONG: AppId = AppId { app: 0, rep: 0 };
const EARLY: AppId = AppId { app: 1, rep: 0 };

/// Runs the workload under `policy`; returns the trace.
fn run_under(policy: &str) -> Vec<TraceEvent> {
    let w = parse_workload("one-region.toml", WORKLOAD).unwrap();
    let mut m = SimMachine::new(platform("kvm-2cpu").unwrap(), 1).with_models(models());
    let mut p = by_name(policy).unwrap();
    let opts = RunOptions::simulated(w.epoch.unwrap(), 1);
    let mut trace = Vec::new();
    let summary = run(&mut m, p.as_mut(), &w, &opts, &mut trace).unwrap();
    assert_eq!(summary.failed, 0, "{policy}");
    trace
}

fn exit_of(trace: &[TraceEvent], app: AppId) -> Duration {
    trace
        .iter()
        .find_map(|e| match e {
            TraceEvent::Exit { t, app: a, .. } if *a == app => Some(*t),
            _ => None,
        })
        .expect("the app exits")
}

#[test]
fn a_one_region_program_gets_both_cpus_once_its_co_runner_left() {
    let native = exit_of(&run_under("native"), LONG);
    for policy in ["nupoco", "nupoco-greedy", "scalability", "auto"] {
        let trace = run_under(policy);
        let left = exit_of(&trace, EARLY);
        let done = exit_of(&trace, LONG);
        assert!(left < done, "{policy}: the co-runner leaves first");
        // Every plan made an epoch after the co-runner left lets the team
        // use both CPUs.
        let late: Vec<&Placement> = trace
            .iter()
            .filter_map(|e| match e {
                TraceEvent::Plan { t, plan, .. } if *t > left + Duration::from_millis(100) => {
                    plan.for_app(LONG).map(|p| &p.placement)
                }
                _ => None,
            })
            .collect();
        assert!(!late.is_empty(), "{policy}: decisions after the exit");
        for p in late {
            assert!(
                *p == Placement::Unmanaged || p.cpus().len() == 2,
                "{policy}: {p:?} after the co-runner left at {left:?}"
            );
        }
        let idle: Vec<&TraceEvent> = trace
            .iter()
            .filter(|e| matches!(e, TraceEvent::IdleWhileWaiting { .. }))
            .collect();
        assert!(idle.is_empty(), "{policy}: {idle:?}");
        // Simulated, so deterministic: no worse than Linux alone, within 5%.
        assert!(
            done.as_secs_f64() <= native.as_secs_f64() * 1.05,
            "{policy}: {done:?} vs native {native:?}"
        );
    }
}

/// NuPoCo's fallback without counters on the one-region program alone: its
/// lever is stuck (the half window's DoP cannot reach a team that is already
/// running), so the half window is taken by placement, the team's two threads
/// on one CPU; the two progress rates fit an MRR ("via progress-fit"). Before,
/// the stuck team kept both CPUs, the half window never saw fewer busy cores,
/// and the program ended with no estimate (or "unmeasured" after the 3 s
/// timeout, had it run longer). EP is compute-bound: its MRR comes out 0.
#[test]
fn nupoco_profiles_a_one_region_program_without_counters() {
    use coloc_policy::nupoco::{Nupoco, NupocoConfig, Variant};
    let alone = WORKLOAD.split("[[app]]\nname = \"early\"").next().unwrap();
    let w = parse_workload("one-region.toml", alone).unwrap();
    assert_eq!(w.apps.len(), 1);
    let mut m = SimMachine::new(platform("kvm-2cpu").unwrap(), 1).with_models(models());
    let cfg = NupocoConfig {
        use_counters: false,
        ..NupocoConfig::default()
    };
    let mut p = Nupoco::new(cfg, Variant::Full, None);
    let opts = RunOptions::simulated(w.epoch.unwrap(), 1);
    let mut trace = Vec::new();
    run(&mut m, &mut p, &w, &opts, &mut trace).unwrap();
    // App 0.0's sections as the plans say them.
    let sections: Vec<&Section> = trace
        .iter()
        .filter_map(|e| match e {
            TraceEvent::Plan { plan, .. } => plan.for_app(AppId { app: 0, rep: 0 }),
            _ => None,
        })
        .flat_map(|p| &p.reasons)
        .filter_map(|r| match r {
            Reason::Section(s) => Some(s),
            _ => None,
        })
        .collect();
    assert!(
        sections.iter().any(|s| s.phase
            == SectionPhase::Profiling {
                step: "half share".into()
            }
            && s.cores + s.lent == 1),
        "{sections:#?}"
    );
    assert!(
        sections
            .iter()
            .all(|s| s.method.as_deref() != Some("unmeasured")),
        "{sections:#?}"
    );
    assert!(
        sections
            .iter()
            .any(|s| s.method.as_deref() == Some("progress-fit")),
        "{sections:#?}"
    );
}
