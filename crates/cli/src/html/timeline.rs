//! What the pictures show, computed from a trace's events alone: the run's time
//! cut into at most [`MAX_BINS`] equal bins, and per bin who ran on each CPU and
//! what each app did.
//!
//! Observations hold cumulative per-thread counters and the CPU each thread last
//! ran on (see `docs/trace-format.md`). The run time a thread gained between two
//! observations is credited to that CPU and spread over the bins the interval
//! overlaps, in proportion to the overlap, so a bin is never empty because two
//! samples happened to fall into its neighbour. A run with more observation
//! intervals than bins is downsampled this way, and the page says so.

use std::collections::{BTreeMap, HashMap};

use coloc_model::{AppId, Cpu, Placement, Tid, Trace, TraceEvent, Trigger};

/// Most time bins a picture has: enough for a 1200-pixel-wide map, few enough
/// that a 10-minute, 64-CPU run stays a page that opens quickly.
pub const MAX_BINS: usize = 300;

/// Time a thread ran on a CPU within one bin.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CpuUse {
    /// Seconds of CPU time per instance.
    pub by_app: BTreeMap<AppId, f64>,
    /// The thread that ran longest in the bin, with its instance.
    pub top: Option<(AppId, Tid, f64)>,
}

impl CpuUse {
    fn add(&mut self, app: AppId, tid: Tid, secs: f64) {
        *self.by_app.entry(app).or_default() += secs;
        if self.top.is_none_or(|(_, _, s)| secs > s) {
            self.top = Some((app, tid, secs));
        }
    }

    /// The instance that ran longest, with its seconds.
    pub fn dominant(&self) -> Option<(AppId, f64)> {
        self.by_app
            .iter()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .map(|(a, s)| (*a, *s))
    }

    pub fn total(&self) -> f64 {
        self.by_app.values().sum()
    }
}

/// One app (all its instances) within one bin. Rates are per second of the bin.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AppBin {
    /// Some sample of the app falls in the bin (it was there).
    pub seen: bool,
    /// CPU seconds over bin seconds: cores in use.
    pub cores: f64,
    pub switches: f64,
    /// None when no sample of the app reported migrations.
    pub migrations: Option<f64>,
    /// OpenMP worksharing iterations; None without an OpenMP channel.
    pub iterations: Option<f64>,
    /// Share of the bin's sampled time spent inside a parallel region.
    pub parallel: Option<f64>,
    /// The DoP the app acknowledged last in the bin (summed over instances).
    pub dop: Option<u32>,
    /// CPUs its plan in force at the bin's end lets it use (summed over
    /// instances; an unmanaged app may use every CPU).
    pub granted: Option<usize>,
}

/// A marker on the time axis.
#[derive(Clone, Debug, PartialEq)]
pub struct Marker {
    pub t: f64,
    pub kind: MarkerKind,
    /// What hovering shows.
    pub text: String,
    /// The app it concerns (for its colour), if one.
    pub app: Option<u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum MarkerKind {
    Arrive,
    Exit,
    Plan,
}

/// The plan in force for one instance, as a short text.
#[derive(Clone, Debug, PartialEq)]
struct InForce {
    from: f64,
    text: String,
    granted: usize,
}

/// Everything the run page draws.
#[derive(Clone, Debug, PartialEq)]
pub struct Timeline {
    /// Start of the first bin and the bins' width, seconds since the run began.
    pub t0: f64,
    pub width: f64,
    pub bins: usize,
    /// Observation intervals in the trace; more than `bins` means downsampled.
    pub intervals: usize,
    pub cpus: Vec<Cpu>,
    /// `cells[cpu index][bin]`.
    pub cells: Vec<Vec<CpuUse>>,
    /// Per workload app index, per bin.
    pub apps: Vec<Vec<AppBin>>,
    pub app_names: Vec<String>,
    pub markers: Vec<Marker>,
    /// Plans that changed nothing (epoch decisions keeping every setting), left
    /// off the markers.
    pub quiet_plans: usize,
    /// Plans in force per instance, in time order.
    plans: BTreeMap<AppId, Vec<InForce>>,
    /// First and last observation of each instance, seconds.
    sampled: BTreeMap<AppId, (f64, f64)>,
}

/// Cumulative counters of one thread at the previous observation.
#[derive(Clone, Copy, Debug, Default)]
struct Last {
    run_ns: u64,
    switches: u64,
    migrations: Option<u64>,
}

impl Timeline {
    pub fn of(trace: &Trace) -> Timeline {
        let topo_cpus: Vec<Cpu> = trace.header.topology.cpus().iter().collect();
        let app_names: Vec<String> = trace
            .header
            .workload
            .apps
            .iter()
            .map(|a| a.name.clone())
            .collect();
        let obs: Vec<_> = trace.observations().collect();
        let end = trace
            .events
            .iter()
            .filter_map(TraceEvent::time)
            .chain(obs.last().map(|o| o.at))
            .max()
            .unwrap_or_default()
            .as_secs_f64();
        let intervals = obs.len().saturating_sub(1);
        let bins = intervals.clamp(1, MAX_BINS);
        let width = (end / bins as f64).max(1e-9);
        let mut cpus = topo_cpus.clone();
        // A CPU seen in a sample but missing from the header's topology still gets a row.
        for o in &obs {
            for t in o.apps.iter().flat_map(|a| &a.threads) {
                if let Some(c) = t.cpu.filter(|c| !cpus.contains(c)) {
                    cpus.push(c);
                }
            }
        }
        cpus.sort_unstable();
        let napps = app_names.len().max(
            obs.iter()
                .flat_map(|o| &o.apps)
                .map(|a| a.app.app as usize + 1)
                .max()
                .unwrap_or(0),
        );
        let mut tl = Timeline {
            t0: 0.0,
            width,
            bins,
            intervals,
            cells: vec![vec![CpuUse::default(); bins]; cpus.len()],
            cpus,
            apps: vec![vec![AppBin::default(); bins]; napps],
            app_names,
            markers: Vec::new(),
            quiet_plans: 0,
            plans: BTreeMap::new(),
            sampled: BTreeMap::new(),
        };
        tl.fold_events(trace, topo_cpus.len());
        tl.fold_observations(&obs);
        tl.fill_granted();
        tl
    }

    /// Whether more observation intervals than bins were folded together.
    pub fn downsampled(&self) -> bool {
        self.intervals > self.bins
    }

    pub fn end(&self) -> f64 {
        self.t0 + self.width * self.bins as f64
    }

    pub fn bin_start(&self, bin: usize) -> f64 {
        self.t0 + self.width * bin as f64
    }

    /// The name of app index `app` (by index when the workload does not list it).
    pub fn app_name(&self, app: u32) -> String {
        self.app_names
            .get(app as usize)
            .cloned()
            .unwrap_or_else(|| format!("app{app}"))
    }

    /// The plan in force for `app` at `t`, as text.
    pub fn plan_at(&self, app: AppId, t: f64) -> Option<&str> {
        let list = self.plans.get(&app)?;
        let i = list.partition_point(|p| p.from <= t);
        Some(list[i.checked_sub(1)?].text.as_str())
    }

    fn fold_events(&mut self, trace: &Trace, all_cpus: usize) {
        let mut last_plan: HashMap<AppId, String> = HashMap::new();
        for e in &trace.events {
            match e {
                TraceEvent::Arrive { t, app, .. } => self.markers.push(Marker {
                    t: t.as_secs_f64(),
                    kind: MarkerKind::Arrive,
                    text: format!(
                        "{:.2} s: {} ({app}) arrives",
                        t.as_secs_f64(),
                        self.app_name(app.app)
                    ),
                    app: Some(app.app),
                }),
                TraceEvent::Exit { t, app, status, .. } => self.markers.push(Marker {
                    t: t.as_secs_f64(),
                    kind: MarkerKind::Exit,
                    text: format!(
                        "{:.2} s: {} ({app}) exits: {}",
                        t.as_secs_f64(),
                        self.app_name(app.app),
                        status
                    ),
                    app: Some(app.app),
                }),
                TraceEvent::Plan {
                    t, trigger, plan, ..
                } => {
                    let secs = t.as_secs_f64();
                    let mut changes = Vec::new();
                    for p in &plan.apps {
                        let text = describe_app_plan(p);
                        if last_plan.get(&p.app) != Some(&text) {
                            changes.push(format!(
                                "{} ({}): {text}",
                                self.app_name(p.app.app),
                                p.app
                            ));
                            let granted = match &p.placement {
                                Placement::Unmanaged => all_cpus,
                                other => other.cpus().len(),
                            };
                            self.plans.entry(p.app).or_default().push(InForce {
                                from: secs,
                                text: text.clone(),
                                granted,
                            });
                            last_plan.insert(p.app, text);
                        }
                    }
                    if changes.is_empty() {
                        self.quiet_plans += 1;
                        continue;
                    }
                    let line = coloc_model::explain::plan_line(plan);
                    let note = if line.is_empty() {
                        String::new()
                    } else {
                        format!(" — {line}")
                    };
                    self.markers.push(Marker {
                        t: secs,
                        kind: MarkerKind::Plan,
                        text: format!(
                            "{secs:.2} s: plan on {}{note}\n{}",
                            describe_trigger(trigger),
                            changes.join("\n")
                        ),
                        app: None,
                    });
                }
                _ => {}
            }
        }
    }

    fn fold_observations(&mut self, obs: &[&coloc_model::Observation]) {
        let mut last: HashMap<(AppId, Tid), Last> = HashMap::new();
        let mut last_iters: HashMap<AppId, u64> = HashMap::new();
        let cpu_index: HashMap<Cpu, usize> =
            self.cpus.iter().enumerate().map(|(i, c)| (*c, i)).collect();
        for pair in obs.windows(2) {
            let (a, b) = (pair[0].at.as_secs_f64(), pair[1].at.as_secs_f64());
            if b <= a {
                continue;
            }
            let spans = self.spans(a, b);
            for s in &pair[1].apps {
                let app = s.app.app as usize;
                for &(bin, _) in &spans {
                    self.apps[app][bin].seen = true;
                }
                for t in &s.threads {
                    let prev = last.insert(
                        (s.app, t.tid),
                        Last {
                            run_ns: t.run_ns,
                            switches: t.voluntary_switches + t.involuntary_switches,
                            migrations: t.migrations,
                        },
                    );
                    // A thread first seen now ran since its start, inside this interval.
                    let prev = prev.unwrap_or_default();
                    let ran = t.run_ns.saturating_sub(prev.run_ns) as f64 * 1e-9;
                    let switches = (t.voluntary_switches + t.involuntary_switches)
                        .saturating_sub(prev.switches) as f64;
                    let migrations = t
                        .migrations
                        .map(|m| m.saturating_sub(prev.migrations.unwrap_or(0)) as f64);
                    let cpu = t.cpu.and_then(|c| cpu_index.get(&c).copied());
                    for &(bin, share) in &spans {
                        if let Some(c) = cpu {
                            self.cells[c][bin].add(s.app, t.tid, ran * share);
                        }
                        let ab = &mut self.apps[app][bin];
                        ab.cores += ran * share / self.width;
                        ab.switches += switches * share / self.width;
                        if let Some(m) = migrations {
                            *ab.migrations.get_or_insert(0.0) += m * share / self.width;
                        }
                    }
                }
                if let Some(omp) = &s.omp {
                    let prev = last_iters
                        .insert(s.app, omp.iterations_completed)
                        .unwrap_or(0);
                    let iters = omp.iterations_completed.saturating_sub(prev) as f64;
                    for &(bin, share) in &spans {
                        let ab = &mut self.apps[app][bin];
                        *ab.iterations.get_or_insert(0.0) += iters * share / self.width;
                        // Seconds of the bin covered by this interval, inside a region or not.
                        let covered = (b - a) * share / self.width;
                        let inside = if omp.in_parallel { covered } else { 0.0 };
                        *ab.parallel.get_or_insert(0.0) += inside;
                    }
                }
            }
        }
        self.fill_dops(obs);
    }

    /// The DoP of each app per bin: at the bin's last observation of the app,
    /// summed over its instances sampled then (instances of one app rarely
    /// overlap; repetitions that follow each other in one bin do not add up).
    /// Also records when each instance was sampled first and last.
    fn fill_dops(&mut self, obs: &[&coloc_model::Observation]) {
        for o in obs {
            let at = o.at.as_secs_f64();
            let bin = self.bin_of(at);
            let mut dops: BTreeMap<usize, u32> = BTreeMap::new();
            for s in &o.apps {
                let span = self.sampled.entry(s.app).or_insert((at, at));
                span.1 = at;
                if let Some(omp) = &s.omp {
                    *dops.entry(s.app.app as usize).or_default() +=
                        omp.dop_seen.unwrap_or(omp.team_size);
                }
            }
            for (app, dop) in dops {
                self.apps[app][bin].dop = Some(dop);
            }
        }
    }

    /// CPUs granted per app per bin: the plans in force at each bin's end for the
    /// app's instances sampled in the bin (between their first and last
    /// observation), summed.
    fn fill_granted(&mut self) {
        for (id, list) in &self.plans {
            let (Some(app), Some(&(first, last))) =
                (self.apps.get_mut(id.app as usize), self.sampled.get(id))
            else {
                continue;
            };
            for (bin, ab) in app.iter_mut().enumerate() {
                let start = self.t0 + self.width * bin as f64;
                let end = start + self.width;
                if last < start || first >= end {
                    continue;
                }
                let i = list.partition_point(|p| p.from < end);
                if let Some(p) = i.checked_sub(1).map(|i| &list[i]) {
                    *ab.granted.get_or_insert(0) += p.granted;
                }
            }
        }
    }

    fn bin_of(&self, t: f64) -> usize {
        (((t - self.t0) / self.width) as usize).min(self.bins - 1)
    }

    /// The bins that [a, b) overlaps, each with the share of the interval inside it.
    fn spans(&self, a: f64, b: f64) -> Vec<(usize, f64)> {
        let (first, last) = (self.bin_of(a), self.bin_of(b));
        (first..=last)
            .filter_map(|bin| {
                let lo = a.max(self.bin_start(bin));
                let hi = b.min(self.bin_start(bin + 1));
                (hi > lo).then(|| (bin, (hi - lo) / (b - a)))
            })
            .collect()
    }
}

fn describe_trigger(t: &Trigger) -> String {
    match t {
        Trigger::Arrival(a) => format!("arrival of {a}"),
        Trigger::Exit(a) => format!("exit of {a}"),
        Trigger::ThreadsChanged(a) => format!("thread change of {a}"),
        Trigger::Epoch => "epoch".into(),
    }
}

/// One app's plan in a line: admission, CPUs, DoP, memory and scheduling settings.
fn describe_app_plan(p: &coloc_model::AppPlan) -> String {
    if !p.admit {
        return "held back".into();
    }
    let mut parts = vec![match &p.placement {
        Placement::Unmanaged => "CPUs: Linux decides".to_string(),
        Placement::Shared(c) => format!("CPUs {c}"),
        Placement::PerThread { threads, rest } => {
            format!(
                "CPUs {} ({} threads pinned one by one)",
                p.placement.cpus(),
                threads.len()
            ) + &if rest.is_empty() {
                String::new()
            } else {
                format!(", others on {rest}")
            }
        }
    }];
    if let Some(d) = p.dop {
        parts.push(format!("DoP {d}"));
    }
    if p.memory != Default::default() {
        parts.push(format!("memory {:?}", p.memory).to_lowercase());
    }
    if let Some(n) = p.sched.nice {
        parts.push(format!("nice {n}"));
    }
    if let Some(s) = p.sched.slice_us {
        parts.push(format!("slice {s} us"));
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use coloc_model::trace::{Header, TRACE_VERSION};
    use coloc_model::{
        AppPlan, AppSample, AppSpec, CpuSet, Observation, Plan, ThreadSample, Topology, Workload,
    };

    use super::*;

    fn id(app: u32) -> AppId {
        AppId { app, rep: 0 }
    }

    /// One thread per app: (app, tid, cpu, cumulative run seconds).
    fn obs(at: f64, threads: &[(u32, Tid, Cpu, f64)]) -> TraceEvent {
        TraceEvent::Obs(Box::new(Observation {
            at: Duration::from_secs_f64(at),
            apps: threads
                .iter()
                .map(|&(app, tid, cpu, run)| AppSample {
                    app: id(app),
                    pid: tid,
                    threads: vec![ThreadSample {
                        tid,
                        cpu: Some(cpu),
                        run_ns: (run * 1e9) as u64,
                        voluntary_switches: (run * 10.0) as u64,
                        ..Default::default()
                    }],
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }))
    }

    fn plan(at: f64, cpus: &[&str]) -> TraceEvent {
        TraceEvent::Plan {
            t: Duration::from_secs_f64(at),
            trigger: Trigger::Epoch,
            plan: Plan {
                apps: cpus
                    .iter()
                    .enumerate()
                    .map(|(i, c)| AppPlan {
                        placement: Placement::Shared(CpuSet::parse_list(c).unwrap()),
                        ..AppPlan::native(id(i as u32))
                    })
                    .collect(),
                ..Plan::default()
            },
            decide: Duration::ZERO,
        }
    }

    fn trace(events: Vec<TraceEvent>) -> Trace {
        let header = TraceEvent::Header(Box::new(Header {
            version: TRACE_VERSION,
            coloc_version: "test".into(),
            policy: "equal".into(),
            machine: "sim:test".into(),
            workload: Workload {
                name: "w".into(),
                epoch: None,
                apps: vec![AppSpec::model("a", "ep", 1), AppSpec::model("b", "ep", 1)],
            },
            topology: Topology::synthetic("t", "package:1 core:2").unwrap(),
            epoch: Duration::from_millis(100),
            seed: None,
            started_unix: 0.0,
        }));
        Trace::from_events(std::iter::once(header).chain(events).collect()).unwrap()
    }

    #[test]
    fn run_time_goes_to_the_cpu_and_is_split_over_bins() {
        // Samples at 0, 1 and 3 s: two intervals, so two bins of 1.5 s. Thread 10
        // of a runs on cpu 0: 0.5 s in [0, 1), 1 s in [1, 3). [1, 3) lies a
        // quarter in bin 0 (1 to 1.5) and three quarters in bin 1.
        let tl = Timeline::of(&trace(vec![
            plan(0.0, &["0", "1"]),
            obs(0.0, &[(0, 10, 0, 0.0), (1, 20, 1, 0.0)]),
            obs(1.0, &[(0, 10, 0, 0.5), (1, 20, 1, 1.0)]),
            // The same plan again changes nothing: not a marker.
            plan(2.0, &["0", "1"]),
            obs(3.0, &[(0, 10, 0, 1.5), (1, 20, 1, 3.0)]),
        ]));
        assert_eq!((tl.bins, tl.intervals, tl.width), (2, 2, 1.5));
        assert!(!tl.downsampled());
        let a0 = tl.cells[0][0].by_app[&id(0)];
        let a1 = tl.cells[0][1].by_app[&id(0)];
        assert!((a0 - (0.5 + 0.25)).abs() < 1e-9, "{a0}");
        assert!((a1 - 0.75).abs() < 1e-9, "{a1}");
        assert_eq!(tl.cells[1][0].dominant().map(|d| d.0), Some(id(1)));
        assert_eq!(tl.cells[0][0].top.map(|t| t.1), Some(10));
        // b ran all the time on one CPU: one core busy in both bins; 10 voluntary
        // switches a second.
        for bin in 0..2 {
            let b = &tl.apps[1][bin];
            assert!((b.cores - 1.0).abs() < 1e-9 && (b.switches - 10.0).abs() < 1e-9);
            assert_eq!(b.granted, Some(1));
            assert!(b.seen && b.dop.is_none() && b.migrations.is_none());
        }
        assert_eq!(tl.quiet_plans, 1);
        let plans: Vec<&Marker> = tl
            .markers
            .iter()
            .filter(|m| m.kind == MarkerKind::Plan)
            .collect();
        assert_eq!(plans.len(), 1);
        assert!(
            plans[0].text.contains("a (0.0): CPUs 0"),
            "{}",
            plans[0].text
        );
        assert_eq!(tl.plan_at(id(1), 2.5), Some("CPUs 1"));
        assert_eq!(tl.plan_at(id(1), -1.0), None);
    }

    #[test]
    fn long_runs_are_folded_into_at_most_max_bins() {
        // 1000 samples 10 ms apart: 999 intervals over 9.99 s in 300 bins. One
        // thread busy all the time: every bin shows one busy core, whatever the
        // folding.
        let events = (0..1000)
            .map(|i| {
                let t = f64::from(i) * 0.01;
                obs(t, &[(0, 10, 1, t)])
            })
            .collect();
        let tl = Timeline::of(&trace(events));
        assert_eq!((tl.bins, tl.intervals), (MAX_BINS, 999));
        assert!(tl.downsampled());
        for (bin, b) in tl.apps[0].iter().enumerate() {
            assert!((b.cores - 1.0).abs() < 1e-6, "bin {bin}: {}", b.cores);
        }
        let total: f64 = tl.cells[1].iter().map(CpuUse::total).sum();
        assert!((total - 9.99).abs() < 1e-6, "{total}");
    }

    #[test]
    fn a_finished_instance_no_longer_counts_in_cpus_granted() {
        // a's first run is sampled in [0, 1] with CPUs 0-1, its second in [2, 3]
        // with CPU 0: bins of 1 s grant 2, nothing of a's (no sample), then 1.
        let rep = |r: u32, at: f64, run: f64| {
            let mut e = obs(at, &[(0, 10 + r, 0, run)]);
            if let TraceEvent::Obs(o) = &mut e {
                o.apps[0].app.rep = r;
            }
            e
        };
        let mut second = plan(2.0, &["0"]);
        if let TraceEvent::Plan { plan, .. } = &mut second {
            plan.apps[0].app.rep = 1;
        }
        let tl = Timeline::of(&trace(vec![
            plan(0.0, &["0-1"]),
            rep(0, 0.0, 0.0),
            rep(0, 1.0, 1.0),
            second,
            rep(1, 2.0, 0.0),
            rep(1, 3.0, 1.0),
        ]));
        assert_eq!((tl.bins, tl.width), (3, 1.0));
        let granted: Vec<Option<usize>> = tl.apps[0].iter().map(|b| b.granted).collect();
        // Bin 1 ([1, 2)) holds the first run's last sample (at 1 s) only.
        assert_eq!(granted, [Some(2), Some(2), Some(1)]);
    }

    #[test]
    fn an_empty_trace_has_one_empty_bin() {
        let tl = Timeline::of(&trace(Vec::new()));
        assert_eq!((tl.bins, tl.intervals), (1, 0));
        assert!(tl.cells.iter().flatten().all(|c| c.by_app.is_empty()));
    }
}
