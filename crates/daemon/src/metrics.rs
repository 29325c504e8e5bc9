//! What the daemon's loop decided and measured, as Prometheus metrics
//! (docs/service.md, Metrics): `coloc daemon --metrics ADDR` serves them
//! ([`crate::scrape`]).
//!
//! Problem: a monitoring system cannot read `coloc status`'s table or the
//! trace's reasons; it scrapes numbers. An operator wants per app what it got
//! (CPUs, its OpenMP team) and how it fares (progress, slowdown, CPUs
//! wasted), and per policy how often it decides, how long that takes and
//! what its trials concluded.
//!
//! Approach: the loop's trace events are folded into `prometheus` (the
//! Rust client of TiKV) metric families as they are recorded ([`Tally::record`], on the loop's
//! thread; the families are atomics shared with the scraping thread, which
//! only encodes them). Nothing is read back from words: CPUs and DoP come
//! from the plan, the slowdown from the admission reason's co-run rates,
//! verdicts from the plan's verdicts, waste from the Manager's checks
//! (`coloc_manager::waste_of`).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use coloc_manager::{waste_of, Waste};
use coloc_model::reason::{AdmissionRule, Judge, Reason, TrialState, Verdict};
use coloc_model::{AppId, Placement, TraceEvent};
use prometheus::{
    Encoder, GaugeVec, HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry,
    TextEncoder,
};

/// Bounds of the decision-time histogram, seconds: 10 µs to 1 s in tenfold
/// steps (a policy decides in microseconds on the simulator's `kvm-2cpu`; a
/// slow one in tens of milliseconds).
const DECIDE_BUCKETS: [f64; 6] = [1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0];

/// Labels of an app's series.
const APP: &[&str] = &["app", "name"];

/// The metric families, registered once; cheap to clone (shared atomics).
#[derive(Clone, Debug)]
struct Families {
    cpus: IntGaugeVec,
    dop: IntGaugeVec,
    rate: GaugeVec,
    slowdown: GaugeVec,
    waste: IntCounterVec,
    decisions: IntCounterVec,
    decide: HistogramVec,
    verdicts: IntCounterVec,
}

/// The registry the endpoint encodes.
#[derive(Clone, Debug)]
pub struct Exposition(Registry);

impl Exposition {
    /// The metrics in Prometheus's text format (version 0.0.4, which
    /// `promtool check metrics` reads).
    pub fn text(&self) -> String {
        let mut out = Vec::new();
        // Encoding into memory fails only on a family that breaks the
        // format's rules, which these are built not to.
        if let Err(e) = TextEncoder::new().encode(&self.0.gather(), &mut out) {
            tracing::warn!("encoding the metrics: {e}");
        }
        String::from_utf8_lossy(&out).into_owned()
    }
}

/// One app as the metrics know it.
#[derive(Debug, Clone)]
struct Known {
    /// Its number and name, the labels of its series.
    labels: [String; 2],
    /// Its last progress counter and when it was read.
    steps: Option<(Duration, u64)>,
}

impl Known {
    fn labels(&self) -> [&str; 2] {
        [&self.labels[0], &self.labels[1]]
    }
}

/// Folds the loop's events into the families (the loop's side).
#[derive(Debug)]
pub struct Tally {
    families: Families,
    /// CPUs of the machine: what an app placed by Linux may use.
    machine_cpus: u32,
    apps: BTreeMap<AppId, Known>,
    /// Each trial's last state, by its judge and app set: a verdict is
    /// counted when it changes.
    trials: BTreeMap<(String, Vec<AppId>), String>,
}

/// The families' registry and the tally that feeds them.
pub fn metrics(machine_cpus: u32) -> (Tally, Exposition) {
    // The names, help texts and labels below are valid: building them fails
    // only on a programming error, caught by the tests.
    let opts = |name: &str, help: &str| Opts::new(name, help).namespace("coloc");
    let families = Families {
        cpus: IntGaugeVec::new(
            opts(
                "app_cpus",
                "CPUs the app's plan lets it use (all of the machine's when placed by Linux, 0 while held)",
            ),
            APP,
        )
        .expect("valid"),
        dop: IntGaugeVec::new(
            opts(
                "app_dop",
                "Threads the app's OpenMP team runs with, where coloc sets it",
            ),
            APP,
        )
        .expect("valid"),
        rate: GaugeVec::new(
            opts(
                "app_progress_rate",
                "Progress steps per second of the app's OpenMP team (docs/signals.md, progress inside a region)",
            ),
            APP,
        )
        .expect("valid"),
        slowdown: GaugeVec::new(
            opts(
                "app_estimated_slowdown",
                "The app's estimated time beside the app it runs with over its time alone, from co-run rates of earlier runs",
            ),
            APP,
        )
        .expect("valid"),
        waste: IntCounterVec::new(
            opts(
                "app_waste_events_total",
                "Observation intervals in which the Manager saw CPUs wasted around the app, by kind (docs/trace-format.md)",
            ),
            &["app", "name", "kind"],
        )
        .expect("valid"),
        decisions: IntCounterVec::new(
            opts("policy_decisions_total", "Plans the policy made"),
            &["policy"],
        )
        .expect("valid"),
        decide: HistogramVec::new(
            HistogramOpts::new("policy_decide_seconds", "Wall time the policy took to decide")
                .namespace("coloc")
                .buckets(DECIDE_BUCKETS.to_vec()),
            &["policy"],
        )
        .expect("valid"),
        verdicts: IntCounterVec::new(
            opts(
                "policy_verdicts_total",
                "Verdicts of trials against Linux, counted as a trial on a set of apps enters a state",
            ),
            &["policy", "judge", "state"],
        )
        .expect("valid"),
    };
    let r = Registry::new();
    let f = families.clone();
    for c in [
        Box::new(f.cpus) as Box<dyn prometheus::core::Collector>,
        Box::new(f.dop),
        Box::new(f.rate),
        Box::new(f.slowdown),
        Box::new(f.waste),
        Box::new(f.decisions),
        Box::new(f.decide),
        Box::new(f.verdicts),
    ] {
        r.register(c).expect("distinct names");
    }
    let tally = Tally {
        families,
        machine_cpus,
        apps: BTreeMap::new(),
        trials: BTreeMap::new(),
    };
    (tally, Exposition(r))
}

fn waste_kind(w: Waste) -> &'static str {
    match w {
        Waste::IdleWhileWaiting => "idle_while_waiting",
        Waste::Underused => "underused",
        Waste::NoProgress => "no_progress",
        Waste::Spinning => "spinning",
    }
}

fn judge(j: Judge) -> &'static str {
    match j {
        Judge::Auto => "auto",
        Judge::Guard => "guard",
    }
}

fn state(s: TrialState) -> &'static str {
    match s {
        TrialState::NothingToActOn => "nothing_to_act_on",
        TrialState::NotTried => "not_tried",
        TrialState::Open(_) => "open",
        TrialState::OwnKept => "own_kept",
        TrialState::BackToLinux => "back_to_linux",
        TrialState::Rechecking(_) => "rechecking",
        TrialState::Waiting => "waiting",
    }
}

/// The slowdown against alone an app's reasons estimate, where they do: the
/// co-run admission rule's rate is its speed beside the other app as a share
/// of its speed alone.
fn slowdown(reasons: &[Reason]) -> Option<f64> {
    reasons.iter().find_map(|r| match r {
        Reason::Admission(a) => match &a.rule {
            AdmissionRule::CoRun { rate, .. } if *rate > 0.0 => Some(1.0 / rate),
            _ => None,
        },
        _ => None,
    })
}

impl Tally {
    /// Folds one event of the loop, made under `policy`.
    pub fn record(&mut self, event: &TraceEvent, policy: &str) {
        if let Some((app, w)) = waste_of(event) {
            if let Some(k) = self.apps.get(&app) {
                let [a, n] = k.labels();
                self.families
                    .waste
                    .with_label_values(&[a, n, waste_kind(w)])
                    .inc();
            }
        }
        match event {
            TraceEvent::Arrive { app, name, .. } => {
                let labels = [app.app.to_string(), name.clone().unwrap_or_default()];
                self.apps.insert(
                    *app,
                    Known {
                        labels,
                        steps: None,
                    },
                );
            }
            TraceEvent::Plan { plan, decide, .. } => {
                let p = [policy];
                self.families.decisions.with_label_values(&p).inc();
                self.families
                    .decide
                    .with_label_values(&p)
                    .observe(decide.as_secs_f64());
                for a in &plan.apps {
                    self.plan_of(a);
                }
                for v in &plan.verdicts {
                    self.verdict(v, policy);
                }
            }
            TraceEvent::Obs(obs) => {
                for s in &obs.apps {
                    let (Some(k), Some(steps)) = (self.apps.get_mut(&s.app), s.omp_steps) else {
                        continue;
                    };
                    if let Some((t0, s0)) = k.steps {
                        let dt = obs.at.saturating_sub(t0).as_secs_f64();
                        if dt > 0.0 && steps >= s0 {
                            self.families
                                .rate
                                .with_label_values(&k.labels())
                                .set((steps - s0) as f64 / dt);
                        }
                    }
                    k.steps = Some((obs.at, steps));
                }
            }
            TraceEvent::Exit { app, .. } => self.forget(*app),
            _ => {}
        }
    }

    fn plan_of(&mut self, a: &coloc_model::AppPlan) {
        let Some(k) = self.apps.get(&a.app) else {
            return;
        };
        let f = &self.families;
        let cpus = match (&a.placement, a.admit) {
            (_, false) => 0,
            (Placement::Unmanaged, true) => self.machine_cpus,
            (p, true) => p.cpus().len() as u32,
        };
        let l = k.labels();
        f.cpus.with_label_values(&l).set(i64::from(cpus));
        match a.dop {
            Some(d) => f.dop.with_label_values(&l).set(i64::from(d)),
            // Absent: nothing to remove.
            None => drop(f.dop.remove_label_values(&l)),
        }
        if let Some(s) = slowdown(&a.reasons) {
            f.slowdown.with_label_values(&l).set(s);
        }
    }

    fn verdict(&mut self, v: &Verdict, policy: &str) {
        let key = (judge(v.judge).to_string(), v.apps.clone());
        let now = state(v.state);
        if self.trials.get(&key).is_some_and(|s| s == now) {
            return;
        }
        self.trials.insert(key, now.to_string());
        self.families
            .verdicts
            .with_label_values(&[policy, judge(v.judge), now])
            .inc();
    }

    /// An app that left: its series go (a scrape shows the apps managed now).
    fn forget(&mut self, app: AppId) {
        let Some(k) = self.apps.remove(&app) else {
            return;
        };
        let f = &self.families;
        let l = k.labels();
        // A series never set is absent: nothing to remove.
        let _ = f.cpus.remove_label_values(&l);
        let _ = f.dop.remove_label_values(&l);
        let _ = f.rate.remove_label_values(&l);
        let _ = f.slowdown.remove_label_values(&l);
        for w in [
            Waste::IdleWhileWaiting,
            Waste::Underused,
            Waste::NoProgress,
            Waste::Spinning,
        ] {
            let _ = f.waste.remove_label_values(&[l[0], l[1], waste_kind(w)]);
        }
        self.trials.retain(|(_, apps), _| !apps.contains(&app));
    }

    /// The apps the metrics know now.
    pub fn apps(&self) -> BTreeSet<AppId> {
        self.apps.keys().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use coloc_model::reason::{Admission, CoRunFrom, Estimate};
    use coloc_model::trace::ExitStatus;
    use coloc_model::view::Trigger;
    use coloc_model::{AppPlan, AppSample, Observation, Plan};

    use super::*;

    fn app(n: u32) -> AppId {
        AppId { app: n, rep: 0 }
    }

    fn plan(ms: u64, apps: Vec<AppPlan>, verdicts: Vec<Verdict>, decide_us: u64) -> TraceEvent {
        TraceEvent::Plan {
            t: Duration::from_millis(ms),
            trigger: Trigger::Epoch,
            plan: Plan {
                apps,
                verdicts,
                ..Plan::default()
            },
            decide: Duration::from_micros(decide_us),
        }
    }

    fn obs(ms: u64, steps: u64) -> TraceEvent {
        TraceEvent::Obs(Box::new(Observation {
            at: Duration::from_millis(ms),
            apps: vec![AppSample {
                app: app(0),
                omp_steps: Some(steps),
                ..AppSample::default()
            }],
            ..Observation::default()
        }))
    }

    fn trial(state: TrialState) -> Verdict {
        Verdict {
            judge: Judge::Auto,
            apps: vec![app(0), app(1)],
            state,
            estimate: Some(Estimate {
                pairs: 1,
                ratio: 0.9,
                low: None,
                high: None,
            }),
            cost: None,
            round: 1,
            pair: None,
            stored: None,
        }
    }

    /// The value of the series whose line starts with `series` (name and
    /// labels as written), if it is there.
    fn value(text: &str, series: &str) -> Option<f64> {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
    }

    /// Two apps: one on CPUs 0-1 with a DoP of 2, admitted by co-run rates
    /// (0.8 of its speed alone: slowdown 1/0.8 = 1.25); one left to Linux on
    /// the machine's 4 CPUs. 300 steps over 100 ms is 3000 steps/s. The trial
    /// opens, stays open (not counted again), then keeps its own
    /// arrangement: two verdicts. Two plans, taking 20 µs and 3 ms.
    #[test]
    fn the_loops_events_become_metrics() {
        let (mut tally, exposition) = metrics(4);
        let arrive = |n: u32, name: &str| TraceEvent::Arrive {
            t: Duration::ZERO,
            app: app(n),
            name: Some(name.into()),
        };
        let corun = Admission {
            admitted: true,
            rule: AdmissionRule::CoRun {
                with: app(1),
                rate: 0.8,
                with_rate: 0.9,
                from: CoRunFrom::Pairs { runs: 3 },
                now_secs: 10.0,
                held_secs: 12.0,
            },
        };
        let placed = AppPlan {
            placement: Placement::Shared("0-1".parse().unwrap()),
            dop: Some(2),
            ..AppPlan::native(app(0))
        }
        .because(corun);
        let open = trial(TrialState::Open(coloc_model::reason::Arrangement::Own));
        for e in [
            arrive(0, "solver"),
            arrive(1, "xz"),
            plan(
                0,
                vec![placed.clone(), AppPlan::native(app(1))],
                vec![open.clone()],
                20,
            ),
            obs(100, 1000),
            plan(100, vec![placed, AppPlan::native(app(1))], vec![open], 3000),
            obs(200, 1300),
            plan(200, vec![], vec![trial(TrialState::OwnKept)], 20),
            TraceEvent::IdleWhileWaiting {
                t: Duration::from_millis(200),
                since: Duration::from_millis(50),
                app: app(1),
                idle: "3".parse().unwrap(),
                waiting: vec![],
            },
        ] {
            tally.record(&e, "auto");
        }
        let text = exposition.text();
        let s = |labels: &str| format!("{{app=\"0\",name=\"solver\"{labels}}}");
        let x = |labels: &str| format!("{{app=\"1\",name=\"xz\"{labels}}}");
        assert_eq!(
            value(&text, &format!("coloc_app_cpus{}", s(""))),
            Some(2.0),
            "{text}"
        );
        assert_eq!(value(&text, &format!("coloc_app_cpus{}", x(""))), Some(4.0));
        assert_eq!(value(&text, &format!("coloc_app_dop{}", s(""))), Some(2.0));
        assert_eq!(value(&text, &format!("coloc_app_dop{}", x(""))), None);
        assert_eq!(
            value(&text, &format!("coloc_app_progress_rate{}", s(""))),
            Some(3000.0)
        );
        assert_eq!(
            value(&text, &format!("coloc_app_estimated_slowdown{}", s(""))),
            Some(1.25)
        );
        assert_eq!(
            value(
                &text,
                "coloc_app_waste_events_total{app=\"1\",kind=\"idle_while_waiting\",name=\"xz\"}"
            ),
            Some(1.0)
        );
        let p = "{policy=\"auto\"}";
        assert_eq!(
            value(&text, &format!("coloc_policy_decisions_total{p}")),
            Some(3.0)
        );
        assert_eq!(
            value(&text, &format!("coloc_policy_decide_seconds_count{p}")),
            Some(3.0)
        );
        assert_eq!(
            value(
                &text,
                "coloc_policy_decide_seconds_bucket{policy=\"auto\",le=\"0.0001\"}"
            ),
            Some(2.0),
            "{text}"
        );
        let v = |state: &str| {
            value(
                &text,
                &format!("coloc_policy_verdicts_total{{judge=\"auto\",policy=\"auto\",state=\"{state}\"}}"),
            )
        };
        assert_eq!((v("open"), v("own_kept")), (Some(1.0), Some(1.0)));

        // An app that exits leaves no series behind.
        tally.record(
            &TraceEvent::Exit {
                t: Duration::from_millis(300),
                app: app(1),
                status: ExitStatus::Code(0),
                metric: None,
                usage: None,
            },
            "auto",
        );
        let text = exposition.text();
        assert!(!text.contains("name=\"xz\""), "{text}");
        assert_eq!(tally.apps(), BTreeSet::from([app(0)]));
    }
}
