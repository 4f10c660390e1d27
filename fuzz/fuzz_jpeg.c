/* libFuzzer harness: the JPEG decoder (datasets/jpeg_codec.c ds_jpeg_decode)
 * as the image folder reader calls it: the header alone, then a decode at
 * full size and one DCT-scaled for a resize, with the folder's pixel bound.
 * scripts/fuzz.sh jpeg SECONDS. */
#include "fuzz_common.h"
#include "datasets/datasets_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[512];
    ptq_ctx ctx;
    ds_image img;
    ds_jpeg dec;
    memset(&img, 0, sizeof img);
    memset(&dec, 0, sizeof dec);
    if (fuzz_begin(data, size, ".jpg", path, sizeof path, &ctx) != 0)
        return 0;
    ptq_preprocess p;
    ptq_preprocess_default(&p);
    p.n_channels = 3;
    p.height = p.width = 224;
    const uint64_t max_pixels = (uint64_t)224 * 224 * DS_PNG_MAX_UPSCALE;
    if (ds_jpeg_decode(&ctx, path, &dec, &img, 1, NULL, 0, NULL) == PTQ_OK) {
        ds_jpeg_decode(&ctx, path, &dec, &img, 0, &p, max_pixels, "fuzz");
        p.resize = 32; /* a small target: the smallest DCT scales */
        ds_jpeg_decode(&ctx, path, &dec, &img, 0, &p, max_pixels, "fuzz");
    }
    ds_jpeg_free(&dec);
    ds_image_free(&img);
    unlink(path);
    return 0;
}
