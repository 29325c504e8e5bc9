//! Prints the simulator's speed: events per second of an 8-app dynamic
//! workload on the 64-core platform under native and equal, and oracle
//! configurations per second (`coloc_sim::bench::sim_speed`).
//!
//! cargo run --release -p coloc-sim --example sim_speed

fn main() -> Result<(), coloc_sim::bench::BenchError> {
    print!("{}", coloc_sim::bench::sim_speed()?);
    Ok(())
}
