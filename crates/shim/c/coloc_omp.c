/*
 * libcoloc_omp.so: coloc's DoP channel into unmodified GNU OpenMP (libgomp) apps.
 *
 * LD_PRELOAD'ed by coloc into apps marked `malleable = true`. It interposes
 * libgomp's parallel entry points, the calls GCC emits for `#pragma omp parallel`
 * and its combined forms, and runs every outermost parallel region without a
 * num_threads clause with min(nthreads-var, dop) threads (omp_get_max_threads()
 * answers the same; an explicit clause is honoured, see region_begin), pinning
 * team member i to cpus[i % ncpus], where
 * dop and cpus come from the shared record described in coloc_omp_record.h. It
 * writes back whether the app is in a parallel region, how many regions and loop
 * iterations it finished, and its team size, so coloc sees serial sections and
 * progress without hardware counters.
 *
 * Why per region: libgomp fixes a team's size when the region starts (NuPoCo,
 * PACT'18 §6), so the start of each region is the one place where a new DoP can
 * take effect without changing the program.
 *
 * Why opt-in: a program that sizes its work by omp_get_max_threads() and then
 * expects that many threads in the region computes wrongly with fewer.
 *
 * Without a usable record (no COLOC_OMP_RECORD, missing file, wrong magic,
 * version or size, a record owned by another process) every entry point calls
 * libgomp directly. With a stale heartbeat the shim still counts regions but
 * neither limits the DoP nor pins, and threads it pinned earlier get the
 * process's original affinity back at their next region.
 *
 * Memory policy (Thread Tranquilizer, docs/policies/tranquilizer.md): when the
 * record asks for interleaving, every team member calls set_mempolicy(2) with
 * MPOL_INTERLEAVE at its region start, so the app's later allocations are
 * spread over the nodes (the kernel offers no way to set another process's
 * policy); when it no longer asks, or goes stale or away, each member puts
 * back the policy the process had when the shim attached.
 *
 * Nested regions (omp_get_level() > 0 at entry) are passed through untouched:
 * the DoP is a budget for the outermost team.
 *
 * This file holds libgomp's parallel entry points; the record's side is
 * core.c, progress inside a region progress.c, and LLVM's runtime ompt.c
 * (shim.h). LLVM's runtime exports these GOMP_* entry points too, for
 * GCC-built code: in such a process they pass every call on, and the OMPT
 * tool, which the runtime calls for every region whatever its entry point,
 * does the work.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>

#include "gomp.h"

struct gomp_entry_points real;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

/* Iterations of worksharing loops the outermost master has started in its
 * current region and not added yet; added to the record when the loop ends
 * (progress.c) or, for loops whose end the shim does not see, when the
 * region ends. */
static __thread uint64_t t_loop_iterations;
/* The team size omp_get_max_threads() last answered on this thread outside
 * any region, until the thread's next outermost region (0: it has not asked
 * since). That region, if it has no num_threads clause, gets exactly this many
 * threads, whatever the DoP is by then: a program may have split its work into
 * that many parts that wait on one another (OpenBLAS 0.3.21's exec_blas runs
 * `parallel for` without a clause over parts counted from the answer), and a
 * DoP lowered between the answer and the region left one thread spinning on a
 * part no thread would run. The new DoP takes effect at the region after. */
static __thread unsigned t_promised;

/* The app called a libgomp entry point that the libgomp after the shim does not
 * have: nothing sensible can run the region. */
_Noreturn void missing(const char *name)
{
    fprintf(stderr, "libcoloc_omp: %s not found in the OpenMP runtime\n", name);
    abort();
}

/* libgomp's own definition of `name`. RTLD_NEXT searches the objects loaded
 * at start and those dlopen()ed RTLD_GLOBAL; a libgomp that came in later
 * with a library dlopen()ed RTLD_LOCAL (Python loading numpy's OpenBLAS) is
 * found by its soname instead: the call that brought the shim here came from
 * that library, so libgomp is loaded. */
static void *lookup(const char *name)
{
    void *sym = dlsym(RTLD_NEXT, name);
    if (sym == NULL) {
        void *gomp = dlopen("libgomp.so.1", RTLD_LAZY | RTLD_NOLOAD);
        if (gomp != NULL) {
            sym = dlsym(gomp, name);
            dlclose(gomp);
        }
    }
    return sym;
}

static void *need(const char *name)
{
    void *sym = lookup(name);
    if (sym == NULL)
        missing(name);
    return sym;
}

/* Entry points newer than the app's libgomp may be absent; only the ones the
 * app actually calls must exist, so they are looked up softly here and checked
 * where used. */
static void *want(const char *name) { return lookup(name); }

static void init(void)
{
    real.parallel = need("GOMP_parallel");
    real.parallel_start = need("GOMP_parallel_start");
    real.parallel_end = need("GOMP_parallel_end");
    real.parallel_sections = need("GOMP_parallel_sections");
    real.parallel_sections_start = need("GOMP_parallel_sections_start");
    real.loop_static = need("GOMP_parallel_loop_static");
    real.loop_dynamic = need("GOMP_parallel_loop_dynamic");
    real.loop_guided = need("GOMP_parallel_loop_guided");
    real.loop_runtime = need("GOMP_parallel_loop_runtime");
    real.loop_static_start = need("GOMP_parallel_loop_static_start");
    real.loop_dynamic_start = need("GOMP_parallel_loop_dynamic_start");
    real.loop_guided_start = need("GOMP_parallel_loop_guided_start");
    real.loop_runtime_start = need("GOMP_parallel_loop_runtime_start");
    real.parallel_reductions = want("GOMP_parallel_reductions");
    real.loop_nonmonotonic_dynamic = want("GOMP_parallel_loop_nonmonotonic_dynamic");
    real.loop_nonmonotonic_guided = want("GOMP_parallel_loop_nonmonotonic_guided");
    real.loop_nonmonotonic_runtime = want("GOMP_parallel_loop_nonmonotonic_runtime");
    real.loop_maybe_nonmonotonic_runtime = want("GOMP_parallel_loop_maybe_nonmonotonic_runtime");
    real.ws_static = need("GOMP_loop_static_start");
    real.ws_dynamic = need("GOMP_loop_dynamic_start");
    real.ws_guided = need("GOMP_loop_guided_start");
    real.ws_runtime = need("GOMP_loop_runtime_start");
    real.ws_nonmonotonic_dynamic = want("GOMP_loop_nonmonotonic_dynamic_start");
    real.ws_nonmonotonic_guided = want("GOMP_loop_nonmonotonic_guided_start");
    real.ws_nonmonotonic_runtime = want("GOMP_loop_nonmonotonic_runtime_start");
    real.ws_maybe_nonmonotonic_runtime = want("GOMP_loop_maybe_nonmonotonic_runtime_start");
    real.ws_generic = want("GOMP_loop_start");
    real.get_max_threads = need("omp_get_max_threads");
    real.set_num_threads = need("omp_set_num_threads");
    real.get_dynamic = need("omp_get_dynamic");
    real.get_thread_num = need("omp_get_thread_num");
    real.get_num_threads = need("omp_get_num_threads");
    real.get_level = need("omp_get_level");
    real.barrier = want("GOMP_barrier");
    real.barrier_cancel = want("GOMP_barrier_cancel");
    real.loop_end = want("GOMP_loop_end");
    real.loop_end_nowait = want("GOMP_loop_end_nowait");
    real.loop_end_cancel = want("GOMP_loop_end_cancel");
    real.next_static = want("GOMP_loop_static_next");
    real.next_dynamic = want("GOMP_loop_dynamic_next");
    real.next_guided = want("GOMP_loop_guided_next");
    real.next_runtime = want("GOMP_loop_runtime_next");
    real.next_nonmonotonic_dynamic = want("GOMP_loop_nonmonotonic_dynamic_next");
    real.next_nonmonotonic_guided = want("GOMP_loop_nonmonotonic_guided_next");
    real.next_nonmonotonic_runtime = want("GOMP_loop_nonmonotonic_runtime_next");
    real.next_maybe_nonmonotonic_runtime = want("GOMP_loop_maybe_nonmonotonic_runtime_next");
    real.sections_start = want("GOMP_sections_start");
    real.sections_next = want("GOMP_sections_next");
    real.sections_end = want("GOMP_sections_end");
    real.sections_end_nowait = want("GOMP_sections_end_nowait");
    real.task = want("GOMP_task");
    /* Under LLVM's runtime the OMPT tool attaches, and these wrappers only
     * pass calls on. */
    if (!llvm_runtime())
        attach();
}

void gomp_ready(void) { pthread_once(&init_once, init); }

/* What every team member runs instead of the outlined region body. */
static void trampoline(void *arg)
{
    const struct frame *f = arg;
    member_started(f, (unsigned)real.get_thread_num(), (unsigned)real.get_num_threads());
    f->fn(f->data);
}

/* omp_get_max_threads() outside any region is the DoP while coloc asks for
 * one: the team size a region without a num_threads clause gets, which
 * programs that size their work themselves (OpenBLAS reads it before every
 * call and passes it back as num_threads) must see. Inside a region, and
 * without a fresh record, the runtime's own answer. Each call outside a region
 * is counted (max_threads_asked): for such a library it counts calls, progress
 * that a DoP of 1 does not hide (OpenBLAS then runs serially and starts no
 * region). Under LLVM's runtime, ompt.c answers. */
EXPORT int omp_get_max_threads(void)
{
    if (llvm_runtime())
        return ompt_max_threads();
    gomp_ready();
    int n = real.get_max_threads();
    struct coloc_omp_record *r = atomic_load_explicit(&rec, memory_order_relaxed);
    if (real.get_level() > 0 || r == NULL || !record_valid(r))
        return n;
    atomic_fetch_add_explicit(&r->max_threads_asked, 1, memory_order_relaxed);
    uint64_t gen, interleave;
    uint32_t dop;
    bool pin;
    if (current_dop(r, now_ns(), &gen, &dop, &pin, &interleave) && dop > 0 && dop < (uint32_t)n)
        n = (int)dop;
    t_promised = (unsigned)n;
    return n;
}

/* Passed on under libgomp; under LLVM's runtime the OMPT tool keeps the
 * value as the app's own nthreads-var, which it caps by the DoP (ompt.c). */
EXPORT void omp_set_num_threads(int n)
{
    if (llvm_runtime()) {
        ompt_set_num_threads(n);
        return;
    }
    gomp_ready();
    real.set_num_threads(n);
}

/* Decides the thread count for an outermost region and records its start.
 * Returns the num_threads to hand to libgomp.
 *
 * A region without a num_threads clause (requested == 0) gets min(DoP,
 * nthreads-var), or, when its thread asked omp_get_max_threads() since its
 * last region, that answer (t_promised). An explicit clause is honoured, as OpenMP requires while
 * dynamic adjustment is off (omp_get_dynamic() false, libgomp's default):
 * code such as OpenBLAS' level-3 threading splits a call into exactly
 * num_threads parts that wait on one another, so a smaller team runs one part
 * and spins forever on a part no thread will run. Such code takes the DoP
 * through omp_get_max_threads() above. With dynamic adjustment on, the
 * program has said it accepts fewer threads, and the clause is capped too. */
static unsigned region_begin(struct region *rg, region_fn fn, void *data, unsigned requested,
                             uint64_t iterations)
{
    gomp_ready();
    rg->frame = (struct frame){.fn = fn, .data = data};
    rg->wrap = false;
    struct coloc_omp_record *r = atomic_load_explicit(&rec, memory_order_relaxed);
    if (real.get_level() > 0 || llvm_runtime())
        return requested;
    unsigned promised = t_promised;
    t_promised = 0;
    if (r == NULL || !record_valid(r)) {
        /* Inert; only threads pinned or interleaved while coloc was there need
         * their affinity and memory policy back. */
        rg->wrap = placed_ever();
        if (rg->wrap)
            place_self(&rg->frame, 0);
        return requested;
    }
    t_loop_iterations = 0;
    rg->iterations = iterations;
    unsigned n = requested;
    uint32_t dop;
    if (region_start(rg, r, &dop)) {
        unsigned wanted = requested ? requested : (unsigned)real.get_max_threads();
        bool cap = requested == 0 || real.get_dynamic();
        if (cap && dop > 0 && dop < wanted)
            n = dop;
        if (requested == 0 && promised > 0)
            n = promised;
    }
    return n;
}

static void region_end(const struct region *rg)
{
    region_finish(rg, t_loop_iterations);
    t_loop_iterations = 0;
}

void flush_loop_iterations(struct coloc_omp_record *r)
{
    if (t_loop_iterations == 0)
        return;
    atomic_fetch_add_explicit(&r->iterations_completed, t_loop_iterations, memory_order_relaxed);
    t_loop_iterations = 0;
}

static region_fn body(struct region *rg) { return rg->wrap ? trampoline : rg->frame.fn; }
static void *arg(struct region *rg) { return rg->wrap ? (void *)&rg->frame : rg->frame.data; }

/* Iterations of `for (i = start; i < end (or > end); i += incr)`, as libgomp counts them. */
static uint64_t trip_count(long start, long end, long incr)
{
    if (incr > 0 && start < end) {
        unsigned long d = (unsigned long)end - (unsigned long)start;
        unsigned long s = (unsigned long)incr;
        return d / s + (d % s != 0);
    }
    if (incr < 0 && start > end) {
        unsigned long d = (unsigned long)start - (unsigned long)end;
        unsigned long s = -(unsigned long)incr;
        return d / s + (d % s != 0);
    }
    return 0;
}

/* ---- synchronous entry points (GCC >= 4.9) ---- */

EXPORT void GOMP_parallel(region_fn fn, void *data, unsigned num_threads, unsigned flags)
{
    struct region rg;
    unsigned n = region_begin(&rg, fn, data, num_threads, 0);
    real.parallel(body(&rg), arg(&rg), n, flags);
    region_end(&rg);
}

EXPORT unsigned GOMP_parallel_reductions(region_fn fn, void *data, unsigned num_threads,
                                         unsigned flags)
{
    gomp_ready();
    if (real.parallel_reductions == NULL)
        missing("GOMP_parallel_reductions");
    struct region rg;
    unsigned n = region_begin(&rg, fn, data, num_threads, 0);
    unsigned ret = real.parallel_reductions(body(&rg), arg(&rg), n, flags);
    region_end(&rg);
    return ret;
}

EXPORT void GOMP_parallel_sections(region_fn fn, void *data, unsigned num_threads,
                                   unsigned count, unsigned flags)
{
    struct region rg;
    unsigned n = region_begin(&rg, fn, data, num_threads, 0);
    real.parallel_sections(body(&rg), arg(&rg), n, count, flags);
    region_end(&rg);
}

static void run_loop(loop_fn realfn, const char *name, region_fn fn, void *data,
                     unsigned num_threads, long start, long end, long incr, long chunk,
                     unsigned flags)
{
    if (realfn == NULL)
        missing(name);
    struct region rg;
    unsigned n = region_begin(&rg, fn, data, num_threads, trip_count(start, end, incr));
    realfn(body(&rg), arg(&rg), n, start, end, incr, chunk, flags);
    region_end(&rg);
}

static void run_runtime_loop(runtime_loop_fn realfn, const char *name, region_fn fn, void *data,
                             unsigned num_threads, long start, long end, long incr,
                             unsigned flags)
{
    if (realfn == NULL)
        missing(name);
    struct region rg;
    unsigned n = region_begin(&rg, fn, data, num_threads, trip_count(start, end, incr));
    realfn(body(&rg), arg(&rg), n, start, end, incr, flags);
    region_end(&rg);
}

/* pthread_once must run before real.* is read, hence the call before the field
 * is passed on. */
#define LOOP_ENTRY(sym, field)                                                              \
    EXPORT void sym(region_fn fn, void *data, unsigned num_threads, long start, long end,   \
                    long incr, long chunk, unsigned flags)                                  \
    {                                                                                       \
        gomp_ready();                                                     \
        run_loop(real.field, #sym, fn, data, num_threads, start, end, incr, chunk, flags);  \
    }
#define RUNTIME_LOOP_ENTRY(sym, field)                                                      \
    EXPORT void sym(region_fn fn, void *data, unsigned num_threads, long start, long end,   \
                    long incr, unsigned flags)                                              \
    {                                                                                       \
        gomp_ready();                                                     \
        run_runtime_loop(real.field, #sym, fn, data, num_threads, start, end, incr, flags); \
    }

LOOP_ENTRY(GOMP_parallel_loop_static, loop_static)
LOOP_ENTRY(GOMP_parallel_loop_dynamic, loop_dynamic)
LOOP_ENTRY(GOMP_parallel_loop_guided, loop_guided)
LOOP_ENTRY(GOMP_parallel_loop_nonmonotonic_dynamic, loop_nonmonotonic_dynamic)
LOOP_ENTRY(GOMP_parallel_loop_nonmonotonic_guided, loop_nonmonotonic_guided)
RUNTIME_LOOP_ENTRY(GOMP_parallel_loop_runtime, loop_runtime)
RUNTIME_LOOP_ENTRY(GOMP_parallel_loop_nonmonotonic_runtime, loop_nonmonotonic_runtime)
RUNTIME_LOOP_ENTRY(GOMP_parallel_loop_maybe_nonmonotonic_runtime, loop_maybe_nonmonotonic_runtime)

/* ---- split entry points (GCC < 4.9): *_start, the master calls fn itself, then
 * GOMP_parallel_end. The region lives in the master's thread-local storage until
 * the end call; only the outermost one is tracked. ---- */

static __thread struct region t_split;
static __thread bool t_split_active;

/* After libgomp started the team the master, member 0, is in it and calls fn
 * itself, not through the trampoline. */
static void split_started(void)
{
    struct region *rg = &t_split;
    if (rg->frame.rec != NULL)
        atomic_store_explicit(&rg->frame.rec->team_size, (uint32_t)real.get_num_threads(),
                              memory_order_relaxed);
}

/* Decides the split region's thread count into *n; true if this call starts the
 * thread's outermost region (then GOMP_parallel_end at level 1 closes it). */
static bool split_begin(region_fn fn, void *data, unsigned num_threads, uint64_t iterations,
                        unsigned *n)
{
    gomp_ready();
    if (real.get_level() > 0) {
        *n = num_threads;
        return false;
    }
    *n = region_begin(&t_split, fn, data, num_threads, iterations);
    t_split_active = true;
    return true;
}

EXPORT void GOMP_parallel_start(region_fn fn, void *data, unsigned num_threads)
{
    unsigned n;
    bool mine = split_begin(fn, data, num_threads, 0, &n);
    real.parallel_start(mine ? body(&t_split) : fn, mine ? arg(&t_split) : data, n);
    if (mine)
        split_started();
}

EXPORT void GOMP_parallel_sections_start(region_fn fn, void *data, unsigned num_threads,
                                         unsigned count)
{
    unsigned n;
    bool mine = split_begin(fn, data, num_threads, 0, &n);
    real.parallel_sections_start(mine ? body(&t_split) : fn, mine ? arg(&t_split) : data, n,
                                 count);
    if (mine)
        split_started();
}

#define LOOP_START_ENTRY(sym, field)                                                       \
    EXPORT void sym(region_fn fn, void *data, unsigned num_threads, long start, long end,  \
                    long incr, long chunk)                                                 \
    {                                                                                      \
        unsigned n;                                                                        \
        bool mine = split_begin(fn, data, num_threads, trip_count(start, end, incr), &n);  \
        real.field(mine ? body(&t_split) : fn, mine ? arg(&t_split) : data, n, start, end, \
                   incr, chunk);                                                           \
        if (mine)                                                                          \
            split_started();                                                               \
    }

LOOP_START_ENTRY(GOMP_parallel_loop_static_start, loop_static_start)
LOOP_START_ENTRY(GOMP_parallel_loop_dynamic_start, loop_dynamic_start)
LOOP_START_ENTRY(GOMP_parallel_loop_guided_start, loop_guided_start)

EXPORT void GOMP_parallel_loop_runtime_start(region_fn fn, void *data, unsigned num_threads,
                                             long start, long end, long incr)
{
    unsigned n;
    bool mine = split_begin(fn, data, num_threads, trip_count(start, end, incr), &n);
    real.loop_runtime_start(mine ? body(&t_split) : fn, mine ? arg(&t_split) : data, n, start,
                            end, incr);
    if (mine)
        split_started();
}

EXPORT void GOMP_parallel_end(void)
{
    gomp_ready();
    /* The outermost split region ends at level 1: the master is still in its team. */
    bool mine = t_split_active && real.get_level() == 1;
    real.parallel_end();
    if (mine) {
        t_split_active = false;
        region_end(&t_split);
    }
}

/* ---- worksharing loops inside a region. GCC >= 9 lowers `parallel for` with a
 * dynamic, guided or runtime schedule to GOMP_parallel plus a GOMP_loop_*_start
 * call by every team member, so the loop bounds only show up here. The master of
 * the outermost team counts each loop once (added to the record when the loop
 * ends, progress.c); static schedules are computed inline by the compiler and
 * make no call, so their iterations are not seen. A start that hands the
 * calling thread its first chunk counts that chunk (progress.c). ---- */

static void count_loop(long start, long end, long incr)
{
    gomp_ready();
    if (atomic_load_explicit(&rec, memory_order_relaxed) != NULL && !llvm_runtime()
        && real.get_level() == 1 && real.get_thread_num() == 0)
        t_loop_iterations += trip_count(start, end, incr);
}

#define WS_ENTRY(sym, field)                                                                \
    EXPORT bool sym(long start, long end, long incr, long chunk, long *istart, long *iend) \
    {                                                                                       \
        count_loop(start, end, incr);                                                       \
        if (real.field == NULL)                                                             \
            missing(#sym);                                                                  \
        return chunk_started(real.field(start, end, incr, chunk, istart, iend));            \
    }
#define WS_RUNTIME_ENTRY(sym, field)                                              \
    EXPORT bool sym(long start, long end, long incr, long *istart, long *iend)   \
    {                                                                             \
        count_loop(start, end, incr);                                             \
        if (real.field == NULL)                                                   \
            missing(#sym);                                                        \
        return chunk_started(real.field(start, end, incr, istart, iend));         \
    }

WS_ENTRY(GOMP_loop_static_start, ws_static)
WS_ENTRY(GOMP_loop_dynamic_start, ws_dynamic)
WS_ENTRY(GOMP_loop_guided_start, ws_guided)
WS_ENTRY(GOMP_loop_nonmonotonic_dynamic_start, ws_nonmonotonic_dynamic)
WS_ENTRY(GOMP_loop_nonmonotonic_guided_start, ws_nonmonotonic_guided)
WS_RUNTIME_ENTRY(GOMP_loop_runtime_start, ws_runtime)
WS_RUNTIME_ENTRY(GOMP_loop_nonmonotonic_runtime_start, ws_nonmonotonic_runtime)
WS_RUNTIME_ENTRY(GOMP_loop_maybe_nonmonotonic_runtime_start, ws_maybe_nonmonotonic_runtime)

/* GCC >= 9's generic form, used with task reductions and conditional lastprivate. */
EXPORT bool GOMP_loop_start(long start, long end, long incr, long sched, long chunk,
                            long *istart, long *iend, uintptr_t *reductions, void **mem)
{
    count_loop(start, end, incr);
    if (real.ws_generic == NULL)
        missing("GOMP_loop_start");
    bool got = real.ws_generic(start, end, incr, sched, chunk, istart, iend, reductions, mem);
    /* Without istart the call only prepared the work share (no chunk). */
    return istart != NULL ? chunk_started(got) : got;
}
