//! `coloc status`, `coloc attach`, `coloc release` and `coloc policy set`:
//! one request each to the daemon (docs/service.md).

use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use coloc_daemon::protocol::{AppStatus, Reply, Request, Status};
use coloc_model::{AppPlan, Placement};

use super::client::{ask, SocketArgs};
use super::exec::Class;
use super::printable::{printable, TEXT_WIDTH};

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub socket: SocketArgs,
}

#[derive(Debug, Args)]
pub struct AttachArgs {
    /// The running process (with its descendants and threads).
    pub pid: u32,
    /// The app's name (1 to 64 letters, digits, `.`, `_`, `-`) [default:
    /// the process's own name].
    #[arg(long, value_parser = super::exec::app_name)]
    pub name: Option<String>,
    #[arg(long, value_enum, default_value_t = Class::Batch)]
    pub class: Class,
    #[command(flatten)]
    pub socket: SocketArgs,
}

#[derive(Debug, Args)]
pub struct ReleaseArgs {
    pub pid: u32,
    #[command(flatten)]
    pub socket: SocketArgs,
}

#[derive(Debug, Args)]
pub struct PolicyArgs {
    #[command(subcommand)]
    pub command: PolicyCommand,
    #[command(flatten)]
    pub socket: SocketArgs,
}

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Switch the daemon's policy now (root or the daemon's user).
    Set { policy: String },
}

/// The daemon's status.
pub fn status(socket: &SocketArgs) -> Result<Status> {
    match ask(socket, Request::Status)? {
        Reply::Status(s) => Ok(s),
        other => bail!("unexpected answer from the daemon: {other:?}"),
    }
}

pub fn main(a: StatusArgs) -> Result<()> {
    let s = status(&a.socket)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&s)?);
    } else {
        print!("{}", table(&s));
    }
    Ok(())
}

/// A plan's CPUs, DoP, memory and scheduling settings in one cell each.
pub fn plan_cells(p: Option<&AppPlan>) -> [String; 4] {
    let Some(p) = p else {
        return ["-".into(), "-".into(), "-".into(), "-".into()];
    };
    let cpus = match &p.placement {
        Placement::Unmanaged => "any".into(),
        other => other.cpus().to_list(),
    };
    let dop = p.dop.map_or("-".into(), |d| d.to_string());
    let mem = format!("{:?}", p.memory).to_lowercase();
    let sched = match (p.sched.nice, p.sched.slice_us) {
        (None, None) => "-".into(),
        (n, s) => format!(
            "nice {} slice {}",
            n.map_or("-".into(), |n| n.to_string()),
            s.map_or("-".into(), |s| format!("{s}us"))
        ),
    };
    [cpus, dop, mem, sched]
}

/// Longest name shown (names are at most 64 characters).
const NAME_WIDTH: usize = 64;

/// The columns of an app's row, in [`row`]'s order.
pub const COLUMNS: [&str; 11] = [
    "app", "name", "pid", "kind", "state", "age", "threads", "cpus", "dop", "memory", "sched",
];

/// An app's row of `coloc status` and `coloc top`.
pub fn row(a: &AppStatus) -> Vec<String> {
    let [cpus, dop, mem, sched] = plan_cells(a.plan.as_ref());
    vec![
        a.app.to_string(),
        printable(&a.name, NAME_WIDTH),
        a.pid.to_string(),
        printable(&a.kind, NAME_WIDTH),
        printable(&a.state, NAME_WIDTH),
        format!("{:.0}s", a.age_secs),
        a.threads.to_string(),
        cpus,
        dop,
        mem,
        sched,
    ]
}

/// The status as a plain-text table.
pub fn table(s: &Status) -> String {
    let mut out = format!(
        "daemon {} up {:.0}s, policy {}, CPUs {}\n",
        s.daemon_pid,
        s.uptime_secs,
        printable(&s.policy, NAME_WIDTH),
        printable(&s.cpus, TEXT_WIDTH)
    );
    let head = COLUMNS;
    let rows: Vec<Vec<String>> = s.apps.iter().map(row).collect();
    let widths: Vec<usize> = (0..head.len())
        .map(|i| {
            rows.iter()
                .map(|r| r[i].len())
                .chain([head[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: Vec<String>| {
        let mut l = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect::<Vec<_>>()
            .join("  ");
        l.truncate(l.trim_end().len());
        l + "\n"
    };
    out += &line(head.iter().map(|h| h.to_string()).collect());
    for r in rows {
        out += &line(r);
    }
    if s.apps.is_empty() {
        out += "(no managed apps)\n";
    }
    if !s.last_reason.is_empty() {
        out += &format!("last decision: {}\n", printable(&s.last_reason, TEXT_WIDTH));
    }
    out
}

pub fn attach(a: AttachArgs) -> Result<()> {
    match ask(
        &a.socket,
        Request::Attach {
            pid: a.pid,
            name: a.name,
            class: a.class.into(),
        },
    )? {
        Reply::Attached { app, notes } => {
            println!("managing process {} as app {app}", a.pid);
            for n in notes {
                println!("note: {}", printable(&n, TEXT_WIDTH));
            }
            Ok(())
        }
        other => bail!("unexpected answer from the daemon: {other:?}"),
    }
}

pub fn release(a: ReleaseArgs) -> Result<()> {
    match ask(&a.socket, Request::Release { pid: a.pid })? {
        Reply::Released { app } => {
            println!(
                "released process {} (app {app}): its settings are back",
                a.pid
            );
            Ok(())
        }
        other => bail!("unexpected answer from the daemon: {other:?}"),
    }
}

pub fn policy(a: PolicyArgs) -> Result<()> {
    let PolicyCommand::Set { policy } = a.command;
    match ask(&a.socket, Request::SetPolicy { policy })? {
        Reply::Policy { policy } => {
            println!("the daemon's policy is now {policy}");
            Ok(())
        }
        other => bail!("unexpected answer from the daemon: {other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use coloc_model::AppClass;

    use super::*;

    /// Escape codes, newlines and huge names from a daemon reach root's
    /// terminal escaped and cut, and the table does not panic on them.
    #[test]
    fn names_with_escape_codes_and_huge_names_are_printed_escaped_and_cut() {
        assert_eq!(printable("ok-name_1.2", 64), "ok-name_1.2");
        assert_eq!(printable("a\u{1b}[2Jb\nc", 64), "a\\u{1b}[2Jb\\nc");
        assert_eq!(printable("x\u{202e}y", 64), "x\\u{202e}y");
        assert_eq!(
            printable(&"n".repeat(70_000), 64),
            format!("{}...", "n".repeat(64))
        );
        let app = |name: &str| AppStatus {
            app: 0,
            name: name.into(),
            pid: 1,
            uid: 0,
            class: AppClass::Batch,
            state: "running".into(),
            kind: "exec".into(),
            job: None,
            age_secs: 0.0,
            threads: 1,
            plan: None,
            allowed: None,
            notes: vec![],
        };
        let s = Status {
            apps: vec![app(&"n".repeat(70_000)), app("\u{1b}]0;owned\u{7}")],
            last_reason: "r\u{1b}[31m".into(),
            ..Status::default()
        };
        let text = table(&s);
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{7}'),
            "{text}"
        );
        assert!(text.lines().all(|l| l.len() < 400), "{text}");
    }
}
