//! Progress output for long runs: a bar per run counting finished app instances.

use std::io::{self, IsTerminal};

use coloc_harness::error::chain;
use coloc_harness::watch::{RunWatch, Warning, Watch};
use coloc_manager::Recorder;
use coloc_model::TraceEvent;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Watches trace events and advances a progress bar on every exit.
#[derive(Debug)]
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar for `total` app instances; hidden when stderr is not a terminal.
    pub fn new(label: &str, total: u64) -> Self {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(
                "{prefix:>24} [{bar:30}] {pos}/{len} apps  {elapsed}  {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        bar.set_prefix(label.to_string());
        Self { bar }
    }

    pub fn finish(&self, msg: String) {
        self.bar.finish_with_message(msg);
    }
}

impl Recorder for Progress {
    fn record(&mut self, event: &TraceEvent) -> io::Result<()> {
        match event {
            TraceEvent::Exit { .. } => self.bar.inc(1),
            TraceEvent::Start { app, .. } => self.bar.set_message(format!("started {app}")),
            _ => {}
        }
        Ok(())
    }
}

impl RunWatch for Progress {
    fn finish(&self, line: String) {
        Progress::finish(self, line);
    }
}

/// Watches the harness's runs with a progress bar each.
#[derive(Debug, Clone, Copy)]
pub struct Bars;

impl Watch for Bars {
    fn run(&self, label: &str, instances: u64) -> Box<dyn RunWatch> {
        Box::new(Progress::new(label, instances))
    }

    fn warn(&self, warning: Warning<'_>) {
        eprintln!("{}", warning_line(warning));
    }
}

/// A warning of the harness's as the CLI says it on stderr.
fn warning_line(warning: Warning<'_>) -> String {
    match warning {
        Warning::NotLearned { run, error } => {
            format!(
                "coloc: warning: {}; run {run} was not learned",
                chain(error)
            )
        }
        Warning::SoloNotStored { error, .. } => {
            format!(
                "coloc: warning: {}; this solo run was not stored",
                chain(error)
            )
        }
    }
}

/// Watches a command's runs: a progress bar each, and a line `PREFIX
/// LABEL: LINE` for each run that ends where stderr is no terminal to draw
/// the bars on (and for each run made outside this process).
#[derive(Debug, Clone, Copy)]
pub struct Listed {
    /// Before each run's label in its line (`run ` for comparisons).
    pub prefix: &'static str,
}

/// A comparison's runs, listed as `run LABEL: …`.
pub const COMPARISON_RUNS: Listed = Listed { prefix: "run " };

impl Watch for Listed {
    fn run(&self, label: &str, instances: u64) -> Box<dyn RunWatch> {
        Box::new(ListedRun {
            progress: Progress::new(label, instances),
            label: format!("{}{label}", self.prefix),
        })
    }

    fn note(&self, label: &str, line: &str) {
        eprintln!("{}{label}: {line}", self.prefix);
    }

    fn warn(&self, warning: Warning<'_>) {
        eprintln!("{}", warning_line(warning));
    }
}

/// One run of [`Listed`], its label with the prefix.
#[derive(Debug)]
struct ListedRun {
    progress: Progress,
    label: String,
}

impl Recorder for ListedRun {
    fn record(&mut self, event: &TraceEvent) -> io::Result<()> {
        self.progress.record(event)
    }
}

impl RunWatch for ListedRun {
    fn finish(&self, line: String) {
        self.progress.finish(line.clone());
        if !io::stderr().is_terminal() {
            eprintln!("{}: {line}", self.label);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use coloc_harness::HarnessError;

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
        let line = warning_line(Warning::NotLearned {
            run: "auto-2",
            error: &error,
        });
        assert!(
            line == "coloc: warning: opening the store /s/coloc.db: profile store /s/coloc.db: \
                     the coloc schema is incomplete (no table records); run auto-2 was not learned",
            "{line}"
        );
        let line = warning_line(Warning::SoloNotStored {
            run: "a",
            error: &error,
        });
        assert!(line.ends_with("; this solo run was not stored"), "{line}");
    }
}
