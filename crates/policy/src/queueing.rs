//! Queueing model of memory controllers (NuPoCo §3.3, §4).
//!
//! Problem: NuPoCo decides how many cores each co-located app gets by predicting,
//! for a candidate allocation, how busy the CPU cores and the memory controllers
//! will be. The simulator needs the same prediction to turn memory traffic into
//! memory latency.
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
//! works as long as MRR and μ use the same one (the paper's Figure 4 uses μ = 50).

/// Below this offered load per customer (MRR/μ) the response time is taken as its
/// limit 1/μ: eq. 3 subtracts two numbers of size 1/ρ, which loses all precision
/// as ρ → 0 (at ρ = 1e-9 the difference is about 1 against 1e9).
const MIN_LOAD: f64 = 1e-9;

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

    /// P0, the probability that the server is idle: the inverse of
    /// Σ_{k=0..N} N!/(N−k)! ρ^k (the bracket of eq. 4).
    ///
    /// The sum is evaluated by Horner's rule from the innermost factor,
    /// S = 1 + Nρ(1 + (N−1)ρ(1 + … (1 + 1·ρ))), which never forms N! on its own;
    /// when it overflows P0 is 0, the right limit for a saturated server.
    pub fn p0(&self) -> f64 {
        let rho = self.load();
        if self.customers == 0 || rho == 0.0 {
            return 1.0;
        }
        let mut acc = 1.0f64;
        for j in 1..=self.customers {
            acc = 1.0 + f64::from(j) * rho * acc;
        }
        1.0 / acc
    }

    /// Server (memory controller) utilization, eq. 4: MCT Util(N) = 1 − P0.
    pub fn utilization(&self) -> f64 {
        1.0 - self.p0()
    }

    /// Mean response time of one request (queueing plus service), eq. 3:
    /// MRT(N) = (1/μ)(N / MCT Util(N) − μ/MRR). With no traffic a request would
    /// find the server idle, so the limit 1/μ is returned.
    pub fn response_time(&self) -> f64 {
        if self.customers == 0 || self.load() < MIN_LOAD {
            return 1.0 / self.mu;
        }
        let u = self.utilization();
        (1.0 / self.mu) * (f64::from(self.customers) / u - self.mu / self.mrr)
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
