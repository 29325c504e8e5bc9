//! `coloc gen`: workloads of library models made the way ReSense made its
//! experiments (§3; docs/workload-format.md, Generated workloads), written as ordinary workload
//! files that `coloc sim` and `coloc compare --sim` read back.
//!
//! - `--size small|medium|large`: a dynamic workload (§3.2–3.4: 2, 4 or 8 apps
//!   running at once, random arrival times and repetitions);
//! - `--static N --apps K`: N static workloads of K apps (§3.6, the comparison
//!   with the oracle: every app at 0 s, once by default).
//!
//! - `--suite DIR`: a mix of 2–4 real programs of the bench suite with random
//!   arrivals (`bench/suite/README.md`), for `coloc run`, `compare` and
//!   `bench mixes`.
//!
//! Everything random comes from `--seed`, so the same command writes the same
//! file (`coloc_sim::gen`). The file starts with a comment saying how it was
//! made.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{ArgGroup, Args};
use coloc_harness::resolve_platform;
use coloc_model::workload::to_toml;
use coloc_model::Workload;
use coloc_sim::gen::{self, GenSpec, Size};
use coloc_sim::Platform;

use coloc_harness::suite::Suite;

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("kind").required(true).args(["size", "static_count", "suite"])))]
pub struct GenArgs {
    /// A dynamic workload: `small` (ReSense §3.2: two apps, a third when the
    /// second has finished), `medium` (§3.3: 4 running at once), `large` (§3.4:
    /// up to 8), with random arrivals and repetitions.
    #[arg(long)]
    pub size: Option<Size>,
    /// Static workloads instead (ReSense §3.6, for the oracle): this many files,
    /// seeds SEED, SEED+1, …, each of --apps apps arriving at 0 s.
    #[arg(long = "static", value_name = "N")]
    pub static_count: Option<u32>,
    /// A mix of the real-program suite in DIR instead (`bench/suite`): 2–4
    /// of its programs, random arrivals, as its `suite.toml` says; the file's
    /// comment says whether the seed is a tuning or a held-out one.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["platform", "threads", "pool", "horizon", "max_repeat"])]
    pub suite: Option<PathBuf>,
    /// Apps of each static workload.
    #[arg(long, default_value_t = 4, requires = "static_count")]
    pub apps: usize,
    /// Runs of each app of a static workload (the oracle needs 1).
    #[arg(long, default_value_t = 1, requires = "static_count")]
    pub repeat: u32,
    /// The platform the workload is for (a built-in name, an hwloc XML file or a
    /// TOML platform file): it sets the default thread count, and a small
    /// workload's third arrival is the second app's solo time on it.
    #[arg(long, required_unless_present = "suite")]
    pub platform: Option<String>,
    /// Threads of every app [default: the platform's cores shared by the apps
    /// running at once: cores / 2, 4, 8 (small, medium, large) or cores /
    /// --apps, at least 1 — 6 on the 48-core Opteron for large, as in ReSense
    /// §3.1].
    #[arg(long)]
    pub threads: Option<u32>,
    /// Models to draw from, comma-separated: model names (`coloc sim
    /// --list-models`) or suites (PARSEC, NPB, SPEC, Tang, kernel) [default:
    /// ReSense's programs: its twelve PARSEC ones (Table IV) for small and
    /// static workloads (§3.2, §3.6), with its NPB ones (Table V) otherwise].
    #[arg(long, value_delimiter = ',')]
    pub pool: Vec<String>,
    /// Dynamic: arrivals fall in [0, HORIZON], e.g. `60s` [default: 400s,
    /// ReSense §3.1].
    #[arg(long, value_parser = humantime::parse_duration, conflicts_with = "static_count")]
    pub horizon: Option<Duration>,
    /// Dynamic: each app runs 1 to MAX times back to back [default: 10, ReSense
    /// §3.1].
    #[arg(long, value_name = "MAX", conflicts_with = "static_count")]
    pub max_repeat: Option<u32>,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Where to write: a file, or a directory for --static N with N > 1 (one
    /// file per workload, named after it) [default: stdout].
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn main(args: GenArgs) -> Result<()> {
    let files: Vec<(Workload, String)> = match (&args.suite, &args.platform) {
        (Some(dir), _) => vec![Suite::load(dir)?.mix_file(args.seed)?],
        (None, None) => bail!("--platform is required with --size and --static"),
        (None, Some(name)) => {
            let platform = resolve_platform(name)?;
            let pool = gen::expand_pool(&args.pool).context("--pool")?;
            match (args.size, args.static_count) {
                (Some(size), _) => vec![dynamic(&args, name, &platform, size, pool)?],
                (None, Some(n)) => statics(&args, name, &platform, n, pool)?,
                (None, None) => bail!("give --size small|medium|large, --static N or --suite DIR"),
            }
        }
    };
    match (&args.out, files.as_slice()) {
        (None, [(_, text)]) => print!("{text}"),
        (None, _) => bail!(
            "--static {}: {} workloads are {} files: give --out DIRECTORY",
            files.len(),
            files.len(),
            files.len()
        ),
        (Some(file), [(_, text)]) if !file.is_dir() => write(file, text)?,
        (Some(dir), _) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("--out: creating {}", dir.display()))?;
            for (w, text) in &files {
                write(&dir.join(format!("{}.toml", w.name)), text)?;
            }
        }
    }
    Ok(())
}

fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("--out: writing {}", path.display()))?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

/// The thread count given, else the platform's default for `running` apps
/// at once.
fn threads(args: &GenArgs, platform: &Platform, running: usize) -> u32 {
    args.threads
        .unwrap_or_else(|| gen::default_threads(platform, running))
}

fn dynamic(
    args: &GenArgs,
    platform_arg: &str,
    platform: &Platform,
    size: Size,
    pool: Vec<String>,
) -> Result<(Workload, String)> {
    let mut spec = GenSpec::resense(size, threads(args, platform, size.concurrent()), args.seed);
    if !pool.is_empty() {
        spec.pool = pool;
    }
    if let Some(h) = args.horizon {
        spec.horizon = h;
    }
    if let Some(k) = args.max_repeat {
        spec.max_repeat = k;
    }
    let w = gen::dynamic(&spec, platform)?;
    let made = format!(
        "`coloc gen --size {size} --platform {} --threads {} --seed {} --horizon {} \
         --max-repeat {} --pool {}` (ReSense §3)",
        platform_arg,
        spec.threads,
        spec.seed,
        arg_duration(spec.horizon),
        spec.max_repeat,
        spec.pool.join(",")
    );
    let text = file_text(&w, &made);
    Ok((w, text))
}

fn statics(
    args: &GenArgs,
    platform_arg: &str,
    platform: &Platform,
    n: u32,
    pool: Vec<String>,
) -> Result<Vec<(Workload, String)>> {
    if n == 0 || args.apps == 0 {
        bail!("--static N --apps K: both must be at least 1");
    }
    let pool = if pool.is_empty() {
        gen::resense_pool(&[&gen::RESENSE_PARSEC])
    } else {
        pool
    };
    let threads = threads(args, platform, args.apps);
    (0..u64::from(n))
        .map(|i| {
            let seed = args.seed.wrapping_add(i);
            let w = gen::static_mix(&pool, args.apps, threads, args.repeat, seed)?;
            let made = format!(
                "`coloc gen --static 1 --apps {} --repeat {} --platform {} --threads {threads} \
                 --seed {seed} --pool {}` (ReSense §3.6)",
                args.apps,
                args.repeat,
                platform_arg,
                pool.join(",")
            );
            let text = file_text(&w, &made);
            Ok((w, text))
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

/// The workload file, with a comment saying how it was made.
fn file_text(w: &Workload, made: &str) -> String {
    format!(
        "# Generated by {made}: the same command writes the same file.\n{}",
        to_toml(w)
    )
}
