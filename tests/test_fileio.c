/* core/fileio.c and core/atomic.c: regular-file checks (a FIFO refused
 * without blocking), same-file detection, and whole-or-nothing writes
 * (random exclusive temporaries, umask, commit, discard of a folder tree,
 * a temporary name that fits NAME_MAX beside a 250-byte output name, a
 * message naming the output, not its temporary).
 * Run: build/tests/test_fileio. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ptq/fileio.h"
#include "testlib.h"

static int count_tmp(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "ls -a %s | grep -c '\\.tmp-' || true", dir);
    FILE *p = popen(cmd, "r");
    int n = -1;
    if (p) {
        if (fscanf(p, "%d", &n) != 1)
            n = -1;
        pclose(p);
    }
    return n;
}

int main(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    char dir[] = "/tmp/ptq-test-fileio-XXXXXX", path[256], other[256], fifo[256], tmp[PTQ_TMP_NAME_BYTES];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/out.txt", dir);
    snprintf(other, sizeof other, "%s/./out.txt", dir);
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);

    /* whole-or-nothing write, umask respected */
    mode_t old = umask(027);
    CHECK_MSG(ptq_atomic_write(&ctx, path, "hello", 5) == PTQ_OK, "%s", ctx.msg);
    umask(old);
    struct stat sb;
    CHECK(stat(path, &sb) == 0 && sb.st_size == 5 && (sb.st_mode & 0777) == 0640);
    CHECK(count_tmp(dir) == 0);

    /* two temporaries for one path: different random names, neither the pid */
    char tmp2[PTQ_TMP_NAME_BYTES], pid[32];
    int fd = -1;
    snprintf(pid, sizeof pid, "%ld", (long)getpid());
    CHECK(ptq_atomic_create(&ctx, path, tmp, sizeof tmp, &fd) == PTQ_OK && fd >= 0);
    CHECK(ptq_atomic_create(&ctx, path, tmp2, sizeof tmp2, NULL) == PTQ_OK);
    CHECK(strcmp(tmp, tmp2) != 0 && strlen(tmp) == strlen(path) + 5 + 32 && !strstr(tmp + strlen(path), pid));
    CHECK(write(fd, "world!", 6) == 6 && close(fd) == 0);
    CHECK(ptq_atomic_commit(&ctx, tmp, path) == PTQ_OK && tmp[0] == '\0');
    CHECK(stat(path, &sb) == 0 && sb.st_size == 6);
    ptq_atomic_discard(tmp2);
    CHECK(tmp2[0] == '\0' && count_tmp(dir) == 0);

    /* a temporary swapped for a symlink (between a writer's reopen by name and the commit) is not renamed */
    char swapped[300];
    snprintf(swapped, sizeof swapped, "%s/swapped.txt", dir);
    CHECK(ptq_atomic_create(&ctx, swapped, tmp, sizeof tmp, NULL) == PTQ_OK);
    CHECK(unlink(tmp) == 0 && symlink(path, tmp) == 0);
    CHECK(ptq_atomic_commit(&ctx, tmp, swapped) == PTQ_ERR_IO && strstr(ctx.msg, "replaced"));
    CHECK(lstat(swapped, &sb) != 0 && stat(path, &sb) == 0 && sb.st_size == 6 && count_tmp(dir) == 0);

    /* a temporary folder tree is discarded whole */
    CHECK(ptq_atomic_mkdir(&ctx, path, tmp, sizeof tmp) == PTQ_OK);
    char sub[PTQ_TMP_NAME_BYTES + 32];
    snprintf(sub, sizeof sub, "%s/cls", tmp);
    CHECK(mkdir(sub, 0777) == 0);
    char tmp_keep[304]; /* this test's temporary names are short */
    snprintf(tmp_keep, sizeof tmp_keep, "%.300s", tmp);
    snprintf(sub, sizeof sub, "%s/cls/x.png", tmp);
    FILE *f = fopen(sub, "w");
    CHECK(f != NULL);
    if (f)
        fclose(f);
    ptq_atomic_discard(tmp);
    CHECK(count_tmp(dir) == 0);

    /* a message naming a temporary (and a file in a temporary folder) names the output instead; cut to fit */
    char want[PTQ_MSG_BYTES];
    snprintf(ctx.msg, sizeof ctx.msg, "cannot write %s/cls/x.png: full; %s again", tmp_keep, tmp_keep);
    ptq_atomic_blame_output(&ctx, tmp_keep, path);
    snprintf(want, sizeof want, "cannot write %s/cls/x.png: full; %s again", path, path);
    CHECK_MSG(strcmp(ctx.msg, want) == 0, "%s", ctx.msg);
    ptq_atomic_blame_output(&ctx, "", path); /* no temporary: unchanged */
    CHECK_MSG(strcmp(ctx.msg, want) == 0, "%s", ctx.msg);
    char huge[2 * PTQ_MSG_BYTES];
    memset(huge, 'p', sizeof huge - 1);
    huge[sizeof huge - 1] = '\0';
    snprintf(ctx.msg, sizeof ctx.msg, "%s %s", tmp_keep, tmp_keep);
    ptq_atomic_blame_output(&ctx, tmp_keep, huge);
    CHECK(strlen(ctx.msg) == PTQ_MSG_BYTES - 1 && strspn(ctx.msg, "p") == PTQ_MSG_BYTES - 1);

    /* a legal name too long for ".tmp-<32 hex>" on top (219 to 255 bytes): the temporary cuts its stem to fit
     * NAME_MAX, stays in the same folder, unique, and the output takes the whole name */
    char long_name[512], long_path[600];
    memset(long_name, 'a', 247);
    memcpy(long_name + 247, ".h5", 4); /* 250 bytes */
    snprintf(long_path, sizeof long_path, "%s/%s", dir, long_name);
    CHECK_MSG(ptq_atomic_create(&ctx, long_path, tmp, sizeof tmp, &fd) == PTQ_OK, "%s", ctx.msg);
    CHECK_MSG(ptq_atomic_create(&ctx, long_path, tmp2, sizeof tmp2, NULL) == PTQ_OK, "%s", ctx.msg);
    const char *tmp_last = strrchr(tmp, '/') ? strrchr(tmp, '/') + 1 : tmp;
    CHECK(strlen(tmp_last) == 255 && strncmp(tmp, long_path, strlen(dir) + 1 + 218) == 0 &&
          strncmp(tmp_last + 218, ".tmp-", 5) == 0 && strcmp(tmp, tmp2) != 0);
    ptq_atomic_discard(tmp2);
    CHECK(fd >= 0 && write(fd, "long", 4) == 4 && close(fd) == 0);
    CHECK_MSG(ptq_atomic_commit(&ctx, tmp, long_path) == PTQ_OK, "%s", ctx.msg);
    CHECK(stat(long_path, &sb) == 0 && sb.st_size == 4 && count_tmp(dir) == 0);
    CHECK_MSG(ptq_atomic_write(&ctx, long_path, "longer", 6) == PTQ_OK, "%s", ctx.msg);
    CHECK(stat(long_path, &sb) == 0 && sb.st_size == 6 && count_tmp(dir) == 0);
    unlink(long_path);
    /* the cut falls between UTF-8 characters: 'a' then 'é' (2 bytes) from byte 217 puts byte 218 inside one */
    for (int i = 217; i + 1 < 247; i += 2)
        memcpy(long_name + i, "\xc3\xa9", 2);
    snprintf(long_path, sizeof long_path, "%s/%s", dir, long_name);
    CHECK_MSG(ptq_atomic_create(&ctx, long_path, tmp, sizeof tmp, NULL) == PTQ_OK, "%s", ctx.msg);
    tmp_last = strrchr(tmp, '/') ? strrchr(tmp, '/') + 1 : tmp;
    CHECK(strlen(tmp_last) == 254 && strncmp(tmp_last + 217, ".tmp-", 5) == 0);
    ptq_atomic_discard(tmp);
    CHECK(count_tmp(dir) == 0);

    /* a failed commit leaves nothing */
    char missing[300];
    snprintf(missing, sizeof missing, "%s/no/such/folder/out", dir);
    CHECK(ptq_atomic_write(&ctx, missing, "x", 1) == PTQ_ERR_IO);

    /* inputs: regular files only, a FIFO refused without blocking */
    CHECK(mkfifo(fifo, 0600) == 0);
    CHECK(ptq_file_check_regular(&ctx, fifo) == PTQ_ERR_IO && strstr(ctx.msg, "FIFO"));
    CHECK(ptq_file_open_read(&ctx, fifo, &fd) == PTQ_ERR_IO && fd == -1);
    CHECK(ptq_file_check_regular(&ctx, dir) == PTQ_ERR_IO && strstr(ctx.msg, "folder"));
    CHECK(ptq_file_open_read(&ctx, path, &fd) == PTQ_OK && fd >= 0);
    if (fd >= 0)
        close(fd);

    /* the same file under two spellings, and an output not yet written */
    char later1[300], later2[300];
    snprintf(later1, sizeof later1, "%s/later", dir);
    snprintf(later2, sizeof later2, "%s/../%s/later", dir, strrchr(dir, '/') + 1);
    CHECK(ptq_file_same(path, other) == 1);
    CHECK(ptq_file_same(later1, later2) == 1);
    CHECK(ptq_file_same(path, later1) == 0);
    CHECK(ptq_file_same(path, fifo) == 0);
    /* in a folder not made yet (validate --report NEW with --logits NEW/validate.json) */
    char new1[300], new2[300], new3[300], new4[300];
    snprintf(new1, sizeof new1, "%s/new/sub/validate.json", dir);
    snprintf(new2, sizeof new2, "%s//new/./sub//validate.json", dir);
    snprintf(new3, sizeof new3, "%s/new/gone/../sub/validate.json", dir);
    snprintf(new4, sizeof new4, "%s/new/other/validate.json", dir);
    CHECK(ptq_file_same(new1, new2) == 1);
    CHECK(ptq_file_same(new1, new3) == 1);
    CHECK(ptq_file_same(new1, new4) == 0);
    CHECK(ptq_file_same(new1, later1) == 0);

    unlink(fifo);
    unlink(path);
    rmdir(dir);
    return test_done("test_fileio");
}
