/* The zstd HDF5 filter, registered id 32015 (as hdf5plugin's): cd_values[0]
 * is the compression level, each chunk is one zstd frame that records its
 * content size (a frame declaring more than the memory limit is refused).
 * Files written either way read both ways; checked by tests/datasets_test.py
 * (h5py + hdf5plugin), tests/test_datasets.c and tests/badinput_test.py. */
#include <zstd.h>

#include "datasets/datasets_internal.h"
#include "ptq/memory.h"

/* H5Z_func_t: returns the bytes now in *buf, or 0 on failure (HDF5 then
 * reports the chunk as unreadable). Buffers are HDF5's to own and free. */
static size_t zstd_filter(unsigned int flags, size_t cd_nelmts, const unsigned int cd_values[], size_t nbytes,
                          size_t *buf_size, void **buf)
{
    void *out;
    size_t got;
    if (flags & H5Z_FLAG_REVERSE) {
        /* libhdf5 gives no chunk size to check the frame's against: a 33 KB frame can declare 1 GiB of zeros,
         * so at least no more than the memory limit (--max-memory) is allocated for it */
        unsigned long long n = ZSTD_getFrameContentSize(*buf, nbytes);
        if (n == ZSTD_CONTENTSIZE_ERROR || n == ZSTD_CONTENTSIZE_UNKNOWN || n == 0 || n > (size_t)-1 ||
            n > ptq_memory_budget())
            return 0;
        out = H5allocate_memory((size_t)n, 0);
        if (!out)
            return 0;
        got = ZSTD_decompress(out, (size_t)n, *buf, nbytes);
        if (ZSTD_isError(got) || got != n) {
            H5free_memory(out);
            return 0;
        }
    } else {
        int level = cd_nelmts > 0 ? (int)cd_values[0] : ZSTD_CLEVEL_DEFAULT;
        size_t cap = ZSTD_compressBound(nbytes);
        out = H5allocate_memory(cap, 0);
        if (!out)
            return 0;
        got = ZSTD_compress(out, cap, *buf, nbytes, level);
        if (ZSTD_isError(got)) {
            H5free_memory(out);
            return 0;
        }
    }
    H5free_memory(*buf);
    *buf = out;
    *buf_size = got;
    return got;
}

ptq_status ptq_h5_register_zstd(ptq_ctx *ctx)
{
    static const H5Z_class2_t cls = {
        H5Z_CLASS_T_VERS, DS_ZSTD_FILTER_ID, 1, 1, "zstd", NULL, NULL, zstd_filter,
    };
    ds_h5_quiet q;
    ds_h5_quiet_begin(&q);
    herr_t rc = H5Zregister(&cls);
    char why[256] = "";
    if (rc < 0)
        ds_h5_error(why, sizeof why);
    ds_h5_quiet_end(&q);
    if (rc < 0)
        return ptq_fail(ctx, PTQ_ERR_INTERNAL, "cannot register the zstd HDF5 filter %d: %s", DS_ZSTD_FILTER_ID, why);
    return PTQ_OK;
}
