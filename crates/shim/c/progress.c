/*
 * Progress inside a region, GNU libgomp's side (docs/signals.md, Progress
 * inside a region).
 *
 * A program whose work is one long parallel region completes no region, and
 * often no loop the shim sees the bounds of, until it ends, so the record's
 * region and iteration counts stand still while it runs. What a team does
 * inside the region still goes through libgomp: every barrier it passes
 * (GOMP_barrier: explicit barriers and the end of a static loop), every
 * worksharing loop or sections construct it ends (GOMP_loop_end*,
 * GOMP_sections_end*), every chunk of a loop a thread takes (the
 * GOMP_loop_*_start and *_next calls that return one; GOMP_sections_start
 * and _next for sections), every task it completes (GOMP_task's body,
 * wrapped). Each is counted in the calling thread's slot of the record
 * (core.c, progress_step), and member 0 of the outermost team counts
 * barriers and construct ends once more for the team; a loop's iterations
 * are added when it ends.
 *
 * Not seen: chunks of loops over unsigned long long (GOMP_loop_ull_*),
 * ordered loops and taskloops (their ends and barriers are), and barriers
 * inside libgomp itself (the end of a region: the region count has it).
 */
#define _GNU_SOURCE
#include <stdalign.h>
#include <string.h>

#include "gomp.h"

/* The record, if the shim manages this process through libgomp. */
static struct coloc_omp_record *managed(void)
{
    gomp_ready();
    if (llvm_runtime())
        return NULL;
    return atomic_load_explicit(&rec, memory_order_relaxed);
}

/* Whether the calling thread is member 0 of the outermost team. */
static bool outermost_member0(void)
{
    return real.get_level() == 1 && real.get_thread_num() == 0;
}

/* A barrier passed or a construct ended; a loop's iterations go in when it
 * ends. */
static void synced(bool loop)
{
    struct coloc_omp_record *r = managed();
    if (r == NULL)
        return;
    bool team = outermost_member0();
    if (team && loop)
        flush_loop_iterations(r);
    progress_step(r, false, team);
}

/* A chunk taken or a task completed, when `got` says there was one. */
static bool unit(bool got)
{
    struct coloc_omp_record *r = got ? managed() : NULL;
    if (r != NULL)
        progress_step(r, true, false);
    return got;
}

/* The real entry point `field`, or abort naming `sym` (the app called what
 * its libgomp does not have). */
#define REAL(field, sym) \
    (gomp_ready(), real.field != NULL ? (void)0 : missing(sym), real.field)

EXPORT void GOMP_barrier(void)
{
    REAL(barrier, "GOMP_barrier")();
    synced(false);
}

EXPORT bool GOMP_barrier_cancel(void)
{
    bool cancelled = REAL(barrier_cancel, "GOMP_barrier_cancel")();
    synced(false);
    return cancelled;
}

EXPORT void GOMP_loop_end(void)
{
    REAL(loop_end, "GOMP_loop_end")();
    synced(true);
}

EXPORT void GOMP_loop_end_nowait(void)
{
    REAL(loop_end_nowait, "GOMP_loop_end_nowait")();
    synced(true);
}

EXPORT bool GOMP_loop_end_cancel(void)
{
    bool cancelled = REAL(loop_end_cancel, "GOMP_loop_end_cancel")();
    synced(true);
    return cancelled;
}

#define NEXT_ENTRY(sym, field)                                                     \
    EXPORT bool sym(long *istart, long *iend)                                      \
    {                                                                              \
        return unit(REAL(field, #sym)(istart, iend));                              \
    }

NEXT_ENTRY(GOMP_loop_static_next, next_static)
NEXT_ENTRY(GOMP_loop_dynamic_next, next_dynamic)
NEXT_ENTRY(GOMP_loop_guided_next, next_guided)
NEXT_ENTRY(GOMP_loop_runtime_next, next_runtime)
NEXT_ENTRY(GOMP_loop_nonmonotonic_dynamic_next, next_nonmonotonic_dynamic)
NEXT_ENTRY(GOMP_loop_nonmonotonic_guided_next, next_nonmonotonic_guided)
NEXT_ENTRY(GOMP_loop_nonmonotonic_runtime_next, next_nonmonotonic_runtime)
NEXT_ENTRY(GOMP_loop_maybe_nonmonotonic_runtime_next, next_maybe_nonmonotonic_runtime)

/* A loop's first chunk comes with its start (coloc_omp.c's WS_ENTRY). */
bool chunk_started(bool got) { return unit(got); }

EXPORT unsigned GOMP_sections_start(unsigned count)
{
    unsigned section = REAL(sections_start, "GOMP_sections_start")(count);
    unit(section != 0);
    return section;
}

EXPORT unsigned GOMP_sections_next(void)
{
    unsigned section = REAL(sections_next, "GOMP_sections_next")();
    unit(section != 0);
    return section;
}

EXPORT void GOMP_sections_end(void)
{
    REAL(sections_end, "GOMP_sections_end")();
    synced(false);
}

EXPORT void GOMP_sections_end_nowait(void)
{
    REAL(sections_end_nowait, "GOMP_sections_end_nowait")();
    synced(false);
}

/* ---- tasks. libgomp copies a task's data (arg_size bytes, by cpyfn or
 * memcpy) into the task and later runs fn on the copy. The shim hands it a
 * bigger block instead: a header naming the task's own fn, then the task's
 * data at an offset that keeps its alignment; its copy function fills the
 * header and copies the data as libgomp would have, and its body runs the
 * task's and counts a completed task. Every other argument passes as it came
 * (GCC's later arguments are read by libgomp only when `flags` says they
 * were passed). ---- */

struct task_head {
    region_fn fn;
    void (*cpyfn)(void *, void *);
    void *data; /* the caller's data; in the copy, the copy's */
    long size;
    long offset;
};

static void task_copy(void *dst, void *src)
{
    const struct task_head *h = src;
    struct task_head *d = dst;
    *d = *h;
    d->data = (char *)dst + h->offset;
    if (h->cpyfn != NULL)
        h->cpyfn(d->data, h->data);
    else if (h->size > 0)
        memcpy(d->data, h->data, (size_t)h->size);
}

static void task_body(void *arg)
{
    const struct task_head *h = arg;
    h->fn(h->data);
    unit(true);
}

EXPORT void GOMP_task(region_fn fn, void *data, void (*cpyfn)(void *, void *), long arg_size,
                      long arg_align, bool if_clause, unsigned flags, void **depend,
                      int priority, void *detach)
{
    void (*task)(region_fn, void *, void (*)(void *, void *), long, long, bool, unsigned,
                 void **, int, void *) = REAL(task, "GOMP_task");
    if (managed() == NULL) {
        task(fn, data, cpyfn, arg_size, arg_align, if_clause, flags, depend, priority, detach);
        return;
    }
    long align = arg_align > 0 ? arg_align : 1;
    long offset = ((long)sizeof(struct task_head) + align - 1) / align * align;
    if (align < (long)alignof(struct task_head))
        align = (long)alignof(struct task_head);
    struct task_head h = {
        .fn = fn, .cpyfn = cpyfn, .data = data, .size = arg_size, .offset = offset};
    task(task_body, &h, task_copy, offset + arg_size, align, if_clause, flags, depend, priority,
         detach);
}
