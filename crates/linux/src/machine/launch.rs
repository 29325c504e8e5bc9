//! Starting an instance with its initial plan in force from its first
//! instruction, and journaled before it is in force.
//!
//! The settings are applied by the child itself between fork and exec
//! (`pre_exec`: `set_mempolicy` only acts on the calling task). To journal them
//! first, the child and a helper thread of coloc shake hands over two pipes
//! while `Command::spawn` waits for the exec: the child sends its pid; the
//! helper reads the child's current settings (those it inherited from coloc),
//! journals them and sends "go"; the child applies the plan, sends one errno
//! per setting back, and execs. If the journal cannot be written (or anything
//! else stops coloc's side) the helper closes its end instead, and the child
//! exits without running the program.
//!
//! The child closes its inherited copies of coloc's ends of both pipes before it
//! waits for "go": otherwise its own copy of the write end would keep the pipe
//! open, an early return of the helper would never reach it as end of file, and
//! `Command::spawn` (waiting for the exec) and the child would wait for each
//! other forever. With them closed, every way coloc's side can end (an error, a
//! panic, coloc killed with SIGKILL) ends the child too.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use coloc_model::MemPolicy;
use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sched::CpuSet as NixCpuSet;
use nix::unistd::{pipe2, read, write, Pid};

use super::actuate::{check_slice, read_nice, read_slice, Fail, TaskSettings, Wanted};
use super::journal::{Entry, Journal, JournalError, Original};
use super::sys;
use super::tasks::{ProcRoot, TaskId};

/// What to start and how.
#[derive(Debug)]
pub(crate) struct Spawn<'a> {
    pub argv: &'a [String],
    pub env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    pub remove_env: &'a [&'a str],
    pub stdout: File,
    pub stderr: File,
    /// Settings for the main thread.
    pub want: Wanted,
    /// Memory policy mode and node mask (`MPOL_*`, words of node bits).
    pub memory: Option<(i32, Vec<libc::c_ulong>)>,
}

/// A started child with its main thread's settings.
#[derive(Debug)]
pub(crate) struct Started {
    pub child: Child,
    pub main: TaskSettings,
    /// Settings the kernel refused in the child (the app runs without them).
    pub refused: Vec<String>,
}

/// Why an instance did not start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LaunchError {
    #[error("{0}")]
    Spawn(io::Error),
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error("the child vanished before it ran the program")]
    NoChild,
}

/// The memory policy to set at launch: MPOL_LOCAL, or MPOL_INTERLEAVE over the
/// NUMA nodes of `nodes`. Default leaves the policy inherited from coloc.
pub(crate) fn memory_policy(policy: MemPolicy, nodes: &[u32]) -> Option<(i32, Vec<libc::c_ulong>)> {
    match policy {
        MemPolicy::Default => None,
        MemPolicy::Local => Some((sys::MPOL_LOCAL, Vec::new())),
        MemPolicy::Interleave => {
            let bits = libc::c_ulong::BITS;
            let words = nodes.iter().max().map_or(1, |m| (m / bits + 1) as usize);
            let mut mask = vec![0; words];
            for n in nodes {
                mask[(n / bits) as usize] |= 1 << (n % bits);
            }
            Some((sys::MPOL_INTERLEAVE, mask))
        }
    }
}

/// Sets the calling process's memory policy to `policy` over `nodes`, as a
/// launch does between fork and exec: for a process that execs its program
/// after coloc admitted it (`coloc exec`'s held child, docs/service.md), the
/// policy survives the exec. `Default` leaves it as it is.
pub fn set_own_memory_policy(policy: MemPolicy, nodes: &[u32]) -> Result<(), Errno> {
    match memory_policy(policy, nodes) {
        Some((mode, mask)) => sys::set_mempolicy(mode, &mask),
        None => Ok(()),
    }
}

/// Order of the per-setting results the child sends back.
const RESULTS: usize = 4;
const AFFINITY: usize = 0;
const NICE: usize = 1;
const SLICE: usize = 2;
const MEMORY: usize = 3;
/// The "go" byte: this bit, plus bit `i` for each setting `i` the child may apply
/// (those whose originals are journaled; the memory policy of a new process has
/// no original to restore).
const GO: u8 = 0x80;

/// Everything the child uses between fork and exec, prepared before the fork
/// (no allocation happens in the child).
struct ChildPlan {
    affinity: Option<NixCpuSet>,
    nice: Option<i32>,
    slice_ns: Option<u64>,
    memory: Option<(i32, Vec<libc::c_ulong>)>,
    to_parent: OwnedFd,
    from_parent: OwnedFd,
    /// coloc's ends of the two pipes (open in coloc until the handshake ends),
    /// which the child's copies must not keep open.
    parent_ends: [RawFd; 2],
}

impl ChildPlan {
    /// Runs in the child: async-signal-safe calls only.
    fn run(&self) -> io::Result<()> {
        for fd in self.parent_ends {
            // SAFETY: close(2) on a descriptor number is async-signal-safe; these
            // are the child's copies of coloc's pipe ends (open in coloc at the
            // fork: the helper holds them until the child has reported), so the
            // numbers name exactly those pipes here.
            unsafe { libc::close(fd) };
        }
        let pid = nix::unistd::getpid().as_raw().to_ne_bytes();
        write_all(&self.to_parent, &pid)?;
        let mut go = [0u8; 1];
        if read(&self.from_parent, &mut go)? != 1 || go[0] & GO == 0 {
            return Err(io::Error::from_raw_os_error(libc::ECANCELED));
        }
        let allowed = |i: usize| go[0] & (1 << i) != 0;
        let errno = |r: Result<(), Errno>| r.err().map_or(0, |e| e as i32);
        let mut results = [0i32; RESULTS];
        if let Some(mask) = self.affinity.as_ref().filter(|_| allowed(AFFINITY)) {
            results[AFFINITY] = errno(nix::sched::sched_setaffinity(Pid::from_raw(0), mask));
        }
        if let Some(n) = self.nice.filter(|_| allowed(NICE)) {
            results[NICE] = errno(sys::set_nice(0, n));
        }
        if let Some(ns) = self.slice_ns.filter(|_| allowed(SLICE)) {
            results[SLICE] = errno(sys::sched_getattr(0).and_then(|a| {
                sys::sched_setattr(
                    0,
                    &sys::SchedAttr {
                        sched_runtime: ns,
                        ..a
                    },
                )
            }));
        }
        if let Some((mode, nodes)) = self.memory.as_ref().filter(|_| allowed(MEMORY)) {
            results[MEMORY] = errno(sys::set_mempolicy(*mode, nodes));
        }
        let mut bytes = [0u8; RESULTS * 4];
        for (chunk, r) in bytes.chunks_exact_mut(4).zip(results) {
            chunk.copy_from_slice(&r.to_ne_bytes());
        }
        write_all(&self.to_parent, &bytes)
    }
}

fn write_all(fd: impl AsFd, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        match write(&fd, buf) {
            Ok(n) => buf = &buf[n..],
            Err(Errno::EINTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Reads exactly `buf.len()` bytes; false at end of file (the other side closed).
fn read_exact(fd: impl AsFd, buf: &mut [u8]) -> io::Result<bool> {
    let mut got = 0;
    while got < buf.len() {
        match read(&fd, &mut buf[got..]) {
            Ok(0) => return Ok(false),
            Ok(n) => got += n,
            Err(Errno::EINTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(true)
}

/// Starts `s` in its own process group with its settings journaled and applied.
pub(crate) fn spawn(
    s: Spawn<'_>,
    proc: &ProcRoot,
    journal: &mut Journal,
) -> Result<Started, LaunchError> {
    let (from_child, to_parent) =
        pipe2(OFlag::O_CLOEXEC).map_err(|e| LaunchError::Spawn(e.into()))?;
    let (from_parent, to_child) =
        pipe2(OFlag::O_CLOEXEC).map_err(|e| LaunchError::Spawn(e.into()))?;
    let plan = ChildPlan {
        affinity: match &s.want.affinity {
            Some(cpus) => Some(sys::cpu_mask(cpus).map_err(|e| {
                LaunchError::Spawn(io::Error::other(format!("CPUs {cpus}: {}", e.desc())))
            })?),
            None => None,
        },
        nice: s.want.nice,
        slice_ns: s.want.slice_ns,
        memory: s.memory,
        to_parent,
        from_parent,
        parent_ends: [from_child.as_raw_fd(), to_child.as_raw_fd()],
    };
    let mut cmd = Command::new(&s.argv[0]);
    cmd.args(&s.argv[1..])
        .envs(s.env)
        .stdin(Stdio::null())
        .stdout(s.stdout)
        .stderr(s.stderr)
        .process_group(0);
    for k in s.remove_env {
        cmd.env_remove(k);
    }
    // SAFETY: `ChildPlan::run` makes only async-signal-safe calls (getpid,
    // read, write, sched_setaffinity, setpriority, sched_{get,set}attr,
    // set_mempolicy) on memory prepared before the fork, and allocates nothing.
    unsafe {
        cmd.pre_exec(move || plan.run());
    }
    let want = s.want;
    let (spawned, handshake) = std::thread::scope(|scope| {
        let helper = scope.spawn(|| handshake(&from_child, to_child, &want, proc, journal));
        let spawned = cmd.spawn();
        // Closes coloc's copies of the child's pipe ends, so the helper sees the
        // end of file if the child never comes to write.
        drop(cmd);
        (
            spawned,
            helper.join().expect("the launch helper does not panic"),
        )
    });
    match (spawned, handshake) {
        (Ok(child), Ok(Some((main, refused)))) => Ok(Started {
            child,
            main,
            refused,
        }),
        (Ok(mut child), Ok(None)) => {
            let _ = child.wait();
            Err(LaunchError::NoChild)
        }
        (Ok(mut child), Err(e)) => {
            let _ = child.wait();
            Err(e)
        }
        (Err(_), Err(e)) => Err(e),
        (Err(e), _) => Err(LaunchError::Spawn(e)),
    }
}

/// coloc's side of the handshake; None if the child never reported.
fn handshake(
    from_child: &OwnedFd,
    to_child: OwnedFd,
    want: &Wanted,
    proc: &ProcRoot,
    journal: &mut Journal,
) -> Result<Option<(TaskSettings, Vec<String>)>, LaunchError> {
    let mut pid = [0u8; 4];
    if !read_exact(from_child, &mut pid).map_err(LaunchError::Spawn)? {
        return Ok(None);
    }
    let pid = i32::from_ne_bytes(pid) as u32;
    let Ok(stat) = proc.task_stat(pid, pid) else {
        return Ok(None);
    };
    let task = TaskId {
        pid,
        tid: pid,
        start: stat.starttime,
    };
    let mut main = TaskSettings::new(task);
    let mut refused = Vec::new();
    let mut go = GO | 1 << MEMORY;
    // The originals are coloc's own (inherited); journal each one the plan changes.
    if want.affinity.is_some() {
        let cpus = sys::affinity(pid).map_err(|e| LaunchError::Spawn(e.into()))?;
        journal.append(&Entry::changed(&task, Original::Affinity(cpus.clone())))?;
        main.affinity.original = Some(cpus);
        go |= 1 << AFFINITY;
    }
    if want.nice.is_some() {
        let nice = read_nice(proc, &task).map_err(|_| LaunchError::NoChild)?;
        journal.append(&Entry::changed(&task, Original::Nice(nice)))?;
        main.nice.original = Some(nice);
        go |= 1 << NICE;
    }
    if want.slice_ns.is_some() {
        match read_slice(pid) {
            Ok(ns) => {
                journal.append(&Entry::changed(&task, Original::SliceNs(ns)))?;
                main.slice_ns.original = Some(ns);
                go |= 1 << SLICE;
            }
            Err(Fail::Gone) => return Ok(None),
            Err(Fail::Refused(why)) => refused.push(format!("thread {pid}: slice: {why}")),
        }
    }
    write_all(&to_child, &[go]).map_err(LaunchError::Spawn)?;
    drop(to_child);
    let mut bytes = [0u8; RESULTS * 4];
    if !read_exact(from_child, &mut bytes).map_err(LaunchError::Spawn)? {
        return Ok(None);
    }
    let mut why: [Option<String>; RESULTS] = std::array::from_fn(|i| {
        let e = i32::from_ne_bytes(bytes[i * 4..i * 4 + 4].try_into().expect("4 bytes"));
        (e != 0).then(|| Errno::from_raw(e).desc().to_string())
    });
    if let (Some(ns), None) = (want.slice_ns, &why[SLICE]) {
        if let Err(Fail::Refused(r)) = check_slice(pid, ns) {
            why[SLICE] = Some(r);
        }
    }
    // What was asked is in force unless refused; a refusal is reported, not retried.
    main.affinity.in_force = want.affinity.clone();
    main.nice.in_force = want.nice;
    main.slice_ns.in_force = want.slice_ns;
    let values = [
        want.affinity.as_ref().map(|c| format!("CPUs {c}")),
        want.nice.map(|n| format!("nice {n}")),
        want.slice_ns.map(|ns| format!("slice (ns) {ns}")),
        Some("memory policy".to_string()),
    ];
    for (what, why) in values.into_iter().zip(why) {
        if let (Some(what), Some(why)) = (what, why) {
            refused.push(format!("thread {pid}: {what}: {why}"));
        }
    }
    Ok(Some((main, refused)))
}

/// `<dir>/<name>-<rep>.<ext>`, with characters other than letters, digits,
/// `.`, `_` and `-` in the name replaced (workload names already avoid them).
pub(crate) fn output_path(dir: &Path, name: &str, rep: u32, ext: &str) -> std::path::PathBuf {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    dir.join(format!("{safe}-{rep}.{ext}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleave_masks_name_the_nodes() {
        assert_eq!(memory_policy(MemPolicy::Default, &[0]), None);
        assert_eq!(
            memory_policy(MemPolicy::Local, &[0, 1]),
            Some((sys::MPOL_LOCAL, vec![]))
        );
        assert_eq!(
            memory_policy(MemPolicy::Interleave, &[0, 2]),
            Some((sys::MPOL_INTERLEAVE, vec![0b101]))
        );
        let wide = memory_policy(MemPolicy::Interleave, &[65]).unwrap().1;
        assert_eq!(wide, vec![0, 0b10]);
    }

    #[test]
    fn output_names_are_plain_files() {
        assert_eq!(
            output_path(Path::new("/o"), "bar/a b", 2, "out"),
            Path::new("/o/bar_a_b-2.out")
        );
    }
}
