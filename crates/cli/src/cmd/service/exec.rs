//! `coloc exec -- CMD ARGS…`: runs a command under the daemon's management
//! (docs/service.md, coloc exec).
//!
//! The command is held before exec while the daemon decides, then run with
//! what the daemon set; `coloc exec` stays its parent, forwards signals and
//! exits as the command did. That handshake is the daemon crate's client
//! side (`coloc_daemon::launch`); this file parses the arguments, calls it
//! and shows the daemon's notes.

use std::ffi::OsString;

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use coloc_daemon::launch::{self, Event, Launch, LaunchError};
use coloc_daemon::protocol::Reply;
use coloc_model::workload::valid_app_name;
use coloc_model::AppClass;

use super::client::SocketArgs;
use super::printable::{printable, TEXT_WIDTH};

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Class {
    Latency,
    Batch,
}

impl From<Class> for AppClass {
    fn from(c: Class) -> AppClass {
        match c {
            Class::Latency => AppClass::Latency,
            Class::Batch => AppClass::Batch,
        }
    }
}

#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The app's name in `coloc status` (1 to 64 letters, digits, `.`, `_`,
    /// `-`) [default: the program's file name].
    #[arg(long, value_parser = app_name)]
    pub name: Option<String>,
    #[arg(long, value_enum, default_value_t = Class::Batch)]
    pub class: Class,
    /// An OpenMP program whose thread count coloc may change (preloads the shim).
    #[arg(long)]
    pub malleable: bool,
    /// Threads it starts with (`OMP_NUM_THREADS`) [default: one per CPU].
    #[arg(long, default_value_t = 0)]
    pub threads: u32,
    /// Set the thread-count variables of runtimes that read them once at
    /// start (OPENBLAS_NUM_THREADS, MKL_NUM_THREADS, GOMAXPROCS,
    /// RAYON_NUM_THREADS, the JVM's -XX:ActiveProcessorCount) to the team
    /// the policy chooses at launch.
    #[arg(long)]
    pub cap_threads: bool,
    /// With no daemon running, run the command unmanaged instead of failing.
    #[arg(long)]
    pub or_run: bool,
    #[command(flatten)]
    pub socket: SocketArgs,
    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

/// An app name as workload files take them (`valid_app_name`).
pub fn app_name(s: &str) -> Result<String, String> {
    valid_app_name(s).map_err(|why| format!("{why}, found {s:?}"))?;
    Ok(s.to_string())
}

/// `kernel:NAME ARGS` (a built-in kernel, `coloc kernels`) as the path of
/// its executable; any other command as given.
fn with_kernels(command: Vec<OsString>) -> Result<Vec<OsString>> {
    match command[0].to_str() {
        Some(k) if k.starts_with(coloc_workloads::KERNEL_PREFIX) => {
            let argv: Vec<String> = command
                .iter()
                .map(|s| s.to_string_lossy().into_owned())
                .collect();
            Ok(coloc_workloads::resolve_argv(&argv)?
                .into_iter()
                .map(OsString::from)
                .collect())
        }
        _ => Ok(command),
    }
}

pub fn main(mut a: ExecArgs) -> Result<()> {
    a.command = with_kernels(std::mem::take(&mut a.command))?;
    let program = launch::resolve(&a.command[0])?;
    let conn = match a.socket.connect() {
        Ok(c) => c,
        Err(e) if a.or_run => {
            eprintln!("coloc: {e:#}; running the command unmanaged (--or-run)");
            return Err(launch::run_unmanaged(&a.command, &program).into());
        }
        Err(e) => {
            return Err(e.context("pass --or-run to run the command unmanaged when no daemon runs"))
        }
    };
    let launch = Launch {
        name: a
            .name
            .clone()
            .unwrap_or_else(|| launch::default_name(&program)),
        command: a.command,
        program,
        class: a.class.into(),
        malleable: a.malleable,
        cap_threads: a.cap_threads,
        threads: a.threads,
        or_run: a.or_run,
    };
    let status = launch::run_managed(conn, &launch, &mut |event: Event<'_>| match event {
        Event::Admitted(Reply::Admitted { notes, levers, .. }) => {
            for n in notes {
                eprintln!("coloc: {}", printable(n, TEXT_WIDTH));
            }
            if let Some(l) = levers {
                eprintln!("coloc: {}", printable(&l.to_string(), TEXT_WIDTH));
            }
        }
        Event::Admitted(_) => {}
        Event::Unmanaged(e) => {
            eprintln!(
                "coloc: {}; running the command unmanaged (--or-run)",
                coloc_harness::error::chain(e)
            );
        }
    });
    let status = match status {
        Err(LaunchError::Refused { message }) => {
            bail!("the daemon refused: {}", printable(&message, TEXT_WIDTH))
        }
        s => s?,
    };
    std::process::exit(launch::exit_code(&status))
}
