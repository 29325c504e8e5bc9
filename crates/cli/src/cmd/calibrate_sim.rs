//! `coloc calibrate-sim`: the simulator against reality (docs/simulator.md,
//! Validation: "validated, not trusted").
//!
//! The calibration cases of `coloc_sim::calibrate` — each workload kernel
//! alone at 1 and 2 threads, every pair under `native` and `equal` — are
//! simulated on the platform (`kvm-2cpu`, this development machine's model)
//! and compared app by app with measured times: by default those recorded on
//! this machine and shipped with coloc (`crates/sim/data/kvm-2cpu-kernels.tsv`),
//! else a TSV file (`--measured`), else measured now (`--measure`) through the
//! same Manager and Linux backend as `coloc run`
//! ([`coloc_harness::calibrate_sim`]). The table says which cases
//! the model is known to miss and which machine figures were fitted (only
//! machine figures: the kernel models come from the kernels' code).

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use coloc_harness::calibrate_sim::{
    app_name, beyond_target, cases_matching, judge, measure_cases, Beyond, TARGET_ERROR,
};
use coloc_harness::output::default_out_dir;
use coloc_harness::{resolve_platform, Target};
use coloc_sim::calibrate::{self, Case, Measured, Row, Side, FITTED, KNOWN_GAPS};
use coloc_sim::Platform;

use crate::host::stop_flag;
use crate::progress::Listed;

#[derive(Debug, Args)]
pub struct CalibrateSimArgs {
    /// Measured times to compare with: a TSV file as `--save` and
    /// crates/sim/scripts/measure-kernels.sh write it [default: this
    /// development machine's, recorded and shipped with coloc].
    #[arg(long, value_name = "FILE", conflicts_with = "measure")]
    pub measured: Option<PathBuf>,
    /// Measure the cases on this machine now (through the Linux backend, as
    /// `coloc run` does; a few minutes) and compare with those times.
    #[arg(long)]
    pub measure: bool,
    /// Runs per case with --measure; the run with the shortest makespan is kept,
    /// since disturbances on a shared machine only ever slow a run down.
    #[arg(long, default_value_t = 3, requires = "measure")]
    pub reps: u32,
    /// Write the --measure times to FILE (TSV, read back by --measured).
    #[arg(long, value_name = "FILE", requires = "measure")]
    pub save: Option<PathBuf>,
    /// Only the cases whose name contains this, e.g. `solo-` or `stream+share`.
    #[arg(long, value_name = "TEXT")]
    pub case: Option<String>,
    /// The simulated platform: a built-in name, an hwloc XML file or a TOML
    /// platform file (e.g. kvm-2cpu with other figures).
    #[arg(long, default_value = "kvm-2cpu")]
    pub platform: String,
    /// Directory for the traces of --measure's runs [default:
    /// coloc-runs/calibrate-sim/measure-TIME].
    #[arg(long, requires = "measure")]
    pub out: Option<PathBuf>,
}

pub fn main(args: CalibrateSimArgs) -> Result<()> {
    let platform = resolve_platform(&args.platform)?;
    let cases = cases_matching(args.case.as_deref())?;
    let (measured, source) = if args.measure {
        let (measured, tsv) = measure(&cases, &args)?;
        if let Some(file) = &args.save {
            std::fs::write(file, tsv)
                .with_context(|| format!("--save: writing {}", file.display()))?;
            eprintln!("wrote {}", file.display());
        }
        (measured, "measured now on this machine".to_string())
    } else {
        let (text, source) = match &args.measured {
            Some(file) => (
                coloc_model::user_file::read_user_text(file, coloc_model::user_file::MAX_WORKLOAD)
                    .context("--measured")?,
                file.display().to_string(),
            ),
            None => (
                calibrate::KVM_2CPU_MEASURED.to_string(),
                "recorded on the development machine (crates/sim/data/kvm-2cpu-kernels.tsv)"
                    .to_string(),
            ),
        };
        let measured = calibrate::parse_measured(&text).with_context(|| source.clone())?;
        (measured, source)
    };
    let judged = judge(&platform, cases, &measured, &source)?;
    print!(
        "{}",
        render(&platform, &judged.cases, &judged.rows, &source)
    );
    if !judged.unmeasured.is_empty() {
        println!(
            "not measured, left out: {}",
            judged
                .unmeasured
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(())
}

/// The comparison table, the error figures, the known gaps and the fitted
/// figures.
fn render(platform: &Platform, cases: &[Case], rows: &[Row], source: &str) -> String {
    let mut s = format!(
        "calibration: {} cases on sim:{}, measured times {source}\n",
        cases.len(),
        platform.name
    );
    s += &format!(
        "{:<24} {:<10} {:>11} {:>12} {:>8}\n",
        "case", "app", "measured s", "simulated s", "error %"
    );
    for r in rows {
        let app = app_name(cases, r);
        s += &format!(
            "{:<24} {:<10} {:>11.3} {:>12.3} {:>+8.1}{}\n",
            r.case,
            app,
            r.measured_s,
            r.simulated_s,
            100.0 * r.error(),
            if calibrate::known_gap(&r.case).is_some() {
                "  known gap"
            } else {
                ""
            }
        );
    }
    let covered = calibrate::outside_gaps(rows);
    let within = covered
        .iter()
        .filter(|r| r.error().abs() <= TARGET_ERROR)
        .count();
    s += &format!(
        "max |error| {:.1}% over the {} apps outside the known gaps ({:.1}% with them); {within} of \
         them within {:.0}%\n",
        100.0 * calibrate::max_error(&covered),
        covered.len(),
        100.0 * calibrate::max_error(rows),
        100.0 * TARGET_ERROR
    );
    let worst = covered
        .iter()
        .max_by(|a, b| a.error().abs().total_cmp(&b.error().abs()));
    s += &render_beyond(&beyond_target(cases, &covered));
    if let Some(w) = worst {
        s += &format!(
            "worst: {} {}: measured {:.3} s, simulated {:.3} s ({:+.1}%)\n",
            w.case,
            app_name(cases, w),
            w.measured_s,
            w.simulated_s,
            100.0 * w.error()
        );
    }
    s += "known gaps (compared, left out of the fit and of the max):";
    s += if KNOWN_GAPS.is_empty() {
        " none\n"
    } else {
        "\n"
    };
    for (case, why) in KNOWN_GAPS {
        s += &format!("  {case}: {why}\n");
    }
    s += &format!(
        "fitted machine figures of {} (the only parameters fitted; the kernel models come from \
         the kernels' code):\n",
        platform.name
    );
    for (name, v) in platform.params.fields() {
        if FITTED.contains(&name) {
            s += &format!("  {name} = {v}\n");
        }
    }
    s
}

/// The apps beyond [`TARGET_ERROR`] under the effect that explains them
/// ([`beyond_target`]), then those no known effect explains.
fn render_beyond(groups: &[Beyond]) -> String {
    if groups.is_empty() {
        return String::new();
    }
    let mut s = format!(
        "beyond {:.0}%, by the effect the model leaves out:\n",
        100.0 * TARGET_ERROR
    );
    for g in groups {
        let apps: Vec<String> = g
            .apps
            .iter()
            .map(|(r, name)| format!("{} {name} {:+.1}%", r.case, 100.0 * r.error()))
            .collect();
        match g.effect {
            Some(e) => s += &format!("  {e}: {}\n    ({})\n", apps.join(", "), e.why()),
            None => s += &format!("  unexplained: {}\n", apps.join(", ")),
        }
    }
    s
}

/// Runs every case `args.reps` times on this machine through the harness
/// and keeps, per case, the run with the shortest makespan; returns the
/// times and their TSV.
fn measure(cases: &[Case], args: &CalibrateSimArgs) -> Result<(Vec<Measured>, String)> {
    let target = Target::Host(crate::host::start()?);
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| default_out_dir("calibrate-sim", "measure"));
    Ok(measure_cases(
        &target,
        Side::Real,
        cases,
        args.reps,
        &out,
        &stop_flag()?,
        &Listed { prefix: "" },
    )?)
}
