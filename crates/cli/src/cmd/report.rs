//! `coloc report`: every metric again, from a trace alone.

use std::io::BufReader;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use coloc_model::metrics::RunMetrics;
use coloc_model::Trace;

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A run's output directory (or its trace.jsonl).
    pub dir: PathBuf,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
}

pub fn main(args: ReportArgs) -> Result<()> {
    let path = if args.dir.is_dir() {
        args.dir.join("trace.jsonl")
    } else {
        args.dir.clone()
    };
    let file = std::fs::File::open(&path).with_context(|| format!("opening {}", path.display()))?;
    let trace =
        Trace::read(BufReader::new(file)).with_context(|| format!("reading {}", path.display()))?;
    trace
        .check_app_indices()
        .with_context(|| format!("reading {}", path.display()))?;
    let metrics = RunMetrics::from_trace(&trace, None);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&metrics)?);
    } else {
        println!(
            "{} under {} on {}",
            trace.header.workload.name, trace.header.policy, trace.header.machine
        );
        print!("{}", metrics.render());
    }
    Ok(())
}
