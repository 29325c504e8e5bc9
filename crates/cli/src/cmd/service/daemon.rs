//! `coloc daemon`: the node service. In the foreground it logs to stderr
//! (what systemd keeps in the journal); without `--foreground` it starts
//! itself detached, logging to `daemon.log` in the journal directory, and
//! returns once the socket answers.

use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use coloc_daemon::client::root_dir;
use coloc_daemon::requests::PolicyFactory;
use coloc_daemon::DaemonOptions;
use coloc_harness::context::service_policy;
use coloc_harness::Host;
use coloc_linux::cgroup::Cpusets;
use coloc_linux::machine::SLICE;

use super::client::SocketArgs;
use crate::choice::Choice;
use crate::db::DbArgs;
use crate::host::{journal_dir, stop_flag};

#[derive(Debug, Args)]
pub struct DaemonArgs {
    /// Stay in the foreground, logging to stderr (for systemd and for trying it out).
    #[arg(long)]
    pub foreground: bool,
    /// The policy to start with (`coloc policies`); `coloc policy set` switches it.
    #[arg(long, default_value = "native")]
    pub policy: String,
    /// The policy's epoch.
    #[arg(long, default_value = "100ms", value_parser = crate::parse_epoch)]
    pub epoch: Duration,
    /// The file the managed apps are saved in for a successor [default:
    /// daemon.state in the journal directory].
    #[arg(long, value_name = "PATH")]
    pub state: Option<PathBuf>,
    /// Place each app in a cpuset cgroup of its own, `coloc.slice/<app>`,
    /// with the plan's CPUs and memory nodes (cgroup v2 with the cpuset
    /// controller, else cgroup v1's cpuset hierarchy); without either it says
    /// so and places apps by affinity.
    #[arg(long)]
    pub cgroup_slice: bool,
    /// Also write everything the loop records to this trace file.
    #[arg(long, value_name = "PATH")]
    pub trace: Option<PathBuf>,
    /// Learn nothing from the apps it manages (docs/knowledge.md).
    #[arg(long)]
    pub no_learning: bool,
    /// The store what is learned of each program goes to (and profiles are
    /// read from).
    #[command(flatten)]
    pub db: DbArgs,
    /// Serve Prometheus metrics at http://ADDR/metrics (a loopback address
    /// and port, `127.0.0.1:9187`; docs/service.md, Metrics).
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<std::net::SocketAddr>,
    #[command(flatten)]
    pub socket: SocketArgs,
    /// The log file a detached daemon's output goes to, rotated while it
    /// runs (set by `coloc daemon` without `--foreground`).
    #[arg(long, value_name = "PATH", hide = true)]
    pub log_file: Option<PathBuf>,
}

/// A fresh policy `name` for the service (`oracle` refused with why).
fn make_policy(
    topology: &coloc_model::Topology,
    name: &str,
) -> Result<Box<dyn coloc_policy::Policy>> {
    Choice::named(name)?;
    let host = Host {
        topology: topology.clone(),
        process_events: true,
        journal_dir: journal_dir()?,
    };
    Ok(service_policy(host, name)?)
}

pub fn main(a: DaemonArgs) -> Result<()> {
    if !a.foreground {
        return detach(&a);
    }
    if let Some(log) = &a.log_file {
        coloc_daemon::log::rotate_while_running(log.clone());
    }
    let host = crate::host::start()?;
    let policy = make_policy(&host.topology, &a.policy)?;
    let topology = host.topology.clone();
    let factory: PolicyFactory =
        Arc::new(move |name: &str| make_policy(&topology, name).map_err(|e| format!("{e:#}")));
    let opts = DaemonOptions {
        socket: a.socket.daemon_path()?,
        state: match &a.state {
            Some(s) => s.clone(),
            None => journal_dir()?.join("daemon.state"),
        },
        epoch: a.epoch,
        stop: stop_flag()?,
        trace: a.trace.clone(),
        limits: Default::default(),
        knowledge: (!a.no_learning).then(|| a.db.path()),
        metrics: a.metrics,
    };
    let mut options = host.options(&journal_dir()?.join("daemon-out"));
    if nix::unistd::geteuid().is_root() {
        // Other users' malleable programs preload the shim from here.
        options.shim_dir = Some(root_dir()?);
    }
    if a.cgroup_slice {
        match Cpusets::detect(Path::new("/proc")) {
            Ok(sets) => {
                eprintln!(
                    "coloc: placing apps in cpuset cgroups under {} ({})",
                    sets.dir(Path::new(SLICE)).display(),
                    sets.describe()
                );
                options.cgroup_slice = Some(sets);
            }
            Err(e) => eprintln!("coloc: --cgroup-slice: {e}; placing apps by affinity only"),
        }
    }
    let linux = host.machine_with(options)?;
    let summary = coloc_daemon::run(linux, policy, factory, &opts, |s| eprintln!("coloc: {s}"))?;
    eprintln!(
        "coloc: daemon stopped; {} app(s) managed, every setting restored",
        summary.instances
    );
    Ok(())
}

/// Starts `coloc daemon --foreground` detached (new session, output to the
/// log) and waits until its socket answers.
fn detach(a: &DaemonArgs) -> Result<()> {
    let log_path = journal_dir()?.join("daemon.log");
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&log_path)
        .with_context(|| format!("opening {}", log_path.display()))?;
    let mut cmd = std::process::Command::new(std::env::current_exe()?);
    cmd.args(["daemon", "--foreground", "--policy", &a.policy])
        .arg("--log-file")
        .arg(&log_path)
        .arg("--epoch")
        .arg(format!("{}ms", a.epoch.as_millis()));
    if a.cgroup_slice {
        cmd.arg("--cgroup-slice");
    }
    if let Some(t) = &a.trace {
        cmd.arg("--trace").arg(t);
    }
    if a.no_learning {
        cmd.arg("--no-learning");
    }
    if let Some(db) = &a.db.db {
        cmd.arg("--db").arg(db);
    }
    if let Some(s) = &a.socket.socket {
        cmd.arg("--socket").arg(s);
    }
    if let Some(s) = &a.state {
        cmd.arg("--state").arg(s);
    }
    cmd.stdin(std::process::Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    // SAFETY: setsid is async-signal-safe and touches only the child.
    unsafe {
        cmd.pre_exec(|| {
            nix::unistd::setsid()
                .map(drop)
                .map_err(std::io::Error::from)
        });
    }
    let mut child = cmd.spawn().context("starting the daemon")?;
    let socket = a.socket.client_path()?;
    let until = Instant::now() + Duration::from_secs(30);
    while Instant::now() < until {
        if let Some(status) = child.try_wait()? {
            bail!(
                "the daemon exited at start ({status}); see {}",
                log_path.display()
            );
        }
        if std::os::unix::net::UnixStream::connect(&socket).is_ok() {
            println!(
                "coloc daemon {} listening on {} (log: {})",
                child.id(),
                socket.display(),
                log_path.display()
            );
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bail!(
        "the daemon did not answer on {} within 30 s",
        socket.display()
    )
}
