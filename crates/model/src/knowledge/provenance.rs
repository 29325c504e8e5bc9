//! Which learned records a plan rests on (docs/knowledge.md, Checked
//! against what happened next): each app's records checked
//! ([`check`](super::check)), and the kinds of them its plan's reasons
//! show it used, added to the plan as a [`Reason::Records`] — data the trace
//! keeps and `coloc why` renders.

use std::collections::{BTreeMap, BTreeSet};

use super::check::Checks;
use crate::reason::records::{RecordKind, Records};
use crate::reason::{AdmissionRule, DopWhy, PlanReason, Reason};
use crate::{Plan, View};

/// Each app's records checked against what happened next, by app name:
/// which groups its derived knowledge comes from, and which were dropped.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Provenance {
    apps: BTreeMap<String, Checks>,
}

impl Provenance {
    /// The checks of each app, by name.
    pub fn of(apps: impl IntoIterator<Item = (String, Checks)>) -> Self {
        Self {
            apps: apps.into_iter().collect(),
        }
    }

    /// What of app `name`'s records a decision that read `kinds` of them
    /// used, and the groups dropped; None when there is neither.
    pub fn records(&self, name: &str, kinds: &BTreeSet<RecordKind>) -> Option<Records> {
        let c = self.apps.get(name)?;
        let r = Records {
            used: c.used(kinds),
            dropped: c.dropped(),
        };
        (!r.is_empty()).then_some(r)
    }

    /// Adds to each app's plan the records its decision used (by its
    /// reasons: [`kinds_used`]) and the groups of its records dropped.
    pub fn annotate(&self, view: &View<'_>, plan: &mut Plan) {
        if self.apps.is_empty() {
            return;
        }
        let srpt: BTreeSet<_> = plan
            .reasons
            .iter()
            .filter_map(|r| match r {
                PlanReason::ShortestFirst { left } => Some(left.iter().map(|(id, _)| *id)),
                _ => None,
            })
            .flatten()
            .collect();
        for p in &mut plan.apps {
            let Some(a) = view.apps.iter().find(|a| a.id == p.app) else {
                continue;
            };
            let Some(c) = self.apps.get(&a.spec.name) else {
                continue;
            };
            let cut = p.dop.is_some_and(|d| d < a.threads_requested);
            let mut kinds = kinds_used(&p.reasons, cut && c.has(RecordKind::Regions));
            if srpt.contains(&p.app) {
                kinds.insert(RecordKind::SoloTime);
            }
            if let Some(r) = self.records(&a.spec.name, &kinds) {
                p.reasons.push(Reason::Records(r));
            }
        }
    }
}

/// The kinds of records an app's plan rests on, by its reasons: admission
/// by solo times (and shortest first) or by co-run rates (computed with the
/// solo times), a team sized by solo times, a team kept whole by recorded
/// region spans — or `cut` with region spans recorded (a cut is made only
/// where they say regions are short, `cores/reversible.rs`).
pub fn kinds_used(reasons: &[Reason], cut: bool) -> BTreeSet<RecordKind> {
    let mut kinds = BTreeSet::new();
    if cut {
        kinds.insert(RecordKind::Regions);
    }
    for r in reasons {
        match r {
            Reason::Admission(a) => match a.rule {
                AdmissionRule::SoloTimes { .. } | AdmissionRule::ShortestFirst { .. } => {
                    kinds.insert(RecordKind::SoloTime);
                }
                AdmissionRule::CoRun { .. } => {
                    kinds.extend([RecordKind::SoloTime, RecordKind::Rate]);
                }
                _ => {}
            },
            Reason::Dop(d) if matches!(d.why, DopWhy::FastestAlone { .. }) => {
                kinds.insert(RecordKind::SoloTime);
            }
            Reason::Whole(crate::reason::Reversibility::Long { recorded: true, .. }) => {
                kinds.insert(RecordKind::Regions);
            }
            _ => {}
        }
    }
    kinds
}
