//! Placement and memory policy over the fixture machines: the 2-socket Xeon,
//! the 8-node Opteron (48 cores, one L3 and memory controller per 6-core node,
//! nodes 0-5, 6-11, …, 42-47) and this 2-vCPU VM.

use std::sync::Arc;
use std::time::Duration;

use coloc_model::profile::AppProfile;
use coloc_model::reason::{ClassBy, LevelCases, Memory, PlanReason};
use coloc_model::testutils::{fixture_topologies, running_app};
use coloc_model::topology::ResourceKind;
use coloc_model::{AppClass, AppId, AppView, CpuSet, MemPolicy, Topology, Trigger, View};

use super::{Placed, Placer};
use crate::tang::tests::sharing;
use crate::tranquilizer::window::Rates;

fn topo(name: &str) -> Topology {
    fixture_topologies()
        .into_iter()
        .find(|t| t.name == name)
        .expect("a fixture machine")
}

fn view<'a>(t: &'a Topology, apps: &'a [AppView]) -> View<'a> {
    View {
        now: Duration::from_secs(1),
        trigger: Trigger::Epoch,
        topology: t,
        apps,
        last: None,
        prev: None,
    }
}

/// Running app `app{index}` with `threads` threads and the given class.
fn app(index: u32, threads: u32, class: AppClass) -> AppView {
    let tids: Vec<u32> = (0..threads).map(|k| 100 * (index + 1) + k).collect();
    let mut a = running_app(index, &tids);
    let mut spec = (*a.spec).clone();
    spec.class = class;
    a.spec = Arc::new(spec);
    a
}

/// The stored profile of `app{index}` (matched by name): ReSense scores per
/// level (`resense`'s test profile), and Tang's characteristics (data
/// sharing, GB/s per thread, footprint; `tang`'s) where given.
fn profile(
    t: &Topology,
    index: u32,
    scores: &[(ResourceKind, f64)],
    characteristics: Option<(f64, f64, f64)>,
) -> AppProfile {
    AppProfile {
        sharing: characteristics.map(|(data, bw, fp)| sharing(data, bw, fp)),
        ..crate::resense::tests::profile(t, index, scores)
    }
}

fn l3() -> ResourceKind {
    ResourceKind::Cache { level: 3 }
}

fn socket() -> ResourceKind {
    ResourceKind::Package
}

fn list(s: &str) -> CpuSet {
    CpuSet::parse_list(s).unwrap()
}

/// One app of a case: its partition's size, its class, its profile (scores,
/// Tang's characteristics) if stored.
type Member = (
    usize,
    AppClass,
    Option<(Vec<(ResourceKind, f64)>, Option<(f64, f64, f64)>)>,
);

/// What placement said, in part: ReSense's cases per level, Tang's choice
/// (app index, Algorithm 1's line), the apps without a profile.
type Said = (
    &'static [(&'static str, &'static [u8])],
    Option<(u32, u8)>,
    &'static [u32],
);

/// Nothing said (placement did not apply).
const NOTHING: Said = (&[], None, &[]);
/// Case 1 at the socket and at L3.
const WANT_CASES: Said = (&[("socket", &[1]), ("L3", &[1])], None, &[]);

/// (what, machine, apps in arrival order, each app's CPUs or None for the
/// contiguous partitions, what placement said).
type Case = (
    &'static str,
    &'static str,
    Vec<Member>,
    Option<Vec<&'static str>>,
    Said,
);

/// Whether `placed` says at least what `said` does.
fn says(placed: &Placed, (cases, tang, unprofiled): Said) -> bool {
    let app = |i: u32| AppId { app: i, rep: 0 };
    let levels: Vec<LevelCases> = cases
        .iter()
        .map(|(level, cases)| LevelCases {
            level: level.to_string(),
            cases: cases.to_vec(),
        })
        .collect();
    let cases_ok = levels.is_empty()
        || placed
            .reasons
            .contains(&PlanReason::SharingCases { levels });
    let tang_ok = tang.is_none_or(|(i, line)| {
        placed
            .tang
            .iter()
            .any(|(id, c)| *id == app(i) && c.line == line)
    });
    let ids: Vec<AppId> = unprofiled.iter().map(|&i| app(i)).collect();
    let unprofiled_ok = ids.is_empty()
        || placed
            .reasons
            .contains(&PlanReason::Unprofiled { apps: ids });
    placed.reasons.first() == Some(&PlanReason::PlacedByProfiles)
        && cases_ok
        && tang_ok
        && unprofiled_ok
}

#[test]
fn partitions_follow_the_profiles() {
    use AppClass::{Batch, Latency};
    let cases: Vec<Case> = vec![
        (
            // This VM: one L3, one node, nothing to choose.
            "one LLC and one node",
            "kvm-2cpu",
            vec![
                (1, Batch, Some((vec![(l3(), -20.0)], None))),
                (1, Batch, None),
            ],
            None,
            NOTHING,
        ),
        (
            "no profile stored",
            "amd-8node",
            vec![(24, Batch, None), (24, Batch, None)],
            None,
            NOTHING,
        ),
        (
            // A streaming app (−20 at socket and L3, the most sensitive, so
            // placed first) spreads its 24 threads over the 4 sockets (6
            // each) and inside each over both nodes (3 each); the sharer
            // (+10) can pack only into what is left: 3 CPUs of every node.
            // Contiguous order would give each app 4 whole nodes.
            "a streaming app spreads over every controller",
            "amd-8node",
            vec![
                (
                    24,
                    Batch,
                    Some((vec![(socket(), -20.0), (l3(), -20.0)], None)),
                ),
                (
                    24,
                    Batch,
                    Some((vec![(socket(), 10.0), (l3(), 10.0)], None)),
                ),
            ],
            Some(vec![
                "0-2,6-8,12-14,18-20,24-26,30-32,36-38,42-44",
                "3-5,9-11,15-17,21-23,27-29,33-35,39-41,45-47",
            ]),
            WANT_CASES,
        ),
        (
            // The sharer the more sensitive (+20): it packs first, into the
            // two emptiest sockets (0-23); the streaming app (−10) spreads
            // over the two sockets left, 6 per node.
            "a sharer packs first",
            "amd-8node",
            vec![
                (
                    24,
                    Batch,
                    Some((vec![(socket(), -10.0), (l3(), -10.0)], None)),
                ),
                (
                    24,
                    Batch,
                    Some((vec![(socket(), 20.0), (l3(), 20.0)], None)),
                ),
            ],
            Some(vec!["24-47", "0-23"]),
            WANT_CASES,
        ),
        (
            // A latency app with little data sharing that draws more bus and
            // has a larger footprint than its co-runner: Algorithm 1's line
            // 20, distribute at both levels. Its 12 cores are dealt over the
            // 8 nodes (2 on nodes 0-3, 1 on nodes 4-7); the batch app, its
            // profile without scores (0: any core), takes the 36 CPUs left.
            "a latency app laid out by Tang's heuristic",
            "amd-8node",
            vec![
                (12, Latency, Some((vec![], Some((0.1, 2.0, 5000.0))))),
                (36, Batch, Some((vec![], Some((0.1, 0.5, 100.0))))),
            ],
            Some(vec![
                "0-1,6-7,12-13,18-19,24,30,36,42",
                "2-5,8-11,14-17,20-23,25-29,31-35,37-41,43-47",
            ]),
            (&[], Some((0, 20)), &[]),
        ),
        (
            // High data sharing beside a co-runner whose bus usage is not
            // known (no profile): line 6, share the LLC, distribute the bus;
            // on this machine the LLC is the node and its controller, one
            // level, so the LLC decision decides: 12 cores in two whole
            // nodes. It arrived second, so contiguous order would have given
            // it 36-47; the batch app takes the rest.
            "a latency app packed by Tang's heuristic",
            "amd-8node",
            vec![
                (36, Batch, None),
                (12, Latency, Some((vec![], Some((0.7, 0.25, 1170.0))))),
            ],
            Some(vec!["12-47", "0-11"]),
            (&[("socket", &[1]), ("L3", &[1])], Some((1, 6)), &[0]),
        ),
    ];
    for (what, machine, members, want, note) in cases {
        let t = topo(machine);
        let apps: Vec<AppView> = members
            .iter()
            .enumerate()
            .map(|(i, (size, class, _))| app(i as u32, *size as u32, *class))
            .collect();
        let profiles: Vec<AppProfile> = members
            .iter()
            .enumerate()
            .filter_map(|(i, (_, _, p))| {
                let (scores, sharing) = p.as_ref()?;
                Some(profile(&t, i as u32, scores, *sharing))
            })
            .collect();
        let cpus: Vec<u32> = t.cpus().iter().collect();
        let mut start = 0;
        let contiguous: Vec<CpuSet> = members
            .iter()
            .map(|(size, _, _)| {
                start += size;
                cpus[start - size..start].iter().copied().collect()
            })
            .collect();
        let v = view(&t, &apps);
        let refs: Vec<&AppView> = apps.iter().collect();
        let got = Placer::new(profiles).place(&v, &refs, &contiguous);
        match (want, got) {
            (None, None) => {}
            (Some(want), Some(placed)) => {
                let got: Vec<String> = placed.cuts.iter().map(CpuSet::to_list).collect();
                assert_eq!(got, want, "{what}: {placed:?}");
                assert!(says(&placed, note), "{what}: {placed:?}");
            }
            (want, got) => panic!("{what}: wanted {want:?}, got {got:?}"),
        }
    }
}

/// Rates with a miss rate (hardware counters) or without, with a resident set.
fn rates(mpki: Option<f64>, rss_bytes: u64) -> Rates {
    Rates {
        icx_per_s: 10.0,
        mpki,
        progress_per_s: None,
        rss_bytes,
    }
}

/// (what, machine, the partition, the app's samples, its stored bandwidth per
/// thread, the policy, a part of the note or "" for none).
type MemCase = (
    &'static str,
    &'static str,
    &'static str,
    Vec<Rates>,
    Option<f64>,
    MemPolicy,
    Option<fn(&Memory) -> bool>,
);

/// Thread Tranquilizer's rule (Δ = 3 misses per 1000 instructions; without
/// counters a resident set above the LLC, 8 × 5 MiB on the Opteron, or a stored
/// bandwidth above 1 GB/s per thread) on a partition that spans nodes.
#[test]
fn memory_follows_the_nodes_and_the_class() {
    let mib = 1 << 20;
    let cases: Vec<MemCase> = vec![
        (
            "one node on the machine: nothing to choose",
            "kvm-2cpu",
            "0-1",
            vec![rates(Some(10.0), 0); 3],
            None,
            MemPolicy::Default,
            None,
        ),
        (
            "within one node: local",
            "amd-8node",
            "0-5",
            vec![rates(Some(10.0), 0); 3],
            None,
            MemPolicy::Local,
            Some(|m| matches!(m, Memory::Local)),
        ),
        (
            "two nodes, memory-intensive by its miss rate",
            "amd-8node",
            "0-11",
            vec![rates(Some(10.0), 0), rates(Some(12.0), 0)],
            None,
            MemPolicy::Interleave,
            Some(|m| {
                matches!(m, Memory::Interleave { nodes: 2, class } if class.memory
                    && matches!(class.by, ClassBy::LlcMisses { mpki, delta }
                        if (mpki - 11.0).abs() < 1e-9 && delta == 3.0))
            }),
        ),
        (
            "two nodes, CPU-intensive",
            "amd-8node",
            "0-11",
            vec![rates(Some(0.5), 0), rates(Some(0.7), 0)],
            None,
            MemPolicy::Default,
            Some(|m| matches!(m, Memory::AsIs { nodes: 2, class } if !class.memory)),
        ),
        (
            "one sample is no class yet",
            "amd-8node",
            "0-11",
            vec![rates(Some(10.0), 0)],
            None,
            MemPolicy::Default,
            Some(|m| matches!(m, Memory::Unclassified { nodes: 2 })),
        ),
        (
            "no counters: a resident set larger than the LLCs",
            "amd-8node",
            "0-2,6-8,12-14",
            vec![rates(None, 256 * mib); 2],
            None,
            MemPolicy::Interleave,
            Some(|m| {
                matches!(m, Memory::Interleave { nodes: 3, class } if class.memory
                    && matches!(class.by, ClassBy::Substitutes { .. }))
            }),
        ),
        (
            "no counters: the stored bandwidth",
            "amd-8node",
            "0-11",
            vec![rates(None, mib); 2],
            Some(2.0),
            MemPolicy::Interleave,
            Some(|m| {
                matches!(m, Memory::Interleave { class, .. } if matches!(class.by,
                    ClassBy::Substitutes { stored_gbs: Some(g), threshold_gbs: t, .. }
                        if g == 2.0 && t == 1.0))
            }),
        ),
        (
            "no counters, small and light",
            "amd-8node",
            "0-11",
            vec![rates(None, mib); 2],
            Some(0.5),
            MemPolicy::Default,
            Some(|m| matches!(m, Memory::AsIs { nodes: 2, class } if !class.memory)),
        ),
    ];
    for (what, machine, cpus, samples, gbs, want, note) in cases {
        let t = topo(machine);
        let apps = vec![app(0, 4, AppClass::Batch)];
        let profiles = gbs
            .map(|g| profile(&t, 0, &[], Some((0.0, g, 100.0))))
            .into_iter()
            .collect();
        let mut placer = Placer::new(profiles);
        placer.samples.insert(apps[0].id, samples);
        let (policy, why) = placer.memory(&view(&t, &apps), &apps[0], &list(cpus));
        assert_eq!(policy, want, "{what}: {why:?}");
        match (why, note) {
            (Some(why), Some(says)) => assert!(says(&why), "{what}: {why:?}"),
            (None, None) => {}
            (why, _) => panic!("{what}: {why:?}"),
        }
    }
}

/// Stored profiles of `app0` (a streaming app: −20 at socket and L3, 2 GB/s
/// per thread) and `app1` (a sharer: +10, 0.5 GB/s) on `t`, for auto's scripts.
pub(crate) fn profiles_for(t: &Topology) -> Vec<AppProfile> {
    vec![
        profile(
            t,
            0,
            &[(socket(), -20.0), (l3(), -20.0)],
            Some((0.0, 2.0, 3000.0)),
        ),
        profile(
            t,
            1,
            &[(socket(), 10.0), (l3(), 10.0)],
            Some((0.6, 0.5, 100.0)),
        ),
    ]
}
