/*
 * LLVM's and Intel's OpenMP runtimes (shim.h). This part only tells whether
 * such a runtime is loaded, so that the libgomp wrappers that runtime also
 * exports pass every call on untouched.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>

#include "shim.h"

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static bool kmp;
static int (*kmp_max_threads)(void);

static void probe(void)
{
    kmp = dlsym(RTLD_DEFAULT, "__kmpc_fork_call") != NULL;
    if (kmp)
        kmp_max_threads = (int (*)(void))dlsym(RTLD_NEXT, "omp_get_max_threads");
}

bool llvm_runtime(void)
{
    pthread_once(&probe_once, probe);
    return kmp;
}

int ompt_max_threads(void)
{
    pthread_once(&probe_once, probe);
    return kmp_max_threads != NULL ? kmp_max_threads() : 1;
}
