/*
 * share: constructive data sharing. All threads repeatedly read (sum) one
 * common array, each thread sweeping the whole of it. The array is larger than
 * a private L2 but fits a shared last-level cache, so threads under one shared
 * cache need one copy of it, while threads under separate caches each fetch
 * their own: this kernel runs faster when its threads share a cache, the
 * opposite of a cache-thrashing co-runner.
 * Metric: GB/s read from the shared array.
 */
#include <omp.h>
#include <stdint.h>

#include "common.h"

#define DEFAULT_KB 2048
#define DEFAULT_ITERS 60000

static const char *USAGE =
    "share [--kb N] [--iters N]\n"
    "  --kb N     KiB in the common array (default " XSTR(DEFAULT_KB) ")\n"
    "  --iters N  whole-array sweeps, divided among the threads (default " XSTR(DEFAULT_ITERS) ")";

/* Sum of the array with four accumulators, so it runs at cache bandwidth rather
 * than at the latency of one dependent chain of additions. Wrapping sums: the
 * result is exact and the same in any order. */
static uint64_t sweep(const uint64_t *v, long n)
{
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    long i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += v[i];
        s1 += v[i + 1];
        s2 += v[i + 2];
        s3 += v[i + 3];
    }
    for (; i < n; i++)
        s0 += v[i];
    return s0 + s1 + s2 + s3;
}

int main(int argc, char **argv)
{
    long kb = DEFAULT_KB, iters = DEFAULT_ITERS;
    struct opt opts[] = {{"kb", &kb, 1, 1L << 30}, {"iters", &iters, 1, MAX_COUNT}};
    parse_args(argc, argv, "share", USAGE, opts, (int)(sizeof opts / sizeof opts[0]));

    long n = kb * 1024 / (long)sizeof(uint64_t);
    uint64_t *v = xmalloc("share", "the common array", (size_t)n * sizeof(uint64_t));
    for (long i = 0; i < n; i++)
        v[i] = (uint64_t)i * 0x9E3779B97F4A7C15ULL;
    const uint64_t expected_sweep = sweep(v, n);

    int threads = 0;
    uint64_t total = 0;
    double t0 = now_seconds();
#pragma omp parallel reduction(+ : total)
    {
        if (omp_get_thread_num() == 0)
            threads = omp_get_num_threads();
#pragma omp for schedule(static)
        for (long it = 0; it < iters; it++) {
            total += sweep(v, n);
            /* The array does not change between sweeps; this barrier to the
             * compiler's reasoning keeps it from summing it only once. */
            __asm__ volatile("" : : "r"(v) : "memory");
        }
    }
    double secs = now_seconds() - t0;

    if (total != expected_sweep * (uint64_t)iters)
        verify_failed("share", "sum of the sweeps differs from iterations x sum of the array");

    double gbs = (double)n * sizeof(uint64_t) * (double)iters / secs / 1e9;
    printf("share: %ld KiB array, %ld sweeps, %d threads: %.3f s, %.2f GB/s read\n", kb, iters,
           threads, secs, gbs);
    report(gbs, "GB/s", threads);
    free(v);
    return 0;
}
