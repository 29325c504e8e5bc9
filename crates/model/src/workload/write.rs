//! Writing a workload back as a workload file.
//!
//! Generated workloads (`coloc gen`: random apps, arrivals and repetitions from a
//! seed, as the papers' dynamic workloads were made) are written as ordinary files
//! so a run can be repeated, edited and shared. The output is the format
//! [`parse_workload`](super::parse_workload) reads, with durations in units rather
//! than the integer milliseconds the `Serialize` impls use for traces and JSON;
//! `parse_workload(f, &to_toml(w)) == w` holds for every valid workload.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{AppClass, MetricSpec, StaticMapping, Workload};
use crate::settings::{MemPolicy, SchedSettings};

/// The file's shape, field order as documented in the format.
#[derive(Debug, Serialize)]
struct FileWorkload<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    epoch: Option<String>,
    app: Vec<FileApp<'a>>,
}

#[derive(Debug, Serialize)]
struct FileApp<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    command: Option<&'a [String]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<&'a str>,
    threads: u32,
    arrive_at: String,
    repeat: u32,
    class: AppClass,
    #[serde(skip_serializing_if = "is_false")]
    malleable: bool,
    #[serde(skip_serializing_if = "is_false")]
    cap_threads: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    cpus: Option<&'a StaticMapping>,
    #[serde(skip_serializing_if = "Option::is_none")]
    memory: Option<MemPolicy>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    env: &'a BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sched: Option<&'a SchedSettings>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metric: Option<&'a MetricSpec>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The workload as a workload file (TOML).
pub fn to_toml(w: &Workload) -> String {
    let file = FileWorkload {
        name: &w.name,
        epoch: w.epoch.map(|d| humantime::format_duration(d).to_string()),
        app: w
            .apps
            .iter()
            .map(|a| FileApp {
                name: &a.name,
                command: a.command.as_deref(),
                model: a.model.as_deref(),
                threads: a.threads,
                arrive_at: humantime::format_duration(a.arrive_at).to_string(),
                repeat: a.repeat,
                class: a.class,
                malleable: a.malleable,
                cap_threads: a.cap_threads,
                cpus: a.cpus.as_ref(),
                memory: a.memory,
                env: &a.env,
                sched: a.sched.as_ref(),
                metric: a.metric.as_ref(),
            })
            .collect(),
    };
    // Every field is a string, integer, bool, array or table of those: the TOML
    // serializer has nothing it could refuse.
    toml::to_string(&file).expect("a workload always serializes to TOML")
}
