/*
 * LLVM's and Intel's OpenMP runtimes (libomp, libiomp5): the DoP channel
 * through an OMPT tool (OpenMP 5.0 §4, the tool interface), the same record
 * and the same accounting as for libgomp (core.c), so coloc and its policies
 * cannot tell which runtime an app uses (docs/signals.md, The DoP channel
 * under LLVM's runtime).
 *
 * Loading. The runtime calls ompt_start_tool when it initializes; this
 * library, preloaded, defines it (the runtime's own definition is weak). It
 * answers NULL, and the runtime runs with no tool at all (no callback cost,
 * and OMP_TOOL_LIBRARIES still honoured), unless COLOC_OMP_RECORD names a
 * usable record, which it then claims for the process as the libgomp side
 * does at its first region.
 *
 * The team size. OMPT has no callback that sets a team's size. What it has
 * is the order in which LLVM's runtime starts a region (kmp_runtime.cpp,
 * __kmp_fork_call, read in LLVM 9 and in the current main branch): it reads
 * a num_threads clause (th_set_nproc), then calls parallel_begin on the
 * encountering thread, and only after that reads the encountering task's
 * nthreads-var (get__nproc_2) for a region without a clause. So
 * omp_set_num_threads() called in parallel_begin sizes the region starting
 * now, and a clause is honoured, as the libgomp side honours one. The tool
 * keeps the nthreads-var the app asked for itself (omp_set_num_threads,
 * interposed; else the value it found), sets min(that, DoP) at each outermost
 * region, and puts the app's value back when the record goes stale or away.
 * omp_get_max_threads() outside a region answers the DoP too, and the region
 * after that answer gets exactly that team, as on libgomp (coloc_omp.c,
 * t_promised). Placement and memory policy: each member in its implicit-task
 * begin callback, as the libgomp trampoline does.
 *
 * Progress (coloc_omp_record.h, Protocol): worksharing constructs ended
 * (work end: loops, sections, single, workshare, distribute, taskloop) and
 * explicit barriers passed, counted by each thread and once more by member 0
 * of the outermost team; tasks completed (task_schedule, prior task
 * complete). Implicit barriers are not counted, so that a loop counts once
 * as its end, as GOMP_loop_end does on libgomp. A loop's iterations (the
 * count work begin reports, every schedule) are added when it ends. LLVM 14,
 * Debian 12's, reports no chunks (no dispatch events), so dynamic loops
 * count their ends only.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#include "shim.h"

/* ---- the OMPT ABI (OpenMP 5.0 §4.4), the parts this tool uses ---- */

typedef union {
    uint64_t value;
    void *ptr;
} ompt_data_t;

typedef void (*ompt_callback_t)(void);
typedef ompt_callback_t (*ompt_function_lookup_t)(const char *);
typedef int (*ompt_set_callback_t)(int event, ompt_callback_t callback);

typedef struct {
    int (*initialize)(ompt_function_lookup_t, int, ompt_data_t *);
    void (*finalize)(ompt_data_t *);
    ompt_data_t tool_data;
} ompt_start_tool_result_t;

enum {
    EV_PARALLEL_BEGIN = 3,
    EV_PARALLEL_END = 4,
    EV_TASK_SCHEDULE = 6,
    EV_IMPLICIT_TASK = 7,
    EV_WORK = 20,
    EV_SYNC_REGION = 23,
};
enum { SCOPE_BEGIN = 1, SCOPE_END = 2 };
enum { PARALLEL_TEAM = 0x80000000 };
enum { TASK_INITIAL = 0x1 };
enum { TASK_COMPLETE = 1 };
enum { WORK_LOOP = 1 };
enum { SYNC_BARRIER_EXPLICIT = 3 };

/* ---- the runtime's own routines ---- */

static struct {
    int (*get_max_threads)(void);
    void (*set_num_threads)(int);
    int (*get_level)(void);
} kmp;

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static bool kmp_loaded;
/* The runtime started this tool. */
static atomic_bool tool_on;

/* The runtime's definition of `name`: after this library in the global scope,
 * else in a runtime loaded RTLD_LOCAL (found by soname). */
static void *runtime_symbol(const char *name)
{
    void *sym = dlsym(RTLD_NEXT, name);
    for (const char *const *so = (const char *const[]){"libomp.so.5", "libomp.so", "libiomp5.so", NULL};
         sym == NULL && *so != NULL; so++) {
        void *h = dlopen(*so, RTLD_LAZY | RTLD_NOLOAD);
        if (h != NULL) {
            sym = dlsym(h, name);
            dlclose(h);
        }
    }
    return sym;
}

static void probe(void)
{
    kmp_loaded = dlsym(RTLD_DEFAULT, "__kmpc_fork_call") != NULL;
    kmp.get_max_threads = (int (*)(void))runtime_symbol("omp_get_max_threads");
    kmp.set_num_threads = (void (*)(int))runtime_symbol("omp_set_num_threads");
    kmp.get_level = (int (*)(void))runtime_symbol("omp_get_level");
}

static void ready(void) { pthread_once(&probe_once, probe); }

bool llvm_runtime(void)
{
    ready();
    return kmp_loaded || atomic_load_explicit(&tool_on, memory_order_relaxed);
}

/* The record while the tool manages this process. */
static struct coloc_omp_record *managed(void)
{
    if (!atomic_load_explicit(&tool_on, memory_order_relaxed))
        return NULL;
    return atomic_load_explicit(&rec, memory_order_relaxed);
}

/* ---- nthreads-var, per thread (it belongs to the thread's current task) ---- */

/* What the app asked for itself (0: not known yet, take what is set). */
static __thread int t_own;
/* What the tool set last (0: the tool has not changed it). */
static __thread int t_set;
/* The answer omp_get_max_threads() gave outside a region, until the thread's
 * next outermost region, which gets exactly that team (coloc_omp.c). */
static __thread int t_promised;

/* The app's own nthreads-var: what it set through omp_set_num_threads, else
 * what the thread had before the tool changed it. */
static int own_nthreads(void)
{
    int now = kmp.get_max_threads();
    if (t_own == 0 || (t_set != 0 && now != t_set))
        t_own = now;
    return t_own;
}

/* Sets the calling thread's nthreads-var to min(own, dop) (dop 0: own). */
static int apply_dop(uint32_t dop)
{
    int own = own_nthreads();
    int want = dop > 0 && (int)dop < own ? (int)dop : own;
    if (want != kmp.get_max_threads())
        kmp.set_num_threads(want);
    t_set = want == own ? 0 : want;
    return want;
}

/* Gives the thread its own nthreads-var back if the tool changed it. */
static void release_dop(void)
{
    if (t_set != 0 && kmp.get_max_threads() == t_set)
        kmp.set_num_threads(t_own);
    t_set = 0;
}

int ompt_max_threads(void)
{
    ready();
    struct coloc_omp_record *r = managed();
    if (r == NULL || kmp.get_level() > 0 || !record_valid(r))
        return kmp.get_max_threads();
    atomic_fetch_add_explicit(&r->max_threads_asked, 1, memory_order_relaxed);
    uint64_t gen, interleave;
    uint32_t dop;
    bool pin;
    if (current_dop(r, now_ns(), &gen, &dop, &pin, &interleave))
        t_promised = apply_dop(dop);
    else
        release_dop();
    return kmp.get_max_threads();
}

void ompt_set_num_threads(int n)
{
    ready();
    t_own = n;
    t_set = 0;
    kmp.set_num_threads(n);
}

/* ---- regions ---- */

/* The outermost region this thread started (a thread starts one at a time),
 * tagged in the region's parallel_data so that its members find it. */
static __thread struct region t_region;
static __thread uint64_t t_loop_iterations;
/* Implicit tasks (team memberships) the thread is in, outermost first. */
static __thread unsigned t_depth;
/* Its member number in the outermost managed team, and that team's region. */
static __thread unsigned t_member;
static __thread const struct region *t_outer;

static void on_parallel_begin(ompt_data_t *task, const void *frame, ompt_data_t *parallel,
                              unsigned requested, int flags, const void *codeptr)
{
    (void)task, (void)frame, (void)requested, (void)codeptr;
    if (!(flags & PARALLEL_TEAM) || t_depth > 0)
        return; /* a teams league, or a nested region: left alone */
    struct region *rg = &t_region;
    *rg = (struct region){0};
    int promised = t_promised;
    t_promised = 0;
    struct coloc_omp_record *r = managed();
    if (r == NULL || !record_valid(r)) {
        release_dop();
        /* Threads pinned or interleaved while coloc was there get their own
         * settings back at this region (member_started with no record). */
        if (placed_ever()) {
            rg->wrap = true;
            place_self(&rg->frame, 0);
            parallel->ptr = rg;
        }
        return;
    }
    t_loop_iterations = 0;
    uint32_t dop;
    if (region_start(rg, r, &dop)) {
        if (promised == 0)
            apply_dop(dop);
    } else {
        release_dop();
    }
    parallel->ptr = rg;
}

static void on_parallel_end(ompt_data_t *parallel, ompt_data_t *task, int flags,
                            const void *codeptr)
{
    (void)task, (void)flags, (void)codeptr;
    struct region *rg = parallel->ptr;
    if (rg != &t_region)
        return;
    parallel->ptr = NULL;
    region_finish(rg, t_loop_iterations);
    t_loop_iterations = 0;
}

static void on_implicit_task(int endpoint, ompt_data_t *parallel, ompt_data_t *task,
                             unsigned actual, unsigned index, int flags)
{
    (void)task;
    if (flags & TASK_INITIAL)
        return;
    if (endpoint == SCOPE_END) {
        if (t_depth > 0 && --t_depth == 0)
            t_outer = NULL;
        return;
    }
    t_depth++;
    const struct region *rg = parallel != NULL ? parallel->ptr : NULL;
    if (t_depth == 1 && rg != NULL && rg->wrap) {
        t_outer = rg;
        t_member = index;
        member_started(&rg->frame, index, actual);
    }
}

/* Whether the calling thread is member 0 of the outermost managed team and
 * the event belongs to that team. */
static bool team_event(const ompt_data_t *parallel)
{
    return t_depth == 1 && t_member == 0 && t_outer != NULL && parallel != NULL
        && parallel->ptr == t_outer;
}

static void on_work(int type, int endpoint, ompt_data_t *parallel, ompt_data_t *task,
                    uint64_t count, const void *codeptr)
{
    (void)task, (void)codeptr;
    struct coloc_omp_record *r = managed();
    if (r == NULL)
        return;
    bool team = team_event(parallel);
    if (endpoint == SCOPE_BEGIN) {
        if (team && type == WORK_LOOP)
            t_loop_iterations += count;
        return;
    }
    if (team && t_loop_iterations > 0) {
        atomic_fetch_add_explicit(&r->iterations_completed, t_loop_iterations,
                                  memory_order_relaxed);
        t_loop_iterations = 0;
    }
    progress_step(r, false, team);
}

static void on_sync_region(int kind, int endpoint, ompt_data_t *parallel, ompt_data_t *task,
                           const void *codeptr)
{
    (void)task, (void)codeptr;
    struct coloc_omp_record *r = managed();
    if (r != NULL && endpoint == SCOPE_END && kind == SYNC_BARRIER_EXPLICIT)
        progress_step(r, false, team_event(parallel));
}

static void on_task_schedule(ompt_data_t *prior, int prior_status, ompt_data_t *next)
{
    (void)prior, (void)next;
    struct coloc_omp_record *r = managed();
    if (r != NULL && prior_status == TASK_COMPLETE)
        progress_step(r, true, false);
}

/* ---- the tool's life ---- */

static int initialize(ompt_function_lookup_t lookup, int device, ompt_data_t *data)
{
    (void)device, (void)data;
    ompt_set_callback_t set = (ompt_set_callback_t)lookup("ompt_set_callback");
    if (set == NULL)
        return 0;
    set(EV_PARALLEL_BEGIN, (ompt_callback_t)on_parallel_begin);
    set(EV_PARALLEL_END, (ompt_callback_t)on_parallel_end);
    set(EV_IMPLICIT_TASK, (ompt_callback_t)on_implicit_task);
    set(EV_WORK, (ompt_callback_t)on_work);
    set(EV_SYNC_REGION, (ompt_callback_t)on_sync_region);
    set(EV_TASK_SCHEDULE, (ompt_callback_t)on_task_schedule);
    atomic_store(&tool_on, true);
    return 1; /* keep the tool */
}

static void finalize(ompt_data_t *data) { (void)data; }

EXPORT ompt_start_tool_result_t *ompt_start_tool(unsigned int omp_version,
                                                 const char *runtime_version)
{
    (void)omp_version, (void)runtime_version;
    ready();
    if (kmp.get_max_threads == NULL || kmp.set_num_threads == NULL || kmp.get_level == NULL)
        return NULL;
    if (attach() == NULL)
        return NULL;
    static ompt_start_tool_result_t result = {.initialize = initialize, .finalize = finalize};
    return &result;
}
