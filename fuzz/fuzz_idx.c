/* libFuzzer harness: the IDX reader (datasets/idx.c), as an image file
 * (3 dims) and a label file (1 dim), reading up to 1 MiB of its data.
 * scripts/fuzz.sh idx SECONDS. */
#include "fuzz_common.h"
#include "datasets/datasets_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[512];
    static uint8_t buf[1 << 20];
    fuzz_limit_memory();
    if (fuzz_write_tmp(data, size, ".idx", path, sizeof path) != 0)
        return 0;
    for (int ndim = 1; ndim <= 3; ndim += 2) {
        ptq_ctx ctx;
        ds_idx idx;
        ptq_ctx_init(&ctx);
        if (ds_idx_open(&ctx, path, ndim, &idx) == PTQ_OK) {
            double n = 1;
            for (int i = 0; i < ndim; i++)
                n *= (double)idx.dims[i];
            ds_idx_read(&ctx, &idx, buf, n < sizeof buf ? (size_t)n : sizeof buf);
        }
        ds_idx_close(&idx);
    }
    unlink(path);
    return 0;
}
