//! What a command shows while its runs go: the harness tells a [`Watch`] of
//! each run it starts and hands it the run's events; the CLI draws a
//! progress bar per run (tests and programs may watch nothing). What goes
//! wrong beside a run is said through [`crate::said`], not here.

use coloc_manager::Recorder;

/// Watches the runs of a command.
pub trait Watch {
    /// A watcher of the run called `label`, whose workload starts
    /// `instances` app instances.
    fn run(&self, label: &str, instances: u64) -> Box<dyn RunWatch>;

    /// A line about the run called `label` that no watcher of it shows: a
    /// run made outside this process (`coloc compare`'s fresh runs).
    fn note(&self, _label: &str, _line: &str) {}
}

impl std::fmt::Debug for dyn Watch + '_ {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Watch")
    }
}

/// Watches one run: every event of it, then a line that says how it ended.
pub trait RunWatch: Recorder {
    fn finish(&self, line: String);
}

/// A watcher for tests: what it saw of each run.
#[cfg(test)]
pub(crate) mod seen {
    use std::sync::{Arc, Mutex};

    use coloc_manager::Recorder;
    use coloc_model::TraceEvent;

    use super::{RunWatch, Watch};

    /// One run watched (or noted): its label, the app instances it was
    /// started with, the exits seen, its closing line and the lines noted.
    #[derive(Clone, Debug, Default, PartialEq)]
    pub struct SeenRun {
        pub label: String,
        pub instances: u64,
        pub exits: u32,
        pub line: String,
        pub notes: Vec<String>,
    }

    /// The runs watched, in the order they started.
    #[derive(Default)]
    pub struct Seen(Arc<Mutex<Vec<SeenRun>>>);

    impl Seen {
        pub fn runs(&self) -> Vec<SeenRun> {
            self.0.lock().unwrap().clone()
        }
    }

    struct Watching(Arc<Mutex<Vec<SeenRun>>>);

    impl Watch for Seen {
        fn run(&self, label: &str, instances: u64) -> Box<dyn RunWatch> {
            self.0.lock().unwrap().push(SeenRun {
                label: label.into(),
                instances,
                ..SeenRun::default()
            });
            Box::new(Watching(self.0.clone()))
        }

        fn note(&self, label: &str, line: &str) {
            let mut runs = self.0.lock().unwrap();
            if runs.last().is_none_or(|r| r.label != label) {
                runs.push(SeenRun {
                    label: label.into(),
                    ..SeenRun::default()
                });
            }
            runs.last_mut().unwrap().notes.push(line.into());
        }
    }

    impl Recorder for Watching {
        fn record(&mut self, event: &TraceEvent) -> std::io::Result<()> {
            if let TraceEvent::Exit { .. } = event {
                self.0.lock().unwrap().last_mut().unwrap().exits += 1;
            }
            Ok(())
        }
    }

    impl RunWatch for Watching {
        fn finish(&self, line: String) {
            self.0.lock().unwrap().last_mut().unwrap().line = line;
        }
    }
}
