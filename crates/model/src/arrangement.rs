//! Under which arrangement of the machine something was measured (a learned
//! record, docs/knowledge.md): alone, partitioned, left to Linux, pinned. A
//! leaf: the knowledge store keeps it with each record, and the reasons of a
//! decision name it.

use std::fmt;

use serde::{Deserialize, Serialize};

/// How the machine was shared while a record was measured: what the
/// placement in force for the instance was, over the time it counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrangement {
    /// No other instance ran while it did, and it could use every CPU: its
    /// time is a solo time.
    Alone,
    /// No other instance ran, but it was kept to fewer CPUs than the machine
    /// has.
    Confined,
    /// Beside others, on CPUs no other running app could use.
    Partitioned,
    /// Beside others, placed by Linux (no placement, or every CPU).
    Linux,
    /// Beside others, on CPUs some other app could use too.
    Pinned,
    /// No one arrangement held for [`HELD`](crate::knowledge::HELD) of the time.
    Mixed,
}

impl Arrangement {
    pub fn as_str(self) -> &'static str {
        match self {
            Arrangement::Alone => "alone",
            Arrangement::Confined => "confined",
            Arrangement::Partitioned => "partitioned",
            Arrangement::Linux => "linux",
            Arrangement::Pinned => "pinned",
            Arrangement::Mixed => "mixed",
        }
    }
}

impl fmt::Display for Arrangement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
