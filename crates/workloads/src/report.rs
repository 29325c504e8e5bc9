//! The kernels' output contract, parsed.
//!
//! Every kernel ends its standard output with exactly one
//! `coloc-metric: <number> <unit>` line (higher is better) and one
//! `coloc-threads: <n>` line (the team size of its first parallel region).
//! Workload files can match [`METRIC_REGEX`] like any app metric; Rust code
//! uses [`parse_report`].

use crate::KernelError;

/// Regex whose first group is the metric, for workload files' app-metric field.
pub const METRIC_REGEX: &str = r"coloc-metric: ([0-9.eE+-]+)";

/// Regex whose first group is the team size the kernel ran with.
pub const THREADS_REGEX: &str = r"coloc-threads: ([0-9]+)";

const METRIC: &str = "coloc-metric:";
const THREADS: &str = "coloc-threads:";

/// What a kernel reported about its run.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The kernel's throughput, higher is better.
    pub metric: f64,
    /// The metric's unit, e.g. `GB/s`.
    pub unit: String,
    /// Threads in the kernel's first parallel region.
    pub threads: u32,
}

/// Reads the contract lines from a kernel's standard output.
pub fn parse_report(stdout: &str) -> Result<Report, KernelError> {
    let metric_line = only_line(stdout, METRIC)?;
    let mut fields = metric_line.split_whitespace();
    let (metric, unit) = match (fields.next(), fields.next(), fields.next()) {
        (Some(value), Some(unit), None) => (parse::<f64>(metric_line, value)?, unit.to_owned()),
        _ => return Err(bad(metric_line, "expected a number and a unit")),
    };
    if !metric.is_finite() {
        return Err(bad(metric_line, "the metric is not finite"));
    }
    let threads_line = only_line(stdout, THREADS)?;
    let threads = parse(threads_line, threads_line.trim())?;
    Ok(Report {
        metric,
        unit,
        threads,
    })
}

/// The rest of the single line starting with `prefix`.
fn only_line<'a>(text: &'a str, prefix: &'static str) -> Result<&'a str, KernelError> {
    let found: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix(prefix))
        .collect();
    match found.as_slice() {
        [rest] => Ok(rest),
        _ => Err(KernelError::ReportLines {
            prefix,
            count: found.len(),
        }),
    }
}

fn parse<T: std::str::FromStr>(line: &str, value: &str) -> Result<T, KernelError>
where
    T::Err: std::fmt::Display,
{
    value.parse().map_err(|e: T::Err| bad(line, &e.to_string()))
}

fn bad(line: &str, reason: &str) -> KernelError {
    KernelError::ReportValue {
        line: line.trim().to_owned(),
        reason: reason.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_contract_lines() {
        let out = "stream: 3 x 1 MiB ...\ncoloc-metric: 1.2e+01 GB/s\ncoloc-threads: 2\n";
        assert_eq!(
            parse_report(out).unwrap(),
            Report {
                metric: 12.0,
                unit: "GB/s".into(),
                threads: 2
            }
        );
    }

    #[test]
    fn rejects_missing_duplicate_and_malformed_lines() {
        let cases = [
            ("coloc-threads: 1\n", "0 \"coloc-metric:\" lines"),
            (
                "coloc-metric: 1 x\ncoloc-metric: 2 x\ncoloc-threads: 1\n",
                "2 \"coloc-metric:\" lines",
            ),
            ("coloc-metric: 1 GB/s\n", "0 \"coloc-threads:\" lines"),
            ("coloc-metric: fast GB/s\ncoloc-threads: 1\n", "fast GB/s"),
            ("coloc-metric: 3\ncoloc-threads: 1\n", "a number and a unit"),
            ("coloc-metric: inf x\ncoloc-threads: 1\n", "not finite"),
            ("coloc-metric: 3 x\ncoloc-threads: -1\n", "\"-1\""),
        ];
        for (out, expected) in cases {
            let err = parse_report(out).unwrap_err().to_string();
            assert!(err.contains(expected), "{out:?} gave {err:?}");
        }
    }
}
