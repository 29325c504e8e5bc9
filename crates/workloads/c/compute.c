/*
 * compute: cache-resident arithmetic. Each thread updates a small private
 * array (4 KiB, well inside L1) with independent multiply-add chains, so its
 * speed is the core's floating-point throughput and it scales with cores; it
 * barely touches shared caches or memory. `--serial-iters` puts a serial
 * phase of the same arithmetic before the parallel one: a program with a long
 * serial section (NuPoCo gives such sections one core). `--short-regions`
 * puts that many short parallel regions (a hundredth of the sweeps each)
 * before the main one: a program whose first regions are short and whose
 * main computation is one long region, where a DoP set after the short ones
 * lasts the whole long one (docs/policies/auto.md, Reversible first).
 * Metric: Gflop/s over both phases (2 flops per element update).
 */
#include <omp.h>

#include "common.h"

#define DEFAULT_ITERS 20000000
#define DEFAULT_SERIAL_ITERS 0
#define DEFAULT_SHORT_REGIONS 0

static const char *USAGE =
    "compute [--iters N] [--serial-iters N] [--short-regions N]\n"
    "  --iters N          sweeps over a private 4 KiB array, divided among the threads (default " XSTR(DEFAULT_ITERS) ")\n"
    "  --serial-iters N   sweeps done by one thread before the parallel part (default " XSTR(DEFAULT_SERIAL_ITERS) ")\n"
    "  --short-regions N  parallel regions of iters/100 sweeps each before the main one (default " XSTR(DEFAULT_SHORT_REGIONS) ")";

#define CHAINS 512 /* doubles per private array: 4 KiB */

/* `sweeps` passes of x = x*m + k over one private array; returns its sum. */
static double sweep(long sweeps)
{
    double x[CHAINS];
    for (int j = 0; j < CHAINS; j++)
        x[j] = (double)j / CHAINS;
    /* x converges to k/(1-m) = 1: no overflow, no denormals, whatever the count. */
    const double m = 0.999, k = 0.001;
    for (long s = 0; s < sweeps; s++)
        for (int j = 0; j < CHAINS; j++)
            x[j] = x[j] * m + k;
    double sum = 0.0;
    for (int j = 0; j < CHAINS; j++)
        sum += x[j];
    return sum;
}

int main(int argc, char **argv)
{
    long iters = DEFAULT_ITERS, serial_iters = DEFAULT_SERIAL_ITERS,
         short_regions = DEFAULT_SHORT_REGIONS;
    struct opt opts[] = {{"iters", &iters, 1, MAX_COUNT},
                       {"serial-iters", &serial_iters, 0, MAX_COUNT},
                       {"short-regions", &short_regions, 0, 100000}};
    parse_args(argc, argv, "compute", USAGE, opts, (int)(sizeof opts / sizeof opts[0]));

    double t0 = now_seconds();
    double checksum = serial_iters > 0 ? sweep(serial_iters) : 0.0;
    double t1 = now_seconds();

    /* Short regions first, each split among its team like the main one. */
    long short_iters = iters / 100 > 0 ? iters / 100 : 1;
    double short_sum = 0.0;
    for (long r = 0; r < short_regions; r++) {
#pragma omp parallel reduction(+ : short_sum)
        {
            int n = omp_get_num_threads(), id = omp_get_thread_num();
            long lo = short_iters * id / n, hi = short_iters * (id + 1) / n;
            short_sum += sweep(hi - lo) / (double)(n * short_regions);
        }
    }

    int threads = 0;
#pragma omp parallel reduction(+ : checksum)
    {
        int n = omp_get_num_threads(), id = omp_get_thread_num();
        if (id == 0)
            threads = n;
        /* Static split of the sweeps: thread id gets [lo, hi). */
        long lo = iters * id / n, hi = iters * (id + 1) / n;
        checksum += sweep(hi - lo);
    }
    double t2 = now_seconds();

    /* Every array element lies in [0, 1], so a correct run's sum is bounded. */
    long arrays = (serial_iters > 0) + threads + (short_regions > 0);
    checksum += short_sum;
    if (!(checksum >= 0.0 && checksum <= (double)(arrays * CHAINS)))
        verify_failed("compute", "checksum out of range");

    double flops = 2.0 * CHAINS * (double)(iters + serial_iters + short_regions * short_iters);
    double gflops = flops / (t2 - t0) / 1e9;
    printf("compute: %ld parallel + %ld serial sweeps, %d threads: serial %.3f s, parallel %.3f s, "
           "%.2f Gflop/s (checksum %.6g)\n",
           iters, serial_iters, threads, t1 - t0, t2 - t1, gflops, checksum);
    report(gflops, "Gflop/s", threads);
    return 0;
}
