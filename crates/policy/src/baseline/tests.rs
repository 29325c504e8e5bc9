//! Table-driven tests of the baseline policies over the fixture topologies.

use std::time::Duration;

use coloc_model::testutils::{fixture_topologies, pending_app, running_app};
use coloc_model::{AppId, AppView, CpuSet, Placement, StaticMapping, Trigger, View};
use proptest::prelude::*;

use super::*;
use crate::invariants::{check, check_exclusive};

fn view<'a>(topo: &'a coloc_model::Topology, apps: &'a [AppView]) -> View<'a> {
    View {
        now: Duration::from_secs(10),
        trigger: Trigger::Epoch,
        topology: topo,
        apps,
        last: None,
        prev: None,
    }
}

fn id(app: u32) -> AppId {
    AppId { app, rep: 0 }
}

#[test]
fn native_admits_everything_and_manages_nothing() {
    for topo in fixture_topologies() {
        let apps = [running_app(0, &[10, 11]), pending_app(1, 4)];
        let plan = Native.decide(&view(&topo, &apps));
        check(&view(&topo, &apps), &plan).unwrap();
        assert!(plan.apps.iter().all(|p| p.admit));
        assert!(plan
            .apps
            .iter()
            .all(|p| p.placement == Placement::Unmanaged));
    }
}

#[test]
fn batch_runs_one_app_at_a_time_in_arrival_order() {
    let topo = &fixture_topologies()[2];
    // (apps, which ids are admitted)
    let cases: Vec<(Vec<AppView>, Vec<u32>)> = vec![
        // Nothing running: only the earliest pending starts.
        (vec![pending_app(1, 2), pending_app(0, 2)], vec![0]),
        // Something running: everything else waits.
        (vec![running_app(2, &[5]), pending_app(0, 2)], vec![2]),
        // Only running apps: they stay admitted.
        (vec![running_app(0, &[5])], vec![0]),
        (vec![], vec![]),
    ];
    for (apps, want) in cases {
        let plan = Batch.decide(&view(topo, &apps));
        check(&view(topo, &apps), &plan).unwrap();
        let got: Vec<u32> = plan
            .apps
            .iter()
            .filter(|p| p.admit)
            .map(|p| p.app.app)
            .collect();
        assert_eq!(
            got,
            want,
            "apps {:?}",
            apps.iter().map(|a| a.id).collect::<Vec<_>>()
        );
    }
}

/// (fixture topology index, thread ids of each app, expected CPU set of each app)
type EqualCase = (usize, Vec<Vec<u32>>, Vec<&'static str>);

#[test]
fn equal_partitions_follow_the_topology() {
    let topos = fixture_topologies();
    let cases: Vec<EqualCase> = vec![
        // kvm-2cpu: two apps, one CPU each.
        (2, vec![vec![10, 11], vec![20, 21]], vec!["0", "1"]),
        // One app gets the whole machine.
        (2, vec![vec![10, 11]], vec!["0-1"]),
        // intel-2s-smt, 32 PUs: 3 apps get 11, 11, 10 PUs; slices keep SMT pairs
        // together except where an odd size forces a split.
        (
            0,
            vec![vec![1], vec![2], vec![3]],
            vec!["0-10", "11-21", "22-31"],
        ),
        // amd-8node, 48 cores: 8 apps get one NUMA node (6 cores) each.
        (
            1,
            (0..8).map(|i| vec![100 + i]).collect(),
            vec![
                "0-5", "6-11", "12-17", "18-23", "24-29", "30-35", "36-41", "42-47",
            ],
        ),
    ];
    for (t, threads, want) in cases {
        let topo = &topos[t];
        let apps: Vec<AppView> = threads
            .iter()
            .enumerate()
            .map(|(i, tids)| running_app(i as u32, tids))
            .collect();
        let plan = Equal.decide(&view(topo, &apps));
        check(&view(topo, &apps), &plan).unwrap();
        check_exclusive(&plan).unwrap();
        let got: Vec<String> = plan
            .apps
            .iter()
            .map(|p| p.placement.cpus().to_list())
            .collect();
        assert_eq!(got, want, "topology {}", topo.name);
    }
}

#[test]
fn equal_pins_each_thread_round_robin_in_its_slice() {
    let topo = &fixture_topologies()[0];
    // One app with 3 threads on 32 PUs, a second app: slices 0-15 and 16-31.
    let apps = [running_app(0, &[7, 8, 9]), running_app(1, &[20])];
    let plan = Equal.decide(&view(topo, &apps));
    let p = plan.for_app(id(0)).unwrap();
    assert_eq!(p.placement.cpus_of(7).unwrap().to_list(), "0");
    assert_eq!(p.placement.cpus_of(8).unwrap().to_list(), "1");
    assert_eq!(p.placement.cpus_of(9).unwrap().to_list(), "2");
    // A thread born after the decision may use the whole slice until pinned.
    assert_eq!(p.placement.cpus_of(99).unwrap().to_list(), "0-15");
}

#[test]
fn equal_holds_apps_that_do_not_fit() {
    let topo = &fixture_topologies()[2];
    let apps = [
        running_app(0, &[1]),
        running_app(1, &[2]),
        pending_app(2, 2),
    ];
    let plan = Equal.decide(&view(topo, &apps));
    check(&view(topo, &apps), &plan).unwrap();
    assert!(!plan.for_app(id(2)).unwrap().admit);
    assert!(plan.for_app(id(0)).unwrap().admit);
}

#[test]
fn static_uses_the_workload_mapping_within_the_machine() {
    let topo = &fixture_topologies()[2];
    let mut shared = running_app(0, &[5, 6]);
    // CPU 7 does not exist on the 2-CPU machine: dropped.
    std::sync::Arc::make_mut(&mut shared.spec).cpus =
        Some(StaticMapping::Shared(CpuSet::parse_list("1,7").unwrap()));
    let mut per = running_app(1, &[8, 9, 10]);
    std::sync::Arc::make_mut(&mut per.spec).cpus = Some(StaticMapping::PerThread(vec![
        CpuSet::single(0),
        CpuSet::single(1),
    ]));
    let unmapped = running_app(2, &[11]);
    let apps = [shared, per, unmapped];
    let plan = Static.decide(&view(topo, &apps));
    check(&view(topo, &apps), &plan).unwrap();
    assert_eq!(
        plan.for_app(id(0)).unwrap().placement,
        Placement::Shared(CpuSet::single(1))
    );
    let p = &plan.for_app(id(1)).unwrap().placement;
    assert_eq!(p.cpus_of(8).unwrap().to_list(), "0");
    assert_eq!(p.cpus_of(9).unwrap().to_list(), "1");
    assert_eq!(p.cpus_of(10).unwrap().to_list(), "0");
    assert_eq!(plan.for_app(id(2)).unwrap().placement, Placement::Unmanaged);
}

proptest! {
    /// Any mix of running and pending apps on any fixture machine: every baseline's
    /// plan passes the common invariants, equal's is exclusive and gives every
    /// running app at least one CPU.
    #[test]
    fn baselines_keep_the_invariants(
        topo_index in 0usize..3,
        running in proptest::collection::vec(1usize..6, 0..6),
        pending in proptest::collection::vec(1u32..8, 0..6),
    ) {
        let topo = &fixture_topologies()[topo_index];
        let mut apps = Vec::new();
        let mut tid = 100;
        let cpus = topo.cpus().len();
        // A machine never runs more apps than equal admitted; keep it realistic.
        for (i, n) in running.iter().take(cpus).enumerate() {
            let tids: Vec<u32> = (0..*n as u32).map(|k| tid + k).collect();
            tid += 10;
            apps.push(running_app(i as u32, &tids));
        }
        for (i, n) in pending.iter().enumerate() {
            apps.push(pending_app((10 + i) as u32, *n));
        }
        let v = view(topo, &apps);
        for mut policy in [Box::new(Native) as Box<dyn Policy>, Box::new(Batch), Box::new(Equal), Box::new(Static)] {
            let plan = policy.decide(&v);
            prop_assert!(check(&v, &plan).is_ok(), "{}: {:?}", policy.name(), check(&v, &plan));
        }
        let plan = Equal.decide(&v);
        prop_assert!(check_exclusive(&plan).is_ok());
        for a in v.running() {
            let p = plan.for_app(a.id).unwrap();
            prop_assert!(!p.placement.cpus().is_empty());
            for t in &a.threads {
                prop_assert_eq!(p.placement.cpus_of(*t).map(CpuSet::len), Some(1));
            }
        }
    }
}
