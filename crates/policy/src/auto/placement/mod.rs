//! Where auto's partitions lie and which memory policy each app gets
//! (docs/policies/auto.md, Placement and memory).
//!
//! Problem: auto sizes a partition per app (`partitions`), and contiguous
//! topology order puts each where its turn falls. On a machine with several
//! last-level caches or memory nodes that decides which apps share a cache, a
//! bus or a memory controller, and which spread over several: a data-sharing
//! app split over two LLCs loses its shared lines, a streaming one packed on one
//! node's controller loses bandwidth (ReSense, TACO 2013, §2; Tang et al., ISCA
//! 2011, §3–4). An app whose partition spans several nodes keeps its pages where
//! its threads first touched them, so one node's controller may serve them all
//! (Thread Tranquilizer, TACO 2012, §2.2).
//!
//! Approach, with the sizes auto decided unchanged:
//! - Placement, only where the machine has more than one LLC or NUMA node and
//!   some app has a stored profile: each latency-class app (arrival order)
//!   takes whole cores laid out as Tang et al.'s Algorithm 1 chooses (§5.1,
//!   [`crate::tang`]: share or distribute at the LLC and bus levels, against
//!   the other apps of the partitioning); the other apps' partitions are cut
//!   from the CPUs left by ReSensor (ReSense §2.3, [`crate::resense`]), each
//!   app asking for as many threads as its partition has CPUs, so its score
//!   says whether those CPUs are packed under few instances or spread over
//!   many. Apps without a profile score 0 there ("any core", the least loaded
//!   instance). A result that is not one exclusive partition of the asked size
//!   per app, covering the machine, is dropped for the contiguous one.
//! - Memory, only on a machine with several NUMA nodes: an app whose partition
//!   lies on one node allocates there (`Local`); one whose partition spans
//!   several gets `Interleave` when it is memory-intensive by Thread
//!   Tranquilizer's rule (§3, Figure 7's first branch:
//!   [`crate::tranquilizer::classify`], over the same samples of its rates),
//!   else nothing changes. Interleaving spreads its pages, and with them its
//!   requests, over the controllers of the nodes it runs on.
//!
//! Both hold only in auto's own arrangement: its trial measures the whole
//! arrangement, placement and memory included, against Linux (`auto/trial.rs`),
//! and its Linux windows leave memory as it was.

use std::collections::BTreeMap;

use coloc_model::profile::{self, AppProfile};
use coloc_model::reason::{Memory, PlanReason, TangChoice};
use coloc_model::topology::ObjKind;
use coloc_model::{AppClass, AppId, AppView, CpuSet, MemPolicy, View};

use crate::resense::assign::{assign, Request};
use crate::resense::scores::{vectors, ScoreSource};
use crate::resense::{cases_used, levels};
use crate::tang::levels::Levels;
use crate::tang::Tang;
use crate::tranquilizer::classify::{classify, Class};
use crate::tranquilizer::window::{rates, Rates};
use crate::tranquilizer::{known, TranquilizerConfig};

#[cfg(test)]
pub(crate) mod tests;

/// Placement and memory policy from the apps' stored profiles and their
/// observed rates.
#[derive(Debug)]
pub(crate) struct Placer {
    /// The apps' stored profiles (ReSense's scores, Tang's characteristics,
    /// the stored bandwidth the memory rule reads without counters).
    profiles: Vec<AppProfile>,
    scores: ScoreSource,
    tang: Tang,
    /// Thread Tranquilizer's settings: Δ, the bandwidth substitute and the
    /// number of samples a class is read from.
    cfg: TranquilizerConfig,
    /// Each running app's rates over its last intervals, newest last.
    samples: BTreeMap<AppId, Vec<Rates>>,
}

impl Default for Placer {
    fn default() -> Self {
        Self::new(Vec::new())
    }
}

impl Placer {
    pub(crate) fn new(profiles: Vec<AppProfile>) -> Self {
        Self {
            scores: ScoreSource::Profiles(profiles.clone()),
            tang: Tang::new(profiles.clone()),
            profiles,
            cfg: TranquilizerConfig::default(),
            samples: BTreeMap::new(),
        }
    }

    /// Takes in each running app's rates from the view's previous observation
    /// to its last (call once per new observation). Only the memory rule reads
    /// them, and only on a machine with several nodes: on one, none are taken.
    pub(crate) fn observe(&mut self, view: &View<'_>) {
        self.samples
            .retain(|id, _| view.apps.iter().any(|a| a.id == *id));
        if view.topology.numa_nodes() < 2 {
            return;
        }
        let (Some(prev), Some(last)) = (view.prev, view.last) else {
            return;
        };
        for a in view.running() {
            if let Some(r) = rates(prev, last, a.id) {
                let s = self.samples.entry(a.id).or_default();
                s.push(r);
                let excess = s.len().saturating_sub(self.cfg.samples);
                s.drain(..excess);
            }
        }
    }

    /// The partitions of `members` (arrival order), each as large as its
    /// contiguous slice in `slices`, placed by Tang's heuristic and ReSense's
    /// scores, with what decided ([`Placed`]); None where placement does not
    /// apply (one LLC and one node, no profile, slices that do not cut the
    /// machine into one exclusive slice per app).
    pub(crate) fn place(
        &self,
        view: &View<'_>,
        members: &[&AppView],
        slices: &[CpuSet],
    ) -> Option<Placed> {
        let topology = view.topology;
        let all = topology.cpus();
        let sizes: Vec<usize> = slices.iter().map(CpuSet::len).collect();
        let several = topology.last_level_caches().len() > 1 || topology.numa_nodes() > 1;
        let profiled = |a: &AppView| profile::find(&self.profiles, &a.spec).is_some();
        if !several
            || !members.iter().any(|a| profiled(a))
            || sizes.iter().sum::<usize>() != all.len()
            || !exclusive(slices)
        {
            return None;
        }
        let mut out = vec![CpuSet::new(); members.len()];
        let mut reasons = vec![PlanReason::PlacedByProfiles];
        let mut tang_choices = Vec::new();
        // Latency apps first, whole cores as Algorithm 1 lays them out.
        let tang = Levels::new(topology);
        let per_core = tang.cores.iter().map(CpuSet::len).max().unwrap_or(1).max(1);
        let mut free: Vec<usize> = (0..tang.cores.len()).collect();
        let mut taken = CpuSet::new();
        for (i, a) in members.iter().enumerate() {
            if a.spec.class != AppClass::Latency {
                continue;
            }
            let others = members.iter().filter(|b| b.id != a.id).copied();
            let (choice, line) = self.tang.choice(a, others);
            let n = sizes[i].div_ceil(per_core);
            let cores = tang.place(&free, n, choice);
            if cores.len() < n {
                return None;
            }
            free.retain(|c| !cores.contains(c));
            out[i] = tang.cpus(&cores).iter().take(sizes[i]).collect();
            taken = taken.union(&out[i]);
            tang_choices.push((
                a.id,
                TangChoice {
                    choice: choice.label().to_string(),
                    line,
                    cpus: out[i].clone(),
                },
            ));
        }
        // The others by ReSensor over the CPUs left.
        let levels = levels(topology);
        let (scores, _) = vectors(view, &levels, &self.scores);
        let score_of = |a: &AppView| {
            view.apps
                .iter()
                .position(|b| b.id == a.id)
                .map_or_else(|| vec![0.0; levels.len()], |k| scores[k].clone())
        };
        let rest: Vec<usize> = (0..members.len())
            .filter(|&i| members[i].spec.class != AppClass::Latency)
            .collect();
        let requests: Vec<Request> = rest
            .iter()
            .map(|&i| Request {
                threads: sizes[i],
                live: sizes[i],
                scores: score_of(members[i]),
            })
            .collect();
        let placed = assign(topology, &all.difference(&taken), &levels, &requests);
        for (&i, cpus) in rest.iter().zip(&placed.cpus) {
            out[i] = cpus.iter().copied().collect();
        }
        let cases = cases_used(&levels, &placed);
        if !cases.is_empty() {
            reasons.push(PlanReason::SharingCases { levels: cases });
        }
        let unprofiled: Vec<AppId> = members
            .iter()
            .filter(|a| !profiled(a))
            .map(|a| a.id)
            .collect();
        if !unprofiled.is_empty() {
            reasons.push(PlanReason::Unprofiled { apps: unprofiled });
        }
        let fits = out.iter().map(CpuSet::len).eq(sizes.iter().copied()) && exclusive(&out);
        fits.then_some(Placed {
            cuts: out,
            reasons,
            tang: tang_choices,
        })
    }

    /// The memory policy of `app` on its partition `cpus` in auto's
    /// arrangement, and why; None on a machine with one node (nothing to
    /// choose).
    pub(crate) fn memory(
        &self,
        view: &View<'_>,
        app: &AppView,
        cpus: &CpuSet,
    ) -> (MemPolicy, Option<Memory>) {
        let nodes: Vec<&CpuSet> = view
            .topology
            .objects_of(ObjKind::NumaNode)
            .map(|(_, o)| &o.cpus)
            .collect();
        if nodes.len() < 2 || cpus.is_empty() {
            return (MemPolicy::Default, None);
        }
        let spanned = nodes.iter().filter(|n| !n.is_disjoint(cpus)).count();
        if spanned <= 1 {
            return (MemPolicy::Local, Some(Memory::Local));
        }
        let nodes = spanned as u32;
        let samples = self.samples.get(&app.id).map_or(&[][..], Vec::as_slice);
        if samples.len() < 2 {
            return (MemPolicy::Default, Some(Memory::Unclassified { nodes }));
        }
        let known = known(&self.profiles, None, app, view.topology);
        let c = classify(samples, &known, &self.cfg);
        match c.class {
            Class::Memory => (
                MemPolicy::Interleave,
                Some(Memory::Interleave {
                    nodes,
                    class: c.why,
                }),
            ),
            Class::Cpu => (
                MemPolicy::Default,
                Some(Memory::AsIs {
                    nodes,
                    class: c.why,
                }),
            ),
        }
    }
}

/// Partitions placed by stored profiles, and what decided.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Placed {
    /// One partition per member, in the members' order.
    pub cuts: Vec<CpuSet>,
    /// Plan-wide: placed by profiles, ReSense's cases, apps without a profile.
    pub reasons: Vec<PlanReason>,
    /// Tang's choice for each latency member.
    pub tang: Vec<(AppId, TangChoice)>,
}

/// Whether the slices are pairwise disjoint.
fn exclusive(slices: &[CpuSet]) -> bool {
    let union = slices.iter().fold(CpuSet::new(), |acc, s| acc.union(s));
    union.len() == slices.iter().map(CpuSet::len).sum::<usize>()
}
