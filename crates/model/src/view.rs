//! What a policy sees (docs/architecture.md, The loop): the topology, every app that has arrived
//! and not yet left, and the latest raw observations.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::ids::{AppId, Tid};
use crate::observation::Observation;
use crate::plan::AppPlan;
use crate::topology::Topology;
use crate::workload::AppSpec;

/// Where an app instance is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AppState {
    /// Arrived, waiting for the policy to admit it.
    Pending,
    Running,
}

/// One app instance as the policy sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct AppView {
    pub id: AppId,
    pub spec: Arc<AppSpec>,
    pub state: AppState,
    pub arrived_at: Duration,
    pub started_at: Option<Duration>,
    /// Threads the app starts with on this machine (`spec.threads` resolved).
    pub threads_requested: u32,
    /// Its live threads (all processes), oldest first. Empty while pending.
    pub threads: Vec<Tid>,
    /// The plan last applied to it, if any.
    pub current: Option<AppPlan>,
}

impl AppView {
    pub fn is_running(&self) -> bool {
        self.state == AppState::Running
    }
}

/// Why the policy is being asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "app")]
pub enum Trigger {
    Arrival(AppId),
    Exit(AppId),
    ThreadsChanged(AppId),
    Epoch,
}

/// Everything a policy may look at. Policies are pure functions of this (plus
/// their own state), so they run the same on Linux and in the simulator.
#[derive(Clone, Copy, Debug)]
pub struct View<'a> {
    pub now: Duration,
    pub trigger: Trigger,
    pub topology: &'a Topology,
    /// Pending and running apps, in arrival order.
    pub apps: &'a [AppView],
    /// The latest observation and the one before it (rates need two samples).
    pub last: Option<&'a Observation>,
    pub prev: Option<&'a Observation>,
}

impl<'a> View<'a> {
    pub fn running(&self) -> impl Iterator<Item = &'a AppView> {
        self.apps.iter().filter(|a| a.is_running())
    }

    pub fn pending(&self) -> impl Iterator<Item = &'a AppView> {
        self.apps.iter().filter(|a| a.state == AppState::Pending)
    }

    /// The team size app `id`'s OpenMP runtime reported in the latest
    /// observation, if it was inside a parallel region then; None otherwise
    /// (serial, not observed, or no DoP channel).
    pub fn region_team(&self, id: AppId) -> Option<u32> {
        self.last
            .and_then(|o| o.app(id))
            .and_then(|s| s.omp.as_ref())
            .filter(|o| o.in_parallel)
            .map(|o| o.team_size)
    }
}
