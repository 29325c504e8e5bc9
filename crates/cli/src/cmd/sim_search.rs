//! `coloc sim search`: the adversarial search of docs/simulator.md
//! (Adversarial search): random mixes on a modeled platform, each run under
//! auto, native and equal, reporting the worst ratios and every mix where
//! auto loses by more than `coloc_sim::search::LIMIT`. The Manager's
//! per-mix waste warnings are counted into the report, not logged.

use std::time::Instant;

use anyhow::{bail, Result};
use clap::Args;
use coloc_harness::resolve_platform;
use coloc_sim::search::{search, MixSpec, Outcome, WasteCount, LIMIT, POLICIES};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

#[derive(Debug, Args)]
pub struct SearchArgs {
    /// Mixes to run: seeds SEED, SEED + 1, ….
    #[arg(long, default_value_t = 1000)]
    pub mixes: u64,
    /// The first mix's seed; a mix is reproduced by its own seed and
    /// `--mixes 1`.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Platform: a built-in name (`coloc sim --list-platforms`), an hwloc XML
    /// file or a TOML platform file.
    #[arg(long)]
    pub platform: String,
    /// Worker threads (default: one per available CPU). The result does not
    /// depend on it.
    #[arg(long)]
    pub threads: Option<usize>,
}

pub fn main(args: SearchArgs) -> Result<()> {
    if args.mixes == 0 {
        bail!("--mixes must be at least 1");
    }
    let platform = resolve_platform(&args.platform)?;
    let cpus = platform.topology.cpus().len() as u32;
    let spec = MixSpec::for_platform(cpus, platform.params.freq_ghz);
    let threads = args
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let bar = ProgressBar::with_draw_target(Some(args.mixes), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("search [{bar:30}] {pos}/{len} mixes  {elapsed}  eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    let started = Instant::now();
    let report = search(&platform, &spec, (args.seed, args.mixes), threads, &|_| {
        bar.inc(1)
    })?;
    bar.finish_and_clear();
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{} mixes on {} (seeds {}..={}), {threads} worker(s), {secs:.1} s",
        report.outcomes.len(),
        platform.name,
        args.seed,
        args.seed + args.mixes - 1
    );
    let line = |what: &str, o: Option<&Outcome>, ratio: fn(&Outcome) -> f64| {
        if let Some(o) = o {
            println!(
                "worst auto/{what}: {:.3} (seed {}: auto {:.2} s, native {:.2} s, equal {:.2} s)",
                ratio(o),
                o.seed,
                o.auto,
                o.native,
                o.equal
            );
        }
    };
    line("native", report.worst_vs_native(), Outcome::vs_native);
    line("equal", report.worst_vs_equal(), Outcome::vs_equal);
    println!("waste the Manager flagged for more than an epoch (episodes, over every mix):");
    for (policy, w) in POLICIES.iter().zip(report.waste()) {
        println!("  {policy}: {} (in {} mix(es))", waste(&w), w.mixes);
    }
    let bad = report.counterexamples();
    println!(
        "{} mix(es) with auto above {LIMIT:.2}x native or equal:",
        bad.len()
    );
    for o in bad {
        println!(
            "  seed {}: auto/native {:.3}, auto/equal {:.3} (auto {:.2} s, native {:.2} s, equal {:.2} s; auto's waste: {})",
            o.seed,
            o.vs_native(),
            o.vs_equal(),
            o.auto,
            o.native,
            o.equal,
            waste(&WasteCount::of(&o.waste[0])),
        );
    }
    Ok(())
}

/// Waste episodes per kind, as the report prints them.
fn waste(w: &WasteCount) -> String {
    format!(
        "idle while waiting {}, underused {}, no progress {}, spinning {}",
        w.idle_while_waiting, w.underused, w.no_progress, w.spinning
    )
}
