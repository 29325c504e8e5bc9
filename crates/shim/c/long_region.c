/*
 * long_region: a program whose work is one parallel region, driven over
 * stdin so that a test reads the DoP channel's record while the region runs
 * (progress inside a region, docs/signals.md).
 *
 * The team enters one region at start and stays in it. Thread 0 reads a
 * line, the team passes two barriers, then:
 *   <n>   the team runs n rounds; thread 0 prints
 *         "inside rounds <total> team <t>" and reads the next line
 *   end   the team leaves the region; the program prints
 *         "done rounds <total> checksum <c> expected <e> ok|BAD" and exits
 * A round is a worksharing loop over N iterations with schedule(dynamic,
 * CHUNK) (N / CHUNK chunks, then the loop's end with its barrier), TASKS
 * tasks created by thread 0, and a barrier (where they complete). So per
 * round the team passes two barriers (the loop's and the explicit one) and
 * takes N / CHUNK chunks and TASKS tasks, whatever its size: the counts the
 * tests expect.
 *
 * Built with GCC (libgomp) and, where clang and LLVM's libomp are installed,
 * with clang (the OMPT tool's tests).
 */
#include <omp.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 4000L
#define CHUNK 100L
#define TASKS 5

static uint64_t f(long i) { return ((uint64_t)i * 2654435761u) % 1000003u; }

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    uint64_t per_round = 0;
    for (long i = 0; i < N; i++)
        per_round += f(i);
    _Atomic uint64_t sum = 0;
    long rounds = 0;
    long todo = 0;
    bool stop = false;
#pragma omp parallel shared(sum, rounds, todo, stop)
    {
        for (;;) {
#pragma omp master
            {
                char line[64];
                if (fgets(line, sizeof line, stdin) == NULL || strncmp(line, "end", 3) == 0)
                    stop = true;
                else
                    todo = atol(line);
            }
#pragma omp barrier
            if (stop)
                break;
            long mine = todo;
            /* Nobody reads todo again before thread 0 writes the next. */
#pragma omp barrier
            for (long r = 0; r < mine; r++) {
                uint64_t local = 0;
#pragma omp for schedule(dynamic, CHUNK)
                for (long i = 0; i < N; i++)
                    local += f(i);
                atomic_fetch_add(&sum, local);
#pragma omp master
                for (int k = 0; k < TASKS; k++) {
#pragma omp task
                    atomic_fetch_add(&sum, 0);
                }
#pragma omp barrier
            }
#pragma omp master
            {
                rounds += todo;
                printf("inside rounds %ld team %d\n", rounds, omp_get_num_threads());
            }
        }
    }
    uint64_t expected = per_round * (uint64_t)rounds;
    printf("done rounds %ld checksum %llu expected %llu %s\n", rounds,
           (unsigned long long)atomic_load(&sum), (unsigned long long)expected,
           atomic_load(&sum) == expected ? "ok" : "BAD");
    return 0;
}
