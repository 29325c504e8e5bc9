//! Algorithm 1 branch by branch, the layouts of each choice on the paper's
//! Clovertown and on other trees, and the plans around them.

use crate::note;
use std::sync::Arc;

use coloc_model::profile::{
    AppIdentity, AppProfile, PlatformFingerprint, SharingCharacteristics, SharingSignal,
};
use coloc_model::testutils::{pending_app, running_app};
use coloc_model::workload::AppClass;
use coloc_model::{AppView, Placement, Topology, Trigger, View};

use super::algorithm::{decide, Thresholds, Traits};
use super::levels::{Choice, Levels, Sharing};
use super::*;

/// The CPUs of a plan's app.
fn cpus_of(plan: &Plan, app: coloc_model::AppId) -> coloc_model::CpuSet {
    plan.for_app(app)
        .map(|p| p.placement.cpus())
        .unwrap_or_default()
}

const CLOVERTOWN: &str = "package:2 group(FSB):1 l2(4M):2 core:2";
const WESTMERE: &str = "package:2 numa:1 l3(12M):1 core:6";

fn traits(sharing: f64, bus: f64, footprint: f64) -> Traits {
    Traits {
        data_sharing: Some(sharing),
        sharing_is_time_saved: false,
        bus_usage: Some(bus),
        llc_footprint: Some(footprint),
    }
}

use Sharing::{Distribute as D, Share as S};

fn ch(llc: Sharing, bus: Sharing) -> Choice {
    Choice { llc, bus }
}

/// Every branch of Algorithm 1, with the default thresholds (sharing high
/// from 0.5, footprint high from 2000 misses/ms): (P, C, choice, line).
#[test]
fn algorithm_1_every_branch() {
    let t = Thresholds::default();
    let none = Traits::default();
    let cases: &[(&str, Traits, Traits, Choice, u8)] = &[
        // Line 1 true: high sharing.
        (
            "sharing, lighter bus",
            traits(0.7, 0.2, 1000.0),
            traits(0.0, 0.9, 9000.0),
            ch(S, S),
            4,
        ),
        (
            "sharing, heavier bus",
            traits(0.7, 0.2, 1000.0),
            traits(0.0, 0.1, 300.0),
            ch(S, D),
            6,
        ),
        (
            "sharing, equal bus",
            traits(0.5, 0.2, 1000.0),
            traits(0.0, 0.2, 300.0),
            ch(S, D),
            6,
        ),
        // Line 1 false, line 9 true.
        (
            "lighter bus, high footprint",
            traits(0.1, 0.2, 2600.0),
            traits(0.0, 0.9, 9000.0),
            ch(D, S),
            12,
        ),
        (
            "lighter bus, low footprint",
            traits(0.4, 0.2, 1600.0),
            traits(0.0, 0.9, 9000.0),
            ch(S, S),
            14,
        ),
        // Line 9 false.
        (
            "heavier bus, smaller footprint",
            traits(0.1, 0.2, 300.0),
            traits(0.0, 0.1, 400.0),
            ch(S, D),
            18,
        ),
        (
            "heavier bus, larger footprint",
            traits(0.1, 0.2, 2600.0),
            traits(0.0, 0.02, 370.0),
            ch(D, D),
            20,
        ),
        // Missing figures: a test or comparison with one is false.
        ("nothing known", none, none, ch(D, D), 20),
        (
            "co-runner unknown, sharing",
            traits(0.7, 0.2, 1.0),
            none,
            ch(S, D),
            6,
        ),
        (
            "co-runner unknown, no sharing",
            traits(0.1, 0.2, 1.0),
            none,
            ch(D, D),
            20,
        ),
        (
            "footprint unknown",
            Traits {
                llc_footprint: None,
                ..traits(0.1, 0.2, 0.0)
            },
            traits(0.0, 0.9, 9000.0),
            ch(S, S),
            14,
        ),
    ];
    for (name, p, c, want, line) in cases {
        assert_eq!(decide(p, c, &t), (*want, *line), "{name}");
    }
}

fn topo(desc: &str) -> Topology {
    Topology::synthetic("t", desc).unwrap()
}

/// On Clovertown (cores 0-1 and 2-3 share an L2 on FSB 0, 4-7 on FSB 1) the
/// four choices for four threads are the paper's four mappings (Table 2,
/// Figures 3–5), and two threads spread or pack the same way.
#[test]
fn choices_lay_out_as_the_papers_mappings() {
    let l = Levels::new(&topo(CLOVERTOWN));
    assert_eq!((l.llc_label.as_str(), l.bus_label.as_str()), ("L2", "FSB"));
    let all: Vec<usize> = (0..8).collect();
    let cases = [
        (4, ch(S, S), "0-3"),     // {XXXX....}
        (4, ch(D, S), "0-3"),     // sharing the FSB forces both L2s of a socket
        (4, ch(S, D), "0-1,4-5"), // {XX..XX..}
        (4, ch(D, D), "0,2,4,6"), // {X.X.X.X.}
        (2, ch(S, S), "0-1"),
        (2, ch(D, S), "0,2"),
        (2, ch(D, D), "0,4"),
        (2, ch(S, D), "0,4"), // one per bus: nothing left to share an L2 with
        (6, ch(D, D), "0-2,4-6"),
    ];
    for (n, choice, want) in cases {
        let got = l.cpus(&l.place(&all, n, choice)).to_list();
        assert_eq!(got, want, "{n} threads, {}", choice.label());
    }
    // With cores 0 and 1 taken the packing moves to the emptier bus.
    let free: Vec<usize> = (2..8).collect();
    assert_eq!(l.cpus(&l.place(&free, 4, ch(S, S))).to_list(), "4-7");
}

/// Westmere's L3 coincides with the memory controller and the socket: the bus
/// level is that same level, and the LLC decision decides.
#[test]
fn levels_on_other_trees() {
    let w = Levels::new(&topo(WESTMERE));
    assert_eq!((w.llc_label.as_str(), w.bus_label.as_str()), ("L3", "L3"));
    let all: Vec<usize> = (0..12).collect();
    assert_eq!(w.cpus(&w.place(&all, 4, ch(S, D))).to_list(), "0-3");
    assert_eq!(w.cpus(&w.place(&all, 4, ch(D, S))).to_list(), "0-1,6-7");
    assert_eq!(w.cpus(&w.place(&all, 4, ch(S, S))).to_list(), "0-3");
    // One L3, one socket (this VM's shape): both levels are one instance.
    let vm = Levels::new(&topo("package:1 l3(32M):1 core:2"));
    assert_eq!((vm.bus_label.as_str(), vm.coincide), ("L3", true));
    // Two sockets whose L2s are private: no shared cache, each core its own
    // LLC instance, the socket the bus.
    let flat = Levels::new(&topo("package:2 core:2"));
    assert_eq!(
        (flat.llc_label.as_str(), flat.bus_label.as_str()),
        ("core", "socket")
    );
    assert_eq!(
        flat.cpus(&flat.place(&[0, 1, 2, 3], 2, ch(S, S))).to_list(),
        "0-1"
    );
    assert_eq!(vm.cpus(&vm.place(&[0, 1], 1, ch(D, D))).to_list(), "0");
    // Two NUMA nodes of two L3s each: the bus level is the node.
    let n = Levels::new(&topo("package:1 numa:2 l3(8M):2 core:2"));
    assert_eq!((n.llc_label.as_str(), n.bus_label.as_str()), ("L3", "MC"));
    let all: Vec<usize> = (0..8).collect();
    assert_eq!(n.cpus(&n.place(&all, 4, ch(D, D))).to_list(), "0,2,4,6");
}

pub(crate) fn sharing(data: f64, bw: f64, fp: f64) -> SharingCharacteristics {
    SharingCharacteristics {
        signal: SharingSignal::SimCounters,
        threads: 4,
        data_sharing: Some(data),
        bandwidth_gbs: Some(bw),
        llc_miss_rate: Some(fp / (1.0 - data)),
        llc_footprint: Some(fp),
        missing: Vec::new(),
        data_sharing_runs: None,
    }
}

fn profile(name: &str, c: SharingCharacteristics, t: &Topology) -> AppProfile {
    AppProfile {
        identity: AppIdentity::model(name, name),
        platform: PlatformFingerprint::of(t),
        levels: Vec::new(),
        sharing: Some(c),
    }
}

fn app(index: u32, name: &str, threads: u32, class: AppClass) -> AppView {
    let mut a = running_app(
        index,
        &(0..threads).map(|t| 100 * index + t).collect::<Vec<_>>(),
    );
    let mut spec = (*a.spec).clone();
    spec.name = name.into();
    spec.command = None;
    spec.model = Some(name.into());
    spec.class = class;
    a.spec = Arc::new(spec);
    a
}

fn view<'a>(t: &'a Topology, apps: &'a [AppView]) -> View<'a> {
    View {
        now: std::time::Duration::ZERO,
        trigger: Trigger::Epoch,
        topology: t,
        apps,
        last: None,
        prev: None,
    }
}

/// A bigtable-like latency app next to a stitcher-like batch app on
/// Clovertown: line 4 packs it on one socket, the batch app takes the other,
/// and no core is shared. Next to a protobuf-like one: line 6, one L2 per
/// socket, the batch app on the other two L2s.
#[test]
fn the_batch_app_gets_what_remains() {
    let t = topo(CLOVERTOWN);
    let profiles = vec![
        profile("bigtable", sharing(0.7, 0.25, 1170.0), &t),
        profile("stitcher", sharing(0.0, 0.94, 14600.0), &t),
        profile("protobuf", sharing(0.0, 0.02, 370.0), &t),
    ];
    for (batch, latency_cpus, batch_cpus, line) in [
        ("stitcher", "0-3", "4-7", 4),
        ("protobuf", "0-1,4-5", "2-3,6-7", 6),
    ] {
        let apps = [
            app(0, "bigtable", 4, AppClass::Latency),
            app(1, batch, 4, AppClass::Batch),
        ];
        let mut tang = Tang::new(profiles.clone());
        let plan = tang.decide(&view(&t, &apps));
        assert_eq!(
            cpus_of(&plan, apps[0].id).to_list(),
            latency_cpus,
            "{batch}"
        );
        assert_eq!(cpus_of(&plan, apps[1].id).to_list(), batch_cpus, "{batch}");
        assert_eq!(tang_line(&plan, apps[0].id), Some(line), "{}", note(&plan));
        assert!(plan.apps.iter().all(|p| p.admit));
    }
}

/// Characteristics as the Linux substitutes give them: `saved` of the CPU
/// time saved by the threads sharing a cache (apart 1 s, together 1 − saved),
/// the bandwidth `bw` from the stream probe, its miss rate in 64-byte lines and
/// the footprint by Equation 1.
fn substituted(saved: f64, bw: f64) -> SharingCharacteristics {
    use coloc_model::profile::{Sensitivity, SharedCacheRuns, Signal};
    let runs =
        Sensitivity::from_runs(Signal::TaskClock, 2, vec![1e9], vec![(1.0 - saved) * 1e9]).unwrap();
    let miss = bw * 1e6 / 64.0;
    SharingCharacteristics {
        signal: SharingSignal::StreamCoRuns,
        threads: 1,
        data_sharing: Some(saved),
        bandwidth_gbs: Some(bw),
        llc_miss_rate: Some(miss),
        llc_footprint: Some(miss * (1.0 - saved)),
        missing: Vec::new(),
        data_sharing_runs: Some(SharedCacheRuns {
            cache: "core".into(),
            runs,
        }),
    }
}

/// The substitute's data sharing is read on its own scale: 8% of the CPU
/// time saved is high (from 5%), so a latency app drawing more bandwidth
/// (0.9 GB/s) than its co-runner (0.1) shares the L2 and spreads over the
/// FSBs (line 6); 3% is not, and with the larger footprint (14 062.5 × 0.97
/// against 1562.5 misses/ms) it is spread (line 20); the same 0.08 from
/// counters is a share of LLC requests, far below 0.5: line 20 too.
#[test]
fn substitute_data_sharing_has_its_own_threshold() {
    let t = topo(CLOVERTOWN);
    let apps = [
        app(0, "svc", 4, AppClass::Latency),
        app(1, "batch", 4, AppClass::Batch),
    ];
    let batch = profile("batch", substituted(0.0, 0.1), &t);
    let cases = [
        (substituted(0.08, 0.9), 6, "0-1,4-5"),
        (substituted(0.03, 0.9), 20, "0,2,4,6"),
        (sharing(0.08, 0.9, 14000.0), 20, "0,2,4,6"),
    ];
    for (svc, line, cpus) in cases {
        let mut tang = Tang::new(vec![profile("svc", svc.clone(), &t), batch.clone()]);
        let plan = tang.decide(&view(&t, &apps));
        assert_eq!(
            tang_line(&plan, apps[0].id),
            Some(line),
            "{svc:?}: {}",
            note(&plan)
        );
        assert_eq!(cpus_of(&plan, apps[0].id).to_list(), cpus, "{svc:?}");
    }
}

/// Two latency apps: the earlier arrival chooses first; each keeps a core for
/// the apps after it; a latency app that asks for every core leaves one to
/// the batch app; with no batch app, nothing is reserved.
#[test]
fn several_latency_apps_in_arrival_order() {
    let t = topo(CLOVERTOWN);
    let apps = [
        app(0, "a", 4, AppClass::Latency),
        app(1, "b", 4, AppClass::Latency),
        app(2, "c", 2, AppClass::Batch),
    ];
    // Nothing known: line 20 for both, spread; the second takes what the
    // first left, keeping one core for the batch app.
    let plan = Tang::default().decide(&view(&t, &apps));
    let a = cpus_of(&plan, apps[0].id);
    let b = cpus_of(&plan, apps[1].id);
    let c = cpus_of(&plan, apps[2].id);
    assert_eq!(a.to_list(), "0,2,4,6");
    assert_eq!((b.len(), c.len()), (3, 1), "{plan:?}");
    assert!(a.is_disjoint(&b) && a.is_disjoint(&c) && b.is_disjoint(&c));

    let greedy = [
        app(0, "a", 8, AppClass::Latency),
        app(1, "c", 2, AppClass::Batch),
    ];
    let plan = Tang::default().decide(&view(&t, &greedy));
    assert_eq!(cpus_of(&plan, greedy[0].id).len(), 7);
    assert_eq!(cpus_of(&plan, greedy[1].id).len(), 1);

    let alone = [app(0, "a", 8, AppClass::Latency)];
    let plan = Tang::default().decide(&view(&t, &alone));
    assert_eq!(cpus_of(&plan, alone[0].id).len(), 8);
}

/// Without a latency app tang changes nothing but admits everyone; a pending
/// latency app is placed before it starts.
#[test]
fn without_latency_apps_everything_shares_the_machine() {
    let t = topo(CLOVERTOWN);
    let apps = [app(0, "x", 2, AppClass::Batch), pending_app(1, 2)];
    let plan = Tang::default().decide(&view(&t, &apps));
    assert!(plan
        .apps
        .iter()
        .all(|p| p.admit && p.placement == Placement::Shared(t.cpus().clone())));
    let mut pending = pending_app(0, 2);
    let mut spec = (*pending.spec).clone();
    spec.class = AppClass::Latency;
    pending.spec = Arc::new(spec);
    let apps = [pending];
    let plan = Tang::default().decide(&view(&t, &apps));
    assert_eq!(cpus_of(&plan, apps[0].id).to_list(), "0,4");
}

/// The line of Algorithm 1 that placed latency app `id`.
fn tang_line(plan: &Plan, id: AppId) -> Option<u8> {
    plan.for_app(id)?.reasons.iter().find_map(|r| match r {
        coloc_model::reason::Reason::Tang(t) => Some(t.line),
        _ => None,
    })
}
