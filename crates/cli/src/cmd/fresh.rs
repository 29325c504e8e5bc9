//! Runs with nothing stored beforehand, as a new user's first `coloc run`:
//! each run is a `coloc run` child process whose data directory
//! (`XDG_DATA_HOME`, where solo times, co-run rates and profiles live) is
//! new and empty, so no policy can read what an earlier run, an earlier
//! repeat or `coloc solo` measured, whatever it keeps and wherever in the
//! data directory it keeps it. `coloc compare`'s in-process runs, by
//! contrast, share one policy context across repeats and record co-run rates
//! for later ones. The harness's comparisons make these runs through
//! [`Child`] (`coloc_harness::compare::Fresh`).

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{bail, Context, Result};
use coloc_harness::compare::{Fresh, FreshRun};
use coloc_harness::read_trace;
use coloc_model::{Trace, TraceEvent};

/// Makes fresh runs as child `coloc run` processes of this binary.
#[derive(Debug, Clone, Copy)]
pub struct Child;

impl Fresh for Child {
    fn run(
        &self,
        run: &FreshRun<'_>,
        stop: &AtomicBool,
    ) -> Result<Trace, Box<dyn std::error::Error + Send + Sync>> {
        run_fresh(run, stop).map_err(Into::into)
    }
}

/// Runs `coloc run` on the run's workload in a new, empty data directory and
/// returns its trace. An interrupt (`stop`) is an error; a run whose apps
/// all failed is not (its trace counts them), but a run that left no
/// complete trace is.
fn run_fresh(run: &FreshRun<'_>, stop: &AtomicBool) -> Result<Trace> {
    let data = run.out.join("data");
    if data.exists() {
        std::fs::remove_dir_all(&data)
            .with_context(|| format!("emptying the data directory {}", data.display()))?;
    }
    std::fs::create_dir_all(&data).with_context(|| format!("creating {}", data.display()))?;
    let log_path = run.out.join("coloc-run.txt");
    let log = std::fs::File::create(&log_path)
        .with_context(|| format!("creating {}", log_path.display()))?;
    // The running binary itself, even if a rebuild replaced the file at its
    // path during a bench of hours: every run of a bench runs the same coloc.
    let exe = Path::new("/proc/self/exe");
    let status = Command::new(exe)
        .arg("run")
        .arg(run.workload)
        .args(["--policy", run.policy])
        .args(["--objective", &run.objective.to_string()])
        .args(["--epoch", &format!("{}ms", run.epoch.as_millis())])
        .arg("--out")
        .arg(run.out)
        .env("XDG_DATA_HOME", &data)
        // It plans the apps under this manager's lock (docs/safety.md, One
        // manager per machine): this process waits for it.
        .env(
            crate::one_manager::MANAGER_PARENT_ENV,
            std::process::id().to_string(),
        )
        .stdin(Stdio::null())
        .stdout(log)
        .status()
        .with_context(|| format!("starting `coloc run` ({})", exe.display()))?;
    if stop.load(Ordering::Relaxed) {
        bail!("interrupted; settings were restored");
    }
    let trace_path = run.out.join("trace.jsonl");
    let trace = read_trace(&trace_path).with_context(|| {
        format!(
            "`coloc run` under {} ({status}) left no readable trace; its output is in {}",
            run.policy,
            log_path.display()
        )
    })?;
    if !trace
        .events
        .iter()
        .any(|e| matches!(e, TraceEvent::End { .. }))
    {
        bail!(
            "`coloc run` under {} ({status}) did not finish its trace {}; its output is in {}",
            run.policy,
            trace_path.display(),
            log_path.display()
        );
    }
    Ok(trace)
}
