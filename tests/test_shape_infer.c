/* Static shape inference against ONNX's own test data: for every case of
 * the node and pytorch-converted suites that ptq supports, the inferred
 * output shapes and dtypes equal those of the expected output_<i>.pb, with
 * inputs shaped as input_<i>.pb. Exit 77 without libonnx-testdata. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ptq/graph.h"
#include "ptq/runtime.h"
#include "testlib.h"

static const char *const suites[] = {"/usr/include/onnx/backend/test/data/node",
                                     "/usr/include/onnx/backend/test/data/pytorch-converted"};

static int n_checked, n_unsupported;

static void check_case(const char *dir)
{
    char path[8192];
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_graph *g = NULL;
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    if (ptq_graph_load_onnx(&ctx, path, &g) != PTQ_OK || ptq_graph_check_supported(&ctx, g) != PTQ_OK) {
        ptq_graph_free(g);
        return;
    }
    ptq_status st = PTQ_OK;
    for (int i = 0; st == PTQ_OK && i < g->n_inputs; i++) {
        ptq_tensor t;
        snprintf(path, sizeof path, "%s/test_data_set_0/input_%d.pb", dir, i);
        if ((st = ptq_tensor_load_pb(&ctx, path, &t, NULL)) != PTQ_OK)
            break; /* string tensors: unsupported */
        ptq_value *v = &g->values[g->inputs[i]];
        v->ndim = t.ndim;
        memcpy(v->dims, t.dims, sizeof v->dims);
        ptq_tensor_free_host(&t);
    }
    if (st == PTQ_OK)
        st = ptq_graph_infer_shapes(&ctx, g, 1);
    if (st == PTQ_ERR_UNSUPPORTED) {
        n_unsupported++;
    } else if (st != PTQ_OK) {
        CHECK_MSG(st == PTQ_OK, "%s: %s", dir, ctx.msg);
    } else {
        for (int i = 0; i < g->n_outputs; i++) {
            ptq_tensor t;
            snprintf(path, sizeof path, "%s/test_data_set_0/output_%d.pb", dir, i);
            if (ptq_tensor_load_pb(&ctx, path, &t, NULL) != PTQ_OK)
                continue;
            const ptq_value *v = &g->values[g->outputs[i]];
            /* ONNX 1.13's data stores a bfloat16 output's codes as uint16 (test_cast_FLOAT_to_BFLOAT16) */
            int same = v->ndim == t.ndim && (v->dtype == t.dtype || (v->dtype == PTQ_DT_BFLOAT16 &&
                                                                     t.dtype == PTQ_DT_UINT16));
            for (int d = 0; same && d < t.ndim; d++)
                same = v->dims[d] == t.dims[d];
            char a[96], b[96];
            CHECK_MSG(same, "%s output %d: inferred %s [%s], expected %s [%s]", dir, i, ptq_dtype_name(v->dtype),
                      ptq_dims_str(v->dims, v->ndim, a, sizeof a), ptq_dtype_name(t.dtype),
                      ptq_dims_str(t.dims, t.ndim, b, sizeof b));
            ptq_tensor_free_host(&t);
        }
        n_checked++;
    }
    ptq_graph_free(g);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(void)
{
    struct stat sb;
    if (stat(suites[0], &sb) != 0) {
        printf("test_shape_infer: skipped: %s missing (libonnx-testdata)\n", suites[0]);
        return PTQ_TEST_SKIP;
    }
    for (size_t s = 0; s < sizeof suites / sizeof suites[0]; s++) {
        DIR *d = opendir(suites[s]);
        if (!d)
            continue;
        char **names = NULL;
        size_t n = 0, cap = 0;
        for (struct dirent *e; (e = readdir(d));) {
            if (e->d_name[0] == '.')
                continue;
            if (n == cap) {
                cap = cap ? 2 * cap : 256;
                names = realloc(names, cap * sizeof *names);
            }
            names[n++] = strdup(e->d_name);
        }
        closedir(d);
        qsort(names, n, sizeof *names, by_name);
        for (size_t i = 0; i < n; i++) {
            char dir[2048];
            snprintf(dir, sizeof dir, "%s/%s", suites[s], names[i]);
            check_case(dir);
            free(names[i]);
        }
        free(names);
    }
    printf("test_shape_infer: %d cases' output shapes checked, %d need run-time data for shapes\n", n_checked,
           n_unsupported);
    CHECK(n_checked > 150);
    return test_done("test_shape_infer");
}
