//! `coloc why APP [RUN]`: the decisions that applied to an app over a run,
//! their reasons and the outcomes measured, from the run's trace
//! (`coloc_model::explain::history`; docs/trace-format.md, "Reasons and
//! verdicts"); without RUN, from the node service's daemon, for the apps it
//! manages now or that left last (docs/service.md, coloc why).

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use coloc_model::explain::history::{history, History};
use coloc_model::AppId;

use coloc_daemon::protocol::{Reply, Request};
use coloc_harness::read_trace;

use crate::cmd::service::client::{ask, SocketArgs};
use crate::cmd::service::printable::printable;

#[derive(Debug, Args)]
pub struct WhyArgs {
    /// The app: its name in the workload (every instance of it) or an
    /// instance `APP.REP` as tables write it (`1.0`).
    app: String,
    /// A run's directory or its `trace.jsonl`; without it, the daemon's
    /// apps of that name or number (`coloc status`'s `app` column).
    run: Option<PathBuf>,
    /// Print the history as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    socket: SocketArgs,
}

pub fn main(args: WhyArgs) -> Result<()> {
    let Some(run) = &args.run else {
        return live(&args);
    };
    let path = if run.is_dir() {
        run.join("trace.jsonl")
    } else {
        run.clone()
    };
    let trace = read_trace(&path)?;
    let names: Vec<&str> = trace
        .header
        .workload
        .apps
        .iter()
        .map(|a| a.name.as_str())
        .collect();
    let ids = instances(&args.app, &names, &trace)?;
    let histories: Vec<History> = ids.iter().map(|&id| history(&trace.events, id)).collect();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&histories)?);
    } else {
        println!(
            "{} under {} on {}",
            trace.header.workload.name, trace.header.policy, trace.header.machine
        );
        for h in &histories {
            let name = names.get(h.app.app as usize).copied().unwrap_or("?");
            print!("{name} {}", h.render());
        }
    }
    Ok(())
}

/// The daemon's histories of the apps named (or numbered) `args.app`.
fn live(args: &WhyArgs) -> Result<()> {
    let request = Request::Why {
        app: args.app.clone(),
    };
    let apps = match ask(&args.socket, request)? {
        Reply::Why { apps } => apps,
        other => bail!("the daemon answered {other:?} to why"),
    };
    if apps.is_empty() {
        bail!(
            "the daemon knows no app `{}` of yours (running, or among the last that left)",
            printable(&args.app, 64)
        );
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&apps)?);
    } else {
        for a in &apps {
            print!("{} {}", printable(&a.name, 64), a.history.render());
        }
    }
    Ok(())
}

/// The instances `app` names in the trace: `I.R`, or every instance of the
/// workload app of that name that arrived.
fn instances(app: &str, names: &[&str], trace: &coloc_model::Trace) -> Result<Vec<AppId>> {
    let arrived = || {
        trace.events.iter().filter_map(|e| match e {
            coloc_model::TraceEvent::Arrive { app, .. } => Some(*app),
            _ => None,
        })
    };
    if let Some((i, r)) = app.split_once('.') {
        if let (Ok(app), Ok(rep)) = (i.parse(), r.parse()) {
            let id = AppId { app, rep };
            if arrived().any(|a| a == id) {
                return Ok(vec![id]);
            }
            bail!("app instance {id} never arrived in this run");
        }
    }
    let Some(index) = names.iter().position(|n| *n == app) else {
        bail!(
            "no app `{app}` in workload (its apps: {}; or give an instance as APP.REP)",
            names.join(", ")
        );
    };
    let mut ids: Vec<AppId> = arrived().filter(|a| a.app as usize == index).collect();
    ids.sort();
    ids.dedup();
    Ok(ids)
}
