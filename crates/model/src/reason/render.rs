//! Reasons and verdicts in words, for the edges (the CLI, the HTML report,
//! `coloc why`, the daemon's status): the one place they become English.

use std::fmt::{self, Display, Formatter};

use super::{
    AdmissionRule, Arrangement, AtomSignal, ClassBy, Climb, CoRunFrom, Competition,
    CompetitionCause, CompetitionPhase, CutCosts, Dop, DopWhy, Judge, Lever, LeverState, Memory,
    MemoryClass, NoGang, Objective, OverheadFrom, PlanReason, RatesFrom, Reason, Reversibility,
    Sched, Section, SectionPhase, ToLinux, TranquilizerStep, TrialState, Verdict,
};
use crate::topology::human_bytes;

impl Objective {
    pub const ALL: [Objective; 3] = [Objective::Makespan, Objective::Art, Objective::Latency];

    pub fn name(self) -> &'static str {
        match self {
            Objective::Makespan => "makespan",
            Objective::Art => "art",
            Objective::Latency => "latency",
        }
    }
}

impl Display for Objective {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

fn cmp(above: bool) -> &'static str {
    if above {
        ">"
    } else {
        "≤"
    }
}

fn ids(apps: &[crate::AppId]) -> String {
    let v: Vec<String> = apps.iter().map(ToString::to_string).collect();
    v.join(" ")
}

impl Display for Reversibility {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let ms = |s: &f64| s * 1e3;
        match self {
            Reversibility::Short {
                bound_secs,
                limit_secs,
                costs,
            } => {
                write!(f, "regions known under {:.0} ms", ms(bound_secs))?;
                if let Some(l) = limit_secs {
                    write!(f, ", within {:.0} ms", ms(l))?;
                }
                costs.map_or(Ok(()), |c| write!(f, "; {c}"))
            }
            Reversibility::Unknown => write!(
                f,
                "regions not known (no earlier whole run, none long in this one)"
            ),
            Reversibility::Long {
                bound_secs,
                limit_secs,
                recorded,
                costs,
            } => {
                write!(
                    f,
                    "a region of up to {:.0} ms {}",
                    ms(bound_secs),
                    if *recorded {
                        "in an earlier run"
                    } else {
                        "in this run"
                    },
                )?;
                if let Some(l) = limit_secs {
                    write!(f, ", beyond {:.0} ms", ms(l))?;
                }
                costs.map_or(Ok(()), |c| write!(f, "; {c}"))
            }
        }
    }
}

impl Display for OverheadFrom {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            OverheadFrom::Model {
                barriers_per_sec: None,
            } => write!(f, "pace model"),
            OverheadFrom::Model {
                barriers_per_sec: Some(b),
            } => write!(f, "barrier model at {b:.0} barriers/s"),
        }
    }
}

impl Display for CutCosts {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a cut risks {:.2} CPU-s ({:.0}% chance its reason goes within a region, {:.1} s ahead, {} CPUs idle), keeping it whole costs {:.2} CPU-s ({:.0}% of {} CPUs, {})",
            self.cut_cpu_secs,
            self.chance * 100.0,
            self.ahead_secs,
            self.idle_cpus,
            self.keep_cpu_secs,
            self.overhead * 100.0,
            self.share_cpus,
            self.overhead_from
        )
    }
}

impl Display for Reason {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Admission(a) => {
                let verb = if a.admitted { "admitted" } else { "held" };
                write!(f, "{verb}")?;
                match &a.rule {
                    AdmissionRule::Objective => Ok(()),
                    rule => write!(f, ": {rule}"),
                }
            }
            Reason::Partition(p) => write!(
                f,
                "partition CPUs {} for {} thread(s) ({} threads wanted on {} CPUs)",
                p.cpus.to_list(),
                p.threads,
                p.demand,
                p.on
            ),
            Reason::Dop(d) => d.fmt(f),
            Reason::Lever(l) => l.fmt(f),
            Reason::Whole(r) => write!(f, "DoP left whole: {r}"),
            Reason::Linux(l) => match l {
                ToLinux::NothingToActOn { apps, demand, cpus } => write!(
                    f,
                    "left to Linux: nothing to act on ({apps} app(s), {demand} threads on {cpus} CPUs)"
                ),
                ToLinux::Trial => write!(f, "left to Linux by the trial"),
                ToLinux::ShortestFirst => write!(f, "left to Linux (shortest first: nice only)"),
            },
            Reason::Gang(g) => {
                write!(
                    f,
                    "gang {}ground (nice {}): {} thread(s) spread over CPUs {} ({} threads \
                     wanted on {} CPUs",
                    if g.foreground { "fore" } else { "back" },
                    g.nice,
                    g.threads,
                    g.cpus.to_list(),
                    g.demand,
                    g.on,
                )?;
                if let Some(s) = g.sleeps {
                    write!(f, "; {s:.0} sleeps per CPU-second")?;
                }
                write!(f, ")")
            }
            Reason::NoGang(n) => {
                write!(f, "no gang: ")?;
                match n {
                    NoGang::LeverActs => write!(f, "its DoP lever acts"),
                    NoGang::Team { team, cpus } => write!(f, "a team of {team} on {cpus} CPUs"),
                    NoGang::Sleeps { sleeps, needed } => {
                        write!(f, "{sleeps:.0} sleeps per CPU-second, below {needed:.0}")
                    }
                    NoGang::CpuOfItsOwn => write!(f, "a CPU of its own is faster"),
                    NoGang::CoRunner => write!(f, "not every co-runner can"),
                }
            }
            Reason::Borrowed { cpus } => write!(f, "borrowing idle CPUs {}", cpus.to_list()),
            Reason::NotLent {
                cpus,
                team,
                own,
                with,
            } => write!(
                f,
                "not lent idle CPUs {}: its team of {team} keeps its slowest member's pace on \
                 {with} CPUs as on its {own}",
                cpus.to_list()
            ),
            Reason::Memory(m) => m.fmt(f),
            Reason::Sched(s) => s.fmt(f),
            Reason::Tang(t) => write!(
                f,
                "Tang line {} ({}) on CPUs {}",
                t.line,
                t.choice,
                t.cpus.to_list()
            ),
            Reason::Section(s) => s.fmt(f),
            Reason::Climb(c) => c.fmt(f),
            Reason::Tranquilizer(t) => t.fmt(f),
            Reason::Competition(c) => c.fmt(f),
            Reason::Records(r) => r.fmt(f),
        }
    }
}

impl Display for super::records::RecordGroup {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        use super::records::RecordKind;
        let kind = match self.kind {
            RecordKind::SoloTime => "solo times",
            RecordKind::Rate => "rates",
            RecordKind::Regions => "region spans",
        };
        write!(f, "{kind} ({}", self.arrangement)?;
        if let Some(k) = self.threads {
            write!(f, ", {k} thread(s)")?;
        }
        match (&self.partner, self.kind) {
            (Some(p), _) => write!(f, ", beside {p})"),
            (None, RecordKind::Rate) => write!(f, ", beside others)"),
            (None, _) => write!(f, ")"),
        }
    }
}

impl Display for super::records::Records {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let date = |unix: i64| {
            let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(unix.max(0) as u64);
            humantime::format_rfc3339_seconds(t).to_string()
        };
        write!(f, "records:")?;
        for (i, u) in self.used.iter().enumerate() {
            let sep = if i == 0 { " used" } else { "," };
            write!(
                f,
                "{sep} {} x{} (newest {})",
                u.group,
                u.records,
                date(u.newest_unix)
            )?;
        }
        for (i, d) in self.dropped.iter().enumerate() {
            let sep = if i == 0 && self.used.is_empty() {
                " "
            } else if i == 0 {
                "; "
            } else {
                ", "
            };
            write!(
                f,
                "{sep}{} dropped: {} of {} predictions missed, the latest {:.3} for {:.3} \
                 (noise bounds {:.3}..{:.3}, {})",
                d.group,
                d.missed,
                d.checks,
                d.last.measured,
                d.last.predicted,
                d.last.low,
                d.last.high,
                date(d.last.at_unix)
            )?;
        }
        Ok(())
    }
}

impl Display for AdmissionRule {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            AdmissionRule::Objective => write!(f, "the objective holds no app"),
            AdmissionRule::TrialOnLinux => write!(f, "the running apps' trial settled on Linux"),
            AdmissionRule::IdleCpus { idle } => write!(f, "{idle} CPU(s) idle"),
            AdmissionRule::FreeCpu { apps, cpus } => {
                write!(
                    f,
                    "a CPU without an app of its own ({apps} app(s), {cpus} CPUs)"
                )
            }
            AdmissionRule::ThreadsFit {
                demand,
                threads,
                cpus,
            } => write!(
                f,
                "its {threads} thread(s) fit beside {demand} on {cpus} CPUs"
            ),
            AdmissionRule::EveryCpuTaken { apps, cpus } => {
                write!(
                    f,
                    "every CPU has an app of its own ({apps} app(s), {cpus} CPUs)"
                )
            }
            AdmissionRule::SoloTimes {
                now_secs,
                held_secs,
                needs_secs,
                needs_cpu_secs,
                frees_in_secs,
            } => write!(
                f,
                "mix done in ~{now_secs:.2} s started now, ~{held_secs:.2} s held (solo times: \
                 it needs {needs_secs:.2} s, {needs_cpu_secs:.2} CPU-s; a CPU frees in \
                 ~{frees_in_secs:.2} s)"
            ),
            AdmissionRule::CoRun {
                with,
                rate,
                with_rate,
                from,
                now_secs,
                held_secs,
            } => {
                match from {
                    CoRunFrom::Pairs { runs } => write!(
                        f,
                        "beside {with} it ran at {rate:.2} of its speed alone and {with} at \
                         {with_rate:.2} ({runs} earlier run(s))"
                    )?,
                    CoRunFrom::Shared { with_runs, runs } => write!(
                        f,
                        "never measured beside {with}; beside other apps it ran at {rate:.2} of \
                         its speed alone ({runs} earlier run(s)) and {with} at {with_rate:.2} \
                         ({with_runs})"
                    )?,
                }
                write!(
                    f,
                    ": mix done in ~{now_secs:.2} s started now, ~{held_secs:.2} s held"
                )
            }
            AdmissionRule::ShortestFirst {
                needs_secs,
                least,
                left_secs,
            } => write!(
                f,
                "shortest first (it needs ~{needs_secs:.2} s alone, {least} has ~{left_secs:.2} \
                 s left)"
            ),
            AdmissionRule::OneAtATime => write!(f, "one app at a time"),
            AdmissionRule::NoFreeCore => write!(f, "no free core"),
        }
    }
}

impl Display for Dop {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "dop {}", self.dop)?;
        match &self.why {
            DopWhy::Partition => write!(f, " (its partition)"),
            DopWhy::FastestAlone {
                threads,
                secs,
                team,
                team_secs,
            } => write!(
                f,
                " (fastest alone with {threads} thread(s): {secs:.2} s against {team_secs:.2} s \
                 with {team})"
            ),
            DopWhy::WholeTeam => write!(f, " (its whole team)"),
        }
    }
}

impl Display for Lever {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self.state {
            LeverState::NotMalleable => write!(f, "not malleable"),
            LeverState::NoChannel => write!(f, "DoP lever: no DoP channel"),
            LeverState::Acts => write!(f, "DoP lever: {} regions ended", self.regions),
            LeverState::Unknown => write!(
                f,
                "DoP lever: {} region(s) ended, {} needed",
                self.regions, self.needed
            ),
            LeverState::Stuck if self.regions == 0 => write!(
                f,
                "DoP lever: no region ended yet, in one for {:.2} s",
                self.quiet_secs
            ),
            LeverState::Stuck => {
                write!(f, "DoP lever: in one region for {:.2} s", self.quiet_secs)
            }
        }
    }
}

impl Display for Memory {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Memory::Local => write!(f, "memory local (its CPUs on one node)"),
            Memory::Unclassified { nodes } => {
                write!(f, "memory as it is ({nodes} nodes; not yet classified)")
            }
            Memory::Interleave { nodes, class } => {
                write!(f, "memory interleaved over {nodes} nodes: {class}")
            }
            Memory::AsIs { nodes, class } => write!(f, "memory as it is ({nodes} nodes; {class})"),
        }
    }
}

impl Display for MemoryClass {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let label = if self.memory {
            "memory-intensive"
        } else {
            "CPU-intensive"
        };
        match &self.by {
            ClassBy::LlcMisses { mpki, delta } => write!(
                f,
                "{label} (LLC misses {mpki:.2}/kinstr {} Δ {delta:.2})",
                cmp(self.memory)
            ),
            ClassBy::Substitutes {
                rss_bytes,
                llc_bytes,
                llc_measured,
                stored_gbs,
                stored_signal,
                threshold_gbs,
            } => {
                let big = *llc_bytes > 0 && rss_bytes > llc_bytes;
                write!(
                    f,
                    "{label} (no LLC counters: substitutes resident set {} {} LLC {} ({}), ",
                    human_bytes(*rss_bytes),
                    cmp(big),
                    human_bytes(*llc_bytes),
                    if *llc_measured {
                        "measured by coloc calibrate"
                    } else {
                        "as sysfs reports it"
                    }
                )?;
                match stored_gbs {
                    Some(gbs) => write!(
                        f,
                        "stored memory bandwidth {gbs:.2} GB/s per thread {} {threshold_gbs:.2} \
                         [{}])",
                        cmp(gbs > threshold_gbs),
                        stored_signal.as_deref().unwrap_or("?")
                    ),
                    None => write!(f, "no stored bandwidth)"),
                }
            }
        }
    }
}

impl Display for Sched {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Sched::LeastAttained {
                rank,
                cpu_secs,
                nice,
            } => write!(
                f,
                "nice {nice}: least attained service, rank {rank} ({cpu_secs:.2} CPU-s had)"
            ),
            Sched::ShortestLeft { first, nice } => write!(
                f,
                "nice {nice}: {}",
                if *first {
                    "least time left"
                } else {
                    "not the least time left"
                }
            ),
            Sched::Latency {
                latency_running,
                nice,
            } => write!(
                f,
                "nice {nice}{}",
                if *latency_running && *nice != 0 {
                    ": a latency app runs"
                } else {
                    ""
                }
            ),
        }
    }
}

impl Display for Section {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match &self.phase {
            SectionPhase::Start => write!(f, "start on 1 core")?,
            SectionPhase::Fixed => write!(f, "fixed on {} core(s)", self.cores + self.lent)?,
            SectionPhase::Profiling { step } => write!(
                f,
                "profiling ({step}) on {} core(s)",
                self.cores + self.lent
            )?,
            SectionPhase::Waiting => write!(f, "waiting to profile")?,
            SectionPhase::Serial => write!(f, "serial")?,
            SectionPhase::Sized => write!(f, "dop {}", self.cores)?,
        }
        if self.lent > 0 {
            write!(f, " (+{} lent)", self.lent)?;
        }
        if let (Some(mrr), Some(method)) = (self.mrr, &self.method) {
            write!(f, " mrr {mrr:.3e}/s via {method}")?;
        }
        Ok(())
    }
}

impl Display for Climb {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "dop {}", self.dop)?;
        if let Some((d, r)) = self.last {
            write!(f, " ({r:.3e}/s at {d})")?;
        }
        if self.keeps > 0 {
            write!(f, ", keeps {} until its team shrinks", self.keeps)?;
        }
        Ok(())
    }
}

impl Display for TranquilizerStep {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            TranquilizerStep::Profiling { pass, setting } => {
                write!(f, "pass {pass}: profiling under {setting}")
            }
            TranquilizerStep::Already { class, setting } => {
                write!(f, "{class}; already {setting}: hold")
            }
            TranquilizerStep::Trying {
                class,
                setting,
                judge,
                mean,
                sd,
            } => write!(
                f,
                "{class}; trying {setting} judged by {judge} (before: mean {mean:.3}, sd {sd:.3})"
            ),
            TranquilizerStep::NoJudge { class, fallback } => write!(
                f,
                "{class}; no LLC counters and no progress reports to judge interleaving by: \
                 {fallback}, hold"
            ),
            TranquilizerStep::Judged {
                memory,
                judge,
                after,
                tried,
                keep,
                now,
            } => {
                let class = if *memory {
                    "memory-intensive"
                } else {
                    "CPU-intensive"
                };
                write!(f, "{class} {judge}: ")?;
                match after {
                    Some((mean, sd)) => write!(f, "mean {mean:.3}, sd {sd:.3}")?,
                    None => write!(f, "unmeasured")?,
                }
                write!(f, " after {tried} → ")?;
                if *keep {
                    write!(f, "both improved: keep")
                } else {
                    write!(f, "not both improved: back to {now}")
                }
            }
        }
    }
}

impl Display for Competition {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match &self.phase {
            CompetitionPhase::Waiting => {
                write!(f, "waiting for the earlier latency apps' competitions")?
            }
            CompetitionPhase::WarmUp => write!(f, "warming up (unmeasured)")?,
            CompetitionPhase::Learning { cause, slot, of } => {
                let cause = match cause {
                    CompetitionCause::Start => "start",
                    CompetitionCause::Corunners => "co-runners changed",
                    CompetitionCause::Budget => "budget changed",
                    CompetitionCause::Drift => "drift",
                    CompetitionCause::Earlier => "after an earlier app's competition",
                };
                write!(f, "learning ({cause}), slot {slot}/{of}")?
            }
            CompetitionPhase::Executing { winner, of, score } => {
                write!(f, "executing the winner {winner}/{of} (score {score:.4})")?
            }
        }
        match &self.cpus {
            Some(c) => write!(f, ": CPUs {}", c.to_list())?,
            None => write!(f, ": Linux placing every app")?,
        }
        match self.signal {
            Some(AtomSignal::Metric { higher: true }) => {
                write!(f, "; signal metric (higher is better)")
            }
            Some(AtomSignal::Metric { higher: false }) => {
                write!(f, "; signal metric (lower is better)")
            }
            Some(AtomSignal::Progress) => write!(f, "; signal openmp progress"),
            Some(AtomSignal::Instructions) => write!(f, "; signal instructions retired"),
            Some(AtomSignal::CpuTime) => write!(f, "; signal cpu time"),
            None => Ok(()),
        }
    }
}

impl Display for PlanReason {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            PlanReason::Objective { objective } => write!(f, "objective {objective}"),
            PlanReason::ShortestFirst { left } => {
                let v: Vec<String> = left
                    .iter()
                    .map(|(id, t)| format!("{id} ~{t:.2} s"))
                    .collect();
                write!(
                    f,
                    "shortest time left first (solo times: {} left), not tried against Linux",
                    v.join(", ")
                )
            }
            PlanReason::PlacedByProfiles => write!(f, "placed by profiles"),
            PlanReason::SharingCases { levels } => {
                let v: Vec<String> = levels
                    .iter()
                    .map(|l| {
                        let c: Vec<String> = l.cases.iter().map(ToString::to_string).collect();
                        format!("{} case {}", l.level, c.join("+"))
                    })
                    .collect();
                write!(f, "{}", v.join("; "))
            }
            PlanReason::Unprofiled { apps } => {
                let v: Vec<String> = apps.iter().map(ToString::to_string).collect();
                write!(f, "no profile for {}: score 0", v.join(", "))
            }
            PlanReason::Equal { apps, cpus } => write!(f, "{apps} apps over {cpus} CPUs"),
            PlanReason::Rates(r) => match r {
                RatesFrom::Calibrated { measured_at } => {
                    write!(f, "rates calibrated {measured_at}")
                }
                RatesFrom::OtherMachine => {
                    write!(f, "calibration is for another machine, rates assumed")
                }
                RatesFrom::Assumed => write!(f, "no calibration, rates assumed"),
            },
            PlanReason::Unit { level } => write!(f, "unit {level}"),
            PlanReason::Swapped { pairs } => write!(f, "swapped {pairs} core pair(s)"),
            PlanReason::TangLevels { llc, bus } => write!(f, "LLC = {llc}, bus = {bus}"),
            PlanReason::NoLatencyApp => write!(f, "no latency app; Linux places every app"),
            PlanReason::ThreadsFit => write!(f, "threads fit the CPUs: left to Linux"),
            PlanReason::Oracle { sharing } => write!(f, "{sharing}"),
        }
    }
}

impl Display for Verdict {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if self.judge == Judge::Guard {
            write!(f, "guard: ")?;
        }
        write!(f, "[{}] ", ids(&self.apps))?;
        match self.state {
            TrialState::NothingToActOn => {
                return write!(
                    f,
                    "nothing for its own arrangement to act on: left to Linux"
                )
            }
            TrialState::NotTried => return write!(f, "not tried against Linux"),
            TrialState::Waiting => {
                write!(f, "not tried against Linux yet")?;
                return match self.cost {
                    Some(c) => write!(
                        f,
                        ": expected to run together ~{:.2} s, a trial pays after ~{:.2} s \
                         (Linux won {:.0}% of such trials, estimated); own arrangement meanwhile",
                        c.life_secs,
                        c.needs_secs,
                        100.0 * c.linux_chance
                    ),
                    None => write!(f, "; own arrangement meanwhile"),
                };
            }
            _ => {}
        }
        match self.estimate {
            Some(e) => match e.low.zip(e.high) {
                Some((low, high)) => write!(
                    f,
                    "own vs Linux: {:.2} ± {:.2} over {} pair(s)",
                    e.ratio,
                    (high - low) / 2.0,
                    e.pairs
                )?,
                None => write!(
                    f,
                    "own vs Linux: {:.2} over 1 pair (no spread yet)",
                    e.ratio
                )?,
            },
            None => write!(f, "own vs Linux: not measured yet")?,
        }
        let name = |a: Arrangement| match a {
            Arrangement::Own => "own arrangement",
            Arrangement::Linux => "Linux",
        };
        match self.state {
            TrialState::Open(a) => write!(f, ", open: measuring {}", name(a))?,
            TrialState::OwnKept => write!(f, ", own kept")?,
            TrialState::BackToLinux => write!(f, ", back to Linux")?,
            TrialState::Rechecking(a) => write!(f, ", re-checking {}", name(a))?,
            TrialState::NothingToActOn | TrialState::NotTried | TrialState::Waiting => {}
        }
        match self.stored {
            Some(s) => write!(f, "; {s}"),
            None => Ok(()),
        }
    }
}

impl Display for super::StoredTrial {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let side = |a: Arrangement| match a {
            Arrangement::Own => "own",
            Arrangement::Linux => "Linux",
        };
        let t =
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(self.newest_unix.max(0) as u64);
        let from = format!(
            "{} stored pair(s) of these programs ({} earlier trial(s), newest {})",
            self.pairs,
            self.trials,
            humantime::format_rfc3339_seconds(t)
        );
        match (self.verdict, self.dropped) {
            (Some(v), true) => write!(
                f,
                "the stored verdict ({}, from {from}) was dropped: the pairs measured since \
                 contradict it",
                side(v)
            ),
            (Some(v), false) => write!(f, "started settled on {} from {from}", side(v)),
            (None, _) => write!(f, "{from} counted among the pairs"),
        }
    }
}

impl Display for super::levers::Runtime {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        use super::levers::Runtime as R;
        f.write_str(match self {
            R::Libgomp => "GNU libgomp",
            R::LlvmOmp => "LLVM libomp",
            R::IntelOmp => "Intel libiomp5",
            R::OpenBlasPthreads => "OpenBLAS (pthreads)",
            R::OpenBlasOpenMp => "OpenBLAS (OpenMP)",
            R::OpenBlas => "OpenBLAS",
            R::Mkl => "Intel MKL",
            R::Tbb => "oneTBB",
            R::Go => "Go",
            R::Jvm => "the JVM",
        })
    }
}

impl Display for super::levers::NoChannel {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        use super::levers::NoChannel as N;
        match self {
            N::Static => write!(f, "a static executable, nothing can be preloaded into it"),
            N::ToolDisabled => write!(
                f,
                "OMP_TOOL=disabled in its environment turns off the OMPT tool that steers it"
            ),
            N::Failed { error } => write!(f, "{error}"),
        }
    }
}

impl Display for super::levers::Channel {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        use super::levers::Channel as C;
        match self {
            C::NotMalleable => write!(f, "no DoP channel (not malleable)"),
            C::Acts => write!(f, "DoP channel (each region's team)"),
            C::Launcher => write!(
                f,
                "DoP channel for the first OpenMP program it starts (it holds no OpenMP runtime itself)"
            ),
            C::None { why } => write!(f, "no DoP channel ({why})"),
        }
    }
}

/// `program: runtimes; levers: …`, then what no lever sizes.
impl Display for super::levers::Levers {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if let Some(p) = &self.program {
            write!(f, "{p}: ")?;
        }
        let list = |rs: &[super::levers::Runtime]| {
            rs.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        if self.runtimes.is_empty() {
            write!(f, "no threaded runtime coloc knows")?;
        } else {
            write!(f, "{}", list(&self.runtimes))?;
        }
        write!(f, "; levers: placement, {}", self.channel)?;
        if let Some(team) = self.caps {
            write!(f, ", thread caps at launch ({team})")?;
        }
        let uncapped = self.uncapped();
        if !uncapped.is_empty() {
            write!(
                f,
                "; {} size(s) its threads once at start, and no lever does: `cap_threads` \
                 (coloc exec --cap-threads) sets them to the team at launch",
                list(&uncapped)
            )?;
        }
        Ok(())
    }
}
