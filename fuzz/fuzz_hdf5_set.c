/* libFuzzer harness: the HDF5 image-set reader (ptq_dataset_open, then the
 * first samples read and preprocessed). scripts/fuzz.sh hdf5_set SECONDS. */
#include "fuzz_common.h"
#include "ptq/dataset.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[512];
    ptq_ctx ctx;
    ptq_dataset *ds = NULL;
    if (fuzz_begin(data, size, ".h5", path, sizeof path, &ctx) != 0)
        return 0;
    if (ptq_dataset_open(&ctx, path, NULL, &ds) == PTQ_OK) {
        int64_t h, w, c;
        ptq_dataset_geometry(ds, &h, &w, &c);
        int64_t n = ptq_dataset_count(ds) < 4 ? ptq_dataset_count(ds) : 4;
        if (h * w <= 4096) {
            ptq_preprocess pre;
            ptq_preprocess_default(&pre);
            pre.height = h;
            pre.width = w;
            float *x = malloc((size_t)(n * h * w) * sizeof *x + 1);
            int32_t labels[4];
            if (x)
                ptq_dataset_read(&ctx, ds, 0, n, &pre, x, ptq_dataset_has_labels(ds) ? labels : NULL);
            free(x);
        }
    }
    ptq_dataset_close(ds);
    unlink(path);
    return 0;
}
