//! `coloc profile`: ReSense's characterization (§2.2, Table III) of each app of a
//! workload, stored in the profile store for `resense` to use.
//!
//! For every shared level of the machine that has two instances or more,
//! [`coloc_model::profile::characterization_plan`] gives two solo configurations with as many threads
//! as there are cores under one instance: *baseline*, the threads over two
//! instances, and *contention*, all under one, everything else equal. Each is
//! run `--repeat` times, baseline and contention alternating so that a slow
//! drift of the machine hits both alike, and Equation 1 compares the means
//! ([`coloc_model::profile::Sensitivity::from_runs`], which also keeps every run and the spread).
//!
//! On this machine the characterization is a measurement procedure
//! (docs/trace-format.md, Measurement procedures): planned runs
//! ([`coloc_model::profile::procedure::level_runs`], made by
//! [`coloc_harness::characterize`]), each the app alone under the `static` policy with thread
//! i pinned to the configuration's CPU i (the same Manager and Linux backend as
//! `coloc run`, writing an ordinary trace), with `OMP_NUM_THREADS` set to the
//! configuration's thread count. A run's figure is the total CPU time of all
//! its threads over its whole life (task-clock), from its trace's `exit`
//! event, or `--signal wall` its elapsed time from the trace; where the
//! machine has hardware counters it is their total cycles, counted around the
//! run ([`coloc_linux::usage`]: the only figure the trace does not carry).
//! Then the stream-probe co-runs measure Tang et al.'s bandwidth, and the
//! app's threads sharing a cache against apart its data sharing (on a machine
//! with two LLCs the LLC level's runs above, else two threads on one core
//! against two cores), whence its LLC footprint (docs/policies/tang-atom.md,
//! Characteristics). The directory holds
//! `procedure.json`, and `coloc profile --from DIR` recomputes every profile
//! from its traces with the same functions. In the simulator (`--sim`) the
//! procedure is the same, through the Manager and the simulated machine: the
//! figure is the simulated cycles of the trace's `exit` usage, and Tang et
//! al.'s characteristics come from the LLC counts of one counter run
//! ([`coloc_model::profile::counter_run`]).
//!
//! A level with a single instance (a VM's one L3) has no baseline: it is listed
//! with the reason and never run. When no level can be characterized the
//! command runs nothing and still stores each app's profile, every level with
//! its reason: that is what is known of the app on this platform, and `resense`
//! reads such a profile as score 0 everywhere, i.e. places the app as Linux
//! would (§3.5), without reporting it as unprofiled.
//!
//! Profiles are keyed by app identity (a model's name; a program's argv as it
//! runs, `kernel:NAME` resolved, with the SHA-256 of its executable:
//! [`coloc_linux::program::program_identity`]) and platform fingerprint. Apps of
//! one workload that run the same thing are characterized once.
//!
//! What differs per target (signal, sharing runs, identity) is chosen by
//! [`coloc_harness::characterize::setup`], and the runs are the harness's;
//! here the arguments are parsed and the setup and profiles printed.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use coloc_manager::DEFAULT_EPOCH;
use coloc_model::profile::procedure::{ProcedureManifest, MANIFEST};
use coloc_model::profile::shared_cache::SharedCachePlan;
use coloc_model::profile::LevelPlan;
use coloc_model::profile::ProcedureError;
use coloc_model::Cpu;

use coloc_harness::characterize::{setup, Characterization, Setup, Sharing, SignalChoice};
use coloc_harness::output::default_out_dir;
use coloc_harness::procedure::{profile_from_dir, read_json};
use coloc_harness::runner::Runner;
use coloc_harness::Target;

use crate::db::DbArgs;
use crate::host::stop_flag;
use crate::progress::Bars;
use crate::target::MachineArgs;

#[derive(Debug, Args)]
pub struct ProfileArgs {
    /// Workload file (TOML) whose apps to characterize: commands on this machine,
    /// models with --sim. Thread counts and arrival times in it are ignored.
    #[arg(required_unless_present = "from")]
    pub workload: Option<PathBuf>,
    /// Run nothing: recompute the profiles from the traces in DIR, a directory
    /// `coloc profile` wrote (its `--out`), and print them.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["workload", "apps", "sim"])]
    pub from: Option<PathBuf>,
    /// With --from: print JSON (each app's identity and characteristics) instead of text.
    #[arg(long, requires = "from")]
    pub json: bool,
    /// Characterize only the app of this name (repeatable) [default: every app].
    #[arg(long = "app", value_name = "NAME")]
    pub apps: Vec<String>,
    /// Runs of each configuration.
    #[arg(long, default_value_t = 3)]
    pub repeat: u32,
    /// What a run is measured by on this machine: auto is cycles where hardware
    /// counters exist, else task-clock (the CPU time of all the app's threads).
    #[arg(long, value_enum, default_value_t = SignalArg::Auto)]
    pub signal: SignalArg,
    /// Directory for the runs' traces and the apps' output on this machine
    /// [default: coloc-runs/WORKLOAD/profile-TIME].
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub machine: MachineArgs,
    #[command(flatten)]
    pub db: DbArgs,
}

/// `--signal`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SignalArg {
    Auto,
    Cycles,
    TaskClock,
    Wall,
}

impl From<SignalArg> for SignalChoice {
    fn from(arg: SignalArg) -> Self {
        match arg {
            SignalArg::Auto => SignalChoice::Auto,
            SignalArg::Cycles => SignalChoice::Cycles,
            SignalArg::TaskClock => SignalChoice::TaskClock,
            SignalArg::Wall => SignalChoice::Wall,
        }
    }
}

pub fn main(args: ProfileArgs) -> Result<()> {
    anyhow::ensure!(
        args.repeat >= 1,
        "--repeat {}: expected at least 1 run per configuration",
        args.repeat
    );
    if let Some(dir) = &args.from {
        return recompute(dir, args.json);
    }
    let target = args.machine.target()?;
    let workload = target.load(args.workload.as_deref().expect("clap requires it"))?;
    let setup = setup(&target, &workload, &args.apps, args.signal.into())?;
    let store = args.db.open()?;
    print!("{}", describe_setup(&setup, &target, args.repeat));
    let runs = Characterization {
        runner: Runner {
            target: &target,
            workload: &workload,
            out: args
                .out
                .clone()
                .unwrap_or_else(|| default_out_dir(&workload.name, "profile")),
            epoch: workload.epoch.unwrap_or(DEFAULT_EPOCH),
            stop: stop_flag()?,
        },
        repeat: args.repeat,
        watch: &Bars,
    };
    let (_, profiles) = runs.profiles(&setup)?;
    println!(
        "traces in {}; `coloc profile --from {}` recomputes the profiles from them",
        runs.runner.out.display(),
        runs.runner.out.display()
    );

    for p in &profiles {
        store
            .put(p)
            .with_context(|| format!("storing the profile of {}", p.identity))?;
        println!("\n{}", p.identity);
        print!("{}", coloc_model::profile::render(p));
    }
    println!(
        "\nstored {} profile(s) in {}",
        profiles.len(),
        store.path().display()
    );
    Ok(())
}

/// What the characterization will do, before it runs: the apps, the
/// platform, the levels, the signal, how sharing is measured and the apps
/// characterized as an earlier one.
fn describe_setup(setup: &Setup<'_>, target: &Target, repeat: u32) -> String {
    let mut out = format!(
        "Characterizing {} app(s) on {}, platform {}, {repeat} run(s) per configuration:\n",
        setup.apps.len() + setup.same.len(),
        target.describe(),
        setup.platform,
    );
    out.push_str(&describe_plan(&setup.plan));
    let signal = setup.signal;
    if !setup.runnable() {
        out.push_str(
            "No level of this platform can be characterized, so no ReSense run is made. Each \
             app's profile is stored with these reasons and no score: resense places such an \
             app as Linux would (score 0 at every level).\n",
        );
    } else {
        match &setup.no_counters {
            Some(why) => {
                let _ = writeln!(
                    out,
                    "Runs are measured by {signal} (no hardware counters: {why})."
                );
            }
            None => {
                let _ = writeln!(out, "Runs are measured by {signal}.");
            }
        }
    }
    match &setup.sharing {
        Sharing::Counters => out.push_str(
            "Sharing characteristics (Tang et al. §5) from the simulated counters of one run\n",
        ),
        Sharing::Probe {
            corun,
            shared_cache,
        } => {
            match corun {
                Ok((app, probe)) => {
                    let _ = writeln!(
                        out,
                        "Sharing characteristics (Tang et al. §5) by the stream-probe substitute: \
                         the app's thread on CPU {app}, the probe on CPU {probe}, {repeat} co-run(s)"
                    );
                }
                Err(why) => {
                    let _ = writeln!(out, "Sharing characteristics not measured: {why}");
                }
            }
            let _ = writeln!(
                out,
                "  data sharing by the substitute: {}",
                describe_shared_cache(shared_cache)
            );
        }
    }
    for s in &setup.same {
        let _ = writeln!(
            out,
            "{} runs what {} runs: characterized once, as {}",
            s.app, s.first, s.first
        );
    }
    out
}

/// `coloc profile --from DIR`: the profiles again, from the traces of the runs the manifest in DIR lists, by the same function that
/// computed them when they ran.
fn recompute(dir: &Path, json: bool) -> Result<()> {
    let manifest: ProcedureManifest = read_json(dir, MANIFEST)?;
    let profiles = manifest
        .apps
        .iter()
        .map(|app| profile_from_dir(dir, &manifest.platform, manifest.signal, app))
        .collect::<Result<Vec<_>, _>>()?;
    if json {
        println!("{}", serde_json::to_string_pretty(&profiles)?);
        return Ok(());
    }
    println!(
        "Recomputed from the traces in {}, platform {}:",
        dir.display(),
        manifest.platform
    );
    for p in &profiles {
        println!("\n{}", p.identity);
        print!("{}", coloc_model::profile::render(p));
    }
    Ok(())
}

/// The levels, their configurations (thread i on the i-th CPU listed) or why
/// they cannot be characterized, and what differs besides the level.
fn describe_plan(plan: &[LevelPlan]) -> String {
    let mut out = String::new();
    for l in plan {
        match &l.setup {
            Ok(c) => {
                out.push_str(&format!(
                    "  {}: {} instances; {} threads, baseline on CPUs {}, contention on CPUs {}\n",
                    l.label(),
                    l.instances,
                    c.threads,
                    cpu_list(&c.baseline),
                    cpu_list(&c.contention)
                ));
                for caveat in &c.caveats {
                    out.push_str(&format!("    caveat: {caveat}\n"));
                }
            }
            Err(why) => out.push_str(&format!("  {}: not characterizable: {why}\n", l.label())),
        }
    }
    if plan.is_empty() {
        out.push_str("  (no resource is shared by two cores or more)\n");
    }
    out
}

/// Which runs give the data sharing substitute (Tang et al. §5 without LLC
/// counters), or why none do.
fn describe_shared_cache(plan: &Result<SharedCachePlan, ProcedureError>) -> String {
    match plan {
        Ok(SharedCachePlan::LlcLevel { label, .. }) => format!(
            "the {label} runs above, one {label} against two, read as the share of CPU time \
             sharing it saves"
        ),
        Ok(SharedCachePlan::OneCore(c)) => format!(
            "{} threads on CPUs {} (one core) against on CPUs {}, by task-clock, the share of \
             CPU time sharing the core's caches saves",
            c.threads,
            cpu_list(&c.contention),
            cpu_list(&c.baseline)
        ),
        Err(why) => format!("not measured: {why}"),
    }
}

fn cpu_list(cpus: &[Cpu]) -> String {
    cpus.iter()
        .map(Cpu::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    use coloc_model::profile::procedure::{run_figure, PinnedApp, PlannedRun, BASELINE};
    use coloc_model::profile::Signal;
    use coloc_model::testutils::app_spec;
    use coloc_model::{AppSpec, CpuSet, Placement, TraceEvent, Workload};

    use super::*;
    use crate::progress::Progress;

    /// A run on this machine measures the app's whole life from its trace:
    /// n threads pinned on n CPUs use CPU time, at most n CPUs' worth of the
    /// run's wall time, and the trace shows the static plan putting thread i on
    /// CPU i. A failing app gives a reason, not a figure.
    #[test]
    fn a_host_run_measures_the_pinned_app() {
        let _turn = crate::host::HOST_TESTS
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let target = Target::Host(crate::host::start().unwrap());
        let cpus: Vec<Cpu> = target.topology().cpus().iter().take(2).collect();
        let dir = tempfile::tempdir().unwrap();
        let argv = ["kernel:compute", "--iters", "1000000"].map(String::from);
        let mut app = app_spec("compute", 1);
        app.command = Some(coloc_workloads::resolve_argv(&argv).unwrap());
        let w = Workload {
            name: "w".into(),
            epoch: None,
            apps: vec![app.clone()],
        };
        let runner = Runner {
            target: &target,
            workload: &w,
            out: dir.path().into(),
            epoch: DEFAULT_EPOCH,
            stop: Arc::new(AtomicBool::new(false)),
        };
        let planned = |n: usize, app: &AppSpec| PlannedRun {
            dir: n.to_string(),
            role: BASELINE.into(),
            apps: vec![PinnedApp {
                name: app.name.clone(),
                cpus: cpus[..n].to_vec(),
                args: Vec::new(),
            }],
        };
        let made = |app: &AppSpec, run: &PlannedRun| {
            runner
                .run(
                    &app.name,
                    run,
                    std::slice::from_ref(app),
                    &mut Progress::new("t", 1),
                )
                .unwrap();
            coloc_harness::read_trace(&runner.dir(&app.name, run).join("trace.jsonl")).unwrap()
        };
        for n in 1..=cpus.len() {
            let trace = made(&app, &planned(n, &app));
            let cpu = run_figure(&trace, "compute", Signal::TaskClock).unwrap();
            let wall = run_figure(&trace, "compute", Signal::Wall).unwrap();
            assert!(cpu > 0.0, "{cpu}");
            assert!(
                cpu <= wall * n as f64 + 20e6,
                "{n} thread(s) on {n} CPU(s): {cpu} ns of CPU in {wall} ns"
            );
            let pinned = trace.events.iter().any(|e| match e {
                TraceEvent::Plan { plan, .. } => plan.apps.iter().any(|p| {
                    matches!(&p.placement, Placement::PerThread { threads, .. }
                        if threads.len() == n
                            && threads.iter().enumerate().all(|(i, (_, c))| *c == CpuSet::single(cpus[i])))
                }),
                _ => false,
            });
            assert!(pinned, "no plan pins thread i on CPU {cpus:?}[i]");
        }
        let mut failing = app.clone();
        failing.name = "failing".into();
        failing.command = Some(vec!["false".into()]);
        let trace = made(&failing, &planned(1, &failing));
        let got = run_figure(&trace, "failing", Signal::TaskClock);
        let code_1 = coloc_model::trace::ExitStatus::Code(1);
        let failed = coloc_model::procedure::FinishedError::Failed(code_1);
        assert_eq!(got, Err(ProcedureError::Finished(failed)));
    }
}
