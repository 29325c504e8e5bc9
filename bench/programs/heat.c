/*
 * heat: 2D heat diffusion, a Jacobi 5-point stencil on an N x N grid with a
 * fixed cold border and a hot square in the middle, for S steps. Built with
 * clang against LLVM's OpenMP runtime (libomp), so the real-program benches
 * have a program whose DoP coloc steers through the OMPT tool rather than
 * libgomp's entry points (docs/signals.md).
 *
 *   heat [--n N] [--steps S] [--one-region] [--seconds T]
 *
 * Default: one parallel region per step (`parallel for` over the rows), many
 * short regions. --one-region: every step inside one parallel region, a
 * worksharing loop and a barrier per step, the structure of a program whose
 * DoP cannot change once it runs. --seconds T (a region per step only): stop
 * after the first step that ends T seconds or more after the start, for
 * tests that need a run of some length on machines of any speed (the
 * checksum then depends on the steps done, which the output says).
 *
 * Each cell's new value is computed from the previous grid only, in the same
 * order of operations whatever the team, and the sum is taken serially, so
 * the checksum is the same for every thread count: compare it with a
 * one-thread run. Prints "heat: ... checksum <hex>" and
 * "coloc-metric: <cell updates per second> cells/s".
 */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long arg_long(const char *s, const char *name)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*end != '\0' || v < 1) {
        fprintf(stderr, "heat: %s must be a positive integer, not '%s'\n", name, s);
        exit(2);
    }
    return v;
}

/* One row of a step: next = the average of each cell and its four
 * neighbours (the border stays 0). */
static void row(const double *cur, double *next, long n, long i)
{
    const double *up = cur + (i - 1) * n, *mid = cur + i * n, *down = cur + (i + 1) * n;
    double *out = next + i * n;
    for (long j = 1; j < n - 1; j++)
        out[j] = 0.2 * (mid[j] + mid[j - 1] + mid[j + 1] + up[j] + down[j]);
}

int main(int argc, char **argv)
{
    long n = 1024, steps = 2000;
    int one_region = 0;
    double seconds = 0.0;
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--n") == 0 && a + 1 < argc)
            n = arg_long(argv[++a], "--n");
        else if (strcmp(argv[a], "--steps") == 0 && a + 1 < argc)
            steps = arg_long(argv[++a], "--steps");
        else if (strcmp(argv[a], "--one-region") == 0)
            one_region = 1;
        else if (strcmp(argv[a], "--seconds") == 0 && a + 1 < argc)
            seconds = (double)arg_long(argv[++a], "--seconds");
        else {
            fprintf(stderr, "usage: heat [--n N] [--steps S] [--one-region] [--seconds T]\n");
            return 2;
        }
    }
    if (one_region && seconds > 0.0) {
        fprintf(stderr, "heat: --seconds works with a region per step only\n");
        return 2;
    }
    if (n < 3) {
        fprintf(stderr, "heat: --n must be at least 3\n");
        return 2;
    }
    double *a = calloc((size_t)(n * n), sizeof *a);
    double *b = calloc((size_t)(n * n), sizeof *b);
    if (a == NULL || b == NULL) {
        fprintf(stderr, "heat: out of memory for a %ld x %ld grid\n", n, n);
        return 1;
    }
    for (long i = n / 4; i < 3 * n / 4; i++)
        for (long j = n / 4; j < 3 * n / 4; j++)
            a[i * n + j] = 100.0;

    double t0 = now_s();
    int threads = 1;
    if (one_region) {
#pragma omp parallel
        {
#pragma omp single
            threads = omp_get_num_threads();
            double *cur = a, *next = b;
            for (long s = 0; s < steps; s++) {
#pragma omp for schedule(static)
                for (long i = 1; i < n - 1; i++)
                    row(cur, next, n, i);
                double *t = cur;
                cur = next;
                next = t;
            }
        }
    } else {
        double *cur = a, *next = b;
        long done = 0;
        for (long s = 0; s < steps; s++, done++) {
            if (seconds > 0.0 && now_s() - t0 >= seconds)
                break;
#pragma omp parallel for schedule(static)
            for (long i = 1; i < n - 1; i++) {
                if (i == 1)
                    threads = omp_get_num_threads();
                row(cur, next, n, i);
            }
            double *t = cur;
            cur = next;
            next = t;
        }
        steps = done;
    }
    double t1 = now_s();
    const double *last = steps % 2 == 0 ? a : b;
    double sum = 0.0;
    for (long k = 0; k < n * n; k++)
        sum += last[k];
    uint64_t bits;
    memcpy(&bits, &sum, sizeof bits);
    double rate = (double)(n - 2) * (double)(n - 2) * (double)steps / (t1 - t0);
    printf("heat: %ld x %ld, %ld steps, %s, %d threads: %.3f s, checksum %016llx\n", n, n, steps,
           one_region ? "one region" : "a region per step", threads, t1 - t0,
           (unsigned long long)bits);
    printf("coloc-metric: %.6g cells/s\n", rate);
    free(a);
    free(b);
    return 0;
}
