/*
 * teams: a stdin-driven OpenMP program for testing the DoP channel.
 *
 * It reads one command per line and answers with one line, so a test can change
 * the record between two regions without any timing:
 *
 *   <kind>       run one parallel region of that kind, print
 *                "region <i> kind <kind> team <t> members <m> checksum <c> expected <e> ok|BAD"
 *                kinds: parallel for_static for_dynamic for_guided for_runtime
 *                       sections split split_loop combined_loop hold blas
 *                blas: OpenBLAS' level-3 pattern: n = omp_get_max_threads(),
 *                then `parallel for num_threads(n)` over exactly n parts that
 *                each wait until all n have started (a smaller team would run
 *                one part and wait forever; after 2 s the part gives up and the
 *                line says BAD)
 *                hold: like parallel, but thread 0 prints "inside" in the region
 *                and waits for one more input line before finishing it
 *                parts: OpenBLAS 0.3.21's exec_blas: `parallel for` without a
 *                num_threads clause over as many parts as the last `ask`
 *                answered, which wait on one another as in blas
 *   ask          n = omp_get_max_threads(), print "max_threads <n>"; the next
 *                `parts` splits its work into n parts
 *   fork <kind>  fork; the child runs one region of that kind, prints its line
 *                prefixed with "child " and exits; the parent waits for it
 *   empty <n>    run n empty `omp parallel` regions, print "empty <n> ns <elapsed>"
 *   quit         exit (so does end of input)
 *
 * Every kind sums f(i) over i < N; the sum does not depend on the team size, so
 * a DoP change that breaks the program shows up as BAD. `team` is
 * omp_get_num_threads() inside the region; `members` counts distinct threads that
 * did work (for dynamic schedules it may be below the team size).
 * split and split_loop call the pre-GCC-4.9 entry points (GOMP_parallel_start /
 * GOMP_parallel_loop_dynamic_start ... GOMP_parallel_end) by hand, as old
 * binaries do; combined_loop calls GOMP_parallel_loop_dynamic, which GCC 4.9-8
 * emitted for `parallel for schedule(dynamic)` (GCC 12 emits GOMP_parallel and
 * GOMP_loop_nonmonotonic_dynamic_start instead, as for_dynamic shows).
 */
#define _GNU_SOURCE
#include <omp.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define N 100000L

/* libgomp ABI, not in any installed header. */
void GOMP_parallel_start(void (*fn)(void *), void *data, unsigned num_threads);
void GOMP_parallel_loop_dynamic_start(void (*fn)(void *), void *data, unsigned num_threads,
                                      long start, long end, long incr, long chunk);
void GOMP_parallel_loop_dynamic(void (*fn)(void *), void *data, unsigned num_threads, long start,
                                long end, long incr, long chunk, unsigned flags);
void GOMP_parallel_end(void);
bool GOMP_loop_dynamic_next(long *start, long *end);
void GOMP_loop_end_nowait(void);

static uint64_t f(long i) { return ((uint64_t)i * 2654435761u) % 1000003u; }

struct acc {
    _Atomic uint64_t sum;
    _Atomic int team;
    _Atomic uint64_t members; /* bit per thread number (< 64) */
};

static void seen(struct acc *a)
{
    atomic_store(&a->team, omp_get_num_threads());
    int me = omp_get_thread_num();
    if (me < 64)
        atomic_fetch_or(&a->members, 1ull << me);
}

static void run_parallel(struct acc *a)
{
#pragma omp parallel
    {
        seen(a);
        long t = omp_get_thread_num(), nt = omp_get_num_threads();
        uint64_t local = 0;
        for (long i = t; i < N; i += nt)
            local += f(i);
        atomic_fetch_add(&a->sum, local);
    }
}

#define RUN_FOR(name, sched)                                   \
    static void name(struct acc *a)                            \
    {                                                          \
        uint64_t sum = 0;                                      \
        _Pragma(sched) for (long i = 0; i < N; i++)            \
        {                                                      \
            seen(a);                                           \
            sum += f(i);                                       \
        }                                                      \
        atomic_store(&a->sum, sum);                            \
    }
RUN_FOR(run_for_static, "omp parallel for schedule(static) reduction(+ : sum)")
RUN_FOR(run_for_dynamic, "omp parallel for schedule(dynamic, 64) reduction(+ : sum)")
RUN_FOR(run_for_guided, "omp parallel for schedule(guided) reduction(+ : sum)")
RUN_FOR(run_for_runtime, "omp parallel for schedule(runtime) reduction(+ : sum)")

static void run_sections(struct acc *a)
{
    uint64_t parts[4] = {0};
#pragma omp parallel sections
    {
#pragma omp section
        for (long i = 0; i < N / 4; i++) {
            seen(a);
            parts[0] += f(i);
        }
#pragma omp section
        for (long i = N / 4; i < N / 2; i++) {
            seen(a);
            parts[1] += f(i);
        }
#pragma omp section
        for (long i = N / 2; i < 3 * N / 4; i++) {
            seen(a);
            parts[2] += f(i);
        }
#pragma omp section
        for (long i = 3 * N / 4; i < N; i++) {
            seen(a);
            parts[3] += f(i);
        }
    }
    atomic_store(&a->sum, parts[0] + parts[1] + parts[2] + parts[3]);
}

/* Keeps the region open until the driver sends a line. */
static void run_hold(struct acc *a)
{
#pragma omp parallel
    {
        if (omp_get_thread_num() == 0) {
            char buf[16];
            printf("inside\n");
            if (fgets(buf, sizeof buf, stdin) == NULL)
                buf[0] = '\0';
        }
        seen(a);
        long t = omp_get_thread_num(), nt = omp_get_num_threads();
        uint64_t local = 0;
        for (long i = t; i < N; i += nt)
            local += f(i);
        atomic_fetch_add(&a->sum, local);
    }
}

static void split_body(void *arg)
{
    struct acc *a = arg;
    seen(a);
    long t = omp_get_thread_num(), nt = omp_get_num_threads();
    uint64_t local = 0;
    for (long i = t; i < N; i += nt)
        local += f(i);
    atomic_fetch_add(&a->sum, local);
}

static void run_split(struct acc *a)
{
    GOMP_parallel_start(split_body, a, 0);
    split_body(a);
    GOMP_parallel_end();
}

static void split_loop_body(void *arg)
{
    struct acc *a = arg;
    long s, e;
    uint64_t local = 0;
    while (GOMP_loop_dynamic_next(&s, &e)) {
        seen(a);
        for (long i = s; i < e; i++)
            local += f(i);
    }
    GOMP_loop_end_nowait();
    atomic_fetch_add(&a->sum, local);
}

static void run_split_loop(struct acc *a)
{
    GOMP_parallel_loop_dynamic_start(split_loop_body, a, 0, 0, N, 1, 64);
    split_loop_body(a);
    GOMP_parallel_end();
}

static void run_combined_loop(struct acc *a)
{
    GOMP_parallel_loop_dynamic(split_loop_body, a, 0, 0, N, 1, 64, 0);
}

static uint64_t now_ns(void);

/* One of n parts that each wait until all n have started (up to 2 s, then
 * *gave_up), then sum their share. */
static void part(struct acc *a, int p, int n, _Atomic int *started, _Atomic bool *gave_up)
{
    seen(a);
    atomic_fetch_add(started, 1);
    uint64_t t0 = now_ns();
    while (atomic_load(started) < n) {
        if (now_ns() - t0 > 2000000000ull) {
            atomic_store(gave_up, true);
            break;
        }
        sched_yield();
    }
    uint64_t local = 0;
    for (long i = p; i < N; i += n)
        local += f(i);
    atomic_fetch_add(&a->sum, local);
}

static void run_blas(struct acc *a)
{
    int n = omp_get_max_threads();
    _Atomic int started = 0;
    _Atomic bool gave_up = false;
#pragma omp parallel for num_threads(n) schedule(static, 1)
    for (int p = 0; p < n; p++)
        part(a, p, n, &started, &gave_up);
    if (atomic_load(&gave_up))
        atomic_store(&a->sum, 0);
}

/* The answer of the last `ask`. */
static int asked = 1;

static void run_parts(struct acc *a)
{
    int n = asked;
    _Atomic int started = 0;
    _Atomic bool gave_up = false;
#pragma omp parallel for schedule(static, 1)
    for (int p = 0; p < n; p++)
        part(a, p, n, &started, &gave_up);
    if (atomic_load(&gave_up))
        atomic_store(&a->sum, 0);
}

static const struct {
    const char *name;
    void (*run)(struct acc *);
} kinds[] = {
    {"parallel", run_parallel},       {"for_static", run_for_static},
    {"for_dynamic", run_for_dynamic}, {"for_guided", run_for_guided},
    {"for_runtime", run_for_runtime}, {"sections", run_sections},
    {"split", run_split},             {"split_loop", run_split_loop},
    {"combined_loop", run_combined_loop}, {"hold", run_hold},
    {"blas", run_blas},               {"parts", run_parts},
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void empty_regions(long n)
{
    uint64_t t0 = now_ns();
    for (long i = 0; i < n; i++) {
#pragma omp parallel
        {
            __asm__ volatile("" ::: "memory");
        }
    }
    printf("empty %ld ns %llu\n", n, (unsigned long long)(now_ns() - t0));
}

/* Runs one region of the named kind and prints its line; false if unknown. */
static bool run_kind(const char *name, const char *prefix, uint64_t expected, int region)
{
    size_t k = 0;
    while (k < sizeof kinds / sizeof kinds[0] && strcmp(kinds[k].name, name) != 0)
        k++;
    if (k == sizeof kinds / sizeof kinds[0])
        return false;
    struct acc a = {0};
    kinds[k].run(&a);
    uint64_t sum = atomic_load(&a.sum);
    printf("%sregion %d kind %s team %d members %d checksum %llu expected %llu %s\n", prefix,
           region, kinds[k].name, atomic_load(&a.team),
           __builtin_popcountll(atomic_load(&a.members)), (unsigned long long)sum,
           (unsigned long long)expected, sum == expected ? "ok" : "BAD");
    return true;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    uint64_t expected = 0;
    for (long i = 0; i < N; i++)
        expected += f(i);
    char line[128];
    int region = 0;
    while (fgets(line, sizeof line, stdin) != NULL) {
        line[strcspn(line, "\r\n")] = '\0';
        if (strcmp(line, "quit") == 0)
            break;
        if (strcmp(line, "ask") == 0) {
            asked = omp_get_max_threads();
            printf("max_threads %d\n", asked);
        } else if (strncmp(line, "empty ", 6) == 0) {
            empty_regions(atol(line + 6));
        } else if (strncmp(line, "fork ", 5) == 0) {
            pid_t child = fork();
            if (child == 0) {
                if (!run_kind(line + 5, "child ", expected, 0))
                    printf("child unknown %s\n", line + 5);
                fflush(stdout);
                _exit(0);
            }
            if (child < 0 || waitpid(child, NULL, 0) < 0)
                printf("fork failed\n");
        } else if (run_kind(line, "", expected, region)) {
            region++;
        } else {
            printf("unknown %s\n", line);
        }
    }
    return 0;
}
