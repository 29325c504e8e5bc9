/*
 * dgemm: repeated matrix products through OpenBLAS' OpenMP build (libgomp),
 * a real OpenMP library driven the way numerical codes drive it: every call
 * runs its own parallel regions, so a DoP set between calls takes effect at
 * the next one.
 *
 *   dgemm N REPS
 *
 * Computes C = A·B REPS times for N×N matrices with A[i][k] = 1 + (i+k) % 7
 * and B[k][j] = 1 + (k+2j) % 5, and checks 4096 elements of C spread over
 * the matrix (and the checksum of all) against exact integer sums computed
 * serially (the products are small integers, so the floating-point result is
 * exact whatever the blocking and thread count). Exit status 0 only when
 * every checked element matches: a run that computes a wrong answer fails.
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: dgemm N REPS\n");
        return 2;
    }
    long n = strtol(argv[1], NULL, 10), reps = strtol(argv[2], NULL, 10);
    if (n < 1 || n > 20000 || reps < 1) {
        fprintf(stderr, "dgemm: N must be 1..20000 and REPS at least 1\n");
        return 2;
    }
    double *a = malloc(sizeof(double) * n * n);
    double *b = malloc(sizeof(double) * n * n);
    double *c = malloc(sizeof(double) * n * n);
    if (!a || !b || !c) {
        fprintf(stderr, "dgemm: out of memory\n");
        return 2;
    }
    for (long i = 0; i < n; i++)
        for (long k = 0; k < n; k++) {
            a[i * n + k] = 1.0 + (double)((i + k) % 7);
            b[i * n + k] = 1.0 + (double)((i + 2 * k) % 5);
        }
    for (long r = 0; r < reps; r++)
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0, a,
                    (int)n, b, (int)n, 0.0, c, (int)n);
    long wrong = 0;
    double sum = 0.0;
    for (long e = 0; e < n * n; e++)
        sum += c[e];
    for (long s = 0; s < 4096; s++) {
        long e = (s * 2654435761L) % (n * n), i = e / n, j = e % n, exact = 0;
        for (long k = 0; k < n; k++)
            exact += (1 + (i + k) % 7) * (1 + (k + 2 * j) % 5);
        if (c[i * n + j] != (double)exact)
            wrong++;
    }
    printf("dgemm: %ld x %ld, %ld products, checksum %.0f, %ld wrong\n", n, n, reps, sum, wrong);
    free(a);
    free(b);
    free(c);
    return wrong == 0 ? 0 : 1;
}
