//! The contention model (docs/simulator.md): from who runs where to how
//! fast every thread progresses, for one interval between two events.
//!
//! A thread's time per instruction is its compute time (CPI / frequency), plus
//! LLC hits (overlapped like misses, by its memory-level parallelism), plus
//! coherence transfers of written shared lines held by teammates on other
//! CPUs (through the shared cache, or across caches and packages), plus memory: unloaded latency divided by its memory-level
//! parallelism, plus the queueing delay of NuPoCo's M/M/1/N/N queue (§3.3) at
//! the links (FSB or interconnect) and the memory controllers its requests
//! cross (`memory.rs`). Its progress rate is its CPU share divided by that time.
//!
//! - **CPU share**: runnable threads on one CPU share it in proportion to their
//!   CFS weight (nice), up to what each uses (a lock waiter sleeps). Threads
//!   waiting at a barrier spin (OpenMP's active wait), so they keep their share
//!   but issue no memory requests.
//! - **LLC**: the footprints of the threads under one cache — each thread's
//!   private set plus each app's shared set counted once per cache — compete; when
//!   they exceed the capacity every footprint keeps the same fraction of itself,
//!   and reusable accesses hit with that fraction. A shared line missed by one
//!   thread is then found by its teammates under the same cache, so shared misses
//!   reach memory once per cache (constructive sharing, ReSense §2.2, Tang §2.1).
//! - **Memory**: customers are the requests each CPU keeps in flight
//!   (`memory.rs`); their request rates are per unit of time not spent
//!   queueing, weighted by share and by activity (the fraction of the time a
//!   thread is not spinning at a barrier). Activity depends on the rates, which
//!   depend on the queueing delays, which depend on the activity: the three are
//!   solved to a fixed point, the queues one damped step per round.
//! - **Teams**: a parallel phase proceeds at the pace of its slowest member
//!   (bulk-synchronous), its lock's serialization, sleeping waiters and
//!   handoffs included (`lock.rs`), plus the cost of each barrier: ⌈log2 n⌉ levels, doubled across packages, and, when a
//!   member shares its CPU, the time a waiter spins for a teammate that is not
//!   running — until the teammate is scheduled again (half a slice on average)
//!   or libgomp's spin count runs out and the waiter sleeps, whichever comes
//!   first ([`spin_wait_s`]) — unless the team waits passively (an OpenMP runtime that started with more threads than CPUs,
//!   or plain threads sleeping in `pthread_barrier_wait`),
//!   in proportion to the co-runners' share of that CPU's weight (a nice-19
//!   co-runner beside a nice-0 team barely delays its barriers).

use coloc_model::barrier::spin_wait_s;

use super::layout::{CpuIdx, Layout};
use super::lock::Lock;
use super::memory::{Demand, Queues};
use super::runner::{Home, Runner, Team};
use crate::platform::Params;

/// Rates for one interval.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Solution {
    /// Per runner: fraction of its CPU.
    pub share: Vec<f64>,
    /// Per runner: the fraction of its CPU it would use if it had the CPU to
    /// itself (below 1 for lock waiters that sleep, `lock.rs`): what it got
    /// short of that it spent runnable but waiting.
    pub demand: Vec<f64>,
    /// Per runner: useful instructions per second.
    pub useful: Vec<f64>,
    /// Per runner: LLC references and misses per instruction.
    pub refs_pi: Vec<f64>,
    pub miss_pi: Vec<f64>,
    /// Per team: instructions of the phase completed per second.
    pub team_rate: Vec<f64>,
    /// Per LLC: the fraction of each footprint under it that the cache holds.
    pub llc_fit: Vec<f64>,
    /// Rounds the fixed point took (at most [`MAX_ITERATIONS`]).
    pub rounds: usize,
    /// The last round's largest change (relative for the memory queues,
    /// absolute for activity): below [`TOLERANCE`] when the fixed point
    /// was reached, else where the round cap stopped it.
    pub residual: f64,
}

impl Solution {
    /// Whether the fixed point was reached to the tolerance.
    pub fn converged(&self) -> bool {
        self.residual < TOLERANCE
    }
}

/// Per-runner quantities that do not depend on the fixed point (its memory
/// requests per instruction to each memory node are kept apart, in one flat
/// table for all runners: `[runner * memory nodes + node]`).
struct Static {
    refs_pi: f64,
    coh_pi: f64,
    /// Seconds per instruction outside the memory queues.
    think: f64,
}

const MAX_ITERATIONS: usize = 200;
const TOLERANCE: f64 = 1e-10;

fn spread(home: Home, nodes: usize, node: usize) -> f64 {
    match home {
        Home::Node(n) => f64::from(u8::from(n == node)),
        Home::Interleave => 1.0 / nodes as f64,
    }
}

/// The rates of one interval: CPU shares, then each runner's time per
/// instruction outside the memory queues, then the fixed point of queueing
/// delay and activity (see the module doc).
pub(crate) fn solve(
    layout: &Layout,
    params: &Params,
    runners: &[Runner<'_>],
    teams: &[Team],
) -> Solution {
    let (fit, team_in_llc) = llc_fit(layout, runners, teams);
    let mems = layout.mem_nodes;
    // `mem_pi`'s rows, one per runner (`chunks` takes no width of 0).
    let row = mems.max(1);
    let mut mem_pi = vec![0.0; runners.len() * mems];
    let statics: Vec<Static> = runners
        .iter()
        .zip(mem_pi.chunks_mut(row))
        .map(|(r, mem_pi)| {
            static_of(
                layout,
                params,
                runners,
                teams,
                &fit,
                &team_in_llc,
                r,
                mem_pi,
            )
        })
        .collect();
    let locks: Vec<Option<Lock>> = teams
        .iter()
        .map(|t| Lock::of(layout, params, runners, t))
        .collect();
    let demand: Vec<f64> = runners
        .iter()
        .zip(&statics)
        .map(|(r, s)| locks[r.team].map_or(1.0, |l| l.demand(s.think)))
        .collect();
    let (share, count_on) = cpu_shares(layout, runners, &demand);
    let barrier: Vec<Option<f64>> = teams
        .iter()
        .map(|t| {
            let crowded = t
                .members
                .iter()
                .map(|&j| crowding(runners, &count_on, j))
                .fold(0.0, f64::max);
            barrier_pi(layout, params, runners, t, crowded)
        })
        .collect();
    let mut point = FixedPoint::new(layout, runners, mem_pi.chunks(row), &share);
    let mut activity = vec![1.0; runners.len()];
    let mut rates = Rates::default();
    let mut rounds = 0;
    let mut residual = f64::INFINITY;
    while rounds < MAX_ITERATIONS {
        rounds += 1;
        let queue_delta = point.queues_step(layout, runners, &statics, &share, &activity);
        point.paces(layout, runners, &statics, &share);
        rates.team_rate.clear();
        for (t, team) in teams.iter().enumerate() {
            let paces = Paces {
                own: &point.own,
                tau: &point.tau,
                share: &share,
                lock: locks[t].as_ref(),
            };
            let per_thread = team_pace(team, barrier[t], &paces);
            for &j in &team.members {
                point.useful[j] = per_thread;
                point.next[j] = (per_thread / point.own[j]).min(1.0);
            }
            rates.team_rate.push(per_thread * team.members.len() as f64);
        }
        let delta = point
            .next
            .iter()
            .zip(&activity)
            .map(|(a, b)| (a - b).abs())
            .fold(queue_delta, f64::max);
        // Damped update: the map can oscillate between two states otherwise.
        for (a, b) in activity.iter_mut().zip(&point.next) {
            *a = 0.5 * (*a + b);
        }
        residual = delta;
        if delta < TOLERANCE {
            break;
        }
    }
    Solution {
        useful: std::mem::take(&mut point.useful),
        refs_pi: statics.iter().map(|s| s.refs_pi).collect(),
        miss_pi: statics
            .iter()
            .zip(mem_pi.chunks(row))
            .map(|(s, mem_pi)| mem_pi.iter().sum::<f64>() + s.coh_pi)
            .collect(),
        team_rate: rates.team_rate,
        llc_fit: fit,
        share,
        demand,
        rounds,
        residual,
    }
}

/// What the last round of the fixed point gave per team.
#[derive(Default)]
struct Rates {
    team_rate: Vec<f64>,
}

/// The state of the fixed point between rounds, in flat arrays allocated
/// once per solve: a round allocates nothing. Runners are grouped by CPU
/// (`slot`: the CPU's rank among the CPUs with runners, in CPU order) and
/// each keeps the memory nodes it sends to (`sends`), so a round costs what
/// is running, not the machine's size.
struct FixedPoint {
    queues: Queues,
    demand: Demand,
    mems: usize,
    /// CPUs with runners, ascending.
    cpus: Vec<CpuIdx>,
    /// Per runner: its CPU's rank in `cpus`.
    slot: Vec<usize>,
    /// Per runner: where its nodes start in `sends` (one more entry).
    sends_start: Vec<usize>,
    /// (memory node, requests per instruction) with a positive rate.
    sends: Vec<(usize, f64)>,
    /// Scratch per CPU of `cpus`: requests to each node (`[slot * mems + m]`)
    /// and their MLP-weighted sum.
    cpu_rates: Vec<f64>,
    cpu_mlp: Vec<f64>,
    /// Per runner, this round: seconds per instruction on a CPU of its own,
    /// pace with its share, useful instructions per second, next activity.
    tau: Vec<f64>,
    own: Vec<f64>,
    useful: Vec<f64>,
    next: Vec<f64>,
}

impl FixedPoint {
    /// `mem_pi`: each runner's requests per instruction to each memory
    /// node, a row per runner.
    fn new<'a>(
        layout: &Layout,
        runners: &[Runner<'_>],
        mem_pi: impl Iterator<Item = &'a [f64]>,
        share: &[f64],
    ) -> Self {
        let n = runners.len();
        let mems = layout.mem_nodes;
        let mut cpus: Vec<CpuIdx> = runners.iter().map(|r| r.cpu).collect();
        cpus.sort_unstable();
        cpus.dedup();
        let slot = runners
            .iter()
            .map(|r| {
                cpus.binary_search(&r.cpu)
                    .expect("every runner's CPU is listed")
            })
            .collect();
        let mut sends_start = Vec::with_capacity(n + 1);
        let mut sends = Vec::new();
        sends_start.push(0);
        for pi in mem_pi.take(n) {
            sends.extend(pi.iter().copied().enumerate().filter(|&(_, pi)| pi > 0.0));
            sends_start.push(sends.len());
        }
        debug_assert_eq!(share.len(), n);
        Self {
            queues: Queues::new(layout),
            demand: Demand::default(),
            mems,
            cpu_rates: vec![0.0; cpus.len() * mems],
            cpu_mlp: vec![0.0; cpus.len()],
            cpus,
            slot,
            sends_start,
            sends,
            tau: vec![0.0; n],
            own: vec![0.0; n],
            useful: vec![0.0; n],
            next: vec![1.0; n],
        }
    }

    fn sends(&self, j: usize) -> &[(usize, f64)] {
        &self.sends[self.sends_start[j]..self.sends_start[j + 1]]
    }

    /// The memory queues' customers (per CPU, its runners' share- and
    /// activity-weighted request rate to each memory node per second of
    /// compute, and their memory-level parallelism weighted by those rates),
    /// then one step of the queues; returns the step's change.
    fn queues_step(
        &mut self,
        layout: &Layout,
        runners: &[Runner<'_>],
        statics: &[Static],
        share: &[f64],
        activity: &[f64],
    ) -> f64 {
        self.cpu_rates.fill(0.0);
        self.cpu_mlp.fill(0.0);
        for (j, r) in runners.iter().enumerate() {
            let u = self.slot[j];
            let (from, to) = (self.sends_start[j], self.sends_start[j + 1]);
            for &(m, pi) in &self.sends[from..to] {
                let rate = share[j] * activity[j] * pi / statics[j].think;
                self.cpu_rates[u * self.mems + m] += rate;
                self.cpu_mlp[u] += rate * r.model.mlp;
            }
        }
        self.demand.clear();
        for (u, &c) in self.cpus.iter().enumerate() {
            let rates = &self.cpu_rates[u * self.mems..(u + 1) * self.mems];
            let total: f64 = rates.iter().sum();
            let mlp = if total > 0.0 {
                self.cpu_mlp[u] / total
            } else {
                1.0
            };
            self.demand.push(c, mlp, rates);
        }
        self.queues.step(layout, &self.demand)
    }

    /// Seconds per instruction of each runner on a CPU of its own (its
    /// requests' time at the servers overlaps by its memory-level
    /// parallelism, as their latency does), and its pace with its share.
    fn paces(
        &mut self,
        layout: &Layout,
        runners: &[Runner<'_>],
        statics: &[Static],
        share: &[f64],
    ) {
        for (j, r) in runners.iter().enumerate() {
            let i = layout.cpu_node[r.cpu];
            let queue: f64 = self
                .sends(j)
                .iter()
                .map(|&(m, pi)| pi * self.queues.response(i, m))
                .sum();
            self.tau[j] = statics[j].think + queue / r.model.mlp;
            self.own[j] = share[j] / self.tau[j];
        }
    }
}

/// Per runner, its fraction of its CPU; per CPU, how many runners it has.
/// CFS shares a CPU by weight among the threads that want it: a runner that
/// asks for less than its weighted part (a lock waiter sleeping, `lock.rs`)
/// gets what it asks for and the others divide the rest (max-min fairness).
/// The runners of each CPU are taken in their order, and those that still
/// want more keep it round after round, in two buffers made once per solve.
fn cpu_shares(layout: &Layout, runners: &[Runner<'_>], demand: &[f64]) -> (Vec<f64>, Vec<usize>) {
    let ncpu = layout.cpus.len();
    let mut count_on = vec![0usize; ncpu];
    for r in runners {
        count_on[r.cpu] += 1;
    }
    // The runners grouped by CPU, each CPU's in runner order.
    let mut start = Vec::with_capacity(ncpu + 1);
    start.push(0);
    for &n in &count_on {
        start.push(start[start.len() - 1] + n);
    }
    let mut order = vec![0; runners.len()];
    let mut next = start.clone();
    for (j, r) in runners.iter().enumerate() {
        order[next[r.cpu]] = j;
        next[r.cpu] += 1;
    }
    let mut share = vec![0.0; runners.len()];
    let mut met = Vec::new();
    for c in 0..ncpu {
        let left = &mut order[start[c]..start[c + 1]];
        let mut n = left.len();
        let mut free = 1.0;
        while n > 0 {
            let weight: f64 = left[..n].iter().map(|&j| runners[j].weight).sum();
            let part = |j: usize| free * runners[j].weight / weight;
            // Those whose demand is met leave; the rest move up, in order.
            met.clear();
            let mut kept = 0;
            for i in 0..n {
                let j = left[i];
                if demand[j] <= part(j) {
                    met.push(j);
                } else {
                    left[kept] = j;
                    kept += 1;
                }
            }
            if met.is_empty() {
                for &j in &left[..n] {
                    share[j] = part(j);
                }
                break;
            }
            for &j in &met {
                share[j] = demand[j];
                free -= demand[j];
            }
            n = kept;
        }
    }
    (share, count_on)
}

/// LLC occupancy: private sets plus one shared set per team present. Per LLC,
/// the fraction of the demand that fits; per team and LLC, its runners there.
fn llc_fit(layout: &Layout, runners: &[Runner<'_>], teams: &[Team]) -> (Vec<f64>, Vec<Vec<usize>>) {
    let mut demand = vec![0.0; layout.llcs()];
    let mut team_in_llc = vec![vec![0usize; layout.llcs()]; teams.len()];
    for r in runners {
        let l = layout.llc[r.cpu];
        demand[l] += r.model.private_mb * MIB;
        if team_in_llc[r.team][l] == 0 {
            demand[l] += r.model.shared_mb * MIB;
        }
        team_in_llc[r.team][l] += 1;
    }
    let fit = demand
        .iter()
        .zip(&layout.llc_bytes)
        .map(|(d, c)| if *d <= *c { 1.0 } else { c / d })
        .collect();
    (fit, team_in_llc)
}

/// A runner's quantities that do not depend on the fixed point: its LLC
/// references and misses per instruction, where its misses go, its
/// coherence traffic and its time per instruction outside the memory queues;
/// writes its memory requests per instruction to each memory node into
/// `mem_pi`.
#[allow(clippy::too_many_arguments)]
fn static_of(
    layout: &Layout,
    params: &Params,
    runners: &[Runner<'_>],
    teams: &[Team],
    fit: &[f64],
    team_in_llc: &[Vec<usize>],
    r: &Runner<'_>,
    mem_pi: &mut [f64],
) -> Static {
    let m = r.model;
    let f_hz = params.freq_ghz * 1e9;
    let l = layout.llc[r.cpu];
    let refs_pi = m.llc_apki / 1000.0;
    let miss = 1.0 - m.reuse * fit[l];
    let sharers = team_in_llc[r.team][l].max(1) as f64;
    let priv_pi = refs_pi * (1.0 - m.shared_fraction) * miss;
    let shared_pi = refs_pi * m.shared_fraction * miss / sharers;
    let (coh_pi, coh_cost) = coherence(layout, params, runners, &teams[r.team], r, refs_pi);
    let mut latency = 0.0;
    for (node, slot) in mem_pi.iter_mut().enumerate() {
        *slot = priv_pi * spread(r.private_home, layout.mem_nodes, node)
            + shared_pi * spread(r.shared_home, layout.mem_nodes, node);
        let remote = if node == layout.mem_node[r.cpu] {
            0.0
        } else {
            params.remote_latency_ns
        };
        latency += *slot * (params.mem_latency_ns + remote) * 1e-9 / m.mlp;
    }
    let hits = refs_pi - priv_pi - shared_pi;
    Static {
        refs_pi,
        coh_pi,
        think: m.cpi / f_hz
            + hits * params.llc_hit_cycles / f_hz / m.mlp
            + coh_pi * coh_cost
            + latency,
    }
}

/// Coherence transfers per instruction of `r` and their mean cost in seconds.
/// Teammates that may hold a written shared line sit under another package
/// (far), another LLC of this package (near), or another CPU under this LLC
/// (the line moves between private caches through the shared one, at about
/// the cost of a hit in it).
fn coherence(
    layout: &Layout,
    params: &Params,
    runners: &[Runner<'_>],
    team: &Team,
    r: &Runner<'_>,
    refs_pi: f64,
) -> (f64, f64) {
    let m = r.model;
    let l = layout.llc[r.cpu];
    let mates = team.members.len().saturating_sub(1);
    let (far, near, same) =
        team.members
            .iter()
            .map(|&j| &runners[j])
            .fold((0, 0, 0), |(f, nr, sm), o| {
                if o.cpu == r.cpu {
                    (f, nr, sm)
                } else if layout.llc[o.cpu] == l {
                    (f, nr, sm + 1)
                } else if layout.package[o.cpu] == layout.package[r.cpu] {
                    (f, nr + 1, sm)
                } else {
                    (f + 1, nr, sm)
                }
            });
    let holders = far + near + same;
    if mates == 0 || holders == 0 {
        return (0.0, 0.0);
    }
    let pi = refs_pi * m.shared_fraction * m.write_sharing * holders as f64 / mates as f64;
    let cost = (far as f64 * params.xfer_far_ns
        + near as f64 * params.xfer_near_ns
        + same as f64 * params.llc_hit_cycles / params.freq_ghz)
        / holders as f64;
    (pi, cost * 1e-9)
}

/// What [`team_pace`] needs of each runner: its pace with its CPU share
/// (`own`), its time per instruction on a CPU of its own (`tau`), its share,
/// and the team's lock.
struct Paces<'a> {
    own: &'a [f64],
    tau: &'a [f64],
    share: &'a [f64],
    lock: Option<&'a Lock>,
}

impl Paces<'_> {
    /// Instructions per second of runner `j`: with a lock, its time under the
    /// lock's serialization and handoffs, slowed when its share is below what
    /// it uses of its CPU (`lock.rs`); else its own pace.
    fn of(&self, j: usize) -> f64 {
        match self.lock {
            Some(l) => {
                let tau = self.tau[j];
                (self.share[j] / l.demand(tau)).min(1.0) / l.time_pi(tau)
            }
            None => self.own[j],
        }
    }
}

/// How much runner `j`'s CPU is taken by the other runnable threads on it,
/// relative to an even split: their share of the CPU's CFS weight over
/// (c − 1)/c for c threads there, at most 1. Equal weights make it 1 (the
/// whole time-sharing cost of a barrier, below); a co-runner at nice 19
/// beside a nice-0 thread (weight 15 against 1024) about 0.03: it runs only
/// when the thread leaves the CPU, so a barrier seldom waits behind it
/// (gang time sharing, `docs/policies/auto.md`).
fn crowding(runners: &[Runner<'_>], count_on: &[usize], j: usize) -> f64 {
    let c = count_on[runners[j].cpu];
    if c < 2 {
        return 0.0;
    }
    let cpu = runners[j].cpu;
    let total: f64 = runners
        .iter()
        .filter(|r| r.cpu == cpu)
        .map(|r| r.weight)
        .sum();
    let others = (total - runners[j].weight) / total;
    (others / (1.0 - 1.0 / c as f64)).min(1.0)
}

/// Seconds of barriers per instruction of a member of `team` (None unless
/// it is a parallel team of two or more): ⌈log2 n⌉ levels, doubled across
/// packages, plus the spin of a waiter whose teammate is not running
/// ([`spin_wait_s`]: half a slice, or less when libgomp's spin count runs out
/// first), scaled by how crowded its most crowded member's CPU is
/// ([`crowding`]), unless the team waits passively.
fn barrier_pi(
    layout: &Layout,
    params: &Params,
    runners: &[Runner<'_>],
    team: &Team,
    crowded: f64,
) -> Option<f64> {
    let k = team.members.len();
    if !(team.parallel && k > 1) {
        return None;
    }
    let m = runners[team.members[0]].model;
    let levels = (k as f64).log2().ceil();
    let packages = team.members.iter().map(|&j| layout.package[runners[j].cpu]);
    let spans = packages.clone().min() != packages.max();
    let mut barrier = params.barrier_ns * 1e-9 * levels * if spans { 2.0 } else { 1.0 };
    if !team.passive {
        barrier += crowded * spin_wait_s(team.slice_s, params.freq_ghz);
    }
    Some(m.barriers_per_ginstr * 1e-9 * barrier)
}

/// Instructions per second of each member of `team`: a bulk-synchronous team
/// progresses at its slowest member's pace, its lock's serialization
/// included, slowed by its barriers ([`barrier_pi`]).
fn team_pace(team: &Team, barrier_pi: Option<f64>, paces: &Paces<'_>) -> f64 {
    let slowest = team
        .members
        .iter()
        .map(|&j| paces.of(j))
        .fold(f64::INFINITY, f64::min);
    match barrier_pi {
        Some(b) => 1.0 / (1.0 / slowest + b),
        None => slowest,
    }
}

const MIB: f64 = 1024.0 * 1024.0;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::model;
    use crate::platform::platform;

    /// Max-min fairness by CFS weight on kvm-2cpu's two CPUs, by hand
    /// (runners as (CPU, weight, demand); shares in runner order):
    /// - three runners wanting all of CPU 0 get a third each; one alone on
    ///   CPU 1 gets all of it;
    /// - a waiter asking 0.1 of CPU 0 gets it, the two others split 0.9;
    /// - a cascade: at a third each only the 0.1 is met; of the 0.9 left,
    ///   0.45 each meets the 0.4; the last runner takes the 0.5 left;
    /// - weights 3 : 1 wanting all: 0.75 and 0.25; the light one asking 0.2
    ///   gets it and the heavy one the 0.8 left.
    #[test]
    fn a_cpu_is_shared_max_min_by_weight() {
        let layout = Layout::new(&platform("kvm-2cpu").unwrap());
        let m = model("ep").unwrap();
        type Case<'a> = (&'a [(usize, f64, f64)], &'a [f64], [usize; 2]);
        let cases: [Case<'_>; 5] = [
            (
                &[(0, 1.0, 1.0), (0, 1.0, 1.0), (0, 1.0, 1.0), (1, 1.0, 1.0)],
                &[1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0, 1.0],
                [3, 1],
            ),
            (
                &[(0, 1.0, 1.0), (0, 1.0, 0.1), (0, 1.0, 1.0)],
                &[0.45, 0.1, 0.45],
                [3, 0],
            ),
            (
                &[(0, 1.0, 1.0), (0, 1.0, 0.4), (0, 1.0, 0.1)],
                &[0.5, 0.4, 0.1],
                [3, 0],
            ),
            (&[(1, 3.0, 1.0), (1, 1.0, 1.0)], &[0.75, 0.25], [0, 2]),
            (&[(1, 3.0, 1.0), (1, 1.0, 0.2)], &[0.8, 0.2], [0, 2]),
        ];
        for (runners, want, on) in cases {
            let demand: Vec<f64> = runners.iter().map(|r| r.2).collect();
            let runners: Vec<Runner<'_>> = runners
                .iter()
                .map(|&(cpu, weight, _)| Runner {
                    team: 0,
                    cpu,
                    model: &m,
                    weight,
                    private_home: Home::Node(0),
                    shared_home: Home::Node(0),
                })
                .collect();
            let (share, count_on) = cpu_shares(&layout, &runners, &demand);
            assert_eq!(count_on, on, "{demand:?}");
            for (got, want) in share.iter().zip(want) {
                assert!(
                    (got - want).abs() < 1e-12,
                    "{demand:?}: {share:?} vs {want}"
                );
            }
        }
    }
}
