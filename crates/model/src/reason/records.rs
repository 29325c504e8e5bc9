//! Which learned records a decision rested on, and which it no longer
//! trusts (docs/knowledge.md, Checked against what happened next): the
//! reasons' side of `coloc_model::knowledge::check`.

use serde::{Deserialize, Serialize};

use crate::arrangement::Arrangement;

/// A kind of learned record a decision can rest on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordKind {
    /// A run time alone at one team size (`auto`'s team sizes, admission).
    SoloTime,
    /// A rate beside others, or beside one partner (`auto`'s admission).
    Rate,
    /// How long the program's regions last (the DoP policies' reversible
    /// first).
    Regions,
}

/// Records of one kind of one program, measured under one arrangement,
/// beside one partner (its name when it was one program, None otherwise),
/// at one team size (solo times).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RecordGroup {
    pub kind: RecordKind,
    pub arrangement: Arrangement,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partner: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
}

/// A group of records a decision used: how many of them predict (those
/// that missed are left out), and the newest one's date (seconds since the
/// Unix epoch).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecordsUsed {
    #[serde(flatten)]
    pub group: RecordGroup,
    pub records: u32,
    pub newest_unix: i64,
}

/// One prediction checked: what the records before a record said it would
/// measure, what it measured, and the bounds within which noise alone keeps
/// a measurement (`coloc_model::knowledge::check`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Checked {
    pub predicted: f64,
    pub measured: f64,
    pub low: f64,
    pub high: f64,
    /// The checked record's date (seconds since the Unix epoch).
    pub at_unix: i64,
}

impl Checked {
    /// Whether the measurement fell within the bounds.
    pub fn within(&self) -> bool {
        self.low <= self.measured && self.measured <= self.high
    }

    /// The prediction's error, as a share of the prediction.
    pub fn error(&self) -> f64 {
        if self.predicted == 0.0 {
            return 0.0;
        }
        (self.measured - self.predicted) / self.predicted
    }
}

/// A group no longer used for the program: its latest predictions all
/// missed their bounds (`coloc_model::knowledge::check::MISSES`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecordsDropped {
    #[serde(flatten)]
    pub group: RecordGroup,
    /// Predictions of the group checked, and how many missed.
    pub checks: u32,
    pub missed: u32,
    /// The latest check.
    pub last: Checked,
}

/// What of an app's learned records its decision used, and which groups
/// were set aside for predicting badly.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Records {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub used: Vec<RecordsUsed>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped: Vec<RecordsDropped>,
}

impl Records {
    pub fn is_empty(&self) -> bool {
        self.used.is_empty() && self.dropped.is_empty()
    }
}
