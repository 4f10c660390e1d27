/* The Keras HDF5 importer (model/keras.c) on tests/data/keras/func_k3.h5:
 * the loader dispatches a .h5 to it, names come from layers, HWIO and
 * depthwise kernels land in OIHW element for element (checked against the
 * file read with libhdf5), 'same' padding puts the odd pixel at the end,
 * ZeroPadding2D becomes Pad, the ONNX form is deterministic and the Q/DQ
 * editor opens the .h5; plus the Pad reference kernel the importer relies on. */
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "ptq/graph.h"
#include "ptq/onnx_edit.h"
#include "testlib.h"

static char path[1024];

static const ptq_value *value(const ptq_graph *g, const char *name)
{
    for (int i = 0; i < g->n_values; i++)
        if (!strcmp(g->values[i].name, name))
            return &g->values[i];
    return NULL;
}

/* dataset of the file into a malloc'd float array of n values; NULL on mismatch */
static float *read_h5(const char *dset, int64_t n)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT), d = f >= 0 ? H5Dopen2(f, dset, H5P_DEFAULT) : -1;
    hid_t sp = d >= 0 ? H5Dget_space(d) : -1;
    float *x = NULL;
    if (sp >= 0 && H5Sget_simple_extent_npoints(sp) == n && (x = malloc((size_t)n * sizeof *x)) &&
        H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, x) < 0) {
        free(x);
        x = NULL;
    }
    if (sp >= 0)
        H5Sclose(sp);
    if (d >= 0)
        H5Dclose(d);
    if (f >= 0)
        H5Fclose(f);
    return x;
}

static void check_kernels(const ptq_graph *g)
{
    const ptq_value *w = value(g, "stem_conv/kernel");
    CHECK(w && w->ndim == 4 && w->dims[0] == 16 && w->dims[1] == 1 && w->dims[2] == 3 && w->dims[3] == 3);
    float *hwio = read_h5("model_weights/stem_conv/stem_conv/kernel", 3 * 3 * 1 * 16);
    CHECK(hwio != NULL);
    int bad = 0;
    for (int o = 0; w && hwio && o < 16; o++)
        for (int y = 0; y < 3; y++)
            for (int x = 0; x < 3; x++)
                bad += ((const float *)w->data)[(o * 3 + y) * 3 + x] != hwio[(y * 3 + x) * 16 + o];
    CHECK_MSG(bad == 0, "%d stem_conv kernel elements moved wrongly", bad);
    free(hwio);

    /* depthwise [3, 3, 16 channels, multiplier 2] -> [32, 1, 3, 3], output channel c * 2 + j */
    w = value(g, "block_dw/kernel");
    CHECK(w && w->ndim == 4 && w->dims[0] == 32 && w->dims[1] == 1);
    float *dw = read_h5("model_weights/block_dw/block_dw/kernel", 3 * 3 * 16 * 2);
    bad = 0;
    for (int c = 0; w && dw && c < 16; c++)
        for (int j = 0; j < 2; j++)
            for (int y = 0; y < 3; y++)
                for (int x = 0; x < 3; x++)
                    bad += ((const float *)w->data)[((c * 2 + j) * 3 + y) * 3 + x] != dw[((y * 3 + x) * 16 + c) * 2 + j];
    CHECK(dw && bad == 0);
    free(dw);
    w = value(g, "sep/pointwise_kernel");
    CHECK(w && w->ndim == 4 && w->dims[0] == 32 && w->dims[1] == 16 && w->dims[2] == 1);
    w = value(g, "logits/kernel"); /* Dense [in, out] as Gemm's B */
    CHECK(w && w->ndim == 2 && w->dims[0] == 96 && w->dims[1] == 10);
}

static void check_graph(const ptq_graph *g)
{
    CHECK(g->n_inputs == 1 && g->n_outputs == 1);
    const ptq_value *in = &g->values[g->inputs[0]], *out = &g->values[g->outputs[0]];
    CHECK(!strcmp(in->name, "image") && in->ndim == 4 && in->dims[0] < 0 && in->dims[1] == 28 && in->dims[3] == 1);
    CHECK(!strcmp(out->name, "probs") && out->ndim == 2 && out->dims[1] == 10);
    CHECK(ptq_graph_meta(g, "ptq.preprocess") && !strcmp(ptq_graph_meta(g, "ptq.preprocess"), "layout=NHWC"));
    CHECK(ptq_graph_meta(g, "keras_version") && !strncmp(ptq_graph_meta(g, "keras_version"), "3.", 2));
    int pad_node = -1;
    const ptq_node *branch_b = NULL, *softmax = NULL;
    for (int k = 0; k < g->n_nodes; k++) {
        if (!strcmp(g->nodes[k].op_type, "Pad"))
            pad_node = k;
        if (!strcmp(g->nodes[k].name, "branch_b/Conv"))
            branch_b = &g->nodes[k];
        if (!strcmp(g->nodes[k].op_type, "Softmax"))
            softmax = &g->nodes[k];
    }
    /* 14 wide, 3x3, stride 2, 'same': one pixel of padding, at the end (bottom, right) */
    const ptq_attr *pads = branch_b ? ptq_node_attr(branch_b, "pads") : NULL;
    CHECK(pads && pads->n == 4 && pads->ints[0] == 0 && pads->ints[1] == 0 && pads->ints[2] == 1 &&
          pads->ints[3] == 1);
    /* ZeroPadding2D(((1, 1), (0, 1))) on NCHW */
    const ptq_value *pv = value(g, "pad/pads");
    static const int64_t want[8] = {0, 0, 1, 0, 0, 0, 1, 1};
    CHECK(pad_node >= 0 && pv && pv->dims[0] == 8 && !memcmp(pv->data, want, sizeof want));
    CHECK(softmax && g->values[softmax->outputs[0]].name && !strcmp(g->values[softmax->outputs[0]].name, "probs"));
}

static void check_pad_kernel(void)
{
    /* x [2, 3] = 1..6; pads begin {1, 0}, end {0, 2} */
    const float x[6] = {1, 2, 3, 4, 5, 6}, zero = 0.0f, nine = 9.0f;
    const int64_t dims[2] = {2, 3}, pads[4] = {1, 0, 0, 2};
    float y[3 * 5];
    static const float constant[15] = {9, 9, 9, 9, 9, 1, 2, 3, 9, 9, 4, 5, 6, 9, 9};
    static const float edge[15] = {1, 2, 3, 3, 3, 1, 2, 3, 3, 3, 4, 5, 6, 6, 6};
    static const float reflect[15] = {4, 5, 6, 5, 4, 1, 2, 3, 2, 1, 4, 5, 6, 5, 4};
    ptq_k_pad_ref(PTQ_PAD_CONSTANT, 4, 2, dims, pads, &nine, x, y);
    CHECK(!memcmp(y, constant, sizeof y));
    ptq_k_pad_ref(PTQ_PAD_EDGE, 4, 2, dims, pads, &zero, x, y);
    CHECK(!memcmp(y, edge, sizeof y));
    ptq_k_pad_ref(PTQ_PAD_REFLECT, 4, 2, dims, pads, &zero, x, y);
    CHECK(!memcmp(y, reflect, sizeof y));
}

int main(void)
{
    const char *src = getenv("PTQ_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/tests/data/keras/func_k3.h5", src ? src : ".");
    check_pad_kernel();
    FILE *f = fopen(path, "rb");
    if (!f) {
        printf("test_keras: %s not found (set PTQ_SOURCE_DIR): skipped\n", path);
        return ptq_test_failures ? test_done("test_keras") : PTQ_TEST_SKIP;
    }
    fclose(f);
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_graph *g = NULL;
    ptq_status st = ptq_graph_load_onnx(&ctx, path, &g); /* dispatched by content */
    CHECK_MSG(st == PTQ_OK, "%s", ctx.msg);
    if (g) {
        CHECK(!strcmp(g->path, path));
        check_graph(g);
        check_kernels(g);
    }
    ptq_graph_free(g);

    void *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    CHECK(ptq_keras_to_onnx(&ctx, path, &a, &na) == PTQ_OK && ptq_keras_to_onnx(&ctx, path, &b, &nb) == PTQ_OK);
    CHECK(na > 0 && na == nb && a && b && !memcmp(a, b, na)); /* the same file gives the same bytes */
    free(a);
    free(b);

    ptq_onnx_edit *ed = NULL;
    st = ptq_onnx_edit_open(&ctx, path, &ed);
    CHECK_MSG(st == PTQ_OK, "%s", ctx.msg);
    void *enc = NULL;
    size_t n_enc = 0;
    CHECK(ed && ptq_onnx_edit_encode(&ctx, ed, &enc, &n_enc) == PTQ_OK && n_enc > 0);
    CHECK(enc && ptq_graph_load_onnx_bytes(&ctx, enc, n_enc, NULL, &g) == PTQ_OK && g && value(g, "block_add"));
    ptq_graph_free(g);
    free(enc);
    ptq_onnx_edit_free(ed);

    /* not a Keras model: an ONNX file given to the Keras loader */
    char onnx[1100];
    snprintf(onnx, sizeof onnx, "%s/models/fmnist_resnet.onnx", src ? src : ".");
    CHECK(ptq_graph_load_keras(&ctx, onnx, &g) == PTQ_ERR_FORMAT && g == NULL);
    return test_done("test_keras");
}
