/*
 * stream: memory-bound. The STREAM triad a[i] = b[i] + s*c[i] over three
 * arrays much larger than any cache, so its speed is the memory bandwidth the
 * threads get; co-runners that also stream memory slow it down.
 * Metric: GB/s, counting 3 x 8 bytes per element per iteration as STREAM does.
 */
#include <math.h>
#include <omp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"

#define DEFAULT_MB 128
#define DEFAULT_ITERS 40

#define MAX_NODE 1023
#define MPOL_BIND 2

static const char *USAGE = "stream [--mb N] [--iters N] [--mem-node N]\n"
                           "  --mb N        MiB per array, three arrays (default " XSTR(DEFAULT_MB) ")\n"
                           "  --iters N     triad sweeps over the arrays (default " XSTR(DEFAULT_ITERS) ")\n"
                           "  --mem-node N  allocate the arrays on NUMA node N only (default: where first touched)";

/* Binds every later allocation of this process to NUMA node `node`
 * (set_mempolicy MPOL_BIND), or exits 1 naming the node: a calibration run
 * (NuPoCo §4.3) measures one path from the threads' node to this one. */
static void bind_memory(long node)
{
    unsigned long mask[(MAX_NODE + 1) / (8 * sizeof(unsigned long))] = {0};
    mask[node / (8 * sizeof(unsigned long))] |= 1UL << (node % (8 * sizeof(unsigned long)));
    if (syscall(SYS_set_mempolicy, MPOL_BIND, mask, (unsigned long)(MAX_NODE + 1)) != 0) {
        fprintf(stderr, "stream: cannot bind memory to node %ld: ", node);
        perror(NULL);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    long mb = DEFAULT_MB, iters = DEFAULT_ITERS, mem_node = -1;
    struct opt opts[] = {{"mb", &mb, 1, 1L << 20},
                         {"iters", &iters, 1, MAX_COUNT},
                         {"mem-node", &mem_node, 0, MAX_NODE}};
    parse_args(argc, argv, "stream", USAGE, opts, (int)(sizeof opts / sizeof opts[0]));
    if (mem_node >= 0)
        bind_memory(mem_node);

    long n = mb * (1L << 20) / (long)sizeof(double);
    double *a = xmalloc("stream", "array a", (size_t)n * sizeof(double));
    double *b = xmalloc("stream", "array b", (size_t)n * sizeof(double));
    double *c = xmalloc("stream", "array c", (size_t)n * sizeof(double));
    const double s = 3.0;
    int threads = 0;

    /* First touch in parallel, so pages land on the nodes of the threads that use them. */
#pragma omp parallel
    {
        if (omp_get_thread_num() == 0)
            threads = omp_get_num_threads();
#pragma omp for schedule(static)
        for (long i = 0; i < n; i++) {
            a[i] = 0.0;
            b[i] = 1.0;
            c[i] = 2.0;
        }
    }

    double t0 = now_seconds();
    for (long it = 0; it < iters; it++) {
#pragma omp parallel for schedule(static)
        for (long i = 0; i < n; i++)
            a[i] = b[i] + s * c[i];
    }
    double secs = now_seconds() - t0;

    long bad = 0;
#pragma omp parallel for reduction(+ : bad)
    for (long i = 0; i < n; i++)
        bad += fabs(a[i] - 7.0) > 1e-12;
    if (bad)
        verify_failed("stream", "a[i] != b[i] + s*c[i] for some elements");

    double gbs = 3.0 * (double)n * sizeof(double) * (double)iters / secs / 1e9;
    printf("stream: 3 x %ld MiB, %ld iterations, %d threads: %.3f s, %.2f GB/s\n", mb, iters,
           threads, secs, gbs);
    report(gbs, "GB/s", threads);
    free(a);
    free(b);
    free(c);
    return 0;
}
