//! `coloc bench`: performance figures as commands that print numbers, never as
//! timed tests (so CI cannot flake on a noisy machine).
//!
//! - `overhead`: coloc's own CPU use while managing a workload (and, under
//!   `tranquilizer`, what its page walks did), and how long after
//!   an app starts (or creates threads) its plan is in force. Targets: under 1%
//!   of a core at the default epoch, placement within one epoch; a figure that
//!   misses its target is flagged ABOVE TARGET.
//! - `decide`: how long each policy takes to decide, on fixture topologies.
//! - `sim`: the simulator's speed: events per second of an 8-app
//!   dynamic workload on the 64-core platform, oracle configurations per second.
//!
//! What `decide`, `sim` and `nupoco` time is the harness's
//! ([`coloc_harness::timing`]), as data; here it is rendered.
//! - `mixes`: the real-program suite under several policies against the
//!   reference points of each mix.
//! - `nupoco`: the cost of NuPoCo's Algorithm 1 and of a steady decision at 64
//!   cores / 8 nodes (NuPoCo §7.5 reports 1.8 ms).
//! - `paper NAME`: a paper's headline experiment in the simulator beside the
//!   paper's figures: NuPoCo's Table 2 (§7.4), ReSense §3.6, Thread
//!   Tranquilizer's Tables I and V and Figure 9, Tang et al.'s Table 4 and
//!   Figures 23–24.

mod nupoco;
mod paper;
mod sim;

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use coloc_harness::output::default_out_dir;
use coloc_harness::overhead::{
    page_walks, run_once, scaling_point, sleep_in_threads, PageWalks, ScalingPoint,
};
use coloc_harness::timing::decide::{decide_times, DecideBench};
use coloc_harness::timing::nupoco::nupoco_cost;
use coloc_harness::timing::sim::{sim_speed_for, Baseline, SimStep, DEFAULT_MEASURE};
use coloc_harness::Target;
use coloc_manager::{RunSummary, DEFAULT_EPOCH};
use coloc_model::metrics::RunMetrics;
use coloc_model::workload::parse_workload;
use coloc_model::{Trace, TraceEvent, Workload};

use crate::host::stop_flag;
use crate::progress::Bars;

/// The default workload of `bench overhead`.
const BENCH_WORKLOAD: &str = include_str!("bench-overhead.toml");

#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    what: Bench,
}

#[derive(Debug, Subcommand)]
enum Bench {
    /// coloc's CPU use and placement delays while it manages a real workload.
    Overhead {
        /// Workload to manage [default: a built-in one of about 10 s: two compute
        /// kernels and a barrier kernel arriving at 3 s].
        workload: Option<PathBuf>,
        /// Policy to run under.
        #[arg(long, default_value = "equal")]
        policy: String,
        /// Policy epoch.
        #[arg(long, value_parser = crate::parse_epoch, default_value = "100ms")]
        epoch: Duration,
        /// Instead of the workload: the scaling curve, coloc's CPU use while it
        /// manages one app of N sleeping threads, for each N given (e.g.
        /// `--threads 10,100,1000,2000`).
        #[arg(long, value_delimiter = ',', conflicts_with = "workload")]
        threads: Vec<u32>,
        /// How long each point of the scaling curve runs.
        #[arg(long, value_parser = humantime::parse_duration, default_value = "5s")]
        duration: Duration,
        /// Track threads by rescanning every app every poll even where the
        /// kernel's process connector is available: the reference the
        /// connector's savings are measured against.
        #[arg(long)]
        polling: bool,
    },
    /// The app of the scaling curve: N threads that sleep for a while, then exit.
    #[command(hide = true)]
    Sleepers {
        #[arg(long)]
        threads: u32,
        #[arg(long, value_parser = humantime::parse_duration)]
        duration: Duration,
    },
    /// Decision latency of every policy with N apps on each fixture topology.
    Decide {
        /// Apps in the view.
        #[arg(long, default_value_t = 8)]
        apps: u32,
        /// Threads per app.
        #[arg(long, default_value_t = 8)]
        threads: u32,
        /// Decisions to time per policy and topology.
        #[arg(long, default_value_t = 2000)]
        iterations: u32,
    },
    /// Simulator speed: events/s of an 8-app dynamic workload on nupoco-amd64
    /// (64 cores) under each policy, and oracle configurations/s (4 apps x 8
    /// threads on opteron48).
    Sim {
        /// Policies to run the engine under, comma-separated.
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "native,equal,resense,nupoco"
        )]
        policies: Vec<String>,
        /// Figures to print beside this run's (a TOML file like the stored
        /// `crates/cli/src/cmd/bench/sim-baseline.toml`) [default: the
        /// stored commit's].
        #[arg(long)]
        baseline: Option<PathBuf>,
        /// Wall time each figure's runs are repeated for, at least (each is
        /// a median over them: one run of 30-165 ms varies by a third).
        #[arg(long, default_value_t = DEFAULT_MEASURE.as_secs_f64())]
        seconds: f64,
    },
    /// The real-program mixes (bench/mixes, after `scripts/setup --bench`)
    /// under several policies, interleaved: makespan over its lower bound, ART
    /// over the SJF reference, NTT and p-values against native, auto's worst
    /// case.
    Mixes(crate::cmd::mixes::MixesArgs),
    /// A paper's headline experiment reproduced in the simulator, our figure
    /// beside the paper's and the command that made it: `nupoco` (§7.4, Table
    /// 2), `resense` (§3.6, against the oracle), `tranquilizer` (Tables I and
    /// V, Figure 9) or `tang` (Table 4, Figures 23–24).
    Paper(paper::PaperArgs),
    /// Cost of NuPoCo's Algorithm 1 (DoP computation) with 2, 4 and 8 apps and of a
    /// steady nupoco decision, at 64 cores / 8 nodes.
    Nupoco {
        /// Calls timed per figure.
        #[arg(long, default_value_t = 200)]
        runs: u32,
    },
}

pub fn main(args: BenchArgs) -> Result<()> {
    match args.what {
        Bench::Overhead {
            threads,
            duration,
            policy,
            epoch,
            polling,
            ..
        } if !threads.is_empty() => scaling(&threads, duration, &policy, epoch, polling),
        Bench::Overhead {
            workload,
            policy,
            epoch,
            ..
        } => overhead(workload, &policy, epoch),
        Bench::Sleepers { threads, duration } => {
            sleep_in_threads(threads, duration);
            Ok(())
        }
        Bench::Decide {
            apps,
            threads,
            iterations,
        } => decide(apps, threads, iterations),
        Bench::Sim {
            policies,
            baseline,
            seconds,
        } => {
            let measure = Duration::try_from_secs_f64(seconds)
                .map_err(|_| anyhow::anyhow!("--seconds {seconds}: not a length of time"))?;
            let names: Vec<&str> = policies.iter().map(String::as_str).collect();
            let baseline = match baseline {
                Some(path) => {
                    let text = std::fs::read_to_string(&path)
                        .with_context(|| format!("reading {}", path.display()))?;
                    Baseline::parse(&path.display().to_string(), &text)?
                }
                None => sim::stored_baseline(),
            };
            debug_build_note();
            let started = Instant::now();
            let progress = |step: SimStep<'_>| {
                eprintln!(
                    "bench sim: {} ({:.0} s so far)",
                    sim::step(step),
                    started.elapsed().as_secs_f64()
                )
            };
            let speed = sim_speed_for(&names, measure, &progress)?;
            print!("{}", sim::render(&speed, &baseline));
            Ok(())
        }
        Bench::Mixes(args) => crate::cmd::mixes::main(args),
        Bench::Paper(args) => paper::main(args),
        Bench::Nupoco { runs } => {
            debug_build_note();
            print!("{}", nupoco::render(&nupoco_cost(runs)?));
            Ok(())
        }
    }
}

/// Speed figures of a debug build say little about coloc's.
fn debug_build_note() {
    if cfg!(debug_assertions) {
        eprintln!("note: a debug build; build with --release for representative figures");
    }
}

/// One run of a benchmark's workload under `policy` into its own output
/// directory, with a progress bar labelled `label`
/// ([`coloc_harness::overhead::run_once`]).
fn bench_run(
    target: &Target,
    workload: &Workload,
    policy: &str,
    epoch: Duration,
    stop: Arc<AtomicBool>,
    label: &str,
) -> Result<(RunSummary, Vec<TraceEvent>)> {
    let out = default_out_dir(&workload.name, &format!("bench-{policy}"));
    Ok(run_once(
        target, workload, policy, epoch, &out, stop, &Bars, label,
    )?)
}

fn overhead(path: Option<PathBuf>, policy: &str, epoch: Duration) -> Result<()> {
    let target = Target::Host(crate::host::start()?);
    let workload = match &path {
        Some(p) => target.load(p)?,
        None => target.resolve(parse_workload("<built-in bench-overhead>", BENCH_WORKLOAD)?)?,
    };
    let (summary, events) = bench_run(&target, &workload, policy, epoch, stop_flag()?, policy)?;
    let walks = render_walks(&page_walks(&events));
    let m = RunMetrics::from_trace(&Trace::from_events(events)?, None);
    println!(
        "coloc bench overhead: workload {}, policy {policy}, epoch {} ms",
        workload.name,
        epoch.as_millis()
    );
    let cpu = summary.usage.percent_of_core();
    println!(
        "  coloc CPU use: {cpu:.3}% of one core ({:.3} s CPU over {:.2} s)   target < {CPU_TARGET_PERCENT}%{}",
        summary.usage.cpu.as_secs_f64(),
        summary.usage.wall.as_secs_f64(),
        over(cpu > CPU_TARGET_PERCENT)
    );
    if let Some(w) = walks {
        println!("  {w}");
    }
    let late = |d: Option<Duration>| over(d.is_some_and(|d| d > epoch));
    for a in &m.apps {
        println!(
            "  {:<16} start -> first applied plan: {}{}   thread change -> placed: max {}{}",
            a.name,
            fmt_ms(a.first_plan_delay),
            late(a.first_plan_delay),
            fmt_ms(a.max_thread_placement_delay),
            late(a.max_thread_placement_delay),
        );
    }
    println!(
        "  (target: within one epoch = {} ms; a new thread is found by the next /proc \
         rescan, up to {} ms after its creation, before the figure above starts)",
        epoch.as_millis(),
        coloc_linux::machine::LinuxOptions::default()
            .poll
            .as_millis()
    );
    if epoch != DEFAULT_EPOCH {
        println!(
            "  note: the 1% target is stated for the default epoch of {} ms",
            DEFAULT_EPOCH.as_millis()
        );
    }
    Ok(())
}

/// What the page walks that interleave a running app's memory did over the
/// run, in a line (`tranquilizer`, docs/policies/tranquilizer.md, Agent CPU
/// use); None when no apply walked pages.
fn render_walks(walks: &[PageWalks]) -> Option<String> {
    (!walks.is_empty()).then(|| {
        let parts: Vec<String> = walks
            .iter()
            .map(|w| {
                format!(
                    "{}: {} applies, {} pages examined, {} moved",
                    w.action, w.applies, w.examined, w.moved
                )
            })
            .collect();
        format!("page walks: {}", parts.join("; "))
    })
}

/// The thread-count scaling curve of coloc's own cost: for each N, one app of
/// N sleeping threads (`coloc bench sleepers`) managed for `each`, and coloc's
/// CPU use over that run ([`coloc_harness::overhead::scaling_point`]).
fn scaling(
    threads: &[u32],
    each: Duration,
    policy: &str,
    epoch: Duration,
    polling: bool,
) -> Result<()> {
    debug_build_note();
    let mut host = crate::host::start()?;
    host.process_events = !polling;
    let target = Target::Host(host);
    let exe = std::env::current_exe()?;
    println!(
        "coloc bench overhead: scaling with threads, policy {policy}, epoch {} ms, {:.1} s per point, threads tracked by {}",
        epoch.as_millis(),
        each.as_secs_f64(),
        if polling { "polling every app every 50 ms (--polling)" } else { "the process connector where available (see the log)" }
    );
    println!(
        "{:>8} {:>14} {:>16} {:>17}",
        "threads", "% of a core", "CPU ms / epoch", "epochs observed"
    );
    let stop = stop_flag()?;
    for &n in threads {
        let ScalingPoint { summary, due, .. } =
            scaling_point(&target, &exe, n, each, policy, epoch, stop.clone(), &Bars)?;
        let u = summary.usage;
        let observed = summary.observations;
        println!(
            "{n:>8} {:>14.2} {:>16.3} {:>17}",
            u.percent_of_core(),
            u.cpu.as_secs_f64() * 1e3 / observed.max(1) as f64,
            format!("{observed}/{due}")
        );
    }
    Ok(())
}

/// coloc's own CPU use it should stay under, percent of one core, at the
/// default epoch.
const CPU_TARGET_PERCENT: f64 = 1.0;

/// The flag after a figure that misses its target.
fn over(missed: bool) -> &'static str {
    if missed {
        "   ABOVE TARGET"
    } else {
        ""
    }
}

fn fmt_ms(d: Option<Duration>) -> String {
    d.map_or_else(
        || "n/a".into(),
        |d| format!("{:.2} ms", d.as_secs_f64() * 1e3),
    )
}

fn decide(apps: u32, threads: u32, iterations: u32) -> Result<()> {
    println!("coloc bench decide: {apps} apps x {threads} threads, {iterations} decisions each");
    println!("{:<12} {:<18} {:>12}", "policy", "topology", "us/decision");
    let bench = DecideBench {
        apps,
        threads,
        iterations,
    };
    decide_times(bench, &mut |t| {
        println!(
            "{:<12} {:<18} {:>12.2}",
            t.policy,
            t.topology,
            t.per_decision.as_secs_f64() * 1e6
        )
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each action's walks in a clause, in the order given; no walk, no
    /// line (the sums are `coloc_harness::overhead::page_walks`').
    #[test]
    fn page_walks_are_rendered_per_action() {
        let walks = |action: &str, applies, examined, moved| PageWalks {
            action: action.into(),
            applies,
            examined,
            moved,
        };
        assert_eq!(
            render_walks(&[walks("interleave", 2, 7, 1), walks("restore", 1, 1, 1)]).unwrap(),
            "page walks: interleave: 2 applies, 7 pages examined, 1 moved; \
             restore: 1 applies, 1 pages examined, 1 moved"
        );
        assert_eq!(render_walks(&[]), None);
    }
}
