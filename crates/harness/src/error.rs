//! The harness's errors: each names the file or the run and the field at
//! fault.

use std::io;
use std::path::PathBuf;

use coloc_model::trace::TraceError;
use coloc_model::user_file::UserFileError;

/// Why a harness step failed.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// A file the user named (a trace) could not be opened as one.
    #[error(transparent)]
    File(#[from] UserFileError),
    /// A trace file is not a trace this coloc reads.
    #[error("reading {}", path.display())]
    Trace {
        path: PathBuf,
        #[source]
        source: TraceError,
    },
    /// A procedure's manifest could not be read.
    #[error("reading {} (the directory of a run of the command holds it)", path.display())]
    ReadManifest {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A procedure's manifest is not the JSON it should be.
    #[error("reading {}", path.display())]
    Manifest {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// A value could not be written as JSON.
    #[error("writing {}", path.display())]
    ToJson {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// A directory or file could not be made or written.
    #[error("{what} {}", path.display())]
    Write {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A planned run names an app the workload does not have.
    #[error("run {run}: no app \"{app}\"")]
    NoApp { run: String, app: String },
    /// A planned run appends arguments to an app without a `command`.
    #[error("run {run}: app \"{app}\" has no command for the arguments {args:?}")]
    NoCommand {
        run: String,
        app: String,
        args: Vec<String>,
    },
}
