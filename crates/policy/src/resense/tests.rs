//! ReSensor on the paper's worked examples (§2.3, Fig. 4; the Harpertown FSB-then-L2
//! example; Table IV scores), its variants, and the invariants of every plan.

use crate::note;
use coloc_model::reason::{LevelCases, PlanReason};
use coloc_model::AppId;
use std::time::Duration;

use coloc_model::profile::{
    AppIdentity, AppProfile, LevelProfile, LevelResult, PlatformFingerprint, Sensitivity, Signal,
};
use coloc_model::testutils::{fixture_topologies, pending_app, running_app};
use coloc_model::topology::ResourceKind;
use coloc_model::{AppView, Cpu, Placement, Plan, Topology, Trigger, View};
use proptest::prelude::*;

use super::*;
use crate::invariants::{check, check_exclusive};
use crate::{by_name_with, PolicyContext};

const YORKFIELD: &str = "package:1 l2(6M):2 core:2";
const HARPERTOWN: &str = "package:2 group(FSB):1 l2(6M):2 core:2";

fn l2() -> ResourceKind {
    ResourceKind::Cache { level: 2 }
}

fn fsb() -> ResourceKind {
    ResourceKind::Group { name: "FSB".into() }
}

fn view<'a>(topo: &'a Topology, apps: &'a [AppView]) -> View<'a> {
    View {
        now: Duration::from_secs(1),
        trigger: Trigger::Epoch,
        topology: topo,
        apps,
        last: None,
        prev: None,
    }
}

/// The profile of test app `index` (`app{index}`, matched by name) with the given
/// scores: a baseline of 1000 cycles and a contention run of 1000 − 10·score.
pub(crate) fn profile(topo: &Topology, index: u32, scores: &[(ResourceKind, f64)]) -> AppProfile {
    let name = format!("app{index}");
    AppProfile {
        sharing: None,
        identity: AppIdentity::model(&name, &name),
        platform: PlatformFingerprint::of(topo),
        levels: scores
            .iter()
            .map(|(level, s)| LevelProfile {
                level: level.clone(),
                result: LevelResult::Scored(
                    Sensitivity::from_runs(
                        Signal::Cycles,
                        2,
                        vec![1000.0],
                        vec![1000.0 - 10.0 * s],
                    )
                    .unwrap(),
                ),
            })
            .collect(),
    }
}

/// Running apps `app0..`, app i with `threads[i]` threads (tids 100·i + k).
fn apps(threads: &[usize]) -> Vec<AppView> {
    threads
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let tids: Vec<u32> = (0..n as u32).map(|k| 100 * i as u32 + k).collect();
            running_app(i as u32, &tids)
        })
        .collect()
}

/// Each app's pinned CPUs, thread by thread.
fn pinned(plan: &Plan) -> Vec<Vec<Cpu>> {
    plan.apps
        .iter()
        .map(|p| match &p.placement {
            Placement::PerThread { threads, .. } => threads
                .iter()
                .map(|(_, c)| {
                    assert_eq!(c.len(), 1, "one CPU per thread");
                    c.first().unwrap()
                })
                .collect(),
            other => panic!("expected per-thread pinning, got {other:?}"),
        })
        .collect()
}

fn decide(policy: &mut ReSense, topo: &Topology, apps: &[AppView]) -> Plan {
    let v = view(topo, apps);
    let plan = policy.decide(&v);
    check(&v, &plan).unwrap();
    plan
}

/// An app: its threads and its scores per level.
type AppCase = (usize, Vec<(ResourceKind, f64)>);

/// (name, topology description, apps, expected CPUs of each app's threads).
type Example = (&'static str, &'static str, Vec<AppCase>, Vec<Vec<Cpu>>);

/// The worked examples, with the synthetic CPU numbering (Yorkfield L2s {0,1} and
/// {2,3}; Harpertown L2s {0,1} {2,3} {4,5} {6,7}, FSBs {0-3} {4-7}).
#[test]
fn paper_examples() {
    let cases: Vec<Example> = vec![
        (
            // Fig. 4(a): A −a, B −b, |a| > |b|: both spread over the two L2s, so
            // each shares its L2 with the co-runner, not with a sibling.
            "fig 4(a)",
            YORKFIELD,
            vec![(2, vec![(l2(), -5.0)]), (2, vec![(l2(), -1.0)])],
            vec![vec![0, 2], vec![1, 3]],
        ),
        (
            // Fig. 4(b): A +a shares one L2, B −b (less sensitive) gets the other.
            "fig 4(b)",
            YORKFIELD,
            vec![(2, vec![(l2(), 5.0)]), (2, vec![(l2(), -1.0)])],
            vec![vec![0, 1], vec![2, 3]],
        ),
        (
            // Fig. 4(c): [A −a, B +b, C +c, D −d], |c| > |a| > |b| > |d|, one thread
            // each, 4 apps on 2 L2s (case 2): C (most, positive) shares C0/C1 with
            // D (least); A (negative) then B share the other L2.
            "fig 4(c)",
            YORKFIELD,
            vec![
                (1, vec![(l2(), -4.0)]),
                (1, vec![(l2(), 3.0)]),
                (1, vec![(l2(), 5.0)]),
                (1, vec![(l2(), -1.0)]),
            ],
            vec![vec![2], vec![3], vec![0], vec![1]],
        ),
        (
            // §2.3's Harpertown example: A (2 threads) negative for L2, positive for
            // FSB. The FSB comes first: both threads on one FSB; then the L2 inside
            // it: separate L2s.
            "harpertown FSB+ L2-",
            HARPERTOWN,
            vec![(2, vec![(l2(), -3.0), (fsb(), 2.0)])],
            vec![vec![0, 2]],
        ),
        (
            // Opposite signs: one thread per FSB, each on the first L2 of its FSB.
            "harpertown FSB- L2+",
            HARPERTOWN,
            vec![(2, vec![(l2(), 3.0), (fsb(), -2.0)])],
            vec![vec![0, 4]],
        ),
        (
            "harpertown FSB+ L2+",
            HARPERTOWN,
            vec![(2, vec![(l2(), 3.0), (fsb(), 2.0)])],
            vec![vec![0, 1]],
        ),
        (
            // Table IV scores on Harpertown: streamcluster (L2 +9.16, FSB −11.40)
            // and facesim (L2 −6.65, FSB −1.19), 4 threads each. Both spread over
            // the FSBs; inside each FSB streamcluster (more L2-sensitive) takes one
            // L2 whole and facesim the other: "both FSBs' bandwidth and the same
            // cache" (§3.2).
            "harpertown SC+FA",
            HARPERTOWN,
            vec![
                (4, vec![(l2(), 9.1566), (fsb(), -11.3983)]),
                (4, vec![(l2(), -6.6455), (fsb(), -1.1869)]),
            ],
            vec![vec![0, 1, 4, 5], vec![2, 3, 6, 7]],
        ),
        (
            // An insensitive FSB (|+0.5| < 1%, a 0) outside a shared L2: the
            // app shares an FSB because it shares an L2 (`share_outward`),
            // where spreading by load at the FSB first put one thread under
            // each FSB, [0, 4], and the L2 could not pack them.
            "harpertown FSB 0 L2+",
            HARPERTOWN,
            vec![(2, vec![(l2(), 3.0), (fsb(), 0.5)])],
            vec![vec![0, 1]],
        ),
        (
            // The same under a negative L2: the FSB stays "any core".
            "harpertown FSB 0 L2-",
            HARPERTOWN,
            vec![(2, vec![(l2(), -3.0), (fsb(), 0.5)])],
            vec![vec![0, 4]],
        ),
        (
            // Case 2 at the FSB: four 2-thread apps, two FSBs. Pairs (most, least):
            // (+4, −1) share FSB 0; (−3, +2) would spread but only FSB 1 has free
            // cores left (the fallback). Inside each FSB the L2 scores (none, so 0)
            // spread each app over both L2s.
            "harpertown case 2",
            HARPERTOWN,
            vec![
                (2, vec![(fsb(), 4.0)]),
                (2, vec![(fsb(), -3.0)]),
                (2, vec![(fsb(), 2.0)]),
                (2, vec![(fsb(), -1.0)]),
            ],
            vec![vec![0, 2], vec![4, 6], vec![5, 7], vec![1, 3]],
        ),
    ];
    for (name, desc, app_cases, want) in cases {
        let topo = Topology::synthetic(name, desc).unwrap();
        let threads: Vec<usize> = app_cases.iter().map(|(t, _)| *t).collect();
        let profiles = app_cases
            .iter()
            .enumerate()
            .map(|(i, (_, s))| profile(&topo, i as u32, s))
            .collect();
        let a = apps(&threads);
        let plan = decide(&mut ReSense::new(profiles), &topo, &a);
        assert_eq!(pinned(&plan), want, "{name}: {}", note(&plan));
        assert!(
            !plan
                .reasons
                .iter()
                .any(|r| matches!(r, PlanReason::Unprofiled { .. })),
            "{name}: {}",
            note(&plan)
        );
    }
}

/// Table VII's ablation: fixed positive scores share, fixed negative spread,
/// whatever the profiles; without profiles apps spread like Linux and the note
/// says which apps had none.
#[test]
fn variants_and_defaults() {
    let topo = Topology::synthetic("yorkfield", YORKFIELD).unwrap();
    let a = apps(&[2, 2]);
    let l2_case_1 = PlanReason::SharingCases {
        levels: vec![LevelCases {
            level: "L2".into(),
            cases: vec![1],
        }],
    };
    let both = vec![AppId { app: 0, rep: 0 }, AppId { app: 1, rep: 0 }];
    // (policy, its name, each app's CPUs, the plan's reasons)
    type Case = (ReSense, &'static str, Vec<Vec<Cpu>>, Vec<PlanReason>);
    let cases: Vec<Case> = vec![
        (
            ReSense::fixed_positive(),
            "resense-positive",
            vec![vec![0, 1], vec![2, 3]],
            vec![l2_case_1.clone()],
        ),
        (
            ReSense::fixed_negative(),
            "resense-negative",
            vec![vec![0, 2], vec![1, 3]],
            vec![l2_case_1.clone()],
        ),
        (
            ReSense::new(Vec::new()),
            "resense",
            vec![vec![0, 2], vec![1, 3]],
            vec![l2_case_1, PlanReason::Unprofiled { apps: both }],
        ),
    ];
    for (mut policy, name, want, reasons) in cases {
        assert_eq!(policy.name(), name);
        let plan = decide(&mut policy, &topo, &a);
        assert_eq!(pinned(&plan), want, "{name}");
        assert_eq!(plan.reasons, reasons);
    }
}

/// The registry builds `resense` with the context's profiles.
#[test]
fn registry_passes_profiles() {
    let topo = Topology::synthetic("yorkfield", YORKFIELD).unwrap();
    let mut ctx = PolicyContext::default();
    ctx.profiles.push(profile(&topo, 0, &[(l2(), 5.0)]));
    let a = apps(&[2, 2]);
    let mut p = by_name_with("resense", &ctx).unwrap();
    let plan = p.decide(&view(&topo, &a));
    assert_eq!(pinned(&plan), vec![vec![0, 1], vec![2, 3]]);
    assert!(
        plan.reasons.contains(&PlanReason::Unprofiled {
            apps: vec![AppId { app: 1, rep: 0 }]
        }),
        "{}",
        note(&plan)
    );
    for name in ["resense-positive", "resense-negative"] {
        assert_eq!(by_name_with(name, &ctx).unwrap().name(), name);
    }
}

/// Threads that do not exist yet get reserved CPUs: a pending app's `rest` has
/// one CPU per requested thread, and so does an app whose team is not created yet;
/// on the SMT fixture two 8-thread apps use one PU of every core, each app on
/// its own socket when both share.
#[test]
fn reserved_slots_and_smt() {
    let topos = fixture_topologies();
    let smt = &topos[0];
    let a = vec![running_app(0, &[7]), pending_app(1, 8)];
    let plan = decide(&mut ReSense::fixed_positive(), smt, &a);
    let rest = |i: usize| match &plan.apps[i].placement {
        Placement::PerThread { rest, .. } => rest.to_list(),
        other => panic!("{other:?}"),
    };
    // app0 (one thread) packs first into socket 0; app1's 8 reserved threads no
    // longer fit there and take socket 1, one PU per core.
    assert_eq!(pinned(&plan)[0], vec![0]);
    assert_eq!(rest(0), "0");
    assert_eq!(rest(1), "16,18,20,22,24,26,28,30");
    check_exclusive(&plan).unwrap();

    let a = apps(&[8, 8]);
    let plan = decide(&mut ReSense::fixed_positive(), smt, &a);
    assert_eq!(
        pinned(&plan),
        vec![
            vec![0, 2, 4, 6, 8, 10, 12, 14],
            vec![16, 18, 20, 22, 24, 26, 28, 30]
        ]
    );
}

/// Slots per CPU as the assignment counts them (see `assign`'s module docs).
fn slots_per_cpu(topo: &Topology, threads: usize, cpu: Cpu) -> usize {
    let cores = topo.cores();
    let core = topo.core_of(cpu).unwrap();
    if threads <= cores.len() {
        usize::from(core.first() == Some(cpu))
    } else {
        threads.div_ceil(topo.cpus().len())
    }
}

fn topologies() -> Vec<Topology> {
    let mut t = fixture_topologies();
    for (n, d) in [
        ("yorkfield", YORKFIELD),
        ("harpertown", HARPERTOWN),
        ("nupoco-amd64", "package:4 numa:2 l3(8M):1 l2(2M):4 core:2"),
        (
            "xeon32",
            "package:4 numa:1 l3(18M):1 l2(256K):8 core:1 pu:2",
        ),
    ] {
        t.push(Topology::synthetic(n, d).unwrap());
    }
    t
}

proptest! {
    /// On every topology, with any apps (running or pending, any thread counts),
    /// any scores and any variant: the plan passes the invariants, pins every live
    /// thread to one CPU inside the app's CPUs, gives no CPU more threads than its
    /// slots, is exclusive when the threads fit on the cores, and is a function of
    /// the view.
    #[test]
    fn invariants_hold(
        topo_index in 0usize..7,
        app_threads in proptest::collection::vec((0usize..12, 1u32..12), 0..7),
        scores in proptest::collection::vec(proptest::option::of((-20.0f64..20.0, -20.0f64..20.0)), 7),
        variant in 0usize..3,
    ) {
        let topo = &topologies()[topo_index];
        let levels = topo.shared_resources();
        let a: Vec<AppView> = app_threads
            .iter()
            .enumerate()
            .map(|(i, &(live, requested))| {
                if live == 0 {
                    pending_app(i as u32, requested)
                } else {
                    let tids: Vec<u32> = (0..live as u32).map(|k| 100 * i as u32 + k).collect();
                    running_app(i as u32, &tids)
                }
            })
            .collect();
        let profiles: Vec<AppProfile> = scores
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                s.map(|(inner, outer)| {
                    let scored: Vec<(ResourceKind, f64)> = levels
                        .iter()
                        .enumerate()
                        .map(|(k, l)| (l.kind.clone(), if k == 0 { inner } else { outer }))
                        .collect();
                    profile(topo, i as u32, &scored)
                })
            })
            .collect();
        let mut policy = match variant {
            0 => ReSense::new(profiles),
            1 => ReSense::fixed_positive(),
            _ => ReSense::fixed_negative(),
        };
        let v = view(topo, &a);
        let plan = policy.decide(&v);
        prop_assert!(check(&v, &plan).is_ok(), "{:?}", check(&v, &plan));
        prop_assert_eq!(&policy.decide(&v), &plan);

        let total: usize = a
            .iter()
            .map(|x| x.threads.len().max(x.threads_requested as usize).max(1))
            .sum();
        let mut load: std::collections::BTreeMap<Cpu, usize> = Default::default();
        for (app, p) in a.iter().zip(&plan.apps) {
            prop_assert!(p.admit);
            let Placement::PerThread { threads, rest } = &p.placement else {
                panic!("per-thread pinning expected");
            };
            prop_assert_eq!(threads.len(), app.threads.len());
            let want_rest = app.threads.len().max(app.threads_requested as usize).max(1);
            prop_assert!(rest.len() <= want_rest);
            for (_, c) in threads {
                prop_assert_eq!(c.len(), 1);
                prop_assert!(c.is_subset(rest));
            }
            for cpu in rest.iter() {
                *load.entry(cpu).or_default() += 1;
            }
        }
        for (&cpu, &n) in &load {
            prop_assert!(n <= slots_per_cpu(topo, total, cpu), "CPU {} has {} threads", cpu, n);
        }
        if total <= topo.cores().len() {
            prop_assert!(check_exclusive(&plan).is_ok());
        }
    }
}
