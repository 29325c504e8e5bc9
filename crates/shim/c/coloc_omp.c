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
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "coloc_omp_record.h"

#define EXPORT __attribute__((visibility("default")))

typedef void (*region_fn)(void *);
typedef void (*loop_fn)(region_fn, void *, unsigned, long, long, long, long, unsigned);
typedef void (*runtime_loop_fn)(region_fn, void *, unsigned, long, long, long, unsigned);
typedef void (*loop_start_fn)(region_fn, void *, unsigned, long, long, long, long);
typedef bool (*ws_loop_fn)(long, long, long, long, long *, long *);
typedef bool (*ws_runtime_fn)(long, long, long, long *, long *);

/* libgomp's own entry points and the omp_* queries the shim needs. */
static struct {
    void (*parallel)(region_fn, void *, unsigned, unsigned);
    unsigned (*parallel_reductions)(region_fn, void *, unsigned, unsigned);
    void (*parallel_start)(region_fn, void *, unsigned);
    void (*parallel_end)(void);
    void (*parallel_sections)(region_fn, void *, unsigned, unsigned, unsigned);
    void (*parallel_sections_start)(region_fn, void *, unsigned, unsigned);
    loop_fn loop_static, loop_dynamic, loop_guided, loop_nonmonotonic_dynamic,
        loop_nonmonotonic_guided;
    runtime_loop_fn loop_runtime, loop_nonmonotonic_runtime, loop_maybe_nonmonotonic_runtime;
    loop_start_fn loop_static_start, loop_dynamic_start, loop_guided_start;
    void (*loop_runtime_start)(region_fn, void *, unsigned, long, long, long);
    ws_loop_fn ws_static, ws_dynamic, ws_guided, ws_nonmonotonic_dynamic, ws_nonmonotonic_guided;
    ws_runtime_fn ws_runtime, ws_nonmonotonic_runtime, ws_maybe_nonmonotonic_runtime;
    bool (*ws_generic)(long, long, long, long, long, long *, long *, uintptr_t *, void **);
    int (*get_max_threads)(void);
    int (*get_dynamic)(void);
    int (*get_thread_num)(void);
    int (*get_num_threads)(void);
    int (*get_level)(void);
} real;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
/* The record, or NULL when the shim is inert for this process. */
static struct coloc_omp_record *_Atomic rec;
/* pid of the process image that loaded the shim; a fork()ed child differs. */
static pid_t load_pid;
/* The app's own affinity, restored to threads the shim pinned when coloc stops
 * pinning or goes away: COLOC_OMP_AFFINITY, else the affinity of the thread
 * that ran the first region. */
static cpu_set_t original_mask;
/* Set once any thread was pinned: from then on threads may need restoring. */
static atomic_bool pinned_ever;

/* The memory policy of the thread that attached (<numaif.h>'s values; the
 * header comes with libnuma, which the shim does not need). */
#define MPOL_DEFAULT_ 0
#define MPOL_INTERLEAVE_ 3
#define MPOL_MAX_NODES 64
static int original_mode = MPOL_DEFAULT_;
static unsigned long original_nodes;
/* Set once any thread interleaved: from then on threads may need restoring. */
static atomic_bool interleaved_ever;
/* Node mask this thread's policy interleaves over; 0 = the original policy. */
static __thread uint64_t t_interleave;

/* Iterations of worksharing loops the outermost master has started in its
 * current region; added to the record when the region ends. */
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

/* Generation this thread last pinned itself for, and its team slot then. */
#define NOT_PINNED UINT64_MAX
static __thread uint64_t t_pinned_gen = NOT_PINNED;
static __thread unsigned t_pinned_slot;

/* The app called a libgomp entry point that the libgomp after the shim does not
 * have: nothing sensible can run the region. */
static _Noreturn void missing(const char *name)
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

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool record_valid(struct coloc_omp_record *r)
{
    return atomic_load_explicit(&r->magic, memory_order_acquire) == COLOC_OMP_MAGIC
        && atomic_load_explicit(&r->version, memory_order_relaxed) == COLOC_OMP_VERSION
        && atomic_load_explicit(&r->size, memory_order_relaxed) == sizeof(struct coloc_omp_record);
}

/* Parses a CPU list ("0-3,8", as sysfs writes them) into *set; false if it is
 * malformed or names no CPU. */
static bool parse_cpu_list(const char *s, cpu_set_t *set)
{
    CPU_ZERO(set);
    while (*s != '\0') {
        char *end;
        unsigned long first = strtoul(s, &end, 10);
        if (end == s)
            return false;
        unsigned long last = first;
        s = end;
        if (*s == '-') {
            last = strtoul(++s, &end, 10);
            if (end == s || last < first)
                return false;
            s = end;
        }
        for (unsigned long c = first; c <= last && c < CPU_SETSIZE; c++)
            CPU_SET(c, set);
        if (*s == ',')
            s++;
        else if (*s != '\0')
            return false;
    }
    return CPU_COUNT(set) > 0;
}

/* Maps COLOC_OMP_RECORD and claims it for this process; NULL if unusable. */
static struct coloc_omp_record *attach(void)
{
    const char *path = getenv(COLOC_OMP_ENV);
    if (path == NULL || *path == '\0' || getpid() != load_pid)
        return NULL;
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat st;
    struct coloc_omp_record *r = NULL;
    if (fstat(fd, &st) == 0 && st.st_size >= (off_t)sizeof(*r)) {
        void *m = mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m != MAP_FAILED)
            r = m;
    }
    close(fd);
    if (r == NULL)
        return NULL;
    uint32_t unowned = 0;
    uint32_t self = (uint32_t)getpid();
    if (!record_valid(r)
        || !atomic_compare_exchange_strong(&r->owner_pid, &unowned, self)) {
        munmap(r, sizeof(*r));
        return NULL;
    }
    cpu_set_t own;
    const char *own_list = getenv(COLOC_OMP_AFFINITY_ENV);
    if (own_list != NULL && parse_cpu_list(own_list, &own))
        original_mask = own;
    else if (sched_getaffinity(0, sizeof(original_mask), &original_mask) != 0)
        CPU_ZERO(&original_mask);
    if (syscall(SYS_get_mempolicy, &original_mode, &original_nodes, MPOL_MAX_NODES + 1, NULL, 0)
        != 0) {
        original_mode = MPOL_DEFAULT_;
        original_nodes = 0;
    }
    return r;
}

/* A fork()ed child shares the mapping but is not the app coloc manages. */
static void forget_record_in_child(void) { atomic_store(&rec, NULL); }

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
    real.get_dynamic = need("omp_get_dynamic");
    real.get_thread_num = need("omp_get_thread_num");
    real.get_num_threads = need("omp_get_num_threads");
    real.get_level = need("omp_get_level");
    atomic_store(&rec, attach());
    pthread_atfork(NULL, NULL, forget_record_in_child);
}

__attribute__((constructor)) static void note_load_pid(void) { load_pid = getpid(); }

/* What a region start decided, shared with the team through the trampoline. */
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
    bool wrap;     /* run frame.fn through the trampoline */
    uint64_t start_ns;
    uint64_t iterations;
};

static void pin_self(const struct frame *f, unsigned slot)
{
    struct coloc_omp_record *r = f->rec;
    uint32_t n = atomic_load_explicit(&r->ncpus, memory_order_relaxed);
    if (n == 0 || n > COLOC_OMP_MAX_CPUS)
        return;
    uint32_t cpu = atomic_load_explicit(&r->cpus[slot % n], memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&r->generation, memory_order_relaxed) != f->gen)
        return; /* coloc is changing the list: retry at the next region */
    t_pinned_gen = f->gen;
    t_pinned_slot = slot;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (cpu < CPU_SETSIZE)
        CPU_SET(cpu, &set);
    if (cpu >= CPU_SETSIZE || sched_setaffinity(0, sizeof(set), &set) != 0) {
        atomic_fetch_add_explicit(&r->pin_errors, 1, memory_order_relaxed);
        return;
    }
    atomic_store_explicit(&pinned_ever, true, memory_order_relaxed);
}

/* Gives the calling thread the frame's memory policy; a syscall only when it
 * differs from the one this thread set last. A failure counts as a pin error
 * (the record's one field for "could not apply"). */
static void set_memory_self(const struct frame *f)
{
    if (t_interleave == f->interleave)
        return;
    unsigned long nodes = (unsigned long)f->interleave;
    long rc = f->interleave != 0
        ? syscall(SYS_set_mempolicy, MPOL_INTERLEAVE_, &nodes, MPOL_MAX_NODES + 1)
        : syscall(SYS_set_mempolicy, original_mode,
                  original_mode == MPOL_DEFAULT_ ? NULL : &original_nodes, MPOL_MAX_NODES + 1);
    if (rc != 0) {
        if (f->rec != NULL)
            atomic_fetch_add_explicit(&f->rec->pin_errors, 1, memory_order_relaxed);
        return;
    }
    t_interleave = f->interleave;
    if (f->interleave != 0)
        atomic_store_explicit(&interleaved_ever, true, memory_order_relaxed);
}

/* Puts the calling team member where the frame says, with its memory policy;
 * a syscall only when the generation or the member's slot changed since this
 * thread last moved. */
static void place_self(const struct frame *f, unsigned slot)
{
    set_memory_self(f);
    if (f->pin) {
        if (t_pinned_gen != f->gen || t_pinned_slot != slot)
            pin_self(f, slot);
    } else if (t_pinned_gen != NOT_PINNED) {
        if (CPU_COUNT(&original_mask) > 0)
            sched_setaffinity(0, sizeof(original_mask), &original_mask);
        t_pinned_gen = NOT_PINNED;
    }
}

/* What every team member runs instead of the outlined region body. */
static void trampoline(void *arg)
{
    const struct frame *f = arg;
    unsigned slot = (unsigned)real.get_thread_num();
    if (slot == 0 && f->rec != NULL)
        atomic_store_explicit(&f->rec->team_size, (uint32_t)real.get_num_threads(),
                              memory_order_relaxed);
    place_self(f, slot);
    f->fn(f->data);
}

/* Reads dop under the seqlock; false if coloc kept writing (take no limit). */
static bool read_dop(struct coloc_omp_record *r, uint64_t *gen, uint32_t *dop, bool *pin,
                     uint64_t *interleave)
{
    for (int tries = 0; tries < 64; tries++) {
        uint64_t g1 = atomic_load_explicit(&r->generation, memory_order_acquire);
        if (g1 & 1)
            continue;
        uint32_t d = atomic_load_explicit(&r->dop, memory_order_relaxed);
        uint32_t n = atomic_load_explicit(&r->ncpus, memory_order_relaxed);
        uint64_t m = atomic_load_explicit(&r->interleave_nodes, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&r->generation, memory_order_relaxed) == g1) {
            *gen = g1;
            *dop = d;
            *pin = n > 0 && n <= COLOC_OMP_MAX_CPUS;
            *interleave = m;
            return true;
        }
    }
    return false;
}

/* The DoP coloc asks for now, under a fresh heartbeat: true with *dop (0: no
 * limit), the generation it was read under and whether to pin; false when the
 * record is stale or coloc kept writing (take no limit). */
static bool current_dop(struct coloc_omp_record *r, uint64_t at_ns, uint64_t *gen, uint32_t *dop,
                        bool *pin, uint64_t *interleave)
{
    uint64_t beat = atomic_load_explicit(&r->heartbeat_ns, memory_order_relaxed);
    bool fresh = beat != 0 && (beat >= at_ns || at_ns - beat <= COLOC_OMP_STALE_NS);
    return fresh && read_dop(r, gen, dop, pin, interleave);
}

/* omp_get_max_threads() outside any region is the DoP while coloc asks for
 * one: the team size a region without a num_threads clause gets, which
 * programs that size their work themselves (OpenBLAS reads it before every
 * call and passes it back as num_threads) must see. Inside a region, and
 * without a fresh record, libgomp's own answer. Each call outside a region is
 * counted (max_threads_asked): for such a library it counts calls, progress
 * that a DoP of 1 does not hide (OpenBLAS then runs serially and starts no
 * region). */
EXPORT int omp_get_max_threads(void)
{
    pthread_once(&init_once, init);
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
    pthread_once(&init_once, init);
    rg->frame = (struct frame){.fn = fn, .data = data};
    rg->wrap = false;
    struct coloc_omp_record *r = atomic_load_explicit(&rec, memory_order_relaxed);
    if (real.get_level() > 0)
        return requested;
    unsigned promised = t_promised;
    t_promised = 0;
    if (r == NULL || !record_valid(r)) {
        /* Inert; only threads pinned or interleaved while coloc was there need
         * their affinity and memory policy back. */
        rg->wrap = atomic_load_explicit(&pinned_ever, memory_order_relaxed)
            || atomic_load_explicit(&interleaved_ever, memory_order_relaxed);
        if (rg->wrap)
            place_self(&rg->frame, 0);
        return requested;
    }
    rg->frame.rec = r;
    rg->wrap = true;
    t_loop_iterations = 0;
    rg->iterations = iterations;
    rg->start_ns = now_ns();
    unsigned n = requested;
    uint32_t dop;
    if (current_dop(r, rg->start_ns, &rg->frame.gen, &dop, &rg->frame.pin,
                    &rg->frame.interleave)) {
        unsigned wanted = requested ? requested : (unsigned)real.get_max_threads();
        bool cap = requested == 0 || real.get_dynamic();
        if (cap && dop > 0 && dop < wanted)
            n = dop;
        if (requested == 0 && promised > 0)
            n = promised;
        atomic_store_explicit(&r->generation_seen, rg->frame.gen, memory_order_relaxed);
        atomic_fetch_add_explicit(&r->regions_managed, 1, memory_order_relaxed);
    }
    atomic_fetch_add_explicit(&r->regions_started, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&r->in_parallel, 1, memory_order_relaxed);
    atomic_store_explicit(&r->last_region_start_ns, rg->start_ns, memory_order_relaxed);
    /* The caller becomes member 0. Placing it before libgomp runs matters:
     * threads libgomp creates for this team inherit the creator's affinity,
     * and a new thread has no record of having been pinned to restore. */
    place_self(&rg->frame, 0);
    return n;
}

static void region_end(const struct region *rg)
{
    struct coloc_omp_record *r = rg->frame.rec;
    if (r == NULL)
        return;
    uint64_t end = now_ns();
    atomic_fetch_add_explicit(&r->parallel_ns, end - rg->start_ns, memory_order_relaxed);
    atomic_fetch_add_explicit(&r->iterations_completed, rg->iterations + t_loop_iterations,
                              memory_order_relaxed);
    t_loop_iterations = 0;
    atomic_fetch_add_explicit(&r->regions_completed, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&r->in_parallel, 1, memory_order_release);
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
    pthread_once(&init_once, init);
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
        pthread_once(&init_once, init);                                                     \
        run_loop(real.field, #sym, fn, data, num_threads, start, end, incr, chunk, flags);  \
    }
#define RUNTIME_LOOP_ENTRY(sym, field)                                                      \
    EXPORT void sym(region_fn fn, void *data, unsigned num_threads, long start, long end,   \
                    long incr, unsigned flags)                                              \
    {                                                                                       \
        pthread_once(&init_once, init);                                                     \
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
    pthread_once(&init_once, init);
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
    pthread_once(&init_once, init);
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
 * the outermost team counts each loop once; static schedules are computed inline
 * by the compiler and make no call, so their iterations are not seen. ---- */

static void count_loop(long start, long end, long incr)
{
    pthread_once(&init_once, init);
    if (atomic_load_explicit(&rec, memory_order_relaxed) != NULL && real.get_level() == 1
        && real.get_thread_num() == 0)
        t_loop_iterations += trip_count(start, end, incr);
}

#define WS_ENTRY(sym, field)                                                                \
    EXPORT bool sym(long start, long end, long incr, long chunk, long *istart, long *iend) \
    {                                                                                       \
        count_loop(start, end, incr);                                                       \
        if (real.field == NULL)                                                             \
            missing(#sym);                                                                  \
        return real.field(start, end, incr, chunk, istart, iend);                           \
    }
#define WS_RUNTIME_ENTRY(sym, field)                                              \
    EXPORT bool sym(long start, long end, long incr, long *istart, long *iend)   \
    {                                                                             \
        count_loop(start, end, incr);                                             \
        if (real.field == NULL)                                                   \
            missing(#sym);                                                        \
        return real.field(start, end, incr, istart, iend);                        \
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
    return real.ws_generic(start, end, incr, sched, chunk, istart, iend, reductions, mem);
}
