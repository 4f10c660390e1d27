/* SmoothQuant-style migration (include/ptq/smooth.h): the groups found in
 * the graph, their per-channel activation maxima from an executor tap, and
 * the edited model (LayerNorm scale/bias / s, weight rows * s) through
 * ptq_onnx_edit. Covered by tests/smooth_test.py. */
#include "ptq/smooth.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptq/onnx_edit.h"

typedef struct smooth_group {
    int ln_node, x, scale, bias; /* value indices; bias -1 when the LayerNorm has none */
    int64_t c;                   /* channels: X's last dim */
    int n_cons;
    int *cons;                   /* [n_cons] consumer node indices */
    double *xmax, *wmax;         /* [c] each: max |X[..., c]| seen, max |W[c, :]| over the consumers */
} smooth_group;

struct ptq_smooth {
    const ptq_graph *g;
    int n;
    smooth_group *grp;
    int *by_value; /* [n_values]: the group whose activation the value is, or -1 */
};

/* Nodes reading value v (each node once); their indices into list [cap] when not NULL. */
static int readers(const ptq_graph *g, int v, int *list, int cap)
{
    int n = 0;
    for (int k = 0; k < g->n_nodes; k++)
        for (int i = 0; i < g->nodes[k].n_inputs; i++)
            if (g->nodes[k].inputs[i] == v) {
                if (list && n < cap)
                    list[n] = k;
                n++;
                break;
            }
    return n;
}

static float value_at(const ptq_value *v, int64_t i)
{
    float f;
    memcpy(&f, (const char *)v->data + (size_t)i * sizeof f, sizeof f);
    return f;
}

/* v is a float initializer of rank ndim, a Constant node's, or such a value computed from constants at load (a
 * Transpose of an initializer, a float16 one cast), read by one node only. */
static int own_constant(const ptq_graph *g, int v, int ndim)
{
    if (v < 0)
        return 0;
    const ptq_value *val = &g->values[v];
    return (val->flags & PTQ_VALUE_HAS_DATA) && val->dtype == PTQ_DT_FLOAT && val->ndim == ndim && val->data &&
           val->n_bytes == (size_t)ptq_dims_prod(val->dims, 0, ndim) * sizeof(float) && readers(g, v, NULL, 0) == 1;
}

/* The weight of consumer node k reading x as input A for c channels: its
 * value index, and *transposed when it is [K, C]; -1 when k does not qualify. */
static int consumer_weight(const ptq_graph *g, int k, int x, int64_t c, int *transposed)
{
    const ptq_node *n = &g->nodes[k];
    const int is_mm = strcmp(n->op_type, "MatMul") == 0, is_gemm = strcmp(n->op_type, "Gemm") == 0;
    if ((n->domain && n->domain[0]) || (!is_mm && !is_gemm) || n->n_inputs < 2 || n->inputs[0] != x ||
        n->inputs[1] == x || !own_constant(g, n->inputs[1], 2))
        return -1;
    *transposed = is_gemm && ptq_node_attr_int(n, "transB", 0) != 0;
    if (is_gemm && ptq_node_attr_int(n, "transA", 0) != 0)
        return -1;
    const ptq_value *w = &g->values[n->inputs[1]];
    return w->dims[*transposed ? 1 : 0] == c ? n->inputs[1] : -1;
}

static void group_free(smooth_group *gr)
{
    free(gr->cons);
    free(gr->xmax);
    free(gr->wmax);
}

void ptq_smooth_free(ptq_smooth *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n; i++)
        group_free(&s->grp[i]);
    free(s->grp);
    free(s->by_value);
    free(s);
}

/* Group for LayerNormalization node k in *gr (0 when it does not qualify, -1 out of memory). */
static int find_group(const ptq_graph *g, int k, smooth_group *gr)
{
    const ptq_node *n = &g->nodes[k];
    memset(gr, 0, sizeof *gr);
    if ((n->domain && n->domain[0]) || strcmp(n->op_type, "LayerNormalization") != 0 || n->n_inputs < 2 ||
        n->n_outputs < 1 || n->outputs[0] < 0 || !own_constant(g, n->inputs[1], 1))
        return 0;
    const int x = n->outputs[0], in = n->inputs[0];
    const int64_t axis = ptq_node_attr_int(n, "axis", -1);
    if (axis != -1 && !(in >= 0 && g->values[in].ndim > 0 && axis == g->values[in].ndim - 1))
        return 0;
    const int64_t c = g->values[n->inputs[1]].dims[0];
    const int bias = n->n_inputs > 2 ? n->inputs[2] : -1;
    if ((bias >= 0 && (!own_constant(g, bias, 1) || g->values[bias].dims[0] != c)) ||
        (g->values[x].flags & PTQ_VALUE_OUTPUT) || c < 1)
        return 0;
    const int n_cons = readers(g, x, NULL, 0);
    if (n_cons < 1)
        return 0;
    gr->cons = malloc((size_t)n_cons * sizeof *gr->cons);
    gr->xmax = calloc((size_t)c, sizeof *gr->xmax);
    gr->wmax = calloc((size_t)c, sizeof *gr->wmax);
    if (!gr->cons || !gr->xmax || !gr->wmax) {
        group_free(gr);
        return -1;
    }
    readers(g, x, gr->cons, n_cons);
    for (int j = 0; j < n_cons; j++) {
        int transposed;
        const int w = consumer_weight(g, gr->cons[j], x, c, &transposed);
        if (w < 0) {
            group_free(gr);
            memset(gr, 0, sizeof *gr);
            return 0;
        }
        const ptq_value *wv = &g->values[w];
        const int64_t rows = wv->dims[0], cols = wv->dims[1];
        for (int64_t r = 0; r < rows; r++)
            for (int64_t q = 0; q < cols; q++) {
                const double a = fabs((double)value_at(wv, r * cols + q));
                double *m = &gr->wmax[transposed ? q : r];
                if (a > *m)
                    *m = a;
            }
    }
    gr->ln_node = k;
    gr->x = x;
    gr->scale = n->inputs[1];
    gr->bias = bias;
    gr->c = c;
    gr->n_cons = n_cons;
    return 1;
}

ptq_status ptq_smooth_create(ptq_ctx *ctx, const ptq_graph *g, ptq_smooth **out)
{
    *out = NULL;
    ptq_smooth *s = calloc(1, sizeof *s);
    if (!s || !(s->grp = calloc((size_t)g->n_nodes + 1, sizeof *s->grp)) ||
        !(s->by_value = malloc(((size_t)g->n_values + 1) * sizeof *s->by_value))) {
        ptq_smooth_free(s);
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory finding what to smooth");
    }
    s->g = g;
    for (int v = 0; v < g->n_values; v++)
        s->by_value[v] = -1;
    int n_ln = 0;
    for (int k = 0; k < g->n_nodes; k++) {
        n_ln += strcmp(g->nodes[k].op_type, "LayerNormalization") == 0;
        const int r = find_group(g, k, &s->grp[s->n]);
        if (r < 0) {
            ptq_smooth_free(s);
            return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory finding what to smooth");
        }
        if (r > 0) {
            s->by_value[s->grp[s->n].x] = s->n;
            s->n++;
        }
    }
    if (s->n == 0) {
        ptq_smooth_free(s);
        return ptq_fail(ctx, PTQ_ERR_UNSUPPORTED,
                        "%s: nothing to smooth: %d LayerNormalization node%s, none over the last axis with its own "
                        "constant scale and bias and read only by MatMul/Gemm nodes with their own constant weights",
                        g->path ? g->path : "the model", n_ln, n_ln == 1 ? "" : "s");
    }
    *out = s;
    return PTQ_OK;
}

int ptq_smooth_n_groups(const ptq_smooth *s)
{
    return s->n;
}

const char *ptq_smooth_group_name(const ptq_smooth *s, int i, int64_t *n_channels, int *n_consumers)
{
    *n_channels = s->grp[i].c;
    *n_consumers = s->grp[i].n_cons;
    return s->g->values[s->grp[i].x].name;
}

static ptq_status smooth_tap(void *user, ptq_ctx *ctx, const ptq_graph *g, int node_index, int value_index,
                             const ptq_tensor *t)
{
    ptq_smooth *s = user;
    (void)node_index;
    const int i = value_index >= 0 && value_index < g->n_values ? s->by_value[value_index] : -1;
    if (i < 0)
        return PTQ_OK;
    smooth_group *gr = &s->grp[i];
    const char *name = g->values[value_index].name;
    if (t->mem != PTQ_MEM_HOST || t->dtype != PTQ_DT_FLOAT || t->ndim < 1 || t->dims[t->ndim - 1] != gr->c)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "smoothing observes '%s' as float32 [..., %lld] on the host",
                        name, (long long)gr->c);
    const int64_t n_rows = ptq_tensor_numel(t) / gr->c;
    for (int64_t r = 0; r < n_rows; r++) {
        const float *x = (const float *)t->data + r * gr->c;
        for (int64_t c = 0; c < gr->c; c++) {
            if (!isfinite(x[c]))
                return ptq_fail(ctx, PTQ_ERR_DATA, "'%s' holds %s: nothing to smooth it by", name,
                                isnan(x[c]) ? "NaN" : "Inf");
            const double a = fabs((double)x[c]);
            if (a > gr->xmax[c])
                gr->xmax[c] = a;
        }
    }
    return PTQ_OK;
}

static ptq_status smooth_before(void *user, ptq_ctx *ctx, ptq_runner *r, ptq_batch *b)
{
    ptq_exec *e = ptq_session_exec(ptq_runner_session(r));
    if (b->index != 0)
        return PTQ_OK;
    ptq_exec_remove_tap(e, smooth_tap, user);
    return ptq_exec_add_tap(ctx, e, smooth_tap, user);
}

static ptq_status smooth_end(void *user, ptq_ctx *ctx, ptq_runner *r)
{
    (void)ctx;
    ptq_exec_remove_tap(ptq_session_exec(ptq_runner_session(r)), smooth_tap, user);
    return PTQ_OK;
}

ptq_consumer ptq_smooth_consumer(ptq_smooth *s)
{
    ptq_consumer c = {s, smooth_before, NULL, smooth_end};
    return c;
}

/* The migration factor of channel c: 1 where either maximum is 0. */
static double factor(const smooth_group *gr, int64_t c, double alpha)
{
    if (gr->xmax[c] <= 0 || gr->wmax[c] <= 0)
        return 1.0;
    return pow(gr->xmax[c], alpha) / pow(gr->wmax[c], 1.0 - alpha);
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* max / median of v [n] (sorted in place); 0 when the median is 0. */
static double spread(double *v, int64_t n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    const double med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    return med > 0 ? v[n - 1] / med : 0.0;
}

void ptq_smooth_spread(const ptq_smooth *s, int i, double alpha, double *before, double *after)
{
    const smooth_group *gr = &s->grp[i];
    double *v = malloc((size_t)gr->c * sizeof *v);
    *before = *after = 0.0;
    if (!v)
        return;
    memcpy(v, gr->xmax, (size_t)gr->c * sizeof *v);
    *before = spread(v, gr->c);
    for (int64_t c = 0; c < gr->c; c++)
        v[c] = gr->xmax[c] / factor(gr, c, alpha);
    *after = spread(v, gr->c);
    free(v);
}

/* A name for the edited copy of value v that no value of g has: "<name>.smooth", then "<name>.smooth2"... */
static void fresh_name(const ptq_graph *g, int v, char *buf, size_t n_buf)
{
    snprintf(buf, n_buf, "%s.smooth", g->values[v].name);
    for (int k = 2; ptq_graph_find_value(g, buf) >= 0; k++)
        snprintf(buf, n_buf, "%s.smooth%d", g->values[v].name, k);
}

/* Replaces initializer v by its copy scaled per channel: element i times
 * (or divided by, when divide) f[channel], channel i / step % c. Its one
 * reader in g reads the copy; where a node folded at load reads v too (a
 * Transpose of a tied weight), v stays as it is for that node. A v folded at
 * load is the output of the file's nodes that compute it: the reader reads
 * the scaled copy instead, and those nodes are left, their output unread. */
static ptq_status rewrite(ptq_ctx *ctx, ptq_onnx_edit *e, const ptq_graph *g, int v, const double *f, int64_t c,
                          int64_t step, int divide)
{
    const ptq_value *val = &g->values[v];
    const int64_t n = ptq_dims_prod(val->dims, 0, val->ndim);
    float *w = malloc((size_t)n * sizeof *w);
    if (!w)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory smoothing '%s'", val->name);
    for (int64_t i = 0; i < n; i++) {
        const double k = f[(i / step) % c];
        w[i] = (float)(divide ? (double)value_at(val, i) / k : (double)value_at(val, i) * k);
    }
    char name[1024];
    fresh_name(g, v, name, sizeof name);
    ptq_status st = ptq_onnx_edit_add_initializer(ctx, e, name, 1 /* FLOAT */, val->ndim, val->dims, w,
                                                  (size_t)n * sizeof *w);
    free(w);
    int reader = -1;
    const int shared = readers(g, v, &reader, 1) == 1 && ptq_onnx_edit_reads(e, val->name) > 1;
    if (st == PTQ_OK && shared)
        st = ptq_onnx_edit_rename_input_of(ctx, e, val->name, name, g->values[g->nodes[reader].outputs[0]].name);
    else if (st == PTQ_OK) /* its only reader */
        st = ptq_onnx_edit_rename_input(ctx, e, val->name, name, NULL);
    /* an initializer no node reads any more goes (one the reader read twice, as a LayerNorm's scale and bias) */
    if (st == PTQ_OK && (val->flags & PTQ_VALUE_INITIALIZER) && ptq_onnx_edit_reads(e, val->name) == 0)
        st = ptq_onnx_edit_remove_initializer(ctx, e, val->name);
    return st;
}

ptq_status ptq_smooth_write(ptq_ctx *ctx, const ptq_smooth *s, const char *model_path, double alpha,
                            const char *out_path)
{
    if (!(alpha >= 0.0 && alpha <= 1.0))
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "the migration strength alpha must be in [0, 1], got %g", alpha);
    const ptq_graph *g = s->g;
    ptq_onnx_edit *e = NULL;
    double *f = NULL;
    ptq_status st = ptq_onnx_edit_open(ctx, model_path, &e);
    for (int i = 0; st == PTQ_OK && i < s->n; i++) {
        const smooth_group *gr = &s->grp[i];
        free(f);
        if (!(f = malloc((size_t)gr->c * sizeof *f))) {
            st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory smoothing '%s'", g->values[gr->x].name);
            break;
        }
        for (int64_t c = 0; c < gr->c; c++)
            f[c] = factor(gr, c, alpha);
        st = rewrite(ctx, e, g, gr->scale, f, gr->c, 1, 1);
        if (st == PTQ_OK && gr->bias >= 0 && gr->bias != gr->scale) /* one value as both: divided once */
            st = rewrite(ctx, e, g, gr->bias, f, gr->c, 1, 1);
        for (int j = 0; st == PTQ_OK && j < gr->n_cons; j++) {
            int transposed;
            const int w = consumer_weight(g, gr->cons[j], gr->x, gr->c, &transposed);
            /* rows of [C, K] are channels (step K); columns of [K, C] (step 1) */
            st = rewrite(ctx, e, g, w, f, gr->c, transposed ? 1 : g->values[w].dims[1], 0);
        }
    }
    if (st == PTQ_OK)
        st = ptq_onnx_edit_write(ctx, e, out_path);
    free(f);
    ptq_onnx_edit_free(e);
    return st;
}
