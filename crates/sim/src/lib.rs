//! The simulator (docs/simulator.md): modeled platforms, app
//! models, a fluid event-driven contention engine and [`SimMachine`], the
//! backend that lets the Manager and every policy run unchanged in simulated time.

pub mod platform;

pub use platform::{platform, platforms, Params, Platform, PlatformFile};
pub mod model;
pub use model::{AppModel, Phase, PhaseKind};
pub mod engine;
pub use engine::{AppLaunch, Engine, EngineEvent};
pub mod machine;
pub use machine::SimMachine;
pub mod calibrate;
pub mod characterize;
pub mod earlier;
pub mod gen;
pub mod oracle;
pub mod papers;
pub mod search;
