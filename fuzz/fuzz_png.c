/* libFuzzer harness: the PNG decoder (datasets/png_codec.c ds_png_decode)
 * with a pixel bound as the PNG folder reader sets it.
 * scripts/fuzz.sh png SECONDS. */
#include "fuzz_common.h"
#include "datasets/datasets_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[512];
    ptq_ctx ctx;
    ds_image img;
    memset(&img, 0, sizeof img);
    if (fuzz_begin(data, size, ".png", path, sizeof path, &ctx) != 0)
        return 0;
    ds_png_decode(&ctx, path, &img, 0, (uint64_t)224 * 224 * DS_PNG_MAX_UPSCALE, "fuzz");
    ds_image_free(&img);
    unlink(path);
    return 0;
}
