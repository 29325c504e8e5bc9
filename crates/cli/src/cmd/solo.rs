//! `coloc solo`: each app of a workload alone on the machine, under `native`, to
//! give Hmean speedup its denominator (Tang et al. and NuPoCo report speedups over
//! solo runs). Times are stored per workload and machine in coloc's data directory.
//! With `--threads 1,2,…` each app runs alone at each thread count instead, for
//! the reference points of a mix (`coloc_model::metrics::reference`).

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;
use coloc_manager::DEFAULT_EPOCH;
use coloc_model::metrics::{RunMetrics, SoloCurves, SoloTimes};
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
    /// Thread counts to run each app at, comma-separated (e.g. `1,2`): solo
    /// times per thread count, for the makespan's lower bound and the SJF
    /// reference [default: each app's own thread count only].
    #[arg(long, value_delimiter = ',')]
    pub threads: Vec<u32>,
    #[command(flatten)]
    pub machine: MachineArgs,
}

/// Where solo times of a workload on a machine are kept.
fn saved_path(workload: &Workload, target: &Target) -> PathBuf {
    data_dir()
        .join("solo")
        .join(format!("{}-{}.json", workload.name, target.key()))
}

/// Where solo times per thread count of a workload on a machine are kept.
fn curves_path(workload: &Workload, target: &Target) -> PathBuf {
    data_dir()
        .join("solo")
        .join(format!("{}-{}-threads.json", workload.name, target.key()))
}

/// Solo times saved earlier for this workload on this machine, if any.
pub fn load_saved(workload: &Workload, target: &Target) -> Result<Option<SoloTimes>> {
    load_json(&saved_path(workload, target))
}

/// Solo times per thread count saved earlier (`--threads`), if any.
pub fn load_saved_curves(workload: &Workload, target: &Target) -> Result<Option<SoloCurves>> {
    load_json(&curves_path(workload, target))
}

fn load_json<T: serde::de::DeserializeOwned>(path: &std::path::Path) -> Result<Option<T>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(serde_json::from_str(&text).with_context(|| {
            format!("reading solo times from {}", path.display())
        })?)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// Runs app `index` of `workload` alone under `native`, `repeat` times, with
/// `threads` threads when given; returns the wall times of its successful runs.
fn alone(
    target: &Target,
    workload: &Workload,
    index: usize,
    threads: Option<u32>,
    repeat: u32,
    out: &std::path::Path,
    stop: &Arc<AtomicBool>,
) -> Result<Vec<f64>> {
    let app = &workload.apps[index];
    let mut alone = app.clone();
    alone.arrive_at = std::time::Duration::ZERO;
    alone.repeat = repeat;
    let label = match threads {
        Some(k) => {
            alone.threads = k;
            format!("{}-{k}", app.name)
        }
        None => app.name.clone(),
    };
    let single = Workload {
        name: format!("{}-solo-{label}", workload.name),
        epoch: workload.epoch,
        apps: vec![alone],
    };
    let ctx = policy_context(target, &single, &["native"])?;
    let mut progress = Progress::new(&format!("solo {label}"), u64::from(repeat));
    let (summary, events) = target.run(
        &single,
        "native",
        &ctx,
        &out.join(&label),
        workload.epoch.unwrap_or(DEFAULT_EPOCH),
        0,
        Some(stop.clone()),
        &mut progress,
    )?;
    anyhow::ensure!(!summary.interrupted, "interrupted; settings were restored");
    let walls = RunMetrics::from_trace(&Trace::from_events(events)?, None).wall_times_secs();
    progress.finish(match walls.len() {
        0 => "no successful run".into(),
        n => format!("{:.2} s", walls.iter().sum::<f64>() / n as f64),
    });
    Ok(walls)
}

/// Every app of `workload` alone at its own thread count, `repeat` times:
/// the wall times Hmean speedup divides by.
pub fn measure(
    target: &Target,
    workload: &Workload,
    repeat: u32,
    out: &std::path::Path,
) -> Result<SoloTimes> {
    let stop = stop_flag()?;
    let mut solo = SoloTimes::default();
    for (i, app) in workload.apps.iter().enumerate() {
        for wall in alone(target, workload, i, None, repeat, out, &stop)? {
            solo.add(&app.name, wall);
        }
    }
    Ok(solo)
}

/// Every app of `workload` alone at each of `threads`, `repeat` times.
pub fn measure_curves(
    target: &Target,
    workload: &Workload,
    threads: &[u32],
    repeat: u32,
    out: &std::path::Path,
) -> Result<SoloCurves> {
    let stop = stop_flag()?;
    let mut curves = SoloCurves::default();
    for (i, app) in workload.apps.iter().enumerate() {
        for &k in threads {
            for wall in alone(target, workload, i, Some(k), repeat, out, &stop)? {
                curves.add(&app.name, k, wall);
            }
        }
    }
    Ok(curves)
}

fn save<T: serde::Serialize>(path: &std::path::Path, value: &T) -> Result<()> {
    std::fs::create_dir_all(path.parent().expect("a file path has a parent"))?;
    std::fs::write(path, serde_json::to_string_pretty(value)?)
        .with_context(|| format!("writing {}", path.display()))
}

/// Saves solo times per thread count for later `coloc bench mixes` runs.
pub fn save_curves(workload: &Workload, target: &Target, curves: &SoloCurves) -> Result<PathBuf> {
    let path = curves_path(workload, target);
    save(&path, curves)?;
    Ok(path)
}

pub fn main(args: SoloArgs) -> Result<()> {
    anyhow::ensure!(args.repeat >= 1, "--repeat must be at least 1");
    anyhow::ensure!(
        args.threads.iter().all(|k| *k >= 1),
        "--threads: thread counts must be at least 1"
    );
    let target = Target::new(&args.machine)?;
    let workload = target.load(&args.workload)?;
    let out = args
        .out
        .unwrap_or_else(|| default_out_dir(&workload.name, "solo"));
    if !args.threads.is_empty() {
        let curves = measure_curves(&target, &workload, &args.threads, args.repeat, &out)?;
        let path = save_curves(&workload, &target, &curves)?;
        print!("{}", curves.render());
        println!("saved: {}", path.display());
        return Ok(());
    }
    let solo = measure(&target, &workload, args.repeat, &out)?;
    let path = saved_path(&workload, &target);
    save(&path, &solo)?;
    print!("{}", solo.render());
    println!("saved: {}", path.display());
    Ok(())
}
