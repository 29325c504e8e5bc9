//! Generated workloads of library models (docs/workload-format.md, Generated workloads),
//! built the way ReSense built its experiments (§3).
//!
//! A workload `{ts_1(BM_1, k_1) … ts_n(BM_n, k_n)}`: benchmark BM_i arrives at
//! ts_i and runs k_i times back to back (`repeat`), k drawn from 1..=10 and arrival
//! times from [0, 400] s (§3.1). The three dynamic sizes:
//! - **small** (§3.2): three PARSEC benchmarks; the first two start together and
//!   the third starts when the second has finished, so one or two run at a time.
//!   A workload file holds times, not "after X", so the third arrives at the
//!   second's k runs' solo time on the platform, simulated (pinned one thread per
//!   core); co-running only slows the second one down, so the third may overlap
//!   its last moments;
//! - **medium** (§3.3): four benchmarks from PARSEC and NPB; two start together,
//!   the third and fourth arrive at random times; with the repetitions, four run
//!   at once most of the time;
//! - **large** (§3.4): eight benchmarks from PARSEC and NPB, the first at 0 and the
//!   others at random times: one to eight run at once.
//!
//! Benchmarks are drawn without replacement while the pool lasts (then the pool is
//! drawn again), so a workload repeats a model only when the pool is smaller than
//! the workload. **Static** workloads (§3.6), for the comparison with the oracle,
//! start all apps at 0 with the same number of repetitions, so that every sharing
//! configuration can be enumerated. Everything is drawn from one generator seeded
//! explicitly: the same seed gives the same workload.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use coloc_model::{AppSpec, Cpu, Workload};
use rand::rngs::Xoshiro256PlusPlus;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};

use crate::characterize::solo_run;
use crate::model::{model, models};
use crate::platform::Platform;

/// The paper's workload sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Size {
    Small,
    Medium,
    Large,
}

impl Size {
    /// Apps running at once at most (small: 2, medium: 4, large: 8).
    pub fn concurrent(self) -> usize {
        match self {
            Size::Small => 2,
            Size::Medium => 4,
            Size::Large => 8,
        }
    }

    /// Apps in the workload (small has a third that follows the second).
    pub fn apps(self) -> usize {
        match self {
            Size::Small => 3,
            Size::Medium => 4,
            Size::Large => 8,
        }
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Size::Small => "small",
            Size::Medium => "medium",
            Size::Large => "large",
        })
    }
}

impl FromStr for Size {
    type Err = GenError;
    fn from_str(s: &str) -> Result<Self, GenError> {
        match s {
            "small" => Ok(Size::Small),
            "medium" => Ok(Size::Medium),
            "large" => Ok(Size::Large),
            other => Err(GenError::Size(other.to_string())),
        }
    }
}

/// Why a workload could not be generated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GenError {
    #[error("unknown workload size `{0}` (expected small, medium or large)")]
    Size(String),
    #[error("the model pool is empty")]
    EmptyPool,
    #[error("unknown model `{0}` in the pool")]
    UnknownModel(String),
    #[error("`{field}` must be at least 1")]
    Zero { field: &'static str },
    #[error(
        "`{0}` is neither a model nor a suite (suites: PARSEC, NPB, SPEC, Tang, kernel; \
         models: {names})",
        names = crate::model::model_names()
    )]
    PoolItem(String),
}

/// What to generate.
#[derive(Clone, Debug, PartialEq)]
pub struct GenSpec {
    pub size: Size,
    /// Threads of every app. ReSense ran 2, 4, 8 and 6 on Yorkfield, Harpertown,
    /// the Xeon and the Opteron (§3.1).
    pub threads: u32,
    /// Random arrivals fall in [0, horizon] (the paper: 400 s).
    pub horizon: Duration,
    /// Repetitions are drawn from 1..=max_repeat (the paper: 10).
    pub max_repeat: u32,
    /// Library model names to draw from.
    pub pool: Vec<String>,
    pub seed: u64,
}

impl GenSpec {
    /// The paper's setup for `size`: PARSEC models for small workloads, PARSEC and
    /// NPB for medium and large ones, arrivals in [0, 400] s, 1 to 10 repetitions.
    pub fn resense(size: Size, threads: u32, seed: u64) -> Self {
        let pool = match size {
            Size::Small => resense_pool(&[&RESENSE_PARSEC]),
            Size::Medium | Size::Large => resense_pool(&[&RESENSE_PARSEC, &RESENSE_NPB]),
        };
        Self {
            size,
            threads,
            horizon: Duration::from_secs(400),
            max_repeat: 10,
            pool,
            seed,
        }
    }
}

/// ReSense's PARSEC programs (Table IV; PARSEC 2.1's x264 is not among
/// them), every one a library model.
pub const RESENSE_PARSEC: [&str; 12] = [
    "blackscholes",
    "bodytrack",
    "canneal",
    "dedup",
    "facesim",
    "ferret",
    "fluidanimate",
    "freqmine",
    "raytrace",
    "streamcluster",
    "swaptions",
    "vips",
];

/// ReSense's NPB programs (Table V) that the library models (DC, LU, CG and
/// UA it does not).
pub const RESENSE_NPB: [&str; 5] = ["is", "sp", "ft", "mg", "ep"];

/// The names of `lists`, in order, as a pool.
pub fn resense_pool(lists: &[&[&str]]) -> Vec<String> {
    lists
        .iter()
        .flat_map(|l| l.iter().map(|n| n.to_string()))
        .collect()
}

/// Model names and suite names (as [`suite`] reads them) expanded into
/// model names, in the order given; empty for none (then each kind of
/// workload takes its default pool).
pub fn expand_pool(items: &[String]) -> Result<Vec<String>, GenError> {
    let mut out = Vec::new();
    for item in items {
        if model(item).is_some() {
            out.push(item.clone());
            continue;
        }
        let suite = suite(&[item]);
        if suite.is_empty() {
            return Err(GenError::PoolItem(item.clone()));
        }
        out.extend(suite);
    }
    Ok(out)
}

/// The default thread count of generated apps: the platform's cores
/// shared among the apps that run at once, at least 1.
pub fn default_threads(platform: &Platform, running: usize) -> u32 {
    (platform.topology.cores().len() / running.max(1)).max(1) as u32
}

/// Library models of the given suites (their description starts with the suite's
/// name: `PARSEC`, `NPB`, `Tang`, `kernel`), in library order.
pub fn suite(suites: &[&str]) -> Vec<String> {
    models()
        .into_iter()
        .filter(|m| suites.iter().any(|s| m.about.starts_with(s)))
        .map(|m| m.name)
        .collect()
}

/// A dynamic workload as `spec` says, for `platform` (whose speed times the third
/// app of a small workload).
pub fn dynamic(spec: &GenSpec, platform: &Platform) -> Result<Workload, GenError> {
    check(&spec.pool, spec.threads)?;
    if spec.max_repeat == 0 {
        return Err(GenError::Zero {
            field: "max_repeat",
        });
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(spec.seed);
    let names = draw(&spec.pool, spec.size.apps(), &mut rng);
    let horizon_ms = spec.horizon.as_millis() as u64;
    let mut apps: Vec<AppSpec> = names
        .iter()
        .map(|m| {
            let repeat = rng.random_range(1..=spec.max_repeat);
            app(m, spec.threads, repeat)
        })
        .collect();
    // Arrivals: the first two together (the first alone for large), the rest at
    // random times — except small's third, which follows the second.
    let together = match spec.size {
        Size::Small | Size::Medium => 2,
        Size::Large => 1,
    };
    for a in apps.iter_mut().skip(together) {
        a.arrive_at = Duration::from_millis(rng.random_range(0..=horizon_ms));
    }
    if spec.size == Size::Small {
        let second = &apps[1];
        let solo = solo_time(platform, second);
        apps[2].arrive_at = solo * second.repeat;
    }
    name_apart(&mut apps);
    Ok(Workload {
        name: format!("resense-{}-{}", spec.size, spec.seed),
        epoch: None,
        apps,
    })
}

/// A static workload (§3.6): `n` apps drawn from `pool`, all arriving at 0 with
/// `repeat` runs each.
pub fn static_mix(
    pool: &[String],
    n: usize,
    threads: u32,
    repeat: u32,
    seed: u64,
) -> Result<Workload, GenError> {
    check(pool, threads)?;
    if repeat == 0 {
        return Err(GenError::Zero { field: "repeat" });
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut apps: Vec<AppSpec> = draw(pool, n, &mut rng)
        .iter()
        .map(|m| app(m, threads, repeat))
        .collect();
    name_apart(&mut apps);
    Ok(Workload {
        name: format!("static-{n}-{seed}"),
        epoch: None,
        apps,
    })
}

/// How a mix of the real-program suite is drawn (`bench/suite/README.md`).
#[derive(Clone, Debug, PartialEq)]
pub struct SuiteMixSpec {
    /// Programs per mix, at least and at most (both included).
    pub min_apps: usize,
    pub max_apps: usize,
    /// Arrivals after the first fall in [0, horizon].
    pub horizon: Duration,
    pub seed: u64,
}

/// A mix of the real-program suite: between `min_apps` and `max_apps`
/// distinct programs of `programs` (fewer when the suite has fewer), the first
/// arriving at 0 and each other at a random time in [0, horizon], listed by
/// arrival. Each keeps its own file's command, threads and settings. The same
/// seed and programs give the same mix.
pub fn suite_mix(programs: &[AppSpec], spec: &SuiteMixSpec) -> Result<Workload, GenError> {
    if programs.is_empty() {
        return Err(GenError::EmptyPool);
    }
    if spec.min_apps == 0 {
        return Err(GenError::Zero { field: "min_apps" });
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(spec.seed);
    let most = spec.max_apps.max(spec.min_apps).min(programs.len());
    let n = rng.random_range(spec.min_apps.min(most)..=most);
    let names: Vec<String> = programs.iter().map(|p| p.name.clone()).collect();
    let horizon_ms = spec.horizon.as_millis() as u64;
    let mut apps: Vec<AppSpec> = draw(&names, n, &mut rng)
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let program = programs
                .iter()
                .find(|p| p.name == *name)
                .expect("drawn from programs");
            let arrive_ms = if i == 0 {
                0
            } else {
                rng.random_range(0..=horizon_ms)
            };
            AppSpec {
                arrive_at: Duration::from_millis(arrive_ms),
                ..program.clone()
            }
        })
        .collect();
    apps.sort_by_key(|a| a.arrive_at);
    Ok(Workload {
        name: format!("suite-{}", spec.seed),
        epoch: None,
        apps,
    })
}

fn check(pool: &[String], threads: u32) -> Result<(), GenError> {
    if pool.is_empty() {
        return Err(GenError::EmptyPool);
    }
    if let Some(unknown) = pool.iter().find(|m| model(m).is_none()) {
        return Err(GenError::UnknownModel(unknown.clone()));
    }
    if threads == 0 {
        return Err(GenError::Zero { field: "threads" });
    }
    Ok(())
}

/// `n` names from `pool`: a shuffled pass over the pool, then another, and so on.
fn draw(pool: &[String], n: usize, rng: &mut Xoshiro256PlusPlus) -> Vec<String> {
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let mut pass = pool.to_vec();
        pass.shuffle(rng);
        out.extend(pass.into_iter().take(n - out.len()));
    }
    out
}

fn app(model_name: &str, threads: u32, repeat: u32) -> AppSpec {
    AppSpec {
        repeat,
        ..AppSpec::model(model_name, model_name, threads)
    }
}

/// A repeated model's later apps are named `NAME#2`, `NAME#3`, ….
fn name_apart(apps: &mut [AppSpec]) {
    for i in 0..apps.len() {
        let same = apps[..i]
            .iter()
            .filter(|a| a.model == apps[i].model)
            .count();
        if same > 0 {
            apps[i].name = format!("{}#{}", apps[i].name, same + 1);
        }
    }
}

/// One solo run of `app` on `platform`, its threads pinned one per core in tree
/// order (wrapping when it has more threads than the machine has cores).
fn solo_time(platform: &Platform, app: &AppSpec) -> Duration {
    let Some(m) = app.model.as_deref().and_then(model) else {
        return Duration::ZERO;
    };
    let cores: Vec<Cpu> = platform
        .topology
        .cores()
        .iter()
        .filter_map(|c| c.first())
        .collect();
    let cpus: Vec<Cpu> = cores
        .iter()
        .cycle()
        .take(app.threads as usize)
        .copied()
        .collect();
    Duration::from_nanos(solo_run(platform, &m, &cpus, 1).elapsed_ns)
}

/// What `coloc gen` was asked beside the kind of workload: each option
/// given, or None for the paper's (ReSense §3.1) or the platform's default.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Asked {
    /// Threads of every app [default: [`default_threads`]].
    pub threads: Option<u32>,
    /// The models to draw from, expanded ([`expand_pool`]); empty: the paper's.
    pub pool: Vec<String>,
    /// Dynamic workloads: arrivals fall in [0, horizon].
    pub horizon: Option<Duration>,
    /// Dynamic workloads: repetitions drawn from 1..=max_repeat.
    pub max_repeat: Option<u32>,
    pub seed: u64,
}

impl Asked {
    /// The thread count asked, else the platform's default for `running`
    /// apps at once.
    fn threads(&self, platform: &Platform, running: usize) -> u32 {
        self.threads
            .unwrap_or_else(|| default_threads(platform, running))
    }
}

/// A generated workload and its file's text, which starts with a comment
/// saying the command that writes it again.
#[derive(Clone, Debug, PartialEq)]
pub struct GenFile {
    pub workload: Workload,
    pub text: String,
}

impl GenFile {
    /// `workload` as a file made by `command` (a `coloc gen` command line
    /// and the paper section it follows).
    pub fn new(workload: Workload, command: &str) -> GenFile {
        let text = format!(
            "# Generated by {command}: the same command writes the same file.\n{}",
            coloc_model::workload::to_toml(&workload)
        );
        GenFile { workload, text }
    }
}

/// A dynamic workload of `size` for `platform` (named `platform_arg` on the
/// command line) as [`Asked`], as a file (ReSense §3).
pub fn dynamic_file(
    size: Size,
    asked: &Asked,
    platform: &Platform,
    platform_arg: &str,
) -> Result<GenFile, GenError> {
    let mut spec = GenSpec::resense(size, asked.threads(platform, size.concurrent()), asked.seed);
    if !asked.pool.is_empty() {
        spec.pool = asked.pool.clone();
    }
    if let Some(h) = asked.horizon {
        spec.horizon = h;
    }
    if let Some(k) = asked.max_repeat {
        spec.max_repeat = k;
    }
    let w = dynamic(&spec, platform)?;
    let command = format!(
        "`coloc gen --size {size} --platform {platform_arg} --threads {} --seed {} --horizon {} \
         --max-repeat {} --pool {}` (ReSense §3)",
        spec.threads,
        spec.seed,
        arg_duration(spec.horizon),
        spec.max_repeat,
        spec.pool.join(",")
    );
    Ok(GenFile::new(w, &command))
}

/// `n` static workloads of `apps` apps run `repeat` times each, seeds
/// `asked.seed`, `asked.seed + 1`, …, as files (ReSense §3.6), each with the
/// command that writes it alone.
pub fn static_files(
    n: u32,
    apps: usize,
    repeat: u32,
    asked: &Asked,
    platform: &Platform,
    platform_arg: &str,
) -> Result<Vec<GenFile>, GenError> {
    let pool = if asked.pool.is_empty() {
        resense_pool(&[&RESENSE_PARSEC])
    } else {
        asked.pool.clone()
    };
    let threads = asked.threads(platform, apps);
    (0..u64::from(n))
        .map(|i| {
            let seed = asked.seed.wrapping_add(i);
            let w = static_mix(&pool, apps, threads, repeat, seed)?;
            let command = format!(
                "`coloc gen --static 1 --apps {apps} --repeat {repeat} --platform {platform_arg} \
                 --threads {threads} --seed {seed} --pool {}` (ReSense §3.6)",
                pool.join(",")
            );
            Ok(GenFile::new(w, &command))
        })
        .collect()
}

/// A duration as a `--horizon` value that needs no quoting in a shell.
fn arg_duration(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

#[cfg(test)]
mod tests {
    use coloc_model::workload::{parse_workload, to_toml};

    use super::*;
    use crate::platform::platform;

    /// Models stay, suites expand to their models in order, anything else
    /// is refused by name; the default threads share the cores among the
    /// apps running at once, never below 1.
    #[test]
    fn pools_expand_and_threads_share_the_cores() {
        let items = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(expand_pool(&[]).unwrap(), Vec::<String>::new());
        let npb = suite(&["NPB"]);
        assert!(!npb.is_empty());
        let mut want = vec!["mg".to_string()];
        want.extend(npb);
        assert_eq!(expand_pool(&items(&["mg", "NPB"])).unwrap(), want);
        let e = expand_pool(&items(&["mg", "nope"]))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("`nope` is neither a model nor a suite"),
            "{e}"
        );
        let p = platform("opteron48").unwrap();
        let cores = p.topology.cores().len();
        assert_eq!(default_threads(&p, 4), (cores / 4) as u32);
        assert_eq!(default_threads(&p, 0), cores as u32);
        assert_eq!(default_threads(&p, 1000), 1);
    }

    fn gen(size: Size, seed: u64) -> Workload {
        let p = platform("opteron48").unwrap();
        dynamic(&GenSpec::resense(size, 6, seed), &p).unwrap()
    }

    #[test]
    fn same_seed_same_workload_other_seed_other() {
        for size in [Size::Small, Size::Medium, Size::Large] {
            assert_eq!(gen(size, 7), gen(size, 7), "{size}");
            assert_ne!(gen(size, 7).apps, gen(size, 8).apps, "{size}");
        }
        let pool = suite(&["PARSEC"]);
        assert_eq!(
            static_mix(&pool, 4, 6, 2, 3).unwrap(),
            static_mix(&pool, 4, 6, 2, 3).unwrap()
        );
    }

    /// Sizes, pools, arrivals and repetitions as §3 describes them, over seeds;
    /// every generated workload survives a round trip through the file format.
    #[test]
    fn sizes_follow_the_paper() {
        let parsec = resense_pool(&[&RESENSE_PARSEC]);
        let both = resense_pool(&[&RESENSE_PARSEC, &RESENSE_NPB]);
        assert!(parsec.len() >= 3 && both.len() >= 8, "{both:?}");
        for name in &both {
            assert!(model(name).is_some(), "{name} is a library model");
        }
        // (size, apps, pool, apps arriving at 0 by construction)
        let cases = [
            (Size::Small, 3, &parsec, 2),
            (Size::Medium, 4, &both, 2),
            (Size::Large, 8, &both, 1),
        ];
        for (size, n, pool, at_zero) in cases {
            assert_eq!(size.apps(), n);
            for seed in 0..5 {
                let w = gen(size, seed);
                assert_eq!(w.apps.len(), n, "{size} {seed}");
                let mut models: Vec<&str> =
                    w.apps.iter().map(|a| a.model.as_deref().unwrap()).collect();
                assert!(models.iter().all(|m| pool.iter().any(|p| p == m)));
                models.sort();
                models.dedup();
                assert_eq!(models.len(), n, "{size} {seed}: distinct models");
                for (i, a) in w.apps.iter().enumerate() {
                    assert_eq!(a.threads, 6);
                    assert!((1..=10).contains(&a.repeat), "{a:?}");
                    if i < at_zero {
                        assert_eq!(a.arrive_at, Duration::ZERO);
                    } else if size != Size::Small {
                        assert!(a.arrive_at <= Duration::from_secs(400));
                    }
                }
                let text = to_toml(&w);
                let back = parse_workload("gen.toml", &text).unwrap();
                assert_eq!(back.apps, w.apps);
            }
        }
    }

    /// Small: the third app arrives when the second's runs would end alone —
    /// k × its solo time on the platform.
    #[test]
    fn small_third_follows_the_second() {
        let p = platform("opteron48").unwrap();
        let w = gen(Size::Small, 11);
        let second = &w.apps[1];
        let solo = solo_time(&p, second);
        assert!(solo > Duration::from_secs(1), "{solo:?}");
        assert_eq!(w.apps[2].arrive_at, solo * second.repeat);
    }

    #[test]
    fn static_mixes_start_together() {
        let pool = suite(&["PARSEC"]);
        for (n, seed) in [(2, 1), (4, 2), (6, 3)] {
            let w = static_mix(&pool, n, 4, 3, seed).unwrap();
            assert_eq!(w.apps.len(), n);
            assert!(w
                .apps
                .iter()
                .all(|a| a.arrive_at == Duration::ZERO && a.repeat == 3 && a.threads == 4));
            // More apps than models: the pool is drawn again, names kept apart.
            let mut names: Vec<&str> = w.apps.iter().map(|a| a.name.as_str()).collect();
            names.sort();
            names.dedup();
            assert_eq!(names.len(), n);
        }
    }

    fn program(name: &str, threads: u32) -> AppSpec {
        AppSpec {
            malleable: name.starts_with("omp"),
            ..AppSpec::program(name, vec![format!("bin/{name}")], threads)
        }
    }

    /// Over many seeds: 2 to 4 distinct programs of the suite, the first at
    /// 0 s, the others within the horizon, in arrival order, each as its file
    /// says; every count from 2 to 4 occurs; a seed always gives the same mix,
    /// and the file format carries it whole.
    #[test]
    fn suite_mixes_draw_distinct_programs_with_random_arrivals() {
        let programs: Vec<AppSpec> = ["omp-a", "omp-b", "xz", "zstd", "pigz", "omp-c"]
            .iter()
            .map(|n| program(n, 2))
            .collect();
        let spec = |seed| SuiteMixSpec {
            min_apps: 2,
            max_apps: 4,
            horizon: Duration::from_secs(8),
            seed,
        };
        let mut counts = [0; 5];
        for seed in 0..200 {
            let w = suite_mix(&programs, &spec(seed)).unwrap();
            assert_eq!(w, suite_mix(&programs, &spec(seed)).unwrap());
            assert_eq!(w.name, format!("suite-{seed}"));
            let n = w.apps.len();
            assert!((2..=4).contains(&n), "{w:?}");
            counts[n] += 1;
            let mut names: Vec<&str> = w.apps.iter().map(|a| a.name.as_str()).collect();
            names.sort();
            names.dedup();
            assert_eq!(names.len(), n, "distinct programs");
            assert_eq!(w.apps[0].arrive_at, Duration::ZERO);
            assert!(w.apps.windows(2).all(|p| p[0].arrive_at <= p[1].arrive_at));
            assert!(w.apps.iter().all(|a| a.arrive_at <= Duration::from_secs(8)));
            for a in &w.apps {
                let p = programs.iter().find(|p| p.name == a.name).unwrap();
                assert_eq!(
                    (&a.command, a.threads, a.malleable),
                    (&p.command, 2, p.malleable)
                );
            }
            assert_eq!(parse_workload("mix.toml", &to_toml(&w)).unwrap(), w);
        }
        assert!(
            counts[2] > 0 && counts[3] > 0 && counts[4] > 0,
            "{counts:?}"
        );
        assert_ne!(
            suite_mix(&programs, &spec(1)).unwrap().apps,
            suite_mix(&programs, &spec(2)).unwrap().apps
        );
        // A suite of two: every mix is both.
        let w = suite_mix(&programs[..2], &spec(5)).unwrap();
        assert_eq!(w.apps.len(), 2);
        assert_eq!(suite_mix(&[], &spec(1)), Err(GenError::EmptyPool));
    }

    /// A generated file says the command that writes it again, options
    /// defaulted included, and the rest of it reads back as the workload;
    /// static files count their seeds up from the one asked.
    #[test]
    fn a_file_says_its_command_and_reads_back() {
        let yorkfield = platform("yorkfield").unwrap();
        let asked = Asked {
            seed: 7,
            horizon: Some(Duration::from_millis(1500)),
            ..Asked::default()
        };
        let f = dynamic_file(Size::Small, &asked, &yorkfield, "yorkfield").unwrap();
        let first = f.text.lines().next().unwrap();
        assert!(
            first.starts_with(
                "# Generated by `coloc gen --size small --platform yorkfield --threads 2 --seed 7 \
                 --horizon 1500ms --max-repeat 10 --pool "
            ),
            "{first}"
        );
        assert!(
            first.ends_with("` (ReSense §3): the same command writes the same file."),
            "{first}"
        );
        assert_eq!(parse_workload("f", &f.text).unwrap(), f.workload);
        let files = static_files(2, 3, 1, &asked, &yorkfield, "yorkfield").unwrap();
        let seeds: Vec<&str> = files.iter().map(|f| f.workload.name.as_str()).collect();
        assert_eq!(seeds, ["static-3-7", "static-3-8"]);
        assert!(
            files[1].text.contains("--threads 1 --seed 8 --pool "),
            "{}",
            files[1].text
        );
    }

    #[test]
    fn bad_specs_are_errors() {
        let p = platform("kvm-2cpu").unwrap();
        let mut spec = GenSpec::resense(Size::Medium, 2, 1);
        spec.pool = vec!["quake".into()];
        assert_eq!(
            dynamic(&spec, &p),
            Err(GenError::UnknownModel("quake".into()))
        );
        spec.pool.clear();
        assert_eq!(dynamic(&spec, &p), Err(GenError::EmptyPool));
        assert_eq!(
            static_mix(&suite(&["NPB"]), 2, 0, 1, 1),
            Err(GenError::Zero { field: "threads" })
        );
        assert_eq!("huge".parse::<Size>(), Err(GenError::Size("huge".into())));
        assert_eq!("large".parse::<Size>(), Ok(Size::Large));
    }
}
