//! Plans and their reasons for people and programs at the edges (the run's
//! summary, the HTML report, `coloc why`, the daemon's status): a plan in one
//! line, the last verdict per set of apps, and one app's history over a run
//! (docs/trace-format.md, "Reasons and verdicts"). The reasons' own words are
//! `crate::reason::render`.

pub mod history;

use crate::plan::{AppPlan, Plan};
use crate::reason::{Judge, Verdict};

/// One app's reasons in a line: `0.0 admitted, partition CPUs 0-1 …`.
pub fn app_line(p: &AppPlan) -> String {
    let mut s = p.app.to_string();
    for (i, r) in p.reasons.iter().enumerate() {
        s.push_str(if i == 0 { " " } else { ", " });
        s.push_str(&r.to_string());
    }
    s
}

/// A whole plan in one line, as the trace's old `note` read: the policy's
/// name, then [`plan_line`]. A version-1 trace's plan renders as the note it
/// carried.
pub fn note(policy: &str, plan: &Plan) -> String {
    match &plan.legacy_note {
        Some(n) => n.clone(),
        None => format!("{policy}: {}", plan_line(plan)),
    }
}

/// A plan's reasons in one line: the plan-wide reasons, each app with
/// reasons, and the verdicts after ` | `.
pub fn plan_line(plan: &Plan) -> String {
    if let Some(n) = &plan.legacy_note {
        return n.clone();
    }
    let mut parts: Vec<String> = plan.reasons.iter().map(ToString::to_string).collect();
    parts.extend(
        plan.apps
            .iter()
            .filter(|p| !p.reasons.is_empty())
            .map(app_line),
    );
    let mut s = parts.join("; ");
    for v in &plan.verdicts {
        if !s.is_empty() {
            s.push_str(" | ");
        }
        s.push_str(&v.to_string());
    }
    s
}

/// The last verdict on each set of co-running apps over a run's plans, in
/// order of first appearance: for `coloc run` and `bench mixes` to say at the
/// end whether the policy was measured worse than leaving the apps to Linux.
/// Per plan the `+guard` layer's verdict counts where there is one (it judges
/// the plan that reached the machine), else `auto`'s; sets of no app are
/// skipped.
pub fn last_verdicts<'a>(plans: impl IntoIterator<Item = &'a Plan>) -> Vec<Verdict> {
    let mut last: Vec<Verdict> = Vec::new();
    for plan in plans {
        let Some(v) = plan
            .verdict(Judge::Guard)
            .or_else(|| plan.verdict(Judge::Auto))
        else {
            continue;
        };
        if v.apps.is_empty() {
            continue;
        }
        match last.iter_mut().find(|l| l.apps == v.apps) {
            Some(l) => *l = v.clone(),
            None => last.push(v.clone()),
        }
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reason::tests::verdict;
    use crate::reason::{Arrangement, TrialState};

    fn plan(verdicts: Vec<Verdict>) -> Plan {
        Plan {
            verdicts,
            ..Plan::default()
        }
    }

    /// The run's summary takes each set's last verdict, the guard's over
    /// auto's in one plan, and skips plans without one and empty sets.
    #[test]
    fn the_run_summary_takes_each_sets_last_verdict() {
        let open = TrialState::Open(Arrangement::Own);
        let plans = [
            plan(vec![verdict(Judge::Auto, &[0, 1], open, None)]),
            plan(Vec::new()),
            plan(vec![verdict(
                Judge::Auto,
                &[0, 1],
                TrialState::OwnKept,
                Some(1.4),
            )]),
            plan(vec![verdict(
                Judge::Auto,
                &[1],
                TrialState::NothingToActOn,
                None,
            )]),
            plan(vec![verdict(Judge::Auto, &[], open, None)]),
            plan(vec![
                verdict(Judge::Auto, &[0, 2], TrialState::OwnKept, Some(1.1)),
                verdict(Judge::Guard, &[0, 2], TrialState::BackToLinux, Some(0.9)),
            ]),
        ];
        let last = last_verdicts(&plans);
        assert_eq!(
            last,
            vec![
                verdict(Judge::Auto, &[0, 1], TrialState::OwnKept, Some(1.4)),
                verdict(Judge::Auto, &[1], TrialState::NothingToActOn, None),
                verdict(Judge::Guard, &[0, 2], TrialState::BackToLinux, Some(0.9)),
            ]
        );
        assert!(last[2].settled_on_linux() && !last[0].settled_on_linux());
    }
}
