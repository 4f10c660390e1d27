/* Files in and out. Inputs must be regular files: a FIFO, device or socket
 * is refused before it is opened, so nothing blocks or has side effects.
 * Outputs appear whole or not at all: written under an unpredictable
 * temporary name next to the destination (O_CREAT|O_EXCL|O_NOFOLLOW, mode
 * 0666 & ~umask), renamed onto it when complete, removed on failure and, once
 * the command installed the handler, on a signal that stops it (INT, TERM,
 * HUP, QUIT, PIPE, USR1, ALRM). core/fileio.c,
 * core/atomic.c; covered by tests/test_fileio.c and tests/cli_hardening_test.py. */
#ifndef PTQ_FILEIO_H
#define PTQ_FILEIO_H

#include "ptq/export_api.h"

#include <stddef.h>
#include <stdio.h>

#include "ptq/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* PTQ_OK when path (symlinks followed) is a regular file; PTQ_ERR_IO naming
 * path and what it is (missing, a folder, a FIFO, a device, a socket). */
PTQ_API ptq_status ptq_file_check_regular(ptq_ctx *ctx, const char *path);
/* PTQ_OK when an output may take the name path: nothing is there, or a
 * regular file, a folder or a symlink leading nowhere, to a file or to a
 * folder (whose link, not its target, the output replaces). A FIFO, a
 * device or a socket, or a symlink to one (/dev/stdout), is PTQ_ERR_IO
 * naming it: outputs are renamed into place, which would replace /dev/null
 * itself.
 * The ptq_atomic_* writers check it before the temporary is made and again
 * before the rename; commands call it to refuse before any work. */
PTQ_API ptq_status ptq_file_check_output(ptq_ctx *ctx, const char *path);
/* Opens a regular file for reading (refused as above, checked again on the
 * open descriptor); *fd is -1 on failure. */
PTQ_API ptq_status ptq_file_open_read(ptq_ctx *ctx, const char *path, int *fd);
PTQ_API ptq_status ptq_file_fopen_read(ptq_ctx *ctx, const char *path, FILE **f);
/* 1 when a and b name the same file: both exist with the same st_dev and
 * st_ino, or their folders resolve (realpath) to the same one and the last
 * components are equal (so an output not yet written is recognised too; a
 * folder not made yet resolves as far as it exists, the rest taken as written). */
PTQ_API int ptq_file_same(const char *a, const char *b);

/* Temporary names hold at most this many bytes, NUL included. */
#define PTQ_TMP_NAME_BYTES 4200

/* Creates an empty temporary file next to path, "<path>.tmp-<32 random hex
 * digits>" (path's last component cut to its first 218 bytes, between UTF-8
 * characters, when the whole would pass NAME_MAX), registered for removal
 * on the signals of ptq_atomic_cleanup_on_signals; its name into
 * tmp[n_tmp]. fd: an O_WRONLY descriptor on it, or NULL to close it (for
 * writers that reopen by name, such as HDF5 with H5F_ACC_TRUNC). */
PTQ_API ptq_status ptq_atomic_create(ptq_ctx *ctx, const char *path, char *tmp, size_t n_tmp, int *fd);
/* The same, a FILE * opened "wb" on it. */
PTQ_API ptq_status ptq_atomic_fopen(ptq_ctx *ctx, const char *path, char *tmp, size_t n_tmp, FILE **f);
/* A temporary folder next to path (mode 0777 & ~umask), registered likewise. */
PTQ_API ptq_status ptq_atomic_mkdir(ptq_ctx *ctx, const char *path, char *tmp, size_t n_tmp);
/* Renames tmp onto path and forgets it; on failure removes tmp. tmp[0] is
 * set to '\0' either way. For tests, PTQ_TEST_FAIL_RENAME=NAME in the
 * environment fails the rename onto every path whose last component is NAME
 * (EIO), as one onto a folder would. */
PTQ_API ptq_status ptq_atomic_commit(ptq_ctx *ctx, char *tmp, const char *path);
/* The same, but never over anything at path, put there however late
 * (RENAME_NOREPLACE): PTQ_ERR_IO "PATH already exists; not overwriting it",
 * tmp removed. For outputs that refuse an existing name (data convert). */
PTQ_API ptq_status ptq_atomic_commit_new(ptq_ctx *ctx, char *tmp, const char *path);
/* Renames the complete temporaries tmp[i] onto paths[i], i < n, all or none:
 * the files the names held are kept as hard links (registered temporaries)
 * while the names are taken one by one, and put back if a rename fails (a
 * name that held nothing is removed again). Every tmp[i] is discarded
 * either way. A signal of ptq_atomic_cleanup_on_signals arriving while it
 * renames is handled once the set is whole (all new, or all old). */
PTQ_API ptq_status ptq_atomic_commit_all(ptq_ctx *ctx, char *const *tmp, const char *const *paths, int n);
/* Removes tmp (a file, or a folder two levels deep) and forgets it; a no-op
 * for "". tmp[0] is set to '\0'. */
PTQ_API void ptq_atomic_discard(char *tmp);
/* After a writer handed tmp (a temporary of ptq_atomic_create or
 * ptq_atomic_mkdir) in place of path failed: ctx's message names path, the
 * output the user named, wherever it named tmp ("cannot write out.h5: No
 * space left on device", not out.h5.tmp-<hex>, which is gone by then). */
PTQ_API void ptq_atomic_blame_output(ptq_ctx *ctx, const char *tmp, const char *path);
/* Registers folder path, made by the caller to hold its outputs, for removal
 * on the signals of ptq_atomic_cleanup_on_signals if it is still empty then
 * (rmdir: a folder with anything in it stays); ptq_atomic_forget_dir once it
 * holds the outputs or is removed. */
PTQ_API void ptq_atomic_track_dir(const char *path);
PTQ_API void ptq_atomic_forget_dir(const char *path);
/* Writes n_bytes of data to fd (an output named path, for messages), all of
 * it or PTQ_ERR_IO with the reason (in errno too). For tests, PTQ_TEST_FAIL_WRITE_AFTER=N
 * in the environment makes every write past the process's first N bytes
 * through here fail with ENOSPC, as a full disk would. */
PTQ_API ptq_status ptq_file_write_all(ptq_ctx *ctx, int fd, const void *data, size_t n_bytes, const char *path);
/* Writes n_bytes of data to path whole or not at all. */
PTQ_API ptq_status ptq_atomic_write(ptq_ctx *ctx, const char *path, const void *data, size_t n_bytes);
/* Installs handlers for SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR1
 * and SIGALRM (each not ignored when the program started) that remove every
 * pending temporary (async-signal-safe calls only), then re-raise the signal
 * with its default action, so the exit status stays 128+N; and ignores
 * SIGXFSZ, so a write past the file size limit (ulimit -f) fails with EFBIG
 * and its writer cleans up. For programs (the ptq command), not libraries. */
PTQ_API void ptq_atomic_cleanup_on_signals(void);

#ifdef __cplusplus
}
#endif
#endif
