/*
 * barrier: synchronization-bound. Many short parallel regions, each a parallel
 * loop over a little arithmetic that ends in the region's implicit barrier.
 * Alone, a team of N threads on N cores crosses each barrier in microseconds.
 * When its threads share cores with other busy threads (oversubscription), a
 * thread waiting at the barrier - spinning, under libgomp's default wait
 * policy - waits for a teammate that is not running, so every region can cost
 * a scheduler time slice: this is the case coloc exists to avoid.
 * Metric: parallel regions per second.
 */
#include <omp.h>
#include <stdint.h>

#include "common.h"

#define DEFAULT_REGIONS 5000
#define DEFAULT_WORK 80000

static const char *USAGE =
    "barrier [--regions N] [--work N]\n"
    "  --regions N  parallel regions, run one after the other (default " XSTR(DEFAULT_REGIONS) ")\n"
    "  --work N     loop iterations per region, divided among the threads (default " XSTR(DEFAULT_WORK) ")";

/* A few dependent integer rounds: work the compiler cannot fold or skip. */
static inline uint64_t unit(uint64_t i)
{
    uint64_t x = i;
    for (int r = 0; r < 4; r++) {
        x = x * 6364136223846793005ULL + i;
        x ^= x >> 29;
    }
    return x;
}

int main(int argc, char **argv)
{
    long regions = DEFAULT_REGIONS, work = DEFAULT_WORK;
    struct opt opts[] = {{"regions", &regions, 1, MAX_COUNT}, {"work", &work, 0, MAX_COUNT}};
    parse_args(argc, argv, "barrier", USAGE, opts, (int)(sizeof opts / sizeof opts[0]));

    uint64_t expected_region = 0;
    for (long i = 0; i < work; i++)
        expected_region += unit((uint64_t)i);

    int threads = 0;
    uint64_t total = 0;
    double t0 = now_seconds();
    for (long r = 0; r < regions; r++) {
        uint64_t sum = 0;
#pragma omp parallel reduction(+ : sum)
        {
            if (r == 0 && omp_get_thread_num() == 0)
                threads = omp_get_num_threads();
            /* nowait: the region's own closing barrier is the one synchronization. */
#pragma omp for schedule(static) nowait
            for (long i = 0; i < work; i++)
                sum += unit((uint64_t)i);
        }
        total += sum;
    }
    double secs = now_seconds() - t0;

    if (total != expected_region * (uint64_t)regions)
        verify_failed("barrier", "sum over the regions differs from regions x sum of one region");

    double rate = (double)regions / secs;
    printf("barrier: %ld regions of %ld iterations, %d threads: %.3f s, %.0f regions/s (%.2f us "
           "each)\n",
           regions, work, threads, secs, rate, 1e6 * secs / (double)regions);
    report(rate, "regions/s", threads);
    return 0;
}
