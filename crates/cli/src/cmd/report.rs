//! `coloc report`: every metric again, from traces alone: one run's, or a whole
//! comparison's (the directory `compare` and `demo` print), as tables, JSON or
//! an HTML page.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use coloc_harness::read_trace;
use coloc_harness::saved::{open, Saved, SavedComparison};
use coloc_model::metrics::RunMetrics;

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A run's output directory (or its trace.jsonl), or a comparison's directory
    /// (as `compare` and `demo` print it).
    pub dir: PathBuf,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Also write a self-contained HTML page (core map, per-app series, metrics;
    /// for a comparison, the distributions too) to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// For a comparison: the policy NTT and p-values are relative to [default:
    /// the one `compare` used].
    #[arg(long)]
    pub baseline: Option<String>,
}

pub fn main(args: ReportArgs) -> Result<()> {
    match open(&args.dir, args.baseline.as_deref())? {
        Saved::Run(path) => report_run(&path, &args),
        Saved::Comparison(c) => report_comparison(&c, &args),
    }
}

fn report_run(path: &Path, args: &ReportArgs) -> Result<()> {
    let trace = read_trace(path)?;
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
    if let Some(file) = &args.html {
        write_html(file, || crate::html::run_page(&trace, &metrics))?;
    }
    Ok(())
}

fn report_comparison(saved: &SavedComparison, args: &ReportArgs) -> Result<()> {
    let cmp = saved.comparison()?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&cmp)?);
    } else {
        let runs: Vec<String> = saved
            .runs
            .iter()
            .map(|(p, r)| format!("{p} {}", r.len()))
            .collect();
        println!(
            "{}: comparison in {} (runs: {}; baseline {})",
            saved.manifest.workload,
            saved.dir.display(),
            runs.join(", "),
            cmp.baseline
        );
        print!("{}", cmp.render());
    }
    if let Some(file) = &args.html {
        write_html(file, || crate::html::saved_comparison_page(saved, &cmp))?;
    }
    Ok(())
}

/// Writes the page `make` renders to `file` and says where, how large and how
/// long it took (on standard error, so JSON output stays clean).
pub fn write_html(file: &Path, make: impl FnOnce() -> Result<String>) -> Result<()> {
    let t0 = Instant::now();
    let page = make()?;
    std::fs::write(file, &page).with_context(|| format!("writing {}", file.display()))?;
    eprintln!(
        "html: {} ({:.1} KiB, rendered in {:.2} s)",
        file.display(),
        page.len() as f64 / 1024.0,
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}
