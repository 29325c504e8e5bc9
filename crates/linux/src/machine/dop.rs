//! The OpenMP DoP channel per instance (coloc_shim): for malleable apps built
//! with libgomp, LLVM's libomp or Intel's libiomp5, `libcoloc_omp.so` is
//! preloaded (libgomp: it interposes the parallel entry points; the others:
//! it is their OMPT tool) and told each new DoP and CPU list through a
//! shared-memory record; a static executable, or one whose OMPT tool is
//! turned off (`OMP_TOOL=disabled`), runs with its DoP unmanaged, and coloc
//! says so instead of pretending.
//!
//! A malleable app whose executable links no OpenMP runtime, or is no ELF
//! file, is taken as a launcher: a shell (`sh -c "prog … && cmp …"`), a
//! script or an interpreter that starts the OpenMP program. The shim is
//! preloaded all the same; it stays inert in every program that starts no
//! OpenMP region, and the first OpenMP program of the app takes the channel
//! (a second finds it taken and runs as it would without coloc). Until one
//! does, the app reports no DoP seen, so policies count its DoP lever as
//! having no channel (`coloc_policy::cores::lever`).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use coloc_model::reason::levers::{Channel, Levers, NoChannel};
use coloc_model::user_file::read_user_file;
use coloc_model::{AppId, AppSample, CpuSet, OmpSample};
use coloc_shim::{
    extract_shim, ld_preload_with, monotonic_ns, openmp_runtime_of, shim_path,
    threaded_runtimes_of, DopChannel, OmpRuntime, AFFINITY_ENV, RECORD_ENV,
};

use super::levers::levers;
use super::program_check::ProgramCheck;

/// The runtimes' own binding variables (libgomp's and LLVM's): they would
/// re-bind threads behind the shim's pinning (see the coloc_shim docs), so
/// they are removed from the environment of apps whose DoP and CPUs coloc
/// manages.
const BINDING_ENV: [&str; 4] = [
    "OMP_PROC_BIND",
    "OMP_PLACES",
    "GOMP_CPU_AFFINITY",
    "KMP_AFFINITY",
];

/// Most bytes of one object (the program or a library it needs) the
/// OpenMP-runtime check reads (docs/safety.md, Files users name): larger
/// objects are not examined.
pub const MAX_PROGRAM: u64 = 64 << 20;

/// Finds `argv0` (on `path` when it has no slash) and tells its OpenMP
/// runtime and its other threaded runtimes, reading every object as a file a user named: a FIFO or a device
/// is refused unread, an object over [`MAX_PROGRAM`] is not examined. Root's
/// daemon runs this as the user who asked, off its loop (docs/service.md).
pub fn check_program(argv0: &str, path: Option<&OsStr>) -> ProgramCheck {
    let Some(exe) = find_executable(argv0, path) else {
        return ProgramCheck::failed(format!("{argv0} not found on PATH"));
    };
    let read = |p: &Path| read_user_file(p, MAX_PROGRAM).map_err(|e| e.into_io());
    let found = openmp_runtime_of(&exe, &read).map_err(|e| e.to_string());
    let threaded = threaded_runtimes_of(&exe, &read).unwrap_or_default();
    ProgramCheck {
        exe: Some(exe),
        found,
        threaded,
    }
}

/// How an instance's DoP is handled.
#[derive(Debug)]
pub(crate) enum DopControl {
    /// Not malleable: the DoP is `OMP_NUM_THREADS`, fixed at launch.
    Off,
    Managed(Managed),
    /// Malleable, but the shim cannot steer it; said once when a DoP is planned.
    NotManaged {
        reason: String,
        reported: bool,
    },
}

/// A live channel and what coloc last asked through it.
#[derive(Debug)]
pub(crate) struct Managed {
    channel: DopChannel,
    dop: u32,
    cpus: Vec<u32>,
    /// (generation, DoP) of recent `set`s, to tell which DoP the app has seen.
    sets: Vec<(u64, u32)>,
}

/// One reading of the record: the OpenMP sample and the progress inside
/// regions (docs/signals.md, Progress inside a region).
#[derive(Debug)]
pub(crate) struct OmpReport {
    pub omp: OmpSample,
    /// The team's progress count.
    pub steps: u64,
    /// Each thread's own count by tid; tid 0 is the slot shared by threads
    /// past the record's slots, which no thread sample gets.
    pub thread_steps: Vec<(u32, u64)>,
}

impl OmpReport {
    /// Puts the report into the app's sample: its OpenMP sample, the team's
    /// progress and each listed thread's own.
    pub fn fill(self, sample: &mut AppSample) {
        sample.omp = Some(self.omp);
        sample.omp_steps = Some(self.steps);
        for (tid, steps) in self.thread_steps {
            if let Some(t) = sample.threads.iter_mut().find(|t| t.tid == tid && tid != 0) {
                t.omp_steps = Some(steps);
            }
        }
    }
}

/// What a launch needs: the control and the environment changes, and what
/// the program check found (None: not checked).
#[derive(Debug)]
pub(crate) struct DopSetup {
    pub control: DopControl,
    pub set_env: Vec<(OsString, OsString)>,
    pub remove_env: &'static [&'static str],
    pub levers: Option<Levers>,
}

/// Everything [`prepare`] needs to know about the instance.
#[derive(Debug)]
pub(crate) struct DopLaunch<'a> {
    pub id: AppId,
    pub malleable: bool,
    pub argv0: &'a str,
    /// The app's environment as configured (for PATH and LD_PRELOAD).
    pub env: &'a std::collections::BTreeMap<String, String>,
    pub dop: u32,
    pub cpus: Vec<u32>,
    pub shm_dir: &'a Path,
    /// Where the shim is extracted; None: this user's cache directory. Root's
    /// daemon preloads it into other users' programs, which must be able to
    /// read it (`LinuxOptions::shim_dir`).
    pub shim_dir: Option<&'a Path>,
    /// The user the app runs as, when not coloc's: the record is given to
    /// it, for the shim in the app reads and writes the record.
    pub owner: Option<u32>,
    /// The CPUs the app may run on before coloc places it: what threads the
    /// shim pinned get back when coloc stops pinning them (`AFFINITY_ENV`).
    pub own_cpus: Option<CpuSet>,
    /// The program check made already (by root's daemon, as the app's
    /// user; by `coloc run` for every app); None: [`check_program`] here
    /// for a malleable app.
    pub runtime: Option<ProgramCheck>,
}

/// Sets up the channel of a malleable libgomp app; anything else gets its DoP
/// unmanaged, with the reason (a failure of the shim is not a failure to
/// launch: the app runs as it would without coloc's DoP).
pub(crate) fn prepare(l: &DopLaunch<'_>) -> DopSetup {
    if !l.malleable {
        return DopSetup {
            control: DopControl::Off,
            set_env: Vec::new(),
            remove_env: &[],
            levers: l.runtime.as_ref().map(|c| levers(c, Channel::NotMalleable)),
        };
    }
    let var = |k: &str| {
        l.env
            .get(k)
            .map(OsString::from)
            .or_else(|| std::env::var_os(k))
    };
    let check = l
        .runtime
        .clone()
        .unwrap_or_else(|| check_program(l.argv0, var("PATH").as_deref()));
    let unmanaged = |reason: String, why: NoChannel| DopSetup {
        control: DopControl::NotManaged {
            reason,
            reported: false,
        },
        set_env: Vec::new(),
        remove_env: &[],
        levers: Some(levers(&check, Channel::None { why })),
    };
    let failed = |error: String| unmanaged(error.clone(), NoChannel::Failed { error });
    let exe = check.exe.clone().unwrap_or_default();
    let mut reach = Channel::Acts;
    match &check.found {
        Ok(OmpRuntime::Gomp) => {}
        Ok(r @ (OmpRuntime::LlvmOmp | OmpRuntime::Intel)) => {
            if var("OMP_TOOL").is_some_and(|v| v.eq_ignore_ascii_case("disabled")) {
                return unmanaged(
                    format!(
                        "{}: {r}, and OMP_TOOL=disabled in its environment turns off the OMPT \
                         tool that steers it",
                        exe.display()
                    ),
                    NoChannel::ToolDisabled,
                );
            }
        }
        Ok(r @ (OmpRuntime::None | OmpRuntime::Unknown)) => {
            tracing::info!(
                app = %l.id,
                "{}: {r}: the DoP channel waits for an OpenMP program it starts (module docs)",
                exe.display()
            );
            reach = Channel::Launcher;
        }
        Ok(r @ OmpRuntime::Static) => {
            return unmanaged(format!("{}: {r}", exe.display()), NoChannel::Static)
        }
        Err(e) => return failed(e.clone()),
    }
    let shim = match l.shim_dir.map_or_else(shim_path, extract_shim) {
        Ok(s) => s,
        Err(e) => return failed(format!("extracting libcoloc_omp.so: {e}")),
    };
    // Unique per coloc process and instance; the sequence number keeps two
    // machines of one process (tests, `compare`) apart.
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let record = l.shm_dir.join(format!(
        "coloc-{}-{}-{}.{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed),
        l.id.app,
        l.id.rep
    ));
    let channel = match DopChannel::create(&record, &l.cpus, l.dop.max(1)) {
        Ok(c) => c,
        Err(e) => return failed(format!("creating the DoP record: {e}")),
    };
    if let Some(uid) = l.owner {
        if let Err(e) = std::os::unix::fs::chown(channel.path(), Some(uid), None) {
            let _ = channel.remove();
            return failed(format!(
                "giving the DoP record {} to uid {uid}: {e}",
                record.display()
            ));
        }
    }
    let mut set_env = vec![
        (
            OsString::from("LD_PRELOAD"),
            ld_preload_with(var("LD_PRELOAD").as_deref(), &shim),
        ),
        (
            OsString::from(RECORD_ENV),
            channel.path().as_os_str().to_os_string(),
        ),
    ];
    if let Some(cpus) = &l.own_cpus {
        set_env.push((OsString::from(AFFINITY_ENV), cpus.to_string().into()));
    }
    let generation = channel.generation();
    DopSetup {
        control: DopControl::Managed(Managed {
            channel,
            dop: l.dop.max(1),
            cpus: l.cpus.clone(),
            sets: vec![(generation, l.dop.max(1))],
        }),
        set_env,
        remove_env: &BINDING_ENV,
        levers: Some(levers(&check, reach)),
    }
}

/// `argv0` as the kernel would find it: a path if it has a slash, else the
/// first executable file of that name on `path`.
fn find_executable(argv0: &str, path: Option<&OsStr>) -> Option<PathBuf> {
    if argv0.contains('/') {
        return Some(PathBuf::from(argv0));
    }
    std::env::split_paths(path?)
        .map(|dir| dir.join(argv0))
        .find(|p| p.is_file())
}

impl DopControl {
    /// Keeps the record fresh (the shim ignores a stale one).
    pub fn heartbeat(&self) {
        if let DopControl::Managed(m) = self {
            m.channel.heartbeat(monotonic_ns());
        }
    }

    /// Asks for `dop` threads on `cpus` (None: the DoP stays as it is).
    pub fn apply(&mut self, dop: Option<u32>, cpus: Vec<u32>, refused: &mut Vec<String>) {
        let Some(dop) = dop else { return };
        match self {
            DopControl::Off => {}
            DopControl::NotManaged { reason, reported } => {
                if !*reported {
                    *reported = true;
                    tracing::warn!("DoP {dop} not applied: DoP is not managed ({reason})");
                    refused.push(format!("DoP {dop}: DoP is not managed ({reason})"));
                }
            }
            DopControl::Managed(m) => {
                if m.dop == dop && m.cpus == cpus {
                    return;
                }
                match m.channel.set(dop, &cpus) {
                    Ok(()) => {
                        m.dop = dop;
                        m.cpus = cpus;
                        let seen = m.channel.read().generation_seen;
                        m.sets.retain(|(g, _)| *g >= seen);
                        m.sets.push((m.channel.generation(), dop));
                    }
                    Err(e) => refused.push(format!("DoP {dop}: {e}")),
                }
            }
        }
    }

    /// Asks a shim app's threads to interleave their future allocations over
    /// `nodes` (Some), or to go back to the policy they had (None); each
    /// thread makes the `set_mempolicy` call itself at its next outermost
    /// region (the kernel sets no other process's policy). Apps without the
    /// channel keep their own policy for later allocations: only their
    /// existing pages are moved (`pages.rs`).
    pub fn apply_interleave(&mut self, nodes: Option<&[u32]>, refused: &mut Vec<String>) {
        let DopControl::Managed(m) = self else {
            return;
        };
        match m.channel.set_interleave(nodes.unwrap_or_default()) {
            Ok(false) => {}
            Ok(true) => {
                let seen = m.channel.read().generation_seen;
                m.sets.retain(|(g, _)| *g >= seen);
                m.sets.push((m.channel.generation(), m.dop));
            }
            Err(e) => refused.push(format!("memory policy of later allocations: {e}")),
        }
    }

    /// What the app reported through the record; None without a channel.
    pub fn sample(&self) -> Option<OmpReport> {
        let DopControl::Managed(m) = self else {
            return None;
        };
        let s = m.channel.read();
        let dop_seen = m
            .sets
            .iter()
            .find(|(g, _)| *g == s.generation_seen)
            .map(|(_, d)| *d);
        Some(OmpReport {
            omp: OmpSample {
                in_parallel: s.in_parallel > 0,
                team_size: s.team_size,
                regions_completed: s.regions_completed,
                iterations_completed: s.iterations_completed,
                parallel_ns: s.parallel_ns,
                max_threads_asked: s.max_threads_asked,
                dop_seen,
            },
            steps: s.steps_completed,
            thread_steps: s.thread_steps,
        })
    }

    /// Removes the record; an app still mapping it turns inert.
    pub fn remove(self) {
        if let DopControl::Managed(m) = self {
            if let Err(e) = m.channel.remove() {
                tracing::warn!("removing the DoP record: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_executables_on_path() {
        assert_eq!(
            find_executable("./x", None),
            Some(PathBuf::from("./x")),
            "a path is taken as it is"
        );
        let found = find_executable("sh", Some(OsStr::new("/nonexistent:/bin:/usr/bin")));
        assert!(found.is_some_and(|p| p.ends_with("sh")));
        assert_eq!(
            find_executable("sh", Some(OsStr::new("/nonexistent"))),
            None
        );
    }

    /// A shell links no OpenMP runtime: the shim is offered to the programs
    /// it starts, and until one takes the channel no DoP is seen. A program
    /// that cannot be found is not managed, and says so once.
    #[test]
    fn a_shell_offers_the_channel_and_a_missing_program_says_it_is_not_managed() {
        let env = Default::default();
        let dir = tempfile::tempdir().unwrap();
        let launch = |argv0| DopLaunch {
            id: AppId::default(),
            malleable: true,
            argv0,
            env: &env,
            dop: 2,
            cpus: vec![0],
            shm_dir: dir.path(),
            shim_dir: None,
            owner: None,
            own_cpus: Some("0-1".parse().unwrap()),
            runtime: None,
        };
        let mut shell = prepare(&launch("/bin/sh"));
        assert!(matches!(shell.control, DopControl::Managed(_)));
        let env: Vec<_> = shell
            .set_env
            .iter()
            .map(|(k, _)| k.to_str().unwrap())
            .collect();
        assert_eq!(env, ["LD_PRELOAD", RECORD_ENV, AFFINITY_ENV]);
        assert_eq!(shell.set_env[2].1, "0-1");
        let mut refused = Vec::new();
        shell.control.apply(Some(1), vec![0], &mut refused);
        assert!(refused.is_empty(), "{refused:?}");
        let sample = shell.control.sample().expect("a channel");
        assert_eq!(sample.omp.dop_seen, None, "no program took it");
        shell.control.remove();

        let mut missing = prepare(&launch("coloc-no-such-program"));
        assert!(missing.set_env.is_empty());
        let mut refused = Vec::new();
        missing.control.apply(Some(1), vec![], &mut refused);
        missing.control.apply(Some(2), vec![], &mut refused);
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert!(refused[0].contains("not managed"), "{refused:?}");
        assert!(refused[0].contains("not found on PATH"), "{refused:?}");
        assert!(missing.control.sample().is_none());
    }

    /// The record's counts go into the app's sample: the team's, and each
    /// listed thread's own by tid; the shared last slot (tid 0) and threads
    /// the record does not list get none.
    #[test]
    fn a_report_fills_the_team_and_thread_progress() {
        use coloc_model::ThreadSample;
        let thread = |tid| ThreadSample {
            tid,
            ..ThreadSample::default()
        };
        let mut sample = AppSample {
            threads: vec![thread(10), thread(11), thread(12)],
            ..AppSample::default()
        };
        let report = OmpReport {
            omp: OmpSample {
                team_size: 2,
                ..OmpSample::default()
            },
            steps: 42,
            thread_steps: vec![(10, 30), (11, 28), (0, 5)],
        };
        report.fill(&mut sample);
        assert_eq!(sample.omp.map(|o| o.team_size), Some(2));
        assert_eq!(sample.omp_steps, Some(42));
        let own: Vec<Option<u64>> = sample.threads.iter().map(|t| t.omp_steps).collect();
        assert_eq!(own, [Some(30), Some(28), None]);
    }

    /// A program on LLVM's runtime gets the channel (the shim is its OMPT
    /// tool), and the runtime's binding variables are removed; with
    /// OMP_TOOL=disabled in its environment the tool cannot start, and the
    /// DoP is not managed, with that reason. Skipped without clang.
    #[test]
    fn an_llvm_program_is_managed_unless_its_tool_interface_is_off() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("p.c");
        std::fs::write(
            &src,
            "int main(void){\n#pragma omp parallel\n{}\nreturn 0;}\n",
        )
        .unwrap();
        let exe = dir.path().join("p");
        let built = std::process::Command::new("clang")
            .args(["-fopenmp=libomp", "-o"])
            .arg(&exe)
            .arg(&src)
            .status();
        if !built.is_ok_and(|s| s.success()) {
            eprintln!(
                "skipped: clang -fopenmp=libomp is not available (scripts/setup installs it)"
            );
            return;
        }
        let argv0 = exe.to_str().unwrap();
        let launch = |env| DopLaunch {
            id: AppId::default(),
            malleable: true,
            argv0,
            env,
            dop: 1,
            cpus: vec![],
            shm_dir: dir.path(),
            shim_dir: None,
            owner: None,
            own_cpus: None,
            runtime: None,
        };
        let plain = Default::default();
        let managed = prepare(&launch(&plain));
        assert!(matches!(managed.control, DopControl::Managed(_)));
        assert!(managed.remove_env.contains(&"KMP_AFFINITY"));
        managed.control.remove();
        let off = [("OMP_TOOL".to_string(), "disabled".to_string())].into();
        let mut refused = Vec::new();
        let mut unmanaged = prepare(&launch(&off));
        unmanaged.control.apply(Some(1), vec![], &mut refused);
        assert!(refused[0].contains("OMP_TOOL=disabled"), "{refused:?}");
    }
}
