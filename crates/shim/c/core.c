/*
 * The record's side of libcoloc_omp.so, shared by both runtimes (shim.h):
 * attaching to the record, reading the DoP, placing team members, and
 * counting regions and progress. Nothing here knows an OpenMP runtime.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "shim.h"

/* The record, or NULL when the shim is inert for this process. */
struct coloc_omp_record *_Atomic rec;
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

/* Generation this thread last pinned itself for, and its team slot then. */
#define NOT_PINNED UINT64_MAX
static __thread uint64_t t_pinned_gen = NOT_PINNED;
static __thread unsigned t_pinned_slot;

__attribute__((constructor)) static void note_load_pid(void) { load_pid = getpid(); }

uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

bool record_valid(struct coloc_omp_record *r)
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
static struct coloc_omp_record *map_and_claim(void)
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

static pthread_once_t attach_once = PTHREAD_ONCE_INIT;

static void attach_now(void)
{
    atomic_store(&rec, map_and_claim());
    pthread_atfork(NULL, NULL, forget_record_in_child);
}

/* Once per process, whichever runtime's side asks first. */
struct coloc_omp_record *attach(void)
{
    pthread_once(&attach_once, attach_now);
    return atomic_load(&rec);
}

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
void place_self(const struct frame *f, unsigned slot)
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

bool current_dop(struct coloc_omp_record *r, uint64_t at_ns, uint64_t *gen, uint32_t *dop,
                 bool *pin, uint64_t *interleave)
{
    uint64_t beat = atomic_load_explicit(&r->heartbeat_ns, memory_order_relaxed);
    bool fresh = beat != 0 && (beat >= at_ns || at_ns - beat <= COLOC_OMP_STALE_NS);
    return fresh && read_dop(r, gen, dop, pin, interleave);
}

bool placed_ever(void)
{
    return atomic_load_explicit(&pinned_ever, memory_order_relaxed)
        || atomic_load_explicit(&interleaved_ever, memory_order_relaxed);
}

void member_started(const struct frame *f, unsigned slot, unsigned team)
{
    if (slot == 0 && f->rec != NULL)
        atomic_store_explicit(&f->rec->team_size, (uint32_t)team, memory_order_relaxed);
    place_self(f, slot);
}

bool region_start(struct region *rg, struct coloc_omp_record *r, uint32_t *dop)
{
    rg->frame.rec = r;
    rg->wrap = true;
    rg->start_ns = now_ns();
    bool fresh = current_dop(r, rg->start_ns, &rg->frame.gen, dop, &rg->frame.pin,
                             &rg->frame.interleave);
    if (fresh) {
        atomic_store_explicit(&r->generation_seen, rg->frame.gen, memory_order_relaxed);
        atomic_fetch_add_explicit(&r->regions_managed, 1, memory_order_relaxed);
    }
    atomic_fetch_add_explicit(&r->regions_started, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&r->in_parallel, 1, memory_order_relaxed);
    atomic_store_explicit(&r->last_region_start_ns, rg->start_ns, memory_order_relaxed);
    /* The caller becomes member 0. Placing it before the runtime creates the
     * team matters: threads created for the team inherit the creator's
     * affinity, and a new thread has no record of having been pinned to
     * restore. */
    place_self(&rg->frame, 0);
    return fresh;
}

void region_finish(const struct region *rg, uint64_t iterations)
{
    struct coloc_omp_record *r = rg->frame.rec;
    if (r == NULL)
        return;
    uint64_t end = now_ns();
    atomic_fetch_add_explicit(&r->parallel_ns, end - rg->start_ns, memory_order_relaxed);
    atomic_fetch_add_explicit(&r->iterations_completed, rg->iterations + iterations,
                              memory_order_relaxed);
    atomic_fetch_add_explicit(&r->regions_completed, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&r->in_parallel, 1, memory_order_release);
}

/* ---- progress inside a region (coloc_omp_record.h, Protocol) ---- */

/* The calling thread's slot, and the record it was claimed in. */
static __thread struct coloc_omp_thread *t_slot;
static __thread struct coloc_omp_record *t_slot_rec;

static struct coloc_omp_thread *own_slot(struct coloc_omp_record *r)
{
    if (t_slot_rec == r)
        return t_slot;
    uint32_t i = atomic_fetch_add_explicit(&r->nslots, 1, memory_order_relaxed);
    struct coloc_omp_thread *s =
        &r->threads[i < COLOC_OMP_THREAD_SLOTS ? i : COLOC_OMP_THREAD_SLOTS - 1];
    /* The shared last slot names no thread. */
    uint32_t tid = i < COLOC_OMP_THREAD_SLOTS - 1 ? (uint32_t)syscall(SYS_gettid) : 0;
    atomic_store_explicit(&s->tid, tid, memory_order_relaxed);
    /* Published after the tid: coloc reads nslots (acquire), then the slots. */
    atomic_thread_fence(memory_order_release);
    t_slot = s;
    t_slot_rec = r;
    return s;
}

void progress_step(struct coloc_omp_record *r, bool unit, bool team_event)
{
    struct coloc_omp_thread *s = own_slot(r);
    atomic_fetch_add_explicit(&s->steps, 1, memory_order_relaxed);
    if (unit)
        atomic_fetch_add_explicit(&s->units, 1, memory_order_relaxed);
    else if (team_event)
        atomic_fetch_add_explicit(&r->team_sync, 1, memory_order_relaxed);
}
