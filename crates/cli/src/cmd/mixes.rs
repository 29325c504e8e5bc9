//! `coloc bench mixes`: the real-program mixes of `bench/mixes/`, or mixes
//! of the real-program suite generated from seeds (`--suite bench/suite
//! --seeds 101..130`, `bench/suite/README.md`), under several policies,
//! interleaved, each judged against the reference points of its mix
//! (`coloc_model::metrics::reference`): makespan over the CPU-work lower bound,
//! ART over the SJF reference, NTT and p-values against native, and how far
//! `auto` is from the best other policy on each mix; then all mixes, worst
//! first, with each policy's geometric mean and the best policy per mix in
//! hindsight (`coloc_model::metrics::mixes`).
//!
//! Solo times at every thread count from 1 to the machine's CPUs are measured
//! first (or reused with `--reuse-solo`: the solo times the knowledge store
//! holds of the mix's programs, docs/knowledge.md), once per program for the
//! suite. With `--fresh` nothing is stored
//! beforehand: no solo runs first, each run a `coloc run` in an empty data
//! directory (`crate::cmd::fresh`), and the solo runs after all mixes.
//! Times on a machine shared with other work are noisy: the table is a
//! measurement of that machine at that time. The mixes and their runs are
//! the harness's ([`coloc_harness::mixes`], the suite's mixes
//! [`coloc_harness::suite`]'s); here the arguments are parsed and the
//! tables printed.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use coloc_harness::compare::{Contender, Fresh};
use coloc_harness::mixes::{select, MixRun, MixSource, MixTraces, Mixes, MixesPlan};
use coloc_harness::output::default_out_dir;
use coloc_harness::Target;
use coloc_model::metrics::mixes::{across_mixes, best_other};
use coloc_model::workload::suite::SeedRange;

use crate::choice::{check_policies, Choice};
use crate::cmd::fresh::Child;
use crate::host::stop_flag;
use crate::progress::{Bars, COMPARISON_RUNS};

#[derive(Debug, Args)]
pub struct MixesArgs {
    /// Directory of mix workload files (`*.toml`), run from the repository root.
    #[arg(default_value = "bench/mixes")]
    pub dir: PathBuf,
    /// Generated mixes of the real-program suite in DIR instead of the
    /// directory's files (`bench/suite`, after `scripts/setup --bench`): one
    /// mix per seed of --seeds, as `coloc gen --suite DIR --seed N` writes it.
    #[arg(long, value_name = "DIR", requires = "seeds")]
    pub suite: Option<PathBuf>,
    /// The suite's seeds: `A..B` (both included) or `A`, comma-separated.
    /// Each mix says whether its seed is a tuning or a held-out one
    /// (the suite's `suite.toml`).
    #[arg(long, value_delimiter = ',', requires = "suite")]
    pub seeds: Vec<SeedRange>,
    /// Nothing stored beforehand, as a new user: no solo runs first, and
    /// each run a `coloc run` of its own in a new, empty data directory, so
    /// no policy reads solo times, co-run rates or profiles of `coloc solo`,
    /// earlier runs or earlier repeats. The solo runs for the reference
    /// points (the CPU-work bound) follow all mixes.
    #[arg(long, conflicts_with = "reuse_solo")]
    pub fresh: bool,
    /// Policies, comma-separated; NTT and p-values are relative to `native`.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "native,batch,equal,nupoco,auto"
    )]
    pub policies: Vec<String>,
    /// Runs per policy and mix.
    #[arg(long, default_value_t = 5)]
    pub repeat: u32,
    /// Solo runs per app and thread count.
    #[arg(long, default_value_t = 1)]
    pub solo_repeat: u32,
    /// Reuse the solo times the knowledge store holds of the mix's programs
    /// where there are some.
    #[arg(long)]
    pub reuse_solo: bool,
    /// Directory for every run's trace [default: coloc-runs/mixes/bench-TIME].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// What `auto` optimizes: makespan (the default), art or latency
    /// (`coloc run --objective`); the other policies ignore it.
    #[arg(long, default_value = "makespan")]
    pub objective: coloc_policy::auto::Objective,
}

/// What a mix's traces say beyond times, as lines: the waste events per
/// policy, and where `auto` or a guarded policy knew it was no better than
/// doing nothing.
fn render_traces(t: &MixTraces) -> String {
    let idle: Vec<String> = t
        .waste
        .iter()
        .map(|(policy, w)| {
            format!(
                "{policy} {}/{}/{}/{}",
                w.idle_while_waiting, w.underused, w.no_progress, w.spinning
            )
        })
        .collect();
    let mut out = format!(
        "waste events over all runs (idle_while_waiting/underused/no_progress/spinning): {}\n",
        idle.join(", ")
    );
    if !t.verdicts.is_empty() {
        out.push_str("against Linux, per app set (last estimate):\n");
        for (policy, run, verdict) in &t.verdicts {
            let _ = writeln!(out, "  {policy} run {run}: {verdict}");
        }
    }
    out
}

/// One mix's tables, as soon as it ran.
fn print_mix(run: MixRun<'_>) {
    let (mix, cmp) = (run.mix, run.comparison);
    let note = if mix.note.is_empty() {
        String::new()
    } else {
        format!(", {}", mix.note)
    };
    println!("## {} ({}{note})\n", mix.workload.name, mix.path.display());
    if let Some(c) = run.curves {
        print!("{}", c.render());
        println!();
    }
    print!("{}", cmp.render());
    println!();
    if let Some(r) = run.reference {
        print!("{}", r.table(cmp).1);
    }
    print!("{}", render_traces(run.traces));
    if let Some((best, m)) = best_other(&cmp.policies, "auto") {
        let own = cmp.policies.iter().find(|p| p.policy == "auto");
        if let Some(a) = own.and_then(|p| p.makespan?.gmean) {
            println!("auto / best other ({best}): {:.3}", a / m);
        }
    }
    println!();
}

pub fn main(args: MixesArgs) -> Result<()> {
    check_policies(&args.policies, "native", args.repeat)?;
    let choices = args
        .policies
        .iter()
        .map(|p| Choice::named(p))
        .collect::<Result<Vec<_>>>()?;
    let contenders: Vec<&dyn Contender> = choices.iter().map(|c| c as &dyn Contender).collect();
    let target = Target::Host(crate::host::start()?);
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| default_out_dir("mixes", "bench"));
    let source = match &args.suite {
        Some(dir) => MixSource::Suite {
            dir,
            seeds: &args.seeds,
        },
        None => MixSource::Files(&args.dir),
    };
    let mixes = select(source, &target, &out)?;
    let on = Mixes {
        target: &target,
        stop: &stop_flag()?,
        runs: &COMPARISON_RUNS,
        solo: &Bars,
        learn: true,
    };
    let plan = MixesPlan {
        policies: &args.policies,
        repeat: args.repeat,
        solo_repeat: args.solo_repeat,
        reuse_solo: args.reuse_solo,
        suite: args.suite.is_some(),
        objective: args.objective,
        out: &out,
        fresh: args.fresh.then_some(&Child as &dyn Fresh),
    };
    let outcomes = on.run(&mixes, &plan, &contenders, &mut print_mix)?;
    println!("## All {} mixes\n", outcomes.len());
    print!("{}", across_mixes(&outcomes, "auto").render());
    println!("traces: {}", out.display());
    Ok(())
}
