//! Where runs write their output by default, and where text for people goes.

use std::io::{self, Write};
use std::path::PathBuf;
use std::time::SystemTime;

/// `coloc-runs/<workload>/<what>-<UTC timestamp>`, relative to the current directory,
/// so that runs are kept and never overwrite each other.
pub fn default_out_dir(workload: &str, what: &str) -> PathBuf {
    let stamp = humantime::format_rfc3339_seconds(SystemTime::now())
        .to_string()
        .replace(':', "");
    PathBuf::from("coloc-runs")
        .join(sanitize(workload))
        .join(format!("{}-{stamp}", sanitize(what)))
}

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Where text for people goes: stdout, or stderr when stdout carries JSON.
pub fn text_out(json: bool) -> Box<dyn Write> {
    if json {
        Box::new(io::stderr())
    } else {
        Box::new(io::stdout())
    }
}
