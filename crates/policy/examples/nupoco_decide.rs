//! The cost of NuPoCo's decisions at NuPoCo's scale: 64 cores in 8 nodes, 2,
//! 4 and 8 co-located apps (§7.5 reports 1.8 ms per thread-count selection
//! and 1.5 ms per placement round on the 64-core AMD machine). Prints
//! [`coloc_policy::bench::nupoco_cost`], as `coloc bench nupoco` does.
//!
//! `cargo run --release -p coloc-policy --example nupoco_decide [-- RUNS]`

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runs = match std::env::args().nth(1) {
        Some(n) => n.parse()?,
        None => 200,
    };
    print!("{}", coloc_policy::bench::nupoco_cost(runs)?);
    Ok(())
}
