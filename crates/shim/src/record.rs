//! The shared-memory record, mirrored from `c/coloc_omp_record.h`.
//!
//! The C header is the reference; this struct repeats it field for field with
//! the same atomic types, the constants below repeat its `_Static_assert`s, and
//! `tests/layout.rs` compares every offset with what the C compiler computes.

use std::mem::{offset_of, size_of};
use std::sync::atomic::{AtomicU32, AtomicU64};

/// `"COLOCOMP"` read as a little-endian u64.
pub const MAGIC: u64 = 0x504d_4f43_4f4c_4f43;
/// Layout version; the shim ignores records of another version.
pub const VERSION: u32 = 4;
/// CPUs the record can list.
pub const MAX_CPUS: usize = 1024;
/// Threads with a progress slot of their own; later ones share the last.
pub const THREAD_SLOTS: usize = 64;
/// A heartbeat older than this (2 s) makes the shim behave as if coloc were absent.
pub const STALE_NS: u64 = 2_000_000_000;
/// Environment variable through which the app finds its record.
pub const RECORD_ENV: &str = "COLOC_OMP_RECORD";
/// Environment variable with the CPUs the app may run on before coloc placed
/// it (a CPU list): what threads the shim pinned get back when coloc stops
/// pinning. Without it, the affinity the shim found when it attached, which
/// is coloc's placement for an app coloc placed at launch.
pub const AFFINITY_ENV: &str = "COLOC_OMP_AFFINITY";

/// `struct coloc_omp_record`. Every field is atomic because coloc and the app
/// access it concurrently from two processes.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct Record {
    pub magic: AtomicU64,
    pub version: AtomicU32,
    pub size: AtomicU32,
    // coloc -> app
    pub generation: AtomicU64,
    pub heartbeat_ns: AtomicU64,
    pub dop: AtomicU32,
    pub ncpus: AtomicU32,
    pub cpus: [AtomicU32; MAX_CPUS],
    pub interleave_nodes: AtomicU64,
    pad_coloc: [u8; 16],
    // app -> coloc, on its own cache line
    pub owner_pid: AtomicU32,
    pub in_parallel: AtomicU32,
    pub team_size: AtomicU32,
    pub pin_errors: AtomicU32,
    pub generation_seen: AtomicU64,
    pub regions_started: AtomicU64,
    pub regions_completed: AtomicU64,
    pub regions_managed: AtomicU64,
    pub iterations_completed: AtomicU64,
    pub last_region_start_ns: AtomicU64,
    pub parallel_ns: AtomicU64,
    pub max_threads_asked: AtomicU64,
    pub team_sync: AtomicU64,
    pub nslots: AtomicU32,
    pad_app0: u32,
    pad_app: [u8; 32],
    // per thread, app -> coloc, one cache line each
    pub threads: [ThreadSlot; THREAD_SLOTS],
}

/// `struct coloc_omp_thread`: one thread's progress inside regions.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct ThreadSlot {
    pub tid: AtomicU32,
    pad0: u32,
    pub steps: AtomicU64,
    pub units: AtomicU64,
    pad: [u8; 40],
}

/// Size of the record in bytes, equal to the C `sizeof`.
pub const RECORD_SIZE: usize = size_of::<Record>();

// The same assertions as the C header's.
const _: () = {
    assert!(offset_of!(Record, generation) == 16);
    assert!(offset_of!(Record, heartbeat_ns) == 24);
    assert!(offset_of!(Record, dop) == 32);
    assert!(offset_of!(Record, ncpus) == 36);
    assert!(offset_of!(Record, cpus) == 40);
    assert!(offset_of!(Record, interleave_nodes) == 4136);
    assert!(offset_of!(Record, owner_pid) == 4160);
    assert!(offset_of!(Record, generation_seen) == 4176);
    assert!(offset_of!(Record, parallel_ns) == 4224);
    assert!(offset_of!(Record, team_sync) == 4240);
    assert!(offset_of!(Record, threads) == 4288);
    assert!(size_of::<ThreadSlot>() == 64);
    assert!(RECORD_SIZE == 8384);
};

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::Path;
    use std::process::Command;

    use super::*;

    /// Offsets of every field by its C name.
    fn rust_offsets() -> BTreeMap<&'static str, usize> {
        BTreeMap::from([
            ("magic", offset_of!(Record, magic)),
            ("version", offset_of!(Record, version)),
            ("size", offset_of!(Record, size)),
            ("generation", offset_of!(Record, generation)),
            ("heartbeat_ns", offset_of!(Record, heartbeat_ns)),
            ("dop", offset_of!(Record, dop)),
            ("ncpus", offset_of!(Record, ncpus)),
            ("cpus", offset_of!(Record, cpus)),
            ("interleave_nodes", offset_of!(Record, interleave_nodes)),
            ("owner_pid", offset_of!(Record, owner_pid)),
            ("in_parallel", offset_of!(Record, in_parallel)),
            ("team_size", offset_of!(Record, team_size)),
            ("pin_errors", offset_of!(Record, pin_errors)),
            ("generation_seen", offset_of!(Record, generation_seen)),
            ("regions_started", offset_of!(Record, regions_started)),
            ("regions_completed", offset_of!(Record, regions_completed)),
            ("regions_managed", offset_of!(Record, regions_managed)),
            (
                "iterations_completed",
                offset_of!(Record, iterations_completed),
            ),
            (
                "last_region_start_ns",
                offset_of!(Record, last_region_start_ns),
            ),
            ("parallel_ns", offset_of!(Record, parallel_ns)),
            ("max_threads_asked", offset_of!(Record, max_threads_asked)),
            ("team_sync", offset_of!(Record, team_sync)),
            ("nslots", offset_of!(Record, nslots)),
            ("threads", offset_of!(Record, threads)),
            ("thread.tid", offset_of!(ThreadSlot, tid)),
            ("thread.steps", offset_of!(ThreadSlot, steps)),
            ("thread.units", offset_of!(ThreadSlot, units)),
            ("thread.sizeof", size_of::<ThreadSlot>()),
            ("sizeof", RECORD_SIZE),
        ])
    }

    /// The C compiler's offsets (c/offsets.c, built by build.rs) equal Rust's,
    /// for every field, and the constants agree.
    #[test]
    fn layout_matches_c() {
        let exe = Path::new(env!("OUT_DIR")).join("offsets");
        let out = Command::new(&exe)
            .output()
            .expect("run the offsets program");
        let text = String::from_utf8(out.stdout).unwrap();
        let c: BTreeMap<&str, u64> = text
            .lines()
            .map(|l| {
                let (k, v) = l.split_once(' ').unwrap();
                (k, v.parse().unwrap())
            })
            .collect();
        let rust = rust_offsets();
        for (field, offset) in &rust {
            assert_eq!(c.get(field), Some(&(*offset as u64)), "field {field}");
        }
        // Every C field is mirrored (the five constants are the only extras).
        assert_eq!(c.len(), rust.len() + 5);
        assert_eq!(c["COLOC_OMP_MAGIC"], MAGIC);
        assert_eq!(c["COLOC_OMP_VERSION"], u64::from(VERSION));
        assert_eq!(c["COLOC_OMP_MAX_CPUS"], MAX_CPUS as u64);
        assert_eq!(c["COLOC_OMP_STALE_NS"], STALE_NS);
        assert_eq!(c["COLOC_OMP_THREAD_SLOTS"], THREAD_SLOTS as u64);
    }

    #[test]
    fn magic_spells_colocomp() {
        assert_eq!(&MAGIC.to_le_bytes(), b"COLOCOMP");
    }
}
