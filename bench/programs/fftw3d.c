/*
 * fftw3d: repeated 3-D complex FFTs through FFTW's OpenMP build
 * (libfftw3_omp, libgomp), the way spectral codes drive it: each transform
 * runs a few parallel regions (one per dimension's batch of 1-D transforms),
 * with serial work on the data between transforms.
 *
 *   fftw3d N REPS
 *
 * Fills an N×N×N array with a fixed pattern, then REPS times: forward
 * transform, scales by 1/N³ in a serial pass, backward transform. Each
 * round trip must give the pattern back: the largest error is checked
 * against 1e-9 after every round (plus Parseval's identity on the first
 * forward transform), so exit status 0 only when every transform was right.
 * Plans are made with FFTW_ESTIMATE (no timing, so the same plan on every
 * run) for omp_get_max_threads() threads; FFTW's OpenMP loops split their
 * work over whatever team libgomp gives them, so a DoP set through coloc's
 * shim changes the team at the next region without changing the result.
 */
#include <complex.h>
#include <fftw3.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

static double pattern(long i, long j, long k, int part)
{
    /* Small integers and a slow sine: no special symmetry the FFT could hide. */
    return part ? sin(0.01 * (double)(i * 7 + j * 3 + k)) : (double)((i + 2 * j + 3 * k) % 11) - 5.0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: fftw3d N REPS\n");
        return 2;
    }
    long n = strtol(argv[1], NULL, 10), reps = strtol(argv[2], NULL, 10);
    if (n < 2 || n > 1024 || reps < 1) {
        fprintf(stderr, "fftw3d: N must be 2..1024 and REPS at least 1\n");
        return 2;
    }
    if (!fftw_init_threads()) {
        fprintf(stderr, "fftw3d: fftw_init_threads failed\n");
        return 2;
    }
    fftw_plan_with_nthreads(omp_get_max_threads());
    long total = n * n * n;
    fftw_complex *x = fftw_alloc_complex((size_t)total);
    if (!x) {
        fprintf(stderr, "fftw3d: out of memory\n");
        return 2;
    }
    fftw_plan fwd = fftw_plan_dft_3d((int)n, (int)n, (int)n, x, x, FFTW_FORWARD, FFTW_ESTIMATE);
    fftw_plan bwd = fftw_plan_dft_3d((int)n, (int)n, (int)n, x, x, FFTW_BACKWARD, FFTW_ESTIMATE);
    double energy = 0.0;
    for (long i = 0; i < n; i++)
        for (long j = 0; j < n; j++)
            for (long k = 0; k < n; k++) {
                double re = pattern(i, j, k, 0), im = pattern(i, j, k, 1);
                x[(i * n + j) * n + k] = re + I * im;
                energy += re * re + im * im;
            }
    for (long r = 0; r < reps; r++) {
        fftw_execute(fwd);
        if (r == 0) {
            /* Parseval: sum |X|^2 = N^3 * sum |x|^2. */
            double spectral = 0.0;
            for (long e = 0; e < total; e++)
                spectral += creal(x[e]) * creal(x[e]) + cimag(x[e]) * cimag(x[e]);
            if (fabs(spectral / (double)total - energy) > 1e-9 * energy) {
                fprintf(stderr, "fftw3d: Parseval's identity fails: %.17g vs %.17g\n",
                        spectral / (double)total, energy);
                return 1;
            }
        }
        for (long e = 0; e < total; e++)
            x[e] /= (double)total;
        fftw_execute(bwd);
        double worst = 0.0;
        for (long i = 0; i < n; i++)
            for (long j = 0; j < n; j++)
                for (long k = 0; k < n; k++) {
                    fftw_complex want = pattern(i, j, k, 0) + I * pattern(i, j, k, 1);
                    double err = cabs(x[(i * n + j) * n + k] - want);
                    if (err > worst)
                        worst = err;
                }
        if (worst > 1e-9) {
            fprintf(stderr, "fftw3d: round trip %ld is off by %g\n", r + 1, worst);
            return 1;
        }
    }
    printf("fftw3d: %ld round trips of %ld^3 correct\n", reps, n);
    fftw_destroy_plan(fwd);
    fftw_destroy_plan(bwd);
    fftw_free(x);
    fftw_cleanup_threads();
    return 0;
}
