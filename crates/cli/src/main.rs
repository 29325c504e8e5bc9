//! `coloc`: a runtime manager for co-located multithreaded applications.
//!
//! The binary's edge: argument parsing (clap derive, doc comments as help),
//! logging (`--log-level` takes a tracing EnvFilter string), and printing the
//! error chain with `{:#}`. Each subcommand lives in `cmd/`.

mod choice;
mod cmd;
mod db;
mod host;
mod html;
mod one_manager;
mod output;
mod progress;
mod said;
mod target;

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Places the threads of co-located multithreaded applications, sets their degree
/// of parallelism and their memory and scheduling policies, and measures the result
/// against the plain Linux scheduler.
#[derive(Debug, Parser)]
#[command(name = "coloc", version, about, long_about = None)]
struct Cli {
    /// Log filter, e.g. `info`, `debug`, `coloc_linux=trace` (tracing EnvFilter syntax).
    #[arg(long, global = true, default_value = "warn")]
    log_level: String,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print this machine's topology (or an hwloc XML file's) as a tree or JSON.
    Topo(cmd::topo::TopoArgs),
    /// Run a workload under one policy and write its trace.
    Run(cmd::run::RunArgs),
    /// Run a workload of app models on a simulated platform (same tables and trace).
    Sim(cmd::sim::SimArgs),
    /// Recompute every metric of a finished run from its trace.
    Report(cmd::report::ReportArgs),
    /// Why an app got what it got over a run: decisions, reasons, outcomes.
    Why(cmd::why::WhyArgs),
    /// Run a workload under several policies, interleaved and repeated, and compare.
    Compare(cmd::compare::CompareArgs),
    /// Measure each app of a workload running alone (for Hmean speedup), stored as
    /// its program's solo runs.
    Solo(cmd::solo::SoloArgs),
    /// Characterize apps alone, per shared resource (ReSense §2.2), and store their profiles.
    Profile(cmd::profile::ProfileArgs),
    /// List, show, export and import stored profiles (`profiles list|show|export|import`).
    Profiles(cmd::profiles::ProfilesArgs),
    /// What coloc learned of each program from the runs it managed
    /// (`knowledge list|show|forget|export|import`).
    Knowledge(cmd::knowledge::KnowledgeArgs),
    /// Measure this machine's memory service rates (NuPoCo §4.3) and store them.
    Calibrate(cmd::calibrate::CalibrateArgs),
    /// Run the built-in demo: two barrier-heavy OpenMP kernels, native vs equal vs auto.
    Demo(cmd::demo::DemoArgs),
    /// List the policies.
    Policies,
    /// List the built-in workload kernels (`kernel:NAME` in workload files).
    Kernels,
    /// Restore settings left behind by a coloc that crashed.
    Restore,
    /// Benchmarks that print numbers (coloc's own overhead).
    Bench(cmd::bench::BenchArgs),
    /// Generate a workload of app models (ReSense-style dynamic or static mixes).
    Gen(cmd::gen::GenArgs),
    /// Compare the simulator with measured times of the workload kernels.
    CalibrateSim(cmd::calibrate_sim::CalibrateSimArgs),
    /// Run coloc as a node service managing the apps people start (docs/service.md).
    Daemon(cmd::service::daemon::DaemonArgs),
    /// Run a command under the daemon's management and exit with its status.
    Exec(cmd::service::exec::ExecArgs),
    /// Have the daemon manage an already running process tree (no DoP control).
    Attach(cmd::service::status::AttachArgs),
    /// Have the daemon let a process go, its settings restored.
    Release(cmd::service::status::ReleaseArgs),
    /// The daemon's managed apps and their plans.
    Status(cmd::service::status::StatusArgs),
    /// Switch the daemon's policy at run time (`policy set P`).
    Policy(cmd::service::status::PolicyArgs),
    /// The daemon's apps live, per CPU (q quits).
    Top(cmd::service::top::TopArgs),
    /// Write the Slurm SPANK plugin that puts job steps under the node's daemon (docs/slurm.md).
    SpankPlugin(cmd::service::spank::SpankPluginArgs),
}

/// `--epoch`: a duration (`100ms`, `2s`) within the bounds a workload file's
/// `epoch` has (1 ms to 30 days).
pub fn parse_epoch(s: &str) -> Result<std::time::Duration, String> {
    let d = humantime::parse_duration(s).map_err(|e| e.to_string())?;
    coloc_model::workload::check_epoch(d).map_err(|e| e.to_string())?;
    Ok(d)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let filter = tracing_subscriber::EnvFilter::try_new(&cli.log_level);
    let filter = match filter {
        Ok(f) => f,
        Err(e) => {
            eprintln!("coloc: --log-level {:?}: {e}", cli.log_level);
            return ExitCode::from(2);
        }
    };
    // Colour codes only for a terminal: logs redirected to a file stay plain text.
    // What the libraries say beside results (warnings, notices) is shown as
    // `coloc: …` lines whatever the log level (said.rs); the logs keep the rest.
    use tracing_subscriber::layer::{Layer, SubscriberExt};
    use tracing_subscriber::util::SubscriberInitExt;
    tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(std::io::stderr().is_terminal())
                .with_filter(filter)
                .with_filter(tracing_subscriber::filter::filter_fn(|m| !said::is_said(m))),
        )
        .with(said::Said::layer())
        .init();
    quiet_on_output_failure();
    let command = cli.command;
    // stderr may be gone too (a hung-up terminal): what cannot be said is
    // not said, and never a panic.
    let say = |text: String| {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "{text}");
    };
    match std::panic::catch_unwind(move || dispatch(command)) {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(e)) => {
            say(format!("coloc: {e:#}"));
            ExitCode::FAILURE
        }
        Err(payload) => match output_failure(payload.as_ref()) {
            // The reader went away (`coloc topo | head -1`): nothing more
            // can be said, and that is no failure of coloc's (ripgrep does
            // the same).
            Some(OutputFailure::ClosedPipe) => ExitCode::SUCCESS,
            // A full disk (`> /dev/full`), a hung-up terminal: the output
            // is lost, and that is an error, not a crash.
            Some(OutputFailure::Other(msg)) => {
                say(format!("coloc: {msg}"));
                ExitCode::FAILURE
            }
            None => std::panic::resume_unwind(payload),
        },
    }
}

/// How writing coloc's output failed.
enum OutputFailure {
    ClosedPipe,
    Other(String),
}

/// Whether a panic is `print!`'s on a stdout or stderr that cannot be
/// written (Rust ignores SIGPIPE, so a write to a pipe whose reader exited
/// fails with EPIPE; `/dev/full` with ENOSPC; a hung-up terminal with EIO;
/// and the print macros panic on each).
fn output_failure(payload: &(dyn std::any::Any + Send)) -> Option<OutputFailure> {
    let msg = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("");
    if !msg.starts_with("failed printing to std") {
        return None;
    }
    Some(if msg.contains("Broken pipe") {
        OutputFailure::ClosedPipe
    } else {
        OutputFailure::Other(msg.to_string())
    })
}

/// Keeps the panic message of a failed print off stderr (which may be
/// closed too; `main` says it when it can); every other panic is reported
/// as usual. The panic unwinds, so a run in progress still restores what it
/// changed (the machine's `Drop`).
fn quiet_on_output_failure() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if output_failure(info.payload()).is_none() {
            default(info);
        }
    }));
}

fn dispatch(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Topo(a) => cmd::topo::main(a),
        Command::Run(a) => cmd::run::main(a),
        Command::Sim(a) => cmd::sim::main(a),
        Command::Report(a) => cmd::report::main(a),
        Command::Why(a) => cmd::why::main(a),
        Command::Compare(a) => cmd::compare::main(a),
        Command::Solo(a) => cmd::solo::main(a),
        Command::Profile(a) => cmd::profile::main(a),
        Command::Profiles(a) => cmd::profiles::main(a),
        Command::Knowledge(a) => cmd::knowledge::main(a),
        Command::Calibrate(a) => cmd::calibrate::main(a),
        Command::Demo(a) => cmd::demo::main(a),
        Command::Policies => cmd::list::policies(),
        Command::Kernels => cmd::list::kernels(),
        Command::Restore => cmd::list::restore(),
        Command::Bench(a) => cmd::bench::main(a),
        Command::Gen(a) => cmd::gen::main(a),
        Command::CalibrateSim(a) => cmd::calibrate_sim::main(a),
        Command::Daemon(a) => cmd::service::daemon::main(a),
        Command::Exec(a) => cmd::service::exec::main(a),
        Command::Attach(a) => cmd::service::status::attach(a),
        Command::Release(a) => cmd::service::status::release(a),
        Command::Status(a) => cmd::service::status::main(a),
        Command::Policy(a) => cmd::service::status::policy(a),
        Command::Top(a) => cmd::service::top::main(a),
        Command::SpankPlugin(a) => cmd::service::spank::main(a),
    }
}
