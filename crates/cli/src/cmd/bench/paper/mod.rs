//! `coloc bench paper NAME`: a paper's headline experiment reproduced in the
//! simulator, our figure beside the paper's, and the command that made it
//! (docs/simulator.md, Reproducing the papers).
//!
//! - `nupoco`: Table 2's ten scenarios under §7.3's six modes on both
//!   machines, NTT and Hmean speedup (§7.4);
//! - `resense`: §3.6, ten static mixes per platform, resense against the
//!   oracle (Figures 10–11);
//! - `tranquilizer`: Tables I and V (each program alone, native against
//!   tranquilizer over seeds: CV and mean) and Figure 9's co-run;
//! - `tang`: Table 4 (Algorithm 1 against the best of three mappings) and
//!   Figures 23–24 (AToM against every static mapping).
//!
//! The experiments themselves live in `coloc_sim::papers` (nupoco's in
//! `coloc_harness::nupoco_table`, as `coloc compare --sim` runs it), where the regression tests
//! run them at a reduced scale; which of them run, at what scale and with
//! how many seeds is [`coloc_harness::papers`]'s; this module renders the
//! tables.

mod nupoco;
mod resense;
mod tang;
mod tranquilizer;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{ensure, Result};
use clap::Args;
use coloc_harness::nupoco_table::{nupoco_table, paper_platforms, scenarios, Watched};
use coloc_harness::output::default_out_dir;
use coloc_harness::papers::{self, Request};

use crate::host::stop_flag;
use crate::progress::{Bars, COMPARISON_RUNS};

/// The papers `coloc bench paper` reproduces.
pub const PAPERS: [&str; 4] = ["nupoco", "resense", "tranquilizer", "tang"];

#[derive(Debug, Args)]
pub struct PaperArgs {
    /// The paper: `nupoco` (§7.4, Table 2), `resense` (§3.6, against the
    /// oracle), `tranquilizer` (Tables I and V, Figure 9) or `tang` (Table 4,
    /// Figures 23–24).
    #[arg(value_parser = PAPERS)]
    pub paper: String,
    /// Platforms, comma-separated [default: the paper's: nupoco-amd64 and
    /// nupoco-intel72 for nupoco; yorkfield, harpertown, xeon32 and opteron48
    /// for resense].
    #[arg(long, value_delimiter = ',')]
    pub platforms: Vec<String>,
    /// nupoco: only the scenarios whose names contain one of these (e.g.
    /// `s02,s10`).
    #[arg(long, value_delimiter = ',')]
    pub scenarios: Vec<String>,
    /// nupoco: seeds per mode and scenario (the paper averages three runs).
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Seeds: tranquilizer's runs per program and policy [default: 10, as the
    /// paper's ten runs]; resense's runs of native per mix [default: 3].
    #[arg(long)]
    pub seeds: Option<u64>,
    /// resense: static mixes per platform (the paper: 10).
    #[arg(long, default_value_t = 10)]
    pub mixes: u64,
    /// resense: dynamic workloads per cell of Table VI (0: leave Table VI
    /// out).
    #[arg(long, default_value_t = 3)]
    pub workloads: u64,
    /// resense: the oracle searches every sharing configuration when there
    /// are at most this many, else a bounded sample of this many.
    #[arg(long, default_value_t = 400)]
    pub max_configs: usize,
    /// Every model's work times this (tranquilizer, resense; tang: the
    /// latency app's work): shorter runs of the same structure.
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// tranquilizer: only the programs whose names contain one of these.
    #[arg(long, value_delimiter = ',')]
    pub programs: Vec<String>,
    /// nupoco: directory for the traces [default:
    /// coloc-runs/nupoco-table2/bench-paper-TIME].
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn main(args: PaperArgs) -> Result<()> {
    ensure!(
        args.scale.is_finite() && args.scale > 0.0,
        "--scale must be a positive number, not {}",
        args.scale
    );
    if cfg!(debug_assertions) {
        eprintln!("note: a debug build; `coloc bench paper` takes minutes in a release build (cargo build --release -p coloc)");
    }
    let started = Instant::now();
    let progress = move |what: &str| {
        eprintln!(
            "bench paper: {what} ({:.0} s so far)",
            started.elapsed().as_secs_f64()
        )
    };
    println!("command: {}", command_line());
    let req = Request {
        platforms: &args.platforms,
        programs: &args.programs,
        seeds: args.seeds,
        mixes: args.mixes,
        workloads: args.workloads,
        max_configs: args.max_configs,
        scale: args.scale,
        threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    match args.paper.as_str() {
        "nupoco" => run_nupoco(&args, &progress)?,
        "resense" => print!("{}", resense::Resense(&papers::resense(&req, &progress)?)),
        "tranquilizer" => print!(
            "{}",
            tranquilizer::Tranquilizer(&papers::tranquilizer(&req, &progress)?)
        ),
        "tang" => print!("{}", tang::Tang(&papers::tang(&req, &progress)?)),
        other => unreachable!("clap accepts only {PAPERS:?}, got {other}"),
    }
    println!(
        "wall time: {:.0} s (simulated times do not depend on it)",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The command line as run, for the reader to run it again.
fn command_line() -> String {
    let mut words: Vec<String> = std::env::args().collect();
    if let Some(first) = words.first_mut() {
        *first = "coloc".into();
    }
    words.join(" ")
}

fn run_nupoco(args: &PaperArgs, progress: &dyn Fn(&str)) -> Result<()> {
    ensure!(args.repeat >= 1, "--repeat must be at least 1");
    let workloads = scenarios(&args.scenarios)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| default_out_dir("nupoco-table2", "bench-paper"));
    let on = Watched {
        stop: &stop_flag()?,
        runs: &COMPARISON_RUNS,
        solo: &Bars,
        learn: true,
    };
    for figures in paper_platforms(&args.platforms)? {
        let table = nupoco_table(
            figures,
            &workloads,
            args.repeat,
            &out.join(figures.platform),
            on,
            progress,
        )?;
        println!("{}", nupoco::Table(&table));
    }
    println!("traces: {}", out.display());
    Ok(())
}

/// A fraction as a signed percentage.
fn pct(x: f64) -> String {
    format!("{:+.1}%", x * 100.0)
}
