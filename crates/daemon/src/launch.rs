//! `coloc exec`'s side of the daemon's handshake (docs/service.md, coloc
//! exec): the command is forked first and held before exec (on a pipe)
//! while the daemon decides: the policy may keep it waiting (batch-like
//! policies). Once admitted, the daemon has adopted the child and set its
//! CPUs, nice and slice (journaled first, docs/safety.md); the child then
//! execs the command with the environment the daemon gave (the shim's
//! preload for malleable OpenMP programs). The caller stays its parent: it
//! forwards the signals others send it, reports the command's status to the
//! daemon and returns it.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use coloc_linux::machine::set_own_memory_policy;
use coloc_model::trace::ExitStatus;
use coloc_model::workload::to_app_name;
use coloc_model::AppClass;
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::{fork, ForkResult, Pid};

use crate::client::{ClientError, Conn};
use crate::protocol::{fit_argv, Reply, Request};

/// What the held child is told: run with these changes, or run as it is.
const UNMANAGED: &str = "unmanaged\n";

/// A command to run under the daemon's management.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The command and its arguments, as exec takes them.
    pub command: Vec<OsString>,
    /// Its program's path ([`resolve`]), which the daemon identifies.
    pub program: PathBuf,
    /// Its name in `coloc status`.
    pub name: String,
    pub class: AppClass,
    /// An OpenMP program whose thread count the daemon may change.
    pub malleable: bool,
    /// Set the thread-count variables of runtimes that read them once.
    pub cap_threads: bool,
    /// Threads it starts with (0: one per CPU).
    pub threads: u32,
    /// When the daemon goes away before admitting it, run it unmanaged.
    pub or_run: bool,
}

/// What the caller shows while the command runs.
#[derive(Debug)]
pub enum Event<'a> {
    /// The daemon admitted the command ([`Reply::Admitted`]: its notes and
    /// levers are for the user).
    Admitted(&'a Reply),
    /// The daemon went away before admitting it; it runs unmanaged
    /// (`or_run`).
    Unmanaged(&'a ClientError),
}

/// Why a command could not be run under the daemon.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("{}: not found on PATH", program.display())]
    NotFound { program: PathBuf },
    #[error("creating a pipe")]
    Pipe(#[source] nix::Error),
    #[error("forking the command")]
    Fork(#[source] nix::Error),
    #[error("installing signal forwarding")]
    Signals(#[source] std::io::Error),
    #[error("cloning the connection to the daemon")]
    Clone(#[source] std::io::Error),
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The daemon refused the command (its message, as the daemon wrote it).
    #[error("the daemon refused: {message}")]
    Refused { message: String },
    #[error("unexpected answer from the daemon: {reply:?}")]
    Unexpected { reply: Box<Reply> },
    #[error("the daemon went away before admitting the command")]
    GoneAway(#[source] ClientError),
    #[error("waiting for the command")]
    Wait,
    #[error("running {}: {error}", program.display())]
    Exec {
        program: PathBuf,
        error: std::io::Error,
    },
}

/// The program as the kernel would find it (`PATH` for a bare name).
pub fn resolve(program: &OsString) -> Result<PathBuf, LaunchError> {
    let p = PathBuf::from(program);
    if p.components().count() > 1 {
        return Ok(p);
    }
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .map(|d| d.join(&p))
        .find(|c| c.is_file())
        .ok_or(LaunchError::NotFound { program: p })
}

/// An app name for `program`: its file name as workload files take names.
pub fn default_name(program: &Path) -> String {
    program
        .file_name()
        .map_or("app".into(), |n| to_app_name(&n.to_string_lossy()))
}

/// Runs `command` as it is, in place of this process: returns only the
/// error of an exec that failed.
pub fn run_unmanaged(command: &[OsString], program: &Path) -> LaunchError {
    let error = std::process::Command::new(&command[0])
        .args(&command[1..])
        .exec();
    LaunchError::Exec {
        program: program.to_path_buf(),
        error,
    }
}

/// Runs `launch` under the daemon at the other end of `conn` and returns
/// the command's status once it ended (the daemon told of it when it had
/// admitted the command). The command ended before the daemon answered:
/// its status, the daemon not told. A refusal or a daemon gone before
/// admitting (unless `or_run`) kills the held command.
///
/// Forks: the caller must not have started a thread yet.
pub fn run_managed(
    mut conn: Conn,
    launch: &Launch,
    show: &mut dyn FnMut(Event<'_>),
) -> Result<ExitStatus, LaunchError> {
    let (go_read, go_write) = nix::unistd::pipe().map_err(LaunchError::Pipe)?;
    // SAFETY: the caller started no thread (this function's contract), so
    // the child may allocate; it only reads the pipe and execs.
    let child = match unsafe { fork() }.map_err(LaunchError::Fork)? {
        ForkResult::Child => {
            drop(go_write);
            drop(conn);
            held_child(go_read, &launch.command)
        }
        ForkResult::Parent { child } => child,
    };
    drop(go_read);
    forward_signals(child)?;
    let (tx, rx) = std::sync::mpsc::channel();
    let unblock = conn.stream().try_clone().map_err(LaunchError::Clone)?;
    std::thread::spawn(move || {
        let status = wait_for(child);
        let _ = tx.send(status);
        // Wakes a read of the daemon's answer when the command ended first.
        let _ = unblock.shutdown(std::net::Shutdown::Read);
    });
    conn.send(Request::Exec {
        name: launch.name.clone(),
        class: launch.class,
        malleable: launch.malleable,
        cap_threads: launch.cap_threads,
        threads: launch.threads,
        pid: child.as_raw() as u32,
        argv: fit_argv(
            &std::iter::once(launch.program.display().to_string())
                .chain(
                    launch.command[1..]
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
            show(Event::Admitted(&reply));
            let line = serde_json::to_string(&reply).map_err(ClientError::Request)? + "\n";
            let _ = go.write_all(line.as_bytes());
            true
        }
        Ok(Reply::Error { message }) => {
            let _ = kill(child, Signal::SIGKILL);
            let _ = rx.recv();
            return Err(LaunchError::Refused { message });
        }
        Ok(other) => {
            let _ = kill(child, Signal::SIGKILL);
            return Err(LaunchError::Unexpected {
                reply: Box::new(other),
            });
        }
        Err(e) => {
            if let Ok(status) = rx.try_recv() {
                return Ok(status);
            }
            if !launch.or_run {
                let _ = kill(child, Signal::SIGKILL);
                let _ = rx.recv();
                return Err(LaunchError::GoneAway(e));
            }
            show(Event::Unmanaged(&e));
            let _ = go.write_all(UNMANAGED.as_bytes());
            false
        }
    };
    drop(go);
    let status = rx.recv().map_err(|_| LaunchError::Wait)?;
    if admitted {
        // The daemon records it; a daemon gone meanwhile is no error of the command's.
        let _ = conn.send(Request::Exited {
            status: status.clone(),
            pid: None,
        });
    }
    Ok(status)
}

/// The forked child: waits for the go, then execs the command.
fn held_child(go: OwnedFd, command: &[OsString]) -> ! {
    let mut text = String::new();
    let _ = std::fs::File::from(go).read_to_string(&mut text);
    let mut cmd = std::process::Command::new(&command[0]);
    cmd.args(&command[1..]);
    if text.is_empty() {
        // The parent ended before the daemon answered: the command never runs.
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

/// Forwards the signals other processes send this one to the command. A
/// signal from the terminal (Ctrl-C) reached the command already: its process
/// group is the same.
fn forward_signals(child: Pid) -> Result<(), LaunchError> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2};
    use signal_hook::iterator::exfiltrator::WithOrigin;
    use signal_hook::iterator::SignalsInfo;
    let mut signals =
        SignalsInfo::<WithOrigin>::new([SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2])
            .map_err(LaunchError::Signals)?;
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

/// The exit code of a command that ended with `status`: its own, or 128 +
/// the signal for a signal, as shells do.
pub fn exit_code(status: &ExitStatus) -> i32 {
    match status {
        ExitStatus::Code(c) => *c,
        ExitStatus::Signal(s) => 128 + s,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bare name is looked up on PATH, a path is taken as given, and a
    /// name on no PATH directory is refused by name; a status is the exit
    /// code a shell gives.
    #[test]
    fn programs_resolve_like_the_kernel_and_statuses_exit_like_a_shell() {
        assert_eq!(resolve(&"./x".into()).unwrap(), PathBuf::from("./x"));
        let sh = resolve(&"sh".into()).unwrap();
        assert!(sh.is_absolute() && sh.ends_with("sh"), "{}", sh.display());
        let e = resolve(&"no-such-program-coloc".into()).unwrap_err();
        assert_eq!(e.to_string(), "no-such-program-coloc: not found on PATH");
        assert_eq!(default_name(Path::new("/usr/bin/xz")), "xz");
        assert_eq!(exit_code(&ExitStatus::Code(3)), 3);
        assert_eq!(exit_code(&ExitStatus::Signal(9)), 137);
        assert_eq!(exit_code(&ExitStatus::Unknown), 1);
    }
}
