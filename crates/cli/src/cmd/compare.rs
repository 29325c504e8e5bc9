//! `coloc compare`: several policies, repeated and interleaved (A B C A B C …) so
//! that drift of the machine (thermal, background load) hits all alike. The
//! runs are the harness's ([`coloc_harness::compare`]); here the policy names
//! become policies (the oracle's search among them) and the comparison is
//! printed.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Result};
use clap::Args;
use coloc_harness::compare::{Compare, Contender, Plan};
use coloc_harness::knowledge::Knowledge;
use coloc_harness::output::default_out_dir;
use coloc_harness::saved::{open, Saved};
use coloc_harness::Target;
use coloc_manager::DEFAULT_EPOCH;
use coloc_model::metrics::mixes::Reference;
use coloc_model::metrics::Comparison;
use coloc_policy::auto::Objective;

use crate::choice::{check_policies, choose, Choice, OracleArgs};
use crate::cmd::report::write_html;
use crate::host::stop_flag;
use crate::output::text_out;
use crate::progress::COMPARISON_RUNS;
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
            fresh: None,
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

/// The harness's comparison of `choices` (`plan.policies` resolved, see
/// [`choose`]), stopped by a signal and watched by progress bars.
pub fn run_choices(target: &Target, plan: &Plan<'_>, choices: &[Choice]) -> Result<Comparison> {
    let contenders: Vec<&dyn Contender> = choices.iter().map(|c| c as &dyn Contender).collect();
    let compare = Compare {
        target,
        stop: &stop_flag()?,
        watch: &COMPARISON_RUNS,
        learn: true,
    };
    Ok(compare.run(plan, &contenders)?)
}
