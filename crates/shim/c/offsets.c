/* Prints the C compiler's view of the record layout, one "field offset" per
 * line, for the Rust layout test (tests/layout.rs) to compare with offset_of!. */
#include <stdio.h>

#include "coloc_omp_record.h"

#define FIELD(f) printf(#f " %zu\n", offsetof(struct coloc_omp_record, f))

int main(void)
{
    FIELD(magic);
    FIELD(version);
    FIELD(size);
    FIELD(generation);
    FIELD(heartbeat_ns);
    FIELD(dop);
    FIELD(ncpus);
    FIELD(cpus);
    FIELD(interleave_nodes);
    FIELD(owner_pid);
    FIELD(in_parallel);
    FIELD(team_size);
    FIELD(pin_errors);
    FIELD(generation_seen);
    FIELD(regions_started);
    FIELD(regions_completed);
    FIELD(regions_managed);
    FIELD(iterations_completed);
    FIELD(last_region_start_ns);
    FIELD(parallel_ns);
    FIELD(max_threads_asked);
    FIELD(team_sync);
    FIELD(nslots);
    FIELD(threads);
    printf("thread.tid %zu\n", offsetof(struct coloc_omp_thread, tid));
    printf("thread.steps %zu\n", offsetof(struct coloc_omp_thread, steps));
    printf("thread.units %zu\n", offsetof(struct coloc_omp_thread, units));
    printf("thread.sizeof %zu\n", sizeof(struct coloc_omp_thread));
    printf("sizeof %zu\n", sizeof(struct coloc_omp_record));
    printf("COLOC_OMP_MAGIC %llu\n", COLOC_OMP_MAGIC);
    printf("COLOC_OMP_VERSION %u\n", COLOC_OMP_VERSION);
    printf("COLOC_OMP_MAX_CPUS %u\n", COLOC_OMP_MAX_CPUS);
    printf("COLOC_OMP_STALE_NS %llu\n", COLOC_OMP_STALE_NS);
    printf("COLOC_OMP_THREAD_SLOTS %u\n", COLOC_OMP_THREAD_SLOTS);
    return 0;
}
