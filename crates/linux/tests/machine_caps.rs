//! Thread caps at launch (`cap_threads`, docs/workload-format.md): runtimes
//! that size their pools once, when they start, get the team the plan chose
//! through their variables. Checked from /proc: OpenBLAS' pthreads build
//! starts that many threads; a JVM's ForkJoinPool sized by the processors it
//! sees has that many workers. Each skips, saying why, where its runtime is
//! not installed (scripts/setup installs OpenBLAS' pthreads build and
//! default-jre-headless). About 15 s, most of it the JVM compiling the test's
//! source and starting.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use coloc_manager::Machine;
use coloc_model::reason::levers::Runtime;
use coloc_model::{AppPlan, AppSpec};
use coloc_shim::{threaded_runtimes_of, Threaded};
use support::*;

const OPENBLAS_PTHREADS: &str = "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0";

/// A program linked with OpenBLAS' pthreads build that says how many
/// threads OpenBLAS runs and stays alive a few seconds.
fn openblas_program(dir: &Path) -> Option<PathBuf> {
    if !Path::new(OPENBLAS_PTHREADS).exists() {
        eprintln!("skipped: {OPENBLAS_PTHREADS} is missing (libopenblas0-pthread; scripts/setup installs it)");
        return None;
    }
    let src = dir.join("ob.c");
    std::fs::write(
        &src,
        "#include <stdio.h>\n#include <unistd.h>\nint openblas_get_num_threads(void);\n\
         int main(void){printf(\"openblas threads %d\\n\",openblas_get_num_threads());\
         fflush(stdout);sleep(4);return 0;}\n",
    )
    .unwrap();
    let exe = dir.join("ob");
    let lib_dir = Path::new(OPENBLAS_PTHREADS).parent().unwrap();
    let ok = Command::new("cc")
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .arg(OPENBLAS_PTHREADS)
        .arg(format!("-Wl,-rpath,{}", lib_dir.display()))
        .status()
        .unwrap()
        .success();
    assert!(ok, "cc against OpenBLAS");
    Some(exe)
}

fn app(name: &str, argv: Vec<String>, cap: bool) -> AppSpec {
    AppSpec {
        cap_threads: cap,
        ..AppSpec::program(name, argv, 2)
    }
}

/// `name` on PATH.
fn which(name: &str) -> PathBuf {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{name} not on PATH"))
}

/// Comm names of the threads of `pid`.
fn comms(pid: u32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.flatten()
                .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
                .map(|c| c.trim_end().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Waits (up to `limit`) until `count` of the process's threads reaches
/// `want` and stays there for 300 ms; returns the last count.
fn settle(pid: u32, limit: Duration, count: impl Fn(&[String]) -> usize, want: usize) -> usize {
    let until = Instant::now() + limit;
    let mut since: Option<Instant> = None;
    loop {
        let n = count(&comms(pid));
        since = if n == want {
            since.or(Some(Instant::now()))
        } else {
            None
        };
        if since.is_some_and(|s| s.elapsed() > Duration::from_millis(300)) || Instant::now() > until
        {
            return n;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// OpenBLAS' pthreads build runs as many threads (the caller's included) as
/// the plan's DoP at launch, 1 or 2; without `cap_threads` it takes every
/// CPU it may use (2 here). coloc finds the build in the program.
#[test]
fn openblas_pthreads_runs_the_team_it_was_given_at_launch() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = openblas_program(dir.path()) else {
        return;
    };
    let read = |p: &Path| std::fs::read(p);
    assert_eq!(
        threaded_runtimes_of(&exe, &read).unwrap(),
        [Threaded::OpenBlasPthreads]
    );
    let allowed = coloc_linux::topology::allowed_cpus().unwrap().len();
    let argv = vec![exe.to_str().unwrap().to_string()];
    let mut m = machine(dir.path());
    let cases = [(true, 1), (true, 2), (false, allowed)];
    for (k, (cap, want)) in cases.into_iter().enumerate() {
        let spec = app(&format!("ob{k}"), argv.clone(), cap);
        let plan = AppPlan {
            dop: Some(want as u32),
            ..AppPlan::native(id(k as u32))
        };
        let l = launch(&mut m, id(k as u32), &spec, &plan);
        // The launch says what it found and the team it capped.
        let levers = l
            .levers
            .as_ref()
            .expect("every launched program is checked");
        assert_eq!(levers.runtimes, [Runtime::OpenBlasPthreads]);
        assert_eq!(levers.caps, cap.then_some(want as u32));
        assert_eq!(levers.uncapped().is_empty(), cap);
        let n = settle(l.pid, Duration::from_secs(3), |c| c.len(), want);
        assert_eq!(
            n,
            want,
            "cap_threads {cap}, DoP {want}: threads {:?}",
            comms(l.pid)
        );
    }
    m.finish().unwrap();
}

/// A JVM started with the team in `-XX:ActiveProcessorCount` (added to
/// JAVA_TOOL_OPTIONS) sizes its default ForkJoinPool to it: the program
/// submits one task per processor the JVM sees and keeps them running, and
/// /proc shows that many `ForkJoinPool-1-…` threads, 1 and then 2.
#[test]
fn a_jvm_sees_the_team_as_its_processor_count() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("Pool.java"),
        "import java.util.concurrent.*;\npublic class Pool { public static void main(String[] a) throws Exception {\n\
         int n = Runtime.getRuntime().availableProcessors();\nForkJoinPool pool = new ForkJoinPool(n);\n\
         CountDownLatch go = new CountDownLatch(n);\nfor (int i = 0; i < n; i++) pool.submit(() -> { go.countDown();\n\
         try { go.await(); Thread.sleep(6000); } catch (InterruptedException e) {} });\n\
         go.await(); System.out.println(\"workers \" + n); Thread.sleep(6000); } }\n",
    )
    .unwrap();
    // The launcher runs a single source file itself (Java 11 and later):
    // the JRE is enough, no javac.
    match Command::new("java").arg("-version").output() {
        Ok(o) if o.status.success() => {}
        other => {
            eprintln!("skipped: java is not available ({other:?}); scripts/setup installs default-jre-headless");
            return;
        }
    }
    let source = d.join("Pool.java");
    let argv = ["java".to_string(), source.to_str().unwrap().to_string()].to_vec();
    let read = |p: &Path| std::fs::read(p);
    let java = std::fs::canonicalize(which("java")).unwrap();
    assert_eq!(threaded_runtimes_of(&java, &read).unwrap(), [Threaded::Jvm]);
    let mut m = machine(d);
    for (k, team) in [1usize, 2].into_iter().enumerate() {
        let spec = app(&format!("jvm{k}"), argv.clone(), true);
        let plan = AppPlan {
            dop: Some(team as u32),
            ..AppPlan::native(id(k as u32))
        };
        let l = launch(&mut m, id(k as u32), &spec, &plan);
        let workers = |c: &[String]| {
            c.iter()
                .filter(|n| n.starts_with("ForkJoinPool-1-"))
                .count()
        };
        let n = settle(l.pid, Duration::from_secs(30), workers, team);
        assert_eq!(n, team, "team {team}: threads {:?}", comms(l.pid));
    }
    m.finish().unwrap();
}
