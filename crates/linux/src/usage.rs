//! The cycles of the processes this one starts, over their whole lives: the
//! figure of ReSense's Equation 1 (§2.2) on a real machine with hardware
//! counters, where a characterization run's figure is the total cycles of
//! every thread of the app from its start to its exit.
//!
//! The trace carries an instance's whole-life CPU time (its `exit` event's
//! `usage`, from `wait4` when coloc reaps it), but not its cycles: per-thread
//! samples (`machine/sample.rs`) are taken at epochs, so the last stretch
//! before the exit is lost, as are threads that ended between two samples,
//! and their counters count from the moment coloc first saw a thread. A
//! counter opened on the calling thread with `inherit` set is copied into
//! every thread and process created from then on, and their counts flow back
//! into it when they exit; a second counter without `inherit` counts the
//! calling thread alone, and the difference is the descendants'. Threads this
//! process itself starts meanwhile count as descendants too (the Linux
//! backend's launch helper, well under a millisecond per launch). Measure one
//! run at a time.

use std::io;

use perf_event::events::{Event, Hardware};
use perf_event::{Builder, Counter};

/// The cycles of the children started and reaped between
/// [`CycleMeter::start`] and [`CycleMeter::stop`].
#[derive(Debug)]
pub struct CycleMeter(Inherited);

impl CycleMeter {
    /// Starts counting; an error where the machine has no hardware counters
    /// ([`cycles_available`] says beforehand). Call it on the thread that will
    /// start the children.
    pub fn start() -> io::Result<Self> {
        Inherited::open(Hardware::CPU_CYCLES).map(Self)
    }

    /// The descendants' cycles so far.
    pub fn stop(mut self) -> io::Result<u64> {
        self.0.descendants()
    }
}

/// Cycles cannot be counted here: the kernel's reason.
#[derive(Debug, thiserror::Error)]
#[error("perf_event_open(cycles): {0}")]
pub struct NoCycles(pub io::Error);

/// Whether cycles can be counted here; the kernel's reason when not (most VMs
/// and containers do not expose the PMU).
pub fn cycles_available() -> Result<(), NoCycles> {
    Inherited::open(Hardware::CPU_CYCLES)
        .map(drop)
        .map_err(NoCycles)
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
    use std::time::Duration;

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
                let why = why.to_string();
                assert!(why.starts_with("perf_event_open(cycles): "), "{why}");
                assert!(CycleMeter::start().is_err());
            }
        }
    }
}
