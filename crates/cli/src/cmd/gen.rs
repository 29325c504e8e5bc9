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
use coloc_sim::gen::{self, Asked, GenFile, Size};

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
    let files: Vec<GenFile> = match (&args.suite, &args.platform) {
        (Some(dir), _) => {
            let (workload, text) = Suite::load(dir)?.mix_file(args.seed)?;
            vec![GenFile { workload, text }]
        }
        (None, None) => bail!("--platform is required with --size and --static"),
        (None, Some(name)) => {
            let platform = resolve_platform(name)?;
            let asked = Asked {
                threads: args.threads,
                pool: gen::expand_pool(&args.pool).context("--pool")?,
                horizon: args.horizon,
                max_repeat: args.max_repeat,
                seed: args.seed,
            };
            match (args.size, args.static_count) {
                (Some(size), _) => vec![gen::dynamic_file(size, &asked, &platform, name)?],
                (None, Some(n)) => {
                    if n == 0 || args.apps == 0 {
                        bail!("--static N --apps K: both must be at least 1");
                    }
                    gen::static_files(n, args.apps, args.repeat, &asked, &platform, name)?
                }
                (None, None) => bail!("give --size small|medium|large, --static N or --suite DIR"),
            }
        }
    };
    match (&args.out, files.as_slice()) {
        (None, [f]) => print!("{}", f.text),
        (None, _) => bail!(
            "--static {}: {} workloads are {} files: give --out DIRECTORY",
            files.len(),
            files.len(),
            files.len()
        ),
        (Some(file), [f]) if !file.is_dir() => write(file, &f.text)?,
        (Some(dir), _) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("--out: creating {}", dir.display()))?;
            for f in &files {
                write(&dir.join(format!("{}.toml", f.workload.name)), &f.text)?;
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
