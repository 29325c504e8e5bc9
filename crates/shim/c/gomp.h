/*
 * libgomp's side of libcoloc_omp.so (shim.h): its entry points as the shim
 * found them, shared by coloc_omp.c (parallel regions) and progress.c
 * (progress inside them).
 */
#ifndef COLOC_GOMP_H
#define COLOC_GOMP_H

#include "shim.h"

typedef void (*loop_fn)(region_fn, void *, unsigned, long, long, long, long, unsigned);
typedef void (*runtime_loop_fn)(region_fn, void *, unsigned, long, long, long, unsigned);
typedef void (*loop_start_fn)(region_fn, void *, unsigned, long, long, long, long);
typedef bool (*ws_loop_fn)(long, long, long, long, long *, long *);
typedef bool (*ws_runtime_fn)(long, long, long, long *, long *);
typedef bool (*ws_next_fn)(long *, long *);

/* libgomp's own entry points and the omp_* queries the shim needs. */
struct gomp_entry_points {
    void (*parallel)(region_fn, void *, unsigned, unsigned);
    unsigned (*parallel_reductions)(region_fn, void *, unsigned, unsigned);
    void (*parallel_start)(region_fn, void *, unsigned);
    void (*parallel_end)(void);
    void (*parallel_sections)(region_fn, void *, unsigned, unsigned, unsigned);
    void (*parallel_sections_start)(region_fn, void *, unsigned, unsigned);
    loop_fn loop_static, loop_dynamic, loop_guided, loop_nonmonotonic_dynamic,
        loop_nonmonotonic_guided;
    runtime_loop_fn loop_runtime, loop_nonmonotonic_runtime, loop_maybe_nonmonotonic_runtime;
    loop_start_fn loop_static_start, loop_dynamic_start, loop_guided_start;
    void (*loop_runtime_start)(region_fn, void *, unsigned, long, long, long);
    ws_loop_fn ws_static, ws_dynamic, ws_guided, ws_nonmonotonic_dynamic, ws_nonmonotonic_guided;
    ws_runtime_fn ws_runtime, ws_nonmonotonic_runtime, ws_maybe_nonmonotonic_runtime;
    bool (*ws_generic)(long, long, long, long, long, long *, long *, uintptr_t *, void **);
    int (*get_max_threads)(void);
    void (*set_num_threads)(int);
    int (*get_dynamic)(void);
    int (*get_thread_num)(void);
    int (*get_num_threads)(void);
    int (*get_level)(void);
    /* Progress inside a region (progress.c): looked up softly, the app's
     * libgomp may predate some. */
    void (*barrier)(void);
    bool (*barrier_cancel)(void);
    void (*loop_end)(void);
    void (*loop_end_nowait)(void);
    bool (*loop_end_cancel)(void);
    ws_next_fn next_static, next_dynamic, next_guided, next_runtime, next_nonmonotonic_dynamic,
        next_nonmonotonic_guided, next_nonmonotonic_runtime, next_maybe_nonmonotonic_runtime;
    unsigned (*sections_start)(unsigned);
    unsigned (*sections_next)(void);
    void (*sections_end)(void);
    void (*sections_end_nowait)(void);
    void (*task)(region_fn, void *, void (*)(void *, void *), long, long, bool, unsigned,
                 void **, int, void *);
};
extern struct gomp_entry_points real;

/* Looks libgomp's entry points up (once) and attaches to the record. Every
 * wrapper calls it before it reads `real`. */
void gomp_ready(void);
/* Counts the chunk a loop's *_start call handed the calling thread, if
 * `got` (progress.c); returns `got`. */
bool chunk_started(bool got);
/* The app called an entry point its libgomp does not have. */
_Noreturn void missing(const char *name);

#endif /* COLOC_GOMP_H */
