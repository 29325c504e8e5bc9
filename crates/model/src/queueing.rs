//! Queueing model of memory controllers (NuPoCo §3.3, §4).
//!
//! Problem: NuPoCo decides how many cores each co-located app gets by predicting,
//! for a candidate allocation, how busy the CPU cores and the memory controllers
//! will be. The simulator's memory queues (`coloc_sim`'s `engine/memory.rs`)
//! use [`FiniteSource`], one per controller and link with the requests in
//! flight as customers, not the §4 network: as physics the network's path
//! queue, whose service time is a controller's whole response time, caps a
//! node's local traffic far below the controller's bandwidth
//! (docs/simulator.md, The engine, Memory).
//!
//! Approach: a memory controller is the single server of an M/M/1/N/N
//! (finite-source) queue whose N customers are the cores (§3.3, Figure 3). A core
//! computes for an exponentially distributed time with mean 1/MRR, issues one
//! blocking request and waits until it is served at rate μ. From the closed form
//! follow the controller utilization (eq. 4), the mean response time (eq. 3), and
//! from those an app's speedup (eq. 1–2), CPU utilization (eq. 5) and system
//! utilization (eq. 6). On a NUMA machine (§4) each memory controller is one such
//! queue whose customers are the CPU nodes, and each CPU node's path to a
//! controller is a second queue whose customers are its cores and whose service
//! includes the interconnect link; NuUtil sums the nodes' system utilization
//! (eq. 7).
//!
//! Rates are per unit of *compute* time (time a core is not waiting for memory),
//! which is what makes the finite-source model self-consistent; any time unit
//! works as long as MRR and μ use the same one (the paper's Figure 4 uses μ = 50;
//! coloc's calibrations and policies use requests per second).

use crate::calibration::MemoryCalibration;

/// One M/M/1/N/N queue: `customers` sources, each issuing requests at `mrr` per
/// unit of compute time, one server with service rate `mu`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FiniteSource {
    pub customers: u32,
    /// Memory request rate of one customer while it computes (λ in Figure 3).
    pub mrr: f64,
    /// Requests the server completes per unit of time while busy (μ).
    pub mu: f64,
}

impl FiniteSource {
    pub fn new(customers: u32, mrr: f64, mu: f64) -> Self {
        Self { customers, mrr, mu }
    }

    /// Offered load of one customer, ρ = MRR/μ.
    fn load(&self) -> f64 {
        if self.mu > 0.0 {
            self.mrr / self.mu
        } else {
            f64::INFINITY
        }
    }

    /// T_j = S_j − 1, where S_j = Σ_{k=0..j} j!/(j−k)! ρ^k is the bracket of
    /// eq. 4 for j customers. By Horner's rule S_j = 1 + jρ·S_{j−1}, so
    /// T_j = jρ(1 + T_{j−1}) with T_0 = 0: the sum without its leading 1, which
    /// never forms N! on its own and never subtracts 1 from a number close to 1.
    /// It overflows to infinity for a saturated server with many customers,
    /// and stays there (ρ > 0 then), so the loop stops: the simulator asks
    /// for hundreds of customers at every round of its fixed point.
    fn excess(&self, customers: u32) -> f64 {
        let rho = self.load();
        let mut t = 0.0;
        for j in 1..=customers {
            t = f64::from(j) * rho * (1.0 + t);
            if t == f64::INFINITY {
                break;
            }
        }
        t
    }

    /// P0, the probability that the server is idle: 1/S_N (the inverse of the
    /// bracket of eq. 4); 0 when S_N overflows, the limit for a saturated server.
    pub fn p0(&self) -> f64 {
        1.0 / (1.0 + self.excess(self.customers))
    }

    /// Server (memory controller) utilization, eq. 4: MCT Util(N) = 1 − P0,
    /// computed as T_N/(1 + T_N) so that a lightly loaded server keeps its
    /// precision.
    pub fn utilization(&self) -> f64 {
        let t = self.excess(self.customers);
        if t.is_finite() {
            t / (1.0 + t)
        } else {
            1.0
        }
    }

    /// Mean response time of one request (queueing plus service), eq. 3:
    /// MRT(N) = (1/μ)(N / MCT Util(N) − μ/MRR).
    ///
    /// The two terms in the bracket are both about 1/ρ when the server is
    /// lightly loaded, so eq. 3 as printed loses every digit there (at ρ = 1e-8
    /// it returns noise of either sign). With U = T_N/(1+T_N) and
    /// T_N = Nρ(1 + T_{N−1}) the bracket is exactly
    /// (T_N − T_{N−1}) / (ρ(1 + T_{N−1})), which has no such cancellation. With
    /// no traffic a request finds the server idle: 1/μ. When T_N overflows the
    /// server is saturated (U = 1) and eq. 3 is N/μ − 1/MRR.
    pub fn response_time(&self) -> f64 {
        if self.idle() {
            return 1.0 / self.mu;
        }
        self.response_after(self.excess(self.customers - 1))
    }

    /// Whether a request finds the server idle: no customers or no traffic
    /// ([`Self::response_time`] is then 1/μ).
    fn idle(&self) -> bool {
        let rho = self.load();
        self.customers == 0 || rho.is_nan() || rho <= 0.0
    }

    /// [`Self::response_time`] of a server with traffic, from T_{N−1}.
    fn response_after(&self, before: f64) -> f64 {
        let rho = self.load();
        let t = f64::from(self.customers) * rho * (1.0 + before);
        if t == 0.0 {
            1.0 / self.mu
        } else if t.is_finite() {
            (1.0 / self.mu) * (t - before) / (rho * (1.0 + before))
        } else {
            f64::from(self.customers) / self.mu - 1.0 / self.mrr
        }
    }

    /// Requests served per unit of time, X = μ · MCT Util (Little's law on the server).
    pub fn throughput(&self) -> f64 {
        self.mu * self.utilization()
    }

    /// Mean number of requests at the server (waiting or in service):
    /// L = X · MRT (Little's law).
    pub fn mean_queue(&self) -> f64 {
        self.throughput() * self.response_time()
    }
}

/// Servers whose recurrences [`response_times`] runs side by side.
const LANES: usize = 4;

/// [`FiniteSource::response_time`] of each of `sources`, into `out` in the
/// same order, bit for bit the same numbers. The recurrence T_j =
/// jρ(1 + T_{j−1}) is a chain of dependent operations, each waiting for
/// the last; the simulator's memory queues ask for every loaded server's
/// response time at each round of its fixed point (docs/simulator.md,
/// Speed), so the chains of four servers are run in one loop, each
/// step of each server the same arithmetic as alone, and the processor
/// overlaps them.
pub fn response_times(sources: &[FiniteSource], out: &mut Vec<f64>) {
    out.clear();
    for group in sources.chunks(LANES) {
        // T_{N−1} of each server with traffic (steps 1..=N−1, stopping at
        // infinity as `excess` does); 0 steps for the others.
        let mut steps = [0u32; LANES];
        let mut rho = [0.0; LANES];
        for (k, q) in group.iter().enumerate() {
            if !q.idle() {
                steps[k] = q.customers - 1;
                rho[k] = q.load();
            }
        }
        let mut t = [0.0f64; LANES];
        let longest = steps.iter().copied().max().unwrap_or(0);
        for j in 1..=longest {
            let mut going = false;
            for k in 0..LANES {
                let next = f64::from(j) * rho[k] * (1.0 + t[k]);
                if j <= steps[k] && t[k] != f64::INFINITY {
                    t[k] = next;
                    going |= j < steps[k] && next != f64::INFINITY;
                }
            }
            if !going {
                break;
            }
        }
        for (k, q) in group.iter().enumerate() {
            out.push(if q.idle() {
                1.0 / q.mu
            } else {
                q.response_after(t[k])
            });
        }
    }
}

/// The §3.3 metrics of one data-parallel app on N of M cores of an SMP machine.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SmpMetrics {
    /// eq. 1–2: Total Time(1) / Total Time(N).
    pub speedup: f64,
    /// eq. 4.
    pub mct_util: f64,
    /// eq. 5: CPU Time(N) / Total Time(N).
    pub cpu_util: f64,
    /// eq. 6: CPU Util(N) · N/M + MCT Util(N).
    pub system_util: f64,
    /// eq. 3.
    pub mrt: f64,
}

/// Total Time(N) / CPU Time(1) for a balanced data-parallel app (eq. 2):
/// CPU Time(N) = CPU Time(1)/N and MCT Time(N) = CPU Time(N) · MRR · MRT(N).
fn relative_total_time(n: u32, mrr: f64, mu: f64) -> f64 {
    let mrt = FiniteSource::new(n, mrr, mu).response_time();
    (1.0 + mrr * mrt) / f64::from(n)
}

/// NuPoCo §3.3 for an app with memory request rate `mrr` on `n` of `m` cores
/// sharing one memory controller of service rate `mu`.
pub fn smp_metrics(n: u32, m: u32, mrr: f64, mu: f64) -> SmpMetrics {
    let q = FiniteSource::new(n, mrr, mu);
    let mrt = q.response_time();
    let cpu_util = 1.0 / (1.0 + mrr * mrt);
    let mct_util = q.utilization();
    SmpMetrics {
        speedup: relative_total_time(1, mrr, mu) / relative_total_time(n, mrr, mu),
        mct_util,
        cpu_util,
        system_util: cpu_util * f64::from(n) / f64::from(m) + mct_util,
        mrt,
    }
}

/// A NUMA machine for the §4 model: memory controllers and the links that join
/// CPU nodes to them.
#[derive(Clone, Debug, PartialEq)]
pub struct NumaSystem {
    /// Service rate μ_m of each memory node's controller.
    pub mu: Vec<f64>,
    /// `link[i][m]`: service rate of the path from CPU node i to memory node m
    /// (`f64::INFINITY` for a local access that crosses no link).
    pub link: Vec<Vec<f64>>,
    /// Cores in each CPU node (M in eq. 6, per node).
    pub cores: Vec<u32>,
}

/// The traffic of one CPU node: which of its cores are busy, and where their
/// requests go.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeLoad {
    /// Busy cores in the node.
    pub cores: u32,
    /// `mrr[m]`: mean memory request rate of one busy core to memory node m
    /// (all requests: read, write, prefetch), per unit of compute time.
    pub mrr: Vec<f64>,
    /// `llc_read[m]`: mean rate of read misses of one busy core to memory node m,
    /// the requests that stall it (§4.2), per unit of compute time.
    pub llc_read: Vec<f64>,
}

/// The §4 prediction for every node and controller.
#[derive(Clone, Debug, PartialEq)]
pub struct NumaPrediction {
    /// MCT Util_m (§4.1).
    pub mct_util: Vec<f64>,
    /// MRT_m (§4.1).
    pub mrt_mem: Vec<f64>,
    /// `mrt[i][m]`: MRT_{i,m}, the response time from CPU node i to memory m (§4.2).
    pub mrt: Vec<Vec<f64>>,
    /// CPU Util of each node's busy cores (eq. 5 with the §4.2 MCT Time).
    pub cpu_util: Vec<f64>,
    /// System Util of each node, eq. 6 with the node's cores as M and its
    /// controller's utilization.
    pub system_util: Vec<f64>,
}

impl NumaPrediction {
    /// NuUtil, eq. 7: the sum of the nodes' system utilization.
    pub fn nu_util(&self) -> f64 {
        self.system_util.iter().sum()
    }
}

impl NumaSystem {
    /// Solves the queueing network of §4 for the given per-node traffic
    /// (`loads[i]` for CPU node i; CPU node i's own memory is memory node i).
    ///
    /// §4.1: controller m is an M/M/1/N/N queue whose customers are the
    /// N_cpu_node CPU nodes, with the mean of the nodes' request rates to m (a
    /// node's rate is the sum over its busy cores). §4.2: node i's requests to m
    /// see a server of rate μ_{i,m} = 1/(1/link_{i,m} + MRT_m) shared by its busy
    /// cores, giving MRT_{i,m} by eq. 3; a core's MCT Time per unit of CPU Time is
    /// Σ_m LLC^read_{i,m} · MRT_{i,m}.
    pub fn predict(&self, loads: &[NodeLoad]) -> NumaPrediction {
        let mems = self.mu.len();
        let nodes = loads.len();
        let node_rate = |i: usize, m: usize| {
            loads[i].mrr.get(m).copied().unwrap_or(0.0) * f64::from(loads[i].cores)
        };
        let mut mct_util = Vec::with_capacity(mems);
        let mut mrt_mem = Vec::with_capacity(mems);
        for m in 0..mems {
            let avg = (0..nodes).map(|i| node_rate(i, m)).sum::<f64>() / nodes.max(1) as f64;
            let q = FiniteSource::new(nodes as u32, avg, self.mu[m]);
            mct_util.push(q.utilization());
            mrt_mem.push(q.response_time());
        }
        let mut mrt = Vec::with_capacity(nodes);
        let mut cpu_util = Vec::with_capacity(nodes);
        let mut system_util = Vec::with_capacity(nodes);
        for (i, load) in loads.iter().enumerate() {
            let row: Vec<f64> = (0..mems)
                .map(|m| {
                    let link = self.link[i][m];
                    let mu_im = 1.0 / (1.0 / link + mrt_mem[m]);
                    let rate = load.mrr.get(m).copied().unwrap_or(0.0);
                    FiniteSource::new(load.cores, rate, mu_im).response_time()
                })
                .collect();
            let mct_time: f64 = (0..mems)
                .map(|m| load.llc_read.get(m).copied().unwrap_or(0.0) * row[m])
                .sum();
            let util = 1.0 / (1.0 + mct_time);
            let m_cores = self.cores.get(i).copied().unwrap_or(load.cores).max(1);
            let local_mct = mct_util.get(i).copied().unwrap_or(0.0);
            system_util.push(util * f64::from(load.cores) / f64::from(m_cores) + local_mct);
            cpu_util.push(util);
            mrt.push(row);
        }
        NumaPrediction {
            mct_util,
            mrt_mem,
            mrt,
            cpu_util,
            system_util,
        }
    }
}

/// One app's cores in one CPU node: how many, and the memory request rate of
/// each to every memory node (per unit of compute time). All of them are taken
/// as read misses that stall the core (§4.2 distinguishes writes and prefetches,
/// which load the controller without stalling; coloc's signals cannot tell them
/// apart, so it counts every request as stalling).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Demand {
    pub cores: u32,
    pub mrr: Vec<f64>,
}

/// The §4 prediction for apps sharing nodes: [`NumaPrediction`] for the nodes and
/// controllers, plus each app's own CPU utilization — "the weighted average of
/// the workloads' MRR ... is used to compute the mean memory response time ...
/// we compute the per-application ... CPU Util using the application-specific
/// MRR value" (§3.3).
#[derive(Clone, Debug, PartialEq)]
pub struct DemandPrediction {
    pub numa: NumaPrediction,
    /// `cpu_util[i][d]`: CPU Util of demand d of node i (eq. 5).
    pub cpu_util: Vec<Vec<f64>>,
    /// System Util of each node (eq. 6): Σ_d CPU Util_d · cores_d / M_i + MCT Util_i.
    pub system_util: Vec<f64>,
}

impl DemandPrediction {
    /// NuUtil, eq. 7.
    pub fn nu_util(&self) -> f64 {
        self.system_util.iter().sum()
    }

    /// Compute done per unit of time by the cores of the demands `pick` selects:
    /// Σ cores · CPU Util, the progress rate of a balanced data-parallel app up
    /// to a constant (eq. 1–5: each core progresses at its CPU utilization).
    pub fn compute_rate(&self, nodes: &[Vec<Demand>], pick: impl Fn(usize, usize) -> bool) -> f64 {
        nodes
            .iter()
            .enumerate()
            .flat_map(|(i, ds)| ds.iter().enumerate().map(move |(d, x)| (i, d, x)))
            .filter(|(i, d, _)| pick(*i, *d))
            .map(|(i, d, x)| f64::from(x.cores) * self.cpu_util[i][d])
            .sum()
    }
}

/// Relative precision at which the inverse problems below stop bisecting.
const FIT_TOLERANCE: f64 = 1e-9;

/// The MRR range the inverse problems search, relative to the fastest server:
/// below 1e-9 μ an app is CPU-bound for every purpose, above 1e3 μ it is
/// saturated for every purpose.
const FIT_RANGE: (f64, f64) = (1e-9, 1e3);

/// Grid points per decade of MRR walked before bisecting.
const FIT_GRID_PER_DECADE: i32 = 10;

impl NumaSystem {
    /// The network of a calibrated machine with `cores` cores in each CPU node.
    pub fn from_calibration(cal: &MemoryCalibration, cores: Vec<u32>) -> Self {
        let n = cal.node_service_rate.len();
        let link = (0..n)
            .map(|i| {
                (0..n)
                    .map(|m| {
                        cal.link_service_rate
                            .get(i)
                            .and_then(|row| row.get(m).copied().flatten())
                            .unwrap_or(f64::INFINITY)
                    })
                    .collect()
            })
            .collect();
        Self {
            mu: cal.node_service_rate.clone(),
            link,
            cores,
        }
    }

    /// Solves the network for apps sharing nodes (`nodes[i]`: the demands in CPU
    /// node i). The queues see each node's weighted-average rate (§4.1, §4.2 via
    /// [`NumaSystem::predict`]); every demand then gets its own CPU Util from its
    /// own rates and the node's response times.
    pub fn predict_demands(&self, nodes: &[Vec<Demand>]) -> DemandPrediction {
        let mems = self.mu.len();
        let loads: Vec<NodeLoad> = nodes
            .iter()
            .map(|ds| {
                let cores: u32 = ds.iter().map(|d| d.cores).sum();
                let avg: Vec<f64> = (0..mems)
                    .map(|m| {
                        let total: f64 = ds
                            .iter()
                            .map(|d| f64::from(d.cores) * d.mrr.get(m).copied().unwrap_or(0.0))
                            .sum();
                        total / f64::from(cores.max(1))
                    })
                    .collect();
                NodeLoad {
                    cores,
                    llc_read: avg.clone(),
                    mrr: avg,
                }
            })
            .collect();
        let numa = self.predict(&loads);
        let cpu_util: Vec<Vec<f64>> = nodes
            .iter()
            .enumerate()
            .map(|(i, ds)| {
                ds.iter()
                    .map(|d| {
                        let wait: f64 = d
                            .mrr
                            .iter()
                            .zip(&numa.mrt[i])
                            .map(|(rate, mrt)| rate * mrt)
                            .sum();
                        1.0 / (1.0 + wait)
                    })
                    .collect()
            })
            .collect();
        let system_util = nodes
            .iter()
            .enumerate()
            .map(|(i, ds)| {
                let m_cores = self.cores.get(i).copied().unwrap_or(0).max(1);
                let cpu: f64 = ds
                    .iter()
                    .zip(&cpu_util[i])
                    .map(|(d, u)| u * f64::from(d.cores))
                    .sum();
                cpu / f64::from(m_cores) + numa.mct_util.get(i).copied().unwrap_or(0.0)
            })
            .collect();
        DemandPrediction {
            numa,
            cpu_util,
            system_util,
        }
    }

    /// One app alone with `layout[i]` cores in CPU node i, each issuing `mrr`
    /// requests per unit of compute time spread over the memory nodes by
    /// `spread` (fractions summing to 1).
    fn solo(
        &self,
        layout: &[u32],
        mrr: f64,
        spread: &[f64],
    ) -> (Vec<Vec<Demand>>, DemandPrediction) {
        let nodes: Vec<Vec<Demand>> = layout
            .iter()
            .map(|&cores| {
                vec![Demand {
                    cores,
                    mrr: spread.iter().map(|f| f * mrr).collect(),
                }]
            })
            .collect();
        let p = self.predict_demands(&nodes);
        (nodes, p)
    }

    /// Requests per second of CPU time that one of the app's busy cores is
    /// predicted to issue: MRR · CPU Util, averaged over its cores. This is what
    /// a core's LLC-miss counter shows, since a core blocked on memory still
    /// counts as running.
    pub fn observed_request_rate(&self, layout: &[u32], mrr: f64, spread: &[f64]) -> f64 {
        let (nodes, p) = self.solo(layout, mrr, spread);
        let busy: u32 = layout.iter().sum();
        mrr * p.compute_rate(&nodes, |_, _| true) / f64::from(busy.max(1))
    }

    /// Compute per unit of time of the app's cores (∝ its progress rate).
    pub fn progress_rate(&self, layout: &[u32], mrr: f64, spread: &[f64]) -> f64 {
        let (nodes, p) = self.solo(layout, mrr, spread);
        p.compute_rate(&nodes, |_, _| true)
    }

    /// The MRR at which the model predicts what a core's counters showed: the
    /// inverse of [`NumaSystem::observed_request_rate`] (NuPoCo §5.1 reads LLC
    /// misses per cycle; per second of CPU time is the same up to the clock).
    /// A rate beyond what the network can serve gives the MRR that saturates it.
    pub fn mrr_from_request_rate(&self, layout: &[u32], spread: &[f64], observed: f64) -> f64 {
        self.fit(observed, true, |mrr| {
            self.observed_request_rate(layout, mrr, spread)
        })
    }

    /// The MRR at which the model's progress at layout `a` over that at layout
    /// `b` equals the measured `ratio` — fitting the model to progress rates at
    /// two degrees of parallelism when no counter shows memory requests. A
    /// ratio at or beyond the CPU-bound one (Σa/Σb, linear scaling) gives 0;
    /// one below what saturation can explain gives the MRR that saturates.
    pub fn mrr_from_speedup(&self, a: &[u32], b: &[u32], spread: &[f64], ratio: f64) -> f64 {
        self.fit(ratio, false, |mrr| {
            self.progress_rate(a, mrr, spread) / self.progress_rate(b, mrr, spread)
        })
    }

    /// The smallest MRR at which `f` reaches `target`, `f` starting at its
    /// CPU-bound value and moving towards `target` as MRR grows (`rising`: up).
    ///
    /// Near saturation the §4 network counts queueing twice — in MRT_m and
    /// again in the path queue whose service time includes MRT_m — so the
    /// predicted throughput peaks and then falls. Only the branch before the
    /// peak describes a real machine, so the search walks a log grid upwards to
    /// the first crossing and bisects there. A target beyond every value the
    /// branch reaches gives the MRR of its extreme (the app saturates the
    /// memory system); one already passed at the CPU-bound end gives 0.
    fn fit(&self, target: f64, rising: bool, f: impl Fn(f64) -> f64) -> f64 {
        let scale = self
            .mu
            .iter()
            .copied()
            .fold(0.0, f64::max)
            .max(f64::MIN_POSITIVE);
        let reached = |v: f64| if rising { v >= target } else { v <= target };
        let (lo, hi) = (FIT_RANGE.0 * scale, FIT_RANGE.1 * scale);
        if !target.is_finite() || reached(f(lo)) {
            return 0.0;
        }
        let steps = (hi / lo).log10().ceil() as i32 * FIT_GRID_PER_DECADE;
        let at = |k: i32| lo * (hi / lo).powf(f64::from(k) / f64::from(steps));
        let (mut best, mut best_x) = (f(lo), lo);
        for k in 1..=steps {
            let x = at(k);
            let v = f(x);
            if reached(v) {
                let (mut a, mut b) = (at(k - 1), x);
                while b / a > 1.0 + FIT_TOLERANCE {
                    let mid = (a * b).sqrt();
                    if reached(f(mid)) {
                        b = mid;
                    } else {
                        a = mid;
                    }
                }
                return (a * b).sqrt();
            }
            if (rising && v > best) || (!rising && v < best) {
                (best, best_x) = (v, x);
            }
        }
        best_x
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Servers side by side give each the bits it gives alone: idle ones
    /// (no customers, no traffic), one customer, saturated ones whose sum
    /// overflows after a few steps and light ones that run every step,
    /// mixed in groups of every size.
    #[test]
    fn servers_side_by_side_answer_as_each_alone() {
        let table = [
            FiniteSource::new(0, 1.0, 2.0),
            FiniteSource::new(8, 0.0, 2.0),
            FiniteSource::new(1, 0.3, 1.0),
            FiniteSource::new(400, 1.0, 1.0),
            FiniteSource::new(37, 1e-8, 156.25e6),
            FiniteSource::new(300, 4e7, 9.375e7),
            FiniteSource::new(5, 1.0, 0.0),
            FiniteSource::new(64, 3.1e6, 1.5625e8),
            FiniteSource::new(2, f64::NAN, 1.0),
        ];
        for n in 0..=table.len() {
            let group = &table[..n];
            let mut out = Vec::new();
            response_times(group, &mut out);
            let alone: Vec<u64> = group.iter().map(|q| q.response_time().to_bits()).collect();
            let together: Vec<u64> = out.iter().map(|r| r.to_bits()).collect();
            assert_eq!(together, alone, "first {n} servers");
        }
    }

    proptest! {
        #[test]
        fn response_times_are_each_servers_response_time(
            servers in proptest::collection::vec((0u32..500, 0.0f64..2e8, 1e6f64..2e8), 0..11),
        ) {
            let sources: Vec<FiniteSource> =
                servers.iter().map(|&(n, mrr, mu)| FiniteSource::new(n, mrr, mu)).collect();
            let mut out = Vec::new();
            response_times(&sources, &mut out);
            prop_assert_eq!(out.len(), sources.len());
            for (q, r) in sources.iter().zip(&out) {
                prop_assert_eq!(r.to_bits(), q.response_time().to_bits(), "{:?}", q);
            }
        }
    }

    /// Eq. 4 summed term by term with explicit falling factorials, independently of
    /// the Horner evaluation in `p0`.
    fn mct_util_direct(n: u32, mrr: f64, mu: f64) -> f64 {
        let rho = mrr / mu;
        let mut sum = 0.0;
        for k in 0..=n {
            // N!/(N-k)! = N (N-1) ... (N-k+1)
            let falling: f64 = (0..k).map(|j| f64::from(n - j)).product();
            sum += falling * rho.powi(k as i32);
        }
        1.0 - 1.0 / sum
    }

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * a.abs().max(b.abs()).max(1e-300)
    }

    /// NuPoCo Figure 4's setting: μ = 50, MRR ∈ {0, 0.01}, N = 1..16 of M = 16 cores.
    /// Every metric is recomputed here from the printed equations:
    ///   U = eq. 4 (direct sum), MRT = (1/μ)(N/U − μ/MRR) (eq. 3),
    ///   Total(N)/CPU(1) = (1 + MRR·MRT(N))/N (eq. 2), speedup = Total(1)/Total(N),
    ///   CPU Util = 1/(1 + MRR·MRT) (eq. 5), System Util = CPU Util·N/16 + U (eq. 6).
    /// MRR = 0 is the CPU-bound workload A: MRT is its limit 1/μ and every
    /// memory term vanishes, so speedup = N, CPU Util = 1, MCT Util = 0,
    /// System Util = N/16.
    #[test]
    fn figure4_closed_form() {
        let mu = 50.0;
        for mrr in [0.0, 0.01] {
            for n in 1..=16u32 {
                let got = smp_metrics(n, 16, mrr, mu);
                let (u, mrt) = if mrr == 0.0 {
                    (0.0, 1.0 / mu)
                } else {
                    let u = mct_util_direct(n, mrr, mu);
                    (u, (1.0 / mu) * (f64::from(n) / u - mu / mrr))
                };
                let u1 = if mrr == 0.0 {
                    0.0
                } else {
                    mct_util_direct(1, mrr, mu)
                };
                let mrt1 = if mrr == 0.0 {
                    1.0 / mu
                } else {
                    (1.0 / mu) * (1.0 / u1 - mu / mrr)
                };
                let total_n = (1.0 + mrr * mrt) / f64::from(n);
                let total_1 = 1.0 + mrr * mrt1;
                let cpu = 1.0 / (1.0 + mrr * mrt);
                let sys = cpu * f64::from(n) / 16.0 + u;
                let ctx = format!("mrr={mrr} n={n}: {got:?}");
                assert!(close(got.mct_util, u, 1e-9), "{ctx}");
                assert!(close(got.mrt, mrt, 1e-6), "{ctx}");
                assert!(close(got.speedup, total_1 / total_n, 1e-9), "{ctx}");
                assert!(close(got.cpu_util, cpu, 1e-12), "{ctx}");
                assert!(close(got.system_util, sys, 1e-9), "{ctx}");
                if mrr == 0.0 {
                    assert_eq!(got.speedup, f64::from(n), "{ctx}");
                    assert_eq!((got.mct_util, got.cpu_util), (0.0, 1.0), "{ctx}");
                    assert_eq!(got.system_util, f64::from(n) / 16.0, "{ctx}");
                }
            }
        }
    }

    /// Hand-worked points (ρ = MRR/μ = 0.01/50 = 2e-4):
    /// N = 1: S = 1 + ρ, U = ρ/(1+ρ) = 1.99960008e-4, MRT = (1/μ)((1+ρ)/ρ − 1/ρ) = 1/μ = 0.02.
    /// N = 2: S = 1 + 2ρ + 2ρ² = 1.00040008, U = 0.00040008/1.00040008 = 3.9992000e-4,
    ///        2/U = 5001.0002, MRT = (5001.0002 − 5000)/50 = 0.020004.
    /// A saturated server (ρ = 1, N = 4): S = 1 + 4 + 12 + 24 + 24 = 65, U = 64/65,
    ///        MRT = (4·65/64 − 1)/1 = 3.0625 with μ = 1.
    #[test]
    fn hand_worked_points() {
        let cases = [
            (1, 0.01, 50.0, 1.99960008e-4, 0.02),
            (2, 0.01, 50.0, 3.9992e-4, 0.020004),
            (4, 1.0, 1.0, 64.0 / 65.0, 3.0625),
        ];
        for (n, mrr, mu, u, mrt) in cases {
            let q = FiniteSource::new(n, mrr, mu);
            assert!(
                close(q.utilization(), u, 1e-8),
                "{n} {mrr}: {}",
                q.utilization()
            );
            assert!(
                close(q.response_time(), mrt, 1e-7),
                "{n} {mrr}: {}",
                q.response_time()
            );
            // Little's law on the whole closed system: N = X (1/MRR + MRT).
            let x = q.throughput();
            assert!(close(
                x * (1.0 / mrr + q.response_time()),
                f64::from(n),
                1e-9
            ));
        }
    }

    /// Light loads keep their precision: at ρ = 1e-8 with N = 8, eq. 3's two
    /// terms are 1e8 apart from nothing, yet MRT must be 1/μ · (1 + 7ρ + O(ρ²)),
    /// a hair above 1/μ. (Eq. 3 as printed returned noise of either sign here.)
    /// Expanding T_8 − T_7 over ρ(1 + T_7) gives MRT = (1/μ)(1 + 7ρ + O(ρ²)).
    #[test]
    fn light_load_keeps_precision() {
        for rho in [1e-12, 1e-8, 1e-5] {
            let q = FiniteSource::new(8, rho * 50.0, 50.0);
            let want = (1.0 + 7.0 * rho) / 50.0;
            assert!(
                close(q.response_time(), want, 100.0 * rho * rho + 1e-14),
                "{rho}: {}",
                q.response_time()
            );
            assert!(
                close(q.utilization(), 8.0 * rho / (1.0 + 8.0 * rho), 10.0 * rho),
                "{rho}"
            );
        }
    }

    /// Very many saturated customers overflow the factorial sum; P0 must go to 0
    /// (U = 1) and MRT to N/μ − 1/MRR rather than NaN: 400 customers at ρ = 1,
    /// μ = 1 give MRT = 400 − 1 = 399.
    #[test]
    fn saturation_does_not_overflow() {
        let q = FiniteSource::new(400, 1.0, 1.0);
        assert_eq!(q.p0(), 0.0);
        assert_eq!(q.response_time(), 399.0);
    }

    /// One node with no link cost is the SMP model of §3.3: μ_{0,0} = 1/(0 + 1/μ) = μ
    /// because MC 0 has one customer (M/M/1/1/1 responds in 1/μ), so MRT_{0,0} equals
    /// the single-queue MRT and CPU Util the §3.3 one.
    #[test]
    fn numa_single_node_reduces_to_smp() {
        let sys = NumaSystem {
            mu: vec![50.0],
            link: vec![vec![f64::INFINITY]],
            cores: vec![16],
        };
        for n in [1, 4, 16] {
            let p = sys.predict(&[NodeLoad {
                cores: n,
                mrr: vec![2.0],
                llc_read: vec![2.0],
            }]);
            let smp = smp_metrics(n, 16, 2.0, 50.0);
            assert!(close(p.mrt[0][0], smp.mrt, 1e-9), "{n}");
            assert!(close(p.cpu_util[0], smp.cpu_util, 1e-9), "{n}");
        }
    }

    /// Two nodes, both sending to memory node 0 over links: a remote node pays the
    /// link, so its response time is larger than the local node's; NuUtil is the sum
    /// of the two system utilizations.
    #[test]
    fn numa_remote_pays_the_link() {
        let sys = NumaSystem {
            mu: vec![50.0, 50.0],
            link: vec![vec![f64::INFINITY, 20.0], vec![20.0, f64::INFINITY]],
            cores: vec![8, 8],
        };
        let load = NodeLoad {
            cores: 4,
            mrr: vec![5.0, 0.0],
            llc_read: vec![5.0, 0.0],
        };
        let p = sys.predict(&[load.clone(), load]);
        assert!(p.mrt[1][0] > p.mrt[0][0]);
        assert!(p.cpu_util[1] < p.cpu_util[0]);
        assert_eq!(p.mct_util[1], 0.0);
        assert!(close(
            p.nu_util(),
            p.system_util[0] + p.system_util[1],
            1e-15
        ));
    }

    fn amd8() -> NumaSystem {
        // 8 nodes of 8 cores, 1.5e8 requests/s per controller, 1e8 per link.
        NumaSystem {
            mu: vec![1.5e8; 8],
            link: (0..8)
                .map(|i| {
                    (0..8)
                        .map(|m| if i == m { f64::INFINITY } else { 1e8 })
                        .collect()
                })
                .collect(),
            cores: vec![8; 8],
        }
    }

    /// With one demand per node, the per-app prediction is the node prediction:
    /// same response times, same CPU and system utilization.
    #[test]
    fn demands_match_node_loads() {
        let sys = amd8();
        let nodes: Vec<Vec<Demand>> = (0..8)
            .map(|i| {
                vec![Demand {
                    cores: i as u32 % 5,
                    mrr: vec![2e6 * i as f64; 8],
                }]
            })
            .collect();
        let loads: Vec<NodeLoad> = nodes
            .iter()
            .map(|d| NodeLoad {
                cores: d[0].cores,
                mrr: d[0].mrr.clone(),
                llc_read: d[0].mrr.clone(),
            })
            .collect();
        let a = sys.predict_demands(&nodes);
        let b = sys.predict(&loads);
        for i in 0..8 {
            assert!(close(a.cpu_util[i][0], b.cpu_util[i], 1e-12), "{i}");
            assert!(close(a.system_util[i], b.system_util[i], 1e-12), "{i}");
        }
        assert!(close(a.nu_util(), b.nu_util(), 1e-12));
    }

    /// Two apps in one SMP node (μ = 50, 16 cores): a CPU-bound one (MRR 0) and
    /// a memory-bound one (MRR 10). The queue sees their weighted mean rate
    /// (8·0 + 8·10)/16 = 5 per core; the CPU-bound app never waits (CPU Util 1)
    /// and the other waits 10·MRT per unit of compute: CPU Util = 1/(1 + 10·MRT).
    #[test]
    fn colocated_apps_get_their_own_cpu_util() {
        let sys = NumaSystem {
            mu: vec![50.0],
            link: vec![vec![f64::INFINITY]],
            cores: vec![16],
        };
        let nodes = vec![vec![
            Demand {
                cores: 8,
                mrr: vec![0.0],
            },
            Demand {
                cores: 8,
                mrr: vec![10.0],
            },
        ]];
        let p = sys.predict_demands(&nodes);
        let mrt = FiniteSource::new(16, 5.0, 50.0).response_time();
        assert!(close(p.numa.mrt[0][0], mrt, 1e-12));
        assert_eq!(p.cpu_util[0][0], 1.0);
        assert!(close(p.cpu_util[0][1], 1.0 / (1.0 + 10.0 * mrt), 1e-12));
        let want = (8.0 + 8.0 * p.cpu_util[0][1]) / 16.0 + p.numa.mct_util[0];
        assert!(close(p.system_util[0], want, 1e-12));
        assert!(close(
            p.compute_rate(&nodes, |_, d| d == 1),
            8.0 * p.cpu_util[0][1],
            1e-12
        ));
    }

    /// The counter inversion recovers the MRR it was generated with, from
    /// CPU-bound to near saturation, on every node and on one; a rate no MRR
    /// explains (above the peak of the predicted curve) gives the MRR of the
    /// peak, and a rate of 0 gives 0.
    #[test]
    fn request_rate_inversion_round_trips() {
        let sys = amd8();
        let uniform = vec![1.0 / 8.0; 8];
        let layouts: [&[u32]; 3] = [&[8; 8], &[8, 0, 0, 0, 0, 0, 0, 0], &[1; 8]];
        for layout in layouts {
            for mrr in [1e3, 1e5, 1e6, 5e6] {
                let seen = sys.observed_request_rate(layout, mrr, &uniform);
                let got = sys.mrr_from_request_rate(layout, &uniform, seen);
                assert!(close(got, mrr, 1e-6), "{layout:?} {mrr}: {got}");
            }
            let peak = sys.mrr_from_request_rate(layout, &uniform, 1e12);
            let top = sys.observed_request_rate(layout, peak, &uniform);
            for mrr in [1e6, 1e7, 1e8, 1e9] {
                assert!(sys.observed_request_rate(layout, mrr, &uniform) <= top * (1.0 + 1e-9));
            }
        }
        assert_eq!(sys.mrr_from_request_rate(&[8; 8], &uniform, 0.0), 0.0);
    }

    /// Progress at 64 cores over progress at 32 (half of every node) pins down
    /// the MRR: a CPU-bound app doubles (ratio 2 → MRR 0), a saturated one
    /// barely gains, and the ratios in between invert to the MRR they came from.
    #[test]
    fn speedup_inversion_round_trips() {
        let sys = amd8();
        let uniform = vec![1.0 / 8.0; 8];
        let (a, b) = ([8u32; 8], [4u32; 8]);
        for mrr in [1e5, 1e6, 5e6, 2e7] {
            let ratio = sys.progress_rate(&a, mrr, &uniform) / sys.progress_rate(&b, mrr, &uniform);
            assert!(ratio < 2.0 && ratio > 1.0, "{mrr}: {ratio}");
            let got = sys.mrr_from_speedup(&a, &b, &uniform, ratio);
            assert!(close(got, mrr, 1e-5), "{mrr}: {got}");
        }
        assert_eq!(sys.mrr_from_speedup(&a, &b, &uniform, 2.0), 0.0);
        assert_eq!(sys.mrr_from_speedup(&a, &b, &uniform, 2.3), 0.0);
        let saturated = sys.mrr_from_speedup(&a, &b, &uniform, 0.5);
        assert!(saturated > 2e7, "{saturated}");
    }

    /// A calibration's missing links (local paths, a one-node machine) become
    /// infinitely fast links, i.e. no link term.
    #[test]
    fn network_from_calibration() {
        let topo = crate::Topology::synthetic("t", "package:2 numa:1 core:4").unwrap();
        let mut cal = MemoryCalibration::assumed(&topo);
        cal.link_service_rate[1][0] = None;
        let sys = NumaSystem::from_calibration(&cal, vec![4, 4]);
        assert_eq!(sys.mu, [1.875e8, 1.875e8]);
        assert_eq!(sys.link[0], [f64::INFINITY, 1.5625e8]);
        assert_eq!(sys.link[1], [f64::INFINITY, f64::INFINITY]);
        let one = crate::Topology::synthetic("t", "package:1 core:2").unwrap();
        let sys = NumaSystem::from_calibration(&MemoryCalibration::assumed(&one), vec![2]);
        assert_eq!(sys.link, [[f64::INFINITY]]);
    }
}
