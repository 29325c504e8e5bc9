//! How the CLI shows what the libraries say beside results
//! (`coloc_harness::said`): the events of the target
//! [`coloc_harness::said::SAID`] are lines on stderr, `coloc: warning: …` at
//! WARN and `coloc: …` otherwise, whatever `--log-level` keeps of the other
//! logs; the logs' own format (timestamps, levels) never carries them.

use std::fmt;
use std::io::Write;

use coloc_harness::said::SAID;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Metadata, Subscriber};
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::layer::{Context, Layer};

/// Writes each event of [`SAID`] as one line on stderr.
pub struct Said;

impl Said {
    /// This layer, taking only the events of [`SAID`].
    pub fn layer<S>() -> impl Layer<S>
    where
        S: Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    {
        // The hint keeps every finer level's callsites off when the logs' own
        // filter keeps them off: the libraries say nothing below INFO.
        Said.with_filter(filter_fn(is_said).with_max_level_hint(Level::INFO))
    }
}

/// Whether `meta` is what a library said ([`SAID`]).
pub fn is_said(meta: &Metadata<'_>) -> bool {
    meta.target() == SAID
}

/// The line an event of [`SAID`] is shown as.
pub fn line(level: &Level, text: &str) -> String {
    if *level == Level::WARN {
        format!("coloc: warning: {text}")
    } else {
        format!("coloc: {text}")
    }
}

impl<S: Subscriber> Layer<S> for Said {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut text = Message(String::new());
        event.record(&mut text);
        // stderr may be gone (a hung-up terminal): what cannot be said is not.
        let _ = writeln!(
            std::io::stderr(),
            "{}",
            line(event.metadata().level(), &text.0)
        );
    }
}

/// An event's `message` field.
struct Message(String);

impl Visit for Message {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0 = value.to_string();
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A warning and a notice as the commands printed them before the
    /// harness said them through `tracing`.
    #[test]
    fn warnings_and_notices_keep_their_lines() {
        assert_eq!(
            line(&Level::WARN, "no profile of app \"b\""),
            "coloc: warning: no profile of app \"b\""
        );
        assert_eq!(
            line(&Level::INFO, "migrated 2 file(s)"),
            "coloc: migrated 2 file(s)"
        );
    }
}
