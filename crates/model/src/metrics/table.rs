//! Table layout and number formatting shared by the metric reports and the
//! CLI's other tables (stored profiles, calibrations), so every table coloc
//! prints looks the same.
//!
//! Tables are ASCII Markdown: deterministic (comfy-table is built without terminal
//! probing), readable in a terminal and pasteable into an issue or a report.

use std::time::Duration;

use comfy_table::{presets, CellAlignment, Table};
use serde::Serializer;

/// What a cell shows when a figure is not available.
pub const NONE: &str = "-";

/// A table with `header`; every column but the first (a name) is right-aligned.
pub fn new_table(header: &[&str]) -> Table {
    let mut table = Table::new();
    table
        .load_preset(presets::ASCII_MARKDOWN)
        .set_header(header.to_vec());
    for column in table.column_iter_mut().skip(1) {
        column.set_cell_alignment(CellAlignment::Right);
    }
    table
}

/// The table's text without trailing spaces, ending with a newline.
pub fn finish(table: &Table) -> String {
    format!("{}\n", table.trim_fmt())
}

/// `v` with `decimals` fixed decimals, or [`NONE`]. Non-finite values are shown
/// as [`NONE`] too, so no table ever prints NaN or inf.
pub fn fixed(v: Option<f64>, decimals: usize) -> String {
    match v.filter(|x| x.is_finite()) {
        Some(x) => format!("{x:.decimals$}"),
        None => NONE.to_string(),
    }
}

/// Values separated by spaces, each with `decimals` decimals.
pub(super) fn list(values: impl IntoIterator<Item = Option<f64>>, decimals: usize) -> String {
    let cells: Vec<String> = values.into_iter().map(|v| fixed(v, decimals)).collect();
    if cells.is_empty() {
        NONE.to_string()
    } else {
        cells.join(" ")
    }
}

/// A confidence interval as `[lo, hi]`.
pub(super) fn interval(ci: Option<(f64, f64)>, decimals: usize) -> String {
    match ci {
        Some((lo, hi)) if lo.is_finite() && hi.is_finite() => {
            format!("[{lo:.decimals$}, {hi:.decimals$}]")
        }
        _ => NONE.to_string(),
    }
}

/// A p-value with four decimals; values that would round to zero read `<0.0001`.
pub(super) fn p_value(p: Option<f64>) -> String {
    match p {
        Some(p) if p < 0.00005 => "<0.0001".to_string(),
        _ => fixed(p, 4),
    }
}

/// Optional durations as seconds in JSON, like every other time in the metrics.
pub(super) fn opt_secs<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_some(&d.as_secs_f64()),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells() {
        let cases: [(String, &str); 9] = [
            (fixed(Some(1.23456), 3), "1.235"),
            (fixed(None, 3), "-"),
            (fixed(Some(f64::NAN), 3), "-"),
            (fixed(Some(f64::INFINITY), 1), "-"),
            (list([Some(1.0), None, Some(2.5)], 1), "1.0 - 2.5"),
            (list([], 1), "-"),
            (interval(Some((1.0, 2.0)), 2), "[1.00, 2.00]"),
            (p_value(Some(0.00001)), "<0.0001"),
            (p_value(Some(0.07939)), "0.0794"),
        ];
        for (got, want) in cases {
            assert_eq!(got, want);
        }
    }

    #[test]
    fn tables_are_markdown_without_trailing_spaces() {
        let mut t = new_table(&["name", "value"]);
        t.add_row(vec!["a", "1.0"]);
        t.add_row(vec!["long name", "10.25"]);
        assert_eq!(
            finish(&t),
            "| name      | value |\n\
             |-----------|-------|\n\
             | a         |   1.0 |\n\
             | long name | 10.25 |\n"
        );
    }
}
