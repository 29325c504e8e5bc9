//! One pass of Thread Tranquilizer for one app: the state machine of Figure 7
//! (TACO 2012 §3), pure.
//!
//! Problem: a change of memory placement or time slice is a bet; Figure 7 keeps
//! it only when the profile it targets improved — both its mean and its
//! standard deviation fell — and repeats every pass (5 s) to follow phase
//! changes.
//!
//! Approach: a pass starts with a baseline profile (`samples` samples) under the
//! settings in force. The app is then classified: memory-intensive when its
//! mean miss rate is above Δ (or, without counters, by the substitute of
//! [`super::classify`]), else CPU-intensive. Its class's target settings are
//! applied — interleaved memory and a fixed 100 ms slice, or a fixed 20 ms
//! slice — and a second profile is taken. Keep when the judged signal's mean
//! and standard deviation both improved; otherwise a memory-intensive app goes
//! back to local memory keeping the 100 ms slice, and a CPU-intensive one goes
//! back to the settings it had before the trial (the default on the first
//! pass). The app then holds until the pass ends. When the target equals what
//! is in force, or there is no signal to judge by, nothing is tried.

use std::time::Duration;

use coloc_model::reason::TranquilizerStep;

use super::classify::{Class, Classified};
use super::setting::Setting;
use super::window::{Profile, Rates, Signal};
use super::TranquilizerConfig;

/// Where an app is in its pass.
#[derive(Clone, Debug, PartialEq)]
pub enum Stage {
    /// Its worker threads do not exist yet.
    Waiting,
    /// Profiling under the settings in force.
    Baseline { samples: Vec<Rates> },
    /// Profiling under `setting`, to be judged by `judge` against `before`.
    Trial {
        class: Class,
        judge: Signal,
        before: Profile,
        /// What to go back to when the trial fails.
        fallback: Setting,
        samples: Vec<Rates>,
    },
    /// Nothing to do until the pass ends.
    Hold { until: Duration },
}

/// One app's Tranquilizer state.
#[derive(Clone, Debug, PartialEq)]
pub struct AppPass {
    pub stage: Stage,
    /// The settings in force.
    pub setting: Setting,
    /// When the current pass began.
    pub pass_start: Duration,
    /// Passes begun so far.
    pub passes: u32,
}

impl Default for AppPass {
    fn default() -> Self {
        Self {
            stage: Stage::Waiting,
            setting: Setting::default(),
            pass_start: Duration::ZERO,
            passes: 0,
        }
    }
}

/// What a step saw, for the plan's reasons; None when nothing happened.
pub type Note = Option<TranquilizerStep>;

impl AppPass {
    /// The worker threads exist (or time passed): begins a pass when waiting
    /// or when the held pass is over.
    pub fn tick(&mut self, now: Duration, workers: bool) -> Note {
        let begin = match self.stage {
            Stage::Waiting => workers,
            Stage::Hold { until } => now >= until,
            _ => false,
        };
        if !begin {
            return None;
        }
        self.stage = Stage::Baseline {
            samples: Vec::new(),
        };
        self.pass_start = now;
        self.passes += 1;
        Some(TranquilizerStep::Profiling {
            pass: self.passes,
            setting: self.setting.label(),
        })
    }

    /// One sample arrived. `classify` says what the baseline profile makes of
    /// the app (called once per pass, when the baseline is complete).
    pub fn sample(
        &mut self,
        r: Rates,
        cfg: &TranquilizerConfig,
        classify: impl FnOnce(&[Rates]) -> Classified,
    ) -> Note {
        let hold = Stage::Hold {
            until: self.pass_start + cfg.pass,
        };
        match &mut self.stage {
            Stage::Waiting | Stage::Hold { .. } => None,
            Stage::Baseline { samples } => {
                samples.push(r);
                if samples.len() < cfg.samples {
                    return None;
                }
                let samples = std::mem::take(samples);
                let c = classify(&samples);
                let target = c.class.target(self.setting, cfg);
                let before = c
                    .judge
                    .and_then(|j| Profile::of(&samples, j).map(|p| (j, p)));
                let (note, stage) = match before {
                    _ if target == self.setting => (
                        TranquilizerStep::Already {
                            class: c.why,
                            setting: target.label(),
                        },
                        hold,
                    ),
                    Some((judge, before)) => {
                        let fallback = c.class.fallback(self.setting, cfg);
                        let note = TranquilizerStep::Trying {
                            class: c.why,
                            setting: target.label(),
                            judge: judge.label().to_string(),
                            mean: before.mean,
                            sd: before.sd,
                        };
                        self.setting = target;
                        (
                            note,
                            Stage::Trial {
                                class: c.class,
                                judge,
                                before,
                                fallback,
                                samples: Vec::new(),
                            },
                        )
                    }
                    None => {
                        // Nothing can judge the trial: take the class's
                        // fallback (for memory, Figure 7's "else" state).
                        let fallback = c.class.fallback(self.setting, cfg);
                        let note = TranquilizerStep::NoJudge {
                            class: c.why,
                            fallback: fallback.label(),
                        };
                        self.setting = fallback;
                        (note, hold)
                    }
                };
                self.stage = stage;
                Some(note)
            }
            Stage::Trial {
                class,
                judge,
                before,
                fallback,
                samples,
            } => {
                samples.push(r);
                if samples.len() < cfg.samples {
                    return None;
                }
                let after = Profile::of(samples, *judge);
                let keep = after.is_some_and(|a| improved(*judge, before, &a));
                let tried = self.setting;
                if !keep {
                    self.setting = *fallback;
                }
                let note = TranquilizerStep::Judged {
                    memory: *class == Class::Memory,
                    judge: judge.label().to_string(),
                    after: after.map(|a| (a.mean, a.sd)),
                    tried: tried.label(),
                    keep,
                    now: self.setting.label(),
                };
                self.stage = hold;
                Some(note)
            }
        }
    }
}

/// Whether `after` improved on `before` in both mean and standard deviation
/// (strictly), in `signal`'s better direction.
pub fn improved(signal: Signal, before: &Profile, after: &Profile) -> bool {
    let mean_better = match signal {
        Signal::LlcMisses | Signal::Icx => after.mean < before.mean,
        Signal::Progress => after.mean > before.mean,
    };
    mean_better && after.sd < before.sd
}
