//! Where and how a command's runs go, for the procedures that make several
//! ([`crate::solo::Solo`], [`crate::compare::Compare`]: the same fields, each
//! module its own methods).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::watch::Watch;
use crate::Target;

/// The machine the runs go on, the flag a signal sets to stop them, what
/// watches them, and whether they read the knowledge store and add to it
/// (docs/knowledge.md: each solo run stored as its program's record, each
/// comparison run learned; without, nothing stored is read or written).
#[derive(Clone, Copy, Debug)]
pub struct Runs<'a> {
    pub target: &'a Target,
    pub stop: &'a Arc<AtomicBool>,
    pub watch: &'a dyn Watch,
    pub learn: bool,
}
