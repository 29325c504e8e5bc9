/*
 * libcoloc_omp.so's parts and what they share. The library is built with
 * -fvisibility=hidden, so everything declared here stays inside it; only the
 * entry points marked EXPORT are seen by the app and its OpenMP runtime.
 *
 *   core.c       the record (coloc_omp_record.h): attaching to it, the DoP
 *                read under its seqlock, where team members run and which
 *                memory policy they get, and the accounting of regions and
 *                of progress inside them. Knows no OpenMP runtime.
 *   coloc_omp.c  GNU libgomp: interposes its parallel entry points.
 *   progress.c   GNU libgomp: progress inside a region (barriers, ends of
 *                worksharing constructs, chunks, tasks).
 *   ompt.c       LLVM's and Intel's runtimes: an OMPT tool (ompt_start_tool)
 *                that does the same through the runtime's tool callbacks.
 *
 * One record, two runtimes: coloc cannot tell from the record which runtime
 * wrote it, and policies never need to.
 */
#ifndef COLOC_SHIM_H
#define COLOC_SHIM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "coloc_omp_record.h"

#define EXPORT __attribute__((visibility("default")))

typedef void (*region_fn)(void *);

/* ---- core.c ---- */

/* The record, or NULL while the shim is inert in this process. */
extern struct coloc_omp_record *_Atomic rec;

/* Maps COLOC_OMP_RECORD and claims it for this process, once whichever
 * runtime's side asks first, and returns `rec` (NULL if unusable). Also
 * remembers the affinity and memory policy to give back later; a fork()ed
 * child turns inert. */
struct coloc_omp_record *attach(void);
bool record_valid(struct coloc_omp_record *r);
uint64_t now_ns(void);
/* The DoP coloc asks for now, under a fresh heartbeat: true with *dop (0: no
 * limit), the generation it was read under, whether to pin and the nodes to
 * interleave over; false when the record is stale or coloc kept writing
 * (take no limit). */
bool current_dop(struct coloc_omp_record *r, uint64_t at_ns, uint64_t *gen, uint32_t *dop,
                 bool *pin, uint64_t *interleave);

/* What a region start decided, shared with the team members. */
struct frame {
    region_fn fn;
    void *data;
    struct coloc_omp_record *rec;
    uint64_t gen;        /* generation the DoP/CPUs were read under */
    bool pin;            /* pin members to rec->cpus */
    uint64_t interleave; /* nodes to interleave over, 0 = the original policy */
};

/* One outermost region as seen by the thread that started it. */
struct region {
    struct frame frame;
    bool wrap; /* team members must run place_self (libgomp: the trampoline) */
    uint64_t start_ns;
    uint64_t iterations;
};

/* Whether any thread was ever pinned or interleaved by the shim: then, with
 * the record gone or stale, threads may need their own settings back. */
bool placed_ever(void);
/* Puts the calling team member where the frame says, with its memory
 * policy; a syscall only when something changed for this thread. */
void place_self(const struct frame *f, unsigned slot);
/* A team member starts its part of a region: member 0 reports the team's
 * size; every member is placed. */
void member_started(const struct frame *f, unsigned slot, unsigned team);

/* Counts the start of an outermost region under the valid record r and
 * places the calling thread (member 0). rg->frame must be zeroed but for fn
 * and data. Returns true, with coloc's DoP in *dop (0: no limit), when the
 * record is fresh; false when it is stale or being written (take no limit). */
bool region_start(struct region *rg, struct coloc_omp_record *r, uint32_t *dop);
/* Counts the end of a region region_start counted, with `iterations` loop
 * iterations not counted yet. */
void region_finish(const struct region *rg, uint64_t iterations);

/* One progress event of the calling thread inside a region: a chunk taken
 * or a task completed (unit), or a barrier passed or a construct ended; a
 * team event is one of the latter seen by member 0 of the outermost team,
 * counted once more for the whole team (coloc_omp_record.h, Protocol). */
void progress_step(struct coloc_omp_record *r, bool unit, bool team_event);

/* ---- coloc_omp.c ---- */

/* Iterations of worksharing loops the calling thread (member 0 of the
 * outermost team) started and has not added yet; adds them to the record. */
void flush_loop_iterations(struct coloc_omp_record *r);

/* ---- ompt.c ---- */

/* Whether the process runs LLVM's or Intel's OpenMP runtime (its entry
 * points are __kmpc_*): then the OMPT tool does the work, and the libgomp
 * wrappers, which that runtime also exports for GCC-built code, only pass
 * calls on. */
bool llvm_runtime(void);
/* omp_get_max_threads() and omp_set_num_threads() under LLVM's runtime
 * (coloc_omp.c exports the symbols for both runtimes). */
int ompt_max_threads(void);
void ompt_set_num_threads(int n);

#endif /* COLOC_SHIM_H */
