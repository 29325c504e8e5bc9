//! Tang et al. (ISCA 2011) in the simulator: the heuristic's mapping for the six
//! pairs of Table 4 against the best of the paper's three mappings, and AToM on
//! the nine loads of Figures 23–24 against the best, average and worst static
//! mapping (docs/policies/tang-atom.md, Results). Every figure comes from
//! whole runs through the unchanged Manager on SimMachine, so it is
//! deterministic; `--nocapture` prints the tables.

use std::time::Duration;

use coloc_manager::{run, RunOptions};
use coloc_model::explain;
use coloc_model::reason::{CompetitionPhase, Reason};
use coloc_model::workload::parse_workload;
use coloc_model::{AppId, TraceEvent};
use coloc_policy::atom::{Atom, Params};
use coloc_policy::baseline::Static;
use coloc_policy::{by_name_with, Policy, PolicyContext};
use coloc_sim::characterize::{characterize, CharacterizeOptions};
use coloc_sim::model::{model, AppModel};
use coloc_sim::{platform, SimMachine};

const LATENCY: [&str; 3] = ["bigtable", "content-analyzer", "websearch"];
const BATCH: [&str; 2] = ["stitcher", "protobuf"];

/// The latency app with `ginstr` of work, the batch app with three times as
/// much so that it runs for the whole measurement (stitcher, the slowest, is
/// still running when any latency app ends).
fn models(latency: &str, batch: Option<&str>, ginstr: f64) -> Vec<AppModel> {
    let scale = |name: &str, g: f64| {
        let m = model(name).unwrap();
        let f = g / m.total_ginstr();
        m.scaled(f)
    };
    let mut out = vec![scale(latency, ginstr)];
    if let Some(b) = batch {
        out.push(scale(b, ginstr * 3.0));
    }
    out
}

/// The workload: the latency app (4 threads, its throughput as metric) and
/// optionally the batch app (4 threads); `cpus` pins the latency app for the
/// `static` policy, the batch app on every other CPU.
fn workload(latency: &str, batch: Option<&str>, cpus: Option<(&str, &str)>) -> String {
    let pin = |c: Option<&str>| c.map(|c| format!("cpus = \"{c}\"\n")).unwrap_or_default();
    let mut w = format!(
        "name = \"tang\"\nepoch = \"200ms\"\n\n[[app]]\nname = \"{latency}\"\nmodel = \"{latency}\"\n\
         threads = 4\nclass = \"latency\"\n{}\n[app.metric]\nregex = 'coloc-metric: ([0-9.eE+-]+)'\n",
        pin(cpus.map(|c| c.0))
    );
    if let Some(b) = batch {
        w.push_str(&format!(
            "\n[[app]]\nname = \"{b}\"\nmodel = \"{b}\"\nthreads = 4\n{}",
            pin(cpus.map(|c| c.1))
        ));
    }
    w
}

/// The trace of a whole run of `text` under `policy`.
fn trace(
    platform_name: &str,
    models: &[AppModel],
    text: &str,
    p: &mut dyn Policy,
) -> Vec<TraceEvent> {
    let w = parse_workload("tang.toml", text).unwrap();
    let mut m = SimMachine::new(platform(platform_name).unwrap(), 1).with_models(models.to_vec());
    let mut trace: Vec<TraceEvent> = Vec::new();
    run(
        &mut m,
        p,
        &w,
        &RunOptions::simulated(w.epoch.unwrap(), 1),
        &mut trace,
    )
    .unwrap();
    trace
}

/// The latency app (the workload's first).
const FIRST: AppId = AppId { app: 0, rep: 0 };

/// The latency app's run time (s) under `policy`.
fn latency_time(platform_name: &str, models: &[AppModel], text: &str, p: &mut dyn Policy) -> f64 {
    let (mut start, mut end) = (Duration::ZERO, Duration::ZERO);
    for e in trace(platform_name, models, text, p) {
        match e {
            TraceEvent::Start { t, app, .. } if app == FIRST => start = t,
            TraceEvent::Exit { t, app, .. } if app == FIRST => end = t,
            _ => {}
        }
    }
    (end - start).as_secs_f64()
}

/// The complement of a Clovertown or Westmere CPU list, for the batch app.
fn complement(cpus: &str, n: u32) -> String {
    let set = coloc_model::CpuSet::parse_list(cpus).unwrap();
    let all: coloc_model::CpuSet = (0..n).collect();
    all.difference(&set).to_list()
}

/// Table 4: Algorithm 1 from simulated characteristics against the best of
/// {XXXX****}, {XX**XX**}, {X*X*X*X*} on Clovertown. The heuristic's choice is
/// the mapping whose run it matches.
#[test]
fn table_4_heuristic_against_the_best_mapping() {
    let p = platform("clovertown").unwrap();
    let maps = [
        ("XXXX****", "0-3"),
        ("XX**XX**", "0-1,4-5"),
        ("X*X*X*X*", "0,2,4,6"),
    ];
    // Table 4's "Predicted" column, pair by pair in the order below.
    let paper = [
        "XXXX****", "XX**XX**", "XXXX****", "X*X*X*X*", "XXXX****", "X*X*X*X*",
    ];
    let mut exact = 0;
    let mut worst_gap: f64 = 0.0;
    let mut predicted = Vec::new();
    let mut table = String::new();
    for l in LATENCY {
        for b in BATCH {
            let ms = models(l, Some(b), 40.0);
            let profiles = ms
                .iter()
                .map(|m| characterize(&p, m, CharacterizeOptions::default()))
                .collect();
            let ctx = PolicyContext {
                profiles,
                ..PolicyContext::default()
            };
            let times: Vec<f64> = maps
                .iter()
                .map(|(_, c)| {
                    let text = workload(l, Some(b), Some((c, &complement(c, 8))));
                    latency_time("clovertown", &ms, &text, &mut Static)
                })
                .collect();
            let mut policy = by_name_with("tang", &ctx).unwrap();
            let tang = latency_time(
                "clovertown",
                &ms,
                &workload(l, Some(b), None),
                policy.as_mut(),
            );
            let best = times.iter().copied().fold(f64::INFINITY, f64::min);
            let best_name = maps[times.iter().position(|&t| t == best).unwrap()].0;
            let chosen = times
                .iter()
                .position(|&t| (t - tang).abs() < 1e-9 * t)
                .map_or("(other)", |i| maps[i].0);
            let gap = (tang - best) / best * 100.0;
            if chosen == best_name {
                exact += 1;
            }
            worst_gap = worst_gap.max(gap);
            predicted.push(chosen);
            table.push_str(&format!(
                "{l:>17} w/ {b:<8} best {best_name} {best:.3}s  tang {chosen} {tang:.3}s  gap {gap:+.2}%\n"
            ));
        }
    }
    println!("{table}exact: {exact} of 6, worst gap {worst_gap:.2}%");
    // The heuristic makes the paper's six predictions.
    assert_eq!(predicted, paper, "{table}");
    // The paper: 4 of 6 exact, the other two within 2%. The simulator's best
    // mapping differs from the paper's for webSearch with protobuf (spread, as
    // predicted) and bigtable with protobuf (packed on one socket, 7.4% ahead
    // of the predicted {XX**XX**}, 1% in the paper): 5 exact, one miss.
    assert!(exact >= 4, "{table}");
    assert!(worst_gap <= 10.0, "{table}");
}

/// One load: the latency app, alone or with a batch app.
type Load<'a> = (&'a str, Option<&'a str>);

/// The nine loads of Figures 23–24: each latency app alone and with each batch
/// app.
fn nine_loads() -> Vec<Load<'static>> {
    LATENCY
        .iter()
        .flat_map(|l| [None, Some(BATCH[0]), Some(BATCH[1])].map(|b| (*l, b)))
        .collect()
}

/// AToM's performance on one load, as fractions of the best static mapping
/// (1 / run time): (atom, average, worst).
type Outcome = (f64, f64, f64);

/// AToM (slots of `min_slot`) on each of `loads` on `plat` (`n` CPUs), the
/// latency app running `ginstr` 10^9 instructions, against every static
/// sharing configuration `maps` of its 4 threads (the batch app on the other
/// CPUs); returns the table and each load's outcome.
fn atom_loads(
    plat: &str,
    n: u32,
    maps: &[&str],
    loads: &[Load<'_>],
    ginstr: f64,
    min_slot: Duration,
) -> (String, Vec<Outcome>) {
    let mut table = String::new();
    let mut out = Vec::new();
    for &(l, b) in loads {
        let ms = models(l, b, ginstr);
        let statics: Vec<f64> = maps
            .iter()
            .map(|c| {
                let text = workload(l, b, Some((c, &complement(c, n))));
                latency_time(plat, &ms, &text, &mut Static)
            })
            .collect();
        let mut atom = Atom::with_params(Params {
            min_slot,
            ..Params::default()
        });
        let atom = latency_time(plat, &ms, &workload(l, b, None), &mut atom);
        let best = statics.iter().copied().fold(f64::INFINITY, f64::min);
        let worst = statics.iter().copied().fold(0.0, f64::max);
        let avg = statics.iter().sum::<f64>() / statics.len() as f64;
        // Performance = 1 / time, normalized to the best static mapping.
        let perf = |t: f64| best / t;
        out.push((perf(atom), perf(avg), perf(worst)));
        table.push_str(&format!(
            "{plat:>10} {l:>17} {:<9} atom {:.3}  average {:.3}  worst {:.3}  (of best)\n",
            b.unwrap_or("alone"),
            perf(atom),
            perf(avg),
            perf(worst)
        ));
    }
    let least = out.iter().map(|o| o.0).fold(1.0, f64::min);
    println!(
        "{table}atom reaches at least {:.1}% of the best static mapping",
        least * 100.0
    );
    (table, out)
}

const WESTMERE_MAPS: [&str; 3] = ["0-3", "0-2,6", "0-1,6-7"];

/// CI-sized AToM (about 15 s of CPU in a debug build): Westmere, a third of
/// the Figure 24 runs' work, on a load where the configurations differ little
/// (bigtable with protobuf, within 24%, where a scored initialization once
/// made AToM pick a slow mapping: 0.805 of the best) and one where they differ
/// most (webSearch with stitcher). AToM must beat the average static mapping
/// and reach 90% of the best: its learning runs the other configurations for
/// 4 of the run's ~8 s.
#[test]
fn atom_beats_the_average_mapping_on_westmere_ci_sized() {
    let (table, out) = atom_loads(
        "westmere",
        12,
        &WESTMERE_MAPS,
        &[
            ("bigtable", Some("protobuf")),
            ("websearch", Some("stitcher")),
        ],
        50.0,
        Duration::from_secs(1),
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
    let (table, out) = atom_loads(
        "clovertown",
        8,
        &["0-3", "0-2,4", "0-1,4-5", "0-1,4,6", "0,2,4,6"],
        &nine_loads(),
        150.0,
        Duration::from_secs(1),
    );
    assert!(out.iter().all(|o| o.0 >= 0.85 && o.0 > o.1), "{table}");
}

/// Figure 24: the nine loads on Westmere (3 configurations of 4 threads).
#[test]
#[ignore = "minutes of simulation; run with --ignored"]
fn atom_on_westmere() {
    let (table, out) = atom_loads(
        "westmere",
        12,
        &WESTMERE_MAPS,
        &nine_loads(),
        150.0,
        Duration::from_secs(1),
    );
    assert!(out.iter().all(|o| o.0 >= 0.85 && o.0 > o.1), "{table}");
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
        let ms = models(l, Some(b), 50.0);
        for c in WESTMERE_MAPS {
            let text = workload(l, Some(b), Some((c, &complement(c, 12))));
            let t = latency_time("westmere", &ms, &text, &mut Static);
            println!("{l} with {b}, static {c}: {t:.3} s");
        }
        let mut atom = Atom::with_params(Params {
            min_slot: Duration::from_secs(1),
            ..Params::default()
        });
        let events = trace("westmere", &ms, &workload(l, Some(b), None), &mut atom);
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
