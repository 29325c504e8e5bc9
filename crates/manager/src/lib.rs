//! The Manager (docs/architecture.md, The loop): it owns time, starts apps at their arrival
//! times, asks the policy on every event and epoch, applies plans through a
//! [`Machine`], and records everything in the trace.

pub mod conservation;
pub mod record;
pub mod run;

pub use coloc_machine::{LaunchRequest, Launched, Machine, MachineError, MachineEvent};
pub use conservation::{waste_of, Waste, WasteSeen, WasteTally};
pub use record::Recorder;
pub use run::{run, serve, Inbox, ManagerError, RunOptions, RunSummary, DEFAULT_EPOCH};
