/* libFuzzer harness: the Keras HDF5 importer's model_config translation
 * (model/keras.c through ptq_graph_load_keras, then shape inference). The
 * input is the model_config JSON: each run writes a copy of a real Keras
 * file, tests/data/keras/seq_tfk2.h5 (or $PTQ_FUZZ_KERAS_TEMPLATE), with its
 * model_config attribute replaced, so layers find real weights where the
 * mutated config still names them. The HDF5 structure itself is the
 * archive and hdf5_set harnesses' ground. scripts/fuzz.sh keras SECONDS. */
#include "fuzz_common.h"
#include "ptq/graph.h"
#include "ptq/runtime.h"

#include <hdf5.h>

#ifndef PTQ_SOURCE_DIR
#define PTQ_SOURCE_DIR "."
#endif

static uint8_t *template_bytes;
static size_t template_size;

static int load_template(void)
{
    const char *p = getenv("PTQ_FUZZ_KERAS_TEMPLATE");
    FILE *f = fopen(p ? p : PTQ_SOURCE_DIR "/tests/data/keras/seq_tfk2.h5", "rb");
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (n > 0 && (template_bytes = malloc((size_t)n)) && fread(template_bytes, 1, (size_t)n, f) == (size_t)n)
        template_size = (size_t)n;
    fclose(f);
    return template_size ? 0 : -1;
}

/* The template's copy at path gets model_config = config[n] (a fixed-length
 * string, as Keras writes it); 0 on success. */
static int set_config(const char *path, const uint8_t *config, size_t n)
{
    int ok = -1;
    hid_t file = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    if (file < 0)
        return -1;
    hid_t type = H5Tcopy(H5T_C_S1), space = H5Screate(H5S_SCALAR), attr = -1;
    if (H5Aexists(file, "model_config") > 0)
        H5Adelete(file, "model_config");
    if (H5Tset_size(type, n ? n : 1) >= 0 && (attr = H5Acreate2(file, "model_config", type, space, H5P_DEFAULT,
                                                                 H5P_DEFAULT)) >= 0)
        ok = H5Awrite(attr, type, n ? (const void *)config : "") >= 0 ? 0 : -1;
    if (attr >= 0)
        H5Aclose(attr);
    H5Sclose(space);
    H5Tclose(type);
    H5Fclose(file);
    return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[512];
    ptq_ctx ctx;
    ptq_graph *g = NULL;
    if (!template_bytes && load_template() != 0)
        abort(); /* the harness is misconfigured, not the input at fault */
    fuzz_begin(data, 0, NULL, NULL, 0, &ctx);
    if (fuzz_write_tmp(template_bytes, template_size, ".h5", path, sizeof path) != 0)
        return 0;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (set_config(path, data, size) == 0 && ptq_graph_load_keras(&ctx, path, &g) == PTQ_OK)
        ptq_graph_infer_types(&ctx, g);
    ptq_graph_free(g);
    unlink(path);
    return 0;
}
