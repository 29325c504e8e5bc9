//! Random mixes for the adversarial search (docs/simulator.md, Adversarial
//! search): 2–4 apps of random region structure and scalability arriving at
//! random times, each a model of its own, drawn from one seed.
//!
//! Region structures are those the shim records from the real-program suite
//! (`bench/suite/README.md`): many short regions (OpenBLAS' calls, GROMACS'
//! steps, `heat`), one long region after a few short ones (`heat-region`,
//! FFTW's plans then its transforms), serial phases between parallel ones
//! (LAMMPS without its OPENMP package, FFTW's check passes), and pthreads
//! programs whose team runs from start to end (xz, zstd). Scalability comes
//! from barriers per instruction (a team that synchronizes often loses most
//! when a member is descheduled), a lock's share of the work, memory
//! traffic and the serial share, each drawn over the range the library's
//! models span (`model/library.rs`: no barrier to `kernel-barrier`'s 735 per
//! 10^9 instructions, no memory traffic to `mg`'s).

use std::fmt;
use std::time::Duration;

use coloc_model::{AppSpec, Workload};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

use crate::model::{model, AppModel, Phase};

/// How an app's work is cut into regions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Structure {
    /// Many short parallel regions with short serial steps between them.
    ManyShort,
    /// A few short regions, then one long region holding most of the work.
    OneLong,
    /// Parallel sections separated by long serial phases.
    SerialPhases,
    /// A pthreads team that runs from start to end (no OpenMP regions).
    Pthreads,
}

impl fmt::Display for Structure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Structure::ManyShort => "many-short",
            Structure::OneLong => "one-long",
            Structure::SerialPhases => "serial-phases",
            Structure::Pthreads => "pthreads",
        })
    }
}

/// What a search draws its mixes from.
#[derive(Clone, Debug, PartialEq)]
pub struct MixSpec {
    /// Apps per mix, at least and at most (both included).
    pub min_apps: usize,
    pub max_apps: usize,
    /// Threads of every app: the platform's CPUs, as the suite runs.
    pub threads: u32,
    /// Arrivals after the first fall in [0, horizon].
    pub horizon: Duration,
    /// An app's work alone on one CPU of the platform is drawn in this
    /// range, seconds at `ginstr_per_sec`.
    pub solo_secs: (f64, f64),
    /// 10^9 instructions a CPU of the platform retires per second at a CPI
    /// of 1 (its clock).
    pub ginstr_per_sec: f64,
}

impl MixSpec {
    /// Mixes for a platform of `cpus` CPUs at `freq_ghz`: 2–4 apps of as
    /// many threads as CPUs, arrivals within 5 s, 1–8 s of work each on one
    /// CPU, so that a mix runs for seconds of simulated time and the apps
    /// overlap as the suite's do.
    pub fn for_platform(cpus: u32, freq_ghz: f64) -> Self {
        Self {
            min_apps: 2,
            max_apps: 4,
            threads: cpus.max(1),
            horizon: Duration::from_secs(5),
            solo_secs: (1.0, 8.0),
            ginstr_per_sec: freq_ghz,
        }
    }
}

/// One random mix: its models and the workload that runs them.
#[derive(Clone, Debug, PartialEq)]
pub struct Mix {
    pub seed: u64,
    pub models: Vec<AppModel>,
    pub structures: Vec<Structure>,
    pub workload: Workload,
}

/// The mix of `seed`: the same seed and spec give the same mix.
pub fn mix(spec: &MixSpec, seed: u64) -> Mix {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let most = spec.max_apps.max(spec.min_apps).max(1);
    let n = rng.random_range(spec.min_apps.clamp(1, most)..=most);
    let horizon_ms = spec.horizon.as_millis() as u64;
    let (mut models, mut structures, mut apps) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..n {
        let structure = match rng.random_range(0..4) {
            0 => Structure::ManyShort,
            1 => Structure::OneLong,
            2 => Structure::SerialPhases,
            _ => Structure::Pthreads,
        };
        let name = format!("m{seed}-{i}");
        let m = app_model(&name, structure, spec, &mut rng);
        let arrive_ms = if i == 0 {
            0
        } else {
            rng.random_range(0..=horizon_ms)
        };
        let malleable = m.openmp && rng.random_bool(0.5);
        apps.push(AppSpec {
            arrive_at: Duration::from_millis(arrive_ms),
            malleable,
            ..AppSpec::model(format!("{structure}-{i}"), &name, spec.threads)
        });
        models.push(m);
        structures.push(structure);
    }
    Mix {
        seed,
        models,
        structures,
        workload: Workload {
            name: format!("search-{seed}"),
            epoch: None,
            apps,
        },
    }
}

/// An app model of `structure` with random scalability and work.
fn app_model(
    name: &str,
    structure: Structure,
    spec: &MixSpec,
    rng: &mut Xoshiro256PlusPlus,
) -> AppModel {
    let base = model("kernel-compute").expect("a library model");
    let cpi = rng.random_range(0.4..1.2);
    let (lo, hi) = spec.solo_secs;
    let secs = rng.random_range(lo.min(hi)..=hi.max(lo));
    let work = secs * spec.ginstr_per_sec / cpi;
    // Barriers: none, some, or as many as kernel-barrier's.
    let barriers = match rng.random_range(0..3) {
        0 => 0.0,
        1 => rng.random_range(10.0..100.0),
        _ => rng.random_range(100.0..800.0),
    };
    let llc_apki = if rng.random_bool(0.3) {
        rng.random_range(1.0..20.0)
    } else {
        rng.random_range(0.0..1.0)
    };
    let lock_fraction = if rng.random_bool(0.2) {
        rng.random_range(0.0..0.3)
    } else {
        0.0
    };
    let phases = phases(structure, work, rng);
    AppModel {
        name: name.into(),
        about: format!("search: {structure}"),
        phases,
        cpi,
        llc_apki,
        reuse: rng.random_range(0.2..1.0),
        private_mb: rng.random_range(0.1..64.0),
        barriers_per_ginstr: barriers,
        lock_fraction,
        lock_acquires_per_ginstr: if lock_fraction > 0.0 { 1e5 } else { 0.0 },
        openmp: structure != Structure::Pthreads,
        ..base
    }
}

/// `work` (10^9 instructions) cut into the phases of `structure`.
fn phases(structure: Structure, work: f64, rng: &mut Xoshiro256PlusPlus) -> Vec<Phase> {
    let serial = rng.random_range(0.0..0.05) * work;
    let mut v = vec![Phase::serial(serial.max(1e-3))];
    let parallel = work - serial;
    match structure {
        Structure::ManyShort => {
            // Serial steps between the regions take up to a fifth of the
            // work.
            let n = rng.random_range(20..400);
            let steps = rng.random_range(0.0..0.2) * parallel;
            for _ in 0..n {
                v.push(Phase::parallel((parallel - steps) / n as f64));
                if steps > 0.0 {
                    v.push(Phase::serial(steps / n as f64));
                }
            }
        }
        Structure::OneLong => {
            let short = rng.random_range(0..12);
            let head = rng.random_range(0.0..0.1) * parallel;
            for _ in 0..short {
                v.push(Phase::parallel(head / short as f64));
            }
            v.push(Phase::parallel(
                parallel - if short > 0 { head } else { 0.0 },
            ));
        }
        Structure::SerialPhases => {
            let n = rng.random_range(2..8);
            let share = rng.random_range(0.1..0.5);
            let regions = rng.random_range(1..10);
            for _ in 0..n {
                let section = parallel / n as f64;
                for _ in 0..regions {
                    v.push(Phase::parallel(section * (1.0 - share) / regions as f64));
                }
                v.push(Phase::serial(section * share));
            }
        }
        Structure::Pthreads => v.push(Phase::parallel(parallel)),
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> MixSpec {
        MixSpec::for_platform(2, 2.45)
    }

    #[test]
    fn same_seed_same_mix_other_seed_other() {
        assert_eq!(mix(&spec(), 7), mix(&spec(), 7));
        assert_ne!(mix(&spec(), 7), mix(&spec(), 8));
    }

    /// Over many seeds: 2–4 apps, the first at 0 and the rest within the
    /// horizon, valid models, every structure drawn, work in range.
    #[test]
    fn mixes_stay_in_their_ranges() {
        let s = spec();
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..300 {
            let m = mix(&s, seed);
            let n = m.workload.apps.len();
            assert!((2..=4).contains(&n), "{seed}: {n} apps");
            assert_eq!(m.workload.apps[0].arrive_at, Duration::ZERO);
            for (app, model) in m.workload.apps.iter().zip(&m.models) {
                model.validate().unwrap();
                assert!(app.arrive_at <= s.horizon);
                assert_eq!(app.threads, 2);
                assert_eq!(app.model.as_deref(), Some(model.name.as_str()));
                assert!(!app.malleable || model.openmp, "{seed}");
                let secs = model.total_ginstr() * model.cpi / s.ginstr_per_sec;
                assert!(
                    secs >= s.solo_secs.0 * 0.999 && secs <= s.solo_secs.1 * 1.001,
                    "{seed}: {secs}"
                );
            }
            seen.extend(m.structures.iter().map(|s| s.to_string()));
        }
        assert_eq!(seen.len(), 4, "{seen:?}");
    }
}
