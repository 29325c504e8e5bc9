//! Trace files read back (docs/trace-format.md).

use std::io::BufReader;
use std::path::Path;

use coloc_model::Trace;

use crate::HarnessError;

/// Reads a trace file and checks its app indices ([`Trace::check_app_indices`]).
pub fn read_trace(path: &Path) -> Result<Trace, HarnessError> {
    let (file, _) = coloc_model::user_file::open_regular(path)?;
    let bad = |source| HarnessError::Trace {
        path: path.to_path_buf(),
        source,
    };
    let trace = Trace::read(BufReader::new(file)).map_err(bad)?;
    trace.check_app_indices().map_err(bad)?;
    Ok(trace)
}
