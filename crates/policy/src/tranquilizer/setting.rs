//! The settings Thread Tranquilizer moves an app between (TACO 2012 §3): its
//! memory placement and its time slice.

use coloc_model::{MemPolicy, SchedSettings};

/// The memory and scheduling settings Tranquilizer gives an app.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Setting {
    pub memory: MemPolicy,
    /// The fixed slice (Solaris FX quantum), µs; None = the default (TS).
    pub slice_us: Option<u32>,
}

impl Setting {
    /// As a plan's scheduling settings: FX is one priority for every thread
    /// with the fixed slice. The priority is the one the app's threads already
    /// share (a thread inherits its creator's nice), not nice 0: an app its
    /// user started under `nice` must not be raised above what the user chose
    /// (and above an agent running at that nice, which would then lag).
    pub fn sched(&self) -> SchedSettings {
        SchedSettings {
            nice: None,
            slice_us: self.slice_us,
        }
    }

    /// For the trace: `interleave + 100 ms slice`, `default`.
    pub fn label(&self) -> String {
        let mem = match self.memory {
            MemPolicy::Default => None,
            MemPolicy::Local => Some("local memory"),
            MemPolicy::Interleave => Some("interleave"),
        };
        let slice = self.slice_us.map(|us| format!("{} ms slice", us / 1000));
        match (mem, slice) {
            (None, None) => "default".into(),
            (Some(m), None) => m.into(),
            (None, Some(s)) => s,
            (Some(m), Some(s)) => format!("{m} + {s}"),
        }
    }
}
