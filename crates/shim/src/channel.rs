//! coloc's side of the DoP channel: create the record, set DoP and CPUs, keep
//! it fresh, read back what the app does, remove it.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::atomic::{fence, Ordering};

use crate::error::{Result, ShimError};
use crate::record::{Record, MAGIC, MAX_CPUS, RECORD_SIZE, THREAD_SLOTS, VERSION};

/// What the app reported through the record (all counters since it started).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OmpState {
    /// pid of the process that claimed the record at its first parallel
    /// region; None until then (the shim is not loaded, or the app has not
    /// reached a region, or its runtime is not libgomp).
    pub owner_pid: Option<u32>,
    /// Outermost parallel regions running now; 0 means the app is serial.
    pub in_parallel: u32,
    /// Threads in the latest outermost region.
    pub team_size: u32,
    /// `generation()` the app applied at its latest region start; equal to the
    /// channel's generation once a `set` has taken effect.
    pub generation_seen: u64,
    pub regions_started: u64,
    pub regions_completed: u64,
    /// Regions started under a fresh record (DoP and pinning applied).
    pub regions_managed: u64,
    /// Loop iterations, added as each worksharing loop (or its region) ends,
    /// where the runtime tells the bounds: under libgomp, loops with
    /// dynamic, guided and runtime schedules (static ones are inlined by the
    /// compiler and not seen); under LLVM's runtime, every loop.
    pub iterations_completed: u64,
    /// Progress inside regions, counted by the team as it runs: barriers
    /// passed and worksharing constructs ended (once each), chunks of loops
    /// taken and tasks completed. It does not depend on the team's size, and
    /// it moves inside one long region, where regions and iterations may not
    /// (`c/coloc_omp_record.h`, Protocol).
    pub steps_completed: u64,
    /// Each thread's own progress events (its barriers, construct ends,
    /// chunks and tasks), by kernel thread id, in the order the threads first
    /// counted; tid 0 stands for the threads past [`crate::THREAD_SLOTS`],
    /// which share one count.
    pub thread_steps: Vec<(u32, u64)>,
    /// CLOCK_MONOTONIC ns of the latest region start.
    pub last_region_start_ns: u64,
    /// Wall time summed over finished outermost regions, in ns.
    pub parallel_ns: u64,
    /// `omp_get_max_threads()` calls outside any region: OpenBLAS makes one
    /// before every BLAS call, so they count its calls also at a DoP of 1,
    /// where it runs serially and starts no region.
    pub max_threads_asked: u64,
    /// Team members that could not be pinned (CPU offline, cpuset forbids it)
    /// or given the memory policy asked for.
    pub pin_errors: u32,
}

/// One app's record, mapped into coloc.
///
/// Dropping the channel removes the record, as `remove` does, but ignores
/// errors.
#[derive(Debug)]
pub struct DopChannel {
    map: NonNull<Record>,
    path: PathBuf,
    removed: bool,
}

// SAFETY: the mapping is owned by the channel and only accessed through atomics
// (writes that are not atomic RMWs go through `&mut self`), so moving it to or
// sharing it with another thread is sound.
unsafe impl Send for DopChannel {}
// SAFETY: see Send; `&self` methods only load and store atomics.
unsafe impl Sync for DopChannel {}

impl DopChannel {
    /// Creates the record at `path` (normally `/dev/shm/coloc-<pid>-<app>`) with
    /// an initial DoP and CPU list and a fresh heartbeat.
    ///
    /// The record is built in a temporary file and renamed into place, so an app
    /// that opens `path` never sees a half-written one, and a process still
    /// mapping an older record at the same path keeps its own.
    pub fn create(path: &Path, cpus: &[u32], dop: u32) -> Result<Self> {
        validate(dop, cpus)?;
        let tmp = tmp_path(path);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(|e| ShimError::io(&tmp, e))?;
        let built = Self::map(&file, &tmp).and_then(|mut chan| {
            chan.init(cpus, dop);
            fs::rename(&tmp, path).map_err(|e| ShimError::io(path, e))?;
            chan.path = path.to_path_buf();
            Ok(chan)
        });
        if built.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        built
    }

    fn map(file: &File, path: &Path) -> Result<Self> {
        file.set_len(RECORD_SIZE as u64)
            .map_err(|e| ShimError::io(path, e))?;
        // SAFETY: mapping a regular file we just sized to RECORD_SIZE; the result
        // is checked before use and unmapped in Drop.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                RECORD_SIZE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                std::os::fd::AsRawFd::as_raw_fd(file),
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            return Err(ShimError::io(path, io::Error::last_os_error()));
        }
        let map = NonNull::new(addr.cast::<Record>()).expect("mmap never returns NULL on success");
        Ok(Self {
            map,
            path: path.to_path_buf(),
            removed: true, // nothing to remove until the rename put it in place
        })
    }

    fn rec(&self) -> &Record {
        // SAFETY: `map` is a live, page-aligned MAP_SHARED mapping of RECORD_SIZE
        // bytes until Drop; Record consists of atomics and padding, valid for any
        // bit pattern, and is only accessed through atomics, so the app writing
        // it concurrently is no data race.
        unsafe { self.map.as_ref() }
    }

    fn init(&mut self, cpus: &[u32], dop: u32) {
        let r = self.rec();
        r.version.store(VERSION, Ordering::Relaxed);
        r.size.store(RECORD_SIZE as u32, Ordering::Relaxed);
        self.write_config(dop, cpus);
        self.heartbeat(monotonic_ns());
        // Published last: the shim checks the magic before anything else.
        self.rec().magic.store(MAGIC, Ordering::Release);
        self.removed = false;
    }

    /// Path of the record, for `COLOC_OMP_RECORD`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Sets the DoP and the CPUs (team member i runs on `cpus[i % len]`; an
    /// empty list leaves affinity alone). Takes effect at the app's next
    /// outermost parallel region.
    pub fn set(&mut self, dop: u32, cpus: &[u32]) -> Result<()> {
        validate(dop, cpus)?;
        self.write_config(dop, cpus);
        Ok(())
    }

    /// Asks the app's threads to interleave their future allocations over
    /// `nodes` (`MPOL_INTERLEAVE`, each thread at its next outermost region),
    /// or, with none, to go back to the policy the app had. Only coloc writes
    /// the record, so this is a second seqlock write beside `set`'s. Returns
    /// whether the record changed (the same nodes again write nothing).
    pub fn set_interleave(&mut self, nodes: &[u32]) -> Result<bool> {
        let mut mask = 0u64;
        for &n in nodes {
            if n >= u64::BITS {
                return Err(ShimError::NodeOutOfRange {
                    node: n,
                    max: u64::BITS - 1,
                });
            }
            mask |= 1 << n;
        }
        if self.rec().interleave_nodes.load(Ordering::Relaxed) == mask {
            return Ok(false);
        }
        self.seqlock_write(|r| r.interleave_nodes.store(mask, Ordering::Relaxed));
        Ok(true)
    }

    fn write_config(&mut self, dop: u32, cpus: &[u32]) {
        self.seqlock_write(|r| {
            r.dop.store(dop, Ordering::Relaxed);
            for (slot, &cpu) in r.cpus.iter().zip(cpus) {
                slot.store(cpu, Ordering::Relaxed);
            }
            r.ncpus.store(cpus.len() as u32, Ordering::Relaxed);
        });
    }

    /// The seqlock write: odd generation, fields, even generation.
    fn seqlock_write(&mut self, write: impl FnOnce(&Record)) {
        let r = self.rec();
        let g = r.generation.load(Ordering::Relaxed) & !1;
        r.generation.store(g + 1, Ordering::Relaxed);
        fence(Ordering::Release);
        write(r);
        r.generation.store(g + 2, Ordering::Release);
    }

    /// Generation of the current setting; 2 after `create`, +2 per `set` or
    /// `set_interleave`.
    pub fn generation(&self) -> u64 {
        self.rec().generation.load(Ordering::Acquire)
    }

    /// Refreshes the heartbeat with `now_ns` (CLOCK_MONOTONIC, see
    /// [`monotonic_ns`]). The shim ignores the record once the heartbeat is
    /// older than [`crate::STALE_NS`], so coloc calls this every epoch.
    pub fn heartbeat(&self, now_ns: u64) {
        self.rec().heartbeat_ns.store(now_ns, Ordering::Release);
    }

    /// What the app reported.
    pub fn read(&self) -> OmpState {
        let r = self.rec();
        let pid = r.owner_pid.load(Ordering::Acquire);
        OmpState {
            owner_pid: (pid != 0).then_some(pid),
            in_parallel: r.in_parallel.load(Ordering::Acquire),
            team_size: r.team_size.load(Ordering::Relaxed),
            generation_seen: r.generation_seen.load(Ordering::Relaxed),
            regions_started: r.regions_started.load(Ordering::Relaxed),
            regions_completed: r.regions_completed.load(Ordering::Relaxed),
            regions_managed: r.regions_managed.load(Ordering::Relaxed),
            iterations_completed: r.iterations_completed.load(Ordering::Relaxed),
            steps_completed: steps_completed(r),
            thread_steps: thread_steps(r),
            last_region_start_ns: r.last_region_start_ns.load(Ordering::Relaxed),
            parallel_ns: r.parallel_ns.load(Ordering::Relaxed),
            max_threads_asked: r.max_threads_asked.load(Ordering::Relaxed),
            pin_errors: r.pin_errors.load(Ordering::Relaxed),
        }
    }

    /// Invalidates the record (an app still mapping it turns inert and gets its
    /// original affinity back at its next region) and unlinks the file.
    pub fn remove(mut self) -> Result<()> {
        self.invalidate_and_unlink()
    }

    fn invalidate_and_unlink(&mut self) -> Result<()> {
        if self.removed {
            return Ok(());
        }
        self.removed = true;
        self.rec().magic.store(0, Ordering::Release);
        self.rec().heartbeat_ns.store(0, Ordering::Release);
        match fs::remove_file(&self.path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(ShimError::io(&self.path, e)),
            _ => Ok(()),
        }
    }
}

impl Drop for DopChannel {
    fn drop(&mut self) {
        let _ = self.invalidate_and_unlink();
        // SAFETY: `map` came from mmap with RECORD_SIZE and is not used after this.
        unsafe {
            libc::munmap(self.map.as_ptr().cast(), RECORD_SIZE);
        }
    }
}

/// The slots threads have claimed.
fn claimed(r: &Record) -> &[crate::record::ThreadSlot] {
    let n = (r.nslots.load(Ordering::Acquire) as usize).min(THREAD_SLOTS);
    &r.threads[..n]
}

/// The team's progress: its barriers and construct ends, counted once by
/// member 0, and every thread's chunks and tasks.
fn steps_completed(r: &Record) -> u64 {
    let units: u64 = claimed(r)
        .iter()
        .map(|s| s.units.load(Ordering::Relaxed))
        .sum();
    r.team_sync.load(Ordering::Relaxed) + units
}

fn thread_steps(r: &Record) -> Vec<(u32, u64)> {
    claimed(r)
        .iter()
        .map(|s| {
            (
                s.tid.load(Ordering::Relaxed),
                s.steps.load(Ordering::Relaxed),
            )
        })
        .collect()
}

fn validate(dop: u32, cpus: &[u32]) -> Result<()> {
    if dop == 0 {
        return Err(ShimError::ZeroDop);
    }
    if cpus.len() > MAX_CPUS {
        return Err(ShimError::TooManyCpus {
            count: cpus.len(),
            max: MAX_CPUS,
        });
    }
    Ok(())
}

/// A name next to `path`, unique per process and call.
fn tmp_path(path: &Path) -> PathBuf {
    use std::sync::atomic::AtomicU64;
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(
        ".tmp.{}.{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    path.with_file_name(name)
}

/// CLOCK_MONOTONIC in nanoseconds, the clock of the record's heartbeat and
/// region timestamps (shared by all processes of the machine).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec to a valid pointer;
    // CLOCK_MONOTONIC always exists on Linux, so it cannot fail.
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
