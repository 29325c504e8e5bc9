//! Lock-bound teams (docs/simulator.md, The engine, Teams): a pthread mutex
//! serializes its critical sections across the CPUs the team runs on, its
//! waiters sleep in the kernel (futex) instead of spinning, and a critical
//! section taken over from a holder on another CPU first moves the lock's
//! lines between the two private caches.
//!
//! - **Serialization**: with `k` distinct CPUs contending and a fraction `s` of
//!   the work inside the lock, each member needs `τ (1 + s (k − 1))` seconds
//!   per instruction, `τ` its own time per instruction on a CPU of its own
//!   (Amdahl's law over the contenders). Teammates time-sharing one CPU are
//!   serialized by that CPU already, so they count once.
//! - **Sleeping waiters**: of that time a member is on its CPU only for its own
//!   work and its transfers; the rest it sleeps, so it asks for that fraction
//!   of its CPU (its *demand*) and leaves the remainder to co-runners
//!   (`contention::cpu_shares` fills CPUs up to each runner's demand). A
//!   member that gets less than its demand progresses in proportion.
//! - **Handoffs**: a waiter alone on its CPU is woken at once when the lock is
//!   released and competes for it, so with `d` such contenders the next holder
//!   is on another CPU `(d − 1) / d` of the time, and each such handoff moves
//!   [`HANDOFF_LINES`] lines at the transfer latency between the two CPUs
//!   (`xfer_near_ns` within a package, `xfer_far_ns` across). A waiter
//!   time-sharing its CPU with another app waits for its turn after the
//!   wake-up, meanwhile the holder takes the lock back without a transfer, so
//!   it adds no handoffs. These transfers happen while holding the lock, so
//!   they are serialized too.

use super::layout::{CpuIdx, Layout};
use super::runner::{Runner, Team};
use crate::platform::Params;

/// Lines a critical section taken over from another CPU moves: the mutex's
/// word and the data it protects (kernel:lock's counter and state), one after
/// the other (the data is touched only once the lock is held).
pub(crate) const HANDOFF_LINES: f64 = 2.0;

/// A team's lock, as the contention model needs it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Lock {
    /// Fraction of the work inside the lock.
    fraction: f64,
    /// Distinct CPUs the team runs on: the contenders.
    contenders: usize,
    /// Seconds of line transfers per instruction of a member.
    handoff_pi: f64,
}

impl Lock {
    /// The lock of `team` (none unless it is a parallel team of two or more
    /// threads): its contenders, and its handoffs per instruction from the
    /// CPUs where a teammate runs with no other app's thread beside it.
    pub(crate) fn of(
        layout: &Layout,
        params: &Params,
        runners: &[Runner<'_>],
        team: &Team,
    ) -> Option<Self> {
        if !team.parallel || team.members.len() < 2 {
            return None;
        }
        let m = runners[team.members[0]].model;
        let mut cpus: Vec<CpuIdx> = team.members.iter().map(|&j| runners[j].cpu).collect();
        cpus.sort_unstable();
        cpus.dedup();
        let own = |c: CpuIdx| {
            runners
                .iter()
                .filter(|r| r.cpu == c)
                .all(|r| r.team == runners[team.members[0]].team)
        };
        let alone: Vec<CpuIdx> = cpus.iter().copied().filter(|&c| own(c)).collect();
        let d = alone.len();
        let handoff_pi = if d < 2 {
            0.0
        } else {
            let mut sum = 0.0;
            for &a in &alone {
                for &b in alone.iter().filter(|&&b| b != a) {
                    sum += if layout.package[a] == layout.package[b] {
                        params.xfer_near_ns
                    } else {
                        params.xfer_far_ns
                    };
                }
            }
            let latency_s = sum / (d * (d - 1)) as f64 * 1e-9;
            let handoffs = (d - 1) as f64 / d as f64;
            m.lock_acquires_per_ginstr * 1e-9 * handoffs * HANDOFF_LINES * latency_s
        };
        Some(Self {
            fraction: m.lock_fraction,
            contenders: cpus.len(),
            handoff_pi,
        })
    }

    /// A member's seconds per instruction on a CPU of its own, given `tau`,
    /// its time per instruction outside the lock's waits.
    pub(crate) fn time_pi(&self, tau: f64) -> f64 {
        let k = self.contenders as f64;
        tau * (1.0 + self.fraction * (k - 1.0)) + k * self.handoff_pi
    }

    /// The fraction of its CPU a member uses, the rest sleeping in the futex.
    pub(crate) fn demand(&self, tau: f64) -> f64 {
        ((tau + self.handoff_pi) / self.time_pi(tau)).min(1.0)
    }
}
