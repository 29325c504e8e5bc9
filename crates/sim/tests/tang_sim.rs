//! Tang et al. (ISCA 2011) in the simulator: the heuristic's mapping for the six
//! pairs of Table 4 against the best of the paper's three mappings, and AToM on
//! the nine loads of Figures 23–24 against the best, average and worst static
//! mapping (docs/policies/tang-atom.md, Results). Every figure comes from
//! whole runs through the unchanged Manager on SimMachine, so it is
//! deterministic; `--nocapture` prints the tables.

use std::time::Duration;

use coloc_model::explain;
use coloc_model::reason::{CompetitionPhase, Reason};
use coloc_model::{AppId, TraceEvent};
use coloc_policy::atom::{Atom, Params};
use coloc_policy::baseline::Static;
use coloc_policy::Policy;
use coloc_sim::model::AppModel;
use coloc_sim::papers::tang::{
    atom_loads, complement, latency_time, models, nine_loads, table4, workload, Load, Machine,
    CLOVERTOWN, PAPER_MISS_BOUND_PCT, WESTMERE,
};
use coloc_sim::{platform, SimMachine};

/// The trace of a whole run of `w` under `policy`.
fn trace(
    platform_name: &str,
    models: &[AppModel],
    w: &coloc_model::Workload,
    p: &mut dyn Policy,
) -> Vec<TraceEvent> {
    let mut m = SimMachine::new(platform(platform_name).unwrap(), 1).with_models(models.to_vec());
    let mut trace: Vec<TraceEvent> = Vec::new();
    coloc_manager::run(
        &mut m,
        p,
        w,
        &coloc_manager::RunOptions::simulated(w.epoch.unwrap(), 1),
        &mut trace,
    )
    .unwrap();
    trace
}

/// The latency app (the workload's first).
const FIRST: AppId = AppId { app: 0, rep: 0 };

/// Table 4: Algorithm 1 from simulated characteristics against the best of
/// {XXXX****}, {XX**XX**}, {X*X*X*X*} on Clovertown
/// (`coloc_sim::papers::tang::table4`; `coloc bench paper tang` prints it).
/// The heuristic makes the paper's six predictions, at least four of them the
/// simulated best as in the paper. The paper's misses are within 2% (§5.1.1);
/// the simulator's one miss (bigtable with protobuf: {XX**XX**} 7.7% behind
/// {XXXX****}) is not, so this holds today's figure, not the paper's
/// (docs/simulator.md, Reproducing the papers).
#[test]
fn table_4_heuristic_against_the_best_mapping() {
    let rows = table4(40.0).unwrap();
    let mut table = String::new();
    for r in &rows {
        let (best, best_s) = r.best();
        table.push_str(&format!(
            "{:>17} w/ {:<8} best {best} {best_s:.3}s  tang {} {:.3}s  gap {:+.2}%\n",
            r.paper.latency,
            r.paper.batch,
            r.predicted,
            r.predicted_s,
            r.gap_pct()
        ));
    }
    println!("{table}");
    for r in &rows {
        assert_eq!(r.predicted, r.paper.predicted, "{table}");
    }
    let exact = rows.iter().filter(|r| r.best().0 == r.predicted).count();
    assert!(exact >= 4, "{table}");
    let worst = rows.iter().map(|r| r.gap_pct()).fold(0.0, f64::max);
    assert!(worst <= TODAYS_MISS_BOUND_PCT, "{table}");
    let within_paper = rows
        .iter()
        .filter(|r| r.gap_pct() <= PAPER_MISS_BOUND_PCT)
        .count();
    assert!(within_paper >= 5, "{table}");
}

/// The simulator's worst miss on Table 4 today (7.7%), with a margin: the
/// paper's 2% is not met.
const TODAYS_MISS_BOUND_PCT: f64 = 8.0;

/// AToM on `loads`, printed; each load's (atom, average, worst) as fractions
/// of the best static mapping.
fn atom_table(machine: Machine, loads: &[Load], ginstr: f64) -> (String, Vec<(f64, f64, f64)>) {
    let out = atom_loads(machine, loads, ginstr, Duration::from_secs(1)).unwrap();
    let mut table = String::new();
    for l in &out {
        table.push_str(&format!(
            "{:>10} {:>17} {:<9} atom {:.3}  average {:.3}  worst {:.3}  (of best)\n",
            l.platform,
            l.load.0,
            l.load.1.unwrap_or("alone"),
            l.atom(),
            l.average(),
            l.worst()
        ));
    }
    println!("{table}");
    (
        table,
        out.iter()
            .map(|l| (l.atom(), l.average(), l.worst()))
            .collect(),
    )
}

/// CI-sized AToM (about 15 s of CPU in a debug build): Westmere, a third of
/// the Figure 24 runs' work, on a load where the configurations differ little
/// (bigtable with protobuf, within 24%, where a scored initialization once
/// made AToM pick a slow mapping: 0.805 of the best) and one where they differ
/// most (webSearch with stitcher). AToM must beat the average static mapping
/// and reach 90% of the best: its learning runs the other configurations for
/// 4 of the run's ~8 s.
#[test]
fn atom_beats_the_average_mapping_on_westmere_ci_sized() {
    let (table, out) = atom_table(
        WESTMERE,
        &[
            ("bigtable", Some("protobuf")),
            ("websearch", Some("stitcher")),
        ],
        50.0,
    );
    for (atom, avg, _) in out {
        assert!(atom > avg, "{table}");
        assert!(atom >= 0.90, "{table}");
    }
}

/// Figure 23: the nine loads on Clovertown (5 configurations of 4 threads).
/// Minutes of simulation in a debug build, so not part of `cargo test`:
/// `cargo test -p coloc-sim --test tang_sim -- --ignored --nocapture`.
#[test]
#[ignore = "minutes of simulation; run with --ignored"]
fn atom_on_clovertown() {
    let (table, out) = atom_table(CLOVERTOWN, &nine_loads(), 150.0);
    assert!(out.iter().all(|o| o.0 >= 0.85 && o.0 > o.1), "{table}");
}

/// Figure 24: the nine loads on Westmere (3 configurations of 4 threads).
#[test]
#[ignore = "minutes of simulation; run with --ignored"]
fn atom_on_westmere() {
    let (table, out) = atom_table(WESTMERE, &nine_loads(), 150.0);
    assert!(out.iter().all(|o| o.0 >= 0.85 && o.0 > o.1), "{table}");
}

/// Not a check: where the batch app's threads run on Westmere with stitcher,
/// the loads of Figure 24 whose results depend on it (docs/policies/tang-atom.md,
/// Results). For each latency app: the latency app's run time pinned to 0-3
/// (the best static mapping) and under AToM, and the CPUs of stitcher's four
/// threads every 3 s while the latency app runs. A thread's pages are first
/// touched where it first runs and never move, and the balancer's memory
/// affinity keeps it near them (docs/simulator.md, *The engine*), so a
/// stitcher thread created on socket 0 (CPUs 0-5) shares the latency app's L3
/// and memory for the whole run.
/// `cargo test -p coloc-sim --test tang_sim batch_homes -- --ignored --nocapture`.
#[test]
#[ignore = "prints placements; run with --ignored --nocapture"]
fn batch_homes_on_westmere_with_stitcher() {
    const BATCH: AppId = AppId { app: 1, rep: 0 };
    for l in ["bigtable", "content-analyzer", "websearch"] {
        let ms = models(l, Some("stitcher"), 150.0).unwrap();
        let pinned = workload(
            l,
            Some("stitcher"),
            Some(("0-3", &complement("0-3", 12).unwrap())),
        )
        .unwrap();
        let mut atom = Atom::with_params(Params {
            min_slot: Duration::from_secs(1),
            ..Params::default()
        });
        let runs: [(&str, Vec<TraceEvent>); 2] = [
            ("static 0-3", trace("westmere", &ms, &pinned, &mut Static)),
            (
                "atom",
                trace(
                    "westmere",
                    &ms,
                    &workload(l, Some("stitcher"), None).unwrap(),
                    &mut atom,
                ),
            ),
        ];
        for (name, events) in &runs {
            let mut line = String::new();
            let mut next = 3.0;
            let mut end = 0.0;
            for e in events {
                match e {
                    TraceEvent::Obs(o) if o.at.as_secs_f64() >= next => {
                        if let (Some(_), Some(b)) = (o.app(FIRST), o.app(BATCH)) {
                            let cpus: Vec<String> = b
                                .threads
                                .iter()
                                .map(|t| t.cpu.map_or("-".into(), |c| c.to_string()))
                                .collect();
                            line.push_str(&format!("  {next:.0}s [{}]", cpus.join(",")));
                        }
                        next += 3.0;
                    }
                    TraceEvent::Exit { t, app, .. } if *app == FIRST => end = t.as_secs_f64(),
                    _ => {}
                }
            }
            println!("{l} with stitcher, {name}: {end:.2} s; stitcher's CPUs{line}");
        }
    }
}

/// Not a check: prints AToM's run on the two Westmere loads whose
/// configurations differ least (each latency app next to protobuf, where a
/// scored initialization once made AToM lose to the average mapping) and on
/// the CI-sized test's other load (webSearch with stitcher): the static
/// mappings' run times, then every plan note that changes (phase,
/// candidate, signal) with the latency app's metric samples (time: value)
/// since the previous one, so a slot's scores can be read off.
/// `cargo test -p coloc-sim --test tang_sim atom_timeline -- --ignored --nocapture`.
#[test]
#[ignore = "prints a timeline; run with --ignored --nocapture"]
fn atom_timeline() {
    for (l, b) in [
        ("bigtable", "protobuf"),
        ("content-analyzer", "protobuf"),
        ("websearch", "stitcher"),
    ] {
        let ms = models(l, Some(b), 50.0).unwrap();
        for c in WESTMERE.maps {
            let w = workload(l, Some(b), Some((c, &complement(c, 12).unwrap()))).unwrap();
            let t = latency_time("westmere", &ms, &w, &mut Static).unwrap();
            println!("{l} with {b}, static {c}: {t:.3} s");
        }
        let mut atom = Atom::with_params(Params {
            min_slot: Duration::from_secs(1),
            ..Params::default()
        });
        let events = trace(
            "westmere",
            &ms,
            &workload(l, Some(b), None).unwrap(),
            &mut atom,
        );
        let mut shown = None;
        let mut samples = String::new();
        for e in &events {
            match e {
                TraceEvent::Obs(o) => {
                    if let Some(m) = o.app(FIRST).and_then(|s| s.metric) {
                        samples.push_str(&format!(" {:.1}:{:.2}", o.at.as_secs_f64(), m.value));
                    }
                }
                // The score changes every window: compare the competitions'
                // phases and candidates without it.
                TraceEvent::Plan { t, plan, .. } => {
                    let key: Vec<_> = plan
                        .apps
                        .iter()
                        .flat_map(|a| &a.reasons)
                        .filter_map(|r| match r {
                            Reason::Competition(c) => Some((
                                std::mem::discriminant(&c.phase),
                                c.cpus.clone(),
                                match c.phase {
                                    CompetitionPhase::Learning { slot, .. } => slot,
                                    _ => 0,
                                },
                            )),
                            _ => None,
                        })
                        .collect();
                    if Some(&key) != shown.as_ref() {
                        if !samples.is_empty() {
                            println!("   samples{samples}");
                        }
                        println!("{:7.2} s {}", t.as_secs_f64(), explain::plan_line(plan));
                        shown = Some(key);
                        samples.clear();
                    }
                }
                TraceEvent::Exit { t, app, .. } if *app == FIRST => {
                    println!("   samples{samples}");
                    println!("{:7.2} s {l} exits", t.as_secs_f64());
                    samples.clear();
                }
                _ => {}
            }
        }
    }
}
