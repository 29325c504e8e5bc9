//! The control socket's protocol (docs/service.md, Protocol): one JSON object
//! per line each way, every request carrying the protocol version `v`, so that
//! a client and a daemon of different versions refuse each other clearly
//! instead of misreading fields.

use coloc_model::trace::ExitStatus;
use coloc_model::{AppClass, AppPlan, MemPolicy};
use serde::{Deserialize, Serialize};

/// The protocol version this build speaks.
pub const PROTOCOL_VERSION: u32 = 1;

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
    /// Admit and manage `pid`, a child of the caller waiting to exec `argv`
    /// (`coloc exec`). The reply comes when the policy admits it.
    Exec {
        name: String,
        class: AppClass,
        malleable: bool,
        /// Threads it starts with (`OMP_NUM_THREADS`); 0 for one per CPU.
        threads: u32,
        pid: u32,
        argv: Vec<String>,
    },
    /// On the connection of an admitted `exec`: how the command ended.
    Exited { status: ExitStatus },
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
    /// Switch the policy at once (root, or the user running the daemon).
    SetPolicy { policy: String },
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
    },
    /// `attach`: managed as app `app`.
    Attached {
        app: u32,
        notes: Vec<String>,
    },
    /// `release`: let go.
    Released {
        app: u32,
    },
    Status(Status),
    /// The policy in force now.
    Policy {
        policy: String,
    },
    /// A refusal or failure, said in full.
    Error {
        message: String,
    },
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
    /// How it came: `exec`, `attach`, `readopted`.
    pub kind: String,
    /// Seconds since it arrived.
    pub age_secs: f64,
    pub threads: usize,
    /// The plan in force for it.
    pub plan: Option<AppPlan>,
    /// The CPUs it allowed itself (coloc places it within them).
    pub allowed: Option<String>,
    pub notes: Vec<String>,
}
