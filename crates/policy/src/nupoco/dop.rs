//! DoP computation, NuPoCo Algorithm 1 (§5.2).
//!
//! Starting from an empty allocation, every unit (a memory node's free cores, or
//! a smaller unit when there are more apps than nodes; see
//! [`CoreMap::level_for`](crate::cores::CoreMap::level_for)) is given in turn to
//! the app whose getting it yields the highest predicted NuUtil (eq. 7), as
//! the §4 network predicts it with every app's requests spread over the memory
//! nodes. Every app gets at least one unit: once the units left are as many as
//! the apps still without one, only those apps compete. Among equal NuUtil the
//! app with fewer cores wins (identical apps split evenly), then the earlier
//! app.

use coloc_model::queueing::{Demand, NumaSystem};

use crate::cores::{Core, CoreMap};

/// The apps Algorithm 1 divides the units among. Apps outside the contest
/// (serial, fixed) hold one or a few cores each and their rates in those
/// sections are unknown, so they are left out of the prediction.
#[derive(Clone, Debug)]
pub(crate) struct Contest<'a> {
    pub system: &'a NumaSystem,
    pub map: &'a CoreMap,
    /// Each competing app's MRR (requests per second of compute time).
    pub mrr: &'a [f64],
    /// Fraction of an app's requests going to each memory node.
    pub spread: &'a [f64],
}

impl Contest<'_> {
    /// NuUtil when app `a` has `counts[a][i]` cores in node i.
    pub fn nu_util(&self, counts: &[Vec<u32>]) -> f64 {
        let nodes: Vec<Vec<Demand>> = (0..self.map.nodes)
            .map(|i| {
                counts
                    .iter()
                    .zip(self.mrr)
                    .filter(|(c, _)| c[i] > 0)
                    .map(|(c, &mrr)| Demand {
                        cores: c[i],
                        mrr: self.spread.iter().map(|f| f * mrr).collect(),
                    })
                    .collect()
            })
            .collect();
        self.system.predict_demands(&nodes).nu_util()
    }

    /// Algorithm 1 over `units`: the cores each app gets, in unit order.
    pub fn allocate(&self, units: &[Vec<Core>]) -> Vec<Vec<Core>> {
        let apps = self.mrr.len();
        let mut got: Vec<Vec<Core>> = vec![Vec::new(); apps];
        let mut counts = vec![vec![0u32; self.map.nodes]; apps];
        for (u, unit) in units.iter().enumerate() {
            let starving: Vec<usize> = (0..apps).filter(|&a| got[a].is_empty()).collect();
            let candidates: Vec<usize> = if units.len() - u <= starving.len() {
                starving
            } else {
                (0..apps).collect()
            };
            let add = self.map.per_node(unit);
            let mut best: Option<(f64, usize)> = None;
            for a in candidates {
                for (c, n) in counts[a].iter_mut().zip(&add) {
                    *c += n;
                }
                let util = self.nu_util(&counts);
                for (c, n) in counts[a].iter_mut().zip(&add) {
                    *c -= n;
                }
                let better = best.is_none_or(|(b, w)| {
                    util > b + 1e-12 || (util > b - 1e-12 && got[a].len() < got[w].len())
                });
                if better {
                    best = Some((util, a));
                }
            }
            let Some((_, a)) = best else { break };
            for (c, n) in counts[a].iter_mut().zip(&add) {
                *c += n;
            }
            got[a].extend(unit);
        }
        got
    }
}
