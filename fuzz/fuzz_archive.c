/* libFuzzer harness: the calibration archive reader (ptq_calib_set_read).
 * scripts/fuzz.sh archive SECONDS. */
#include "fuzz_common.h"
#include "ptq/calib.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[512];
    ptq_ctx ctx;
    ptq_calib_set *s = NULL;
    fuzz_limit_memory();
    ptq_ctx_init(&ctx);
    if (fuzz_write_tmp(data, size, ".h5", path, sizeof path) != 0)
        return 0;
    ptq_calib_set_read(&ctx, path, &s);
    ptq_calib_set_free(s);
    unlink(path);
    return 0;
}
