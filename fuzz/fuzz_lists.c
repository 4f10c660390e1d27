/* libFuzzer harness: the labels and classes lists of image folders
 * (datasets/class_lists.c ds_labels_read, ds_classes_read, ds_classes_find).
 * scripts/fuzz.sh lists SECONDS. */
#include "fuzz_common.h"
#include "datasets/datasets_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[512];
    ptq_ctx ctx;
    if (fuzz_begin(data, size, ".txt", path, sizeof path, &ctx) != 0)
        return 0;
    ds_labels labels;
    if (ds_labels_read(&ctx, path, &labels) == PTQ_OK)
        ds_labels_free(&labels);
    ds_classes classes;
    if (ds_classes_read(&ctx, path, &classes) == PTQ_OK) {
        char **by_index = NULL;
        for (int i = 0; i < classes.n; i++)
            if (ds_classes_find(&classes, classes.names[i]) != classes.index[i])
                __builtin_trap(); /* every listed name finds its own index */
        if (ds_classes_by_index(&ctx, &classes, &by_index) == PTQ_OK)
            ds_strings_free(by_index, classes.n_classes);
        ds_classes_free(&classes);
    }
    unlink(path);
    return 0;
}
