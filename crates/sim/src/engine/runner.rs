//! The runnable threads of one interval as the contention model sees them
//! (docs/simulator.md, The engine): where each runs and its data lives, and
//! the teams they form.

use super::layout::CpuIdx;
use crate::model::AppModel;

/// Where a thread's data lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Home {
    Node(usize),
    /// Pages spread round-robin over every memory node.
    Interleave,
}

/// A runnable thread, as the model sees it.
#[derive(Clone, Debug)]
pub(crate) struct Runner<'a> {
    pub team: usize,
    pub cpu: CpuIdx,
    pub model: &'a AppModel,
    pub weight: f64,
    pub private_home: Home,
    pub shared_home: Home,
}

/// The runnable threads of one app in one phase.
#[derive(Clone, Debug)]
pub(crate) struct Team {
    /// Indices into the runners.
    pub members: Vec<usize>,
    pub parallel: bool,
    /// Time slice of the app's threads, seconds.
    pub slice_s: f64,
    /// Whether its threads wait passively (sleep) at barriers: libgomp
    /// throttles its spinning when it starts with more threads than CPUs in
    /// its affinity mask, and a program of plain threads sleeps in
    /// `pthread_barrier_wait`, so a waiter gives its CPU up at once instead
    /// of spinning until the teammate it waits for is scheduled again.
    pub passive: bool,
}
