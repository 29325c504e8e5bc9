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
//! measurement of that machine at that time.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use coloc_harness::compare::{Fresh, Plan};
use coloc_harness::knowledge::Knowledge;
use coloc_harness::output::default_out_dir;
use coloc_harness::read_trace;
use coloc_harness::saved::{open, Saved};
use coloc_harness::solo::Solo;
use coloc_harness::Target;
use coloc_manager::{waste_of, Waste, DEFAULT_EPOCH};
use coloc_model::explain::last_verdicts;
use coloc_model::metrics::mixes::{across_mixes, best_other, MixOutcome, Reference};
use coloc_model::metrics::{Comparison, SoloCurves};
use coloc_model::workload::suite::SeedRange;
use coloc_model::{AppSpec, TraceEvent, Workload};

use crate::choice::check_policies;
use crate::cmd::compare::run_comparison;
use crate::cmd::fresh::Child;
use crate::host::stop_flag;
use crate::progress::Bars;
use crate::suite::Suite;

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

/// A mix to run: its file, its workload (resolved), what to say about it.
struct Mix {
    path: PathBuf,
    workload: Workload,
    note: String,
}

/// The mix files of `dir`, by name.
fn mix_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    anyhow::ensure!(!files.is_empty(), "no *.toml mix in {}", dir.display());
    Ok(files)
}

/// The mixes `args` name: the directory's files, or the suite's mix of each
/// seed, written to `out/mixes/` (all checked before anything runs).
fn mixes(args: &MixesArgs, target: &Target, out: &Path) -> Result<Vec<Mix>> {
    let Some(dir) = &args.suite else {
        return mix_files(&args.dir)?
            .into_iter()
            .map(|path| {
                let workload = target.load(&path)?;
                Ok(Mix {
                    path,
                    workload,
                    note: String::new(),
                })
            })
            .collect();
    };
    let suite = Suite::load(dir)?;
    suite.check_installed()?;
    let files = out.join("mixes");
    std::fs::create_dir_all(&files).with_context(|| format!("creating {}", files.display()))?;
    let mut mixes = Vec::new();
    for seed in args.seeds.iter().flat_map(SeedRange::seeds) {
        let (w, text) = suite.mix_file(seed)?;
        let path = files.join(format!("{}.toml", w.name));
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        mixes.push(Mix {
            workload: target.load(&path)?,
            path,
            note: format!("seed {seed}, {}", suite.set_of(seed)),
        });
    }
    Ok(mixes)
}

/// Every app of the suite's mixes alone at 1 to `cpus` threads (each program
/// once, however many mixes it is in; names are unique in a suite); stored
/// with `learn`.
fn program_curves(
    target: &Target,
    mixes: &[Mix],
    cpus: u32,
    repeat: u32,
    out: &Path,
    learn: bool,
) -> Result<SoloCurves> {
    let mut apps: Vec<AppSpec> = Vec::new();
    for a in mixes.iter().flat_map(|m| &m.workload.apps) {
        if !apps.iter().any(|b| b.name == a.name) {
            apps.push(AppSpec {
                arrive_at: Duration::ZERO,
                ..a.clone()
            });
        }
    }
    let programs = Workload {
        name: "suite-programs".into(),
        epoch: None,
        apps,
    };
    let threads: Vec<u32> = (1..=cpus).collect();
    Ok(Solo {
        target,
        stop: &stop_flag()?,
        watch: &Bars,
        learn,
    }
    .measure_curves(&programs, &threads, repeat, out)?)
}

/// What a mix's traces say beyond times: per policy, how often the Manager
/// saw CPUs wasted, by kind (`docs/trace-format.md`: CPUs idle while an
/// app's threads waited, idle while an app ran below what it could use, CPU
/// time burnt with no progress), and per run of `auto` or a guarded policy
/// (`BASE+guard`) what it last measured against Linux for each app set
/// (`docs/policies/auto.md`, "Checked against outcomes"), so the table says
/// where the policy knew it was no better than doing nothing.
fn from_traces(dir: &Path) -> Result<String> {
    let Saved::Comparison(saved) = open(dir, None)? else {
        return Ok(String::new());
    };
    let mut idle = Vec::new();
    let mut auto = String::new();
    for (policy, traces) in &saved.runs {
        let mut events = [0usize; 3];
        for (n, path) in traces.iter().enumerate() {
            let trace = read_trace(path)?;
            for e in &trace.events {
                match waste_of(e) {
                    Some((_, Waste::IdleWhileWaiting)) => events[0] += 1,
                    Some((_, Waste::Underused)) => events[1] += 1,
                    Some((_, Waste::NoProgress)) => events[2] += 1,
                    None => {}
                }
            }
            if policy == "auto" || policy.ends_with("+guard") {
                let plans = trace.events.iter().filter_map(|e| match e {
                    TraceEvent::Plan { plan, .. } => Some(plan),
                    _ => None,
                });
                for verdict in last_verdicts(plans) {
                    let _ = writeln!(auto, "  {policy} run {}: {verdict}", n + 1);
                }
            }
        }
        idle.push(format!(
            "{policy} {}/{}/{}",
            events[0], events[1], events[2]
        ));
    }
    let mut out = format!(
        "waste events over all runs (idle_while_waiting/underused/no_progress): {}\n",
        idle.join(", ")
    );
    if !auto.is_empty() {
        out.push_str("against Linux, per app set (last estimate):\n");
        out.push_str(&auto);
    }
    Ok(out)
}

pub fn main(args: MixesArgs) -> Result<()> {
    check_policies(&args.policies, "native", args.repeat)?;
    let target = Target::Host(crate::host::start()?);
    let cpus = target.topology().cpus().len() as u32;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| default_out_dir("mixes", "bench"));
    let mixes = mixes(&args, &target, &out)?;
    // The suite's programs alone, once for all mixes; after them when
    // nothing may be stored beforehand.
    let mut shared = match (&args.suite, args.fresh) {
        (Some(_), false) => Some(program_curves(
            &target,
            &mixes,
            cpus,
            args.solo_repeat,
            &out.join("solo"),
            true,
        )?),
        _ => None,
    };
    let mut runs: Vec<(&Mix, Comparison)> = Vec::new();
    for mix in &mixes {
        let workload = &mix.workload;
        let dir = out.join(&workload.name);
        let curves = if args.fresh {
            None
        } else {
            Some(curves_before(
                &args,
                &target,
                mix,
                shared.as_ref(),
                cpus,
                &dir,
            )?)
        };
        let reference = curves.as_ref().map(|c| Reference::of(workload, c, cpus));
        let cmp = run_comparison(
            &target,
            &Plan {
                workload,
                policies: &args.policies,
                baseline: "native",
                repeat: args.repeat,
                out: &dir,
                epoch: workload.epoch.unwrap_or(DEFAULT_EPOCH),
                solo: reference.as_ref().map(|r| &r.solo),
                objective: args.objective,
                fresh: args.fresh.then_some(&Child as &dyn Fresh),
            },
        )?;
        let note = if mix.note.is_empty() {
            String::new()
        } else {
            format!(", {}", mix.note)
        };
        println!("## {} ({}{note})\n", workload.name, mix.path.display());
        if let Some(c) = &curves {
            print!("{}", c.render());
            println!();
        }
        print!("{}", cmp.render());
        println!();
        if let Some(r) = &reference {
            print!("{}", r.table(&cmp).1);
        }
        print!("{}", from_traces(&dir)?);
        if let Some((best, m)) = best_other(&cmp.policies, "auto") {
            let own = cmp.policies.iter().find(|p| p.policy == "auto");
            if let Some(a) = own.and_then(|p| p.makespan?.gmean) {
                println!("auto / best other ({best}): {:.3}", a / m);
            }
        }
        println!();
        runs.push((mix, cmp));
    }
    // Nothing stored after either, with --fresh.
    if args.fresh && args.suite.is_some() {
        shared = Some(program_curves(
            &target,
            &mixes,
            cpus,
            args.solo_repeat,
            &out.join("solo"),
            false,
        )?);
    }
    let mut outcomes = Vec::new();
    for (mix, cmp) in runs {
        let curves = match &shared {
            Some(c) => Some(c.clone()),
            None if args.fresh => Some(
                Solo {
                    target: &target,
                    stop: &stop_flag()?,
                    watch: &Bars,
                    learn: false,
                }
                .measure_curves(
                    &mix.workload,
                    &(1..=cpus).collect::<Vec<_>>(),
                    args.solo_repeat,
                    &out.join(&mix.workload.name).join("solo"),
                )?,
            ),
            None => stored_curves(&target, &mix.workload)?,
        };
        outcomes.push(MixOutcome {
            mix: mix.workload.name.clone(),
            note: mix.note.clone(),
            bound: curves.and_then(|c| Reference::of(&mix.workload, &c, cpus).points.cpu_bound),
            comparison: cmp,
        });
    }
    println!("## All {} mixes\n", outcomes.len());
    print!("{}", across_mixes(&outcomes, "auto").render());
    println!("traces: {}", out.display());
    Ok(())
}

/// A mix's solo curves before its runs: the suite's programs', those the
/// store holds of its programs with `--reuse-solo`, or measured now (and
/// stored as its programs' solo runs, where its policies find them).
fn curves_before(
    args: &MixesArgs,
    target: &Target,
    mix: &Mix,
    shared: Option<&SoloCurves>,
    cpus: u32,
    dir: &Path,
) -> Result<SoloCurves> {
    if let Some(c) = shared {
        return Ok(c.clone());
    }
    if args.reuse_solo {
        if let Some(c) = stored_curves(target, &mix.workload)? {
            return Ok(c);
        }
    }
    let threads: Vec<u32> = (1..=cpus).collect();
    Ok(Solo {
        target,
        stop: &stop_flag()?,
        watch: &Bars,
        learn: true,
    }
    .measure_curves(&mix.workload, &threads, args.solo_repeat, &dir.join("solo"))?)
}

/// The solo times per team size the knowledge store holds of `workload`'s
/// programs; None when it holds none (or cannot be opened, said).
fn stored_curves(target: &Target, workload: &Workload) -> Result<Option<SoloCurves>> {
    let Some(k) = Knowledge::open_or_warn(target, workload) else {
        return Ok(None);
    };
    let c = k.solo_curves(workload)?;
    Ok((!c.is_empty()).then_some(c))
}
