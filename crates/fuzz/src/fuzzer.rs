//! The fuzz loop: mutate a seed, run the target, catch panics, watch for
//! hangs, until the time bound; crashing inputs are written out and counted.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use sha2::{Digest, Sha256};

use crate::mutate::mutate;
use crate::targets::Target;

/// How to fuzz one target.
#[derive(Debug, Clone)]
pub struct Options {
    /// Stop after this long…
    pub time: Duration,
    /// …or this many executions, whichever comes first.
    pub max_execs: u64,
    pub seed: u64,
    /// An execution longer than this is a hang: the input is saved and the
    /// process exits (a hung call cannot be interrupted).
    pub timeout: Duration,
    /// Where crashing inputs go (`<dir>/<target>/<sha256>`); None keeps them
    /// in memory only.
    pub crashes: Option<PathBuf>,
}

/// What a fuzzing session found.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub target: &'static str,
    pub execs: u64,
    /// Distinct crashing inputs, with the panic message of each.
    pub crashes: Vec<(Vec<u8>, String)>,
    pub slowest: Duration,
    pub elapsed: Duration,
}

/// Runs `target` on `input`; the panic message if it panicked.
pub fn run_one(target: &Target, input: &[u8]) -> Option<String> {
    let result = catch_unwind(AssertUnwindSafe(|| (target.run)(input)));
    result.err().map(|p| {
        p.downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "a panic without a message".into())
    })
}

/// Fuzzes `target` under `opts`. Panic messages are kept off stderr while
/// it runs (they are in the report).
pub fn fuzz(target: &'static Target, opts: &Options) -> Report {
    let seeds = (target.seeds)();
    let seeds = if seeds.is_empty() {
        vec![Vec::new()]
    } else {
        seeds
    };
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(opts.seed);
    let mut report = Report {
        target: target.name,
        ..Report::default()
    };
    let current = Arc::new(Mutex::new(Vec::<u8>::new()));
    let started_exec = Arc::new(AtomicU64::new(u64::MAX));
    let t0 = Instant::now();
    let watchdog = spawn_watchdog(target, opts, &current, &started_exec, t0);
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    // Seeds first, as they are.
    let mut queue: Vec<Vec<u8>> = seeds.clone();
    while report.execs < opts.max_execs && t0.elapsed() < opts.time {
        let input = match queue.pop() {
            Some(i) => i,
            None => {
                let a = &seeds[rng.random_range(0..seeds.len())];
                let b = &seeds[rng.random_range(0..seeds.len())];
                mutate(&mut rng, a, b, target.dictionary)
            }
        };
        if opts.timeout < Duration::MAX {
            current.lock().expect("not poisoned").clone_from(&input);
        }
        let start = Instant::now();
        started_exec.store(t0.elapsed().as_millis() as u64, Ordering::SeqCst);
        let outcome = run_one(target, &input);
        started_exec.store(u64::MAX, Ordering::SeqCst);
        report.slowest = report.slowest.max(start.elapsed());
        report.execs += 1;
        if let Some(msg) = outcome {
            if !report.crashes.iter().any(|(c, _)| *c == input) {
                if let Some(dir) = &opts.crashes {
                    save(dir, target.name, &input);
                }
                report.crashes.push((input, msg));
            }
        }
    }
    std::panic::set_hook(hook);
    drop(watchdog);
    report.elapsed = t0.elapsed();
    report
}

/// Writes a crashing input to `<dir>/<target>/<sha256>`; returns its path.
pub fn save(dir: &Path, target: &str, input: &[u8]) -> PathBuf {
    let dir = dir.join(target);
    let _ = std::fs::create_dir_all(&dir);
    let name = format!("{:x}", Sha256::digest(input));
    let path = dir.join(&name[..16]);
    let _ = std::fs::write(&path, input);
    path
}

/// Stops the watchdog thread when dropped.
struct Watchdog(Arc<AtomicU64>);

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.0.store(1, Ordering::SeqCst);
    }
}

fn spawn_watchdog(
    target: &'static Target,
    opts: &Options,
    current: &Arc<Mutex<Vec<u8>>>,
    started_exec: &Arc<AtomicU64>,
    t0: Instant,
) -> Option<Watchdog> {
    if opts.timeout == Duration::MAX {
        return None;
    }
    let done = Arc::new(AtomicU64::new(0));
    let (current, started, stop) = (current.clone(), started_exec.clone(), done.clone());
    let (timeout, crashes) = (opts.timeout, opts.crashes.clone());
    std::thread::spawn(move || {
        while stop.load(Ordering::SeqCst) == 0 {
            std::thread::sleep(Duration::from_millis(100));
            let at = started.load(Ordering::SeqCst);
            if at == u64::MAX {
                continue;
            }
            let running = t0.elapsed().saturating_sub(Duration::from_millis(at));
            if running > timeout {
                let input = current.lock().map(|c| c.clone()).unwrap_or_default();
                let saved = crashes.as_deref().map(|d| save(d, target.name, &input));
                eprintln!(
                    "coloc-fuzz: {}: an input ran for over {timeout:?} (a hang){}",
                    target.name,
                    saved.map_or(String::new(), |p| format!("; saved as {}", p.display()))
                );
                std::process::exit(2);
            }
        }
    });
    Some(Watchdog(done))
}
