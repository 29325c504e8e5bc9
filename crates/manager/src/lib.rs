//! The Manager (DESIGN.md, The loop): it owns time, starts apps at their arrival
//! times, asks the policy on every event and epoch, applies plans through a
//! [`Machine`], and records everything in the trace.

pub mod machine;

pub use machine::{LaunchRequest, Launched, Machine, MachineError, MachineEvent};
