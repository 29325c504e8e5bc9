//! `coloc calibrate`: the memory system's service rates (NuPoCo §4.3), measured
//! once per machine and kept in the profile store for `nupoco`.
//!
//! NuPoCo calibrates μ (each memory controller) and link_{i,m} (each path from
//! CPU node i to memory node m) "by executing a synthetic workload from the
//! Stream benchmark that generates memory accesses from one core to specific
//! memory nodes". Here the calibration is a measurement procedure
//! (docs/trace-format.md, Measurement procedures;
//! [`coloc_model::calibration::procedure`]): for every CPU node i (a NUMA
//! node's CPUs, [`memory_nodes`](coloc_model::calibration::memory_nodes)) and
//! every memory node m, the built-in `stream` kernel runs with thread k pinned
//! on node i's k-th CPU and its arrays bound to node m (`--mem-node`), at 1, 2,
//! … threads up to `--max-threads` (default: the node's CPUs; more threads
//! than CPUs measure time-sharing, not the memory), `--repeat` rounds of every
//! path. Each run goes through the same Manager and Linux backend as `coloc
//! run` under the `static` policy and writes a trace; a run's sample is the
//! GB/s the kernel reported at its exit, and
//! [`MemoryCalibration::from_stream`] takes the plateau of the local runs as
//! μ_m and derives the links from the remote ones. The calibration is stored
//! under this machine's platform fingerprint, replacing an earlier one; the
//! directory holds `calibration.json`, and `coloc calibrate --from DIR`
//! recomputes the calibration from its traces.
//!
//! Then the cache ladder ([`coloc_model::calibration::cache`]): the stream
//! kernel on one CPU at working sets doubling from 3 MiB past twice the LLC
//! sysfs reports, `--repeat` rounds, traces under `cache/`; the largest
//! working set still clearly faster than memory is the LLC capacity one thread
//! gets, which Thread Tranquilizer compares resident sets with where there
//! are no counters (a KVM guest may report the host's whole L3).
//!
//! `--sim PLATFORM` prints a simulated platform's own calibration
//! ([`coloc_sim::Platform::memory_calibration`]) and stores nothing: those rates are the
//! platform's definition, which every run in the simulator reads afresh, so a
//! stored copy could only go stale when the platform's figures are refitted.

use std::path::PathBuf;
use std::time::UNIX_EPOCH;

use anyhow::{bail, Result};
use clap::Args;
use coloc_model::calibration::cache::{cache_runs, CacheSample};
use coloc_model::calibration::procedure::{calibration_runs, CalibrationManifest, MANIFEST};
use coloc_model::calibration::{MemoryCalibration, StreamRate, StreamSample, DEFAULT_LINE_BYTES};
use coloc_model::metrics::table::{finish, fixed, new_table, NONE};
use coloc_model::profile::PlatformFingerprint;
use coloc_model::topology::human_bytes;

use coloc_harness::calibrate::{from_dir, measure, StreamSize};
use coloc_harness::output::default_out_dir;
use coloc_harness::procedure::{read_json, write_json};
use coloc_harness::{resolve_platform, Target};

use crate::db::DbArgs;
use crate::host::stop_flag;
use crate::progress::Bars;

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// Print the calibration of this simulated platform (built-in name, hwloc XML
    /// or TOML platform file): its own figures, nothing is measured or stored.
    #[arg(long, value_name = "PLATFORM", conflicts_with = "show")]
    pub sim: Option<String>,
    /// Print this machine's stored calibration instead of measuring.
    #[arg(long)]
    pub show: bool,
    /// Run nothing: recompute the calibration from the traces in DIR, a
    /// directory `coloc calibrate` wrote (its `--out`), and print it (nothing
    /// is stored).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["sim", "show"])]
    pub from: Option<PathBuf>,
    /// Directory for the runs' traces [default: coloc-runs/calibrate/calibrate-TIME].
    #[arg(long, conflicts_with_all = ["sim", "show"])]
    pub out: Option<PathBuf>,
    /// Most stream threads per CPU node [default: the node's CPUs; larger values
    /// are capped there].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_threads: Option<u32>,
    /// MiB per stream array (three arrays); far above the last-level cache so the
    /// kernel measures memory, not cache.
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u32).range(1..))]
    pub mb: u32,
    /// Triad sweeps per run.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub iters: u32,
    /// Runs per thread count and path; the best counts, as in STREAM.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
}

pub fn main(args: CalibrateArgs) -> Result<()> {
    if let Some(dir) = &args.from {
        let manifest: CalibrationManifest = read_json(dir, MANIFEST)?;
        let (samples, cache, calibration) = from_dir(dir, &manifest)?;
        println!(
            "Recomputed from the traces in {}, platform {}:",
            dir.display(),
            manifest.platform
        );
        print!("{}", samples_table(&samples));
        print!("{}", cache_table(&cache));
        print!("{}", render(&calibration));
        return Ok(());
    }
    if let Some(p) = &args.sim {
        let platform = resolve_platform(p)?;
        println!("simulated platform {}: its own calibration", platform.name);
        print!("{}", render(&platform.memory_calibration()));
        return Ok(());
    }
    let topology = coloc_harness::target::host_topology()?;
    let platform = PlatformFingerprint::of(&topology);
    if args.show {
        let path = args.db.path();
        let stored = match args.db.open_existing()? {
            Some(store) => store.calibration(&platform)?,
            None => None,
        };
        let Some(c) = stored else {
            bail!(
                "no calibration of this machine ({platform}) in {}: run `coloc calibrate`",
                path.display()
            );
        };
        println!("this machine ({platform}): stored calibration");
        print!("{}", render(&c));
        return Ok(());
    }
    // Opened before measuring, so a bad store file fails now, not after the runs.
    let store = args.db.open()?;
    let manifest = CalibrationManifest {
        platform: platform.clone(),
        line_bytes: DEFAULT_LINE_BYTES,
        runs: calibration_runs(&topology, args.max_threads, args.repeat),
        cache_runs: cache_runs(&topology, args.repeat),
    };
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| default_out_dir("calibrate", "calibrate"));
    measure(
        &Target::Host(crate::host::start()?),
        &manifest,
        StreamSize {
            mb: args.mb,
            iters: args.iters,
        },
        &out,
        &stop_flag()?,
        &Bars,
    )?;
    write_json(&out, MANIFEST, &manifest)?;
    let (samples, cache, calibration) = from_dir(&out, &manifest)?;
    store.put_calibration(&platform, &calibration)?;
    print!("{}", samples_table(&samples));
    print!("{}", cache_table(&cache));
    print!("{}", render(&calibration));
    println!(
        "stored in {} for this machine ({platform}); traces in {}, `coloc calibrate --from {}` \
         recomputes it from them",
        store.path().display(),
        out.display(),
        out.display()
    );
    Ok(())
}

/// The cache ladder: each working set's best GB/s.
fn cache_table(samples: &[CacheSample]) -> String {
    if samples.is_empty() {
        return String::new();
    }
    let mut table = new_table(&["stream working set, 1 thread", "best GB/s"]);
    for s in samples {
        table.add_row(vec![
            human_bytes(s.working_set_bytes),
            fixed(Some(s.gbs), 2),
        ]);
    }
    finish(&table)
}

/// GB/s of a sample (the kernels report bytes; requests only come from models).
fn gbs(s: &StreamSample, line_bytes: u32) -> f64 {
    match s.rate {
        StreamRate::BytesPerSec(b) => b / 1e9,
        StreamRate::RequestsPerSec(r) => r * f64::from(line_bytes) / 1e9,
    }
}

/// The measurements: per path, the best GB/s at each thread count, and the
/// best of all (the plateau that becomes the service rate).
fn samples_table(samples: &[StreamSample]) -> String {
    let top = samples.iter().map(|s| s.threads).max().unwrap_or(0);
    let mut header = vec!["CPU node -> memory node".to_string()];
    header.extend((1..=top).map(|t| format!("{t} thr GB/s")));
    header.push("best GB/s".into());
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut table = new_table(&header);
    let mut paths: Vec<(usize, usize)> = samples.iter().map(|s| (s.cpu_node, s.mem_node)).collect();
    paths.sort_unstable();
    paths.dedup();
    for (i, m) in paths {
        let best = |threads: Option<u32>| {
            samples
                .iter()
                .filter(|s| (s.cpu_node, s.mem_node) == (i, m))
                .filter(|s| threads.is_none_or(|t| s.threads == t))
                .map(|s| gbs(s, DEFAULT_LINE_BYTES))
                .reduce(f64::max)
        };
        let mut row = vec![format!("{i} -> {m}")];
        row.extend((1..=top).map(|t| fixed(best(Some(t)), 2)));
        row.push(fixed(best(None), 2));
        table.add_row(row);
    }
    finish(&table)
}

/// A calibration in words and tables: each memory node's service rate μ, the
/// link matrix where there are several nodes, how it was obtained, and notes.
pub fn render(c: &MemoryCalibration) -> String {
    let line = f64::from(c.line_bytes);
    // Given figures (assumed, a simulated platform's) carry the Unix epoch.
    let epoch = humantime::format_rfc3339_seconds(UNIX_EPOCH).to_string();
    let measured = if c.measured_at == epoch {
        "never (given figures)"
    } else {
        &c.measured_at
    };
    let mut out = format!("method: {}\nmeasured: {measured}\n", c.method);
    let mut nodes = new_table(&["memory node", "service rate GB/s", "requests/s"]);
    for (m, mu) in c.node_service_rate.iter().enumerate() {
        nodes.add_row(vec![
            m.to_string(),
            fixed(Some(mu * line / 1e9), 2),
            format!("{mu:.4e}"),
        ]);
    }
    out.push_str(&finish(&nodes));
    if !c.link_service_rate.is_empty() {
        let mut header = vec!["link GB/s: CPU node \\ memory node".to_string()];
        header.extend((0..c.link_service_rate.len()).map(|m| m.to_string()));
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        let mut links = new_table(&header);
        for (i, row) in c.link_service_rate.iter().enumerate() {
            let mut cells = vec![i.to_string()];
            cells.extend(row.iter().enumerate().map(|(m, link)| match link {
                _ if i == m => NONE.to_string(),
                Some(r) => fixed(Some(r * line / 1e9), 2),
                None => "not limiting".to_string(),
            }));
            links.add_row(cells);
        }
        out.push_str(&finish(&links));
    }
    for note in &c.notes {
        out.push_str(&format!("note: {note}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use coloc_harness::calibrate::CACHE_DIR;
    use coloc_harness::watch::{RunWatch, Watch};
    use coloc_model::calibration::cache::cache_runs;

    use super::*;

    /// Counts what the calibration's one watched run saw.
    #[derive(Default)]
    struct Count(std::sync::Arc<std::sync::Mutex<Vec<(String, u64)>>>);

    struct Counting;

    impl coloc_manager::Recorder for Counting {
        fn record(&mut self, _: &coloc_model::TraceEvent) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl RunWatch for Counting {
        fn finish(&self, _: String) {}
    }

    impl Watch for Count {
        fn run(&self, label: &str, instances: u64) -> Box<dyn RunWatch> {
            self.0.lock().unwrap().push((label.into(), instances));
            Box::new(Counting)
        }
    }

    /// The harness's calibration on this machine, small (one thread per
    /// path, 8 MiB arrays, the ladder's two smallest working sets): every
    /// planned run is made under the one watched run, and the traces it
    /// left give a sample per stream run, a positive rate for every
    /// memory node, and a cache sample per ladder run.
    #[test]
    fn a_small_calibration_is_measured_and_computed_from_its_traces() {
        let _turn = crate::host::HOST_TESTS
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let target = Target::Host(crate::host::start().unwrap());
        let topology = target.topology().clone();
        let dir = tempfile::tempdir().unwrap();
        let manifest = CalibrationManifest {
            platform: PlatformFingerprint::of(&topology),
            line_bytes: DEFAULT_LINE_BYTES,
            runs: calibration_runs(&topology, Some(1), 1),
            cache_runs: cache_runs(&topology, 1).into_iter().take(2).collect(),
        };
        let count = Count::default();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let size = StreamSize { mb: 8, iters: 2 };
        measure(&target, &manifest, size, dir.path(), &stop, &count).unwrap();
        let planned = (manifest.runs.len() + manifest.cache_runs.len()) as u64;
        assert_eq!(
            *count.0.lock().unwrap(),
            [("calibrate".to_string(), planned)]
        );
        assert!(dir.path().join(CACHE_DIR).is_dir());
        let (samples, cache, calibration) = from_dir(dir.path(), &manifest).unwrap();
        assert_eq!(samples.len(), manifest.runs.len());
        assert_eq!(cache.len(), manifest.cache_runs.len());
        assert!(!calibration.node_service_rate.is_empty());
        assert!(
            calibration.node_service_rate.iter().all(|mu| *mu > 0.0),
            "{calibration:?}"
        );
    }

    fn sample(cpu_node: usize, mem_node: usize, threads: u32, gbs: f64) -> StreamSample {
        StreamSample {
            cpu_node,
            mem_node,
            threads,
            rate: StreamRate::BytesPerSec(gbs * 1e9),
        }
    }

    /// Repeats keep the best; a thread count a path never ran shows `-`.
    #[test]
    fn samples_table_keeps_the_best_of_repeats() {
        let text = samples_table(&[
            sample(0, 0, 1, 5.0),
            sample(0, 0, 1, 6.0),
            sample(0, 0, 2, 9.5),
            sample(0, 1, 2, 4.25),
        ]);
        let rows: Vec<&str> = text.lines().collect();
        assert!(rows[0].contains("1 thr GB/s") && rows[0].contains("best GB/s"));
        let row = |p: &str| cells(rows.iter().find(|r| r.contains(p)).unwrap());
        assert_eq!(row("0 -> 0"), ["0 -> 0", "6.00", "9.50", "9.50"]);
        assert_eq!(row("0 -> 1"), ["0 -> 1", "-", "4.25", "4.25"]);
    }

    /// The trimmed cells of a Markdown table row.
    fn cells(row: &str) -> Vec<&str> {
        row.split('|')
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect()
    }

    /// 2e8 requests/s of 64 bytes is 12.80 GB/s; a two-node calibration shows
    /// its link matrix, local paths as `-`.
    #[test]
    fn render_shows_rates_in_both_units_and_links() {
        let t = coloc_model::Topology::synthetic("t", "package:2 numa:1 core:2").unwrap();
        let c = MemoryCalibration::uniform(&t, 12.8e9, 6.4e9, 64, "given".into());
        let text = render(&c);
        assert!(text.starts_with("method: given\n"), "{text}");
        let rows: Vec<Vec<&str>> = text.lines().map(cells).collect();
        assert!(rows.contains(&vec!["0", "12.80", "2.0000e8"]), "{text}");
        assert!(rows.contains(&vec!["1", "6.40", "-"]), "{text}");
    }
}
