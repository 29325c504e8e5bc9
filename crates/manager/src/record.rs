//! Where trace events go: a JSON-lines file, and anything watching the run
//! (progress bars, tests).

use std::io::{self, Write};

use coloc_model::trace::TraceWriter;
use coloc_model::TraceEvent;

/// Receives every trace event, in order.
pub trait Recorder {
    fn record(&mut self, event: &TraceEvent) -> io::Result<()>;
}

impl<W: Write> Recorder for TraceWriter<W> {
    fn record(&mut self, event: &TraceEvent) -> io::Result<()> {
        self.write(event)
    }
}

/// Keeps events in memory (tests, and `compare`, which computes metrics at once).
impl Recorder for Vec<TraceEvent> {
    fn record(&mut self, event: &TraceEvent) -> io::Result<()> {
        self.push(event.clone());
        Ok(())
    }
}
