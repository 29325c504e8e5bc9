//! Solo wall times: each app alone on the machine, the denominator of speedup
//! (NuPoCo §7.3 reports Hmean speedup relative to standalone execution).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::table::{finish, fixed, new_table};
use crate::stats::Summary;

/// Solo wall times in seconds per app name, as JSON `{"app": [secs, ...]}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SoloTimes {
    runs: BTreeMap<String, Vec<f64>>,
}

impl SoloTimes {
    /// Records one solo run of `app` that took `secs` seconds.
    pub fn add(&mut self, app: &str, secs: f64) {
        self.runs.entry(app.to_string()).or_default().push(secs);
    }

    /// Mean solo wall time of `app`, if it was measured.
    pub fn mean(&self, app: &str) -> Option<f64> {
        Some(self.summary(app)?.mean)
    }

    fn summary(&self, app: &str) -> Option<Summary> {
        Summary::of(self.runs.get(app)?)
    }

    /// A table: app, runs, mean and standard deviation, by app name.
    pub fn render(&self) -> String {
        let mut table = new_table(&["app", "runs", "mean s", "sd s"]);
        for app in self.runs.keys() {
            let s = self.summary(app);
            table.add_row(vec![
                app.clone(),
                s.map_or(0, |s| s.n).to_string(),
                fixed(s.map(|s| s.mean), 3),
                fixed(s.and_then(|s| s.sd), 3),
            ]);
        }
        finish(&table)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn means_and_table() {
        let mut solo = SoloTimes::default();
        solo.add("stream", 10.0);
        solo.add("stream", 12.0);
        solo.add("ep", 4.0);
        assert_eq!(solo.mean("stream"), Some(11.0));
        assert_eq!(solo.mean("ep"), Some(4.0));
        assert_eq!(solo.mean("cg"), None);
        // sd of [10, 12] = sqrt(2) = 1.414; a single run has none.
        assert_eq!(
            solo.render(),
            "| app    | runs | mean s |  sd s |\n\
             |--------|------|--------|-------|\n\
             | ep     |    1 |  4.000 |     - |\n\
             | stream |    2 | 11.000 | 1.414 |\n"
        );
    }

    #[test]
    fn json_is_a_map_of_runs() {
        let mut solo = SoloTimes::default();
        solo.add("a", 1.5);
        let json = serde_json::to_string(&solo).unwrap();
        assert_eq!(json, r#"{"a":[1.5]}"#);
        assert_eq!(serde_json::from_str::<SoloTimes>(&json).unwrap(), solo);
    }
}
