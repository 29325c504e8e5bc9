//! `coloc calibrate`'s runs and what they give (NuPoCo §4.3; docs/trace-
//! format.md, Measurement procedures): the planned stream runs
//! ([`coloc_model::calibration::procedure`]) and the cache ladder
//! ([`coloc_model::calibration::cache`]) made by [`Runner`] on a machine,
//! traces under the calibration's directory, and the samples and the
//! calibration computed from those traces on disk, by the same functions
//! whether the runs were just made or long ago (`coloc calibrate --from
//! DIR`).

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use coloc_manager::DEFAULT_EPOCH;
use coloc_model::calibration::cache::{cache_samples, effective_llc, CacheSample, CACHE_SPEEDUP};
use coloc_model::calibration::procedure::{calibration_from_traces, CalibrationManifest, STREAM};
use coloc_model::calibration::{MemoryCalibration, StreamSample};
use coloc_model::topology::human_bytes;
use coloc_model::Workload;

use crate::procedure::read_traces;
use crate::runner::{stream_kernel, Runner};
use crate::watch::Watch;
use crate::{HarnessError, Target};

/// Where the cache ladder's traces go, under the calibration's directory.
pub const CACHE_DIR: &str = "cache";

/// The stream kernel's size for the memory runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamSize {
    /// MiB per array (three arrays).
    pub mb: u32,
    /// Triad sweeps per run.
    pub iters: u32,
}

/// Makes every run `manifest` plans on `target`: the stream runs, traces
/// under `out/stream/RUN`, then the cache ladder under `out/cache/stream/RUN`,
/// all watched as one run called `calibrate`.
pub fn measure(
    target: &Target,
    manifest: &CalibrationManifest,
    size: StreamSize,
    out: &Path,
    stop: &Arc<AtomicBool>,
    watch: &dyn Watch,
) -> Result<(), HarnessError> {
    let argv = [
        "kernel:stream",
        "--mb",
        &size.mb.to_string(),
        "--iters",
        &size.iters.to_string(),
    ]
    .map(String::from)
    .to_vec();
    let stream = stream_kernel(target, STREAM, argv)?;
    let workload = Workload {
        name: "calibrate".into(),
        epoch: None,
        apps: vec![stream.clone()],
    };
    let runner = Runner {
        target,
        workload: &workload,
        out: out.to_path_buf(),
        epoch: DEFAULT_EPOCH,
        stop: stop.clone(),
    };
    let (runs, cache) = (&manifest.runs, &manifest.cache_runs);
    let mut progress = watch.run("calibrate", (runs.len() + cache.len()) as u64);
    for r in runs {
        runner
            .run(
                STREAM,
                &r.run,
                std::slice::from_ref(&stream),
                &mut *progress,
            )
            .map_err(|e| HarnessError::InRun {
                run: format!(
                    "stream run on CPU node {} -> memory node {}, {} thread(s)",
                    r.cpu_node, r.mem_node, r.threads
                ),
                source: Box::new(e),
            })?;
    }
    // The ladder's runs give their own sizes; the kernel alone otherwise.
    let bare = stream_kernel(target, STREAM, vec!["kernel:stream".into()])?;
    let cache_runner = Runner {
        out: out.join(CACHE_DIR),
        ..runner
    };
    for r in cache {
        cache_runner
            .run(STREAM, &r.run, std::slice::from_ref(&bare), &mut *progress)
            .map_err(|e| HarnessError::InRun {
                run: format!("cache run with {} MiB per array", r.mib),
                source: Box::new(e),
            })?;
    }
    progress.finish("done".into());
    Ok(())
}

/// The samples, the cache ladder's and the calibration from the traces
/// under `dir`.
pub fn from_dir(
    dir: &Path,
    manifest: &CalibrationManifest,
) -> Result<(Vec<StreamSample>, Vec<CacheSample>, MemoryCalibration), HarnessError> {
    let traces = read_traces(
        &dir.join(STREAM),
        manifest.runs.iter().map(|r| r.run.dir.as_str()),
    )?;
    let (samples, mut calibration) =
        calibration_from_traces(&manifest.runs, manifest.line_bytes, &traces)?;
    if manifest.cache_runs.is_empty() {
        return Ok((samples, Vec::new(), calibration));
    }
    let traces = read_traces(
        &dir.join(CACHE_DIR).join(STREAM),
        manifest.cache_runs.iter().map(|r| r.run.dir.as_str()),
    )?;
    let cache = cache_samples(&manifest.cache_runs, &traces)?;
    match effective_llc(&cache) {
        Ok(bytes) => {
            calibration.llc_bytes = Some(bytes);
            calibration.notes.push(format!(
                "LLC capacity one thread gets: {} (the largest working set at least {CACHE_SPEEDUP} \
                 times as fast as the largest measured)",
                human_bytes(bytes)
            ));
        }
        Err(why) => calibration
            .notes
            .push(format!("LLC capacity not measured: {why}")),
    }
    Ok((samples, cache, calibration))
}
