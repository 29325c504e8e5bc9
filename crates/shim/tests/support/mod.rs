//! Drives the `teams` test program (c/teams.c) one region at a time over
//! stdin/stdout, so tests change the record between regions without timing.

#![allow(dead_code)] // each test file uses its own subset

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// Every region kind teams knows, with the loop iterations the shim can see
/// for it (static schedules and non-loop regions make no call with bounds).
pub const KINDS: [(&str, u64); 9] = [
    ("parallel", 0),
    ("for_static", 0),
    ("for_dynamic", N),
    ("for_guided", N),
    ("for_runtime", N),
    ("sections", 0),
    ("split", 0),
    ("split_loop", N),
    ("combined_loop", N),
];
/// Iterations of every loop in teams.c.
pub const N: u64 = 100_000;

/// The teams program built with clang for LLVM's runtime, or None (with the
/// reason printed) where clang or libomp is not installed.
pub fn llvm_exe(name: &str) -> Option<PathBuf> {
    let exe = Path::new(env!("OUT_DIR")).join(name);
    if exe.exists() {
        Some(exe)
    } else {
        eprintln!(
            "skipped: {} was not built: needs clang and LLVM's libomp (scripts/setup installs them)",
            exe.display()
        );
        None
    }
}

pub fn teams_exe() -> PathBuf {
    let exe = Path::new(env!("OUT_DIR")).join("teams");
    assert!(
        exe.exists(),
        "{} was not built (see the build warning: the C compiler lacks -fopenmp?)",
        exe.display()
    );
    exe
}

/// One "region ..." line.
#[derive(Debug)]
pub struct Region {
    pub kind: String,
    pub team: u32,
    pub members: u32,
    pub ok: bool,
}

#[derive(Debug)]
pub struct Teams {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Teams {
    /// Starts teams with `OMP_NUM_THREADS=threads`, optionally preloading the
    /// shim and naming a record. Inherited OpenMP / preload settings are
    /// cleared so the test's own environment cannot change the outcome.
    pub fn start(threads: u32, shim: Option<&Path>, record: Option<&Path>) -> Self {
        Self::start_exe(&teams_exe(), threads, shim, record)
    }

    /// As [`Teams::start`], with the program built for another runtime.
    pub fn start_exe(exe: &Path, threads: u32, shim: Option<&Path>, record: Option<&Path>) -> Self {
        let mut cmd = Command::new(exe);
        for var in [
            "LD_PRELOAD",
            "COLOC_OMP_RECORD",
            "OMP_DYNAMIC",
            "OMP_PROC_BIND",
            "OMP_PLACES",
            "GOMP_CPU_AFFINITY",
            "OMP_THREAD_LIMIT",
            "OMP_SCHEDULE",
            "OMP_TOOL",
            "OMP_TOOL_LIBRARIES",
            "KMP_AFFINITY",
        ] {
            cmd.env_remove(var);
        }
        cmd.env("OMP_NUM_THREADS", threads.to_string());
        if let Some(shim) = shim {
            cmd.env("LD_PRELOAD", shim);
        }
        if let Some(record) = record {
            cmd.env("COLOC_OMP_RECORD", record);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start teams");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Self {
            child,
            stdin,
            stdout,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn send(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    pub fn line(&mut self) -> String {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        assert!(!line.is_empty(), "teams exited early");
        line.trim_end().to_string()
    }

    /// Runs one region of `kind` and parses its report.
    pub fn region(&mut self, kind: &str) -> Region {
        self.send(kind);
        parse_region(&self.line())
    }

    /// The app's threads, main thread first.
    fn tids(&self) -> Vec<u32> {
        let pid = self.pid();
        let mut tids: Vec<u32> = std::fs::read_dir(format!("/proc/{pid}/task"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_str().unwrap().parse().unwrap())
            .collect();
        tids.sort_by_key(|&t| (t != pid, t));
        tids
    }

    /// `Cpus_allowed_list` of every thread, main thread first.
    pub fn thread_cpus(&self) -> Vec<String> {
        let pid = self.pid();
        self.tids()
            .iter()
            .map(|t| cpus_allowed(&format!("/proc/{pid}/task/{t}/status")))
            .collect()
    }

    /// Every thread's memory policy, main thread first, as the kernel shows
    /// it in the thread's `numa_maps` for a mapping without a policy of its
    /// own (the first one, the program's text): the thread's policy for new
    /// allocations, `default` or `interleave:NODES`.
    pub fn thread_mempolicies(&self) -> Vec<String> {
        let pid = self.pid();
        self.tids()
            .iter()
            .map(|t| {
                let maps = std::fs::read_to_string(format!("/proc/{pid}/task/{t}/numa_maps"))
                    .expect("numa_maps (a kernel with CONFIG_NUMA)");
                let first = maps.lines().next().expect("a mapping");
                first.split_whitespace().nth(1).unwrap().to_string()
            })
            .collect()
    }
}

impl Drop for Teams {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "quit");
        let _ = self.stdin.flush();
        let _ = self.child.wait();
    }
}

pub fn parse_region(line: &str) -> Region {
    let words: Vec<&str> = line.split_whitespace().collect();
    let field = |name: &str| {
        let i = words.iter().position(|w| *w == name);
        words[i.unwrap_or_else(|| panic!("no {name} in {line:?}")) + 1]
    };
    assert_eq!(words.first(), Some(&"region"), "{line}");
    Region {
        kind: field("kind").to_string(),
        team: field("team").parse().unwrap(),
        members: field("members").parse().unwrap(),
        ok: words.last() == Some(&"ok"),
    }
}

/// The `Cpus_allowed_list:` value of a /proc status file.
pub fn cpus_allowed(status: &str) -> String {
    std::fs::read_to_string(status)
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .expect("Cpus_allowed_list in status")
        .trim()
        .to_string()
}
