//! What the harness says beside a command's results: a warning (something
//! went wrong and the run goes on without it: a store that cannot be opened,
//! a profile missing) or a notice (files an earlier coloc wrote were
//! migrated). The harness prints nothing: each is a `tracing` event of the
//! target [`SAID`], which the CLI renders as `coloc: warning: …` or
//! `coloc: …` on stderr whatever the log level (crates/cli/src/said.rs), and
//! which a library user receives with its own subscriber.

/// The `tracing` target of what the harness says.
pub const SAID: &str = "coloc::said";

/// A warning: at WARN, of the target [`SAID`].
pub fn warning(text: &str) {
    tracing::warn!(target: SAID, "{text}");
}

/// A notice: at INFO, of the target [`SAID`].
pub fn notice(text: &str) {
    tracing::info!(target: SAID, "{text}");
}
