/* Input files (include/ptq/fileio.h): regular files only, refused by stat
 * before any open (a FIFO would block, a device could rewind or lock) and
 * checked again on the descriptor; and whether two names are one file.
 * Covered by tests/test_fileio.c and tests/cli_hardening_test.py. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ptq/fileio.h"

static const char *kind_of(mode_t m)
{
    if (S_ISDIR(m))
        return "a folder";
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISCHR(m) || S_ISBLK(m))
        return "a device";
    if (S_ISSOCK(m))
        return "a socket";
    return "not a regular file";
}

static ptq_status not_regular(ptq_ctx *ctx, const char *path, mode_t m)
{
    return ptq_fail(ctx, PTQ_ERR_IO, "%s is %s, not a regular file; refusing to read it", path, kind_of(m));
}

ptq_status ptq_file_check_regular(ptq_ctx *ctx, const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return ptq_fail(ctx, PTQ_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    return S_ISREG(sb.st_mode) ? PTQ_OK : not_regular(ctx, path, sb.st_mode);
}

ptq_status ptq_file_check_output(ptq_ctx *ctx, const char *path)
{
    struct stat sb;
    if (lstat(path, &sb) != 0 || S_ISREG(sb.st_mode) || S_ISDIR(sb.st_mode))
        return PTQ_OK; /* a missing folder on the way is the writer's own error */
    const int link = S_ISLNK(sb.st_mode);
    /* a symlink leading nowhere, to a file or to a folder is replaced by the output; one to a device or FIFO
     * (/dev/stdout is one) is refused as the node itself is: the user meant the node */
    if (link && (stat(path, &sb) != 0 || S_ISREG(sb.st_mode) || S_ISDIR(sb.st_mode)))
        return PTQ_OK;
    return ptq_fail(ctx, PTQ_ERR_IO,
                    "cannot write %s: it is %s%s, not a regular file; ptq puts its outputs in place whole (a new file "
                    "renamed onto the name), which would replace it: name a file", path, link ? "a symlink to " : "",
                    kind_of(sb.st_mode));
}

ptq_status ptq_file_open_read(ptq_ctx *ctx, const char *path, int *fd)
{
    struct stat sb;
    *fd = -1;
    PTQ_TRY_RET(ptq_file_check_regular(ctx, path));
    /* O_NONBLOCK: should a FIFO take the file's place after the check, open does not wait for a writer */
    int f = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (f < 0)
        return ptq_fail(ctx, PTQ_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    if (fstat(f, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        ptq_status st = not_regular(ctx, path, sb.st_mode);
        close(f);
        return st;
    }
    int flags = fcntl(f, F_GETFL);
    if (flags >= 0)
        fcntl(f, F_SETFL, flags & ~O_NONBLOCK);
    *fd = f;
    return PTQ_OK;
}

ptq_status ptq_file_fopen_read(ptq_ctx *ctx, const char *path, FILE **f)
{
    int fd;
    *f = NULL;
    PTQ_TRY_RET(ptq_file_open_read(ctx, path, &fd));
    if (!(*f = fdopen(fd, "rb"))) {
        int e = errno;
        close(fd);
        return ptq_fail(ctx, PTQ_ERR_IO, "cannot open %s: %s", path, strerror(e));
    }
    return PTQ_OK;
}

/* realpath of path, malloc'd; a path whose tail does not exist yet (a report folder an output goes into,
 * made later) resolves its longest existing prefix and appends the rest, "." and ".." taken lexically (a
 * component that does not exist is no symlink). NULL when not even the working folder resolves. */
static char *resolve_loose(const char *path)
{
    char *real = realpath(path, NULL);
    if (real || !*path)
        return real;
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    size_t cut = n;
    while (cut > 0 && path[cut - 1] != '/')
        cut--;
    if (cut == n) /* "/" */
        return NULL;
    char *parent = cut == 0 ? strdup(".") : strndup(path, cut > 1 ? cut - 1 : 1);
    char *up = parent ? resolve_loose(parent) : NULL;
    free(parent);
    const char *base = path + cut;
    size_t base_len = n - cut;
    if (!up || (base_len == 1 && base[0] == '.'))
        return up;
    if (base_len == 2 && base[0] == '.' && base[1] == '.') {
        char *slash = strrchr(up, '/');
        if (slash)
            slash[slash == up] = '\0';
        return up;
    }
    char *out = malloc(strlen(up) + base_len + 2);
    if (out)
        sprintf(out, "%s%s%.*s", up, strcmp(up, "/") ? "/" : "", (int)base_len, base);
    free(up);
    return out;
}

/* resolve_loose of path's folder + "/" + its last component, malloc'd; NULL when the folder does not resolve. */
static char *resolve_parent(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    char *dir = slash ? strndup(path, (size_t)(slash - path) + (slash == path)) : strdup(".");
    char *real = dir ? resolve_loose(dir) : NULL;
    char *out = real ? malloc(strlen(real) + strlen(base) + 2) : NULL;
    if (out)
        sprintf(out, "%s/%s", real, base);
    free(dir);
    free(real);
    return out;
}

int ptq_file_same(const char *a, const char *b)
{
    struct stat sa, sb;
    if (!a || !b)
        return 0;
    if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    char *ra = resolve_parent(a), *rb = resolve_parent(b);
    int same = ra && rb && strcmp(ra, rb) == 0;
    free(ra);
    free(rb);
    return same;
}
