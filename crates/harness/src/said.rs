//! What the harness says beside a command's results: a warning (something
//! went wrong and the run goes on without it: a store that cannot be opened,
//! a profile missing) or a notice (files an earlier coloc wrote were
//! migrated). The harness prints nothing: each is a `tracing` event of the
//! target [`SAID`], which the CLI renders as `coloc: warning: …` or
//! `coloc: …` on stderr whatever the log level (crates/cli/src/said.rs), and
//! which a library user receives with its own subscriber.

use crate::error::chain;
use crate::HarnessError;

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

/// The warning of a run whose lessons the knowledge store did not take
/// (docs/knowledge.md): later runs know less, the run called `run` stands.
pub fn not_learned(run: &str, error: &HarnessError) -> String {
    format!("{}; run {run} was not learned", chain(error))
}

/// The warning of a solo run whose times were not stored.
pub fn solo_not_stored(error: &HarnessError) -> String {
    format!("{}; this solo run was not stored", chain(error))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    /// A run the store did not take is named with the whole error chain;
    /// a solo run's line says it was not stored.
    #[test]
    fn warnings_name_the_run_and_the_whole_error() {
        let error = HarnessError::Store {
            path: PathBuf::from("/s/coloc.db"),
            source: Box::new(coloc_store::StoreError::Damaged {
                path: "/s/coloc.db".into(),
                reason: "no table records".into(),
            }),
        };
        let line = not_learned("auto-2", &error);
        assert!(
            line == "opening the store /s/coloc.db: profile store /s/coloc.db: \
                     the coloc schema is incomplete (no table records); run auto-2 was not learned",
            "{line}"
        );
        let line = solo_not_stored(&error);
        assert!(line.ends_with("; this solo run was not stored"), "{line}");
    }
}
