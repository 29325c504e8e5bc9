//! What the processes this one starts consume over their whole lives: the
//! measurement behind ReSense's Equation 1 (§2.2) on a real machine, where a
//! characterization run's figure is the total cycles (or, without counters, the
//! total CPU time) of every thread of the app from its start to its exit.
//!
//! Per-thread samples (`machine/sample.rs`) cannot give that: they are taken at
//! epochs, so the last stretch before the exit is lost, as are threads that
//! ended between two samples, and hardware counters there count from the
//! moment coloc first saw a thread. Two whole-life measures have neither gap:
//!
//! - **task-clock**: the kernel adds the CPU time (user + system) of every
//!   thread of a child, and of the children it reaped, to its parent's
//!   `RUSAGE_CHILDREN` when the parent reaps it. The difference over a run is
//!   the app's total CPU time, exactly, provided nothing else this process
//!   started is reaped meanwhile: measure one run at a time.
//! - **cycles**, where the machine has hardware counters: a counter opened on
//!   the calling thread with `inherit` set is copied into every thread and
//!   process created from then on, and their counts flow back into it when
//!   they exit; a second counter without `inherit` counts the calling thread
//!   alone, and the difference is the descendants'. Threads this process itself
//!   starts meanwhile count as descendants too (the Linux backend's launch
//!   helper, well under a millisecond per launch).

use std::io;
use std::time::Duration;

use nix::sys::resource::{getrusage, UsageWho};
use perf_event::events::{Event, Hardware};
use perf_event::{Builder, Counter};

/// What the children reaped during a measurement consumed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChildUsage {
    /// CPU time of all their threads (task-clock).
    pub cpu: Duration,
    /// Their cycles, when they were counted.
    pub cycles: Option<u64>,
}

/// Why a measurement failed.
#[derive(Debug, thiserror::Error)]
pub enum UsageError {
    #[error("getrusage(RUSAGE_CHILDREN)")]
    Rusage(#[source] nix::Error),
    #[error("counting cycles: perf_event_open")]
    Counter(#[source] io::Error),
}

/// A measurement of the children started and reaped between [`ChildMeter::start`]
/// and [`ChildMeter::stop`].
#[derive(Debug)]
pub struct ChildMeter {
    cpu_at_start: Duration,
    cycles: Option<Inherited>,
}

impl ChildMeter {
    /// Starts a measurement, counting cycles too when `cycles` is set (an error
    /// where the machine has no hardware counters: [`cycles_available`] says
    /// beforehand). Call it on the thread that will start the children.
    pub fn start(cycles: bool) -> Result<Self, UsageError> {
        let cycles = if cycles {
            Some(Inherited::open(Hardware::CPU_CYCLES).map_err(UsageError::Counter)?)
        } else {
            None
        };
        Ok(Self {
            cpu_at_start: children_cpu()?,
            cycles,
        })
    }

    /// Ends the measurement.
    pub fn stop(mut self) -> Result<ChildUsage, UsageError> {
        let cycles = match &mut self.cycles {
            Some(c) => Some(c.descendants().map_err(UsageError::Counter)?),
            None => None,
        };
        Ok(ChildUsage {
            cpu: children_cpu()?.saturating_sub(self.cpu_at_start),
            cycles,
        })
    }
}

/// Whether cycles can be counted here; the kernel's reason when not (most VMs
/// and containers do not expose the PMU).
pub fn cycles_available() -> Result<(), String> {
    Inherited::open(Hardware::CPU_CYCLES)
        .map(drop)
        .map_err(|e| format!("perf_event_open(cycles): {e}"))
}

/// CPU time of every child reaped so far.
fn children_cpu() -> Result<Duration, UsageError> {
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN).map_err(UsageError::Rusage)?;
    let tv = |t: nix::sys::time::TimeVal| {
        Duration::new(t.tv_sec().max(0) as u64, t.tv_usec().max(0) as u32 * 1000)
    };
    Ok(tv(usage.user_time()) + tv(usage.system_time()))
}

/// One event counted on the calling thread and everything it starts from now
/// on (`all`), and on the calling thread alone (`own`).
#[derive(Debug)]
struct Inherited {
    all: Counter,
    own: Counter,
}

impl Inherited {
    fn open<E: Event + Copy>(event: E) -> io::Result<Self> {
        let open = |inherit: bool| -> io::Result<Counter> {
            let mut c = Builder::new(event)
                .observe_self()
                .any_cpu()
                .inherit(inherit)
                .build()?;
            c.enable()?;
            Ok(c)
        };
        Ok(Self {
            own: open(false)?,
            all: open(true)?,
        })
    }

    /// The count of the descendants, scaled for the time the kernel had to
    /// multiplex the counter off the hardware.
    fn descendants(&mut self) -> io::Result<u64> {
        let all = scaled(&mut self.all)?;
        let own = scaled(&mut self.own)?;
        Ok(all.saturating_sub(own))
    }
}

/// A counter's value extrapolated to the whole time it was enabled.
fn scaled(c: &mut Counter) -> io::Result<u64> {
    let v = c.read_count_and_time()?;
    Ok(if v.time_running == 0 {
        0
    } else if v.time_running < v.time_enabled {
        (u128::from(v.count) * u128::from(v.time_enabled) / u128::from(v.time_running)) as u64
    } else {
        v.count
    })
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use perf_event::events::Software;

    use super::*;

    /// A shell busy for a moment, as a child of this thread.
    fn busy_child() -> Command {
        let mut c = Command::new("sh");
        c.args(["-c", "i=0; while [ $i -lt 60000 ]; do i=$((i+1)); done"]);
        c
    }

    /// Reaps `child` and returns its own CPU time (wait4's rusage: that child
    /// alone, whatever other tests of this binary reap meanwhile).
    fn reap(child: std::process::Child) -> Duration {
        let mut status = 0;
        // SAFETY: an all-zero rusage is a valid value of the plain C struct.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: wait4 writes only to the two locals passed by pointer; the pid
        // is our unreaped child.
        let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
        assert_eq!(pid, child.id() as i32, "{}", io::Error::last_os_error());
        let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
        tv(usage.ru_utime) + tv(usage.ru_stime)
    }

    /// The meter's task-clock covers the child it saw reaped (other tests may
    /// reap children of their own meanwhile, which can only add).
    #[test]
    fn task_clock_covers_reaped_children() {
        let meter = ChildMeter::start(false).unwrap();
        let own = reap(busy_child().spawn().unwrap());
        let got = meter.stop().unwrap();
        assert!(own > Duration::ZERO, "the child used no CPU time");
        assert!(
            got.cpu >= own,
            "meter {:?} < the child's own {own:?}",
            got.cpu
        );
        assert_eq!(got.cycles, None);
    }

    /// The inherited-counter path, with the software task clock every machine
    /// has: the descendants' count agrees with the child's CPU time from wait4
    /// (both in ns; the launch in this thread is not counted as the child's).
    #[test]
    fn inherited_counter_counts_the_children_only() {
        let mut counter = match Inherited::open(Software::TASK_CLOCK) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("skipped: perf_event_open refuses software events here: {e}");
                return;
            }
        };
        let own = reap(busy_child().spawn().unwrap());
        let counted = Duration::from_nanos(counter.descendants().unwrap());
        let diff = counted.abs_diff(own);
        assert!(
            diff <= own / 10 + Duration::from_millis(5),
            "counter {counted:?}, wait4 {own:?}"
        );
    }

    #[test]
    fn cycles_probe_says_why_when_there_are_none() {
        match cycles_available() {
            Ok(()) => eprintln!("this machine counts cycles; the fallback is not exercised"),
            Err(why) => {
                assert!(why.starts_with("perf_event_open(cycles): "), "{why}");
                assert!(matches!(
                    ChildMeter::start(true),
                    Err(UsageError::Counter(_))
                ));
            }
        }
    }
}
