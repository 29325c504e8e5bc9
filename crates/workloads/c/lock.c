/*
 * lock: mutex contention. The threads share one pthread mutex and perform a
 * fixed total number of critical sections, each updating shared state for
 * `--work` iterations. Only one thread makes progress at a time, so more
 * threads add lock hand-offs and cache-line transfers rather than speed, and
 * a lock holder that is preempted stalls every waiter.
 * Metric: million critical sections (operations) per second.
 */
#include <omp.h>
#include <pthread.h>
#include <stdint.h>

#include "common.h"

#define DEFAULT_OPS 60000000
#define DEFAULT_WORK 20

static const char *USAGE =
    "lock [--ops N] [--work N]\n"
    "  --ops N   critical sections in total, divided among the threads (default " XSTR(DEFAULT_OPS) ")\n"
    "  --work N  shared-state updates inside each critical section (default " XSTR(DEFAULT_WORK) ")";

#define SLOTS 8 /* the shared state: one cache line of counters */

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static uint64_t counter;
static uint64_t state[SLOTS];

int main(int argc, char **argv)
{
    long ops = DEFAULT_OPS, work = DEFAULT_WORK;
    struct opt opts[] = {{"ops", &ops, 1, MAX_COUNT}, {"work", &work, 0, 1000000}};
    parse_args(argc, argv, "lock", USAGE, opts, (int)(sizeof opts / sizeof opts[0]));

    int threads = 0;
    double t0 = now_seconds();
#pragma omp parallel
    {
        if (omp_get_thread_num() == 0)
            threads = omp_get_num_threads();
#pragma omp for schedule(static)
        for (long op = 0; op < ops; op++) {
            pthread_mutex_lock(&mutex);
            counter++;
            for (long w = 0; w < work; w++)
                state[w % SLOTS] += (uint64_t)w;
            pthread_mutex_unlock(&mutex);
        }
    }
    double secs = now_seconds() - t0;

    /* Each operation adds w to slot w % SLOTS for w in [0, work). */
    uint64_t expected_state = (uint64_t)ops * ((uint64_t)work * (uint64_t)(work - 1) / 2);
    uint64_t got_state = 0;
    for (int k = 0; k < SLOTS; k++)
        got_state += state[k];
    if (counter != (uint64_t)ops || got_state != expected_state)
        verify_failed("lock", "lost updates: the shared counter or state is wrong");

    double mops = (double)ops / secs / 1e6;
    printf("lock: %ld critical sections of %ld updates, %d threads: %.3f s, %.2f Mops/s\n", ops,
           work, threads, secs, mops);
    report(mops, "Mops/s", threads);
    return 0;
}
