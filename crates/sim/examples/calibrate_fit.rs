//! Fits the kvm-2cpu platform's machine figures to this machine's kernel
//! measurements (`coloc_sim::calibrate::KVM_2CPU_MEASURED`, or a TSV file of
//! `crates/sim/scripts/measure-kernels.sh` given as the first argument) and
//! prints the figures, every case's measured and simulated times, and the
//! largest error. `--check` prints the comparison with the platform's current
//! figures instead of fitting.
//!
//! cargo run --release -p coloc-sim --example calibrate_fit [-- FILE] [--check]

use coloc_sim::calibrate::{self, Fit};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let check = args.iter().any(|a| a == "--check");
    let text = match args.iter().find(|a| !a.starts_with("--")) {
        Some(path) => std::fs::read_to_string(path)?,
        None => calibrate::KVM_2CPU_MEASURED.to_string(),
    };
    let measured = calibrate::parse_measured(&text)?;
    let platform = coloc_sim::platform("kvm-2cpu").ok_or("no kvm-2cpu platform")?;
    let cases: Vec<_> = calibrate::cases()
        .into_iter()
        .filter(|c| measured.iter().any(|m| m.case == c.name))
        .collect();
    let fit = if check {
        let rows = calibrate::compare(&measured, &calibrate::simulate_cases(&platform, &cases)?)?;
        Fit {
            params: platform.params,
            max_error: calibrate::max_error(&calibrate::outside_gaps(&rows)),
            rows,
            evaluations: 1,
        }
    } else {
        calibrate::fit(&platform, &cases, &measured)?
    };
    print!("{fit}");
    Ok(())
}
