//! What a command shows while its runs go: the harness tells a [`Watch`] of
//! each run it starts and hands it the run's events; the CLI draws a
//! progress bar per run (tests and programs may watch nothing).

use coloc_manager::Recorder;

/// Watches the runs of a command.
pub trait Watch {
    /// A watcher of the run called `label`, whose workload starts
    /// `instances` app instances.
    fn run(&self, label: &str, instances: u64) -> Box<dyn RunWatch>;
}

/// Watches one run: every event of it, then a line that says how it ended.
pub trait RunWatch: Recorder {
    fn finish(&self, line: String);
}
