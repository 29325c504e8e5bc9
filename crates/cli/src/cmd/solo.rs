//! `coloc solo`: each app of a workload alone on the machine, under `native`, to
//! give Hmean speedup its denominator (Tang et al. and NuPoCo report speedups over
//! solo runs). Times are stored per workload and machine in coloc's data directory.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use coloc_manager::DEFAULT_EPOCH;
use coloc_model::metrics::{RunMetrics, SoloTimes};
use coloc_model::{Trace, Workload};

use crate::context::policy_context;
use crate::host::{data_dir, stop_flag};
use crate::output::default_out_dir;
use crate::progress::Progress;
use crate::target::{MachineArgs, Target};

#[derive(Debug, Args)]
pub struct SoloArgs {
    /// Workload file (TOML).
    pub workload: PathBuf,
    /// Solo runs per app.
    #[arg(long, default_value_t = 3)]
    pub repeat: u32,
    /// Directory for the traces [default: coloc-runs/WORKLOAD/solo-TIME].
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub machine: MachineArgs,
}

/// Where solo times of a workload on a machine are kept.
fn saved_path(workload: &Workload, target: &Target) -> PathBuf {
    data_dir()
        .join("solo")
        .join(format!("{}-{}.json", workload.name, target.key()))
}

/// Solo times saved earlier for this workload on this machine, if any.
pub fn load_saved(workload: &Workload, target: &Target) -> Result<Option<SoloTimes>> {
    let path = saved_path(workload, target);
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(Some(serde_json::from_str(&text).with_context(|| {
            format!("reading solo times from {}", path.display())
        })?)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

pub fn main(args: SoloArgs) -> Result<()> {
    anyhow::ensure!(args.repeat >= 1, "--repeat must be at least 1");
    let target = Target::new(&args.machine)?;
    let workload = target.load(&args.workload)?;
    let ctx = policy_context(&target, &workload, &["native"])?;
    let out = args
        .out
        .unwrap_or_else(|| default_out_dir(&workload.name, "solo"));
    let stop = stop_flag()?;
    let mut solo = SoloTimes::default();
    for app in &workload.apps {
        let mut alone = app.clone();
        alone.arrive_at = std::time::Duration::ZERO;
        alone.repeat = args.repeat;
        let single = Workload {
            name: format!("{}-solo-{}", workload.name, app.name),
            epoch: workload.epoch,
            apps: vec![alone],
        };
        let mut progress = Progress::new(&format!("solo {}", app.name), u64::from(args.repeat));
        let (summary, events) = target.run(
            &single,
            "native",
            &ctx,
            &out.join(&app.name),
            workload.epoch.unwrap_or(DEFAULT_EPOCH),
            0,
            Some(stop.clone()),
            &mut progress,
        )?;
        anyhow::ensure!(!summary.interrupted, "interrupted; settings were restored");
        let metrics = RunMetrics::from_trace(&Trace::from_events(events)?, None);
        for wall in metrics.wall_times_secs() {
            solo.add(&app.name, wall);
        }
        progress.finish(
            solo.mean(&app.name)
                .map_or_else(|| "no successful run".into(), |m| format!("{m:.2} s")),
        );
    }
    let path = saved_path(&workload, &target);
    std::fs::create_dir_all(path.parent().expect("a file path has a parent"))?;
    std::fs::write(&path, serde_json::to_string_pretty(&solo)?)
        .with_context(|| format!("writing {}", path.display()))?;
    print!("{}", solo.render());
    println!("saved: {}", path.display());
    Ok(())
}
