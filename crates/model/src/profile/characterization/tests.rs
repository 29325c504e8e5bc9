//! The characterization configurations of ReSense Table III, derived from the
//! topologies, and the cases where "everything else equal" cannot hold.

use proptest::prelude::*;

use super::*;
use crate::testutils::fixture_topologies;
use crate::topology::{Group, TopologyBuilder};

fn list(cpus: &[Cpu]) -> String {
    cpus.iter().copied().collect::<CpuSet>().to_list()
}

/// (level label, threads, baseline CPUs, contention CPUs) of every characterizable
/// level, and the label of every other one with its reason.
type Summary = (Vec<Row>, Vec<(String, String)>);

/// (level label, threads, baseline CPUs, contention CPUs).
type Row = (String, usize, String, String);

fn summary(t: &Topology) -> Summary {
    let mut ok = Vec::new();
    let mut not = Vec::new();
    for p in characterization_plan(t) {
        match &p.setup {
            Ok(c) => {
                assert!(c.caveats.is_empty(), "{}: {:?}", p.label(), c.caveats);
                ok.push((p.label(), c.threads, list(&c.baseline), list(&c.contention)))
            }
            Err(e) => not.push((p.label(), e.to_string())),
        }
    }
    (ok, not)
}

/// Harpertown as the paper numbers it (Fig. 5(b), Table III): C0 and C2 share an
/// L2, C0, C2, C4, C6 share an FSB.
fn paper_harpertown() -> Topology {
    let mut b = TopologyBuilder::new("harpertown-paper");
    for cpu in 0..8 {
        b.pu(cpu, cpu % 2, cpu / 2).unwrap();
    }
    for fsb in ["0,2,4,6", "1,3,5,7"] {
        b.group(Group {
            name: Some("FSB".into()),
            ..Group::new(ObjKind::Group, None, CpuSet::parse_list(fsb).unwrap())
        });
    }
    for l2 in ["0,2", "4,6", "1,3", "5,7"] {
        b.group(Group::cache(2, 6 << 20, CpuSet::parse_list(l2).unwrap()));
    }
    b.build(None).unwrap()
}

/// Every row of Table III, with the paper's own CPU numbers.
#[test]
fn table_iii() {
    let syn = |d: &str| Topology::synthetic("t", d).unwrap();
    let s = |x: &str| x.to_string();
    let cases: Vec<(&str, Topology, Vec<Row>)> = vec![
        (
            // L2: baseline C0 and C2, contention C0 and C1.
            "yorkfield",
            syn("package:1 l2(6M):2 core:2"),
            vec![(s("L2"), 2, s("0,2"), s("0-1"))],
        ),
        (
            // L2: C0,C4 vs C0,C2; FSB: C0,C2,C1,C3 vs C0,C2,C4,C6.
            "harpertown",
            paper_harpertown(),
            vec![
                (s("L2"), 2, s("0,4"), s("0,2")),
                (s("FSB+socket"), 4, s("0-3"), s("0,2,4,6")),
            ],
        ),
        (
            // L3+MC: C0-C3 and C8-C11 vs C0-C7.
            "xeon32 (one PU per core as in Table III)",
            syn("package:4 numa:1 l3(18M):1 core:8"),
            vec![(s("L3+MC+socket"), 8, s("0-3,8-11"), s("0-7"))],
        ),
        (
            // L3: C0-C2 and C6-C8 vs C0-C5; socket: C0-C5 and C12-C17 vs C0-C11.
            "opteron48",
            syn("package:4 numa:2 l3(5M):1 l2(512K):6 core:1"),
            vec![
                (s("L3+MC"), 6, s("0-2,6-8"), s("0-5")),
                (s("socket"), 12, s("0-5,12-17"), s("0-11")),
            ],
        ),
    ];
    for (name, t, want) in cases {
        assert_eq!(summary(&t).0, want, "{name}");
    }
}

/// The fixture machines: the SMT Xeon runs one thread per core (first PUs) and
/// spreads its baseline over the two sockets; the AMD machine keeps the L3
/// baseline inside one socket; the VM's single L3 is not characterizable.
#[test]
fn fixture_topologies_plans() {
    let s = |x: &str| x.to_string();
    let single = NotCharacterizable::SingleInstance.to_string();
    let want: Vec<Summary> = vec![
        (
            vec![(
                s("L3+MC+socket"),
                8,
                s("0,2,4,6,16,18,20,22"),
                s("0,2,4,6,8,10,12,14"),
            )],
            vec![],
        ),
        (
            vec![
                (s("L3+MC"), 6, s("0-2,6-8"), s("0-5")),
                (s("socket"), 12, s("0-5,12-17"), s("0-11")),
            ],
            vec![],
        ),
        (vec![], vec![(s("L3+socket"), single)]),
    ];
    for (t, want) in fixture_topologies().iter().zip(want) {
        assert_eq!(summary(t), want, "{}", t.name);
    }
}

/// Six cores per L3 over L2 pairs: three threads per L3 in the baseline fill one
/// L2 and half of another, the contention run fills three L2s — said, not hidden.
#[test]
fn unequal_lower_level_is_a_caveat() {
    let t = Topology::synthetic("odd", "package:1 l3(12M):2 l2(1M):3 core:2").unwrap();
    let plans = characterization_plan(&t);
    let l3 = plans
        .iter()
        .find(|p| p.level == ResourceKind::Cache { level: 3 })
        .unwrap();
    let c = l3.setup.as_ref().unwrap();
    assert_eq!(
        (list(&c.baseline), list(&c.contention)),
        (s("0-2,6-8"), s("0-5"))
    );
    assert_eq!(
        c.caveats,
        vec!["L2 is not shared alike: baseline 2+2+1+1 threads per instance, contention 2+2+2"]
    );
    let l2 = plans
        .iter()
        .find(|p| p.level == ResourceKind::Cache { level: 2 })
        .unwrap();
    assert!(l2.setup.as_ref().unwrap().caveats.is_empty());
}

fn s(x: &str) -> String {
    x.to_string()
}

/// A cpuset that leaves one core of the second L3: no instance can take half of
/// the first one's four threads.
#[test]
fn restricted_instance_too_small() {
    let mut b = TopologyBuilder::new("restricted");
    for cpu in 0..8 {
        b.pu(cpu, 0, cpu).unwrap();
    }
    b.group(Group::cache(3, 8 << 20, CpuSet::parse_list("0-3").unwrap()));
    b.group(Group::cache(3, 8 << 20, CpuSet::parse_list("4-7").unwrap()));
    let t = b.build(Some(&CpuSet::parse_list("0-4").unwrap())).unwrap();
    let plans = characterization_plan(&t);
    let l3 = plans
        .iter()
        .find(|p| p.level == ResourceKind::Cache { level: 3 })
        .unwrap();
    assert_eq!(
        l3.setup,
        Err(NotCharacterizable::TooFewCores {
            needed: 2,
            largest_other: 1
        })
    );
}

proptest! {
    /// On any synthetic machine, every characterizable level has one thread per
    /// core in both runs, the contention run under one instance and the baseline
    /// under exactly two; single-instance levels are the only ones refused.
    #[test]
    fn configurations_are_well_formed(
        packages in 1u32..4,
        numa in 1u32..3,
        l3 in 1u32..3,
        l2 in 1u32..4,
        cores in 1u32..4,
        pus in 1u32..3,
    ) {
        let d = format!("package:{packages} numa:{numa} l3(8M):{l3} l2(1M):{l2} core:{cores} pu:{pus}");
        let t = Topology::synthetic("p", &d).unwrap();
        let levels = t.shared_resources();
        for (p, r) in characterization_plan(&t).iter().zip(&levels) {
            let c = match &p.setup {
                Ok(c) => c,
                Err(e) => {
                    prop_assert_eq!(e, &NotCharacterizable::SingleInstance);
                    prop_assert_eq!(r.instances.len(), 1);
                    continue;
                }
            };
            for run in [&c.baseline, &c.contention] {
                prop_assert_eq!(run.len(), c.threads);
                let cores: Vec<_> = run.iter().map(|&cpu| t.core_of(cpu).unwrap().clone()).collect();
                for (i, core) in cores.iter().enumerate() {
                    prop_assert!(!cores[..i].contains(core), "{d}: two threads on one core");
                }
            }
            let used = |run: &[Cpu]| r.instances.iter().filter(|i| run.iter().any(|c| i.contains(*c))).count();
            prop_assert_eq!(used(&c.contention), 1);
            prop_assert_eq!(used(&c.baseline), if c.threads > 1 { 2 } else { 1 });
            prop_assert_eq!(c.threads, r.cores_per_instance);
        }
    }
}
