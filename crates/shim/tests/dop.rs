//! The DoP channel end to end: the teams program under libcoloc_omp.so with a
//! record that the test changes between regions over the stdin handshake.

mod support;

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use coloc_shim::{monotonic_ns, shim_path, DopChannel, STALE_NS};
use support::{cpus_allowed, Teams, KINDS, N};

fn record_in(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("coloc-test-app")
}

fn shim() -> PathBuf {
    shim_path().expect("extract the shim")
}

/// Runs every kind once and asserts its team size and checksum.
fn every_kind_has_team(teams: &mut Teams, team: u32) {
    for (kind, _) in KINDS {
        let r = teams.region(kind);
        assert_eq!(r.kind, kind);
        assert_eq!(r.team, team, "{r:?}");
        assert!(r.ok, "checksum wrong: {r:?}");
        // Every member of a plain region works; with dynamic schedules or
        // sections a member may find nothing left to do.
        if matches!(kind, "parallel" | "split") {
            assert_eq!(r.members, team, "{r:?}");
        } else {
            assert!((1..=team).contains(&r.members), "{r:?}");
        }
    }
}

#[test]
fn without_the_shim_team_is_omp_num_threads() {
    for threads in [1, 2, 3] {
        let mut teams = Teams::start(threads, None, None);
        every_kind_has_team(&mut teams, threads);
    }
}

#[test]
fn shim_without_a_record_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut teams = Teams::start(2, Some(&shim()), None);
    every_kind_has_team(&mut teams, 2);
    let mut teams = Teams::start(2, Some(&shim()), Some(&record_in(&dir)));
    every_kind_has_team(&mut teams, 2);
}

#[test]
fn dop_1_then_2_for_every_kind_of_region() {
    let dir = tempfile::tempdir().unwrap();
    let mut chan = DopChannel::create(&record_in(&dir), &[], 1).unwrap();
    let mut teams = Teams::start(2, Some(&shim()), Some(chan.path()));
    every_kind_has_team(&mut teams, 1);
    assert_eq!(chan.read().generation_seen, chan.generation());
    chan.set(2, &[]).unwrap();
    every_kind_has_team(&mut teams, 2);
    assert_eq!(chan.read().generation_seen, chan.generation());
    chan.set(1, &[]).unwrap();
    every_kind_has_team(&mut teams, 1);
}

#[test]
fn team_is_the_minimum_of_requested_and_dop() {
    let dir = tempfile::tempdir().unwrap();
    // Oversubscribing the 2-CPU machine is fine here: only team sizes count.
    let mut chan = DopChannel::create(&record_in(&dir), &[], 3).unwrap();
    let mut teams = Teams::start(4, Some(&shim()), Some(chan.path()));
    assert_eq!(teams.region("parallel").team, 3);
    chan.set(8, &[]).unwrap();
    assert_eq!(teams.region("parallel").team, 4);
}

/// OpenBLAS' pattern (teams.c `blas`): a program that sizes its team by
/// `omp_get_max_threads()` and passes it back as `num_threads(n)`, with parts
/// that wait on one another. The shim honours the explicit clause (capping it
/// to a DoP of 1 left one thread spinning on a part no thread would run: the
/// livelock seen with OpenBLAS) and answers `omp_get_max_threads()` with the
/// DoP, so the program still takes every DoP, lowered and raised again.
/// Each of its questions is counted: they count its calls, the progress the
/// trial of `auto` compares at a DoP of 1, where OpenBLAS starts no region.
#[test]
fn an_explicit_num_threads_clause_is_honoured_and_max_threads_is_the_dop() {
    let dir = tempfile::tempdir().unwrap();
    let mut chan = DopChannel::create(&record_in(&dir), &[], 1).unwrap();
    let mut teams = Teams::start(2, Some(&shim()), Some(chan.path()));
    for (calls, dop) in [1, 2, 1].into_iter().enumerate() {
        chan.set(dop, &[]).unwrap();
        let r = teams.region("blas");
        assert!(r.ok, "the team ran every part: {r:?}");
        assert_eq!((r.team, r.members), (dop, dop), "{r:?}");
        assert_eq!(chan.read().max_threads_asked, calls as u64 + 1);
    }
    // Regions of other kinds do not ask.
    teams.region("parallel");
    assert_eq!(chan.read().max_threads_asked, 3);
    // Without the shim the same program runs its whole team.
    let mut plain = Teams::start(2, None, None);
    let r = plain.region("blas");
    assert!(r.ok && r.team == 2, "{r:?}");
}

/// OpenBLAS 0.3.21's pattern (teams.c `parts`): the program asks
/// `omp_get_max_threads()`, splits its work into that many parts that wait on
/// one another, and runs them in a region without a num_threads clause. A DoP
/// lowered between the answer and the region must not shrink that region's
/// team: a team of 1 spun on the second part for minutes (OpenBLAS dgemm in
/// `bench/mixes/three-at-once` under `auto`). The new DoP holds from the
/// region after, and a region its thread did not ask before takes the DoP.
#[test]
fn a_region_after_max_threads_gets_the_team_it_was_told() {
    let dir = tempfile::tempdir().unwrap();
    let mut chan = DopChannel::create(&record_in(&dir), &[], 2).unwrap();
    let mut teams = Teams::start(2, Some(&shim()), Some(chan.path()));
    for (told, then) in [(2, 1), (1, 2)] {
        chan.set(told, &[]).unwrap();
        teams.send("ask");
        assert_eq!(teams.line(), format!("max_threads {told}"));
        chan.set(then, &[]).unwrap();
        let r = teams.region("parts");
        assert!(r.ok, "every part ran: {r:?}");
        assert_eq!(r.team, told, "{r:?}");
        assert_eq!(teams.region("parallel").team, then);
    }
}

/// The CPUs this test process may use, if it may use CPUs 0 and 1.
fn two_cpus_or_skip() -> Option<String> {
    let own = cpus_allowed("/proc/self/status");
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity fills
    // at most its size.
    let (ok, has01) = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let rc = libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set);
        (
            rc == 0,
            libc::CPU_ISSET(0, &set) && libc::CPU_ISSET(1, &set),
        )
    };
    if ok && has01 {
        Some(own)
    } else {
        eprintln!("skipped: this test needs CPUs 0 and 1, the process may use {own}");
        None
    }
}

#[test]
fn team_threads_are_pinned_to_the_allowed_cpus() {
    let Some(original) = two_cpus_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut chan = DopChannel::create(&record_in(&dir), &[1], 2).unwrap();
    let mut teams = Teams::start(2, Some(&shim()), Some(chan.path()));
    assert_eq!(teams.region("parallel").team, 2);
    // teams now waits on stdin; its worker idles in libgomp's pool.
    assert_eq!(teams.thread_cpus(), ["1", "1"]);

    chan.set(2, &[0, 1]).unwrap();
    assert_eq!(teams.region("for_dynamic").team, 2);
    assert_eq!(teams.thread_cpus(), ["0", "1"]);

    // An empty list gives the threads back their original affinity.
    chan.set(2, &[]).unwrap();
    assert_eq!(teams.region("sections").team, 2);
    assert_eq!(teams.thread_cpus(), [original.clone(), original]);
    assert_eq!(chan.read().pin_errors, 0);
}

#[test]
fn stale_heartbeat_is_inert_until_refreshed() {
    let Some(original) = two_cpus_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let chan = DopChannel::create(&record_in(&dir), &[1], 1).unwrap();
    let mut teams = Teams::start(2, Some(&shim()), Some(chan.path()));
    assert_eq!(teams.region("parallel").team, 1);
    assert_eq!(teams.thread_cpus()[0], "1");

    // The worker libgomp creates now is created by the pinned main thread; it
    // must not inherit the pin (regression: the main thread used to restore
    // itself only after libgomp had created the worker).
    chan.heartbeat(monotonic_ns().saturating_sub(STALE_NS + 1_000_000_000));
    let r = teams.region("parallel");
    assert_eq!(r.team, 2);
    assert!(r.ok);
    // The thread pinned while coloc was there got its affinity back.
    assert!(teams.thread_cpus().iter().all(|c| *c == original));
    let state = chan.read();
    assert_eq!((state.regions_started, state.regions_managed), (2, 1));

    chan.heartbeat(monotonic_ns());
    assert_eq!(teams.region("parallel").team, 1);
    assert_eq!(chan.read().regions_managed, 2);
}

/// Overwrites `bytes` at `offset` of the record file, as a foreign or
/// corrupted record would look.
fn corrupt(path: &Path, offset: u64, bytes: &[u8]) {
    let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    file.write_all_at(bytes, offset).unwrap();
}

#[test]
fn bad_magic_or_version_is_inert() {
    for (offset, bytes) in [(0, &b"NOTCOLOC"[..]), (8, &99u32.to_le_bytes()[..])] {
        let dir = tempfile::tempdir().unwrap();
        let chan = DopChannel::create(&record_in(&dir), &[], 1).unwrap();
        corrupt(chan.path(), offset, bytes);
        let mut teams = Teams::start(2, Some(&shim()), Some(chan.path()));
        every_kind_has_team(&mut teams, 2);
        assert_eq!(
            chan.read().owner_pid,
            None,
            "an invalid record is not claimed"
        );
        assert_eq!(chan.read().regions_started, 0);
    }
}

#[test]
fn removed_record_makes_a_running_app_inert() {
    let dir = tempfile::tempdir().unwrap();
    let chan = DopChannel::create(&record_in(&dir), &[], 1).unwrap();
    let path = chan.path().to_path_buf();
    let mut teams = Teams::start(2, Some(&shim()), Some(&path));
    assert_eq!(teams.region("parallel").team, 1);
    chan.remove().unwrap();
    assert!(!path.exists());
    assert_eq!(teams.region("parallel").team, 2);
}

#[test]
fn record_reports_regions_iterations_and_serial_sections() {
    let dir = tempfile::tempdir().unwrap();
    let chan = DopChannel::create(&record_in(&dir), &[], 2).unwrap();
    let mut teams = Teams::start(2, Some(&shim()), Some(chan.path()));
    assert_eq!(chan.read().owner_pid, None, "claimed at the first region");

    let mut iterations = 0;
    for (i, (kind, its)) in KINDS.iter().enumerate() {
        assert_eq!(teams.region(kind).team, 2);
        iterations += its;
        let s = chan.read();
        let done = i as u64 + 1;
        assert_eq!(s.owner_pid, Some(teams.pid()));
        assert_eq!((s.regions_started, s.regions_completed), (done, done));
        assert_eq!(s.in_parallel, 0, "serial between regions");
        assert_eq!(s.team_size, 2);
        assert_eq!(s.iterations_completed, iterations, "after {kind}");
    }
    assert_eq!(iterations, 5 * N);

    // Inside a region: teams holds it open until we answer.
    teams.send("hold");
    assert_eq!(teams.line(), "inside");
    let s = chan.read();
    assert_eq!(s.in_parallel, 1);
    assert_eq!(s.regions_started, KINDS.len() as u64 + 1);
    assert_eq!(s.regions_completed, KINDS.len() as u64);
    assert!(s.last_region_start_ns > 0 && s.last_region_start_ns <= monotonic_ns());
    teams.send("go");
    assert!(support::parse_region(&teams.line()).ok);
    let s = chan.read();
    assert_eq!((s.in_parallel, s.regions_completed), (0, s.regions_started));
    assert!(s.parallel_ns > 0);
}

#[test]
fn only_the_first_process_claims_the_record() {
    let dir = tempfile::tempdir().unwrap();
    let chan = DopChannel::create(&record_in(&dir), &[], 1).unwrap();
    let mut first = Teams::start(2, Some(&shim()), Some(chan.path()));
    assert_eq!(first.region("parallel").team, 1);
    // A second process with the same environment (a child the app spawned)
    // runs as if coloc were absent and leaves the counters alone.
    let mut second = Teams::start(2, Some(&shim()), Some(chan.path()));
    assert_eq!(second.region("parallel").team, 2);
    let s = chan.read();
    assert_eq!(s.owner_pid, Some(first.pid()));
    assert_eq!(s.regions_started, 1);
}

/// The child's "child region ..." line, parsed.
fn forked_region(teams: &mut Teams, kind: &str) -> support::Region {
    teams.send(&format!("fork {kind}"));
    let line = teams.line();
    let region = line
        .strip_prefix("child ")
        .unwrap_or_else(|| panic!("{line}"));
    support::parse_region(region)
}

// libgomp itself hangs in a forked child that starts a team once the parent
// has pool threads, so the fork tests only fork before any region or after a
// region of one thread.

#[test]
fn a_child_forked_before_the_first_region_is_inert() {
    let dir = tempfile::tempdir().unwrap();
    let chan = DopChannel::create(&record_in(&dir), &[], 1).unwrap();
    let mut teams = Teams::start(2, Some(&shim()), Some(chan.path()));
    let child = forked_region(&mut teams, "parallel");
    assert_eq!((child.team, child.ok), (2, true));
    assert_eq!(chan.read().owner_pid, None, "the child did not claim it");
    assert_eq!(teams.region("parallel").team, 1);
    assert_eq!(chan.read().owner_pid, Some(teams.pid()));
}

#[test]
fn a_child_forked_after_a_region_is_inert() {
    let dir = tempfile::tempdir().unwrap();
    let chan = DopChannel::create(&record_in(&dir), &[], 1).unwrap();
    let mut teams = Teams::start(2, Some(&shim()), Some(chan.path()));
    assert_eq!(teams.region("parallel").team, 1);
    let child = forked_region(&mut teams, "for_dynamic");
    assert_eq!((child.team, child.ok), (2, true));
    let s = chan.read();
    assert_eq!((s.regions_started, s.iterations_completed), (1, 0));
}

/// Interleaving an app's later allocations (Thread Tranquilizer,
/// docs/policies/tranquilizer.md): at the first region after coloc asks, every
/// team thread has MPOL_INTERLEAVE over the nodes asked for, as the kernel
/// shows in the thread's numa_maps; asking for none puts back the policy the
/// app started with (`default`), and so does a removed record.
#[test]
fn team_threads_interleave_later_allocations_and_go_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut chan = DopChannel::create(&record_in(&dir), &[], 2).unwrap();
    let mut teams = Teams::start(2, Some(&shim()), Some(chan.path()));
    assert_eq!(teams.region("parallel").team, 2);
    assert_eq!(teams.thread_mempolicies(), ["default", "default"]);

    assert!(chan.set_interleave(&[0]).unwrap());
    assert!(
        !chan.set_interleave(&[0]).unwrap(),
        "the same nodes write nothing"
    );
    assert_eq!(teams.region("parallel").team, 2);
    assert_eq!(teams.thread_mempolicies(), ["interleave:0", "interleave:0"]);

    assert!(chan.set_interleave(&[]).unwrap());
    assert_eq!(teams.region("sections").team, 2);
    assert_eq!(teams.thread_mempolicies(), ["default", "default"]);

    chan.set_interleave(&[0]).unwrap();
    assert!(teams.region("parallel").ok);
    assert_eq!(teams.thread_mempolicies(), ["interleave:0", "interleave:0"]);
    assert_eq!(chan.read().pin_errors, 0);
    let err = chan.set_interleave(&[64]).unwrap_err().to_string();
    assert!(
        err.contains("interleave_nodes") && err.contains("64"),
        "{err}"
    );

    chan.remove().unwrap();
    assert!(teams.region("parallel").ok);
    assert_eq!(teams.thread_mempolicies(), ["default", "default"]);
}

/// A program that links no OpenMP runtime and dlopen()s, RTLD_LOCAL, a
/// library built with OpenMP (as Python loads numpy's OpenBLAS): libgomp is
/// then outside the global scope where RTLD_NEXT looks, and the shim finds it
/// by soname. Its regions take the record's DoP. (Before, the shim aborted:
/// "GOMP_parallel not found in the OpenMP runtime".)
#[test]
fn libgomp_of_a_library_dlopened_local_is_found_and_steered() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("lib.c"),
        "int work(void){int n=0;\n#pragma omp parallel reduction(+:n)\nn++;\nreturn n;}\n",
    )
    .unwrap();
    std::fs::write(
        d.join("main.c"),
        "#include <dlfcn.h>\n#include <stdio.h>\n\
         int main(int argc,char**argv){void*h=dlopen(argv[1],RTLD_NOW|RTLD_LOCAL);\
         if(!h)return 2;int(*w)(void)=(int(*)(void))dlsym(h,\"work\");\
         printf(\"%d %d\\n\",w(),w());return 0;}\n",
    )
    .unwrap();
    let cc = |args: &[&str]| {
        let ok = std::process::Command::new("cc")
            .args(args)
            .current_dir(d)
            .status()
            .unwrap()
            .success();
        assert!(ok, "cc {args:?}");
    };
    cc(&["-shared", "-fPIC", "-fopenmp", "-o", "libwork.so", "lib.c"]);
    cc(&["-o", "app", "main.c", "-ldl"]);
    let chan = DopChannel::create(&record_in(&dir), &[], 1).unwrap();
    let out = std::process::Command::new(d.join("app"))
        .arg(d.join("libwork.so"))
        .env("OMP_NUM_THREADS", "2")
        .env("LD_PRELOAD", shim())
        .env("COLOC_OMP_RECORD", chan.path())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{:?}: {said}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(said.trim(), "1 1", "teams of the record's DoP");
    assert_eq!(chan.read().regions_completed, 2);
}
