//! One pass over a trace's events, gathering what the metrics need per instance.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::ids::AppId;
use crate::trace::{ExitStatus, SelfUsage, Trace, TraceEvent};

/// How an instance left.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Exit {
    pub t: Duration,
    pub status: ExitStatus,
    pub metric: Option<f64>,
    /// CPU time over its life, where the backend recorded it.
    pub cpu_ns: Option<u64>,
}

/// What the trace says about one app instance.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Instance {
    pub arrive: Option<Duration>,
    pub start: Option<Duration>,
    pub exit: Option<Exit>,
    /// Start to the first applied plan that covers the instance.
    pub first_plan_delay: Option<Duration>,
    /// Longest wait from a thread change to the next applied plan that covers it.
    pub max_thread_placement_delay: Option<Duration>,
    /// Start time while no applied plan has covered the instance yet.
    awaiting_first_plan: Option<Duration>,
    /// Earliest thread change not yet followed by an applied plan covering it.
    awaiting_placement: Option<Duration>,
    /// The app's metric read live, one value per observation that brought a
    /// new matching line (the series a service prints as it runs).
    pub metric_series: Vec<f64>,
    /// Matching lines counted by the last observation.
    metric_lines: u64,
}

impl Instance {
    /// An Applied event at `t` included this instance: every change it was
    /// waiting for is now in effect.
    fn applied(&mut self, t: Duration) {
        if let Some(start) = self.awaiting_first_plan.take() {
            self.first_plan_delay = Some(t.saturating_sub(start));
        }
        if let Some(changed) = self.awaiting_placement.take() {
            let delay = t.saturating_sub(changed);
            self.max_thread_placement_delay = self.max_thread_placement_delay.max(Some(delay));
        }
    }
}

/// The trace folded per instance, plus the run-wide events.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Timeline {
    pub instances: BTreeMap<AppId, Instance>,
    /// Time the policy took for each decision.
    pub decide: Vec<Duration>,
    /// coloc's own resource use, from the End event.
    pub usage: Option<SelfUsage>,
}

impl Timeline {
    /// Folds the events in recording order. The Manager records a launch's Start
    /// before the Applied event of the same decision, and a thread change before
    /// the decision it triggers, so "the first Applied event after it" is the
    /// first one later in the trace.
    pub fn of(trace: &Trace) -> Timeline {
        let mut tl = Timeline::default();
        for event in &trace.events {
            match event {
                TraceEvent::Arrive { t, app, .. } => tl.instance(*app).arrive = Some(*t),
                TraceEvent::Start { t, app, .. } => {
                    let i = tl.instance(*app);
                    i.start = Some(*t);
                    i.awaiting_first_plan = Some(*t);
                }
                TraceEvent::Threads { t, app, .. } => {
                    tl.instance(*app).awaiting_placement.get_or_insert(*t);
                }
                TraceEvent::Plan { decide, .. } => tl.decide.push(*decide),
                TraceEvent::Applied { t, outcomes } => {
                    for o in outcomes {
                        if let Some(i) = tl.instances.get_mut(&o.app) {
                            i.applied(*t);
                        }
                    }
                }
                TraceEvent::Exit {
                    t,
                    app,
                    status,
                    metric,
                    usage,
                } => {
                    tl.instance(*app).exit = Some(Exit {
                        t: *t,
                        status: status.clone(),
                        metric: *metric,
                        cpu_ns: usage.as_ref().map(|u| u.cpu_ns),
                    });
                }
                TraceEvent::End { usage, .. } => tl.usage = Some(*usage),
                TraceEvent::Obs(o) => {
                    for a in &o.apps {
                        if let (Some(m), Some(i)) = (a.metric, tl.instances.get_mut(&a.app)) {
                            if m.lines > i.metric_lines {
                                i.metric_lines = m.lines;
                                i.metric_series.push(m.value);
                            }
                        }
                    }
                }
                TraceEvent::Header(_)
                | TraceEvent::IdleWhileWaiting { .. }
                | TraceEvent::Underused { .. }
                | TraceEvent::NoProgress { .. }
                | TraceEvent::Spinning { .. } => {}
            }
        }
        tl
    }

    fn instance(&mut self, app: AppId) -> &mut Instance {
        self.instances.entry(app).or_default()
    }

    /// First arrival to last exit: the workload's total turnaround time (NuPoCo
    /// §6). None before anything has both arrived and exited.
    pub fn makespan(&self) -> Option<Duration> {
        let first = self.instances.values().filter_map(|i| i.arrive).min()?;
        let last = self
            .instances
            .values()
            .filter_map(|i| i.exit.as_ref().map(|e| e.t))
            .max()?;
        Some(last.saturating_sub(first))
    }
}
