//! The control socket's protocol (docs/service.md, Protocol): one JSON object
//! per line each way, every request carrying the protocol version `v`, so that
//! a client and a daemon of different versions refuse each other clearly
//! instead of misreading fields.
//!
//! Every local user may send anything here to a root process, so a request is
//! read by one pure function, [`parse_request`]: bytes in, a [`Request`]
//! whose every field is within bounds (docs/service.md, Limits) or an error
//! naming the field, out. It touches nothing but its input, so it is fuzzed
//! without a socket (`crates/fuzz`, target `request`).

use coloc_model::trace::ExitStatus;
use coloc_model::workload::{valid_app_name, MAX_THREADS};
use coloc_model::{AppClass, AppPlan, MemPolicy};
use serde::{Deserialize, Serialize};

/// The protocol version this build speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// Longest request line, newline included (docs/service.md, Limits): an
/// `exec` of a command whose arguments fill it is refused, and `coloc exec`
/// sends only as many arguments as fit ([`fit_argv`]).
pub const MAX_REQUEST: usize = 64 * 1024;

/// Most arguments an `exec` request may name.
pub const MAX_ARGS: usize = 4096;

/// Largest pid Linux hands out (`PID_MAX_LIMIT` on 64-bit kernels, 2^22).
pub const MAX_PID: u32 = 1 << 22;

/// Longest policy name a `set_policy` request may carry.
pub const MAX_POLICY_NAME: usize = 64;

/// A request, with the version it was written for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    pub v: u32,
    #[serde(flatten)]
    pub request: Request,
}

/// What a client asks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "request", rename_all = "snake_case")]
pub enum Request {
    /// Admit and manage `pid`, waiting to exec `argv`: a child of the caller
    /// (`coloc exec`), or the caller itself (a Slurm task registered by the
    /// SPANK plugin, docs/slurm.md). The reply comes when the policy admits it.
    Exec {
        name: String,
        class: AppClass,
        malleable: bool,
        /// Threaded runtimes get the team at launch through their variables
        /// (`cap_threads`, docs/workload-format.md).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        cap_threads: bool,
        /// Threads it starts with (`OMP_NUM_THREADS`); 0 for one per CPU.
        threads: u32,
        pid: u32,
        argv: Vec<String>,
        /// The batch job and step it belongs to, shown in `coloc status`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        job: Option<JobStep>,
    },
    /// How the command ended: on the connection of an admitted `exec`
    /// (without `pid`), or on a connection of its own for a process that
    /// registered itself (`pid` given; the SPANK plugin at task exit).
    Exited {
        status: ExitStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pid: Option<u32>,
    },
    /// Manage an already running process tree.
    Attach {
        pid: u32,
        name: Option<String>,
        class: AppClass,
    },
    /// Stop managing `pid`: its settings are put back, it goes on running.
    Release { pid: u32 },
    /// The managed apps (a user sees their own; root sees all).
    Status,
    /// What applied to the apps named `app` (or numbered so), running or
    /// ended last, with the reasons (`coloc why APP`; a user sees their own).
    Why { app: String },
    /// Switch the policy at once (root, or the user running the daemon).
    SetPolicy { policy: String },
}

/// A batch system's job and step: Slurm's job id, and its step as Slurm names
/// it (a number, `batch`, `extern` or `interactive`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobStep {
    pub id: u32,
    pub step: String,
}

impl std::fmt::Display for JobStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.id, self.step)
    }
}

/// The daemon's answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum Reply {
    /// `exec`: run the command now, with these environment changes.
    Admitted {
        app: u32,
        set_env: Vec<(String, String)>,
        remove_env: Vec<String>,
        /// `OMP_NUM_THREADS` for it.
        threads: u32,
        /// The memory policy (and nodes) it sets itself before it execs the
        /// command; absent when the plan leaves it as it is.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        memory: Option<(MemPolicy, Vec<u32>)>,
        /// Things the user should know (DoP not managed, and why).
        notes: Vec<String>,
        /// What its program holds and which levers act on it, when the
        /// daemon checked it (`--malleable`, `--cap-threads`; docs/signals.md,
        /// Runtimes and levers).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        levers: Option<coloc_model::reason::levers::Levers>,
    },
    /// `attach`: managed as app `app`.
    Attached {
        app: u32,
        notes: Vec<String>,
    },
    /// `release`, or a self-registered process's `exited`: let go.
    Released {
        app: u32,
    },
    Status(Status),
    /// `why`: each matching app's history.
    Why {
        apps: Vec<AppWhy>,
    },
    /// The policy in force now.
    Policy {
        policy: String,
    },
    /// A refusal or failure, said in full.
    Error {
        message: String,
    },
}

/// Why a request line was refused; the message names the field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    #[error("the request is longer than {MAX_REQUEST} bytes")]
    TooLong,
    #[error("not a JSON request: {0}")]
    NotJson(String),
    #[error("field `v` (the protocol version) is missing")]
    NoVersion,
    #[error("protocol version {0} is not spoken here (this daemon speaks {PROTOCOL_VERSION})")]
    Version(u64),
    #[error("bad request: {0}")]
    Bad(String),
    #[error("field `{field}`: {why}")]
    Field { field: &'static str, why: String },
}

fn field(field: &'static str, why: impl Into<String>) -> RequestError {
    RequestError::Field {
        field,
        why: why.into(),
    }
}

/// Reads one request line (with or without its newline): its version, then
/// its fields, each checked as a workload file's are. Pure: it reads only
/// `line`.
pub fn parse_request(line: &[u8]) -> Result<Request, RequestError> {
    if line.len() > MAX_REQUEST {
        return Err(RequestError::TooLong);
    }
    let value: serde_json::Value =
        serde_json::from_slice(line).map_err(|e| RequestError::NotJson(e.to_string()))?;
    match value.get("v") {
        None => return Err(RequestError::NoVersion),
        Some(v) => match v.as_u64() {
            Some(v) if v == u64::from(PROTOCOL_VERSION) => {}
            Some(v) => return Err(RequestError::Version(v)),
            None => return Err(field("v", "expected a whole number")),
        },
    }
    let request = serde_json::from_value::<Envelope>(value)
        .map_err(|e| RequestError::Bad(e.to_string()))?
        .request;
    request.validate()?;
    Ok(request)
}

fn check_pid(pid: u32) -> Result<(), RequestError> {
    if pid == 0 || pid > MAX_PID {
        return Err(field(
            "pid",
            format!("expected a process id from 1 to {MAX_PID}, found {pid}"),
        ));
    }
    Ok(())
}

fn check_name(name: &str) -> Result<(), RequestError> {
    valid_app_name(name).map_err(|why| field("name", why))
}

impl Request {
    /// Every field within its bounds (docs/service.md, Limits).
    pub fn validate(&self) -> Result<(), RequestError> {
        match self {
            Request::Exec {
                name,
                threads,
                pid,
                argv,
                job,
                ..
            } => {
                check_name(name)?;
                check_pid(*pid)?;
                if *threads > MAX_THREADS {
                    return Err(field(
                        "threads",
                        format!("expected 0 to {MAX_THREADS} (0 = one per CPU), found {threads}"),
                    ));
                }
                check_argv(argv)?;
                job.as_ref().map_or(Ok(()), check_job)
            }
            Request::Exited { status, pid } => {
                pid.map_or(Ok(()), check_pid)?;
                match status {
                    ExitStatus::Code(_) | ExitStatus::Signal(_) | ExitStatus::Unknown => Ok(()),
                    ExitStatus::FailedToStart(_) => Err(field(
                        "status",
                        "a client reports a code, a signal or unknown",
                    )),
                }
            }
            Request::Attach { pid, name, .. } => {
                check_pid(*pid)?;
                name.as_deref().map_or(Ok(()), check_name)
            }
            Request::Release { pid } => check_pid(*pid),
            Request::Status => Ok(()),
            Request::Why { app } => match app.parse::<u32>() {
                Ok(_) => Ok(()),
                Err(_) => valid_app_name(app).map_err(|why| field("app", why)),
            },
            Request::SetPolicy { policy } => {
                let ok = !policy.is_empty()
                    && policy.len() <= MAX_POLICY_NAME
                    && policy
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
                if ok {
                    Ok(())
                } else {
                    Err(field(
                        "policy",
                        format!(
                            "expected a policy name (1 to {MAX_POLICY_NAME} letters, digits, `-`, `_` or `.`)"
                        ),
                    ))
                }
            }
        }
    }
}

/// Longest step name a `job` may carry (Slurm's are a number or a word:
/// `batch`, `extern`, `interactive`).
pub const MAX_STEP: usize = 16;

fn check_job(job: &JobStep) -> Result<(), RequestError> {
    let ok = !job.step.is_empty()
        && job.step.len() <= MAX_STEP
        && job.step.chars().all(|c| c.is_ascii_alphanumeric());
    if ok {
        Ok(())
    } else {
        Err(field(
            "job",
            format!(
                "expected a step of 1 to {MAX_STEP} letters or digits, found {:?}",
                job.step
            ),
        ))
    }
}

fn check_argv(argv: &[String]) -> Result<(), RequestError> {
    if argv.is_empty() || argv.len() > MAX_ARGS {
        return Err(field(
            "argv",
            format!("expected 1 to {MAX_ARGS} arguments, found {}", argv.len()),
        ));
    }
    if argv[0].is_empty() {
        return Err(field("argv", "the program (argv[0]) is empty"));
    }
    if argv.iter().any(|a| a.contains('\0')) {
        return Err(field("argv", "an argument holds a NUL byte"));
    }
    Ok(())
}

/// The leading arguments of `argv` whose request line fits [`MAX_REQUEST`]
/// with room to spare (the daemon keeps only the program; the rest is for
/// the record): the program always, then as many as fit in half the limit.
pub fn fit_argv(argv: &[String]) -> Vec<String> {
    let mut used = 0;
    argv.iter()
        .take(MAX_ARGS)
        .enumerate()
        .take_while(|(k, a)| {
            // JSON may escape each byte as 6 (`\u0000`).
            used += a.len() * 6 + 3;
            *k == 0 || used <= MAX_REQUEST / 2
        })
        .map(|(_, a)| a.clone())
        .collect()
}

/// What `coloc status` shows.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Status {
    pub policy: String,
    pub daemon_pid: u32,
    /// Seconds since the daemon started.
    pub uptime_secs: f64,
    /// CPUs coloc may use (the machine's).
    pub cpus: String,
    pub apps: Vec<AppStatus>,
    /// The policy's note on its last decision.
    pub last_reason: String,
}

/// One app's history for `coloc why`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AppWhy {
    pub name: String,
    pub history: coloc_model::explain::history::History,
}

/// One managed (or waiting) app.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AppStatus {
    pub app: u32,
    pub name: String,
    pub pid: u32,
    pub uid: u32,
    pub class: AppClass,
    /// `waiting` (held back by the policy), `running`, `self-managed` (it
    /// placed its threads itself and coloc left their affinity to it).
    pub state: String,
    /// How it came: `exec`, `task` (registered itself: a Slurm task),
    /// `attach`, `readopted`.
    pub kind: String,
    /// The batch job and step it runs for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<JobStep>,
    /// Seconds since it arrived.
    pub age_secs: f64,
    pub threads: usize,
    /// The plan in force for it.
    pub plan: Option<AppPlan>,
    /// The CPUs it allowed itself (coloc places it within them).
    pub allowed: Option<String>,
    pub notes: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exec(fields: &str) -> String {
        format!(
            r#"{{"v":1,"request":"exec","name":"cg","class":"batch","malleable":false,"threads":4,"pid":42,"argv":["/bin/cg"]{fields}}}"#
        )
    }

    /// A good request of each kind reads back as written.
    #[test]
    fn every_kind_of_request_reads_back() {
        let requests = [
            Request::Exec {
                name: "cg".into(),
                class: AppClass::Batch,
                malleable: true,
                cap_threads: false,
                threads: 4096,
                pid: 42,
                argv: vec!["/bin/cg".into(), "".into()],
                job: None,
            },
            Request::Exec {
                name: "job12.batch".into(),
                class: AppClass::Batch,
                malleable: true,
                cap_threads: false,
                threads: 0,
                pid: 43,
                argv: vec!["/spool/job00012/slurm_script".into()],
                job: Some(JobStep {
                    id: 12,
                    step: "batch".into(),
                }),
            },
            Request::Exited {
                status: ExitStatus::Signal(9),
                pid: None,
            },
            Request::Exited {
                status: ExitStatus::Code(0),
                pid: Some(43),
            },
            Request::Attach {
                pid: 1,
                name: None,
                class: AppClass::Latency,
            },
            Request::Release { pid: MAX_PID },
            Request::Status,
            Request::SetPolicy {
                policy: "nupoco".into(),
            },
        ];
        for r in requests {
            let line = serde_json::to_vec(&Envelope {
                v: PROTOCOL_VERSION,
                request: r.clone(),
            })
            .unwrap();
            assert_eq!(parse_request(&line), Ok(r));
        }
    }

    /// Each bad field is refused with its name (docs/service.md, Limits).
    #[test]
    fn a_bad_field_is_refused_naming_it() {
        let long_name = "n".repeat(65);
        let cases: Vec<(String, &str)> = vec![
            (
                exec("").replace(r#""threads":4"#, r#""threads":4294967295"#),
                "field `threads`",
            ),
            (
                exec("").replace(r#""threads":4"#, r#""threads":4097"#),
                "field `threads`",
            ),
            (
                exec("").replace(r#""name":"cg""#, r#""name":"a\u001b[2Jb""#),
                "field `name`",
            ),
            (
                exec("").replace(r#""name":"cg""#, r#""name":"a\nb""#),
                "field `name`",
            ),
            (
                exec("").replace(r#""name":"cg""#, r#""name":"""#),
                "field `name`",
            ),
            (
                exec("").replace("\"cg\"", &format!("\"{long_name}\"")),
                "field `name`",
            ),
            (exec("").replace(r#""pid":42"#, r#""pid":0"#), "field `pid`"),
            (
                exec("").replace(r#""pid":42"#, r#""pid":4194305"#),
                "field `pid`",
            ),
            (exec("").replace(r#"["/bin/cg"]"#, "[]"), "field `argv`"),
            (
                exec("").replace(r#"["/bin/cg"]"#, r#"[""]"#),
                "field `argv`",
            ),
            (
                exec("").replace(r#"["/bin/cg"]"#, r#"["a\u0000b"]"#),
                "field `argv`",
            ),
            (
                r#"{"v":1,"request":"attach","pid":7,"name":"\u0007","class":"batch"}"#.into(),
                "field `name`",
            ),
            (
                r#"{"v":1,"request":"release","pid":0}"#.into(),
                "field `pid`",
            ),
            (
                r#"{"v":1,"request":"set_policy","policy":"a b"}"#.into(),
                "field `policy`",
            ),
            (
                r#"{"v":1,"request":"exited","status":{"kind":"failed_to_start","value":"x"}}"#
                    .into(),
                "field `status`",
            ),
            (exec(r#","job":{"id":12,"step":"b a"}"#), "field `job`"),
            (exec(r#","job":{"id":12,"step":""}"#), "field `job`"),
            (
                r#"{"v":1,"request":"exited","pid":0,"status":{"kind":"code","value":0}}"#.into(),
                "field `pid`",
            ),
            (r#"{"v":"1","request":"status"}"#.into(), "field `v`"),
            (r#"{"v":2,"request":"status"}"#.into(), "protocol version 2"),
            (r#"{"request":"status"}"#.into(), "field `v`"),
            (r#"{"v":1,"request":"reboot"}"#.into(), "bad request"),
            ("[1,2".into(), "not a JSON request"),
        ];
        for (line, want) in cases {
            let e = parse_request(line.as_bytes()).expect_err(&line);
            assert!(e.to_string().contains(want), "{line}: {e}");
        }
    }

    #[test]
    fn a_line_over_the_limit_is_refused_unread() {
        let mut line = exec("").into_bytes();
        line.resize(MAX_REQUEST + 1, b' ');
        assert_eq!(parse_request(&line), Err(RequestError::TooLong));
    }

    /// `coloc exec` keeps the program and as many arguments as fit.
    #[test]
    fn a_long_command_is_cut_to_fit_a_request() {
        let argv: Vec<String> = (0..10_000).map(|k| format!("arg{k:06}")).collect();
        let sent = fit_argv(&argv);
        assert!(
            sent.len() < argv.len() && sent.len() > 100,
            "{}",
            sent.len()
        );
        assert_eq!(sent[..], argv[..sent.len()]);
        let line = serde_json::to_vec(&Envelope {
            v: PROTOCOL_VERSION,
            request: Request::Exec {
                name: "x".into(),
                class: AppClass::Batch,
                malleable: false,
                cap_threads: false,
                threads: 0,
                pid: 1,
                argv: sent,
                job: None,
            },
        })
        .unwrap();
        assert!(parse_request(&line).is_ok());
        let one = vec!["p".repeat(1000)];
        assert_eq!(fit_argv(&one), one);
    }
}
