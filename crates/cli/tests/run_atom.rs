//! `coloc run --policy atom` with a real latency-sensitive service: nginx and
//! its wrk client (bench/programs/nginx-wrk.sh, printing its throughput every
//! second) next to a batch kernel. Checked from /proc
//! (/proc/<pid>/task/*/status, Cpus_allowed_list) while AToM warms up, runs
//! its competition and executes the winner: every thread of the service's
//! process tree is where the plan in force puts it (pinned, or its original
//! affinity while Linux's placement competes), and nothing the run started is
//! left behind. No timing is asserted.
//!
//! Needs root (nginx's workers run as another user, whose affinity only root
//! may change) and the `nginx` and `wrk` programs (`scripts/setup --bench`);
//! without them it says why and passes.

mod common;

use std::path::Path;
use std::time::Duration;

use coloc_model::{AppId, CpuSet, Placement};
use common::{allowed_at, allowed_here, apps_by_pid, decisions, repo, tids_of};

const SERVICE: AppId = AppId { app: 0, rep: 0 };

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
        || Path::new("/usr/sbin").join(program).is_file()
}

/// Every descendant of `pid`, depth first.
fn descendants(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for c in common::children(pid) {
        out.push(c);
        out.extend(descendants(c));
    }
    out
}

#[test]
fn atom_places_a_real_service_during_and_after_its_competition() {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root to set the affinity of nginx's workers");
        return;
    }
    if let Some(missing) = ["nginx", "wrk"].into_iter().find(|p| !on_path(p)) {
        eprintln!("skipped: `{missing}` is not installed (scripts/setup --bench installs it)");
        return;
    }
    let here = allowed_here();
    let dir = tempfile::tempdir().unwrap();
    let script = repo("bench/programs/nginx-wrk.sh");
    let w = dir.path().join("w.toml");
    std::fs::write(
        &w,
        format!(
            r#"
name = "atom-nginx"
epoch = "200ms"

[[app]]
name = "nginx"
command = ["{}"]
threads = 1
class = "latency"
env = {{ ROUNDS = "16" }}

[app.metric]
regex = 'coloc-metric: ([0-9.eE+-]+)'

[[app]]
name = "batch"
command = ["kernel:compute", "--iters", "20000000"]
threads = 2
"#,
            script.display()
        ),
    )
    .unwrap();

    // Sample the service's whole process tree (the script, nginx, its
    // workers, wrk) as the run goes on (common::run_sampled sees the direct
    // children only).
    let out = dir.path().join("out");
    let mut samples: Vec<(f64, u32, CpuSet)> = Vec::new();
    let run = {
        let mut child = common::coloc()
            .arg("run")
            .arg(&w)
            .args(["--policy", "atom", "--out"])
            .arg(&out)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let coloc_pid = child.id();
        let t0 = std::time::Instant::now();
        while child.try_wait().unwrap().is_none() && t0.elapsed() < Duration::from_secs(180) {
            let at = common::unix_now();
            if let Some(&service) = common::children(coloc_pid).first() {
                for pid in std::iter::once(service).chain(descendants(service)) {
                    for tid in tids_of(pid) {
                        if let Some(c) = common::status_of(pid, tid)
                            .as_deref()
                            .and_then(common::cpus_allowed)
                        {
                            samples.push((at, tid, c));
                        }
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "coloc run failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        common::read_trace(&out)
    };
    let pid = apps_by_pid(&run)
        .into_iter()
        .find_map(|(pid, app)| (app == SERVICE).then_some(pid))
        .expect("the service started");
    let plans = decisions(&run);
    let notes: Vec<&str> = plans.iter().map(|d| d.plan.note.as_str()).collect();
    for phase in ["warming up", "learning", "executing the winner"] {
        assert!(
            notes.iter().any(|n| n.contains(phase)),
            "atom never reached `{phase}`: {notes:?}"
        );
    }
    assert!(
        notes.iter().any(|n| n.contains("signal metric")),
        "the live metric is the signal: {notes:?}"
    );
    // The service's metric arrived live, line by line.
    let lines = run
        .observations()
        .filter_map(|o| o.app(SERVICE)?.metric)
        .map(|m| m.lines)
        .max()
        .unwrap_or(0);
    assert!(lines >= 3, "live metric lines seen: {lines}");

    let t0 = run.header.started_unix;
    let exit = run
        .events
        .iter()
        .find_map(|e| match e {
            coloc_model::TraceEvent::Exit { t, app, .. } if *app == SERVICE => {
                Some(t.as_secs_f64())
            }
            _ => None,
        })
        .expect("the service exits");
    // A plan that leaves the service to Linux (AToM's status-quo candidate)
    // means its original affinity: every CPU here.
    let restored: Vec<coloc_model::Plan> = plans
        .iter()
        .map(|d| {
            let mut p = d.plan.clone();
            for a in &mut p.apps {
                if a.placement == Placement::Unmanaged {
                    a.placement = Placement::Shared(here.clone());
                }
            }
            p
        })
        .collect();
    let plans: Vec<common::Decision> = plans
        .iter()
        .zip(&restored)
        .map(|(d, plan)| common::Decision { plan, ..*d })
        .collect();
    // From the first plan's application (processes the script forks before
    // it keep their original affinity until then) to the service's exit.
    let first = plans.first().map_or(0.0, |d| d.applied) + common::APPLY_SLACK;
    let mut checked = 0;
    for (at_unix, tid, cpus) in &samples {
        let at = at_unix - t0;
        if at < first || at > exit - common::APPLY_SLACK {
            continue;
        }
        let allowed = allowed_at(&plans, SERVICE, *tid, at);
        assert!(
            allowed.contains(cpus),
            "thread {tid} at {at:.2} s on {cpus}, plans give {allowed:?}"
        );
        checked += 1;
    }
    assert!(checked > 0, "no sample of the service (pid {pid})");
    // Nothing the run started outlives it.
    for (_, tid, _) in &samples {
        assert!(
            !Path::new(&format!("/proc/{tid}")).exists()
                || std::fs::read_to_string(format!("/proc/{tid}/comm"))
                    .is_ok_and(|c| !["nginx", "wrk"].contains(&c.trim())),
            "thread {tid} outlived the run"
        );
    }
}
