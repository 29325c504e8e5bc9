//! `coloc run` (this machine, or `--sim PLATFORM`) and `coloc sim` (the same with a
//! required platform): one workload, one policy. The run and what it gives
//! back are the harness's ([`coloc_harness::single`]); here the policy is
//! chosen (the oracle's search with it) and the outcome printed.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use coloc_harness::output::default_out_dir;
use coloc_harness::single::prepare;
use coloc_harness::Target;
use coloc_manager::{Waste, WasteSeen, DEFAULT_EPOCH};

use crate::choice::{choose, OracleArgs};
use crate::host::stop_flag;
use crate::output::text_out;
use crate::progress::Progress;
use crate::target::MachineArgs;

/// What `run` and `sim` share.
#[derive(Debug, Args)]
pub struct RunOpts {
    /// Policy to run under (`coloc policies` lists them), or `oracle` in the
    /// simulator (static workloads: the best configuration found by simulating).
    #[arg(long, short, default_value = "auto")]
    pub policy: String,
    /// What `auto` optimizes: `makespan` (the default: no scheduling settings),
    /// `art` (least attained CPU first, by nice value) or `latency` (batch apps
    /// at nice 10 while a latency-class app runs).
    #[arg(long, default_value = "makespan")]
    pub objective: coloc_policy::auto::Objective,
    /// Directory for the trace (trace.jsonl) and the apps' output
    /// [default: coloc-runs/WORKLOAD/POLICY-TIME].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Policy epoch, e.g. `100ms` (overrides the workload file's; default 100ms).
    #[arg(long, value_parser = crate::parse_epoch)]
    pub epoch: Option<Duration>,
    /// Print the run's metrics as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub oracle: OracleArgs,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Workload file (TOML; see examples/).
    pub workload: PathBuf,
    #[command(flatten)]
    pub opts: RunOpts,
    #[command(flatten)]
    pub machine: MachineArgs,
}

pub fn main(args: RunArgs) -> Result<()> {
    let target = args.machine.target()?;
    run_one(&target, &args.workload, &args.opts)
}

/// Runs one workload file under one policy on `target` and prints its metrics.
pub fn run_one(target: &Target, path: &Path, opts: &RunOpts) -> Result<()> {
    let workload = target.load(path)?;
    let choice = choose(
        target,
        &workload,
        &opts.policy,
        &opts.oracle,
        &mut text_out(opts.json),
    )?;
    let ready = prepare(target, &workload, &choice, opts.objective)?;
    let out = opts
        .out
        .clone()
        .unwrap_or_else(|| default_out_dir(&workload.name, &opts.policy));
    let epoch = opts.epoch.or(workload.epoch).unwrap_or(DEFAULT_EPOCH);
    let total: u64 = workload.apps.iter().map(|a| u64::from(a.repeat)).sum();
    let policy_name = ready.policy_name();
    writeln!(
        text_out(opts.json),
        "{}: {} apps under {policy_name} on {}, epoch {}",
        workload.name,
        workload.apps.len(),
        target.describe(),
        humantime::format_duration(epoch)
    )?;
    let mut progress = Progress::new(&opts.policy, total);
    let run = ready.run(&out, epoch, stop_flag()?, &mut progress)?;
    let summary = &run.summary;
    progress.finish(if summary.interrupted {
        "interrupted".into()
    } else {
        "done".into()
    });
    if opts.json {
        println!("{}", serde_json::to_string_pretty(&run.metrics)?);
    } else {
        print!("{}", run.metrics.render());
        // What auto (or a guarded policy) measured against Linux per app
        // set: whether it was worse than doing nothing.
        if !run.against_linux.is_empty() {
            println!("{policy_name} against Linux, per app set (last estimate):");
            for verdict in &run.against_linux {
                println!("  {verdict}");
            }
        }
        match &run.learned {
            Some((path, Ok(n))) => println!(
                "learned: {n} record(s) added to {} (`coloc knowledge list`)",
                path.display()
            ),
            Some((_, Err(e))) => eprintln!(
                "coloc: warning: {}; this run was not learned",
                coloc_harness::error::chain(e)
            ),
            None => {}
        }
        for (name, levers) in &run.levers {
            println!("{name}: {levers}");
        }
        println!("trace: {}", out.join("trace.jsonl").display());
    }
    if summary.affinity_drift > 0 {
        eprintln!(
            "coloc: apps moved their own threads off the planned CPUs {} time(s) (put back up \
             to {} times per thread, then left to the app; see the trace's affinity_drift)",
            summary.affinity_drift,
            coloc_linux::machine::MAX_REAPPLY
        );
    }
    for line in waste_lines(&summary.waste) {
        eprintln!("coloc: {line}");
    }
    if summary.interrupted {
        anyhow::bail!("interrupted; settings were restored");
    }
    if summary.instances > 0 && summary.failed == summary.instances {
        anyhow::bail!(
            "every app instance failed ({} of {}); see the trace",
            summary.failed,
            summary.instances
        );
    }
    Ok(())
}

/// The waste the Manager saw, one line per kind seen (docs/trace-format.md:
/// `idle_while_waiting`, `underused`, `no_progress`, `spinning`).
fn waste_lines(seen: &WasteSeen) -> Vec<String> {
    [
        (Waste::IdleWhileWaiting, "idle_while_waiting"),
        (Waste::Underused, "underused"),
        (Waste::NoProgress, "no_progress"),
        (Waste::Spinning, "spinning"),
    ]
    .into_iter()
    .filter_map(|(waste, event)| {
        let t = seen.of(waste);
        (t.episodes > 0).then(|| {
            format!(
                "{waste} for more than an epoch: {} time(s), {:.1} s in all, at {} \
                 observation(s) (see the trace's {event} events)",
                t.episodes,
                t.time.as_secs_f64(),
                t.observations
            )
        })
    })
    .collect()
}
