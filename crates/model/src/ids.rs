//! Identities shared by every layer: which app instance, which thread. They sit
//! apart from the View so that plans, observations and traces can name apps and
//! threads without depending on what a policy sees.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A thread id (the kernel's TID on Linux, a simulated id in the simulator).
pub type Tid = u32;

/// One run of one app of the workload: `app` indexes `Workload::apps`, `rep` counts
/// its repetitions from 0.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
pub struct AppId {
    pub app: u32,
    pub rep: u32,
}

impl fmt::Display for AppId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.app, self.rep)
    }
}
