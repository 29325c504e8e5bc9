//! A co-run rate from one record: how much of its time beside others an
//! instance lost against its fastest solo time (docs/knowledge.md). Both the
//! derivation of rates and their checking against what happened next read it.

use super::Record;

/// Overlaps shorter than this (weighted seconds) say too little to record a
/// rate: half a second, five epochs at the default epoch.
pub const MIN_SHARED_SECS: f64 = 0.5;

/// `r`'s rate beside others with its app's fastest solo time `fastest`: None
/// below [`MIN_SHARED_SECS`] shared, or outside (0, 2].
pub fn rate(r: &Record, fastest: f64) -> Option<f64> {
    if !r.ended || r.weighted_secs < MIN_SHARED_SECS {
        return None;
    }
    let alone = r.wall_secs - r.shared_secs;
    let rate = (fastest - alone) / r.weighted_secs;
    (rate > 0.0 && rate <= 2.0).then_some(rate)
}
