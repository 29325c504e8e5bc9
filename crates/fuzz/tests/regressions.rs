//! Every input that once made a target panic, replayed (kept under
//! `regressions/<target>/`), and a short fuzzing session per target from a
//! fixed seed, bounded in time so that CI stays quick.

use std::path::Path;
use std::time::Duration;

use coloc_fuzz::fuzzer::{fuzz, run_one, Options};
use coloc_fuzz::targets::TARGETS;

#[test]
fn inputs_that_once_crashed_a_parser_no_longer_do() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions");
    for t in TARGETS {
        let Ok(entries) = std::fs::read_dir(root.join(t.name)) else {
            continue;
        };
        for e in entries.flatten() {
            let input = std::fs::read(e.path()).unwrap();
            if let Some(msg) = run_one(t, &input) {
                panic!("{}: {} panics: {msg}", t.name, e.path().display());
            }
        }
    }
}

#[test]
fn a_short_fuzzing_session_finds_no_crash() {
    for t in TARGETS {
        let r = fuzz(
            t,
            &Options {
                time: Duration::from_secs(2),
                max_execs: 5_000,
                seed: 7,
                timeout: Duration::MAX,
                crashes: None,
            },
        );
        assert!(r.execs > 0, "{}: nothing ran", t.name);
        let found: Vec<String> = r
            .crashes
            .iter()
            .map(|(input, msg)| format!("{} bytes: {msg}", input.len()))
            .collect();
        assert!(found.is_empty(), "{}: {found:?}", t.name);
    }
}
