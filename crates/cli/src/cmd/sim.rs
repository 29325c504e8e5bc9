//! `coloc sim`: run a workload of app models on a modeled platform — the same
//! Manager, policies, trace and tables as a real run, in simulated time
//! (docs/simulator.md).

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use coloc_harness::{resolve_platform, Target};

use crate::cmd::run::{run_one, RunOpts};

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct SimArgs {
    #[command(subcommand)]
    pub cmd: Option<SimCmd>,
    /// Workload file whose apps name a `model` (see examples/sim/).
    #[arg(required_unless_present_any = ["list_platforms", "list_models"])]
    pub workload: Option<PathBuf>,
    /// Platform: a built-in name (`--list-platforms`), an hwloc XML file or a
    /// TOML platform file. Required: a simulated result means nothing without
    /// the machine it models.
    #[arg(long, required_unless_present_any = ["list_platforms", "list_models"])]
    pub platform: Option<String>,
    /// Seed of the simulator's randomness.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub opts: RunOpts,
    /// List the built-in platforms and exit.
    #[arg(long)]
    pub list_platforms: bool,
    /// List the app models and exit.
    #[arg(long)]
    pub list_models: bool,
}

/// What `coloc sim` does besides running a workload.
#[derive(Debug, Subcommand)]
pub enum SimCmd {
    /// The adversarial search: random mixes of apps auto has never seen,
    /// each run under auto, native and equal; prints the worst ratios and
    /// the seeds of every mix where auto is more than 2% slower than either
    /// (docs/simulator.md, Adversarial search).
    Search(crate::cmd::sim_search::SearchArgs),
}

pub fn main(args: SimArgs) -> Result<()> {
    if let Some(SimCmd::Search(a)) = args.cmd {
        return crate::cmd::sim_search::main(a);
    }
    if args.list_platforms {
        for p in coloc_sim::platforms() {
            println!(
                "{:<16} {:>4} CPUs  {}",
                p.name,
                p.topology.cpus().len(),
                p.description
            );
            println!("{:<16}            source: {}", "", p.source);
        }
        return Ok(());
    }
    if args.list_models {
        for m in coloc_sim::model::models() {
            println!("{:<20} {}", m.name, m.about);
        }
        return Ok(());
    }
    let (Some(workload), Some(platform)) = (&args.workload, &args.platform) else {
        bail!("a workload file and --platform are required");
    };
    let target = Target::Sim {
        platform: resolve_platform(platform)?,
        seed: args.seed,
    };
    run_one(&target, workload, &args.opts)
}
