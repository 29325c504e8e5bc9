//! `coloc compare`: several policies, repeated and interleaved (A B C A B C …) so
//! that drift of the machine (thermal, background load) hits all alike.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use clap::Args;
use coloc_harness::context::{policy_context_with, refresh};
use coloc_harness::knowledge::Knowledge;
use coloc_harness::output::default_out_dir;
use coloc_harness::saved::{open, Manifest, Saved};
use coloc_harness::Target;
use coloc_manager::DEFAULT_EPOCH;
use coloc_model::knowledge::Source;
use coloc_model::metrics::mixes::Reference;
use coloc_model::metrics::{Comparison, RunMetrics, SoloTimes};
use coloc_model::{Trace, Workload};
use coloc_policy::auto::Objective;
use coloc_policy::PolicyContext;

use crate::choice::{check_name, choose, Choice, OracleArgs};
use crate::cmd::fresh::{run_fresh, write_workload, FreshRun};
use crate::cmd::report::write_html;
use crate::host::stop_flag;
use crate::output::text_out;
use crate::progress::Progress;
use crate::target::MachineArgs;

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Workload file (TOML).
    pub workload: PathBuf,
    /// Policies to compare, comma-separated; the first is the baseline unless
    /// --baseline says otherwise. With --sim, `oracle` is the best static
    /// configuration found by simulating (static workloads).
    #[arg(long, value_delimiter = ',', default_value = "native,equal,batch")]
    pub policies: Vec<String>,
    /// Runs per policy.
    #[arg(long, default_value_t = 5)]
    pub repeat: u32,
    /// Policy that NTT and p-values are relative to [default: the first policy].
    #[arg(long)]
    pub baseline: Option<String>,
    /// Directory for all runs' traces [default: coloc-runs/WORKLOAD/compare-TIME].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Policy epoch, e.g. `100ms`.
    #[arg(long, value_parser = crate::parse_epoch)]
    pub epoch: Option<Duration>,
    /// Print the comparison as JSON.
    #[arg(long)]
    pub json: bool,
    /// What `auto` optimizes: makespan (the default), art or latency
    /// (`coloc run --objective`); the other policies ignore it.
    #[arg(long, default_value = "makespan")]
    pub objective: Objective,
    /// Also write a self-contained HTML page of the comparison to FILE (as
    /// `coloc report DIR --html FILE` does later).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    #[command(flatten)]
    pub machine: MachineArgs,
    #[command(flatten)]
    pub oracle: OracleArgs,
}

/// What to compare, resolved.
#[derive(Debug)]
pub struct Plan<'a> {
    pub workload: &'a Workload,
    pub policies: &'a [String],
    pub baseline: &'a str,
    pub repeat: u32,
    pub out: &'a Path,
    pub epoch: Duration,
    pub solo: Option<&'a SoloTimes>,
    /// What `auto` optimizes (`--objective`); the other policies ignore it.
    pub objective: Objective,
    /// Nothing stored beforehand: each run a `coloc run` of its own in an
    /// empty data directory (`crate::cmd::fresh`), registry policies only.
    pub fresh: bool,
}

pub fn main(args: CompareArgs) -> Result<()> {
    let target = args.machine.target()?;
    let workload = target.load(&args.workload)?;
    let baseline = args
        .baseline
        .clone()
        .unwrap_or_else(|| args.policies[0].clone());
    check_policies(&args.policies, &baseline, args.repeat)?;
    let out = args
        .out
        .unwrap_or_else(|| default_out_dir(&workload.name, "compare"));
    let knowledge = Knowledge::open_or_warn(&target, &workload);
    let solo = match &knowledge {
        Some(k) => k.solo_times(&workload)?,
        None => None,
    };
    let choices = args
        .policies
        .iter()
        .map(|p| {
            choose(
                &target,
                &workload,
                p,
                &args.oracle,
                &mut text_out(args.json),
            )
        })
        .collect::<Result<Vec<_>>>()?;
    let cmp = run_choices(
        &target,
        &Plan {
            workload: &workload,
            policies: &args.policies,
            baseline: &baseline,
            repeat: args.repeat,
            out: &out,
            epoch: args.epoch.or(workload.epoch).unwrap_or(DEFAULT_EPOCH),
            solo: solo.as_ref(),
            objective: args.objective,
            fresh: false,
        },
        &choices,
    )?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&cmp)?);
    } else {
        print!("{}", cmp.render());
        // Against the workload's reference points, where `coloc solo --threads`
        // measured them on this machine.
        let curves = match &knowledge {
            Some(k) => k.solo_curves(&workload)?,
            None => Default::default(),
        };
        if !curves.is_empty() {
            let cpus = target.topology().cpus().len() as u32;
            print!("{}", Reference::of(&workload, &curves, cpus).table(&cmp).1);
        }
        if solo.is_none() {
            println!(
                "(no solo times for this workload on {}: run `coloc solo {}{}` for Hmean speedup)",
                target.describe(),
                args.workload.display(),
                args.machine
                    .sim
                    .as_ref()
                    .map_or(String::new(), |p| format!(" --sim {p}"))
            );
        }
        println!("traces: {}", out.display());
    }
    if let Some(file) = &args.html {
        write_comparison_html(&out, &cmp, file)?;
    }
    Ok(())
}

/// The comparison's page, from the traces just written.
pub fn write_comparison_html(out: &Path, cmp: &Comparison, file: &Path) -> Result<()> {
    let Saved::Comparison(saved) = open(out, Some(&cmp.baseline))? else {
        bail!("{} is not a comparison's directory", out.display());
    };
    write_html(file, || crate::html::saved_comparison_page(&saved, cmp))
}

/// Refuses unknown policies, a baseline not among them and zero repeats before
/// anything runs.
pub fn check_policies(policies: &[String], baseline: &str, repeat: u32) -> Result<()> {
    for p in policies {
        check_name(p)?;
    }
    if !policies.iter().any(|p| p == baseline) {
        bail!(
            "--baseline {baseline} is not one of --policies {}",
            policies.join(",")
        );
    }
    if repeat == 0 {
        bail!("--repeat must be at least 1");
    }
    Ok(())
}

/// Runs every policy `repeat` times, interleaved, and compares (registry
/// policies only: the oracle needs its options, see [`run_choices`]).
pub fn run_comparison(target: &Target, plan: &Plan<'_>) -> Result<Comparison> {
    let choices = plan
        .policies
        .iter()
        .map(|p| Choice::named(p))
        .collect::<Result<Vec<_>>>()?;
    run_choices(target, plan, &choices)
}

/// Runs every choice `repeat` times, interleaved, and compares; `choices` are
/// `plan.policies` resolved (see [`choose`]).
pub fn run_choices(target: &Target, plan: &Plan<'_>, choices: &[Choice]) -> Result<Comparison> {
    let stop = stop_flag()?;
    // Written first, so that `coloc report` reads even an interrupted comparison.
    Manifest {
        workload: plan.workload.name.clone(),
        policies: choices.iter().map(|c| c.name().to_string()).collect(),
        baseline: plan.baseline.to_string(),
        repeat: plan.repeat,
        solo: plan.solo.cloned(),
    }
    .write(plan.out)?;
    // Fresh runs read the workload from a file and build their own context
    // (and learn in their own data directories); the others share the store.
    let fresh_file = if plan.fresh {
        Some(write_workload(plan.workload, plan.out)?)
    } else {
        None
    };
    let knowledge = if plan.fresh {
        None
    } else {
        Knowledge::open_or_warn(target, plan.workload)
    };
    let mut ctx = if plan.fresh {
        PolicyContext::default()
    } else {
        policy_context_with(target, plan.workload, plan.policies, knowledge.as_ref())?
    };
    ctx.objective = plan.objective;
    let total_runs = choices.len() as u32 * plan.repeat;
    let instances: u64 = plan.workload.apps.iter().map(|a| u64::from(a.repeat)).sum();
    let mut results: Vec<(&Choice, Vec<RunMetrics>)> =
        choices.iter().map(|c| (c, Vec::new())).collect();
    let tty = std::io::stderr().is_terminal();
    let mut n = 0;
    for rep in 0..plan.repeat {
        for (choice, runs) in results.iter_mut() {
            let policy = choice.name();
            n += 1;
            let label = format!("{n}/{total_runs} {policy} #{}", rep + 1);
            let t0 = Instant::now();
            let out = plan.out.join(format!("{policy}-{}", rep + 1));
            let (trace, progress) = match &fresh_file {
                Some(file) => {
                    eprintln!("run {label}: `coloc run` with nothing stored beforehand");
                    let run = FreshRun {
                        workload: file,
                        policy,
                        objective: plan.objective,
                        epoch: plan.epoch,
                        out: &out,
                    };
                    (run_fresh(&run, &stop)?, None)
                }
                None => {
                    let mut progress = Progress::new(&label, instances);
                    let (summary, events) = target.run_policy(
                        plan.workload,
                        choice.make(&ctx)?,
                        &out,
                        plan.epoch,
                        u64::from(rep),
                        Some(stop.clone()),
                        &mut progress,
                    )?;
                    if summary.interrupted || stop.load(Ordering::Relaxed) {
                        bail!("interrupted; settings were restored");
                    }
                    let trace = Trace::from_events(events)?;
                    // What the run says of each program, for the later runs
                    // (the policies that read it read it again) and the node
                    // service.
                    if let Some(k) = &knowledge {
                        if let Err(e) = k.learn(plan.workload, &trace, Source::Run) {
                            eprintln!(
                                "coloc: warning: {}; run {label} was not learned",
                                coloc_harness::error::chain(&e)
                            );
                        }
                    }
                    refresh(&mut ctx, knowledge.as_ref(), plan.workload, plan.policies)?;
                    (trace, Some(progress))
                }
            };
            let metrics = RunMetrics::from_trace(&trace, plan.solo);
            let line = format!(
                "makespan {}, {:.1} s wall",
                metrics
                    .makespan_secs()
                    .map_or_else(|| "-".into(), |m| format!("{m:.2} s")),
                t0.elapsed().as_secs_f64()
            );
            match progress {
                Some(p) => {
                    p.finish(line.clone());
                    if !tty {
                        eprintln!("run {label}: {line}");
                    }
                }
                None => eprintln!("run {label}: {line}"),
            }
            runs.push(metrics);
        }
    }
    let results = results
        .into_iter()
        .map(|(c, runs)| (c.name().to_string(), runs))
        .collect();
    Ok(Comparison::new(plan.baseline, results))
}
