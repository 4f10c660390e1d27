/* IDX files (the MNIST/Fashion-MNIST format: big-endian magic 0x0000TTNN,
 * NN dims of 4 bytes, then the data), raw or gzip'd, read through zlib's
 * gzread. Only unsigned-byte data (TT = 0x08). Covered by tests/test_datasets.c. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "datasets/datasets_internal.h"

void ds_idx_close(ds_idx *idx)
{
    if (idx && idx->gz) {
        gzclose(idx->gz);
        idx->gz = NULL;
    }
}

ptq_status ds_idx_read(ptq_ctx *ctx, ds_idx *idx, void *buf, size_t n_bytes)
{
    unsigned char *p = buf;
    while (n_bytes > 0) {
        unsigned want = n_bytes > (size_t)INT_MAX / 2 ? (unsigned)(INT_MAX / 2) : (unsigned)n_bytes;
        int got = gzread(idx->gz, p, want);
        if (got < 0) {
            int code;
            const char *why = gzerror(idx->gz, &code);
            return ptq_fail(ctx, PTQ_ERR_FORMAT, "cannot read %s: %s", idx->path, why);
        }
        if (got == 0)
            return ptq_fail(ctx, PTQ_ERR_FORMAT, "%s is truncated", idx->path);
        p += got;
        n_bytes -= (size_t)got;
    }
    return PTQ_OK;
}

ptq_status ds_idx_open(ptq_ctx *ctx, const char *path, int ndim, ds_idx *idx)
{
    unsigned char hdr[4 + 4 * 3];
    ptq_status st;
    memset(idx, 0, sizeof *idx);
    idx->path = path;
    int fd;
    PTQ_TRY_RET(ptq_file_open_read(ctx, path, &fd));
    idx->gz = gzdopen(fd, "rb");
    if (!idx->gz) {
        close(fd);
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "cannot open %s: out of memory", path);
    }
    gzbuffer(idx->gz, 1 << 17);
    if ((st = ds_idx_read(ctx, idx, hdr, 4)) != PTQ_OK)
        return st;
    if (hdr[0] != 0 || hdr[1] != 0)
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "%s is not an IDX file (magic %02x%02x%02x%02x)", path, hdr[0], hdr[1],
                        hdr[2], hdr[3]);
    if (hdr[2] != 0x08)
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "IDX file %s holds type 0x%02x; ptq converts unsigned bytes (0x08)",
                        path, hdr[2]);
    if (hdr[3] != ndim)
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "IDX file %s has %d dimensions, expected %d", path, hdr[3], ndim);
    if ((st = ds_idx_read(ctx, idx, hdr + 4, 4 * (size_t)ndim)) != PTQ_OK)
        return st;
    idx->ndim = ndim;
    for (int i = 0; i < ndim; i++) {
        const unsigned char *b = hdr + 4 + 4 * i;
        idx->dims[i] = (int64_t)((uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3]);
        if (i > 0 && idx->dims[i] == 0)
            return ptq_fail(ctx, PTQ_ERR_FORMAT, "IDX file %s has an empty dimension %d", path, i);
    }
    /* the declared bytes must fit the file (gzip's deflate inflates at most
     * 1032:1) before anything of their size is allocated */
    double declared = 1;
    for (int i = 0; i < ndim; i++)
        declared *= (double)idx->dims[i];
    struct stat sb;
    double room = fstat(fd, &sb) == 0 ? (double)sb.st_size * (gzdirect(idx->gz) ? 1.0 : 1032.0) : 0;
    if (room > 0 && declared > room)
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "IDX file %s declares %.0f bytes of data in a file of %lld bytes", path,
                        declared, (long long)sb.st_size);
    return PTQ_OK;
}
