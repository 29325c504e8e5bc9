//! What the node service tells about its live apps (docs/service.md, Metrics
//! and coloc why): `coloc daemon --metrics ADDR` scraped over loopback and
//! checked by Prometheus's own `promtool check metrics` (Debian's
//! `prometheus` package, installed by `scripts/setup`), and `coloc why APP`
//! asked of the daemon for an app it manages. Needs root (the daemon manages
//! other processes) and says so when it skips.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};

use coloc_daemon::protocol::AppWhy;
use common::service::{is_root, wait_for, Service, Started};
use common::text;

/// `GET /metrics` at `addr`: the status line and the body.
fn scrape(addr: &str) -> (String, String) {
    let Ok(mut s) = TcpStream::connect(addr) else {
        return (String::new(), String::new());
    };
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut got = String::new();
    s.read_to_string(&mut got).unwrap();
    let (head, body) = got.split_once("\r\n\r\n").unwrap_or((&got, ""));
    (
        head.lines().next().unwrap_or_default().to_string(),
        body.to_string(),
    )
}

/// A free loopback port (free when asked; the daemon binds it next).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// An OpenMP kernel under `auto`: the endpoint's metrics show its CPUs and
/// the policy's decisions, and `promtool check metrics` passes them; `coloc
/// why` tells its decisions with their reasons, as text and as JSON.
#[test]
fn a_live_app_is_in_the_metrics_and_in_why() {
    if !is_root() {
        return;
    }
    let svc = Service::new();
    let mut started = Started::default();
    let addr = format!("127.0.0.1:{}", free_port());
    svc.start_with("auto", &["--metrics", &addr], &mut started);
    svc.exec_kernel(
        &["--malleable", "--name", "solver"],
        Stdio::null(),
        &mut started,
    );
    let mut last = (String::new(), String::new());
    wait_for("the app and a decision in the metrics", || {
        last = scrape(&addr);
        last.1.contains("coloc_app_cpus{app=\"0\",name=\"solver\"}")
            && last
                .1
                .contains("coloc_policy_decisions_total{policy=\"auto\"}")
    });
    let (status, body) = last;
    assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
    assert!(body.contains("# TYPE coloc_app_cpus gauge\n"), "{body}");

    match Command::new("promtool").arg("--version").output() {
        Ok(_) => {
            let mut check = Command::new("promtool")
                .args(["check", "metrics"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            check
                .stdin
                .take()
                .unwrap()
                .write_all(body.as_bytes())
                .unwrap();
            let out = check.wait_with_output().unwrap();
            let (stdout, stderr) = text(&out);
            assert!(
                out.status.success(),
                "promtool check metrics refused:\n{stdout}{stderr}\n{body}"
            );
        }
        Err(e) => eprintln!(
            "promtool check metrics skipped: no promtool ({e}); \
             Debian's prometheus package has it (scripts/setup)"
        ),
    }

    let out = svc.coloc(&["why", "solver"]).output().unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}\n{}", svc.log());
    assert!(stdout.starts_with("solver 0.0: arrived at"), "{stdout}");
    assert!(stdout.contains("why: "), "{stdout}");
    let out = svc.coloc(&["why", "0", "--json"]).output().unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let apps: Vec<AppWhy> = serde_json::from_str(&stdout).unwrap();
    assert_eq!(apps.len(), 1, "{stdout}");
    assert_eq!(apps[0].name, "solver");
    assert!(!apps[0].history.stretches.is_empty(), "{stdout}");
    assert!(apps[0].history.ended.is_none(), "{stdout}");

    let out = svc.coloc(&["why", "nobody"]).output().unwrap();
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(stderr.contains("knows no app `nobody`"), "{stderr}");
}
