//! The node service's soak (docs/service.md, Tests and churn): while 5 apps
//! are managed, every hostile client at once hammers root's daemon's socket
//! for a minute. A binary of its own, so no other test shares the machine
//! with it (cargo runs test binaries one after another): beside the other
//! tests of `daemon_hostile.rs` (load 13 to 17 on 2 CPUs) root's `status`
//! once took 1.03 s, alone 38 ms; the bound, a second, is asserted.

mod common;
#[path = "../../linux/tests/support/users.rs"]
#[allow(dead_code)] // chown: the other tests' part of it
mod users;

use std::time::{Duration, Instant};

use common::hostile::{self, said, RSS_BOUND_KIB};
use common::service::{is_root, rss_and_threads, RootUntouched, Service, Started};
use common::text;
use users::TestUser;

/// Plays a hostile client's role when this binary is run as one.
#[test]
fn hostile_client_role() {
    hostile::play();
}

/// How long the soak's hostile clients hammer the socket.
const SOAK_SECS: u64 = 60;

/// The soak's epoch: long enough that a loaded CI machine keeps it, short
/// enough that a minute holds 60 of them.
const SOAK_EPOCH: Duration = Duration::from_secs(1);

/// Everything at once: while 5 apps are managed, a user's hostile clients
/// (8 MiB lines without end, 5,000 connections at a time, slow writers,
/// requests with bad fields, a FIFO and /dev/zero as malleable programs;
/// `common::hostile`, role `soak`) hammer the socket for a minute. The
/// daemon stays the same process, keeps its epochs (no gap in its trace over
/// two), answers root's `status` within a second throughout, keeps its
/// resident memory under [`RSS_BOUND_KIB`] and its 5 apps. Prints its
/// figures (`--nocapture`).
#[test]
fn a_minute_of_every_hostile_client_at_once_leaves_the_daemon_keeping_its_epochs() {
    if !is_root() {
        return;
    }
    let Some(user) = TestUser::create("soak") else {
        return;
    };
    let svc = Service::new();
    let mut started = Started::default();
    let trace = svc.dir.path().join("daemon.jsonl");
    let epoch = format!("{}ms", SOAK_EPOCH.as_millis());
    // native admits every app at once (equal would hold those past the
    // CPUs' number).
    let d = svc.start_with(
        "native",
        &["--epoch", &epoch, "--trace", trace.to_str().unwrap()],
        &mut started,
    );
    let daemon = started.children[d].id();
    let root = RootUntouched::new(&mut started, Some(daemon));
    for n in 0..5 {
        let pid = started.sleeper();
        let out = svc
            .coloc(&["attach", &pid.to_string(), "--name", &format!("app{n}")])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out).1);
    }
    assert_eq!(svc.status().apps.len(), 5);
    let status_line = "{\"v\":1,\"request\":\"status\"}";
    let mut client = hostile::spawn(user.uid, &svc.socket(), &format!("soak:{SOAK_SECS}"));
    let (mut peak_rss, mut slowest, mut asked) = (0, Duration::ZERO, 0);
    while client.try_wait().unwrap().is_none() {
        peak_rss = peak_rss.max(rss_and_threads(daemon).0);
        let t = Instant::now();
        let reply = hostile::raw(&svc.socket(), status_line);
        slowest = slowest.max(t.elapsed());
        asked += 1;
        assert!(reply.contains("\"apps\""), "root's status: {reply}");
        std::thread::sleep(Duration::from_millis(250));
    }
    let out = client.wait_with_output().unwrap();
    let rounds = said(&out, "rounds");
    println!(
        "soak: {SOAK_SECS} s, hostile rounds per worker {rounds:?}; root status asked {asked} \
         times, slowest {slowest:?}; daemon peak RSS {peak_rss} KiB (bound {RSS_BOUND_KIB})"
    );
    assert!(
        !rounds.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(asked >= SOAK_SECS, "root's status asked only {asked} times");
    // The bar: a second, for a connection, a request and its
    // answer (no process start: `raw` speaks the protocol itself).
    assert!(
        slowest < Duration::from_secs(1),
        "root's status took {slowest:?}"
    );
    assert!(
        peak_rss < RSS_BOUND_KIB,
        "the daemon's RSS reached {peak_rss} KiB"
    );
    root.check(&svc.log());
    assert_eq!(svc.status().apps.len(), 5, "{}", svc.log());
    // Its trace, complete once it stopped: no gap between observations
    // over two epochs.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(daemon as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert!(started.children[d].wait().unwrap().success());
    let text = std::fs::read_to_string(&trace).unwrap();
    let at: Vec<Duration> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<coloc_model::TraceEvent>(l).ok())
        .filter_map(|e| match e {
            coloc_model::TraceEvent::Obs(o) => Some(o.at),
            _ => None,
        })
        .collect();
    let gap = at
        .windows(2)
        .map(|w| w[1].saturating_sub(w[0]))
        .max()
        .unwrap_or_default();
    println!(
        "soak: {} observations, widest gap {gap:?} (epoch {SOAK_EPOCH:?})",
        at.len()
    );
    assert!(
        at.len() as u64 >= SOAK_SECS / 2,
        "{} observations in {SOAK_SECS} s",
        at.len()
    );
    assert!(gap <= 2 * SOAK_EPOCH, "an epoch gap of {gap:?}");
}
