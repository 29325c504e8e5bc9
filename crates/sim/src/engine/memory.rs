//! Memory queueing (docs/simulator.md, The engine): how long a request from
//! a CPU waits at the link it crosses and at the memory controller.
//!
//! Problem: the simulator needs the physics of memory contention, so that a
//! memory-bound team's progress saturates at the bandwidth its controllers and
//! links offer. NuPoCo's §4 network is the policy's *prediction* of it: there
//! each controller's customers are the CPU nodes, and a node's requests to one
//! controller queue for a path server whose service time is the controller's
//! whole response time MRT_m. Used as physics that serializes a node's
//! requests to one controller behind one another's queueing, which caps a
//! node's local traffic at 1/MRT_m requests per second: FT's 8 threads per
//! node on `nupoco-amd64` got 20 GB/s of the 80 GB/s the eight controllers
//! serve, fewer threads per node ran faster (retrograde throughput beyond 4),
//! and traffic spread over remote nodes ran faster than local traffic (more
//! path servers), so `native`'s balancer, which leaves threads away from their
//! pages, beat every pinned placement.
//!
//! Approach: the §3.3 model per server, with the requests a CPU keeps
//! outstanding as customers. Each memory controller is an M/M/1/N/N queue
//! whose N customers are the request streams of the CPUs sending to it, at
//! their mean rate (§3.3: "the weighted average of the workloads' MRR of all
//! assigned cores"); each link from CPU node i to memory node m (interconnect
//! or front-side bus) is another whose customers are node i's streams to m. A
//! request waits at its link, then at its controller.
//!
//! - *Streams*: §3.2 takes a core to block on each request, one customer; a
//!   core with memory-level parallelism k keeps k requests in flight (the
//!   engine already overlaps its unloaded latency by k), so it is k customers
//!   issuing 1/k of its requests each, and its time at the servers overlaps k
//!   ways too. With one customer per core, 24 Opteron cores spreading their
//!   requests over 4 controllers left each controller idle whenever its few
//!   customers happened to be elsewhere, and interleaved memory ran 26% below
//!   the bandwidth that first-touch placement reached.
//! - *Decomposition*: a finite-source customer issues requests at its rate per
//!   unit of time it is *not* at that server, and a stream's time at the other
//!   servers (its other controllers, its link) is such time too, so each
//!   server sees the stream's rate per second of compute divided by the time
//!   it spends outside that server per second of compute; those times depend
//!   on every server's response time, and the two are solved to a fixed point
//!   (the usual decomposition of a closed queueing network into single
//!   stations).
//!
//! On one memory node with no link and one stream per core this is exactly
//! §3.3's SMP model, and a controller saturates at its service rate μ however
//! its customers are spread.

use coloc_model::queueing::{response_times, FiniteSource};

use super::layout::{CpuIdx, Layout};

/// The memory queues' customers in one round: the CPUs that send requests,
/// in CPU order, each with the requests it keeps in flight and its rate to
/// each memory node it sends to. Only positive rates are kept, so a round
/// costs what the CPUs with traffic send, not CPUs × memory nodes.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Demand {
    /// Per CPU with traffic: its index and its memory-level parallelism.
    cpus: Vec<(CpuIdx, f64)>,
    /// Where each CPU's rates start in `rates` (one more entry than `cpus`).
    start: Vec<usize>,
    /// (memory node, requests per second of compute), nodes ascending.
    rates: Vec<(usize, f64)>,
}

impl Demand {
    pub fn clear(&mut self) {
        self.cpus.clear();
        self.start.clear();
        self.rates.clear();
    }

    /// Adds a CPU (after those of lower index) with its requests per second
    /// of compute to each memory node (`rates[m]`), and the requests it keeps
    /// in flight; a CPU with no positive rate is left out.
    pub fn push(&mut self, cpu: CpuIdx, mlp: f64, rates: &[f64]) {
        if !rates.iter().any(|&r| r > 0.0) {
            return;
        }
        if self.start.is_empty() {
            self.start.push(0);
        }
        self.cpus.push((cpu, mlp));
        let positive = rates.iter().enumerate().filter(|&(_, &r)| r > 0.0);
        self.rates.extend(positive.map(|(m, &r)| (m, r)));
        self.start.push(self.rates.len());
    }

    fn of(&self, k: usize) -> &[(usize, f64)] {
        &self.rates[self.start[k]..self.start[k + 1]]
    }
}

/// The response times of every controller and link, refined one damped
/// step at a time: the contention model's own fixed point (activity and
/// rates, `contention.rs`) calls [`Queues::step`] once per round, so both
/// converge together.
#[derive(Clone, Debug)]
pub(crate) struct Queues {
    mems: usize,
    /// Per memory node: its controller's mean response time, seconds.
    ctrl: Vec<f64>,
    /// `[i * mems + m]`: mean response time of the link from CPU node i to
    /// memory node m, seconds (0 where none is crossed).
    link: Vec<f64>,
    /// `[i * mems + m]`: that link's service rate, infinite where none is
    /// crossed.
    link_mu: Vec<f64>,
    /// Service times 1/μ of the controllers and links: an idle server's
    /// response time, computed once.
    ctrl_idle: Vec<f64>,
    link_idle: Vec<f64>,
    /// Per server, this round's customers and their rate-weighted sum
    /// (scratch, so that a round allocates nothing).
    ctrl_load: Vec<(f64, f64)>,
    link_load: Vec<(f64, f64)>,
    /// This round's loaded servers, controllers then links, and their
    /// response times (scratch); a server whose count is interpolated has
    /// two sources, ⌊N⌋ and ⌈N⌉ customers, and its weight on the second in
    /// `weights` (one entry per loaded server, None for one source).
    sources: Vec<FiniteSource>,
    responses: Vec<f64>,
    weights: Vec<Option<f64>>,
    /// Per server (controllers, then links): its customers rounded last
    /// round, the count it had before that changed (0: none yet), and
    /// whether it went back to it (see [`Chatter`]).
    chatter: Vec<Chatter>,
}

/// Whether a server's rounded customer count chatters, and then its count
/// is interpolated for the rest of the solve (docs/simulator.md, Speed, the
/// contention fixed point). A CPU's streams count as its runners' memory-level
/// parallelism weighted by their request rates, which move with activity,
/// so a CPU time-sharing runners of two models brings its servers a
/// fractional count N that moves each round. Rounded, the response time
/// jumps by a whole customer's worth where N crosses k + ½; when the count
/// k gives rates that push N over k + ½ and k + 1 rates that pull it back,
/// the map has no fixed point and the damped rounds chatter across the
/// boundary until the round cap, returning wherever they stopped. A server
/// whose count goes back to a value it left is interpolated instead: its
/// response time is (1 − w)·R(⌊N⌋) + w·R(⌈N⌉), w = N − ⌊N⌋, continuous in
/// N and equal to the rounded count's at whole counts, so the solve
/// reaches a fixed point to the tolerance.
#[derive(Clone, Copy, Debug, Default)]
struct Chatter {
    count: u32,
    left: u32,
    interpolate: bool,
}

impl Chatter {
    /// Notes this round's rounded count; true once the server interpolates.
    fn note(&mut self, count: u32) -> bool {
        if !self.interpolate && count != self.count {
            if self.count != 0 && count == self.left {
                self.interpolate = true;
            }
            self.left = self.count;
            self.count = count;
        }
        self.interpolate
    }
}

impl Queues {
    /// Every server idle: a request takes its service time.
    pub fn new(layout: &Layout) -> Self {
        let link_mu: Vec<f64> = layout.numa.link.iter().flatten().copied().collect();
        let ctrl_idle: Vec<f64> = layout.numa.mu.iter().map(|m| 1.0 / m).collect();
        let link_idle: Vec<f64> = link_mu.iter().map(|&l| 1.0 / l).collect();
        Self {
            mems: layout.mem_nodes,
            ctrl: ctrl_idle.clone(),
            link: link_idle.clone(),
            ctrl_load: vec![(0.0, 0.0); layout.mem_nodes],
            link_load: vec![(0.0, 0.0); link_mu.len()],
            sources: Vec::new(),
            responses: Vec::new(),
            weights: Vec::new(),
            chatter: vec![Chatter::default(); layout.mem_nodes + link_mu.len()],
            link_mu,
            ctrl_idle,
            link_idle,
        }
    }

    /// Mean response time, seconds, of one request from CPU node i to memory
    /// node m: link plus controller.
    pub fn response(&self, i: usize, m: usize) -> f64 {
        self.link[i * self.mems + m] + self.ctrl[m]
    }

    /// One damped step of the response times toward what `demand` makes
    /// them; returns the largest relative change the undamped step asked for.
    pub fn step(&mut self, layout: &Layout, demand: &Demand) -> f64 {
        self.ctrl_load.fill((0.0, 0.0));
        self.link_load.fill((0.0, 0.0));
        for (k, &(c, mlp)) in demand.cpus.iter().enumerate() {
            let i = layout.cpu_node[c];
            let rates = demand.of(k);
            // Seconds one of its streams spends at the servers per second of
            // compute.
            let queued: f64 = rates
                .iter()
                .map(|&(m, r)| r / mlp * self.response(i, m))
                .sum();
            // A stream's rate at a server, per second outside that server,
            // with the CPU's streams as its weight: every server's customers
            // are summed in CPU order.
            for &(m, rate) in rates {
                let r = rate / mlp;
                add_stream(
                    &mut self.ctrl_load[m],
                    r / (1.0 + queued - r * self.ctrl[m]),
                    mlp,
                );
                let l = i * self.mems + m;
                if self.link_mu[l].is_finite() {
                    add_stream(
                        &mut self.link_load[l],
                        r / (1.0 + queued - r * self.link[l]),
                        mlp,
                    );
                }
            }
        }
        // Every loaded server's response time at once (`response_times`
        // overlaps their recurrences), in the order of the updates below.
        self.sources.clear();
        self.weights.clear();
        let mems = self.mems;
        for (m, &load) in self.ctrl_load.iter().enumerate() {
            if load.0 != 0.0 {
                let w = queue(
                    load,
                    layout.numa.mu[m],
                    &mut self.chatter[m],
                    &mut self.sources,
                );
                self.weights.push(w);
            }
        }
        for (l, &load) in self.link_load.iter().enumerate() {
            if self.link_mu[l].is_finite() && load.0 != 0.0 {
                let chatter = &mut self.chatter[mems + l];
                let w = queue(load, self.link_mu[l], chatter, &mut self.sources);
                self.weights.push(w);
            }
        }
        response_times(&self.sources, &mut self.responses);
        let mut responses = self.responses.iter().copied();
        let mut weights = self.weights.iter().copied();
        let mut loaded = || {
            let mut next = || responses.next().expect("a response per source");
            match weights.next().expect("a weight per loaded server") {
                None => next(),
                Some(w) => (1.0 - w) * next() + w * next(),
            }
        };
        let mut delta: f64 = 0.0;
        // Damped: undamped, a saturated round and an idle one can alternate.
        // A server without customers that is already at its service time
        // stays there and changes nothing (most links of a machine whose
        // threads use local memory): skipped, with the same result.
        let mut update = |slot: &mut f64, next: f64| {
            if *slot > 0.0 {
                delta = delta.max((next - *slot).abs() / *slot);
            }
            *slot = 0.5 * (*slot + next);
        };
        for (m, slot) in self.ctrl.iter_mut().enumerate() {
            if self.ctrl_load[m].0 == 0.0 {
                if *slot != self.ctrl_idle[m] {
                    update(slot, self.ctrl_idle[m]);
                }
            } else {
                update(slot, loaded());
            }
        }
        for (l, slot) in self.link.iter_mut().enumerate() {
            if self.link_mu[l].is_finite() {
                if self.link_load[l].0 == 0.0 {
                    if *slot != self.link_idle[l] {
                        update(slot, self.link_idle[l]);
                    }
                } else {
                    update(slot, loaded());
                }
            }
        }
        delta
    }
}

/// Adds a stream of rate `r` (kept only when positive) that counts as `k`
/// customers to a server's (customers, Σ rate × customers).
fn add_stream(load: &mut (f64, f64), r: f64, k: f64) {
    if r > 0.0 {
        *load = (load.0 + k, load.1 + r * k);
    }
}

/// Adds to `sources` the M/M/1/N/N server of rate `mu` whose customers are
/// the streams summed in `load` (customers, Σ rate × customers; some), at
/// their mean rate: their number rounded to a whole customer, or, once its
/// rounded count chatters ([`Chatter`]), the servers of ⌊N⌋ and ⌈N⌉
/// customers, returning the weight of the second.
fn queue(
    (n, sum): (f64, f64),
    mu: f64,
    chatter: &mut Chatter,
    sources: &mut Vec<FiniteSource>,
) -> Option<f64> {
    let customers = n.round().max(1.0) as u32;
    if chatter.note(customers) {
        let (lo, hi) = (n.floor().max(1.0), n.ceil().max(1.0));
        if lo != hi {
            sources.push(FiniteSource::new(lo as u32, sum / n, mu));
            sources.push(FiniteSource::new(hi as u32, sum / n, mu));
            return Some(n - lo);
        }
    }
    sources.push(FiniteSource::new(customers, sum / n, mu));
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::platform;

    /// One CPU's traffic: requests to each memory node per second of
    /// compute, and the requests it keeps in flight.
    struct Traffic {
        rates: Vec<f64>,
        mlp: f64,
    }

    /// The converged response times `[i][m]` for fixed traffic.
    fn response_times(layout: &Layout, traffic: &[Traffic]) -> Vec<Vec<f64>> {
        let mut demand = Demand::default();
        for (c, t) in traffic.iter().enumerate() {
            demand.push(c, t.mlp, &t.rates);
        }
        let mut q = Queues::new(layout);
        for _ in 0..200 {
            if q.step(layout, &demand) < 1e-12 {
                break;
            }
        }
        (0..layout.numa.link.len())
            .map(|i| (0..layout.mem_nodes).map(|m| q.response(i, m)).collect())
            .collect()
    }

    /// `n` CPUs of a machine with `mems` memory nodes: CPU c sends `rate`
    /// requests per second of compute spread by `to(c)` over the memory nodes,
    /// with `mlp` in flight; the others are idle.
    fn traffic(
        cpus: usize,
        mems: usize,
        busy: usize,
        rate: f64,
        mlp: f64,
        to: impl Fn(usize) -> Vec<f64>,
    ) -> Vec<Traffic> {
        (0..cpus)
            .map(|c| Traffic {
                rates: if c < busy {
                    to(c).into_iter().map(|f| f * rate).collect()
                } else {
                    vec![0.0; mems]
                },
                mlp,
            })
            .collect()
    }

    /// Requests each controller serves per second, from every CPU's rates
    /// per second of compute and its wall time per second of compute.
    fn served(layout: &Layout, t: &[Traffic], mrt: &[Vec<f64>]) -> Vec<f64> {
        let mut out = vec![0.0; layout.mem_nodes];
        for (c, t) in t.iter().enumerate() {
            let i = layout.cpu_node[c];
            let wall: f64 = 1.0
                + (0..layout.mem_nodes)
                    .map(|m| t.rates[m] * mrt[i][m] / t.mlp)
                    .sum::<f64>();
            for (m, r) in t.rates.iter().enumerate() {
                out[m] += r / wall;
            }
        }
        out
    }

    /// A server's rounded count that goes 7 → 6 → 7 (N = 6.6, 6.4, 6.6)
    /// went back to a count it left: from then on it is interpolated. One
    /// that only climbs (6 → 7 → 8) or settles is rounded throughout.
    #[test]
    fn a_count_that_goes_back_is_interpolated() {
        let mut c = Chatter::default();
        assert!(!c.note(7) && !c.note(6) && c.note(7) && c.note(8));
        let mut c = Chatter::default();
        assert!(!c.note(6) && !c.note(7) && !c.note(8) && !c.note(8));
    }

    /// Interpolated, N = 6.25 customers answer a quarter of the way from
    /// 6 customers' response time to 7's; rounded (before any chatter) they
    /// answer as 6; a whole count answers as itself either way.
    #[test]
    fn an_interpolated_count_lies_between_its_neighbours() {
        let (mu, rate) = (1.5625e8, 3e7);
        let r = |k: u32| FiniteSource::new(k, rate, mu).response_time();
        let answer = |n: f64, chatter: &mut Chatter| {
            let mut sources = Vec::new();
            let mut out = Vec::new();
            let w = queue((n, n * rate), mu, chatter, &mut sources);
            super::response_times(&sources, &mut out);
            w.map_or(out[0], |w| (1.0 - w) * out[0] + w * out[1])
        };
        assert_eq!(answer(6.25, &mut Chatter::default()), r(6));
        let mut chattering = Chatter {
            count: 6,
            left: 6,
            interpolate: true,
        };
        let want = 0.75 * r(6) + 0.25 * r(7);
        assert!((answer(6.25, &mut chattering) - want).abs() < 1e-12 * want);
        assert_eq!(answer(7.0, &mut chattering), r(7));
    }

    /// nupoco-amd64, one stream per CPU (§3.3 as printed): 10 GB/s per
    /// controller = 156.25e6 requests/s of 64 B. Eight CPUs of node 0 each
    /// issuing λ = 34.9e6 requests per second of compute (FT's rate, 0.03 per
    /// instruction at 0.86 ns) to their own controller offer 8λ = 1.79 μ:
    /// saturated, so the response time nears N/μ − 1/λ = 51.2 − 28.7 = 22.5 ns
    /// (eq. 3 exactly: 25.1 ns) and the controller serves 0.95 μ. The same
    /// CPUs sending to node 1 cross a 6 GB/s link (93.75e6/s), which
    /// saturates first: 46.8 ns there, during which they do not load node 1's
    /// controller, so it adds only 12.0 ns (each queue sees λ per second spent
    /// outside it), and the link carries 0.975 of its rate.
    #[test]
    fn a_controller_saturates_at_its_bandwidth_wherever_its_customers_are() {
        let layout = Layout::new(&platform("nupoco-amd64").unwrap());
        let lam = 0.03 / 0.86e-9;
        let to = |m: usize| {
            move |_| {
                let mut f = vec![0.0; 8];
                f[m] = 1.0;
                f
            }
        };
        let local_t = traffic(64, 8, 8, lam, 1.0, to(0));
        let local = response_times(&layout, &local_t);
        let mu = 10e9 / 64.0;
        assert!((local[0][0] - 25.08e-9).abs() < 0.01e-9, "{}", local[0][0]);
        let x = served(&layout, &local_t, &local)[0];
        assert!(x > 0.95 * mu && x <= mu, "{x}");
        // Node 1's CPUs have no traffic, so their row sees the idle link and
        // the loaded controller of node 0.
        assert!(local[1][0] > local[0][0]);
        let remote_t = traffic(64, 8, 8, lam, 1.0, to(1));
        let remote = response_times(&layout, &remote_t);
        let link = 6e9 / 64.0;
        assert!(
            (remote[0][1] - 58.84e-9).abs() < 0.01e-9,
            "{}",
            remote[0][1]
        );
        let x = served(&layout, &remote_t, &remote)[1];
        assert!(x > 0.97 * link && x <= link, "{x}");
    }

    /// opteron-8431: 4 nodes of 6 CPUs, 7 GB/s per controller, 4.5 GB/s per
    /// link. All 24 CPUs issue λ = 43e6 requests per second of compute (mg's
    /// rate: 0.025 per instruction at 0.58 ns), either to their own node
    /// (first touch) or a quarter to each node (interleaved). Locally each
    /// controller has 6 CPUs offering 2.4 μ and serves 0.97 μ. Interleaved
    /// with one stream per CPU, 24 customers wander over 4 controllers and
    /// links and each controller idles while its share of them is elsewhere:
    /// 0.80 μ. With mg's 6 requests in flight per CPU there are 144
    /// customers and the controllers stay busy, as on the machine: μ locally,
    /// 0.99 μ interleaved.
    #[test]
    fn requests_in_flight_keep_controllers_busy_under_interleaving() {
        let layout = Layout::new(&platform("opteron-8431").unwrap());
        let mu = 7e9 / 64.0;
        let lam = 43e6;
        let first_touch = |c: usize| {
            let mut f = vec![0.0; 4];
            f[c / 6] = 1.0;
            f
        };
        let spread = |_| vec![0.25; 4];
        let x = |mlp: f64, to: &dyn Fn(usize) -> Vec<f64>| {
            let t = traffic(24, 4, 24, lam, mlp, to);
            served(&layout, &t, &response_times(&layout, &t))[0] / mu
        };
        let (local1, spread1) = (x(1.0, &first_touch), x(1.0, &spread));
        let (local6, spread6) = (x(6.0, &first_touch), x(6.0, &spread));
        assert!(local1 > 0.96 && spread1 < 0.81, "{local1} {spread1}");
        assert!(local6 > 0.99 && spread6 > 0.98, "{local6} {spread6}");
    }
}
