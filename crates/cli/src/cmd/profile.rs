//! `coloc profile`: ReSense's characterization (§2.2, Table III) of each app of a
//! workload, stored in the profile store for `resense` to use.
//!
//! For every shared level of the machine that has two instances or more,
//! [`characterization_plan`] gives two solo configurations with as many threads
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
//! ([`counter_run`]).
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

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use coloc_linux::usage::cycles_available;
use coloc_manager::DEFAULT_EPOCH;
use coloc_model::profile::procedure::{ProcedureManifest, MANIFEST};
use coloc_model::profile::shared_cache::{shared_cache_plan, SharedCachePlan};
use coloc_model::profile::substitute::{corun_cpus, sharing_runs};
use coloc_model::profile::ProcedureError;
use coloc_model::profile::{
    characterization_plan, counter_run, AppIdentity, LevelPlan, PlatformFingerprint, Signal,
};
use coloc_model::{AppSpec, Cpu, Workload};

use coloc_harness::characterize::{Characterization, Measure};
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
    let apps = selected(&workload, &args.apps)?;
    let plan = characterization_plan(target.topology());
    let platform = PlatformFingerprint::of(target.topology());
    let store = args.db.open()?;

    println!(
        "Characterizing {} app(s) on {}, platform {platform}, {} run(s) per configuration:",
        apps.len(),
        target.describe(),
        args.repeat
    );
    print!("{}", describe_plan(&plan));
    let runnable = plan.iter().any(|l| l.setup.is_ok());
    if !runnable {
        println!(
            "No level of this platform can be characterized, so no ReSense run is made. Each \
             app's profile is stored with these reasons and no score: resense places such an \
             app as Linux would (score 0 at every level)."
        );
    }

    let (signal, fallback) = match &target {
        Target::Sim { .. } => {
            if !matches!(args.signal, SignalArg::Auto | SignalArg::Cycles) {
                bail!(
                    "--signal {:?}: the simulator measures cycles; --signal chooses among this machine's measurements",
                    args.signal
                );
            }
            (Signal::Cycles, None)
        }
        Target::Host(_) => host_signal(args.signal)?,
    };
    if runnable {
        match fallback {
            Some(why) => println!("Runs are measured by {signal} ({why})."),
            None => println!("Runs are measured by {signal}."),
        }
    }
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
        // Only this machine's cycles are counted outside the trace.
        meter_cycles: signal == Signal::Cycles && matches!(target, Target::Host(_)),
        repeat: args.repeat,
        watch: &Bars,
    };
    // Tang et al.'s characteristics: the simulator counts what the paper
    // counts; this machine has no LLC counters, hence the stream probe.
    let corun = corun_cpus(target.topology());
    let shared_cache = shared_cache_plan(target.topology());
    let sharing_plan = |app: &str| match &target {
        Target::Sim { .. } => Ok(vec![counter_run(app, target.topology())]),
        Target::Host(_) => corun.clone().and_then(|cpus| {
            let mut planned = sharing_runs(app, cpus, args.repeat)?;
            if let Ok(plan) = &shared_cache {
                planned.extend(plan.runs(app, args.repeat));
            }
            Ok(planned)
        }),
    };
    match (&target, &corun) {
        (Target::Sim { .. }, _) => println!(
            "Sharing characteristics (Tang et al. §5) from the simulated counters of one run"
        ),
        (Target::Host(_), Ok((app, probe))) => println!(
            "Sharing characteristics (Tang et al. §5) by the stream-probe substitute: \
             the app's thread on CPU {app}, the probe on CPU {probe}, {} co-run(s)",
            args.repeat
        ),
        (Target::Host(_), Err(why)) => println!("Sharing characteristics not measured: {why}"),
    }
    if let Target::Host(_) = &target {
        println!(
            "  data sharing by the substitute: {}",
            describe_shared_cache(&shared_cache)
        );
    }
    let identified = match &target {
        Target::Sim { .. } => distinct(apps, |a| Ok(model_identity(a)))?,
        Target::Host(_) => distinct(apps, |a| {
            let command = a.command.as_deref().unwrap_or_default();
            coloc_linux::program::program_identity(&a.name, command)
                .with_context(|| format!("app \"{}\": field `command`", a.name))
        })?,
    };
    let (_, profiles) = runs.profiles(
        &identified,
        &Measure {
            platform: &platform,
            signal,
            plan: &plan,
            sharing: &sharing_plan,
        },
    )?;
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

/// The apps `names` selects (every app when empty), in workload order.
fn selected<'a>(workload: &'a Workload, names: &[String]) -> Result<Vec<&'a AppSpec>> {
    if let Some(unknown) = names
        .iter()
        .find(|n| !workload.apps.iter().any(|a| &a.name == *n))
    {
        let known: Vec<&str> = workload.apps.iter().map(|a| a.name.as_str()).collect();
        bail!(
            "--app {unknown}: {} has no app of that name (apps: {})",
            workload.name,
            known.join(", ")
        );
    }
    Ok(workload
        .apps
        .iter()
        .filter(|a| names.is_empty() || names.contains(&a.name))
        .collect())
}

/// Each app with its identity, keeping the first of apps that run the same
/// thing (one profile each: the store keys it by identity, not by name).
fn distinct(
    apps: Vec<&AppSpec>,
    identity: impl Fn(&AppSpec) -> Result<AppIdentity>,
) -> Result<Vec<(&AppSpec, AppIdentity)>> {
    let mut out: Vec<(&AppSpec, AppIdentity)> = Vec::new();
    for app in apps {
        let id = identity(app)?;
        match out.iter().find(|(_, seen)| seen.key() == id.key()) {
            Some((first, _)) => println!(
                "{} runs what {} runs: characterized once, as {}",
                app.name, first.name, first.name
            ),
            None => out.push((app, id)),
        }
    }
    Ok(out)
}

fn model_identity(app: &AppSpec) -> AppIdentity {
    AppIdentity::model(&app.name, app.model.as_deref().unwrap_or_default())
}

/// The signal for runs on this machine, and why it is not cycles when `--signal
/// auto` had to fall back.
fn host_signal(arg: SignalArg) -> Result<(Signal, Option<String>)> {
    Ok(match arg {
        SignalArg::Auto => match cycles_available() {
            Ok(()) => (Signal::Cycles, None),
            Err(why) => (
                Signal::TaskClock,
                Some(format!("no hardware counters: {why}")),
            ),
        },
        SignalArg::Cycles => {
            cycles_available().map_err(|why| {
                anyhow::anyhow!("--signal cycles: this machine cannot count cycles ({why})")
            })?;
            (Signal::Cycles, None)
        }
        SignalArg::TaskClock => (Signal::TaskClock, None),
        SignalArg::Wall => (Signal::Wall, None),
    })
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
    use coloc_model::testutils::app_spec;
    use coloc_model::{CpuSet, Placement, TraceEvent};

    use super::*;
    use crate::progress::Progress;

    #[test]
    fn unknown_app_names_the_known_ones() {
        let w = Workload {
            name: "w".into(),
            epoch: None,
            apps: vec![app_spec("a", 1), app_spec("b", 1)],
        };
        type Case<'a> = (&'a [&'a str], Result<Vec<&'a str>, &'a str>);
        let cases: [Case; 3] = [
            (&[], Ok(vec!["a", "b"])),
            (&["b"], Ok(vec!["b"])),
            (
                &["c"],
                Err("--app c: w has no app of that name (apps: a, b)"),
            ),
        ];
        for (names, want) in cases {
            let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
            let got = selected(&w, &names)
                .map(|v| v.iter().map(|a| a.name.as_str()).collect::<Vec<_>>())
                .map_err(|e| e.to_string());
            assert_eq!(got, want.map_err(str::to_string), "{names:?}");
        }
    }

    /// Apps that run the same model are characterized once, under the first name.
    #[test]
    fn same_identity_is_characterized_once() {
        let mut a = app_spec("a", 1);
        a.model = Some("mg".into());
        let mut b = app_spec("b", 1);
        b.model = Some("mg".into());
        let mut c = app_spec("c", 1);
        c.model = Some("ft".into());
        let got = distinct(vec![&a, &b, &c], |x| Ok(model_identity(x))).unwrap();
        let names: Vec<&str> = got.iter().map(|(app, _)| app.name.as_str()).collect();
        assert_eq!(names, ["a", "c"]);
        assert_eq!(got[0].1, AppIdentity::model("a", "mg"));
    }

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
