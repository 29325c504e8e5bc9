/*
 * Shared helpers for coloc's workload kernels: argument parsing, a monotonic
 * clock, and the output contract that coloc parses.
 *
 * Output contract (every kernel, at the end, on stdout):
 *   <one human-readable summary line>
 *   coloc-metric: <number> <unit>     (exactly one; higher is better)
 *   coloc-threads: <n>                (team size of the first parallel region)
 *
 * Thread count comes from OMP_NUM_THREADS like any OpenMP program, and the
 * wait policy is libgomp's default: coloc manages unmodified binaries, so the
 * kernels must behave like them.
 */
#ifndef COLOC_COMMON_H
#define COLOC_COMMON_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One optional numeric flag `--name N` (or `--name=N`), min <= N <= max. The
 * bounds keep sizes and counts far from overflowing the kernels' arithmetic. */
struct opt {
    const char *name; /* without the leading "--" */
    long *value;      /* holds the default on entry */
    long min, max;
};

/* The largest count any flag accepts: days of work at any speed. */
#define MAX_COUNT 1000000000000L

/* Stringifies a macro's value, so usage texts quote the defaults the code uses. */
#define STR(x) #x
#define XSTR(x) STR(x)

/* Exit code for bad arguments, as for most command-line tools. */
#define EXIT_USAGE 2

static inline void usage_error(const char *prog, const char *usage, const char *msg, const char *arg)
{
    fprintf(stderr, "%s: %s '%s'\nusage: %s\n", prog, msg, arg, usage);
    exit(EXIT_USAGE);
}

/*
 * Parses argv against `opts`; prints `usage` and exits 0 on --help/-h, exits 2
 * naming the offending flag on anything else it does not understand.
 */
static inline void parse_args(int argc, char **argv, const char *prog, const char *usage,
                              struct opt *opts, int nopts)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            printf("usage: %s\n", usage);
            exit(0);
        }
        if (strncmp(arg, "--", 2) != 0)
            usage_error(prog, usage, "unexpected argument", arg);
        const char *eq = strchr(arg, '=');
        size_t len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
        struct opt *o = NULL;
        for (int k = 0; k < nopts; k++)
            if (strlen(opts[k].name) == len && strncmp(opts[k].name, arg + 2, len) == 0)
                o = &opts[k];
        if (!o)
            usage_error(prog, usage, "unknown flag", arg);
        const char *val = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (!val)
            usage_error(prog, usage, "missing value for flag", arg);
        char *end;
        errno = 0;
        long v = strtol(val, &end, 10);
        if (errno != 0 || end == val || *end != '\0' || v < o->min || v > o->max) {
            fprintf(stderr, "%s: flag --%s needs an integer in [%ld, %ld], got '%s'\nusage: %s\n",
                    prog, o->name, o->min, o->max, val, usage);
            exit(EXIT_USAGE);
        }
        *o->value = v;
    }
}

/* Seconds on the monotonic clock: immune to wall-clock steps. */
static inline double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Allocates or exits with a message naming what was being allocated. */
static inline void *xmalloc(const char *prog, const char *what, size_t bytes)
{
    void *p = malloc(bytes);
    if (!p) {
        fprintf(stderr, "%s: cannot allocate %zu bytes for %s\n", prog, bytes, what);
        exit(1);
    }
    return p;
}

/* Exits 1 with a message: the kernel computed a wrong result. */
static inline void verify_failed(const char *prog, const char *what)
{
    fprintf(stderr, "%s: verification failed: %s\n", prog, what);
    exit(1);
}

/* Prints the two machine-readable lines of the output contract. */
static inline void report(double metric, const char *unit, int threads)
{
    printf("coloc-metric: %.6g %s\ncoloc-threads: %d\n", metric, unit, threads);
    fflush(stdout);
}

#endif
