/* libFuzzer harness: the calibration archive reader (ptq_calib_set_read).
 * scripts/fuzz.sh archive SECONDS. */
#include "fuzz_common.h"
#include "ptq/calib.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[512];
    ptq_ctx ctx;
    ptq_calib_set *s = NULL;
    if (fuzz_begin(data, size, ".h5", path, sizeof path, &ctx) != 0)
        return 0;
    ptq_calib_set_read(&ctx, path, &s);
    ptq_calib_set_free(s);
    unlink(path);
    return 0;
}
