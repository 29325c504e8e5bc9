//! What applied to one app over a run, from its trace (`coloc why`): the
//! decisions, merged while they stay the same, with their reasons, the
//! verdicts on the sets the app ran in, and what was measured (its exit, the
//! times its threads waited beside idle CPUs).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::ids::AppId;
use crate::plan::{AppPlan, Placement};
use crate::reason::{Reason, Verdict};
use crate::settings::{MemPolicy, SchedSettings};
use crate::trace::{ExitStatus, TraceEvent};

/// One stretch of time over which the app's decision stayed the same.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stretch {
    /// From the first plan of the stretch to the next different one (or the
    /// app's exit, or the trace's end), seconds.
    pub from_secs: f64,
    pub to_secs: f64,
    /// Plans in the stretch.
    pub plans: u32,
    pub admit: bool,
    pub placement: Placement,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dop: Option<u32>,
    pub memory: MemPolicy,
    pub sched: SchedSettings,
    /// The reasons of the stretch's last plan.
    pub reasons: Vec<Reason>,
    /// The last verdict on a set the app was in, during the stretch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// Observation intervals in the stretch where its threads waited beside
    /// CPUs its placement kept them off (`idle_while_waiting`).
    #[serde(default)]
    pub idle_while_waiting: u32,
}

/// How one app instance ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ending {
    pub at_secs: f64,
    pub status: ExitStatus,
    /// Seconds from its start to its exit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ran_secs: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<f64>,
}

/// Everything that applied to one app instance.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct History {
    pub app: AppId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrived_secs: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_secs: Option<f64>,
    /// Stretches dropped from the front to keep it bounded
    /// ([`History::keep_last`]; a live app's history in the node service).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub earlier_stretches: u64,
    pub stretches: Vec<Stretch>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<Ending>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Whether two plans of the app are the same decision: the same settings
/// and the same kinds of reasons (their numbers may move).
fn same(a: &Stretch, p: &AppPlan) -> bool {
    let kinds = |r: &[Reason]| -> Vec<std::mem::Discriminant<Reason>> {
        r.iter().map(std::mem::discriminant).collect()
    };
    a.admit == p.admit
        && a.placement == p.placement
        && a.dop == p.dop
        && a.memory == p.memory
        && a.sched == p.sched
        && kinds(&a.reasons) == kinds(&p.reasons)
}

/// The history of app instance `app` in a trace's events.
pub fn history(events: &[TraceEvent], app: AppId) -> History {
    let mut h = History::new(app);
    for e in events {
        h.observe(e);
    }
    h
}

impl History {
    /// An app's history before any event.
    pub fn new(app: AppId) -> History {
        History {
            app,
            arrived_secs: None,
            started_secs: None,
            earlier_stretches: 0,
            stretches: Vec::new(),
            ended: None,
        }
    }

    /// Adds one event of the trace, in order: the app's last stretch lasts
    /// until the latest event seen (its exit, once it exited).
    pub fn observe(&mut self, e: &TraceEvent) {
        let secs = |t: Duration| t.as_secs_f64();
        let app = self.app;
        match e {
            TraceEvent::Arrive { t, app: a, .. } if *a == app => self.arrived_secs = Some(secs(*t)),
            TraceEvent::Start { t, app: a, .. } if *a == app => self.started_secs = Some(secs(*t)),
            TraceEvent::Plan { t, plan, .. } if self.ended.is_none() => {
                if let Some(p) = plan.for_app(app) {
                    let verdict = plan
                        .verdicts
                        .iter()
                        .rev()
                        .find(|v| v.apps.contains(&app))
                        .cloned();
                    self.plan(secs(*t), p, verdict);
                }
            }
            TraceEvent::IdleWhileWaiting { app: a, .. } if *a == app => {
                if let Some(s) = self.stretches.last_mut() {
                    s.idle_while_waiting += 1;
                }
            }
            TraceEvent::Exit {
                t,
                app: a,
                status,
                metric,
                ..
            } if *a == app => {
                self.ended = Some(Ending {
                    at_secs: secs(*t),
                    status: status.clone(),
                    ran_secs: self.started_secs.map(|s| secs(*t) - s),
                    metric: *metric,
                });
            }
            _ => {}
        }
        let end = match (&self.ended, e.time()) {
            (Some(x), _) => Some(x.at_secs),
            (None, t) => t.map(secs),
        };
        if let (Some(s), Some(end)) = (self.stretches.last_mut(), end) {
            s.to_secs = s.to_secs.max(end);
        }
    }

    /// A plan for the app at `t`: the same decision lengthens the last
    /// stretch, another starts one.
    fn plan(&mut self, t: f64, p: &AppPlan, verdict: Option<Verdict>) {
        match self.stretches.last_mut() {
            Some(s) if same(s, p) => {
                s.plans += 1;
                s.reasons = p.reasons.clone();
                s.verdict = verdict.or(s.verdict.take());
            }
            _ => {
                if let Some(s) = self.stretches.last_mut() {
                    s.to_secs = t;
                }
                self.stretches.push(Stretch {
                    from_secs: t,
                    to_secs: t,
                    plans: 1,
                    admit: p.admit,
                    placement: p.placement.clone(),
                    dop: p.dop,
                    memory: p.memory,
                    sched: p.sched,
                    reasons: p.reasons.clone(),
                    verdict,
                    idle_while_waiting: 0,
                });
            }
        }
    }

    /// Drops all but the last `n` stretches, counting those dropped (a
    /// long-lived app's history stays bounded).
    pub fn keep_last(&mut self, n: usize) {
        let drop = self.stretches.len().saturating_sub(n);
        if drop > 0 {
            self.stretches.drain(..drop);
            self.earlier_stretches += drop as u64;
        }
    }
}

impl History {
    /// A few lines a person can read: one per stretch, then how it ended.
    pub fn render(&self) -> String {
        use std::fmt::Write as _;
        let mut out = format!("{}", self.app);
        if let Some(a) = self.arrived_secs {
            let _ = write!(out, ": arrived at {a:.2} s");
        }
        if let Some(s) = self.started_secs {
            let _ = write!(out, ", started at {s:.2} s");
        }
        out.push('\n');
        if self.earlier_stretches > 0 {
            let _ = writeln!(
                out,
                "  ({} earlier decisions not kept)",
                self.earlier_stretches
            );
        }
        for s in &self.stretches {
            let _ = write!(out, "  {:7.2} – {:7.2} s", s.from_secs, s.to_secs);
            if s.plans > 1 {
                let _ = write!(out, " ({} plans)", s.plans);
            }
            let _ = write!(out, ": {}", decision(s));
            let reasons: Vec<String> = s.reasons.iter().map(ToString::to_string).collect();
            if !reasons.is_empty() {
                let _ = write!(out, "\n      why: {}", reasons.join("; "));
            }
            if let Some(v) = &s.verdict {
                let _ = write!(out, "\n      trial: {v}");
            }
            if s.idle_while_waiting > 0 {
                let _ = write!(
                    out,
                    "\n      measured: {} interval(s) with its threads waiting beside idle CPUs",
                    s.idle_while_waiting
                );
            }
            out.push('\n');
        }
        match &self.ended {
            Some(e) => {
                let _ = write!(out, "  ended at {:.2} s: {}", e.at_secs, e.status);
                if let Some(r) = e.ran_secs {
                    let _ = write!(out, " after {r:.2} s");
                }
                if let Some(m) = e.metric {
                    let _ = write!(out, ", metric {m}");
                }
                out.push('\n');
            }
            None => out.push_str("  still running at the end of the trace\n"),
        }
        out
    }
}

/// The settings of a stretch in words.
fn decision(s: &Stretch) -> String {
    if !s.admit {
        return "held".into();
    }
    let mut parts = vec![match &s.placement {
        Placement::Unmanaged => "placed by Linux".to_string(),
        p => format!("on CPUs {}", p.cpus().to_list()),
    }];
    if let Some(d) = s.dop {
        parts.push(format!("dop {d}"));
    }
    if s.memory != MemPolicy::Default {
        parts.push(format!("memory {:?}", s.memory).to_lowercase());
    }
    if let Some(n) = s.sched.nice {
        parts.push(format!("nice {n}"));
    }
    if let Some(us) = s.sched.slice_us {
        parts.push(format!("slice {} ms", us / 1000));
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Plan;
    use crate::reason::{Admission, AdmissionRule, Judge, TrialState};
    use crate::view::Trigger;

    fn plan_at(ms: u64, p: AppPlan, verdict: Option<Verdict>) -> TraceEvent {
        TraceEvent::Plan {
            t: Duration::from_millis(ms),
            trigger: Trigger::Epoch,
            plan: Plan {
                apps: vec![p],
                verdicts: verdict.into_iter().collect(),
                ..Plan::default()
            },
            decide: Duration::ZERO,
        }
    }

    /// Held, then three plans on one CPU whose numbers move (one stretch),
    /// then Linux; the verdict and the exit are kept.
    #[test]
    fn stretches_merge_the_same_decision() {
        let app = AppId { app: 0, rep: 0 };
        let held = AppPlan::hold(app).because(Admission {
            admitted: false,
            rule: AdmissionRule::EveryCpuTaken { apps: 2, cpus: 2 },
        });
        let on = |borrowed: &str| {
            AppPlan {
                placement: Placement::Shared("0".parse().unwrap()),
                ..AppPlan::native(app)
            }
            .because(Reason::Borrowed {
                cpus: borrowed.parse().unwrap(),
            })
        };
        let kept = Verdict {
            judge: Judge::Auto,
            apps: vec![app],
            state: TrialState::OwnKept,
            estimate: None,
            cost: None,
            round: 1,
            pair: None,
            stored: None,
        };
        let events = vec![
            TraceEvent::Arrive {
                t: Duration::ZERO,
                app,
                name: None,
            },
            plan_at(0, held, None),
            plan_at(100, on("1"), None),
            plan_at(200, on("2"), Some(kept.clone())),
            plan_at(300, on("3"), None),
            plan_at(400, AppPlan::native(app), None),
            TraceEvent::Exit {
                t: Duration::from_millis(500),
                app,
                status: ExitStatus::Code(0),
                metric: None,
                usage: None,
            },
        ];
        let h = history(&events, app);
        let spans: Vec<(f64, f64, u32, bool)> = h
            .stretches
            .iter()
            .map(|s| (s.from_secs, s.to_secs, s.plans, s.admit))
            .collect();
        assert_eq!(
            spans,
            [
                (0.0, 0.1, 1, false),
                (0.1, 0.4, 3, true),
                (0.4, 0.5, 1, true)
            ]
        );
        assert_eq!(h.stretches[1].verdict, Some(kept));
        assert_eq!(
            h.stretches[1].reasons,
            [Reason::Borrowed {
                cpus: "3".parse().unwrap()
            }]
        );
        assert_eq!(h.ended.as_ref().map(|e| e.at_secs), Some(0.5));
        let text = h.render();
        assert_eq!(text.lines().count(), 1 + 2 + 3 + 1 + 1, "{text}");
    }
}
