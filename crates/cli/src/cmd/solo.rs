//! `coloc solo`: each app of a workload alone on the machine, under `native`, to
//! give Hmean speedup its denominator (Tang et al. and NuPoCo report speedups over
//! solo runs). Every run is stored as a record of its program in the knowledge
//! store (docs/knowledge.md), where `compare`, `bench` and `auto` find it: a
//! way to seed what coloc otherwise learns from every run.
//! With `--threads 1,2,…` each app runs alone at each thread count instead, for
//! the reference points of a mix (`coloc_model::metrics::reference`).
//!
//! A measurement procedure (docs/trace-format.md, Measurement procedures;
//! [`coloc_model::metrics::solo_runs`]): the output directory holds
//! `solo.json` and one trace per run, the times are computed from those traces
//! on disk, and `coloc solo --from DIR` recomputes them without running.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;
use coloc_manager::DEFAULT_EPOCH;
use coloc_model::knowledge::Source;
use coloc_model::metrics::{
    solo_curves, solo_runs, solo_times, RunMetrics, SoloCurves, SoloManifest, SoloRun, SoloTimes,
    SOLO_MANIFEST,
};
use coloc_model::{Trace, Workload};

use coloc_harness::context::policy_context;
use coloc_harness::knowledge::Knowledge;
use coloc_harness::output::default_out_dir;
use coloc_harness::procedure::{read_json, read_traces, write_json};
use coloc_harness::Target;

use crate::host::stop_flag;
use crate::progress::Progress;
use crate::target::MachineArgs;

#[derive(Debug, Args)]
pub struct SoloArgs {
    /// Workload file (TOML).
    #[arg(required_unless_present = "from")]
    pub workload: Option<PathBuf>,
    /// Run nothing: recompute the solo times from the traces in DIR, a
    /// directory `coloc solo` wrote (its `--out`), and print them (nothing is
    /// saved).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["workload", "threads", "sim"])]
    pub from: Option<PathBuf>,
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

/// Makes `run`: its app of `workload` alone under `native`, `repeat` times
/// back to back, with the run's thread count when it has one; its trace in
/// `out/DIR`.
fn alone(
    target: &Target,
    workload: &Workload,
    knowledge: Option<&Knowledge>,
    run: &SoloRun,
    repeat: u32,
    out: &Path,
    stop: &Arc<AtomicBool>,
) -> Result<()> {
    let index = workload
        .apps
        .iter()
        .position(|a| a.name == run.app)
        .with_context(|| format!("run {}: no app \"{}\"", run.dir, run.app))?;
    let app = &workload.apps[index];
    let mut alone = app.clone();
    alone.arrive_at = std::time::Duration::ZERO;
    alone.repeat = repeat;
    if let Some(k) = run.threads {
        alone.threads = k;
    }
    let single = Workload {
        name: format!("{}-solo-{}", workload.name, run.dir),
        epoch: workload.epoch,
        apps: vec![alone],
    };
    let ctx = policy_context(target, &single, &["native"])?;
    let mut progress = Progress::new(&format!("solo {}", run.dir), u64::from(repeat));
    let (summary, events) = target.run(
        &single,
        "native",
        &ctx,
        &out.join(&run.dir),
        workload.epoch.unwrap_or(DEFAULT_EPOCH),
        0,
        Some(stop.clone()),
        &mut progress,
    )?;
    anyhow::ensure!(!summary.interrupted, "interrupted; settings were restored");
    let trace = Trace::from_events(events)?;
    if let Some(k) = knowledge {
        if let Err(e) = k.learn_app(index, &trace, Source::Solo) {
            eprintln!("coloc: warning: {e:#}; this solo run was not stored");
        }
    }
    let walls = RunMetrics::from_trace(&trace, None).wall_times_secs();
    progress.finish(match walls.len() {
        0 => "no successful run".into(),
        n => format!("{:.2} s", walls.iter().sum::<f64>() / n as f64),
    });
    Ok(())
}

/// Makes the solo runs of every app of `workload` (at each of `threads`, or
/// at its own count when empty), `repeat` times each, writes `out/solo.json`,
/// and returns the runs and their traces read back from `out`. With `learn`
/// each run is stored as its program's record (docs/knowledge.md).
fn procedure(
    target: &Target,
    workload: &Workload,
    threads: &[u32],
    repeat: u32,
    out: &Path,
    learn: bool,
) -> Result<(Vec<SoloRun>, Vec<Trace>)> {
    let stop = stop_flag()?;
    let apps: Vec<&str> = workload.apps.iter().map(|a| a.name.as_str()).collect();
    let manifest = SoloManifest {
        runs: solo_runs(&apps, threads),
    };
    let knowledge = if learn {
        Knowledge::open_or_warn(target, workload)
    } else {
        None
    };
    for run in &manifest.runs {
        alone(
            target,
            workload,
            knowledge.as_ref(),
            run,
            repeat,
            out,
            &stop,
        )?;
    }
    write_json(out, SOLO_MANIFEST, &manifest)?;
    let traces = traces(out, &manifest.runs)?;
    Ok((manifest.runs, traces))
}

/// The trace of each of `runs` under `dir`.
fn traces(dir: &Path, runs: &[SoloRun]) -> Result<Vec<Trace>> {
    Ok(read_traces(dir, runs.iter().map(|r| r.dir.as_str()))?)
}

/// Every app of `workload` alone at its own thread count, `repeat` times:
/// the wall times Hmean speedup divides by; stored with `learn`.
pub fn measure(
    target: &Target,
    workload: &Workload,
    repeat: u32,
    out: &Path,
    learn: bool,
) -> Result<SoloTimes> {
    let (runs, traces) = procedure(target, workload, &[], repeat, out, learn)?;
    Ok(solo_times(&runs, &traces))
}

/// Every app of `workload` alone at each of `threads`, `repeat` times;
/// stored with `learn`.
pub fn measure_curves(
    target: &Target,
    workload: &Workload,
    threads: &[u32],
    repeat: u32,
    out: &Path,
    learn: bool,
) -> Result<SoloCurves> {
    let (runs, traces) = procedure(target, workload, threads, repeat, out, learn)?;
    Ok(solo_curves(&runs, &traces))
}

/// `coloc solo --from DIR`: the times again from the traces `solo.json` in
/// DIR lists, by the functions that computed them when they ran.
fn recompute(dir: &Path) -> Result<()> {
    let manifest: SoloManifest = read_json(dir, SOLO_MANIFEST)?;
    let traces = traces(dir, &manifest.runs)?;
    println!("Recomputed from the traces in {}:", dir.display());
    if manifest.runs.iter().all(|r| r.threads.is_some()) && !manifest.runs.is_empty() {
        print!("{}", solo_curves(&manifest.runs, &traces).render());
    } else {
        print!("{}", solo_times(&manifest.runs, &traces).render());
    }
    Ok(())
}

pub fn main(args: SoloArgs) -> Result<()> {
    anyhow::ensure!(args.repeat >= 1, "--repeat must be at least 1");
    if let Some(dir) = &args.from {
        return recompute(dir);
    }
    anyhow::ensure!(
        args.threads.iter().all(|k| *k >= 1),
        "--threads: thread counts must be at least 1"
    );
    let target = args.machine.target()?;
    let workload = target.load(args.workload.as_deref().expect("clap requires it"))?;
    let out = args
        .out
        .unwrap_or_else(|| default_out_dir(&workload.name, "solo"));
    if !args.threads.is_empty() {
        let curves = measure_curves(&target, &workload, &args.threads, args.repeat, &out, true)?;
        print!("{}", curves.render());
    } else {
        let solo = measure(&target, &workload, args.repeat, &out, true)?;
        print!("{}", solo.render());
    }
    println!(
        "stored as each program's solo runs in {} (`coloc knowledge list`)",
        crate::db::DbArgs { db: None }.path().display()
    );
    Ok(())
}
