//! The search driver: validates the workload, counts the space, and evaluates
//! it exhaustively or bounded (see the module doc of [`super`]).

use std::collections::HashSet;
use std::time::Duration;

use coloc_model::Workload;
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use rayon::prelude::*;
use rayon::ThreadPool;

use super::eval::{evaluate, Scores};
use super::space::{Counts, Space, SymTree};
use super::{Best, Config, Metric, OracleError, OracleOptions, OracleReport, Progress};
use crate::model::model;
use crate::platform::Platform;

/// Configurations evaluated together. Fixed, so that results do not depend
/// on the number of worker threads.
const BATCH: usize = 16;

/// Random neighbour draws per wanted neighbour before local improvement gives
/// up on a base (every neighbour already evaluated).
const DRAWS: usize = 64;

/// One app as the search sees it.
#[derive(Clone, Debug)]
struct App {
    /// DoP candidates; one entry (the requested threads) unless malleable.
    dops: Vec<u16>,
    malleable: bool,
}

/// A point to evaluate: per-leaf count vectors in the tree's layout order.
#[derive(Clone, Debug)]
struct Candidate {
    placement: Vec<u16>,
    orbit: f64,
}

/// Searches the best static configuration of `workload` on `platform`.
pub fn search(
    platform: &Platform,
    workload: &Workload,
    opts: &OracleOptions<'_>,
) -> Result<OracleReport, OracleError> {
    let apps = validate(platform, workload, opts)?;
    let tree = SymTree::new(&platform.topology);
    let targets = dop_splits(&apps);
    let mut per_cpu = 1;
    let mut configurations = Some(0.0);
    let mut raw = Some(0.0);
    for t in &targets {
        let mut space = Space::new(&tree, t.clone());
        per_cpu = per_cpu.max(space.per_cpu);
        configurations = configurations
            .zip(space.configurations())
            .map(|(a, b)| a + b);
        raw = raw.zip(space.raw_placements()).map(|(a, b)| a + b);
    }
    let bounded = configurations.is_none_or(|c| c > opts.max_configs as f64);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(opts.threads.max(1))
        .build()
        .map_err(|e| OracleError::Run(format!("no worker threads: {e}")))?;
    let mut s = Searcher {
        pool,
        platform,
        workload,
        opts,
        tree: &tree,
        apps: &apps,
        seen: HashSet::new(),
        best: Vec::new(),
        evaluated: 0,
        raw_covered: 0.0,
        planned: if bounded {
            opts.max_configs
        } else {
            configurations.unwrap_or(0.0) as usize
        },
        bounded,
    };
    if bounded {
        s.bounded_search(&targets)?;
    } else {
        for t in &targets {
            let forms = Space::new(&tree, t.clone()).enumerate();
            let candidates: Vec<Candidate> = forms
                .iter()
                .map(|f| {
                    let c = tree.canonical(apps.len(), f);
                    Candidate {
                        placement: c.layout,
                        orbit: c.orbit,
                    }
                })
                .collect();
            for chunk in candidates.chunks(BATCH) {
                s.evaluate(chunk)?;
            }
        }
    }
    Ok(OracleReport {
        platform: platform.name.clone(),
        apps: workload.apps.iter().map(|a| a.name.clone()).collect(),
        dop_splits: targets.len(),
        per_cpu,
        configurations,
        raw_placements: raw,
        evaluated: s.evaluated,
        raw_covered: s.raw_covered,
        bounded,
        seed: opts.seed,
        best: s.best,
    })
}

/// Checks that the workload is static and simulable; returns each app's DoP
/// candidates.
fn validate(
    platform: &Platform,
    workload: &Workload,
    opts: &OracleOptions<'_>,
) -> Result<Vec<App>, OracleError> {
    if workload.apps.is_empty() {
        return Err(OracleError::Empty);
    }
    if let Some(solo) = &opts.solo_s {
        if solo.len() != workload.apps.len() || solo.iter().any(|s| s.is_nan() || *s <= 0.0) {
            return Err(OracleError::Solo(solo.len(), workload.apps.len()));
        }
    }
    let cpus = platform.topology.cpus().len();
    workload
        .apps
        .iter()
        .map(|a| {
            let not_static = |reason: String| OracleError::NotStatic {
                app: a.name.clone(),
                reason,
            };
            if a.arrive_at != Duration::ZERO {
                return Err(not_static(format!("arrives at {:?}", a.arrive_at)));
            }
            if a.repeat != 1 {
                return Err(not_static(format!("repeats {} times", a.repeat)));
            }
            let name = a.model.as_deref().ok_or_else(|| OracleError::Model {
                app: a.name.clone(),
                reason: "no `model` (the oracle simulates)".into(),
            })?;
            let m = opts
                .models
                .iter()
                .find(|m| m.name == name)
                .cloned()
                .or_else(|| model(name))
                .ok_or_else(|| OracleError::Model {
                    app: a.name.clone(),
                    reason: format!(
                        "unknown model `{name}` (known models: {})",
                        crate::model::model_names()
                    ),
                })?;
            let threads = a.threads_on(cpus);
            let requested = u16::try_from(threads)
                .ok()
                .filter(|&t| t < u16::MAX - 1)
                .ok_or_else(|| OracleError::TooManyThreads {
                    app: a.name.clone(),
                    threads,
                    max: u16::MAX - 2,
                })?;
            let malleable = a.malleable && m.openmp;
            let mut dops: Vec<u16> = if malleable {
                (0..16)
                    .map(|k| 1u16 << k)
                    .take_while(|&d| d < requested)
                    .collect()
            } else {
                Vec::new()
            };
            dops.push(requested);
            Ok(App { dops, malleable })
        })
        .collect()
}

/// Every combination of the apps' DoP candidates.
fn dop_splits(apps: &[App]) -> Vec<Counts> {
    apps.iter().fold(vec![Vec::new()], |acc, a| {
        acc.iter()
            .flat_map(|prefix| {
                a.dops.iter().map(move |&d| {
                    let mut v = prefix.clone();
                    v.push(d);
                    v
                })
            })
            .collect()
    })
}

struct Searcher<'a> {
    /// `opts.threads` workers.
    pool: ThreadPool,
    platform: &'a Platform,
    workload: &'a Workload,
    opts: &'a OracleOptions<'a>,
    tree: &'a SymTree,
    apps: &'a [App],
    /// Canonical keys already evaluated (or queued).
    seen: HashSet<Vec<u16>>,
    best: Vec<Best>,
    evaluated: usize,
    raw_covered: f64,
    planned: usize,
    bounded: bool,
}

impl Searcher<'_> {
    fn napps(&self) -> usize {
        self.apps.len()
    }

    fn config(&self, placement: &[u16]) -> Config {
        let n = self.napps();
        let mut cpus: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (leaf, &cpu) in self.tree.leaves.iter().enumerate() {
            for (a, list) in cpus.iter_mut().enumerate() {
                list.extend(std::iter::repeat_n(
                    cpu,
                    usize::from(placement[leaf * n + a]),
                ));
            }
        }
        let dop = cpus
            .iter()
            .zip(self.apps)
            .map(|(c, a)| a.malleable.then_some(c.len() as u32))
            .collect();
        Config {
            sharing: self.tree.render(n, placement),
            cpus,
            dop,
        }
    }

    /// Evaluates a batch in parallel and keeps each metric's best, in the
    /// batch's order whatever the number of workers.
    fn evaluate(&mut self, batch: &[Candidate]) -> Result<(), OracleError> {
        let configs: Vec<Config> = batch.iter().map(|c| self.config(&c.placement)).collect();
        let solo = self.opts.solo_s.as_deref();
        let (platform, workload, seed) = (self.platform, self.workload, self.opts.seed);
        let models = self.opts.models;
        let results: Vec<Result<Scores, OracleError>> = self.pool.install(|| {
            configs
                .par_iter()
                .map(|config| evaluate(platform, workload, config, seed, solo, models))
                .collect()
        });
        for ((config, candidate), r) in configs.into_iter().zip(batch).zip(results) {
            let scores = r?;
            self.evaluated += 1;
            self.raw_covered += candidate.orbit;
            for metric in Metric::ALL {
                let Some(value) = scores.get(metric) else {
                    continue;
                };
                match self.best.iter_mut().find(|b| b.metric == metric) {
                    Some(b) if !metric.better(value, b.value) => {}
                    Some(b) => {
                        *b = Best {
                            metric,
                            value,
                            config: config.clone(),
                            scores: scores.clone(),
                        }
                    }
                    None => self.best.push(Best {
                        metric,
                        value,
                        config: config.clone(),
                        scores: scores.clone(),
                    }),
                }
            }
        }
        self.best.sort_by_key(|b| b.metric);
        if let Some(report) = self.opts.progress {
            report(&Progress {
                evaluated: self.evaluated,
                planned: self.planned,
                bounded: self.bounded,
                best_makespan: self
                    .best
                    .iter()
                    .find(|b| b.metric == Metric::Makespan)
                    .map(|b| b.value),
            });
        }
        Ok(())
    }

    /// Canonicalizes `placement`; None when that configuration was seen.
    fn fresh(&mut self, placement: &[u16]) -> Option<Candidate> {
        let c = self.tree.canonical(self.napps(), placement);
        self.seen.insert(c.key).then_some(Candidate {
            placement: c.layout,
            orbit: c.orbit,
        })
    }

    fn per_cpu(&self, target: &[u16]) -> u16 {
        let threads: usize = target.iter().map(|&t| usize::from(t)).sum();
        threads.div_ceil(self.tree.leaves.len()).max(1) as u16
    }

    /// Fills leaves in `order`, app after app, `per_cpu` threads per leaf.
    fn fill(&self, target: &[u16], order: &[usize]) -> Vec<u16> {
        let n = self.napps();
        let q = self.per_cpu(target);
        let mut p = vec![0u16; self.tree.leaves.len() * n];
        let mut slots = order
            .iter()
            .flat_map(|&l| std::iter::repeat_n(l, usize::from(q)));
        for (a, &t) in target.iter().enumerate() {
            for _ in 0..t {
                let l = slots.next().expect("per_cpu leaves room for every thread");
                p[l * n + a] += 1;
            }
        }
        p
    }

    /// Bounded search: seeds, random samples, then local improvement, within
    /// `max_configs` evaluations.
    fn bounded_search(&mut self, targets: &[Counts]) -> Result<(), OracleError> {
        let budget = self.opts.max_configs.max(1);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(self.opts.seed);
        let layout: Vec<usize> = (0..self.tree.leaves.len()).collect();
        let scatter = self.tree.scatter_order();
        // Seeds and samples: half of the budget.
        let mut queue: Vec<Candidate> = Vec::new();
        for t in targets {
            for order in [&layout, &scatter] {
                let p = self.fill(t, order);
                queue.extend(self.fresh(&p));
            }
        }
        queue.truncate(budget / 2 + 1);
        let mut misses = 0;
        while queue.len() < budget / 2 && misses < DRAWS * BATCH {
            let t = &targets[rng.random_range(0..targets.len())];
            let mut order = layout.clone();
            for i in (1..order.len()).rev() {
                order.swap(i, rng.random_range(0..=i));
            }
            let p = self.fill(t, &order);
            match self.fresh(&p) {
                Some(c) => queue.push(c),
                None => misses += 1,
            }
        }
        for chunk in queue.chunks(BATCH) {
            self.evaluate(chunk)?;
        }
        // Local improvement around each metric's best in turn.
        let metrics: Vec<Metric> = self.best.iter().map(|b| b.metric).collect();
        let mut stuck = 0;
        let mut turn = 0;
        while self.evaluated < budget && stuck < metrics.len() {
            let metric = metrics[turn % metrics.len()];
            turn += 1;
            let base = self
                .best
                .iter()
                .find(|b| b.metric == metric)
                .map(|b| self.placement_of(&b.config))
                .expect("every searched metric has a best");
            let want = BATCH.min(budget - self.evaluated);
            let mut batch = Vec::new();
            for _ in 0..want * DRAWS {
                if batch.len() == want {
                    break;
                }
                if let Some(p) = self.neighbour(&base, &mut rng) {
                    batch.extend(self.fresh(&p));
                }
            }
            if batch.is_empty() {
                stuck += 1;
                continue;
            }
            stuck = 0;
            self.evaluate(&batch)?;
        }
        Ok(())
    }

    /// The per-leaf counts of a configuration.
    fn placement_of(&self, config: &Config) -> Vec<u16> {
        let n = self.napps();
        let mut p = vec![0u16; self.tree.leaves.len() * n];
        for (a, cpus) in config.cpus.iter().enumerate() {
            for cpu in cpus {
                let leaf = self
                    .tree
                    .leaves
                    .iter()
                    .position(|c| c == cpu)
                    .expect("configurations use the tree's CPUs");
                p[leaf * n + a] += 1;
            }
        }
        p
    }

    /// A random neighbour: two threads of different apps swap CPUs, a thread
    /// moves to a CPU with room, or a malleable app steps to the next or
    /// previous DoP candidate (threads added on free CPUs or removed at
    /// random). None when the draw is not applicable.
    fn neighbour(&self, base: &[u16], rng: &mut Xoshiro256PlusPlus) -> Option<Vec<u16>> {
        let n = self.napps();
        let leaves = self.tree.leaves.len();
        let mut p = base.to_vec();
        let totals: Vec<u16> = (0..n)
            .map(|a| (0..leaves).map(|l| p[l * n + a]).sum())
            .collect();
        let q = self.per_cpu(&totals);
        let load = |p: &[u16], l: usize| p[l * n..(l + 1) * n].iter().sum::<u16>();
        let pick_thread = |p: &[u16], rng: &mut Xoshiro256PlusPlus, a: usize| {
            let mut k = rng.random_range(0..totals[a].max(1));
            (0..leaves).find(|&l| {
                let c = p[l * n + a];
                if k < c {
                    true
                } else {
                    k -= c;
                    false
                }
            })
        };
        let a = rng.random_range(0..n);
        match rng.random_range(0..3) {
            0 => {
                let b = rng.random_range(0..n);
                let la = pick_thread(&p, rng, a)?;
                let lb = pick_thread(&p, rng, b)?;
                if a == b || la == lb {
                    return None;
                }
                p[la * n + a] -= 1;
                p[lb * n + a] += 1;
                p[lb * n + b] -= 1;
                p[la * n + b] += 1;
            }
            1 => {
                let from = pick_thread(&p, rng, a)?;
                let to = rng.random_range(0..leaves);
                if to == from || load(&p, to) >= q {
                    return None;
                }
                p[from * n + a] -= 1;
                p[to * n + a] += 1;
            }
            _ => {
                let app = &self.apps[a];
                let i = app.dops.iter().position(|&d| d == totals[a])?;
                let up = rng.random_range(0..2) == 0;
                let target = if up {
                    *app.dops.get(i + 1)?
                } else {
                    *app.dops.get(i.checked_sub(1)?)?
                };
                let mut new_totals = totals.clone();
                new_totals[a] = target;
                let q = self.per_cpu(&new_totals);
                let mut count = totals[a];
                while count < target {
                    let free: Vec<usize> = (0..leaves).filter(|&l| load(&p, l) < q).collect();
                    let l = free[rng.random_range(0..free.len())];
                    p[l * n + a] += 1;
                    count += 1;
                }
                while count > target {
                    let l = pick_thread(&p, rng, a)?;
                    p[l * n + a] -= 1;
                    count -= 1;
                }
                if (0..leaves).any(|l| load(&p, l) > q) {
                    return None;
                }
            }
        }
        Some(p)
    }
}
