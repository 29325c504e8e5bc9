//! `coloc-fuzz`: runs the parsers' fuzz targets for a bounded time and says
//! how many inputs each took and which made it panic (`scripts/fuzz`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use coloc_fuzz::fuzzer::{fuzz, Options};
use coloc_fuzz::targets::{target, TARGETS};

/// Fuzz coloc's parsers (workload TOML, hwloc XML, trace JSONL, profile export,
/// the daemon's requests).
#[derive(Debug, Parser)]
#[command(name = "coloc-fuzz")]
struct Args {
    /// Targets to run (`workload`, `hwloc`, `trace`, `profiles`, `request`); all
    /// by default.
    targets: Vec<String>,
    /// Time per target.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "60s")]
    time: Duration,
    /// Seed of the mutations (a run is reproducible, up to the time bound).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// An input running longer than this is reported as a hang.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10s")]
    timeout: Duration,
    /// Where crashing inputs are written, one directory per target.
    #[arg(long, default_value = "target/fuzz-crashes")]
    crashes: PathBuf,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let chosen: Vec<_> = if args.targets.is_empty() {
        TARGETS.iter().collect()
    } else {
        let mut chosen = Vec::new();
        for name in &args.targets {
            match target(name) {
                Some(t) => chosen.push(t),
                None => {
                    let known: Vec<_> = TARGETS.iter().map(|t| t.name).collect();
                    eprintln!(
                        "coloc-fuzz: unknown target {name:?} (known: {})",
                        known.join(", ")
                    );
                    return ExitCode::from(2);
                }
            }
        }
        chosen
    };
    let opts = Options {
        time: args.time,
        max_execs: u64::MAX,
        seed: args.seed,
        timeout: args.timeout,
        crashes: Some(args.crashes.clone()),
    };
    println!(
        "{:<10} {:>12} {:>10} {:>9} {:>14}",
        "target", "executions", "execs/s", "crashes", "slowest (ms)"
    );
    let mut crashed = false;
    for t in chosen {
        let r = fuzz(t, &opts);
        println!(
            "{:<10} {:>12} {:>10.0} {:>9} {:>14.2}",
            r.target,
            r.execs,
            r.execs as f64 / r.elapsed.as_secs_f64().max(1e-9),
            r.crashes.len(),
            r.slowest.as_secs_f64() * 1e3
        );
        for (input, msg) in &r.crashes {
            crashed = true;
            let first = msg.lines().next().unwrap_or("");
            println!(
                "  crash ({} bytes, saved under {}): {first}",
                input.len(),
                args.crashes.join(r.target).display()
            );
        }
    }
    if crashed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
