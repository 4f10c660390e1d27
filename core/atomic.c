/* Whole-or-nothing outputs (include/ptq/fileio.h): every writer of ptq goes
 * through here. A temporary "<dest>.tmp-<128 random bits in hex>" is made
 * next to the destination with O_CREAT|O_EXCL|O_NOFOLLOW (so neither a
 * planted symlink nor another process's file is ever followed or
 * clobbered, and names are unique across hosts sharing a filesystem),
 * renamed onto it when complete and removed on failure. Pending names sit
 * in a fixed registry that the handler of the terminating signals (INT,
 * TERM, HUP, QUIT, PIPE, USR1, ALRM) walks with async-signal-safe calls
 * only; SIGXFSZ is ignored, so a write past ulimit -f fails as any other.
 * Covered by tests/test_fileio.c and tests/cli_hardening_test.py. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ptq/fileio.h"

enum { N_SLOTS = 32, RANDOM_BYTES = 16, DENTS_BYTES = 4096, SLOT_EMPTY_DIR = 2 };
enum { TMP_SUFFIX_BYTES = 5 + 2 * RANDOM_BYTES }; /* ".tmp-" and the hex digits */

/* The signals whose default action ends the process and that a user or the
 * system sends to stop a command (Ctrl-C, kill, a closed terminal or ssh
 * session, Ctrl-\, a reader of stdout gone, timers): each removes the
 * pending temporaries first. */
static const int g_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR1, SIGALRM};
enum { N_SIGNALS = sizeof g_signals / sizeof g_signals[0] };

/* A pending temporary. used is set last and cleared first, so the handler
 * only ever reads a complete name. */
typedef struct tmp_slot {
    volatile sig_atomic_t used;
    int is_dir; /* 0: a file; 1: a folder, removed with what it holds; SLOT_EMPTY_DIR: removed only if empty */
    char name[PTQ_TMP_NAME_BYTES];
} tmp_slot;

static tmp_slot g_slots[N_SLOTS];
static pthread_mutex_t g_slots_mu = PTHREAD_MUTEX_INITIALIZER;

/* A signal's handler must not remove the temporaries of a set ptq_atomic_commit_all is renaming (some names taken,
 * the rest not: a half-committed set): while it renames, a handler in another thread (the renaming thread blocks
 * the signals) records the signal and returns; ptq_atomic_commit_all raises it once the set is whole again. */
enum { COMMIT_IDLE = 0, COMMIT_RENAMING = 1, COMMIT_DYING = 2 };
static atomic_int g_commit_state;
static volatile sig_atomic_t g_deferred_signal;

/* The kernel's getdents64 record (glibc wraps it only from 2.30). */
typedef struct dent64 {
    uint64_t ino;
    int64_t off;
    unsigned short reclen;
    unsigned char type;
    char name[];
} dent64;

/* Removes name under dirfd: a file, or a folder with at most depth levels
 * below it. Async-signal-safe (openat, getdents64, unlinkat, close). */
static void remove_at(int dirfd, const char *name, int depth)
{
    if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
        return;
    int fd = depth > 0 ? openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
    if (fd >= 0) {
        char buf[DENTS_BYTES] __attribute__((aligned(8)));
        for (int removed = 1; removed;) { /* entries removed while listing may hide others: list again */
            removed = 0;
            lseek(fd, 0, SEEK_SET);
            for (long n; (n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0;)
                for (long off = 0; off < n;) {
                    const dent64 *d = (const dent64 *)(buf + off);
                    off += d->reclen;
                    if (strcmp(d->name, ".") != 0 && strcmp(d->name, "..") != 0) {
                        remove_at(fd, d->name, depth - 1);
                        removed = 1;
                    }
                }
        }
        close(fd);
    }
    unlinkat(dirfd, name, AT_REMOVEDIR);
}

static void slot_remove(const tmp_slot *s)
{
    if (s->is_dir == SLOT_EMPTY_DIR)
        rmdir(s->name);
    else if (s->is_dir)
        remove_at(AT_FDCWD, s->name, 2);
    else
        unlink(s->name);
}

/* Registers name; 0, or -1 when every slot holds a temporary that still exists. */
static int register_tmp(const char *name, int is_dir)
{
    int got = -1;
    pthread_mutex_lock(&g_slots_mu);
    for (int pass = 0; pass < 2 && got < 0; pass++)
        for (int i = 0; i < N_SLOTS && got < 0; i++) {
            struct stat sb;
            /* second pass: a slot whose file is gone (removed by a caller without discard) is free again */
            if (!g_slots[i].used || (pass == 1 && lstat(g_slots[i].name, &sb) != 0)) {
                g_slots[i].used = 0;
                g_slots[i].is_dir = is_dir;
                snprintf(g_slots[i].name, sizeof g_slots[i].name, "%s", name);
                __atomic_store_n(&g_slots[i].used, 1, __ATOMIC_SEQ_CST);
                got = i;
            }
        }
    pthread_mutex_unlock(&g_slots_mu);
    return got < 0 ? -1 : 0;
}

static void forget_tmp(const char *name)
{
    pthread_mutex_lock(&g_slots_mu);
    for (int i = 0; i < N_SLOTS; i++)
        if (g_slots[i].used && strcmp(g_slots[i].name, name) == 0)
            __atomic_store_n(&g_slots[i].used, 0, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&g_slots_mu);
}

static int random_bytes(unsigned char *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t k = getrandom(buf + got, n - got, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    if (got == n)
        return 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t k = read(fd, buf, n);
    close(fd);
    return k == (ssize_t)n ? 0 : -1;
}

/* Bytes of path to keep before ".tmp-<32 hex>": all of it, or, when its
 * last component is too long to take the suffix within NAME_MAX, that
 * component cut (before a UTF-8 continuation byte) so the name fits; the
 * random part alone keeps it unique, and the folder stays the same. */
static size_t tmp_stem_bytes(const char *path)
{
    const char *slash = strrchr(path, '/'), *last = slash ? slash + 1 : path;
    size_t keep = strlen(last);
    if (keep + TMP_SUFFIX_BYTES > NAME_MAX) {
        keep = NAME_MAX - TMP_SUFFIX_BYTES;
        while (keep > 0 && ((unsigned char)last[keep] & 0xC0) == 0x80)
            keep--;
    }
    return (size_t)(last - path) + keep;
}

/* "<path>.tmp-<32 hex>" into tmp[n_tmp], path's last component cut to fit
 * NAME_MAX (tmp_stem_bytes). */
static ptq_status tmp_name(ptq_ctx *ctx, const char *path, char *tmp, size_t n_tmp)
{
    unsigned char r[RANDOM_BYTES];
    tmp[0] = '\0';
    if (!path || !*path)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "no output path given");
    const size_t stem = tmp_stem_bytes(path);
    if (stem + TMP_SUFFIX_BYTES >= n_tmp)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "output path %.200s... is too long", path);
    if (random_bytes(r, sizeof r) != 0)
        return ptq_fail(ctx, PTQ_ERR_IO, "cannot write %s: no random bytes for a temporary name", path);
    size_t k = (size_t)snprintf(tmp, n_tmp, "%.*s.tmp-", (int)stem, path);
    for (int i = 0; i < RANDOM_BYTES; i++, k += 2)
        snprintf(tmp + k, n_tmp - k, "%02x", r[i]);
    return PTQ_OK;
}

/* Makes the temporary next to path: a file (an O_WRONLY descriptor into *fd)
 * or a folder (*fd = 0); a name already taken, by chance or planted, is never
 * used, and another is drawn. */
static ptq_status make_tmp(ptq_ctx *ctx, const char *path, char *tmp, size_t n_tmp, int is_dir, int *fd)
{
    tmp[0] = '\0';
    PTQ_TRY_RET(ptq_file_check_output(ctx, path));
    for (int attempt = 0;; attempt++) {
        PTQ_TRY_RET(tmp_name(ctx, path, tmp, n_tmp));
        /* modes 0666 and 0777: the umask applies, as with fopen; neither call follows a symlink at the name */
        int f = is_dir ? mkdir(tmp, 0777)
                       : open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0666);
        if (f >= 0) {
            register_tmp(tmp, is_dir);
            *fd = f;
            return PTQ_OK;
        }
        int e = errno;
        tmp[0] = '\0';
        if (e != EEXIST || attempt >= 3)
            return ptq_fail(ctx, PTQ_ERR_IO, "cannot write %s: %s", path, strerror(e));
    }
}

ptq_status ptq_atomic_create(ptq_ctx *ctx, const char *path, char *tmp, size_t n_tmp, int *fd)
{
    int f;
    if (fd)
        *fd = -1;
    PTQ_TRY_RET(make_tmp(ctx, path, tmp, n_tmp, 0, &f));
    if (fd)
        *fd = f;
    else
        close(f);
    return PTQ_OK;
}

static ssize_t cookie_write(void *cookie, const char *buf, size_t n)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    if (ptq_file_write_all(&ctx, (int)(intptr_t)cookie, buf, n, "") == PTQ_OK)
        return (ssize_t)n;
    return -1; /* errno: the reason, for the caller's message */
}

static int cookie_close(void *cookie)
{
    return close((int)(intptr_t)cookie);
}

ptq_status ptq_atomic_fopen(ptq_ctx *ctx, const char *path, char *tmp, size_t n_tmp, FILE **f)
{
    int fd;
    *f = NULL;
    PTQ_TRY_RET(ptq_atomic_create(ctx, path, tmp, n_tmp, &fd));
    /* writes go through ptq_file_write_all, as every other output's */
    cookie_io_functions_t io = {NULL, cookie_write, NULL, cookie_close};
    if (!(*f = fopencookie((void *)(intptr_t)fd, "wb", io))) {
        int e = errno;
        close(fd);
        ptq_atomic_discard(tmp);
        return ptq_fail(ctx, PTQ_ERR_IO, "cannot write %s: %s", path, strerror(e));
    }
    return PTQ_OK;
}

ptq_status ptq_atomic_mkdir(ptq_ctx *ctx, const char *path, char *tmp, size_t n_tmp)
{
    int unused;
    return make_tmp(ctx, path, tmp, n_tmp, 1, &unused);
}

/* rename(tmp, path), or with keep_existing never over anything at path (EEXIST): RENAME_NOREPLACE, checked by
 * lstat first where the file system takes no such flag (EINVAL). */
static int rename_onto(const char *tmp, const char *path, int keep_existing)
{
    struct stat sb;
    if (!keep_existing)
        return rename(tmp, path);
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL)
        return -1;
    if (lstat(path, &sb) == 0) {
        errno = EEXIST;
        return -1;
    }
    return rename(tmp, path);
}

static ptq_status commit(ptq_ctx *ctx, char *tmp, const char *path, int keep_existing)
{
    struct stat sb;
    /* writers that reopen by name (HDF5) could be handed something else put in its place: only ours is renamed */
    if (lstat(tmp, &sb) != 0 || !(S_ISREG(sb.st_mode) || S_ISDIR(sb.st_mode))) {
        ptq_atomic_discard(tmp);
        return ptq_fail(ctx, PTQ_ERR_IO, "cannot write %s: its temporary file was replaced or removed", path);
    }
    /* on disk before it takes the name, so a crash leaves the old file or the new one; a write the disk could not
     * store (EIO, or ENOSPC/EDQUOT where space is found only then: NFS, thin volumes) shows here, not in write() */
    if (S_ISREG(sb.st_mode)) {
        int fd = open(tmp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        int e = fd >= 0 && fsync(fd) != 0 ? errno : 0;
        if (fd >= 0)
            close(fd);
        if (e == EIO || e == ENOSPC || e == EDQUOT) { /* not EINVAL: a file system that keeps no data to sync */
            ptq_atomic_discard(tmp);
            return ptq_fail(ctx, PTQ_ERR_IO, "cannot write %s: %s", path, strerror(e));
        }
    }
    ptq_status st = ptq_file_check_output(ctx, path); /* again: a device put there while it was written */
    if (st != PTQ_OK) {
        ptq_atomic_discard(tmp);
        return st;
    }
    const char *fail = getenv("PTQ_TEST_FAIL_RENAME"), *base = strrchr(path, '/');
    if ((fail && *fail && strcmp(fail, base ? base + 1 : path) == 0 && (errno = EIO)) ||
        rename_onto(tmp, path, keep_existing) != 0) {
        int e = errno;
        ptq_atomic_discard(tmp);
        if (e == EEXIST && keep_existing)
            return ptq_fail(ctx, PTQ_ERR_IO, "%s already exists; not overwriting it", path);
        return ptq_fail(ctx, PTQ_ERR_IO, "cannot write %s: %s", path, strerror(e));
    }
    forget_tmp(tmp);
    tmp[0] = '\0';
    return PTQ_OK;
}

ptq_status ptq_atomic_commit(ptq_ctx *ctx, char *tmp, const char *path)
{
    return commit(ctx, tmp, path, 0);
}

ptq_status ptq_atomic_commit_new(ptq_ctx *ctx, char *tmp, const char *path)
{
    return commit(ctx, tmp, path, 1);
}

/* A registered temporary name next to path holding a hard link to the file there, into old[PTQ_TMP_NAME_BYTES];
 * old[0] = '\0' when there is none (nothing there, or no hard links on that file system). */
static void keep_old(const char *path, char *old)
{
    struct stat sb;
    old[0] = '\0';
    if (lstat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
        return;
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    if (ptq_atomic_create(&ctx, path, old, PTQ_TMP_NAME_BYTES, NULL) != PTQ_OK)
        return;
    if (unlink(old) != 0 || link(path, old) != 0)
        ptq_atomic_discard(old);
}

ptq_status ptq_atomic_commit_all(ptq_ctx *ctx, char *const *tmp, const char *const *paths, int n)
{
    ptq_status st = PTQ_OK;
    char(*old)[PTQ_TMP_NAME_BYTES] = calloc((size_t)n + 1, sizeof *old);
    if (!old)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory writing %s", n ? paths[0] : "the outputs");
    sigset_t signals, saved;
    sigemptyset(&signals);
    for (int k = 0; k < N_SIGNALS; k++)
        sigaddset(&signals, g_signals[k]);
    pthread_sigmask(SIG_BLOCK, &signals, &saved);
    /* one set at a time; a handler already cleaning up (COMMIT_DYING) ends the process while this waits */
    for (int idle = COMMIT_IDLE; !atomic_compare_exchange_weak(&g_commit_state, &idle, COMMIT_RENAMING);
         idle = COMMIT_IDLE)
        sched_yield();
    for (int i = 0; i < n && n > 1; i++)
        keep_old(paths[i], old[i]);
    for (int i = 0; i < n && st == PTQ_OK; i++) {
        st = ptq_atomic_commit(ctx, tmp[i], paths[i]);
        for (int j = 0; st != PTQ_OK && j < i; j++)
            if (!old[j][0] || rename(old[j], paths[j]) != 0)
                remove(paths[j]);
    }
    atomic_store(&g_commit_state, COMMIT_IDLE);
    for (int i = 0; i < n; i++) {
        ptq_atomic_discard(tmp[i]);
        ptq_atomic_discard(old[i]);
    }
    free(old);
    const int deferred = g_deferred_signal;
    g_deferred_signal = 0;
    pthread_sigmask(SIG_SETMASK, &saved, NULL); /* a signal sent to this thread meanwhile is handled here */
    if (deferred)
        raise(deferred);
    return st;
}

void ptq_atomic_discard(char *tmp)
{
    if (!tmp || !tmp[0])
        return;
    tmp_slot s = {0, 0, ""};
    snprintf(s.name, sizeof s.name, "%s", tmp);
    s.is_dir = 1; /* removes a file as well */
    forget_tmp(tmp);
    slot_remove(&s);
    tmp[0] = '\0';
}

void ptq_atomic_blame_output(ptq_ctx *ctx, const char *tmp, const char *path)
{
    if (!ctx || !tmp || !tmp[0] || !path || !strstr(ctx->msg, tmp))
        return;
    char msg[PTQ_MSG_BYTES] = "";
    const size_t n_tmp = strlen(tmp);
    size_t used = 0;
    for (const char *at = ctx->msg; *at && used + 1 < sizeof msg;) {
        const char *hit = strstr(at, tmp);
        const size_t n_before = hit ? (size_t)(hit - at) : strlen(at);
        used += (size_t)snprintf(msg + used, sizeof msg - used, "%.*s%s", (int)n_before, at, hit ? path : "");
        if (!hit)
            break;
        at = hit + n_tmp;
    }
    snprintf(ctx->msg, sizeof ctx->msg, "%s", msg);
}

void ptq_atomic_track_dir(const char *path)
{
    if (path && path[0] && strlen(path) < PTQ_TMP_NAME_BYTES)
        (void)register_tmp(path, SLOT_EMPTY_DIR); /* all slots taken: an empty folder may stay on a signal */
}

void ptq_atomic_forget_dir(const char *path)
{
    if (path && path[0])
        forget_tmp(path);
}

/* Bytes written through ptq_file_write_all, for PTQ_TEST_FAIL_WRITE_AFTER. */
static _Atomic unsigned long long written_bytes;

ptq_status ptq_file_write_all(ptq_ctx *ctx, int fd, const void *data, size_t n_bytes, const char *path)
{
    const char *fail_after = getenv("PTQ_TEST_FAIL_WRITE_AFTER");
    unsigned long long limit = fail_after && *fail_after ? strtoull(fail_after, NULL, 10) : ULLONG_MAX;
    for (size_t done = 0; done < n_bytes;) {
        size_t n = n_bytes - done;
        unsigned long long before = atomic_load(&written_bytes);
        if (before >= limit) {
            ptq_fail(ctx, PTQ_ERR_IO, "cannot write %s: %s", path, strerror(ENOSPC));
            errno = ENOSPC;
            return PTQ_ERR_IO;
        }
        if (n > limit - before)
            n = (size_t)(limit - before);
        ssize_t w = write(fd, (const char *)data + done, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            const int e = w < 0 ? errno : EIO;
            ptq_fail(ctx, PTQ_ERR_IO, "cannot write %s: %s", path, strerror(e));
            errno = e; /* for stdio writers (ptq_atomic_fopen) */
            return PTQ_ERR_IO;
        }
        atomic_fetch_add(&written_bytes, (unsigned long long)w);
        done += (size_t)w;
    }
    return PTQ_OK;
}

ptq_status ptq_atomic_write(ptq_ctx *ctx, const char *path, const void *data, size_t n_bytes)
{
    char tmp[PTQ_TMP_NAME_BYTES];
    int fd;
    PTQ_TRY_RET(ptq_atomic_create(ctx, path, tmp, sizeof tmp, &fd));
    ptq_status st = ptq_file_write_all(ctx, fd, data, n_bytes, path);
    if (st != PTQ_OK) {
        close(fd);
        ptq_atomic_discard(tmp);
        return st;
    }
    if (close(fd) != 0) {
        int e = errno;
        ptq_atomic_discard(tmp);
        return ptq_fail(ctx, PTQ_ERR_IO, "cannot write %s: %s", path, strerror(e));
    }
    return ptq_atomic_commit(ctx, tmp, path);
}

static void on_signal(int sig)
{
    int saved = errno, idle = COMMIT_IDLE;
    if (!atomic_compare_exchange_strong(&g_commit_state, &idle, COMMIT_DYING) && idle == COMMIT_RENAMING) {
        g_deferred_signal = sig; /* ptq_atomic_commit_all raises it when the set is whole */
        return;
    }
    for (int pass = 0; pass < 2; pass++) /* the temporaries first, then the folders they may have been in */
        for (int i = 0; i < N_SLOTS; i++)
            if (g_slots[i].used && (g_slots[i].is_dir == SLOT_EMPTY_DIR) == pass)
                slot_remove(&g_slots[i]);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    errno = saved;
    raise(sig); /* pending until the handler returns, then the default action ends the process */
}

void ptq_atomic_cleanup_on_signals(void)
{
    /* past the file size limit (ulimit -f) a write fails with EFBIG, which its writer reports and cleans up after,
     * instead of SIGXFSZ ending the process (and dumping core) with the temporary left behind */
    struct sigaction ign;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGXFSZ, &ign, NULL);
    for (int i = 0; i < N_SIGNALS; i++) {
        struct sigaction old, sa;
        if (sigaction(g_signals[i], NULL, &old) != 0 || old.sa_handler == SIG_IGN)
            continue; /* started with the signal ignored (nohup, background): keep it so */
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask); /* one handler at a time */
        for (int k = 0; k < N_SIGNALS; k++)
            sigaddset(&sa.sa_mask, g_signals[k]);
        sigaction(g_signals[i], &sa, NULL);
    }
}
