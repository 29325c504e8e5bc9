//! Durations as integer nanoseconds, the unit of every time in the trace and in
//! observations (`#[serde(with = "nanos")]`): exact, and readable by any JSON
//! tool without a duration format.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serializer};

pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_nanos() as u64)
}

pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    Ok(Duration::from_nanos(u64::deserialize(d)?))
}
