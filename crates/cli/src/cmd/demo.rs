//! `coloc demo`: the built-in workload under `native`, `equal` and `auto`
//! (coloc's default policy), compared — the effect coloc exists for, on
//! whatever machine this is.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use coloc_harness::output::default_out_dir;
use coloc_harness::Target;
use coloc_manager::DEFAULT_EPOCH;
use coloc_model::workload::parse_workload;

use coloc_harness::compare::Plan;

use crate::choice::check_policies;
use crate::cmd::compare::{run_comparison, write_comparison_html};

/// The demo workload, built in so that `coloc demo` needs no files.
pub const DEMO_WORKLOAD: &str = include_str!("demo.toml");

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Runs per policy.
    #[arg(long, default_value_t = 3)]
    pub repeat: u32,
    /// Policies to compare, comma-separated (first = baseline).
    #[arg(long, value_delimiter = ',', default_value = "native,equal,auto")]
    pub policies: Vec<String>,
    /// Directory for the traces [default: coloc-runs/demo/compare-TIME].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also write a self-contained HTML page of the comparison to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Print the built-in workload file and exit.
    #[arg(long)]
    pub show: bool,
}

pub fn main(args: DemoArgs) -> Result<()> {
    if args.show {
        print!("{DEMO_WORKLOAD}");
        return Ok(());
    }
    check_policies(&args.policies, &args.policies[0], args.repeat)?;
    let target = Target::Host(crate::host::start()?);
    let workload = target.resolve(parse_workload("<built-in demo>", DEMO_WORKLOAD)?)?;
    let out = args
        .out
        .unwrap_or_else(|| default_out_dir(&workload.name, "compare"));
    println!(
        "coloc demo: {} apps on {} CPUs, policies {}, {} run(s) each\n",
        workload.apps.len(),
        target.topology().cpus().len(),
        args.policies.join(", "),
        args.repeat
    );
    let cmp = run_comparison(
        &target,
        &Plan {
            workload: &workload,
            policies: &args.policies,
            baseline: &args.policies[0],
            repeat: args.repeat,
            out: &out,
            epoch: workload.epoch.unwrap_or(DEFAULT_EPOCH),
            solo: None,
            objective: Default::default(),
            fresh: None,
        },
    )?;
    print!("{}", cmp.render());
    println!("traces: {}", out.display());
    if let Some(file) = &args.html {
        write_comparison_html(&out, &cmp, file)?;
    }
    Ok(())
}
