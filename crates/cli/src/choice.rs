//! Which policy a running command runs (`run`, `sim`, `compare`, `solo`): a
//! name from the policy registry ([`coloc_policy::POLICIES`]), or `oracle` in
//! the simulator — the best static configuration of a static workload, found by
//! simulating the sharing configurations on the platform, then replayed like any
//! other policy so that its trace and tables compare with theirs
//! (docs/simulator.md, The oracle). This is the one place the CLI turns a
//! policy name into a policy.

use std::io::{self, IsTerminal, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use clap::{Args, ValueEnum};
use coloc_harness::compare::{check_plan, Contender};
use coloc_harness::{HarnessError, Target};
use coloc_model::Workload;
use coloc_policy::{Policy, PolicyContext};
use coloc_sim::oracle::{self, Metric, OracleError, OracleOptions, OraclePolicy};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The name that selects the oracle: not in `coloc_policy::POLICIES`, because
/// it is not a pure policy of a View but a search that simulates.
pub const ORACLE: &str = "oracle";

/// Where `--help` lists the oracle's options.
const ORACLE_HEADING: &str = "Oracle (--policy oracle, simulator only)";

/// The oracle's options, for `--policy oracle` and `--policies ...,oracle`.
#[derive(Debug, Clone, Args)]
pub struct OracleArgs {
    /// The metric whose best configuration the oracle runs.
    #[arg(long, value_enum, default_value_t = OracleMetric::Makespan, help_heading = ORACLE_HEADING)]
    pub oracle_metric: OracleMetric,
    /// Most configurations to simulate. A larger space is searched bounded
    /// (seeded sampling, then local improvement around the best), and the report
    /// says so: its values are then bounds on the optimum.
    #[arg(
        long,
        value_name = "N",
        default_value_t = OracleOptions::default().max_configs,
        help_heading = ORACLE_HEADING
    )]
    pub oracle_max_configs: usize,
    /// Configurations simulated in parallel [default: one per available CPU].
    #[arg(long, value_name = "N", help_heading = ORACLE_HEADING)]
    pub oracle_threads: Option<usize>,
}

/// `--oracle-metric` values: the oracle's metrics that need no solo times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OracleMetric {
    /// Time to the last exit (NuPoCo §6's total turnaround).
    Makespan,
    /// Average response time (ReSense §3).
    Art,
    /// Sum of 1 / execution time (ReSense §3).
    Throughput,
}

impl From<OracleMetric> for Metric {
    fn from(m: OracleMetric) -> Metric {
        match m {
            OracleMetric::Makespan => Metric::Makespan,
            OracleMetric::Art => Metric::Art,
            OracleMetric::Throughput => Metric::Throughput,
        }
    }
}

/// A policy to run, once or repeatedly.
#[derive(Debug, Clone)]
pub enum Choice {
    /// A policy of `coloc_policy::POLICIES`, built afresh for every run (policies
    /// keep state between decisions).
    Named(String),
    /// The oracle's replay of the configuration it found best.
    Oracle(OraclePolicy),
}

impl Choice {
    /// A registry policy; `oracle` is refused (it needs a simulated platform
    /// and options, see [`choose`]).
    pub fn named(name: &str) -> Result<Choice> {
        check_name(name)?;
        if name == ORACLE {
            return Err(oracle_needs_sim());
        }
        Ok(Choice::Named(name.to_string()))
    }

    pub fn name(&self) -> &str {
        match self {
            Choice::Named(n) => n,
            Choice::Oracle(_) => ORACLE,
        }
    }

    /// A fresh policy for one run.
    pub fn make(&self, ctx: &PolicyContext) -> Result<Box<dyn Policy>, HarnessError> {
        Ok(match self {
            Choice::Named(n) => coloc_policy::build(n, ctx)?,
            Choice::Oracle(p) => Box::new(p.clone()),
        })
    }
}

impl Contender for Choice {
    fn name(&self) -> &str {
        Choice::name(self)
    }

    fn make(&self, ctx: &PolicyContext) -> Result<Box<dyn Policy>, HarnessError> {
        Choice::make(self, ctx)
    }
}

/// Refuses unknown policies, a baseline not among them and zero repeats before
/// anything runs.
pub fn check_policies(policies: &[String], baseline: &str, repeat: u32) -> Result<()> {
    for p in policies {
        check_name(p)?;
    }
    Ok(check_plan(policies, baseline, repeat)?)
}

/// Checks that `name` selects a policy: a registry name, `oracle`, or a
/// placement policy with a memory/scheduling layer on top (`nupoco+tranquilizer`,
/// docs/policies/tranquilizer.md).
pub fn check_name(name: &str) -> Result<()> {
    if name == ORACLE {
        return Ok(());
    }
    if name.split('+').any(|n| n == ORACLE) && name.contains('+') {
        return Err(anyhow!(
            "policy `{name}`: the `{ORACLE}` replays one static configuration found by search \
             and takes no layer; layer a registry policy instead (e.g. `nupoco+tranquilizer`)"
        ));
    }
    coloc_policy::build(name, &PolicyContext::default())
        .map(drop)
        .map_err(|e| match e {
            coloc_policy::LayerError::Unknown(e) => {
                anyhow!("{e}, or `{ORACLE}` on a simulated platform")
            }
            e => anyhow!(e),
        })
}

fn oracle_needs_sim() -> anyhow::Error {
    anyhow!(
        "policy `{ORACLE}`: the oracle finds the best static configuration by simulating each \
         one, so it runs on a simulated platform only: `coloc sim WORKLOAD --platform P --policy \
         {ORACLE}` or `coloc compare WORKLOAD --sim P --policies ...,{ORACLE}` \
         (`coloc sim --list-platforms`)"
    )
}

/// Resolves the policy `name` for `workload` on `target`. For `oracle`: searches
/// the sharing configurations on the simulated platform (the target's seed for
/// every simulation), writes the report — space, configurations evaluated, raw
/// placements they stand for, whether the search was bounded and by what — to
/// `report`, and returns the replay of the best configuration for
/// `args.oracle_metric`.
pub fn choose(
    target: &Target,
    workload: &Workload,
    name: &str,
    args: &OracleArgs,
    report: &mut dyn Write,
) -> Result<Choice> {
    if name != ORACLE {
        return Choice::named(name);
    }
    let Target::Sim { platform, seed } = target else {
        return Err(oracle_needs_sim());
    };
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(
            "{prefix:>24} [{bar:30}] {pos}/{len} configurations  {elapsed}  {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    bar.set_prefix(ORACLE);
    // The space is counted (and, when small, enumerated) before the first batch:
    // keep the clock moving meanwhile. Without a terminal the bar is hidden, so
    // a line every 10 s says how far the search is.
    bar.set_message("counting the search space");
    bar.enable_steady_tick(Duration::from_millis(250));
    let lines = (!io::stderr().is_terminal()).then(|| Mutex::new(Instant::now()));
    if lines.is_some() {
        eprintln!(
            "{ORACLE}: searching the static configurations of {}",
            workload.name
        );
    }
    let progress = |p: &oracle::Progress| {
        if let Some(last) = lines.as_ref().and_then(|l| l.lock().ok()).as_deref_mut() {
            if last.elapsed() >= Duration::from_secs(10) || p.evaluated >= p.planned {
                *last = Instant::now();
                eprintln!(
                    "{ORACLE}: {}/{} configurations evaluated{}",
                    p.evaluated,
                    p.planned,
                    p.best_makespan
                        .map_or(String::new(), |m| format!(", best makespan {m:.2} s"))
                );
            }
        }
        bar.set_length(p.planned as u64);
        bar.set_position(p.evaluated as u64);
        if let Some(m) = p.best_makespan {
            bar.set_message(format!("best makespan {m:.2} s"));
        }
    };
    let opts = OracleOptions {
        max_configs: args.oracle_max_configs,
        seed: *seed,
        threads: args
            .oracle_threads
            .unwrap_or(OracleOptions::default().threads),
        solo_s: None,
        progress: Some(&progress),
        models: &[],
    };
    let found = oracle::search(platform, workload, &opts).map_err(|e| match e {
        OracleError::NotStatic { .. } => anyhow!(
            "{e}: one configuration places every thread for the whole run, which describes \
             a workload only when all its apps run together from start to end (make one with \
             `coloc gen --static`)"
        ),
        e => anyhow!(e),
    });
    bar.finish_and_clear();
    let found = found.with_context(|| format!("policy `{ORACLE}` on {}", workload.name))?;
    write!(report, "{found}")?;
    if found.bounded {
        writeln!(
            report,
            "bound: --oracle-max-configs {} (raise it for a wider search)",
            args.oracle_max_configs
        )?;
    }
    let metric = Metric::from(args.oracle_metric);
    let best = found
        .best_for(metric)
        .with_context(|| format!("the oracle found no configuration for {}", metric.name()))?;
    writeln!(
        report,
        "running the best configuration for {} ({:.3} in the search, seed {seed}) through the \
         Manager\n",
        metric.name(),
        best.value
    )?;
    Ok(Choice::Oracle(OraclePolicy::new(best.config.clone())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_placement_policy_takes_a_layer_and_bad_combinations_say_why() {
        for ok in [
            "tranquilizer",
            "nupoco+tranquilizer",
            "equal+tranquilizer",
            "nupoco+guard",
            ORACLE,
        ] {
            check_name(ok).unwrap_or_else(|e| panic!("{ok}: {e:#}"));
        }
        let bad = [
            ("oracle+tranquilizer", "takes no layer"),
            ("tranquilizer+nupoco", "goes after the `+`"),
            ("guard+nupoco", "goes after the `+`"),
            ("nupoco+equal", "cannot be a layer"),
            ("nope+tranquilizer", "unknown policy `nope`"),
            ("nope", "or `oracle` on a simulated platform"),
        ];
        for (name, says) in bad {
            let e = format!("{:#}", check_name(name).unwrap_err());
            assert!(e.contains(says), "{name}: {e}");
        }
        assert_eq!(
            Choice::named("nupoco+tranquilizer")
                .unwrap()
                .make(&PolicyContext::default())
                .unwrap()
                .name(),
            "nupoco+tranquilizer"
        );
    }
}
