//! What the node service learns (docs/knowledge.md): every app it manages
//! leaves a record of its program in the store, which outlives the daemon
//! (stopped, or killed with SIGKILL) and is found by the next one; a store
//! file cut short is set aside with a message and the daemon goes on.

mod common;

use std::path::Path;
use std::process::Command;

use common::service::{is_root, wait_for, Service, Started};
use common::{coloc, text};

/// The rows of `coloc knowledge list --db DB`: (name, records).
fn listed(db: &Path) -> Vec<(String, usize)> {
    let out = coloc()
        .args(["knowledge", "list", "--db"])
        .arg(db)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    stdout
        .lines()
        .skip(2)
        .filter(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (cells[1].to_string(), cells[3].parse().unwrap())
        })
        .collect()
}

/// `coloc exec --name NAME -- sh -c 'sleep 0.2'` to its end, successfully.
fn exec(svc: &Service, name: &str) {
    let out = svc
        .coloc(&["exec", "--name", name, "--", "sh", "-c", "sleep 0.2"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out).1);
}

fn signal(pid: u32, s: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), s).unwrap();
}

/// An app's record is in the store once it exits, whatever happens to the
/// daemon after: killed with SIGKILL, the next daemon starts knowing the
/// program and adds to it; stopped, the records stay.
#[test]
fn knowledge_survives_a_restart_and_a_kill_9() {
    if !is_root() {
        return;
    }
    let svc = Service::new();
    let db = svc.dir.path().join("knowledge.sqlite");
    let db_arg = ["--db", db.to_str().unwrap()];
    let mut started = Started::default();
    let first = svc.start_with("native", &db_arg, &mut started);
    exec(&svc, "nap");
    wait_for("the record", || listed(&db) == [("nap".to_string(), 1)]);
    signal(
        started.children[first].id(),
        nix::sys::signal::Signal::SIGKILL,
    );
    started.children[first].wait().unwrap();
    assert_eq!(listed(&db), [("nap".to_string(), 1)]);
    let second = svc.start_with("native", &db_arg, &mut started);
    assert!(
        svc.log()
            .contains("knowledge: 1 program(s) known on this platform"),
        "{}",
        svc.log()
    );
    exec(&svc, "nap-again");
    wait_for("the second record", || {
        listed(&db) == [("nap-again".to_string(), 2)]
    });
    signal(
        started.children[second].id(),
        nix::sys::signal::Signal::SIGTERM,
    );
    assert!(started.children[second].wait().unwrap().success());
    assert_eq!(listed(&db), [("nap-again".to_string(), 2)]);
}

/// A store file cut in half: the daemon says it set it aside and where,
/// listens, and learns into a new store.
#[test]
fn a_truncated_store_is_set_aside_and_the_daemon_goes_on() {
    if !is_root() {
        return;
    }
    let svc = Service::new();
    let data = svc.dir.path().join("data");
    // A store with some pages: what a few simulated solo runs learn.
    let workload = svc.dir.path().join("w.toml");
    std::fs::write(
        &workload,
        "name = \"w\"\n[[app]]\nname = \"a\"\nmodel = \"kernel-compute\"\nthreads = 2\n\
         [[app]]\nname = \"b\"\nmodel = \"kernel-stream\"\nthreads = 2\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_coloc"))
        .args(["solo", "--sim", "kvm-2cpu", "--threads", "1,2", "--out"])
        .arg(svc.dir.path().join("solo"))
        .arg(&workload)
        .env("XDG_DATA_HOME", &data)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out).1);
    let db = data.join("coloc/profiles.sqlite");
    let len = std::fs::metadata(&db).unwrap().len();
    let file = std::fs::OpenOptions::new().write(true).open(&db).unwrap();
    file.set_len(len / 2).unwrap();
    drop(file);
    let mut started = Started::default();
    let daemon = svc.start_with("native", &["--db", db.to_str().unwrap()], &mut started);
    let log = svc.log();
    assert!(
        log.contains("profiles.sqlite") && log.contains("it was moved to"),
        "{log}"
    );
    let aside = std::fs::read_dir(db.parent().unwrap())
        .unwrap()
        .filter_map(|e| e.ok())
        .any(|e| e.file_name().to_string_lossy().contains(".damaged-"));
    assert!(aside, "{log}");
    exec(&svc, "after");
    wait_for("the record", || listed(&db) == [("after".to_string(), 1)]);
    assert!(started.children[daemon].try_wait().unwrap().is_none());
}
