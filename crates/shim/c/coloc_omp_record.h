/*
 * The shared-memory record between coloc and libcoloc_omp.so (the DoP channel).
 *
 * coloc creates one record per malleable OpenMP app, as a file in /dev/shm, and
 * passes its path to the app in the environment variable COLOC_OMP_RECORD. The
 * shim, LD_PRELOAD'ed into the app, maps it and, at the start of every outermost
 * parallel region, reads the DoP and CPU list from it and writes back what the
 * app is doing. The Rust side (crates/shim/src/record.rs) mirrors this struct
 * field for field; both sides assert the offsets below, and a test compares them
 * with what the C compiler computes.
 *
 * Protocol
 *  - Every field is a C11 atomic (a plain aligned 32/64-bit integer in memory on
 *    x86-64 and aarch64), because two processes read and write it concurrently.
 *  - coloc writes magic last at creation (release), and clears it to 0 before
 *    unlinking the file, so a mapped but abandoned record turns the shim inert.
 *  - dop/ncpus/cpus are guarded by a seqlock: coloc makes `generation` odd, writes
 *    them, then makes it even again (each update adds 2). A reader that sees an
 *    odd value, or a different value after reading, ignores what it read.
 *  - heartbeat_ns is CLOCK_MONOTONIC in nanoseconds, refreshed by coloc every
 *    epoch. When it is older than COLOC_OMP_STALE_NS the shim behaves as if coloc
 *    were absent (no DoP limit, original CPU affinity) until it is refreshed:
 *    a crashed coloc must not leave an app stuck on one core.
 *  - dop == 0 means "no limit"; ncpus == 0 means "do not pin".
 *  - interleave_nodes, under the same seqlock: bit i set = node i. Non-zero:
 *    every team member sets MPOL_INTERLEAVE over those nodes for its future
 *    allocations at its next region (set_mempolicy(2) acts on the calling
 *    thread only, so the app's own threads must make the call); 0: each puts
 *    back the policy the process had when the shim attached. A stale or
 *    removed record also puts it back, as it does affinity.
 *  - The app side starts on its own cache line so that the app's per-region
 *    counter updates do not bounce the line coloc writes.
 *  - owner_pid is claimed (0 -> pid, compare-and-swap) by the first process that
 *    runs a parallel region with the record; any other process that inherits
 *    COLOC_OMP_RECORD (a child the app spawns) stays inert, so it cannot corrupt
 *    the counters or be limited by a DoP meant for its parent.
 *  - Progress inside a region (docs/signals.md, Progress inside a region):
 *    every thread that runs a progress event (a barrier passed, a worksharing
 *    loop or sections construct ended, a chunk of a loop taken, a task
 *    completed) claims a slot of its own at its first one (nslots, fetch-add;
 *    threads past COLOC_OMP_THREAD_SLOTS share the last slot, whose tid is
 *    then 0) and counts there, on its own cache line, so counting costs no
 *    cache-line transfer between team members. `steps` counts all its events,
 *    `units` the chunks and tasks among them. Member 0 of the outermost team
 *    also counts the team's barriers and construct ends once in team_sync. So
 *    team_sync + the sum of every slot's units is the team's progress, a count
 *    that does not depend on the team's size (each barrier once, each chunk
 *    and task once); a slot's steps is that thread's own progress.
 */
#ifndef COLOC_OMP_RECORD_H
#define COLOC_OMP_RECORD_H

#include <stddef.h>
#include <stdint.h>
#include <stdatomic.h>

/* "COLOCOMP" read as a little-endian u64. */
#define COLOC_OMP_MAGIC 0x504d4f434f4c4f43ULL
#define COLOC_OMP_VERSION 4u
#define COLOC_OMP_MAX_CPUS 1024u
/* Threads with a slot of their own in the record; later ones share the last. */
#define COLOC_OMP_THREAD_SLOTS 64u
/* A record whose heartbeat is older than this (2 s) is stale. */
#define COLOC_OMP_STALE_NS 2000000000ULL
#define COLOC_OMP_ENV "COLOC_OMP_RECORD"
/* The CPUs the app may run on before coloc placed it, as a list ("0-3,8"):
 * what a thread the shim pinned gets back when coloc stops pinning. coloc
 * places a launched app before it runs, so the affinity the shim finds when
 * it attaches is coloc's placement, not the app's own. */
#define COLOC_OMP_AFFINITY_ENV "COLOC_OMP_AFFINITY"

struct coloc_omp_record {
    /* ---- header, written by coloc at creation ---- */
    _Atomic uint64_t magic;      /* COLOC_OMP_MAGIC, 0 once coloc removed it */
    _Atomic uint32_t version;    /* COLOC_OMP_VERSION */
    _Atomic uint32_t size;       /* sizeof(struct coloc_omp_record) */

    /* ---- coloc -> app ---- */
    _Atomic uint64_t generation;   /* seqlock over dop/ncpus/cpus; odd = being written */
    _Atomic uint64_t heartbeat_ns; /* CLOCK_MONOTONIC ns of coloc's last epoch */
    _Atomic uint32_t dop;          /* threads per outermost region; 0 = no limit */
    _Atomic uint32_t ncpus;        /* valid entries in cpus; 0 = do not pin */
    _Atomic uint32_t cpus[COLOC_OMP_MAX_CPUS]; /* team member i runs on cpus[i % ncpus] */
    _Atomic uint64_t interleave_nodes; /* MPOL_INTERLEAVE over these nodes; 0 = the app's own */
    uint8_t pad_coloc[16];

    /* ---- app -> coloc (offset 4160, a cache-line boundary) ---- */
    _Atomic uint32_t owner_pid;   /* pid of the process using the record, 0 = none yet */
    _Atomic uint32_t in_parallel; /* outermost regions running now (0 = serial) */
    _Atomic uint32_t team_size;   /* threads of the latest outermost region */
    _Atomic uint32_t pin_errors;  /* sched_setaffinity or set_mempolicy failures */
    _Atomic uint64_t generation_seen;      /* generation applied at the latest region start */
    _Atomic uint64_t regions_started;      /* outermost regions entered */
    _Atomic uint64_t regions_completed;    /* outermost regions finished */
    _Atomic uint64_t regions_managed;      /* of those started, how many under a fresh record */
    _Atomic uint64_t iterations_completed; /* loop iterations, added as each loop (or its region) ends */
    _Atomic uint64_t last_region_start_ns; /* CLOCK_MONOTONIC ns of the latest region start */
    _Atomic uint64_t parallel_ns;          /* wall time summed over finished outermost regions */
    _Atomic uint64_t max_threads_asked;    /* omp_get_max_threads() calls outside any region */
    _Atomic uint64_t team_sync;            /* barriers and construct ends of the outermost team, once each */
    _Atomic uint32_t nslots;               /* thread slots claimed (may pass COLOC_OMP_THREAD_SLOTS) */
    uint32_t pad_app0;
    uint8_t pad_app[32];

    /* ---- per thread, app -> coloc (offset 4288), one cache line each ---- */
    struct coloc_omp_thread {
        _Atomic uint32_t tid;   /* kernel thread id; 0 for the shared last slot */
        uint32_t pad0;
        _Atomic uint64_t steps; /* this thread's progress events */
        _Atomic uint64_t units; /* of those, chunks taken and tasks completed */
        uint8_t pad[40];
    } threads[COLOC_OMP_THREAD_SLOTS];
};

/* The same numbers are asserted on the Rust side (record.rs). */
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "64-bit atomics must be lock-free to be shared");
_Static_assert(sizeof(_Atomic uint64_t) == 8 && sizeof(_Atomic uint32_t) == 4, "atomic sizes");
_Static_assert(offsetof(struct coloc_omp_record, generation) == 16, "layout");
_Static_assert(offsetof(struct coloc_omp_record, heartbeat_ns) == 24, "layout");
_Static_assert(offsetof(struct coloc_omp_record, dop) == 32, "layout");
_Static_assert(offsetof(struct coloc_omp_record, ncpus) == 36, "layout");
_Static_assert(offsetof(struct coloc_omp_record, cpus) == 40, "layout");
_Static_assert(offsetof(struct coloc_omp_record, interleave_nodes) == 4136, "layout");
_Static_assert(offsetof(struct coloc_omp_record, owner_pid) == 4160, "layout");
_Static_assert(offsetof(struct coloc_omp_record, generation_seen) == 4176, "layout");
_Static_assert(offsetof(struct coloc_omp_record, parallel_ns) == 4224, "layout");
_Static_assert(offsetof(struct coloc_omp_record, team_sync) == 4240, "layout");
_Static_assert(offsetof(struct coloc_omp_record, threads) == 4288, "layout");
_Static_assert(sizeof(struct coloc_omp_thread) == 64, "layout");
_Static_assert(sizeof(struct coloc_omp_record) == 8384, "layout");

#endif /* COLOC_OMP_RECORD_H */
