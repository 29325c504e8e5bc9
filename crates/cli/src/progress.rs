//! Progress output for long runs: a bar per run counting finished app instances.

use std::io::{self, IsTerminal};

use coloc_harness::watch::{RunWatch, Watch};
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
