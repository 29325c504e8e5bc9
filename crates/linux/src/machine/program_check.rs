//! What the program check found about an app's program (`dop::check_program`),
//! read by the DoP control and by the levers report (`levers.rs`).

use std::path::PathBuf;

use coloc_shim::{OmpRuntime, Threaded};

/// What the program check found about an app's program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramCheck {
    /// The program as found on `PATH` (None: not found).
    pub exe: Option<PathBuf>,
    /// Its OpenMP runtime, or why it could not be told. The why is text on
    /// purpose: it becomes the levers report's `NoChannel::Failed { error }`
    /// (in the trace and the daemon's status), and a check made as the
    /// app's user on a thread of the daemon's (`coloc_daemon`) comes back
    /// as a value that is cloned and compared, which an `io::Error` cannot be.
    pub found: Result<OmpRuntime, String>,
    /// The other threaded runtimes in it (docs/signals.md, Runtimes and
    /// levers); none when it could not be read.
    pub threaded: Vec<Threaded>,
}

impl ProgramCheck {
    /// A check that could not tell anything, and why.
    pub fn failed(why: String) -> Self {
        Self {
            exe: None,
            found: Err(why),
            threaded: Vec::new(),
        }
    }
}
