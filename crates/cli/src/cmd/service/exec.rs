//! `coloc exec -- CMD ARGS…`: runs a command under the daemon's management
//! (docs/service.md, coloc exec).
//!
//! The command is forked first and held before exec (on a pipe) while the
//! daemon decides: the policy may keep it waiting (batch-like policies). Once
//! admitted, the daemon has adopted the child and set its CPUs, nice and slice
//! (journaled first, docs/safety.md); the child then execs the command with
//! the environment the daemon gave (the shim's preload for malleable OpenMP
//! programs). `coloc exec` stays its parent: it forwards the signals others
//! send it, reports the command's status to the daemon and exits with it.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use coloc_daemon::protocol::{fit_argv, Reply, Request};
use coloc_linux::machine::set_own_memory_policy;
use coloc_model::trace::ExitStatus;
use coloc_model::workload::{to_app_name, valid_app_name};
use coloc_model::AppClass;
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::{fork, ForkResult, Pid};

use super::client::{Conn, SocketArgs};
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

/// What the held child is told: run with these changes, or run as it is.
const UNMANAGED: &str = "unmanaged\n";

/// The program as the kernel would find it (`PATH` for a bare name).
fn resolve(program: &OsString) -> Result<PathBuf> {
    let p = PathBuf::from(program);
    if p.components().count() > 1 {
        return Ok(p);
    }
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .map(|d| d.join(&p))
        .find(|c| c.is_file())
        .with_context(|| format!("{}: not found on PATH", p.display()))
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
    let program = resolve(&a.command[0])?;
    let mut conn = match Conn::open(&a.socket) {
        Ok(c) => c,
        Err(e) if a.or_run => {
            eprintln!("coloc: {e:#}; running the command unmanaged (--or-run)");
            let err = std::process::Command::new(&a.command[0])
                .args(&a.command[1..])
                .exec();
            bail!("running {}: {err}", program.display());
        }
        Err(e) => {
            return Err(e.context("pass --or-run to run the command unmanaged when no daemon runs"))
        }
    };
    let (go_read, go_write) = nix::unistd::pipe().context("creating a pipe")?;
    // SAFETY: coloc is single-threaded here (no thread was started yet), so
    // the child may allocate; it only reads the pipe and execs.
    let child = match unsafe { fork() }.context("forking the command")? {
        ForkResult::Child => {
            drop(go_write);
            drop(conn);
            held_child(go_read, &a.command)
        }
        ForkResult::Parent { child } => child,
    };
    drop(go_read);
    forward_signals(child)?;
    let (tx, rx) = std::sync::mpsc::channel();
    let unblock = conn.stream.try_clone()?;
    std::thread::spawn(move || {
        let status = wait_for(child);
        let _ = tx.send(status);
        // Wakes a read of the daemon's answer when the command ended first.
        let _ = unblock.shutdown(std::net::Shutdown::Read);
    });
    let name = a.name.clone().unwrap_or_else(|| {
        program
            .file_name()
            .map_or("app".into(), |n| to_app_name(&n.to_string_lossy()))
    });
    conn.send(Request::Exec {
        name,
        class: a.class.into(),
        malleable: a.malleable,
        cap_threads: a.cap_threads,
        threads: a.threads,
        pid: child.as_raw() as u32,
        argv: fit_argv(
            &std::iter::once(program.display().to_string())
                .chain(
                    a.command[1..]
                        .iter()
                        .map(|s| s.to_string_lossy().into_owned()),
                )
                .collect::<Vec<_>>(),
        ),
        job: None,
    })?;
    let mut go = std::fs::File::from(go_write);
    let admitted = match conn.receive() {
        Ok(reply @ Reply::Admitted { .. }) => {
            if let Reply::Admitted { notes, levers, .. } = &reply {
                for n in notes {
                    eprintln!("coloc: {}", printable(n, TEXT_WIDTH));
                }
                if let Some(l) = levers {
                    eprintln!("coloc: {}", printable(&l.to_string(), TEXT_WIDTH));
                }
            }
            let line = serde_json::to_string(&reply)? + "\n";
            let _ = go.write_all(line.as_bytes());
            true
        }
        Ok(Reply::Error { message }) => {
            let _ = kill(child, Signal::SIGKILL);
            let _ = rx.recv();
            bail!("the daemon refused: {}", printable(&message, TEXT_WIDTH));
        }
        Ok(other) => {
            let _ = kill(child, Signal::SIGKILL);
            bail!("unexpected answer from the daemon: {other:?}");
        }
        Err(e) => {
            if let Ok(status) = rx.try_recv() {
                exit_with(&status);
            }
            if !a.or_run {
                let _ = kill(child, Signal::SIGKILL);
                let _ = rx.recv();
                return Err(e.context("the daemon went away before admitting the command"));
            }
            eprintln!("coloc: {e:#}; running the command unmanaged (--or-run)");
            let _ = go.write_all(UNMANAGED.as_bytes());
            false
        }
    };
    drop(go);
    let status = rx.recv().context("waiting for the command")?;
    if admitted {
        // The daemon records it; a daemon gone meanwhile is no error of the command's.
        let _ = conn.send(Request::Exited {
            status: status.clone(),
            pid: None,
        });
    }
    exit_with(&status)
}

/// The forked child: waits for the go, then execs the command.
fn held_child(go: OwnedFd, command: &[OsString]) -> ! {
    let mut text = String::new();
    let _ = std::fs::File::from(go).read_to_string(&mut text);
    let mut cmd = std::process::Command::new(&command[0]);
    cmd.args(&command[1..]);
    if text.is_empty() {
        // coloc exec ended before the daemon answered: the command never runs.
        std::process::exit(1);
    }
    if text != UNMANAGED {
        match serde_json::from_str::<Reply>(text.trim()) {
            Ok(Reply::Admitted {
                set_env,
                remove_env,
                threads,
                memory,
                ..
            }) => {
                // Set here, where it survives the exec: no other process
                // can set it (set_mempolicy acts on the caller).
                if let Some((policy, nodes)) = memory {
                    if let Err(e) = set_own_memory_policy(policy, &nodes) {
                        eprintln!("coloc: memory policy {policy:?} over nodes {nodes:?}: {e}");
                    }
                }
                for k in remove_env {
                    cmd.env_remove(k);
                }
                cmd.envs(with_own_java_options(set_env));
                if threads > 0 {
                    cmd.env("OMP_NUM_THREADS", threads.to_string());
                }
            }
            _ => std::process::exit(1),
        }
    }
    let err = cmd.exec();
    eprintln!("coloc: running {}: {err}", command[0].to_string_lossy());
    std::process::exit(127)
}

/// The daemon's environment for the command, with the JVM's cap (the only
/// option it puts in `JAVA_TOOL_OPTIONS`) after the options the command's
/// environment had (docs/service.md, coloc exec).
fn with_own_java_options(mut set_env: Vec<(String, String)>) -> Vec<(String, String)> {
    use coloc_model::workload::caps::{java_options, JAVA_TOOL_OPTIONS};
    let own = std::env::var(JAVA_TOOL_OPTIONS).ok();
    for (k, v) in &mut set_env {
        if k == JAVA_TOOL_OPTIONS {
            *v = java_options(own.as_deref(), v);
        }
    }
    set_env
}

/// Forwards the signals other processes send coloc exec to the command. A
/// signal from the terminal (Ctrl-C) reached the command already: its process
/// group is the same.
fn forward_signals(child: Pid) -> Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2};
    use signal_hook::iterator::exfiltrator::WithOrigin;
    use signal_hook::iterator::SignalsInfo;
    let mut signals =
        SignalsInfo::<WithOrigin>::new([SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2])
            .context("installing signal forwarding")?;
    std::thread::spawn(move || {
        for origin in signals.forever() {
            if origin.process.is_none() {
                continue;
            }
            if let Ok(sig) = Signal::try_from(origin.signal) {
                let _ = kill(child, sig);
            }
        }
    });
    Ok(())
}

fn wait_for(child: Pid) -> ExitStatus {
    loop {
        match waitpid(child, None) {
            Ok(WaitStatus::Exited(_, c)) => return ExitStatus::Code(c),
            Ok(WaitStatus::Signaled(_, s, _)) => return ExitStatus::Signal(s as i32),
            Ok(_) => continue,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return ExitStatus::Unknown,
        }
    }
}

/// Exits as the command did (128 + the signal for a signal, as shells do).
fn exit_with(status: &ExitStatus) -> ! {
    std::process::exit(match status {
        ExitStatus::Code(c) => *c,
        ExitStatus::Signal(s) => 128 + s,
        _ => 1,
    })
}
