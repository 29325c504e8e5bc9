//! Where text for people goes. Run directories and trace files are made by
//! the harness ([`coloc_harness::output`]).

use std::io::{self, Write};

/// Where text for people goes: stdout, or stderr when stdout carries JSON.
pub fn text_out(json: bool) -> Box<dyn Write> {
    if json {
        Box::new(io::stderr())
    } else {
        Box::new(io::stdout())
    }
}
