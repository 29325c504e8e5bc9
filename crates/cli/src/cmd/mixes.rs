//! `coloc bench mixes`: the real-program mixes of `bench/mixes/` under several
//! policies, interleaved, each judged against the reference points of its mix
//! (`coloc_model::metrics::reference`): makespan over the CPU-work lower bound,
//! ART over the SJF reference, NTT and p-values against native, and how far
//! `auto` is from the best other policy on each mix.
//!
//! Solo times at every thread count from 1 to the machine's CPUs are measured
//! first (or reused with `--reuse-solo`, as `coloc solo --threads` saved them).
//! Times on a machine shared with other work are noisy: the table is a
//! measurement of that machine at that time.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;
use coloc_manager::{waste_of, Waste, DEFAULT_EPOCH};
use coloc_model::metrics::reference::{
    against_reference, geometric_mean, over_best_other, render_against_reference, AgainstReference,
    MixApp, Points,
};
use coloc_model::metrics::{Comparison, SoloCurves, SoloTimes};
use coloc_model::{TraceEvent, Workload};
use coloc_policy::auto::measured_against_linux;

use crate::cmd::compare::{check_policies, run_comparison, Plan};
use crate::cmd::solo;
use crate::host::Host;
use crate::output::default_out_dir;
use crate::runs::{open, read_trace, Saved};
use crate::solo_store;
use crate::target::Target;

#[derive(Debug, Args)]
pub struct MixesArgs {
    /// Directory of mix workload files (`*.toml`), run from the repository root.
    #[arg(default_value = "bench/mixes")]
    pub dir: PathBuf,
    /// Policies, comma-separated; NTT and p-values are relative to `native`.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "native,batch,equal,nupoco,auto"
    )]
    pub policies: Vec<String>,
    /// Runs per policy and mix.
    #[arg(long, default_value_t = 5)]
    pub repeat: u32,
    /// Solo runs per app and thread count.
    #[arg(long, default_value_t = 1)]
    pub solo_repeat: u32,
    /// Reuse solo times saved by an earlier run where there are some.
    #[arg(long)]
    pub reuse_solo: bool,
    /// Directory for every run's trace [default: coloc-runs/mixes/bench-TIME].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// What `auto` optimizes: makespan (the default), art or latency
    /// (`coloc run --objective`); the other policies ignore it.
    #[arg(long, default_value = "makespan")]
    pub objective: coloc_policy::auto::Objective,
}

/// The mix files of `dir`, by name.
fn mix_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    anyhow::ensure!(!files.is_empty(), "no *.toml mix in {}", dir.display());
    Ok(files)
}

/// A mix's reference points on `cpus` CPUs from its apps' solo curves.
pub struct Reference {
    pub points: Points,
    /// Each app's solo time at its own thread count (for NTT).
    pub solo: SoloTimes,
}

impl Reference {
    pub fn of(workload: &Workload, curves: &SoloCurves, cpus: u32) -> Reference {
        let mut apps = Vec::new();
        let mut solo = SoloTimes::default();
        for a in &workload.apps {
            let curve = curves.curve(&a.name).unwrap_or_default();
            if let Some(t) = curve.get(&a.threads) {
                solo.add(&a.name, *t);
            }
            apps.push(MixApp {
                arrive: a.arrive_at.as_secs_f64(),
                solo: curve,
                cpu: curves.cpu_curve(&a.name).unwrap_or_default(),
            });
        }
        Reference {
            points: Points::of(&apps, cpus),
            solo,
        }
    }

    /// Each policy of `cmp` against these reference points, as a table.
    pub fn table(&self, cmp: &Comparison) -> (Vec<AgainstReference>, String) {
        let rows = against_reference(&cmp.policies, self.points);
        let text = render_against_reference(&rows, self.points);
        (rows, text)
    }
}

/// What a mix's traces say beyond times: per policy, how often the Manager
/// saw CPUs wasted, by kind (`docs/trace-format.md`: CPUs idle while an
/// app's threads waited, idle while an app ran below what it could use, CPU
/// time burnt with no progress), and per run of `auto` or a guarded policy
/// (`BASE+guard`) what it last measured against Linux for each app set
/// (`docs/policies/auto.md`, "Checked against outcomes"), so the table says
/// where the policy knew it was no better than doing nothing.
fn from_traces(dir: &Path) -> Result<String> {
    let Saved::Comparison(saved) = open(dir, None)? else {
        return Ok(String::new());
    };
    let mut idle = Vec::new();
    let mut auto = String::new();
    for (policy, traces) in &saved.runs {
        let mut events = [0usize; 3];
        for (n, path) in traces.iter().enumerate() {
            let trace = read_trace(path)?;
            for e in &trace.events {
                match waste_of(e) {
                    Some((_, Waste::IdleWhileWaiting)) => events[0] += 1,
                    Some((_, Waste::Underused)) => events[1] += 1,
                    Some((_, Waste::NoProgress)) => events[2] += 1,
                    None => {}
                }
            }
            if policy == "auto" || policy.ends_with("+guard") {
                let notes = trace.events.iter().filter_map(|e| match e {
                    TraceEvent::Plan { plan, .. } => Some(plan.note.as_str()),
                    _ => None,
                });
                for line in measured_against_linux(notes) {
                    let _ = writeln!(auto, "  {policy} run {}: {line}", n + 1);
                }
            }
        }
        idle.push(format!(
            "{policy} {}/{}/{}",
            events[0], events[1], events[2]
        ));
    }
    let mut out = format!(
        "waste events over all runs (idle_while_waiting/underused/no_progress): {}\n",
        idle.join(", ")
    );
    if !auto.is_empty() {
        out.push_str("against Linux, per app set (last estimate):\n");
        out.push_str(&auto);
    }
    Ok(out)
}

pub fn main(args: MixesArgs) -> Result<()> {
    check_policies(&args.policies, "native", args.repeat)?;
    let target = Target::Host(Host::new()?);
    let cpus = target.topology().cpus().len() as u32;
    let out = args
        .out
        .unwrap_or_else(|| default_out_dir("mixes", "bench"));
    let (mut over_bound, mut over_cpu_bound) = (Vec::new(), Vec::new());
    let mut worst: Option<(f64, String)> = None;
    for path in mix_files(&args.dir)? {
        let workload = target.load(&path)?;
        let dir = out.join(&workload.name);
        let saved = if args.reuse_solo {
            solo_store::load_saved_curves(&workload, &target)?
        } else {
            None
        };
        let curves = match saved {
            Some(c) => c,
            None => {
                let threads: Vec<u32> = (1..=cpus).collect();
                let c = solo::measure_curves(
                    &target,
                    &workload,
                    &threads,
                    args.solo_repeat,
                    &dir.join("solo"),
                )?;
                solo_store::save_curves(&workload, &target, &c)?;
                c
            }
        };
        let reference = Reference::of(&workload, &curves, cpus);
        let cmp = run_comparison(
            &target,
            &Plan {
                workload: &workload,
                policies: &args.policies,
                baseline: "native",
                repeat: args.repeat,
                out: &dir,
                epoch: workload.epoch.unwrap_or(DEFAULT_EPOCH),
                solo: Some(&reference.solo),
                objective: args.objective,
            },
        )?;
        println!("## {} ({})\n", workload.name, path.display());
        print!("{}", curves.render());
        println!();
        print!("{}", cmp.render());
        println!();
        let (rows, table) = reference.table(&cmp);
        print!("{table}");
        print!("{}", from_traces(&dir)?);
        if let Some((r, best)) = over_best_other(&cmp.policies, "auto") {
            println!("auto / best other ({best}): {r:.3}");
            if worst.as_ref().is_none_or(|w| r > w.0) {
                worst = Some((r, workload.name.clone()));
            }
        }
        if let Some(r) = rows.iter().find(|r| r.policy == "auto") {
            over_bound.extend(r.makespan_over_bound);
            over_cpu_bound.extend(r.makespan_over_cpu_bound);
        }
        println!();
    }
    if let Some((r, mix)) = worst {
        println!("auto's worst case: {r:.3} x the best other policy's makespan ({mix})");
    }
    if let Some(gm) = geometric_mean(&over_bound) {
        println!(
            "auto's geometric-mean makespan over the lower bound: {gm:.3} ({} mixes)",
            over_bound.len()
        );
    }
    if let Some(gm) = geometric_mean(&over_cpu_bound) {
        println!(
            "auto's geometric-mean makespan over the CPU-time lower bound: {gm:.3} ({} mixes)",
            over_cpu_bound.len()
        );
    }
    println!("traces: {}", out.display());
    Ok(())
}
