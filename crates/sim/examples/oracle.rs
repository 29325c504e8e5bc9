//! Runs the oracle on a static workload file and prints its report.
//!
//! cargo run --release -p coloc-sim --example oracle -- PLATFORM WORKLOAD.toml [MAX_CONFIGS]

use coloc_sim::oracle::{search, OracleOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [name, file, rest @ ..] = args.as_slice() else {
        return Err("usage: oracle PLATFORM WORKLOAD.toml [MAX_CONFIGS]".into());
    };
    let platform = coloc_sim::platform(name).ok_or_else(|| format!("unknown platform {name}"))?;
    let workload = coloc_model::workload::parse_workload(file, &std::fs::read_to_string(file)?)?;
    let mut opts = OracleOptions::default();
    if let Some(n) = rest.first() {
        opts.max_configs = n.parse()?;
    }
    let t0 = std::time::Instant::now();
    let report = search(&platform, &workload, &opts)?;
    print!("{report}");
    println!(
        "{:.1} s on {} threads",
        t0.elapsed().as_secs_f64(),
        opts.threads
    );
    Ok(())
}
