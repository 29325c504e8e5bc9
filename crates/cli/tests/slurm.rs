//! coloc on a Slurm cluster (docs/slurm.md): a real two-node Slurm from
//! Debian's packages (`scripts/slurm-test-cluster`), each node with its own
//! coloc daemon and the SPANK plugin in plugstack.conf. Four OpenMP jobs
//! share the nodes (`sbatch --oversubscribe`, two on each, one a user's); each is checked
//! in its node's `coloc status`, in /proc (its threads where the plan puts
//! them, its processes in Slurm's cgroup even where the daemon runs with
//! `--cgroup-slice`, their CPUs within its cpuset), in
//! its output, in `sacct` and in the node's trace; nothing coloc changed is
//! left once they are done; with the daemons stopped, jobs run unmanaged and
//! complete. Needs root, Slurm (scripts/setup installs it) and cgroup v1's
//! cpuset hierarchy (the cluster confines tasks with Slurm's cgroup/v1
//! plugin); says which is missing when it skips.

mod common;
#[path = "../../linux/tests/support/users.rs"]
#[allow(dead_code)] // chown: the other tests' part of it
mod users;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use coloc_daemon::protocol::{AppStatus, Status};
use coloc_model::trace::{ExitStatus, TraceEvent};
use coloc_model::CpuSet;
use common::service::{descendants, is_root, RootUntouched, Started};
use common::{coloc, cpus_allowed, repo, start_ticks, status_of, text, tids_of};
use users::TestUser;

const NODES: [&str; 2] = ["n1", "n2"];
/// Each job's work: REGIONS parallel regions over N terms (omp_sum.c): a few
/// seconds for two jobs sharing a node's 2 CPUs under coloc on a quiet
/// simulator's `kvm-2cpu` (a job of under a second can start and end
/// between two looks at `coloc status`), longer on a loaded one.
const REGIONS: u64 = 4000;
const TERMS: u64 = 1_000_000;

/// Why this machine cannot run the cluster, if it cannot.
fn missing() -> Option<String> {
    for program in [
        "slurmctld",
        "slurmd",
        "munged",
        "sbatch",
        "sacct",
        "ip",
        "unshare",
        "nsenter",
        "cc",
    ] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {program}")])
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            return Some(format!(
                "{program} is not installed (scripts/setup installs Slurm and munge)"
            ));
        }
    }
    if !Path::new("/sys/fs/cgroup/cpuset/cpuset.cpus").exists() {
        return Some(
            "no cgroup v1 cpuset hierarchy at /sys/fs/cgroup/cpuset (the test cluster confines \
             tasks with Slurm's cgroup/v1 plugin)"
                .into(),
        );
    }
    None
}

/// The test cluster, stopped (everything removed) when dropped.
struct Cluster {
    dir: PathBuf,
    id: String,
    stopped: bool,
}

fn script() -> PathBuf {
    repo("scripts/slurm-test-cluster")
}

impl Cluster {
    fn start(dir: &Path, plugin: &Path) -> Cluster {
        let out = Command::new(script())
            .arg("start")
            .arg(dir)
            .arg("--coloc")
            .arg(env!("CARGO_BIN_EXE_coloc"))
            .arg("--plugin")
            .arg(plugin)
            .args(["--policy", "equal"])
            // n1's daemon would move apps into cpuset cgroups of its own:
            // Slurm's tasks must stay in Slurm's all the same.
            .args(["--daemon-args", "n1=--cgroup-slice"])
            .output()
            .unwrap();
        let mut cluster = Cluster {
            dir: dir.to_path_buf(),
            id: String::new(),
            stopped: false,
        };
        assert!(
            out.status.success(),
            "the cluster did not start: {}",
            text(&out).1
        );
        cluster.id = std::fs::read_to_string(dir.join("etc/id"))
            .unwrap()
            .trim()
            .to_string();
        cluster
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(script())
            .arg(args[0])
            .arg(&self.dir)
            .args(&args[1..])
            .output()
            .unwrap()
    }

    /// A Slurm command's standard output; it must succeed.
    fn client(&self, args: &[&str]) -> String {
        let mut all = vec!["client"];
        all.extend_from_slice(args);
        let out = self.run(&all);
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{args:?}: {stderr}");
        stdout
    }

    fn socket(&self, node: &str) -> PathBuf {
        self.dir.join(node).join("run/coloc-daemon/coloc.sock")
    }

    fn status(&self, node: &str) -> Status {
        let out = coloc()
            .args(["status", "--json", "--socket"])
            .arg(self.socket(node))
            .output()
            .unwrap();
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "status of {node}: {stderr}");
        serde_json::from_str(&stdout).unwrap()
    }

    /// Submits `omp_sum regions` to `node`, as `user` (None: root);
    /// returns the job id.
    fn submit(
        &self,
        node: &str,
        user: Option<&TestUser>,
        options: &[&str],
        program: &Path,
        regions: u64,
    ) -> u32 {
        let output = format!("{}/jobs/%j.out", self.dir.display());
        let wrap = format!("{} {regions} {TERMS}", program.display());
        let mut args = match user {
            Some(u) => vec!["runuser", "-u", &u.name, "--"],
            None => Vec::new(),
        };
        args.extend_from_slice(&[
            "sbatch",
            "--parsable",
            "--oversubscribe",
            "-w",
            node,
            "-c",
            "2",
            "-o",
            &output,
        ]);
        args.extend_from_slice(options);
        args.extend_from_slice(&["--wrap", &wrap]);
        let id = self.client(&args);
        id.trim().split(';').next().unwrap().parse().unwrap()
    }

    fn pending(&self, jobs: &[u32]) -> bool {
        let ids = jobs
            .iter()
            .map(|j| j.to_string())
            .collect::<Vec<_>>()
            .join(",");
        !self
            .client(&["squeue", "-h", "-o", "%i", "-j", &ids])
            .trim()
            .is_empty()
    }

    /// Each job's state in the job completion records (`sacct --completion`:
    /// the cluster has jobcomp/filetxt and no slurmdbd, docs/slurm.md).
    fn completion(&self, jobs: &[u32]) -> BTreeMap<u32, String> {
        let ids = jobs
            .iter()
            .map(|j| j.to_string())
            .collect::<Vec<_>>()
            .join(",");
        self.client(&["sacct", "-c", "-n", "-P", "-o", "jobid,state", "-j", &ids])
            .lines()
            .filter_map(|l| {
                let (id, state) = l.split_once('|')?;
                Some((id.parse().ok()?, state.trim().to_string()))
            })
            .collect()
    }

    fn log(&self, rel: &str) -> String {
        std::fs::read_to_string(self.dir.join(rel)).unwrap_or_default()
    }

    fn stop(&mut self) {
        self.stopped = true;
        let out = self.run(&["stop"]);
        assert!(out.status.success(), "stop: {}", text(&out).1);
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.stopped {
            return;
        }
        if std::thread::panicking() {
            for rel in [
                "ctl/slurmctld.log",
                "n1/slurmd.log",
                "n2/slurmd.log",
                "n1/coloc.log",
                "n2/coloc.log",
            ] {
                let log = self.log(rel);
                let tail: Vec<&str> = log.lines().rev().take(15).collect();
                eprintln!("--- {rel} (last lines)");
                for l in tail.iter().rev() {
                    eprintln!("{l}");
                }
            }
        }
        let _ = self.run(&["stop"]);
    }
}

/// The cpuset cgroup of process `pid` (its path in the hierarchy).
fn cpuset_cgroup(pid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
        .ok()?
        .lines()
        .find_map(|l| {
            let mut f = l.splitn(3, ':');
            let (_, controllers, path) = (f.next()?, f.next()?, f.next()?);
            controllers
                .split(',')
                .any(|c| c == "cpuset")
                .then(|| path.to_string())
        })
}

/// Whether process `pid` is exiting or gone: the kernel has set its
/// `PF_EXITING` flag (`/proc/PID/stat`'s ninth field), which it never clears.
/// On a cgroup v1 hierarchy an exiting process's `/proc/PID/cgroup` reads `/`
/// whatever cgroup it is in (`proc_cgroup_show`, kernel/cgroup/cgroup.c): a
/// `/` read before this says `false` was the process's real cgroup.
fn exiting(pid: u32) -> bool {
    const PF_EXITING: u64 = 0x4;
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return true;
    };
    // After the command's ')': state, ppid, pgrp, session, tty, tpgid, flags.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(6)?.parse::<u64>().ok())
        .is_some_and(|flags| flags & PF_EXITING != 0)
}

fn cgroup_cpus(cgroup: &str) -> Option<CpuSet> {
    std::fs::read_to_string(format!(
        "/sys/fs/cgroup/cpuset{cgroup}/cpuset.effective_cpus"
    ))
    .ok()?
    .trim()
    .parse()
    .ok()
}

fn exe_name(pid: u32) -> String {
    std::fs::read_link(format!("/proc/{pid}/exe"))
        .map(|p| {
            p.file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned()
        })
        .unwrap_or_default()
}

/// What the test saw of one job while it ran.
#[derive(Debug, Default)]
struct Seen {
    node: String,
    app: Option<AppStatus>,
    /// The owner of its DoP record, if it has one (`COLOC_OMP_RECORD`).
    record_owner: Option<u32>,
    /// Every thread of its OpenMP program was where the plan said, once.
    placed: bool,
    /// Its plan's CPUs were fewer than its cgroup's: coloc narrowed within.
    narrowed: bool,
    /// Whether its OpenMP program had the shim mapped (None: not seen).
    shim: Option<bool>,
}

/// One look at an app of a job: checks what must always hold (its processes
/// in the job's cgroup, their threads and its plan within the cgroup's CPUs)
/// and notes what was seen.
fn look(job: u32, app: &AppStatus, seen: &mut Seen) {
    let Some(plan) = &app.plan else { return };
    let mut tree = vec![app.pid];
    tree.extend(descendants(app.pid));
    let mut all_placed = true;
    let mut omp = None;
    for &pid in &tree {
        let Some(cgroup) = cpuset_cgroup(pid) else {
            continue; // ended meanwhile
        };
        let in_job = cgroup.ends_with(&format!("/job_{job}/step_batch"));
        if !in_job && exiting(pid) {
            continue; // its cgroup read as the root's, as an exiting one's does
        }
        assert!(
            in_job,
            "job {job}'s process {pid} left Slurm's cgroup: {cgroup}"
        );
        let Some(cg_cpus) = cgroup_cpus(&cgroup) else {
            continue;
        };
        let planned = plan.placement.cpus();
        assert!(
            planned.is_empty() || planned.intersection(&cg_cpus) == planned,
            "job {job}'s plan {planned} is not within its cpuset {cg_cpus}"
        );
        if !planned.is_empty() && planned != cg_cpus {
            seen.narrowed = true;
        }
        if exe_name(pid) == "omp_sum" {
            omp = Some(pid);
        }
        for tid in tids_of(pid) {
            let Some(cpus) = status_of(pid, tid).and_then(|s| cpus_allowed(&s)) else {
                continue;
            };
            assert!(
                cpus.intersection(&cg_cpus) == cpus,
                "job {job}'s thread {tid} may run on {cpus}, beyond its cpuset {cg_cpus}"
            );
            if plan.placement.cpus_of(tid) != Some(&cpus) {
                all_placed = false;
            }
        }
    }
    if let Some(pid) = omp {
        if all_placed && tids_of(pid).len() >= 2 {
            seen.placed = true;
        }
        if let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) {
            seen.shim = Some(maps.contains("libcoloc_omp"));
        }
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        let record = String::from_utf8_lossy(&environ)
            .split('\0')
            .find_map(|v| v.strip_prefix("COLOC_OMP_RECORD=").map(str::to_string));
        if let Some(owner) = record
            .and_then(|r| std::fs::metadata(r).ok())
            .map(|m| std::os::unix::fs::MetadataExt::uid(&m))
        {
            seen.record_owner = Some(owner);
        }
    }
}

/// The arrive names and exit statuses of a node's trace, by app number.
fn trace_of(path: &Path) -> (BTreeMap<u32, String>, BTreeMap<u32, ExitStatus>) {
    let mut names = BTreeMap::new();
    let mut exits = BTreeMap::new();
    for line in std::fs::read_to_string(path).unwrap_or_default().lines() {
        match serde_json::from_str::<TraceEvent>(line) {
            Ok(TraceEvent::Arrive {
                app,
                name: Some(name),
                ..
            }) => {
                names.insert(app.app, name);
            }
            Ok(TraceEvent::Exit { app, status, .. }) => {
                exits.insert(app.app, status);
            }
            _ => {}
        }
    }
    (names, exits)
}

fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let until = Instant::now() + limit;
    while Instant::now() < until {
        if done() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("timed out after {limit:?} waiting for {what}");
}

/// The output each job must print: every region adds TERMS/1000 * 499500.
fn expected_output(regions: u64) -> String {
    format!(
        "omp_sum regions={regions} n={TERMS} sum={}",
        regions * (TERMS / 1000) * 499_500
    )
}

fn check_outputs(cluster: &Cluster, jobs: &[u32], regions: u64) {
    for job in jobs {
        let out = cluster.log(&format!("jobs/{job}.out"));
        assert!(
            out.contains(&expected_output(regions)),
            "job {job} printed {out:?}"
        );
        assert!(!out.contains("error"), "job {job} printed {out:?}");
    }
    let mut states = BTreeMap::new();
    wait_until(
        "the jobs' completion records",
        Duration::from_secs(20),
        || {
            states = cluster.completion(jobs);
            states.len() == jobs.len()
        },
    );
    for job in jobs {
        assert_eq!(states[job], "COMPLETED", "sacct: job {job}: {states:?}");
    }
}

#[test]
fn openmp_jobs_sharing_slurm_nodes_run_under_coloc_and_without_it() {
    if !is_root() {
        return;
    }
    if let Some(why) = missing() {
        eprintln!("skipped: {why}");
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("coloc-slurm-test")
        .tempdir_in("/tmp")
        .unwrap();
    let base = dir.path().to_path_buf();
    // A user's job reads the program from here.
    std::fs::set_permissions(&base, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let Some(user) = TestUser::create("slurm") else {
        return;
    };
    let plugin = base.join("libcoloc_spank.so");
    let out = coloc().arg("spank-plugin").arg(&plugin).output().unwrap();
    if !out.status.success() {
        eprintln!("skipped: {}", text(&out).1.trim());
        return;
    }
    let program = base.join("omp_sum");
    let cc = Command::new("cc")
        .args(["-O1", "-fopenmp", "-o"])
        .arg(&program)
        .arg(repo("crates/cli/tests/slurm/omp_sum.c"))
        .output()
        .unwrap();
    assert!(cc.status.success(), "cc: {}", text(&cc).1);
    // A process of root's outside the cluster: no node's daemon touches it.
    let mut started = Started::default();
    let root = RootUntouched::new(&mut started, None);
    let cluster_dir = base.join("cluster");
    let mut cluster = Cluster::start(&cluster_dir, &plugin);

    // Two jobs on each node: one of n1's not malleable and latency-class,
    // one of n2's a user's.
    let mut jobs: Vec<(u32, &str, bool, u32)> = Vec::new();
    for (node, as_user, options, malleable) in [
        ("n1", false, &["--coloc-malleable"][..], true),
        ("n1", false, &["--coloc-class=latency"][..], false),
        ("n2", false, &["--coloc-malleable"][..], true),
        ("n2", true, &["--coloc-malleable"][..], true),
    ] {
        let by = as_user.then_some(&user);
        let id = cluster.submit(node, by, options, &program, REGIONS);
        jobs.push((id, node, malleable, by.map_or(0, |u| u.uid)));
    }
    let ids: Vec<u32> = jobs.iter().map(|j| j.0).collect();
    let mut seen: BTreeMap<u32, Seen> = BTreeMap::new();
    let until = Instant::now() + Duration::from_secs(240);
    while cluster.pending(&ids) {
        assert!(Instant::now() < until, "the jobs did not end in 240 s");
        for node in NODES {
            for app in cluster.status(node).apps {
                let Some(job) = &app.job else { continue };
                let s = seen.entry(job.id).or_default();
                s.node = node.to_string();
                look(job.id, &app, s);
                s.app = Some(app);
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    for (id, node, malleable, uid) in &jobs {
        let s = seen
            .get(id)
            .unwrap_or_else(|| panic!("job {id} never appeared in coloc status: {seen:?}"));
        let app = s.app.as_ref().unwrap();
        assert_eq!(s.node, *node, "job {id} ran on {}", s.node);
        assert_eq!(app.name, format!("job{id}.batch"));
        assert_eq!(app.kind, "task");
        assert_eq!(app.uid, *uid, "job {id}'s owner");
        let job = app.job.as_ref().unwrap();
        assert_eq!((job.id, job.step.as_str()), (*id, "batch"));
        let class = if *malleable { "batch" } else { "latency" };
        assert_eq!(
            serde_json::to_value(app.class).unwrap(),
            class,
            "job {id}'s class"
        );
        assert!(
            s.placed,
            "job {id}'s threads were never seen on its plan's CPUs: {s:?}"
        );
        assert_eq!(
            s.shim,
            Some(*malleable),
            "job {id}: the shim is preloaded exactly into --coloc-malleable jobs"
        );
        if *malleable {
            assert_eq!(s.record_owner, Some(*uid), "job {id}'s DoP record's owner");
        }
    }
    for node in NODES {
        assert!(
            seen.values().any(|s| s.node == node && s.narrowed),
            "coloc never narrowed a job on {node} within its cpuset: {seen:?}"
        );
    }
    check_outputs(&cluster, &ids, REGIONS);

    // The traces name the jobs, and each task's end came from slurmstepd.
    for node in NODES {
        let trace = cluster.dir.join(node).join("coloc-trace.jsonl");
        let on_node: Vec<u32> = jobs.iter().filter(|j| j.1 == node).map(|j| j.0).collect();
        wait_until(
            &format!("{node}'s trace to hold its jobs' ends"),
            Duration::from_secs(10),
            || {
                let (names, exits) = trace_of(&trace);
                on_node.iter().all(|id| {
                    names
                        .iter()
                        .find(|(_, n)| **n == format!("job{id}.batch"))
                        .is_some_and(|(app, _)| exits.get(app) == Some(&ExitStatus::Code(0)))
                })
            },
        );
    }

    // Nothing coloc changed is left: no app, no saved state, no DoP record,
    // and every thread whose settings it changed has ended.
    for node in NODES {
        let mut status = cluster.status(node);
        wait_until(
            &format!("{node}'s daemon to let its apps go"),
            Duration::from_secs(10),
            || {
                status = cluster.status(node);
                status.apps.is_empty()
            },
        );
        let run = cluster.dir.join(node).join("run/coloc");
        let state = std::fs::read_to_string(run.join("daemon.state")).unwrap();
        assert_eq!(state.trim(), r#"{"apps":[]}"#, "{node}'s saved state");
        let records: Vec<String> = std::fs::read_dir("/dev/shm")
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(&format!("coloc-{}-", status.daemon_pid)))
            .collect();
        assert!(
            records.is_empty(),
            "{node}'s DoP records are left: {records:?}"
        );
        let journal =
            std::fs::read_to_string(run.join(format!("{}.journal", status.daemon_pid))).unwrap();
        let mut changed = 0;
        for line in journal.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            if v["event"] != "changed" {
                continue;
            }
            changed += 1;
            let (pid, tid) = (
                v["pid"].as_u64().unwrap() as u32,
                v["tid"].as_u64().unwrap() as u32,
            );
            assert_ne!(
                start_ticks(pid, tid),
                v["start"].as_u64(),
                "{node}: thread {tid} whose settings coloc changed still runs"
            );
        }
        assert!(
            changed > 0,
            "{node}'s journal recorded no change: {journal}"
        );
    }

    // With the daemons stopped, jobs run unmanaged, each saying so once in
    // its node's log, and complete.
    for node in NODES {
        let out = cluster.run(&["daemon", node, "stop"]);
        assert!(out.status.success(), "{}", text(&out).1);
        let left: Vec<_> = std::fs::read_dir(cluster.dir.join(node).join("run/coloc"))
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".journal"))
            .collect();
        assert!(
            left.is_empty(),
            "{node}: a stopped daemon left its journal: {left:?}"
        );
    }
    let unmanaged: Vec<u32> = NODES
        .iter()
        .map(|node| cluster.submit(node, None, &["--coloc-malleable"], &program, REGIONS / 6))
        .collect();
    wait_until(
        "the unmanaged jobs to end",
        Duration::from_secs(120),
        || !cluster.pending(&unmanaged),
    );
    check_outputs(&cluster, &unmanaged, REGIONS / 6);
    for (node, id) in NODES.iter().zip(&unmanaged) {
        let log = cluster.log(&format!("{node}/slurmd.log"));
        let said = format!(
            "coloc: no daemon at /run/coloc-daemon/coloc.sock (No such file or directory): job{id}.batch runs unmanaged"
        );
        assert_eq!(log.matches(&said).count(), 1, "{node}'s log:\n{log}");
    }

    // Stopping the cluster leaves nothing: no process, namespace, cgroup or file.
    let id = cluster.id.clone();
    cluster.stop();
    assert!(!cluster_dir.exists(), "{} is left", cluster_dir.display());
    let netns = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let prefix = format!("coloc-{id}-");
    assert!(
        !text(&netns).0.contains(&prefix),
        "namespaces are left: {}",
        text(&netns).0
    );
    let cgroups: BTreeSet<String> = std::fs::read_dir("/sys/fs/cgroup")
        .unwrap()
        .flatten()
        .flat_map(|h| std::fs::read_dir(h.path()).into_iter().flatten().flatten())
        .map(|e| e.path().display().to_string())
        .filter(|p| p.contains(&format!("coloc-slurm-{id}-")))
        .collect();
    assert!(cgroups.is_empty(), "cgroups are left: {cgroups:?}");
    let cluster_path = cluster_dir.display().to_string();
    let procs: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            cmdline.contains(&cluster_path).then_some(cmdline)
        })
        .collect();
    assert!(procs.is_empty(), "processes are left: {procs:?}");
    root.check("");
}
