/*
 * omp_sum: the OpenMP job of the Slurm test (crates/cli/tests/slurm.rs).
 * REGIONS outermost parallel regions, each summing (7i + r) mod 1000 over
 * i < N with a reduction, so a DoP change can take effect between regions.
 * Whatever the team sizes, the answer is exact: for N a multiple of 1000,
 * each region adds N/1000 * 499500 (7 and 1000 are coprime, so every
 * thousand consecutive i give each residue once).
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: omp_sum REGIONS N\n");
        return 2;
    }
    long regions = atol(argv[1]), n = atol(argv[2]);
    unsigned long long total = 0;
    int most = 0;
    for (long r = 0; r < regions; r++) {
        unsigned long long s = 0;
#pragma omp parallel reduction(+ : s)
        {
#pragma omp single
            if (omp_get_num_threads() > most)
                most = omp_get_num_threads();
#pragma omp for schedule(static)
            for (long i = 0; i < n; i++)
                s += (unsigned long long)((i * 7 + r) % 1000);
        }
        total += s;
    }
    printf("omp_sum regions=%ld n=%ld sum=%llu most_threads=%d\n", regions, n, total, most);
    return 0;
}
