//! `coloc report`: every metric again, from a trace alone.

use std::io::BufReader;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use coloc_model::metrics::RunMetrics;
use coloc_model::{AppId, Trace, TraceEvent};

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
    check_app_indices(&trace).with_context(|| format!("reading {}", path.display()))?;
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

/// Every app a trace's events name must be one of its workload's apps: metrics
/// are built per app index, and an index far beyond the workload (a corrupt or
/// hostile trace) would otherwise make billions of empty entries.
pub fn check_app_indices(trace: &Trace) -> Result<()> {
    let apps = trace.header.workload.apps.len();
    let check = |what: &str, id: AppId| {
        anyhow::ensure!(
            (id.app as usize) < apps,
            "event {what} names app {}, and the workload has {apps} app(s)",
            id.app
        );
        Ok(())
    };
    for (i, event) in trace.events.iter().enumerate() {
        let what = format!("{} (after the header)", i + 1);
        match event {
            TraceEvent::Arrive { app, .. }
            | TraceEvent::Start { app, .. }
            | TraceEvent::Threads { app, .. }
            | TraceEvent::IdleWhileWaiting { app, .. }
            | TraceEvent::Exit { app, .. } => check(&what, *app)?,
            TraceEvent::Plan { plan, .. } => {
                for p in &plan.apps {
                    check(&what, p.app)?;
                }
            }
            TraceEvent::Applied { outcomes, .. } => {
                for o in outcomes {
                    check(&what, o.app)?;
                }
            }
            TraceEvent::Obs(obs) => {
                for a in &obs.apps {
                    check(&what, a.app)?;
                }
            }
            TraceEvent::Header(_) | TraceEvent::End { .. } => {}
        }
    }
    Ok(())
}
