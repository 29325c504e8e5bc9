//! The fluid, event-driven engine (docs/simulator.md, The engine).
//!
//! Between two events every thread's progress rate is constant, so time jumps
//! from event to event: the end of an app's current phase (or of a migration's
//! cache refill), a balancer period, or the caller's deadline. At each event the
//! state changes (a phase starts, a team is created, an app exits, threads move)
//! and the rates are solved again (`contention::solve`). Time is kept in
//! integer nanoseconds and phase ends are rounded up to the next nanosecond, so
//! a run is a pure function of its inputs and the seed.

mod balancer;
mod contention;
mod layout;
mod lock;
mod memo;
mod memory;
mod runner;
mod state;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use coloc_model::{AppId, InstanceUsage, LlcTotals, MemPolicy, Placement, SchedSettings, Tid};
use rand::rngs::Xoshiro256PlusPlus;
use rand::SeedableRng;

use self::contention::Solution;
use self::layout::{CpuIdx, Layout};
use self::memo::Memo;
use self::runner::{Home, Runner, Team};
pub use self::state::{SimApp, SimThread, ThreadStats};
use crate::model::{AppModel, PhaseKind};
use crate::platform::{Params, Platform, LINE_BYTES};

/// Why a team size was not set ([`Engine::set_dop`]); the machine reports it
/// as a refused setting.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DopRefused {
    #[error("{id} is not running")]
    NotRunning { id: AppId },
    #[error("dop: {model} is not malleable (needs an OpenMP model and `malleable = true`)")]
    NotMalleable { model: String },
}

/// What the engine reports while time passes.
#[derive(Clone, Debug, PartialEq)]
pub enum EngineEvent {
    /// The app finished its last phase.
    Exited {
        app: AppId,
        at_ns: u64,
        /// Its work per second of its run time, 10^9 instructions/s.
        throughput: f64,
        /// CPU time and cycles of all its threads over its whole life.
        usage: InstanceUsage,
    },
    /// The app's threads changed (a team was created or grown).
    ThreadsChanged { app: AppId, tids: Vec<Tid> },
}

/// How to start an app.
#[derive(Clone, Debug)]
pub struct AppLaunch {
    pub id: AppId,
    pub model: Arc<AppModel>,
    /// Team size of its parallel phases.
    pub threads: u32,
    pub placement: Placement,
    pub memory: MemPolicy,
    pub sched: SchedSettings,
    /// Whether its DoP may change (an OpenMP model that the workload marks malleable).
    pub malleable: bool,
}

/// The simulated machine state. A clone goes on from the same state,
/// remembered solutions included.
#[derive(Clone, Debug)]
pub struct Engine {
    platform: Platform,
    layout: Layout,
    rng: Xoshiro256PlusPlus,
    now_ns: u64,
    apps: Vec<SimApp>,
    /// Next simulated id: pids and tids come from one counter, as on Linux,
    /// so a main thread's tid is its pid and every tid is unique.
    next_id: u32,
    next_balance_ns: Option<u64>,
    /// Per LLC, the fraction of each footprint it held in the last interval
    /// solved: what a thread leaving it has to refill elsewhere.
    llc_fit: Vec<f64>,
    /// Intervals between events simulated so far: the unit of the
    /// simulator's speed (`coloc bench sim`).
    steps: u64,
    /// Contention fixed points computed; the other intervals reused a
    /// remembered solution (`memo.rs`).
    solves: u64,
    /// Rounds of those fixed points.
    rounds: u64,
    /// Fixed points that stopped at the round cap.
    unconverged: u64,
    memo: Memo,
    /// Scratch: the contention model's inputs of this interval, and the apps
    /// whose phase ended at its end.
    key: Vec<u64>,
    done: Vec<usize>,
}

/// First simulated pid.
const FIRST_PID: u32 = 1000;

impl Engine {
    pub fn new(platform: Platform, seed: u64) -> Self {
        let layout = Layout::new(&platform);
        Self {
            llc_fit: vec![1.0; layout.llcs()],
            layout,
            platform,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            now_ns: 0,
            apps: Vec::new(),
            next_id: FIRST_PID,
            next_balance_ns: None,
            steps: 0,
            solves: 0,
            rounds: 0,
            unconverged: 0,
            memo: Memo::default(),
            key: Vec::new(),
            done: Vec::new(),
        }
    }

    pub fn platform(&self) -> &Platform {
        &self.platform
    }

    pub fn now_ns(&self) -> u64 {
        self.now_ns
    }

    /// Intervals between events simulated so far.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Contention fixed points computed so far (at most [`Self::steps`]: an
    /// interval whose inputs were seen recently reuses their solution).
    pub fn solves(&self) -> u64 {
        self.solves
    }

    /// Rounds of the contention fixed points computed so far.
    pub fn rounds(&self) -> u64 {
        self.rounds
    }

    /// Of those fixed points, how many stopped at the round cap before
    /// reaching the tolerance (docs/simulator.md, Speed).
    pub fn unconverged(&self) -> u64 {
        self.unconverged
    }

    pub fn apps(&self) -> &[SimApp] {
        &self.apps
    }

    /// The CPU a thread is on.
    pub fn cpu_of(&self, t: &SimThread) -> coloc_model::Cpu {
        self.layout.cpus[t.cpu]
    }

    fn app_mut(&mut self, id: AppId) -> Option<&mut SimApp> {
        self.apps.iter_mut().find(|a| a.id == id)
    }

    /// Starts an app: its main thread, placed by `placement`. Workers are created
    /// at the first parallel phase (OpenMP creates its team there too).
    pub fn launch(&mut self, l: AppLaunch) -> (u32, Tid) {
        let tid = self.alloc_tid();
        let pid = tid;
        // libgomp reads the affinity mask once, at start, and throttles its
        // spin-waiting when the team is larger than the mask; a program of
        // plain threads (PARSEC's pthreads builds) waits in
        // `pthread_barrier_wait` or on a condition variable, both of which
        // sleep in the kernel.
        let mask = match &l.placement {
            coloc_model::Placement::Unmanaged => self.layout.cpus.len(),
            p => p.cpus().len(),
        };
        let passive = !l.model.openmp || mask < l.threads as usize;
        let mut app = SimApp::new(l, pid, self.now_ns);
        app.passive = passive;
        let allowed = self.allowed(&app.placement, tid);
        let cpu = self.place(&allowed, None);
        let node = self.layout.mem_node[cpu];
        app.home_node = node;
        app.threads.push(SimThread::new(tid, cpu, node, allowed));
        self.apps.push(app);
        self.begin_phase(self.apps.len() - 1);
        (pid, tid)
    }

    fn alloc_tid(&mut self) -> Tid {
        let t = self.next_id;
        self.next_id += 1;
        t
    }

    /// Runnable threads per CPU.
    fn load(&self) -> Vec<usize> {
        let mut load = vec![0; self.layout.cpus.len()];
        for a in &self.apps {
            for t in a.runnable() {
                load[t.cpu] += 1;
            }
        }
        load
    }

    /// The CPUs `placement` allows thread `tid` (indices; none when it
    /// names no CPU of the platform).
    fn allowed(&self, placement: &Placement, tid: Tid) -> Vec<CpuIdx> {
        balancer::allowed_indices(&self.layout, placement.cpus_of(tid))
    }

    /// The CPU for a thread allowed `allowed` (every CPU when empty): its
    /// current one if still allowed, else the least-loaded allowed CPU
    /// (random among ties).
    fn place(&mut self, allowed: &[CpuIdx], current: Option<usize>) -> usize {
        let every;
        let allowed = if allowed.is_empty() {
            every = balancer::allowed_indices(&self.layout, None);
            &every
        } else {
            allowed
        };
        match current {
            Some(c) if allowed.contains(&c) => c,
            _ => {
                let load = self.load();
                balancer::pick(allowed, &load, &mut self.rng)
            }
        }
    }

    /// Changes an app's placement; returns how many threads moved.
    pub fn set_placement(&mut self, id: AppId, placement: Placement) -> u32 {
        let Some(i) = self.apps.iter().position(|a| a.id == id) else {
            return 0;
        };
        let mut moved = 0;
        for k in 0..self.apps[i].threads.len() {
            let (tid, cpu) = (self.apps[i].threads[k].tid, self.apps[i].threads[k].cpu);
            let allowed = self.allowed(&placement, tid);
            let new = self.place(&allowed, Some(cpu));
            self.apps[i].threads[k].allowed = allowed;
            if new != cpu {
                self.migrate(i, k, new);
                moved += 1;
            }
        }
        self.apps[i].placement = placement;
        moved
    }

    pub fn set_memory(&mut self, id: AppId, memory: MemPolicy) {
        if let Some(a) = self.app_mut(id) {
            a.memory = memory;
        }
    }

    pub fn set_sched(&mut self, id: AppId, sched: SchedSettings) {
        if let Some(a) = self.app_mut(id) {
            a.sched = sched;
        }
    }

    /// Sets the team size of the app's next parallel phases.
    pub fn set_dop(&mut self, id: AppId, dop: u32) -> Result<(), DopRefused> {
        let a = self.app_mut(id).ok_or(DopRefused::NotRunning { id })?;
        if !a.malleable {
            return Err(DopRefused::NotMalleable {
                model: a.model.name.clone(),
            });
        }
        a.dop = dop.max(1);
        Ok(())
    }

    /// Moves a thread, charging a cache refill when it leaves its LLC: the part
    /// of its private set that LLC held (its footprint times the fraction the
    /// competing footprints left it, as in the last interval solved), fetched
    /// again at its memory-level parallelism. A thread whose set overflows its
    /// share of the cache lost most of it to its neighbours already, so it has
    /// only that share to refill, not the cache's whole capacity.
    fn migrate(&mut self, app: usize, k: usize, to: usize) {
        let from = self.apps[app].threads[k].cpu;
        let a = &mut self.apps[app];
        let t = &mut a.threads[k];
        t.cpu = to;
        t.stats.migrations += 1;
        if t.stats.instructions == 0.0 {
            // It has not run yet, so it has touched no memory: first touch will
            // happen where it runs (a placement applied before it starts).
            t.first_node = self.layout.mem_node[to];
            if k == 0 {
                a.home_node = t.first_node;
            }
            return;
        }
        if self.layout.llc[from] != self.layout.llc[to] {
            // A cold cache (Thread Tranquilizer §2.2): the mover pulls its
            // private working set, the part its old LLC held (the last
            // interval's fit) up to what the new one holds, from memory — a
            // stall for its team and as many LLC misses.
            let p = &self.platform.params;
            let held = a.model.private_mb * 1024.0 * 1024.0 * self.llc_fit[self.layout.llc[from]];
            let bytes = held.min(self.layout.llc_bytes[self.layout.llc[to]]);
            let lines = bytes / LINE_BYTES;
            a.debt_s += lines / a.model.mlp * p.mem_latency_ns * 1e-9;
            t.stats.llc_refs += lines;
            t.stats.llc_misses += lines;
        }
    }

    /// Enters the app's current phase: creates or grows the team when it is a
    /// parallel one. Returns the new thread list if it changed.
    fn begin_phase(&mut self, i: usize) -> Option<Vec<Tid>> {
        let phase = self.apps[i].model.phases[self.apps[i].phase];
        self.apps[i].remaining = phase.ginstr * 1e9;
        if phase.kind == PhaseKind::Serial {
            self.apps[i].team = 1;
            return None;
        }
        let dop = self.apps[i].dop as usize;
        self.apps[i].team = dop;
        if self.apps[i].threads.len() >= dop {
            return None;
        }
        while self.apps[i].threads.len() < dop {
            let tid = self.alloc_tid();
            let allowed = self.allowed(&self.apps[i].placement, tid);
            let cpu = self.place(&allowed, None);
            let node = self.layout.mem_node[cpu];
            self.apps[i]
                .threads
                .push(SimThread::new(tid, cpu, node, allowed));
        }
        Some(self.apps[i].threads.iter().map(|t| t.tid).collect())
    }

    /// The contention model's runners (each app's runnable threads, in
    /// order) and teams (one per app) of the current state.
    /// [`Self::contention_key`] writes the same inputs as words: the two
    /// change together.
    fn runners_and_teams(&self) -> (Vec<Runner<'_>>, Vec<Team>) {
        let mut runners = Vec::new();
        let mut teams = Vec::new();
        for a in &self.apps {
            let mut members = Vec::new();
            let weight = cfs_weight(a);
            for t in a.runnable() {
                let (private_home, shared_home) = homes(a, t);
                members.push(runners.len());
                runners.push(Runner {
                    team: teams.len(),
                    cpu: t.cpu,
                    model: &a.model,
                    weight,
                    private_home,
                    shared_home,
                });
            }
            teams.push(Team {
                members,
                parallel: a.team > 1,
                slice_s: a.slice_s(&self.platform.params),
                passive: a.passive,
            });
        }
        (runners, teams)
    }

    /// Writes into `self.key` everything [`Self::runners_and_teams`] gives
    /// the contention model (the platform aside, which never changes): per
    /// app its model (the address of the shared model), team size, CFS
    /// weight, slice and passive waiting, and per runnable thread its CPU
    /// and where its data lives.
    fn contention_key(&mut self) {
        let home = |h: Home| match h {
            Home::Node(n) => n as u64,
            Home::Interleave => u64::MAX,
        };
        self.key.clear();
        for a in &self.apps {
            self.key.extend([
                Arc::as_ptr(&a.model) as usize as u64,
                a.team as u64,
                cfs_weight(a).to_bits(),
                a.slice_s(&self.platform.params).to_bits(),
                u64::from(a.passive),
            ]);
            for t in a.runnable() {
                let (private_home, shared_home) = homes(a, t);
                self.key
                    .extend([t.cpu as u64, home(private_home), home(shared_home)]);
            }
        }
    }

    /// The memo entry holding this interval's solution: a remembered one
    /// when the contention model's inputs were seen recently, else solved
    /// now.
    fn solution(&mut self) -> usize {
        self.contention_key();
        if let Some(entry) = self.memo.find(&self.key) {
            return entry;
        }
        self.solves += 1;
        let (runners, teams) = self.runners_and_teams();
        let sol = contention::solve(&self.layout, &self.platform.params, &runners, &teams);
        self.rounds += sol.rounds as u64;
        self.unconverged += u64::from(!sol.converged());
        let models = self.apps.iter().map(|a| Arc::clone(&a.model)).collect();
        self.memo.insert(&self.key, models, sol)
    }

    /// Lets simulated time pass until `deadline_ns`, returning early (at the
    /// event's time) when an app exits or changes its threads.
    pub fn advance_until(&mut self, deadline_ns: u64) -> Vec<EngineEvent> {
        let mut events = Vec::new();
        while self.now_ns < deadline_ns {
            self.arm_balancer();
            let entry = self.solution();
            self.steps += 1;
            let sol = self.memo.get(entry);
            self.llc_fit.clone_from(&sol.llc_fit);
            let mut next = deadline_ns;
            if let Some(b) = self.next_balance_ns {
                next = next.min(b);
            }
            for (i, a) in self.apps.iter().enumerate() {
                let rate = sol.team_rate[i];
                if rate > 0.0 {
                    let secs = a.debt_s + a.remaining / rate;
                    let end = self
                        .now_ns
                        .saturating_add((secs * 1e9).ceil().max(1.0) as u64);
                    next = next.min(end);
                }
            }
            integrate(
                &mut self.apps,
                &self.platform.params,
                next - self.now_ns,
                sol,
            );
            self.now_ns = next;
            self.done.clear();
            for (i, a) in self.apps.iter().enumerate() {
                if a.debt_s == 0.0 && a.remaining <= sol.team_rate[i] * 1e-9 {
                    self.done.push(i);
                }
            }
            // Last first, so that an exit (which removes its app) leaves the
            // indices of the others as they are.
            while let Some(i) = self.done.pop() {
                events.extend(self.end_phase(i));
            }
            if self.next_balance_ns == Some(self.now_ns) {
                self.balance();
            }
            if !events.is_empty() {
                break;
            }
        }
        events
    }

    /// Moves the app to its next phase, or ends it.
    fn end_phase(&mut self, i: usize) -> Vec<EngineEvent> {
        let was_parallel = self.apps[i].team > 1;
        if was_parallel {
            // Workers go to sleep until the next parallel region.
            let team = self.apps[i].team;
            for t in self.apps[i].threads.iter_mut().take(team).skip(1) {
                t.stats.voluntary += 1.0;
            }
        }
        self.apps[i].phase += 1;
        if self.apps[i].phase == self.apps[i].model.phases.len() {
            let a = self.apps.remove(i);
            let elapsed = (self.now_ns - a.started_ns) as f64 * 1e-9;
            let total =
                |f: fn(&ThreadStats) -> f64| a.threads.iter().map(|t| f(&t.stats)).sum::<f64>();
            return vec![EngineEvent::Exited {
                app: a.id,
                at_ns: self.now_ns,
                throughput: a.model.total_ginstr() / elapsed.max(1e-9),
                usage: InstanceUsage {
                    cpu_ns: (total(|s| s.run_s) * 1e9).round() as u64,
                    cycles: Some(total(|s| s.cycles).round() as u64),
                    llc: Some(LlcTotals {
                        references: total(|s| s.llc_refs).round() as u64,
                        misses: total(|s| s.llc_misses).round() as u64,
                        shared_references: total(|s| s.llc_shared_refs).round() as u64,
                    }),
                },
            }];
        }
        match self.begin_phase(i) {
            Some(tids) => vec![EngineEvent::ThreadsChanged {
                app: self.apps[i].id,
                tids,
            }],
            None => Vec::new(),
        }
    }

    /// Schedules the next balancer period while some runnable thread may move.
    fn arm_balancer(&mut self) {
        let any = self
            .apps
            .iter()
            .any(|a| a.runnable().any(|t| t.allowed.len() > 1));
        let period = (self.platform.params.balance_ms * 1e6).max(1.0) as u64;
        self.next_balance_ns = match (any, self.next_balance_ns) {
            (false, _) => None,
            (true, Some(t)) => Some(t),
            (true, None) => Some(self.now_ns + period),
        };
    }

    fn balance(&mut self) {
        let p = &self.platform.params;
        let period_s = p.balance_ms * 1e-3;
        let jitter = (p.jitter_per_s * period_s).min(1.0);
        let mut ids = Vec::new();
        let mut movable = Vec::new();
        for (i, a) in self.apps.iter().enumerate() {
            for (k, t) in a.runnable().enumerate() {
                if t.allowed.len() > 1 {
                    let touched = t.stats.instructions > 0.0;
                    movable.push(balancer::Movable {
                        id: ids.len(),
                        cpu: t.cpu,
                        allowed: &t.allowed,
                        home: (touched && a.memory != MemPolicy::Interleave)
                            .then_some(t.first_node),
                    });
                    ids.push((i, k));
                }
            }
        }
        let mut load = self.load();
        let moves = balancer::tick(
            &movable,
            &self.layout.mem_node,
            &mut load,
            jitter,
            &mut self.rng,
        );
        for (id, cpu) in moves {
            let (i, k) = ids[id];
            self.migrate(i, k, cpu);
        }
        self.next_balance_ns = None;
    }
}

/// CFS weight of an app's threads: 1024 at nice 0, a factor 1.25 per nice
/// level.
fn cfs_weight(a: &SimApp) -> f64 {
    1024.0 / 1.25f64.powi(i32::from(a.sched.nice.unwrap_or(0)))
}

/// Where a thread's private data and its app's shared data live: first
/// touch (its first node, the main thread's) unless interleaved.
fn homes(a: &SimApp, t: &SimThread) -> (Home, Home) {
    match a.memory {
        MemPolicy::Interleave => (Home::Interleave, Home::Interleave),
        MemPolicy::Default | MemPolicy::Local => {
            (Home::Node(t.first_node), Home::Node(a.home_node))
        }
    }
}

/// Accumulates progress and per-thread counters over `dt_ns`: the runners
/// of `sol` are the apps' runnable threads in order.
fn integrate(apps: &mut [SimApp], params: &Params, dt_ns: u64, sol: &Solution) {
    let dt = dt_ns as f64 * 1e-9;
    let f_hz = params.freq_ghz * 1e9;
    for (i, a) in apps.iter_mut().enumerate() {
        if a.model.phases[a.phase].kind == PhaseKind::Parallel {
            a.parallel_ns += dt_ns;
        }
        let stall = a.debt_s.min(dt);
        a.debt_s -= stall;
        a.remaining = (a.remaining - sol.team_rate[i] * (dt - stall)).max(0.0);
    }
    let mut j = 0;
    for a in apps.iter_mut() {
        let slice = a.slice_s(params);
        // Requests to data the team shares: the shared working set's share
        // of accesses, once a second thread can hold those lines too.
        let shared = if a.team > 1 {
            a.model.shared_fraction
        } else {
            0.0
        };
        let (team, passive) = (a.team, a.passive);
        let barriers = a.model.barriers_per_ginstr;
        for t in a.threads.iter_mut().take(team) {
            let s = &mut t.stats;
            let run = sol.share[j] * dt;
            s.run_s += run;
            s.wait_s += (sol.demand[j] - sol.share[j]).max(0.0) * dt;
            if sol.share[j] < sol.demand[j] {
                s.involuntary += run / slice;
            }
            let instr = sol.useful[j] * dt;
            // A member waits at each barrier; it sleeps there (a voluntary
            // switch) when its runtime waits passively, or when it shares its
            // CPU: the teammate it waits for is then descheduled for longer
            // than a spin lasts. Alone on its CPU it spins through.
            if team > 1 && (passive || sol.share[j] < sol.demand[j]) {
                s.voluntary += instr * barriers * 1e-9;
            }
            s.instructions += instr;
            s.cycles += run * f_hz;
            s.llc_refs += instr * sol.refs_pi[j];
            s.llc_misses += instr * sol.miss_pi[j];
            s.llc_shared_refs += instr * sol.refs_pi[j] * shared;
            j += 1;
        }
    }
}
