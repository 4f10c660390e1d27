/* A report's files written together (validate.json, validate.md,
 * report.html and the PNG heatmaps; sens.json, sens.md and sens.html):
 * every file goes to a temporary next to its name first, and only when all
 * of them are complete are they renamed, so a failure (a full disk, an
 * unwritable folder) leaves the files that were there before and nothing
 * half-written. If a rename fails, the files already renamed are put back
 * as they were (ptq_atomic_commit_all). The report folder is made, or checked,
 * before any work.
 * Covered by tests/cli_html_test.py. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "ptq/html_report.h"

ptq_status cli_report_dir(ptq_ctx *ctx, const char *dir, int *made)
{
    struct stat sb;
    *made = 0;
    if (mkdir(dir, 0777) == 0) {
        *made = 1;
        ptq_atomic_track_dir(dir); /* a signal before the report is in removes it again */
    } else if (errno != EEXIST)
        return ptq_fail(ctx, PTQ_ERR_IO, "cannot create the report folder %s: %s", dir, strerror(errno));
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return ptq_fail(ctx, PTQ_ERR_IO, "the report folder %s is not a folder", dir);
    if (access(dir, W_OK | X_OK) != 0)
        return ptq_fail(ctx, PTQ_ERR_IO, "cannot write into the report folder %s: %s", dir, strerror(errno));
    return PTQ_OK;
}

ptq_status cli_output_dir_check(ptq_ctx *ctx, const char *path)
{
    char dir[PTQ_TMP_NAME_BYTES];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return ptq_fail(ctx, PTQ_ERR_IO, "cannot write %s: its folder %s %s", path, dir,
                        stat(dir, &sb) != 0 ? "does not exist" : "is not a folder");
    if (access(dir, W_OK | X_OK) != 0)
        return ptq_fail(ctx, PTQ_ERR_IO, "cannot write %s: folder %s: %s", path, dir, strerror(errno));
    return PTQ_OK;
}

int cli_output_dir_ok(const char *cmd, const char *path)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    return cli_report(cmd, &ctx, cli_output_dir_check(&ctx, path));
}

ptq_status cli_write_files(ptq_ctx *ctx, const cli_out_file *f, int n)
{
    return cli_write_files_with(ctx, f, n, NULL, NULL, 0);
}

ptq_status cli_write_files_with(ptq_ctx *ctx, const cli_out_file *f, int n, char *const *done_tmp,
                                const char *const *done_paths, int n_done)
{
    ptq_status st = PTQ_OK;
    char(*tmp)[PTQ_TMP_NAME_BYTES] = calloc((size_t)n + 1, sizeof *tmp);
    if (!tmp)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory writing %s", n ? f[0].path : "a report");
    for (int i = 0; i < n && st == PTQ_OK; i++) {
        int fd = -1;
        st = ptq_atomic_create(ctx, f[i].path, tmp[i], sizeof tmp[i], &fd);
        if (st == PTQ_OK)
            st = ptq_file_write_all(ctx, fd, f[i].data, f[i].n_bytes, f[i].path);
        if (st == PTQ_OK && f[i].newline)
            st = ptq_file_write_all(ctx, fd, "\n", 1, f[i].path);
        if (fd >= 0 && close(fd) != 0 && st == PTQ_OK)
            st = ptq_fail(ctx, PTQ_ERR_IO, "cannot write %s: %s", f[i].path, strerror(errno));
    }
    char **tmps = calloc((size_t)(n + n_done) + 1, sizeof *tmps);
    const char **paths = calloc((size_t)(n + n_done) + 1, sizeof *paths);
    if (st == PTQ_OK && (!tmps || !paths))
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory writing %s", n ? f[0].path : "a report");
    if (st == PTQ_OK) { /* all complete: rename them */
        for (int i = 0; i < n; i++)
            tmps[i] = tmp[i], paths[i] = f[i].path;
        for (int i = 0; i < n_done; i++)
            tmps[n + i] = done_tmp[i], paths[n + i] = done_paths[i];
        st = ptq_atomic_commit_all(ctx, tmps, paths, n + n_done);
    }
    for (int i = 0; i < n; i++) /* else none */
        ptq_atomic_discard(tmp[i]);
    free(tmps);
    free(paths);
    free(tmp);
    return st;
}

const char *const cli_report_names[CLI_REPORT_FILES] = {"validate.json",      "validate.md",         "report.html",
                                                        "confusion-fp32.png", "confusion-quant.png", "confusion-delta.png"};

int cli_report_n_files(int64_t n_classes)
{
    return n_classes <= PTQ_HTML_MAX_CLASSES ? CLI_REPORT_FILES : 3;
}
