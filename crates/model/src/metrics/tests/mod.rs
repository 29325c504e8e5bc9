//! Metrics computed from small hand-built traces.

mod compare;
mod props;
mod run;

/// `a` and `b` agree to within rounding of a few operations.
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}
