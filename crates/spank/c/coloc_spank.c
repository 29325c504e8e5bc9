/*
 * libcoloc_spank.so: a Slurm SPANK plugin that puts every task of a job step
 * under the node's coloc daemon (docs/slurm.md), as `coloc exec` puts a
 * command (docs/service.md, coloc exec).
 *
 * Loaded from plugstack.conf, with optional arguments:
 *
 *   optional /usr/lib/x86_64-linux-gnu/slurm-wlm/libcoloc_spank.so socket=/run/coloc-daemon/coloc.sock batch=manage
 *
 * Options (sbatch, srun, salloc): --coloc-class=batch|latency, --coloc-malleable.
 *
 * slurm_spank_user_init runs in slurmstepd once per step on the node: with no
 * daemon there it logs one line in the node's log, and the step's tasks run
 * unmanaged. slurm_spank_task_init runs in each task's own process, as the
 * job's user, just before it execs the step's program. There the plugin
 * registers the process itself with the daemon (request `exec` naming its
 * own pid, the self-registration of docs/service.md, Protocol), named
 * `job<ID>.<step>`, and waits: the daemon adopts it and sets its CPUs (within
 * Slurm's cgroup cpuset: coloc only narrows, and never moves a task out of
 * Slurm's cgroup) before it answers, so the program runs on its planned CPUs
 * from its first instruction. The answer's environment (the OpenMP shim's
 * preload and DoP record for --coloc-malleable) goes into the task's
 * environment and its memory policy is set on the process, where both
 * survive the exec. slurm_spank_task_exit runs in slurmstepd once the task
 * has ended: it tells the daemon how (request `exited` with the pid), and the
 * daemon lets the app go.
 *
 * The plugin never fails a job: with no daemon on the node, or a daemon that
 * refuses or goes away, the task runs unmanaged and the plugin logs one line
 * saying why (from a task, at Slurm's error level: the only one a task's log
 * keeps).
 *
 * JSON goes through json-c, which Debian's Slurm plugins already depend on.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/mempolicy.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>
#include <slurm/slurm.h>
#include <slurm/spank.h>

SPANK_PLUGIN(coloc, 1);

/* The daemon's protocol version (crates/daemon/src/protocol.rs). */
#define PROTOCOL_VERSION 1
/* Root's daemon socket (docs/service.md, Permissions). */
#define DEFAULT_SOCKET "/run/coloc-daemon/coloc.sock"
/* The longest answer read: an admission's environment and notes are a few
 * hundred bytes; anything longer than this is not the daemon's. */
#define MAX_REPLY (64 * 1024)
/* The daemon's bounds on a request (docs/service.md, Limits): a line of 64
 * KiB, 4096 arguments. The plugin sends the program and as many arguments as
 * fit in half the line, each byte counted as its longest JSON escape (6),
 * as `coloc exec` does (the daemon keeps only the program). */
#define MAX_REQUEST (64 * 1024)
#define MAX_ARGS 4096
/* How long slurmstepd waits for the daemon to take a task's end: the task
 * is over, so nothing of the job waits on it but its step's completion. */
#define EXIT_REPORT_TIMEOUT_MS 2000

static char socket_path[sizeof(((struct sockaddr_un *)0)->sun_path)] = DEFAULT_SOCKET;
static char app_class[16] = "batch";
/* plugstack.conf's batch=skip: leave batch scripts alone, manage only the
 * steps srun starts (sites whose scripts run everything through srun: the
 * script only waits, and would hold a place in policies that admit no more
 * apps than CPUs, docs/slurm.md). */
static int skip_batch;
static int malleable;

static int class_option(int val, const char *optarg, int remote)
{
    (void)val;
    (void)remote;
    if (optarg == NULL || (strcmp(optarg, "batch") != 0 && strcmp(optarg, "latency") != 0)) {
        slurm_error("--coloc-class: expected batch or latency, not \"%s\"", optarg ? optarg : "");
        return -1;
    }
    snprintf(app_class, sizeof app_class, "%s", optarg);
    return 0;
}

static int malleable_option(int val, const char *optarg, int remote)
{
    (void)val;
    (void)optarg;
    (void)remote;
    malleable = 1;
    return 0;
}

/* Registered by slurm_spank_init: Slurm reads a static `spank_options`
 * table in srun and slurmstepd but not in sbatch and salloc. */
static struct spank_option options[] = {
    {"coloc-class", "CLASS",
     "coloc's class for the job's tasks: batch (throughput, the default) or latency", 1, 0,
     class_option},
    {"coloc-malleable", NULL,
     "coloc may change the thread count of the job's OpenMP (libgomp) programs", 0, 0,
     malleable_option},
    SPANK_OPTIONS_TABLE_END};

/* plugstack.conf arguments: socket=PATH, batch=manage|skip. A bad one is
 * said (in every command and daemon that loads the plugin) and left out:
 * even a `required` plugin fails no job over it. */
static void parse_arguments(int ac, char **av)
{
    for (int i = 0; i < ac; i++) {
        if (strncmp(av[i], "socket=", 7) == 0) {
            const char *path = av[i] + 7;
            if (path[0] != '/' || strlen(path) >= sizeof socket_path) {
                slurm_error("coloc: plugstack.conf argument socket=%s: expected an absolute path "
                            "shorter than %zu bytes; using %s",
                            path, sizeof socket_path, socket_path);
                continue;
            }
            snprintf(socket_path, sizeof socket_path, "%s", path);
        } else if (strcmp(av[i], "batch=skip") == 0 || strcmp(av[i], "batch=manage") == 0) {
            skip_batch = strcmp(av[i], "batch=skip") == 0;
        } else {
            slurm_error("coloc: unknown plugstack.conf argument \"%s\" (expected socket=PATH, "
                        "batch=manage or batch=skip); ignored",
                        av[i]);
        }
    }
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
    parse_arguments(ac, av);
    for (struct spank_option *o = options; o->name != NULL; o++)
        if (spank_option_register(sp, o) != ESPANK_SUCCESS)
            slurm_error("coloc: could not register --%s", o->name);
    return 0;
}

/* `job<ID>.<step>`, the step as Slurm names it (batch, extern, interactive or
 * its number). */
static void step_name(spank_t sp, char *out, size_t len)
{
    uint32_t job = 0, step = 0;
    spank_get_item(sp, S_JOB_ID, &job);
    spank_get_item(sp, S_JOB_STEPID, &step);
    switch (step) {
    case SLURM_BATCH_SCRIPT:
        snprintf(out, len, "job%u.batch", job);
        break;
    case SLURM_EXTERN_CONT:
        snprintf(out, len, "job%u.extern", job);
        break;
    case SLURM_INTERACTIVE_STEP:
        snprintf(out, len, "job%u.interactive", job);
        break;
    default:
        snprintf(out, len, "job%u.%u", job, step);
    }
}

/* The step part of step_name, for the request's `job` field. */
static const char *step_of(const char *name)
{
    return strchr(name, '.') + 1;
}

static int connect_daemon(void)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    memcpy(addr.sun_path, socket_path, strlen(socket_path) + 1);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

static int send_line(int fd, json_object *req)
{
    const char *text = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
    size_t len = strlen(text), done = 0;
    while (done < len) {
        ssize_t n = send(fd, text + done, len - done, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        done += (size_t)n;
    }
    return send(fd, "\n", 1, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

/* One line of the daemon's, parsed; NULL on end of file, a timeout
 * (timeout_ms >= 0), an over-long line or bad JSON (errno says which). */
static json_object *read_reply(int fd, int timeout_ms)
{
    char *buf = malloc(MAX_REPLY + 1);
    if (buf == NULL)
        return NULL;
    size_t used = 0;
    json_object *reply = NULL;
    for (;;) {
        if (timeout_ms >= 0) {
            struct pollfd p = {.fd = fd, .events = POLLIN};
            int r = poll(&p, 1, timeout_ms);
            if (r == 0)
                errno = ETIMEDOUT;
            if (r <= 0 && !(r < 0 && errno == EINTR))
                break;
        }
        ssize_t n = read(fd, buf + used, MAX_REPLY - used);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = ECONNRESET;
            break;
        }
        char *nl = memchr(buf + used, '\n', (size_t)n);
        used += (size_t)n;
        if (nl != NULL) {
            *nl = '\0';
            reply = json_tokener_parse(buf);
            if (reply == NULL)
                errno = EPROTO;
            break;
        }
        if (used == MAX_REPLY) {
            errno = EMSGSIZE;
            break;
        }
    }
    free(buf);
    return reply;
}

static const char *string_field(json_object *o, const char *key)
{
    json_object *v;
    if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

/* The program the task will run, as the daemon's OpenMP check reads it: a
 * path as given when it has a slash (made absolute against the task's
 * directory), else the first executable of that name on the task's PATH. */
static void program_of(spank_t sp, const char *argv0, char *out, size_t len)
{
    if (strchr(argv0, '/') != NULL) {
        char cwd[PATH_MAX];
        if (argv0[0] == '/' || getcwd(cwd, sizeof cwd) == NULL ||
            snprintf(out, len, "%s/%s", cwd, argv0) >= (int)len)
            snprintf(out, len, "%s", argv0);
        return;
    }
    char path[4096];
    snprintf(out, len, "%s", argv0);
    if (spank_getenv(sp, "PATH", path, sizeof path) != ESPANK_SUCCESS)
        return;
    for (char *save = NULL, *dir = strtok_r(path, ":", &save); dir != NULL;
         dir = strtok_r(NULL, ":", &save)) {
        char candidate[PATH_MAX];
        struct stat st;
        if (snprintf(candidate, sizeof candidate, "%s/%s", dir, argv0) >= (int)sizeof candidate)
            continue;
        if (stat(candidate, &st) == 0 && S_ISREG(st.st_mode) && access(candidate, X_OK) == 0) {
            snprintf(out, len, "%s", candidate);
            return;
        }
    }
}

/* The registration: an `exec` of the calling process itself. */
static json_object *exec_request(spank_t sp, const char *name)
{
    json_object *req = json_object_new_object();
    json_object_object_add(req, "v", json_object_new_int(PROTOCOL_VERSION));
    json_object_object_add(req, "request", json_object_new_string("exec"));
    json_object_object_add(req, "name", json_object_new_string(name));
    json_object_object_add(req, "class", json_object_new_string(app_class));
    json_object_object_add(req, "malleable", json_object_new_boolean(malleable));
    char threads[32];
    long t = 0;
    if (spank_getenv(sp, "OMP_NUM_THREADS", threads, sizeof threads) == ESPANK_SUCCESS) {
        char *end;
        t = strtol(threads, &end, 10);
        if (*end != '\0' || t < 0 || t > INT32_MAX)
            t = 0; /* a list (nested levels) or junk: one per CPU, as libgomp does */
    }
    json_object_object_add(req, "threads", json_object_new_int64(t));
    json_object_object_add(req, "pid", json_object_new_int64(getpid()));
    json_object *argv = json_object_new_array();
    int argc = 0;
    char **args = NULL;
    if (spank_get_item(sp, S_JOB_ARGV, &argc, &args) == ESPANK_SUCCESS && argc > 0) {
        char program[PATH_MAX];
        program_of(sp, args[0], program, sizeof program);
        json_object_array_add(argv, json_object_new_string(program));
        size_t used = strlen(program) * 6 + 3;
        for (int i = 1; i < argc && i < MAX_ARGS; i++) {
            used += strlen(args[i]) * 6 + 3;
            if (used > MAX_REQUEST / 2)
                break;
            json_object_array_add(argv, json_object_new_string(args[i]));
        }
    }
    json_object_object_add(req, "argv", argv);
    uint32_t job = 0;
    spank_get_item(sp, S_JOB_ID, &job);
    json_object *j = json_object_new_object();
    json_object_object_add(j, "id", json_object_new_int64(job));
    json_object_object_add(j, "step", json_object_new_string(step_of(name)));
    json_object_object_add(req, "job", j);
    return req;
}

/* LD_PRELOAD as the daemon gives it, followed by the task's own. */
static void set_preload(spank_t sp, const char *value)
{
    char own[4096];
    if (spank_getenv(sp, "LD_PRELOAD", own, sizeof own) == ESPANK_SUCCESS && own[0] != '\0' &&
        strstr(value, own) == NULL) {
        size_t len = strlen(value) + 1 + strlen(own) + 1;
        char *both = malloc(len);
        if (both != NULL) {
            snprintf(both, len, "%s:%s", value, own);
            spank_setenv(sp, "LD_PRELOAD", both, 1);
            free(both);
            return;
        }
    }
    spank_setenv(sp, "LD_PRELOAD", value, 1);
}

/* The admission's memory policy, [policy, [nodes…]], set on this process:
 * set_mempolicy acts on the caller, and holds across exec. */
static void set_memory(json_object *memory, const char *name)
{
    if (memory == NULL || !json_object_is_type(memory, json_type_array) ||
        json_object_array_length(memory) != 2)
        return;
    const char *policy = json_object_get_string(json_object_array_get_idx(memory, 0));
    json_object *nodes = json_object_array_get_idx(memory, 1);
    if (policy == NULL || !json_object_is_type(nodes, json_type_array))
        return;
    unsigned long mask[16] = {0};
    int mode;
    if (strcmp(policy, "local") == 0) {
        mode = MPOL_LOCAL;
    } else if (strcmp(policy, "interleave") == 0) {
        mode = MPOL_INTERLEAVE;
        for (size_t i = 0; i < json_object_array_length(nodes); i++) {
            int64_t n = json_object_get_int64(json_object_array_get_idx(nodes, i));
            if (n >= 0 && n < (int64_t)(sizeof mask * CHAR_BIT))
                mask[n / (sizeof mask[0] * CHAR_BIT)] |= 1UL << (n % (sizeof mask[0] * CHAR_BIT));
        }
    } else {
        return;
    }
    if (syscall(SYS_set_mempolicy, mode, mode == MPOL_LOCAL ? NULL : mask,
                mode == MPOL_LOCAL ? 0 : sizeof mask * CHAR_BIT + 1) != 0)
        slurm_error("coloc: %s: memory policy %s: %s", name, policy, strerror(errno));
}

/* Puts an admission's environment and memory policy in force for the exec. */
static void apply_admission(spank_t sp, json_object *reply, const char *name)
{
    json_object *v;
    if (json_object_object_get_ex(reply, "remove_env", &v) &&
        json_object_is_type(v, json_type_array))
        for (size_t i = 0; i < json_object_array_length(v); i++) {
            const char *key = json_object_get_string(json_object_array_get_idx(v, i));
            if (key != NULL)
                spank_unsetenv(sp, key);
        }
    if (json_object_object_get_ex(reply, "set_env", &v) && json_object_is_type(v, json_type_array))
        for (size_t i = 0; i < json_object_array_length(v); i++) {
            json_object *kv = json_object_array_get_idx(v, i);
            if (!json_object_is_type(kv, json_type_array) || json_object_array_length(kv) != 2)
                continue;
            const char *key = json_object_get_string(json_object_array_get_idx(kv, 0));
            const char *value = json_object_get_string(json_object_array_get_idx(kv, 1));
            if (key == NULL || value == NULL)
                continue;
            if (strcmp(key, "LD_PRELOAD") == 0)
                set_preload(sp, value);
            else
                spank_setenv(sp, key, value, 1);
        }
    if (json_object_object_get_ex(reply, "threads", &v) && json_object_get_int64(v) > 0) {
        char threads[32];
        snprintf(threads, sizeof threads, "%lld", (long long)json_object_get_int64(v));
        spank_setenv(sp, "OMP_NUM_THREADS", threads, 1);
    }
    json_object *memory = NULL;
    json_object_object_get_ex(reply, "memory", &memory);
    set_memory(memory, name);
    if (json_object_object_get_ex(reply, "notes", &v) && json_object_is_type(v, json_type_array))
        for (size_t i = 0; i < json_object_array_length(v); i++)
            fprintf(stderr, "coloc: %s: %s\n", name,
                    json_object_get_string(json_object_array_get_idx(v, i)));
}

/* Whether this step is left alone: the node has no daemon, as
 * slurm_spank_user_init found, or it is a batch script and batch=skip. */
static int left_alone;

/* In slurmstepd, once per step on the node, before its tasks are forked
 * (they inherit left_alone): a node without a daemon says so once, in the
 * node's log, and its tasks run unmanaged. */
int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
    (void)ac;
    (void)av;
    if (!spank_remote(sp))
        return 0;
    uint32_t step = 0;
    spank_get_item(sp, S_JOB_STEPID, &step);
    if (skip_batch && step == SLURM_BATCH_SCRIPT) {
        left_alone = 1;
        return 0;
    }
    int fd = connect_daemon();
    if (fd < 0) {
        char name[64];
        step_name(sp, name, sizeof name);
        slurm_info("coloc: no daemon at %s (%s): %s runs unmanaged", socket_path, strerror(errno),
                   name);
        left_alone = 1;
        return 0;
    }
    close(fd);
    return 0;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
    (void)ac;
    (void)av;
    if (!spank_remote(sp) || left_alone)
        return 0;
    char name[64];
    step_name(sp, name, sizeof name);
    int fd = connect_daemon();
    if (fd < 0) {
        slurm_error("coloc: no daemon at %s (%s): %s runs unmanaged", socket_path, strerror(errno),
                    name);
        return 0;
    }
    json_object *req = exec_request(sp, name);
    int sent = send_line(fd, req);
    json_object_put(req);
    json_object *reply = sent == 0 ? read_reply(fd, -1) : NULL;
    const char *kind = reply ? string_field(reply, "reply") : NULL;
    if (reply == NULL) {
        slurm_error("coloc: the daemon at %s did not answer (%s): %s runs unmanaged", socket_path,
                    strerror(errno), name);
    } else if (kind != NULL && strcmp(kind, "admitted") == 0) {
        apply_admission(sp, reply, name);
    } else if (kind != NULL && strcmp(kind, "error") == 0) {
        const char *message = string_field(reply, "message");
        slurm_error("coloc: the daemon did not take %s: %s; it runs unmanaged", name,
                    message ? message : "(no reason given)");
    } else {
        slurm_error("coloc: unexpected answer from the daemon for %s: %s; it runs unmanaged",
                    name, json_object_to_json_string_ext(reply, JSON_C_TO_STRING_PLAIN));
    }
    json_object_put(reply);
    close(fd);
    return 0;
}

int slurm_spank_task_exit(spank_t sp, int ac, char **av)
{
    (void)ac;
    (void)av;
    if (!spank_remote(sp) || left_alone)
        return 0;
    pid_t pid = 0;
    int status = 0;
    if (spank_get_item(sp, S_TASK_PID, &pid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_TASK_EXIT_STATUS, &status) != ESPANK_SUCCESS)
        return 0;
    /* No daemon now: its tasks' ends are nobody's to hear. */
    int fd = connect_daemon();
    if (fd < 0)
        return 0;
    json_object *st = json_object_new_object();
    if (WIFSIGNALED(status)) {
        json_object_object_add(st, "kind", json_object_new_string("signal"));
        json_object_object_add(st, "value", json_object_new_int(WTERMSIG(status)));
    } else {
        json_object_object_add(st, "kind", json_object_new_string("code"));
        json_object_object_add(st, "value", json_object_new_int(WEXITSTATUS(status)));
    }
    json_object *req = json_object_new_object();
    json_object_object_add(req, "v", json_object_new_int(PROTOCOL_VERSION));
    json_object_object_add(req, "request", json_object_new_string("exited"));
    json_object_object_add(req, "pid", json_object_new_int64(pid));
    json_object_object_add(req, "status", st);
    if (send_line(fd, req) == 0) {
        /* The answer only says whether the daemon still knew the task. */
        json_object_put(read_reply(fd, EXIT_REPORT_TIMEOUT_MS));
    }
    json_object_put(req);
    close(fd);
    return 0;
}
