//! The DoP channel under LLVM's OpenMP runtime: the same programs as
//! tests/dop.rs, built with clang against libomp, under the OMPT tool in
//! libcoloc_omp.so (c/ompt.c). Skipped, saying why, where clang or libomp is
//! not installed.

mod support;

use std::path::PathBuf;

use coloc_shim::{monotonic_ns, shim_path, DopChannel, STALE_NS};
use support::{llvm_exe, Teams};

fn shim() -> PathBuf {
    shim_path().expect("extract the shim")
}

/// Every kind teams.c runs, with the clang build: `split`, `split_loop` and
/// `combined_loop` call libgomp's entry points, which libomp also provides
/// for GCC-built code; the tool sees those regions all the same.
const KINDS: [&str; 9] = [
    "parallel",
    "for_static",
    "for_dynamic",
    "for_guided",
    "for_runtime",
    "sections",
    "split",
    "split_loop",
    "combined_loop",
];

fn every_kind_has_team(teams: &mut Teams, team: u32) {
    for kind in KINDS {
        let r = teams.region(kind);
        assert_eq!((r.kind.as_str(), r.team), (kind, team), "{r:?}");
        assert!(r.ok, "checksum wrong: {r:?}");
    }
}

/// The record's DoP sets the team of every region kind, 1 → 2 → 1, and the
/// record says the app saw each setting.
#[test]
fn llvm_team_follows_the_record() {
    let Some(exe) = llvm_exe("teams_llvm") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut chan = DopChannel::create(&dir.path().join("record"), &[], 1).unwrap();
    let mut teams = Teams::start_exe(&exe, 2, Some(&shim()), Some(chan.path()));
    every_kind_has_team(&mut teams, 1);
    assert_eq!(chan.read().generation_seen, chan.generation());
    chan.set(2, &[]).unwrap();
    every_kind_has_team(&mut teams, 2);
    assert_eq!(chan.read().generation_seen, chan.generation());
    chan.set(1, &[]).unwrap();
    every_kind_has_team(&mut teams, 1);
    let s = chan.read();
    assert_eq!(s.owner_pid, Some(teams.pid()));
    assert_eq!(s.regions_completed, 3 * KINDS.len() as u64, "{s:?}");
    assert_eq!((s.in_parallel, s.team_size), (0, 1), "{s:?}");
}

/// min(nthreads-var, DoP): OMP_NUM_THREADS=4 with a DoP of 3 runs 3, with a
/// DoP of 8 runs 4; the app's own value comes back.
#[test]
fn llvm_team_is_the_minimum_of_requested_and_dop() {
    let Some(exe) = llvm_exe("teams_llvm") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut chan = DopChannel::create(&dir.path().join("record"), &[], 3).unwrap();
    let mut teams = Teams::start_exe(&exe, 4, Some(&shim()), Some(chan.path()));
    assert_eq!(teams.region("parallel").team, 3);
    chan.set(8, &[]).unwrap();
    assert_eq!(teams.region("parallel").team, 4);
    chan.set(2, &[]).unwrap();
    assert_eq!(teams.region("for_dynamic").team, 2);
}

/// Without a record the tool does not start, and the program runs its own
/// team; with the shim but no channel, the same.
#[test]
fn llvm_without_a_record_nothing_changes() {
    let Some(exe) = llvm_exe("teams_llvm") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut teams = Teams::start_exe(&exe, 2, Some(&shim()), None);
    every_kind_has_team(&mut teams, 2);
    let mut teams = Teams::start_exe(&exe, 2, Some(&shim()), Some(&dir.path().join("absent")));
    every_kind_has_team(&mut teams, 2);
}

/// OpenBLAS' patterns (tests/dop.rs): an explicit num_threads clause sized
/// by omp_get_max_threads() is honoured and the answer is the DoP; a region
/// without a clause after an answer gets the team it was told, the new DoP
/// from the region after.
#[test]
fn llvm_max_threads_is_the_dop_and_a_told_team_is_kept() {
    let Some(exe) = llvm_exe("teams_llvm") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut chan = DopChannel::create(&dir.path().join("record"), &[], 1).unwrap();
    let mut teams = Teams::start_exe(&exe, 2, Some(&shim()), Some(chan.path()));
    for (calls, dop) in [1, 2, 1].into_iter().enumerate() {
        chan.set(dop, &[]).unwrap();
        let r = teams.region("blas");
        assert!(r.ok, "the team ran every part: {r:?}");
        assert_eq!((r.team, r.members), (dop, dop), "{r:?}");
        assert_eq!(chan.read().max_threads_asked, calls as u64 + 1);
    }
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

/// Team members are pinned to the record's CPUs in their implicit-task
/// callback, and get the process's own affinity back when the list is
/// emptied; a stale heartbeat gives the team its own size back.
#[test]
fn llvm_members_are_pinned_and_a_stale_record_lets_go() {
    let Some(exe) = llvm_exe("teams_llvm") else {
        return;
    };
    let original = support::cpus_allowed("/proc/self/status");
    if !(original == "0-1" || original.starts_with("0-")) {
        eprintln!("skipped: needs CPUs 0 and 1, this process may use {original}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut chan = DopChannel::create(&dir.path().join("record"), &[1], 2).unwrap();
    let mut teams = Teams::start_exe(&exe, 2, Some(&shim()), Some(chan.path()));
    assert_eq!(teams.region("parallel").team, 2);
    let cpus = teams.thread_cpus();
    // libomp may keep a monitor or spare thread: every team thread is on 1.
    assert_eq!(cpus.iter().filter(|c| *c == "1").count(), 2, "{cpus:?}");
    chan.set(2, &[0, 1]).unwrap();
    assert_eq!(teams.region("for_dynamic").team, 2);
    let cpus = teams.thread_cpus();
    assert!(
        cpus.contains(&"0".to_string()) && cpus.contains(&"1".to_string()),
        "{cpus:?}"
    );
    chan.set(1, &[]).unwrap();
    assert_eq!(teams.region("sections").team, 1);
    assert_eq!(teams.thread_cpus()[0], original);
    chan.heartbeat(monotonic_ns().saturating_sub(STALE_NS + 1_000_000_000));
    assert_eq!(
        teams.region("parallel").team,
        2,
        "its own nthreads-var back"
    );
    chan.heartbeat(monotonic_ns());
    assert_eq!(teams.region("parallel").team, 1);
    assert_eq!(chan.read().pin_errors, 0);
}

/// A removed record makes a running app inert: its own team size back.
#[test]
fn llvm_removed_record_makes_a_running_app_inert() {
    let Some(exe) = llvm_exe("teams_llvm") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let chan = DopChannel::create(&dir.path().join("record"), &[], 1).unwrap();
    let mut teams = Teams::start_exe(&exe, 2, Some(&shim()), Some(chan.path()));
    assert_eq!(teams.region("parallel").team, 1);
    chan.remove().unwrap();
    assert_eq!(teams.region("parallel").team, 2);
}
