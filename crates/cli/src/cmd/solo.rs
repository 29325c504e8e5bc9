//! `coloc solo`: each app of a workload alone on the machine, under `native`,
//! stored as its program's solo runs (docs/knowledge.md); with `--threads
//! 1,2,…` at each thread count. The runs are the harness's
//! ([`coloc_harness::solo`]); `--from DIR` recomputes the times from the
//! traces a run wrote, without running.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;
use coloc_harness::output::default_out_dir;
use coloc_harness::procedure::read_json;
use coloc_harness::solo::{traces, Solo};
use coloc_model::metrics::{solo_curves, solo_times, SoloManifest, SOLO_MANIFEST};

use crate::host::stop_flag;
use crate::progress::Bars;
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
    let solo = Solo {
        target: &target,
        stop: &stop_flag()?,
        watch: &Bars,
        learn: true,
    };
    if !args.threads.is_empty() {
        let curves = solo.measure_curves(&workload, &args.threads, args.repeat, &out)?;
        print!("{}", curves.render());
    } else {
        let times = solo.measure(&workload, args.repeat, &out)?;
        print!("{}", times.render());
    }
    println!(
        "stored as each program's solo runs in {} (`coloc knowledge list`)",
        crate::db::DbArgs { db: None }.path().display()
    );
    Ok(())
}
