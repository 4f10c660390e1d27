/* Reading a hostile HDF5 file in a child process first. libhdf5 1.10.8
 * (Debian 12) trusts what a forged file says where ptq cannot check it
 * through the library's API: the global heap behind variable-length
 * strings (a negative memcpy, gigabytes allocated and zeroed, minutes of
 * spinning), chunks that decompress short, a chunk dimension of 0. Before
 * ptq opens an HDF5 file it was given, a forked child opens it, walks its
 * links as ds_h5_check_self_contained does and reads every attribute,
 * every string and compact dataset (every dataset, for files ptq reads
 * whole) under a memory, processor-time and wall-time limit. A child that
 * crashes, trips a sanitizer, runs out of either, or finds a compact
 * dataset shorter than it declares makes the file refused
 * (PTQ_ERR_FORMAT); only then does the process itself read the file.
 * The child is a fresh process where it can be: a program that calls
 * ptq_hdf5_check_main first in main (the ptq command does) is started
 * again (posix_spawn of /proc/self/exe) to check the file. A fork of the
 * caller would inherit every lock another of its threads held at that
 * moment, and its libhdf5 calls and allocations would wait on them for
 * ever: libhdf5's (Debian's is built thread-safe: one lock around every
 * call), taken by a thread reading another file, which makes the wall
 * limit refuse a sound file; or a sanitizer allocator's, taken by the
 * reports' hashing thread. Other programs get the fork, made inside a
 * libhdf5 call (fork_in_hdf5) so that no other thread holds libhdf5's lock.
 * The child supervises (vet_supervise): it runs the check as its own child
 * and writes the verdict to a pipe. The caller's own children may be reaped
 * before it reads their status, by the kernel (SIGCHLD ignored) or by the
 * host's SIGCHLD handler or reaper thread (waitpid(-1)); a grandchild's
 * status is the supervisor's alone to read.
 * Covered by tests/badinput_test.py (forged archives and image sets) and
 * the fuzz_hdf5_set / fuzz_archive harnesses. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "datasets/datasets_internal.h"
#include "ptq/memory.h"

#define VET_CPU_SECONDS 5   /* the child's processor time: a metadata walk takes milliseconds */
#define VET_WALL_SECONDS 120 /* and its time waiting for a slow file system, at most (then once more) */
#define VET_FLOOR ((uint64_t)64 << 20) /* the child's allowance under the smallest --max-memory */
#define VET_MAX_STRINGS (1 << 24) /* ds_h5_read_strings's bound: larger string datasets are never read */

/* argv[1] of the check's fresh process: argv[2..6] the path, all (0/1), the allowance, the wall seconds and the
 * stall flag (tests); argv[7] the descriptor the process, supervising the check, writes its verdict to
 * (vet_supervise) */
#define VET_ARG "--ptq-hdf5-check-child"

/* 1 once the program called ptq_hdf5_check_main: /proc/self/exe runs the check when started with VET_ARG */
static atomic_int vet_spawn;

/* the child's exit codes */
enum { VET_READ = 0, VET_NO_OPEN = 1, VET_MEMORY = 2, VET_UNREADABLE = 3, VET_SANITIZER = 4, VET_SHORT = 5 };

/* sanitizer builds (tests, fuzzing): a memory-safety report in the child
 * ends it with VET_SANITIZER instead of the fuzzer's crash handling */
void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

static void child_death(void)
{
    _exit(VET_SANITIZER);
}

typedef struct vet {
    uint64_t allowance; /* bytes the child may allocate */
    int all;            /* read every dataset, not only strings and compact ones */
    int memory;         /* an allocation failed: the file asks for more than the allowance */
    int short_;         /* a compact dataset stores fewer bytes than it declares (libhdf5 reads past them) */
    int failed;         /* a read failed otherwise */
} vet;

static herr_t note_resource(unsigned n, const H5E_error2_t *e, void *data)
{
    (void)n;
    if (e->maj_num == H5E_RESOURCE)
        ((vet *)data)->memory = 1;
    return 0;
}

/* A failed HDF5 call: out of memory, or unreadable. */
static void vet_failed(vet *v)
{
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, note_resource, v);
    H5Eclear2(H5E_DEFAULT);
    v->failed = 1;
}

/* Reads every element of obj (an attribute, or a dataset) as type. */
static void read_all(vet *v, hid_t obj, int is_attr, hid_t type, hid_t space)
{
    const hssize_t n = H5Sget_simple_extent_npoints(space);
    const size_t size = H5Tget_size(type);
    if (n < 0 || size == 0) {
        vet_failed(v);
        return;
    }
    if (n == 0)
        return;
    if ((double)n * (double)size > (double)v->allowance / 2)
        return; /* more than the file could hold: ptq's own checks refuse it before reading it */
    void *buf = calloc((size_t)n, size);
    if (!buf) {
        v->memory = v->failed = 1;
        return;
    }
    herr_t r = is_attr ? H5Aread(obj, type, buf) : H5Dread(obj, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
    if (r < 0)
        vet_failed(v);
    else if (H5Tdetect_class(type, H5T_VLEN) > 0 || (H5Tget_class(type) == H5T_STRING && H5Tis_variable_str(type) > 0))
        H5Dvlen_reclaim(type, space, H5P_DEFAULT, buf);
    free(buf);
}

static herr_t vet_attr(hid_t loc, const char *name, const H5A_info_t *info, void *data)
{
    vet *v = data;
    (void)info;
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    hid_t type = a >= 0 ? H5Aget_type(a) : -1, space = a >= 0 ? H5Aget_space(a) : -1;
    if (a < 0 || type < 0 || space < 0)
        vet_failed(v);
    else
        read_all(v, a, 1, type, space);
    if (space >= 0)
        H5Sclose(space);
    if (type >= 0)
        H5Tclose(type);
    if (a >= 0)
        H5Aclose(a);
    return v->memory ? 1 : 0;
}

/* Dataset d: a compact one (its data in the object header, at most 64 KiB)
 * storing fewer bytes than its shape and type need is short; else the
 * child reads the elements of strings and variable-length values
 * (libhdf5's heap; not a string dataset larger than ptq would ever read),
 * of compact datasets, or of all when v says so. */
static void vet_dataset(vet *v, hid_t d, hid_t type, hid_t space)
{
    hid_t dcpl = H5Dget_create_plist(d);
    const int compact = dcpl >= 0 && H5Pget_layout(dcpl) == H5D_COMPACT;
    if (dcpl >= 0)
        H5Pclose(dcpl);
    const hssize_t n = H5Sget_simple_extent_npoints(space);
    if (compact && n >= 0 && (double)H5Dget_storage_size(d) < (double)n * (double)H5Tget_size(type)) {
        v->short_ = 1;
        return;
    }
    const int strings = H5Tget_class(type) == H5T_STRING || H5Tdetect_class(type, H5T_VLEN) > 0;
    if (strings ? n <= VET_MAX_STRINGS : v->all || compact)
        read_all(v, d, 0, type, space);
}

/* Every object a hard link leads to, by the links as ds_h5_check_self_contained
 * walks them (and opens them: the parent does the same next): its
 * attributes; a dataset as vet_dataset says. */
static herr_t vet_link(hid_t group, const char *name, const H5L_info_t *info, void *data)
{
    vet *v = data;
    if (info->type != H5L_TYPE_HARD)
        return 0;
    hsize_t idx = 0;
    hid_t o = H5Oopen(group, name, H5P_DEFAULT);
    if (o < 0) {
        vet_failed(v);
        return 0;
    }
    if (H5Aiterate2(o, H5_INDEX_NAME, H5_ITER_INC, &idx, vet_attr, v) < 0)
        vet_failed(v);
    if (!v->memory && H5Iget_type(o) == H5I_DATASET) {
        hid_t type = H5Dget_type(o), space = H5Dget_space(o);
        if (type < 0 || space < 0)
            vet_failed(v);
        else
            vet_dataset(v, o, type, space);
        if (space >= 0)
            H5Sclose(space);
        if (type >= 0)
            H5Tclose(type);
    }
    H5Oclose(o);
    return v->memory || v->short_ ? 1 : 0;
}

/* The address space the child may add to what it inherited. */
static void limit_child_memory(uint64_t allowance)
{
    unsigned long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return;
    const int ok = fscanf(f, "%lu", &pages) == 1;
    fclose(f);
    if (!ok)
        return;
    const uint64_t have = (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE);
    struct rlimit rl = {(rlim_t)(have + allowance), (rlim_t)(have + allowance)};
    setrlimit(RLIMIT_AS, &rl);
}

/* stall: the child waits for the alarm instead of reading (PTQ_TEST_VET_STALL, tests only) */
static int vet_child(const char *path, int all, uint64_t allowance, int wall_s, int stall)
{
    /* quiet, and ended by the kernel, not by the parent's handlers, on a fault or the alarm */
    const int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (fd >= 0)
        dup2(fd, STDERR_FILENO);
    /* the parent's cleanup handlers (core/atomic.c) too: the child must not remove the parent's temporaries */
    static const int defaults[] = {SIGSEGV, SIGBUS,  SIGFPE,  SIGILL,  SIGABRT, SIGALRM, SIGXCPU,
                                   SIGTRAP, SIGINT,  SIGTERM, SIGHUP,  SIGQUIT, SIGPIPE, SIGUSR1};
    for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++)
        signal(defaults[i], SIG_DFL);
    if (__sanitizer_set_death_callback)
        __sanitizer_set_death_callback(child_death);
    limit_child_memory(allowance);
    struct rlimit cpu = {VET_CPU_SECONDS, VET_CPU_SECONDS + 1};
    setrlimit(RLIMIT_CPU, &cpu);
    alarm((unsigned)wall_s);
    while (stall)
        pause();
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (file < 0)
        return VET_NO_OPEN;
    vet v = {allowance, all, 0, 0, 0};
    hsize_t idx = 0;
    if (H5Aiterate2(file, H5_INDEX_NAME, H5_ITER_INC, &idx, vet_attr, &v) < 0)
        vet_failed(&v);
    if (!v.memory && H5Lvisit(file, H5_INDEX_NAME, H5_ITER_INC, vet_link, &v) < 0 && !v.short_)
        vet_failed(&v);
    return v.short_ ? VET_SHORT : v.memory ? VET_MEMORY : v.failed ? VET_UNREADABLE : VET_READ;
}

/* What a supervisor (vet_supervise) tells a caller that cannot wait for its children: the check's wait status
 * and processor seconds. */
typedef struct vet_verdict {
    int status;
    double cpu;
} vet_verdict;

static double cpu_seconds(const struct rusage *ru)
{
    return (double)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) +
           1e-6 * (double)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec);
}

/* The caller's children may be reaped before it reads their status (SIGCHLD ignored, SA_NOCLDWAIT, a host that
 * reaps every child in its own handler): this process (its child) waits for the check as its own child, with
 * SIGCHLD at its default here, and writes the verdict to fd. */
_Noreturn static void vet_supervise(int fd, const char *path, int all, uint64_t allowance, int wall_s, int stall)
{
    signal(SIGCHLD, SIG_DFL); /* and SA_NOCLDWAIT cleared with it */
    vet_verdict v = {0, 0};
    const pid_t pid = fork();
    if (pid == 0)
        _exit(vet_child(path, all, allowance, wall_s, stall));
    struct rusage ru;
    int got = pid > 0 ? 0 : -1;
    while (pid > 0 && (got = (int)wait4(pid, &v.status, 0, &ru)) < 0 && errno == EINTR)
        ;
    if (got < 0)
        _exit(VET_NO_OPEN); /* no verdict written: the caller says the check could not run */
    v.cpu = cpu_seconds(&ru);
    const ssize_t w = write(fd, &v, sizeof v); /* one write under PIPE_BUF: whole or not at all */
    _exit(w == (ssize_t)sizeof v ? 0 : VET_NO_OPEN);
}

void ptq_hdf5_check_main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], VET_ARG) != 0) {
        atomic_store(&vet_spawn, 1);
        return;
    }
    if (argc != 8)
        _exit(VET_NO_OPEN); /* not the library's call: nothing checked, the open that follows says why */
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_h5_register_zstd(&ctx); /* the caller's process had it registered: its compressed data reads the same */
    vet_supervise(atoi(argv[7]), argv[2], atoi(argv[3]), strtoull(argv[4], NULL, 10), atoi(argv[5]), atoi(argv[6]));
}

/* The check of path in a fresh process of this program (ptq_hdf5_check_main), into *pid; -1 when it cannot start
 * (the caller forks instead). The process supervises the check (vet_supervise), writing its verdict to verdict_fd. */
static int vet_spawn_child(const char *path, int all, uint64_t allowance, int wall_s, int stall, int verdict_fd,
                           pid_t *pid)
{
    enum { VERDICT_FD = 3 }; /* where the fresh process finds verdict_fd (dup2 clears its close-on-exec) */
    char a_all[8], a_allowance[32], a_wall[16], a_stall[8], a_fd[8];
    snprintf(a_all, sizeof a_all, "%d", all != 0);
    snprintf(a_allowance, sizeof a_allowance, "%llu", (unsigned long long)allowance);
    snprintf(a_wall, sizeof a_wall, "%d", wall_s);
    snprintf(a_stall, sizeof a_stall, "%d", stall != 0);
    snprintf(a_fd, sizeof a_fd, "%d", VERDICT_FD);
    char *argv[] = {"ptq-hdf5-check", VET_ARG, (char *)path, a_all, a_allowance, a_wall, a_stall,
                    a_fd, NULL};
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa) != 0)
        return -1;
    if (posix_spawn_file_actions_adddup2(&fa, verdict_fd, VERDICT_FD) != 0) {
        posix_spawn_file_actions_destroy(&fa);
        return -1;
    }
    /* no signal blocked, every one at its default: the limits' signals end it, whatever the caller's handlers */
    sigset_t none, every;
    sigemptyset(&none);
    sigfillset(&every);
    sigdelset(&every, SIGKILL);
    sigdelset(&every, SIGSTOP);
    posix_spawnattr_t at;
    if (posix_spawnattr_init(&at) != 0) {
        posix_spawn_file_actions_destroy(&fa);
        return -1;
    }
    int e = posix_spawnattr_setsigmask(&at, &none);
    if (!e)
        e = posix_spawnattr_setsigdefault(&at, &every);
    if (!e)
        e = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    if (!e)
        e = posix_spawn(pid, "/proc/self/exe", &fa, &at, argv, environ);
    posix_spawnattr_destroy(&at);
    posix_spawn_file_actions_destroy(&fa);
    return e ? -1 : 0;
}

/* The check of a fork of the caller. */
typedef struct vet_fork {
    const char *path;
    int all;
    uint64_t allowance;
    int wall_s, stall;
    int verdict_fd; /* the child supervises the check, writing its verdict here (vet_supervise) */
    pid_t pid;      /* out: the child's, or -1 with err */
    int err;
    int forked; /* fork was called */
} vet_fork;

static herr_t fork_here(hid_t plist, const char *name, void *data)
{
    (void)plist, (void)name;
    vet_fork *f = data;
    f->forked = 1;
    f->pid = fork();
    f->err = errno;
    if (f->pid == 0)
        vet_supervise(f->verdict_fd, f->path, f->all, f->allowance, f->wall_s, f->stall);
    return 1;
}

/* Forks the check from inside a libhdf5 call (a property list's iteration callback), holding the library's one
 * lock: no other thread of the caller is then inside libhdf5, so the child does not inherit the lock held by one,
 * and the child's own calls take it again as the thread that holds it (it is recursive). A program that did not
 * call ptq_hdf5_check_main and read another HDF5 file on another thread (two sessions at once) had a sound file
 * refused otherwise ("libhdf5 took more than 120 s"), after 4 minutes. */
static pid_t fork_in_hdf5(vet_fork *f)
{
    ds_h5_quiet q;
    ds_h5_quiet_begin(&q);
    const hid_t plist = H5Pcreate(H5P_FILE_ACCESS);
    int idx = 0;
    if (plist >= 0) {
        (void)H5Piterate(plist, &idx, fork_here, f);
        H5Pclose(plist);
    }
    ds_h5_quiet_end(&q);
    if (!f->forked) /* libhdf5 could not iterate: a plain fork */
        fork_here(-1, NULL, f);
    return f->pid;
}

/* One check of path in a child process (spawned, else forked) under a supervisor: its wait status and processor time
 * into *v, through a pipe. */
static ptq_status vet_run(ptq_ctx *ctx, const char *path, int all, uint64_t allowance, int wall_s, int stall,
                          vet_verdict *v)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return ptq_fail(ctx, PTQ_ERR_IO, "cannot check HDF5 file %s: pipe: %s", path, strerror(errno));
    pid_t pid = -1;
    if (!atomic_load(&vet_spawn) || vet_spawn_child(path, all, allowance, wall_s, stall, fds[1], &pid) != 0) {
        vet_fork f = {path, all, allowance, wall_s, stall, fds[1], -1, 0, 0};
        pid = fork_in_hdf5(&f);
        if (pid < 0) {
            close(fds[0]);
            close(fds[1]);
            return ptq_fail(ctx, PTQ_ERR_IO, "cannot check HDF5 file %s in a child process: %s", path,
                            strerror(f.err));
        }
    }
    close(fds[1]);
    ssize_t got;
    while ((got = read(fds[0], v, sizeof *v)) < 0 && errno == EINTR)
        ;
    const int e = errno;
    close(fds[0]);
    /* the supervisor, unless the kernel or the host's own handler reaped it first (ECHILD) */
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    if (got != (ssize_t)sizeof *v)
        return ptq_fail(ctx, PTQ_ERR_IO, "cannot check HDF5 file %s: its checking process ended without a verdict%s%s",
                        path, got < 0 ? ": " : "", got < 0 ? strerror(e) : "");
    return PTQ_OK;
}

ptq_status ds_h5_vet(ptq_ctx *ctx, const char *path, int all_datasets)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return ptq_fail(ctx, PTQ_ERR_IO, "cannot read %s: %s", path, strerror(errno));
    /* one dataset at a time; its elements take at most the file's bytes unless compressed (then as many
       as the compressed data may grow to), twice that and 512 MiB for libhdf5's own, within --max-memory;
       under VET_FLOOR libhdf5 fails on files of any kind, so a smaller limit is the user's to raise */
    uint64_t allowance = ((uint64_t)512 << 20) + 2 * (uint64_t)sb.st_size;
    const int capped = allowance > ptq_memory_budget();
    if (capped)
        allowance = ptq_memory_budget() > VET_FLOOR ? ptq_memory_budget() : VET_FLOOR;
    /* tests: PTQ_TEST_VET_STALL=N stalls the first N children, under a 2 s alarm */
    const char *stall_env = getenv("PTQ_TEST_VET_STALL");
    const int n_stall = stall_env ? atoi(stall_env) : 0, wall_s = n_stall > 0 ? 2 : VET_WALL_SECONDS;
    int status = 0;
    /* A child the wall-clock alarm ended having used almost no processor time was stuck, not reading: a stalled
     * file system or, for a forked child, a lock another thread of this process held at the fork (see the top of
     * the file). One more child, then the verdict; a walk a malformed file loops in burns processor time and ends
     * by SIGXCPU. */
    for (int attempt = 0;; attempt++) {
        vet_verdict v;
        PTQ_TRY_RET(vet_run(ctx, path, all_datasets, allowance, wall_s, attempt < n_stall, &v));
        status = v.status;
        if (attempt > 0 || !WIFSIGNALED(status) || WTERMSIG(status) != SIGALRM || v.cpu >= 1.0)
            break;
    }
    const int timed_out = WIFSIGNALED(status) && (WTERMSIG(status) == SIGXCPU || WTERMSIG(status) == SIGALRM);
    if (capped && !timed_out && ((WIFEXITED(status) && WEXITSTATUS(status) == VET_MEMORY) || WIFSIGNALED(status))) {
        /* libhdf5 ran out of the room --max-memory left it (it may crash then): the limit, not the file */
        char limit[32];
        return ptq_fail(ctx, PTQ_ERR_NOMEM,
                        "%s: checking this HDF5 file (%lld bytes) needs more memory than the limit of %s "
                        "(--max-memory) leaves; raise --max-memory",
                        path, (long long)sb.st_size, ptq_memory_str((double)ptq_memory_budget(), limit, sizeof limit));
    }
    if (WIFEXITED(status)) {
        switch (WEXITSTATUS(status)) {
        case VET_READ:
        case VET_NO_OPEN:    /* the open that follows says why */
        case VET_UNREADABLE: /* an unreadable part ptq may not need: its own reads say so if it does */
            return PTQ_OK;
        case VET_MEMORY:
            return ptq_fail(ctx, PTQ_ERR_FORMAT,
                            "%s: reading its attributes and data asks libhdf5 for more than %llu MiB, in a "
                            "file of %lld bytes: a malformed HDF5 file, refused",
                            path, (unsigned long long)(allowance >> 20), (long long)sb.st_size);
        case VET_SHORT:
            return ptq_fail(ctx, PTQ_ERR_FORMAT,
                            "%s: a compact dataset in it holds fewer bytes than its shape and type declare: a "
                            "malformed HDF5 file, refused",
                            path);
        case VET_SANITIZER:
            return ptq_fail(ctx, PTQ_ERR_FORMAT,
                            "%s: libhdf5 made an invalid memory access reading its attributes and data: a "
                            "malformed HDF5 file, refused",
                            path);
        default:
            break;
        }
    }
    if (timed_out)
        return ptq_fail(ctx, PTQ_ERR_FORMAT,
                        "%s: libhdf5 took more than %d s%s to read its attributes and data: a malformed HDF5 "
                        "file, refused",
                        path, WTERMSIG(status) == SIGXCPU ? VET_CPU_SECONDS : wall_s,
                        WTERMSIG(status) == SIGXCPU ? " of processor time" : "");
    if (WIFSIGNALED(status))
        return ptq_fail(ctx, PTQ_ERR_FORMAT,
                        "%s: libhdf5 crashed (%s) reading its attributes and data: a malformed HDF5 file, refused",
                        path, strsignal(WTERMSIG(status)));
    return ptq_fail(ctx, PTQ_ERR_FORMAT, "%s: checking it ended with status %d: a malformed HDF5 file, refused", path,
                    WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}
