//! Cost of the shim per parallel region: runs 100 000 empty `omp parallel`
//! regions of 2 threads in the teams test program, without the shim, with it
//! but no record, with a fresh record (DoP 2, unpinned) and with a fresh record
//! pinning to CPUs 0 and 1, and prints ns per region (best of 5 runs).
//!
//! `cargo run --release -p coloc-shim --example region_overhead`

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use coloc_shim::{monotonic_ns, shim_path, DopChannel};

const REGIONS: u64 = 100_000;

/// Best ns per region over 5 runs; `record` = the CPU list of a fresh DoP 2
/// record per run (a record belongs to the first process that uses it).
fn ns_per_region(shim: Option<&Path>, record: Option<&[u32]>) -> f64 {
    let teams = Path::new(env!("OUT_DIR")).join("teams");
    let path = std::env::temp_dir().join(format!("coloc-overhead-{}", std::process::id()));
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let chan = record.map(|cpus| DopChannel::create(&path, cpus, 2).unwrap());
        let mut cmd = Command::new(&teams);
        cmd.env("OMP_NUM_THREADS", "2")
            .env_remove("LD_PRELOAD")
            .env_remove("COLOC_OMP_RECORD");
        if let Some(shim) = shim {
            cmd.env("LD_PRELOAD", shim);
        }
        if let Some(chan) = &chan {
            cmd.env("COLOC_OMP_RECORD", chan.path());
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start teams");
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "empty {REGIONS}\nquit").unwrap();
        let mut line = String::new();
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            // coloc's epoch: keep the record fresh however long the run takes.
            s.spawn(|| {
                while !done.load(Ordering::Relaxed) {
                    if let Some(chan) = &chan {
                        chan.heartbeat(monotonic_ns());
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            });
            BufReader::new(child.stdout.take().unwrap())
                .read_line(&mut line)
                .unwrap();
            done.store(true, Ordering::Relaxed);
        });
        child.wait().unwrap();
        // "empty <n> ns <elapsed>"
        let ns: f64 = line.split_whitespace().nth(3).unwrap().parse().unwrap();
        best = best.min(ns / REGIONS as f64);
        if let Some(chan) = chan {
            let state = chan.read();
            assert_eq!(state.regions_managed, REGIONS, "the record was used");
            chan.remove().unwrap();
        }
    }
    best
}

fn main() {
    let shim = shim_path().expect("extract the shim");
    let rows = [
        ("without the shim", ns_per_region(None, None)),
        ("shim, no record", ns_per_region(Some(&shim), None)),
        ("shim, record DoP 2", ns_per_region(Some(&shim), Some(&[]))),
        (
            "shim, record DoP 2, pinned 0,1",
            ns_per_region(Some(&shim), Some(&[0, 1])),
        ),
    ];
    for (what, ns) in rows {
        println!("{what:32} {ns:8.0} ns/region");
    }
}
