//! An app's own metric read live (docs/signals.md): the workload's `metric`
//! regex applied to each line of the app's output as it appears, so that a
//! policy judging mappings by the app's metric (AToM, Tang et al. §5.2) reads
//! throughput or latency that a service prints periodically, not only the
//! figure it prints at exit.
//!
//! The output file (the app's captured standard output, or its metric file) is
//! read from where the last poll stopped, without blocking; a line still
//! being written is kept until its newline arrives. Each complete line is
//! matched on its own; the last match is the value, and the count of matching
//! lines tells a reader whether a new value arrived.

use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

use coloc_model::MetricSample;
use regex::Regex;

/// Most bytes one poll reads; a faster writer is caught up over later polls.
const MAX_READ: u64 = 1 << 20;

#[derive(Debug)]
pub(crate) struct LiveMetric {
    path: PathBuf,
    regex: Regex,
    offset: u64,
    partial: String,
    last: Option<MetricSample>,
}

impl LiveMetric {
    /// None when the regex does not compile (the workload parser has already
    /// refused such a file; a spec built in code is read at exit only).
    pub fn new(path: PathBuf, regex: &str) -> Option<Self> {
        Some(Self {
            path,
            regex: Regex::new(regex).ok()?,
            offset: 0,
            partial: String::new(),
            last: None,
        })
    }

    /// The metric as of now: new complete lines since the last poll matched.
    /// An unreadable or non-regular file leaves the last reading as it was.
    pub fn poll(&mut self) -> Option<MetricSample> {
        if let Ok(text) = self.read_new() {
            self.partial.push_str(&text);
            let complete = match self.partial.rfind('\n') {
                Some(end) => {
                    let rest = self.partial.split_off(end + 1);
                    std::mem::replace(&mut self.partial, rest)
                }
                None => String::new(),
            };
            for line in complete.lines() {
                self.feed(line);
            }
        }
        self.last
    }

    fn feed(&mut self, line: &str) {
        let value = self
            .regex
            .captures(line)
            .and_then(|c| c.get(1))
            .and_then(|m| m.as_str().trim().parse::<f64>().ok())
            .filter(|v| v.is_finite());
        if let Some(value) = value {
            let lines = self.last.map_or(0, |m| m.lines) + 1;
            self.last = Some(MetricSample { value, lines });
        }
    }

    fn read_new(&mut self) -> std::io::Result<String> {
        let (mut file, len) =
            coloc_model::user_file::open_regular(&self.path).map_err(|e| e.into_io())?;
        if len < self.offset {
            // Truncated and rewritten: start over.
            self.offset = 0;
            self.partial.clear();
        }
        file.seek(SeekFrom::Start(self.offset))?;
        let mut bytes = Vec::new();
        file.take(MAX_READ).read_to_end(&mut bytes)?;
        self.offset += bytes.len() as u64;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    /// Lines are matched as they arrive; a half-written line waits for its
    /// newline; the count says how many matched.
    #[test]
    fn reads_each_line_as_it_appears() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let mut f = std::fs::File::create(&path).unwrap();
        let mut m = LiveMetric::new(path.clone(), r"ops=([0-9.]+)").unwrap();
        assert_eq!(m.poll(), None);
        write!(f, "start\nops=10\nops=1").unwrap();
        assert_eq!(
            m.poll(),
            Some(MetricSample {
                value: 10.0,
                lines: 1
            })
        );
        write!(f, "2\nnoise\n").unwrap();
        assert_eq!(
            m.poll(),
            Some(MetricSample {
                value: 12.0,
                lines: 2
            })
        );
        assert_eq!(
            m.poll(),
            Some(MetricSample {
                value: 12.0,
                lines: 2
            })
        );
        writeln!(f, "ops=7.5").unwrap();
        assert_eq!(
            m.poll(),
            Some(MetricSample {
                value: 7.5,
                lines: 3
            })
        );
    }
}
