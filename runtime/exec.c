/* The executor: runs a graph's nodes in topological order through a
 * backend, falling back to the host for nodes the device declines, moving
 * tensors between host and device only when a consumer needs them there,
 * recycling buffers once their last consumer ran, and calling the tap on
 * every produced tensor. Covered by tests/test_exec.c,
 * tests/onnx_conformance.c and tests/cuda_exec.c. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ptq/runtime.h"
#include "runtime/backend.h"

/* Freed buffers of one backend, reused best-fit by the next allocation. */
typedef struct buf_pool {
    ptq_backend *b;
    int n, cap;
    void **ptr;
    size_t *bytes;
} buf_pool;

/* One graph value during a run: its shape and where copies of it live. */
typedef struct slot {
    ptq_tensor meta;    /* dtype and shape; data unused */
    void *host;         /* host copy or NULL */
    void *dev;          /* device copy or NULL */
    size_t host_cap, dev_cap;
    int host_borrowed;  /* host points at caller or graph data: never released */
    int refs_total;     /* consumers per run (node inputs, +1 for a graph output) */
    int refs;           /* consumers left in this run */
    int is_const;       /* initializer or constant: host copy borrowed, device copy kept across runs */
    int is_output;
} slot;

struct ptq_exec {
    const ptq_graph *g;
    ptq_exec_params p;
    ptq_backend *host;  /* "cpu" or "ref" */
    ptq_backend *dev;   /* "cuda" or NULL */
    buf_pool host_pool, dev_pool;
    slot *slots;        /* [g->n_values] */
    int n_fallback;
    double *node_s;     /* [g->n_nodes] seconds spent in each node's kernels, summed over runs */
    char device_name[160];
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static ptq_status pool_get(ptq_ctx *ctx, buf_pool *pl, size_t n_bytes, void **out, size_t *cap)
{
    int best = -1;
    for (int i = 0; i < pl->n; i++)
        if (pl->bytes[i] >= n_bytes && (best < 0 || pl->bytes[i] < pl->bytes[best]))
            best = i;
    if (best >= 0 && pl->bytes[best] <= 2 * n_bytes + 4096) {
        *out = pl->ptr[best];
        *cap = pl->bytes[best];
        pl->n--;
        pl->ptr[best] = pl->ptr[pl->n];
        pl->bytes[best] = pl->bytes[pl->n];
        return PTQ_OK;
    }
    *cap = n_bytes;
    return pl->b->alloc(pl->b, ctx, n_bytes, out);
}

static void pool_put(buf_pool *pl, void *p, size_t cap)
{
    if (!p)
        return;
    if (pl->n == pl->cap) {
        int cap_new = pl->cap ? 2 * pl->cap : 64;
        void **ptr = realloc(pl->ptr, (size_t)cap_new * sizeof *ptr);
        size_t *bytes = ptr ? realloc(pl->bytes, (size_t)cap_new * sizeof *bytes) : NULL;
        if (ptr)
            pl->ptr = ptr;
        if (!bytes) {
            pl->b->release(pl->b, p); /* cannot keep it: give it back */
            return;
        }
        pl->bytes = bytes;
        pl->cap = cap_new;
    }
    pl->ptr[pl->n] = p;
    pl->bytes[pl->n] = cap;
    pl->n++;
}

static void pool_clear(buf_pool *pl)
{
    for (int i = 0; i < pl->n; i++)
        pl->b->release(pl->b, pl->ptr[i]);
    free(pl->ptr);
    free(pl->bytes);
    memset(pl, 0, sizeof *pl);
}

static ptq_tensor slot_view(const slot *s, ptq_mem mem)
{
    ptq_tensor t = s->meta;
    t.mem = mem;
    t.data = mem == PTQ_MEM_HOST ? s->host : s->dev;
    t.cap_bytes = mem == PTQ_MEM_HOST ? s->host_cap : s->dev_cap;
    return t;
}

static void slot_release(ptq_exec *e, slot *s)
{
    if (s->is_const)
        return;
    if (s->host && !s->host_borrowed)
        pool_put(&e->host_pool, s->host, s->host_cap);
    if (s->dev)
        pool_put(&e->dev_pool, s->dev, s->dev_cap);
    s->host = s->dev = NULL;
    s->host_cap = s->dev_cap = 0;
    s->host_borrowed = 0;
}

static ptq_status slot_alloc(ptq_ctx *ctx, ptq_exec *e, slot *s, ptq_mem mem)
{
    size_t n_bytes = ptq_tensor_bytes(&s->meta);
    if (mem == PTQ_MEM_HOST)
        return pool_get(ctx, &e->host_pool, n_bytes, &s->host, &s->host_cap);
    return pool_get(ctx, &e->dev_pool, n_bytes, &s->dev, &s->dev_cap);
}

/* Makes sure a copy of s exists in mem, copying from the other side. */
static ptq_status slot_ensure(ptq_ctx *ctx, ptq_exec *e, slot *s, ptq_mem mem)
{
    ptq_status st = PTQ_OK;
    size_t n_bytes = ptq_tensor_bytes(&s->meta);
    if (mem == PTQ_MEM_HOST && !s->host) {
        PTQ_TRY(st, slot_alloc(ctx, e, s, PTQ_MEM_HOST), done);
        PTQ_TRY(st, e->dev->download(e->dev, ctx, s->host, s->dev, n_bytes), done);
    } else if (mem == PTQ_MEM_CUDA && !s->dev) {
        if (s->is_const) { /* kept across runs: allocated outside the recycling pool */
            s->dev_cap = n_bytes;
            PTQ_TRY(st, e->dev->alloc(e->dev, ctx, n_bytes, &s->dev), done);
        } else {
            PTQ_TRY(st, slot_alloc(ctx, e, s, PTQ_MEM_CUDA), done);
        }
        PTQ_TRY(st, e->dev->upload(e->dev, ctx, s->dev, s->host, n_bytes), done);
    }
done:
    return st;
}

static ptq_status check_node(ptq_ctx *ctx, const ptq_graph *g, const ptq_node *n)
{
    const char *domain = n->domain && n->domain[0] ? n->domain : "ai.onnx";
    const ptq_op_def *op = ptq_op_find(n->domain, n->op_type);
    if (!op)
        return ptq_fail(ctx, PTQ_ERR_UNSUPPORTED, "node '%s': op %s (domain %s, opset %lld) is not supported by ptq",
                        n->name, n->op_type, domain, (long long)g->opset);
    if (g->opset > 0 && g->opset < op->since_opset)
        return ptq_fail(ctx, PTQ_ERR_UNSUPPORTED,
                        "node '%s': op %s (domain %s) at opset %lld is older than ptq implements (opset %d+)",
                        n->name, n->op_type, domain, (long long)g->opset, op->since_opset);
    return PTQ_OK;
}

ptq_status ptq_graph_check_supported(ptq_ctx *ctx, const ptq_graph *g)
{
    for (int i = 0; i < g->n_nodes; i++) {
        ptq_status st = check_node(ctx, g, &g->nodes[i]);
        if (st != PTQ_OK)
            return st;
    }
    return PTQ_OK;
}

ptq_status ptq_exec_create(ptq_ctx *ctx, const ptq_graph *g, const ptq_exec_params *p, ptq_exec **out)
{
    ptq_status st = PTQ_OK;
    *out = NULL;
    PTQ_TRY(st, ptq_graph_check_supported(ctx, g), fail_early);
    ptq_exec *e = calloc(1, sizeof *e);
    if (!e)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory creating the executor");
    e->g = g;
    e->p = *p;
    e->slots = calloc((size_t)(g->n_values ? g->n_values : 1), sizeof *e->slots);
    e->node_s = calloc((size_t)(g->n_nodes ? g->n_nodes : 1), sizeof *e->node_s);
    if (!e->slots || !e->node_s) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory creating the executor");
        goto fail;
    }
    PTQ_TRY(st, ptq_backend_cpu_create(ctx, p->device == PTQ_DEVICE_REF, &e->host), fail);
    e->host_pool.b = e->host;
    if (p->device == PTQ_DEVICE_CUDA) {
        PTQ_TRY(st, ptq_backend_cuda_create(ctx, p->cuda_device, &e->dev), fail);
        e->dev_pool.b = e->dev;
        snprintf(e->device_name, sizeof e->device_name, "%s", e->dev->name);
    } else {
        snprintf(e->device_name, sizeof e->device_name, "%s", e->host->name);
    }
    for (int v = 0; v < g->n_values; v++) {
        const ptq_value *val = &g->values[v];
        slot *s = &e->slots[v];
        s->meta.dtype = val->dtype;
        s->meta.ndim = val->ndim < 0 ? 0 : val->ndim;
        memcpy(s->meta.dims, val->dims, sizeof s->meta.dims);
        if (val->flags & (PTQ_VALUE_INITIALIZER | PTQ_VALUE_CONSTANT)) {
            s->is_const = 1;
            s->host = (void *)val->data; /* read-only: ops never write their inputs */
            s->host_cap = val->n_bytes;
            s->host_borrowed = 1;
        }
    }
    for (int k = 0; k < g->n_nodes; k++)
        for (int i = 0; i < g->nodes[k].n_inputs; i++)
            if (g->nodes[k].inputs[i] >= 0)
                e->slots[g->nodes[k].inputs[i]].refs_total++;
    for (int i = 0; i < g->n_outputs; i++) {
        e->slots[g->outputs[i]].refs_total++;
        e->slots[g->outputs[i]].is_output = 1;
    }
    *out = e;
    return PTQ_OK;
fail:
    ptq_exec_free(e);
fail_early:
    return st;
}

static ptq_status bind_input(ptq_ctx *ctx, ptq_exec *e, int idx, const ptq_tensor *t)
{
    const ptq_value *v = &e->g->values[e->g->inputs[idx]];
    slot *s = &e->slots[e->g->inputs[idx]];
    int ok = t->mem == PTQ_MEM_HOST && (v->dtype == PTQ_DT_UNDEFINED || v->dtype == t->dtype);
    if (v->ndim >= 0 && v->ndim != t->ndim)
        ok = 0;
    for (int d = 0; ok && v->ndim >= 0 && d < v->ndim; d++)
        if (v->dims[d] >= 0 && v->dims[d] != t->dims[d])
            ok = 0;
    if (!ok) {
        char want[96], got[96];
        return ptq_fail(ctx, PTQ_ERR_SHAPE, "input '%s': the model expects %s [%s], got %s [%s]", v->name,
                        ptq_dtype_name(v->dtype), ptq_dims_str(v->dims, v->ndim, want, sizeof want),
                        ptq_dtype_name(t->dtype), ptq_dims_str(t->dims, t->ndim, got, sizeof got));
    }
    s->meta = *t;
    s->meta.data = NULL;
    s->host = t->data;
    s->host_cap = ptq_tensor_bytes(t);
    s->host_borrowed = 1;
    return PTQ_OK;
}

static ptq_status run_node(ptq_ctx *ctx, ptq_exec *e, int k)
{
    ptq_status st = PTQ_OK;
    const ptq_graph *g = e->g;
    const ptq_node *n = &g->nodes[k];
    const ptq_op_def *op = ptq_op_find(n->domain, n->op_type);
    ptq_tensor in[PTQ_OP_MAX_IO], outs[PTQ_OP_MAX_IO];
    ptq_backend *b = e->host;
    ptq_op_io io;
    memset(&io, 0, sizeof io);
    memset(outs, 0, sizeof outs);
    if (n->n_inputs > PTQ_OP_MAX_IO || n->n_outputs > PTQ_OP_MAX_IO)
        return ptq_fail(ctx, PTQ_ERR_UNSUPPORTED, "node '%s' (%s): more than %d inputs or outputs", n->name,
                        n->op_type, PTQ_OP_MAX_IO);
    io.graph = g;
    io.node = n;
    io.n_in = n->n_inputs;
    io.n_out = n->n_outputs;
    /* inputs as they are now; shape-carrying ones on the host for infer */
    for (int i = 0; i < n->n_inputs; i++) {
        if (n->inputs[i] < 0)
            continue;
        slot *s = &e->slots[n->inputs[i]];
        if ((op->host_inputs >> i) & 1u) {
            if (e->dev)
                PTQ_TRY(st, slot_ensure(ctx, e, s, PTQ_MEM_HOST), done);
            in[i] = slot_view(s, PTQ_MEM_HOST);
        } else {
            in[i] = slot_view(s, s->host ? PTQ_MEM_HOST : PTQ_MEM_CUDA);
        }
        io.in[i] = &in[i];
    }
    for (int i = 0; i < n->n_outputs; i++)
        io.out[i] = n->outputs[i] >= 0 ? &outs[i] : NULL;
    /* infer writes into outs even for omitted outputs; give it scratch */
    for (int i = 0; i < n->n_outputs; i++)
        if (!io.out[i])
            io.out[i] = &outs[i];
    PTQ_TRY(st, op->infer(ctx, &io), done);

    if (e->dev && e->dev->supports(e->dev, &io))
        b = e->dev;
    if (e->dev && b == e->host)
        e->n_fallback++;
    for (int i = 0; i < n->n_inputs; i++) {
        if (n->inputs[i] < 0 || ((op->host_inputs >> i) & 1u))
            continue;
        slot *s = &e->slots[n->inputs[i]];
        PTQ_TRY(st, slot_ensure(ctx, e, s, b->mem), done);
        in[i] = slot_view(s, b->mem);
    }
    for (int i = 0; i < n->n_outputs; i++) {
        int v = n->outputs[i];
        slot s_tmp;
        slot *s = v >= 0 ? &e->slots[v] : &s_tmp;
        if (v < 0)
            memset(&s_tmp, 0, sizeof s_tmp);
        slot_release(e, s);
        s->meta = outs[i];
        s->meta.data = NULL;
        PTQ_TRY(st, slot_alloc(ctx, e, s, b->mem), done);
        outs[i] = slot_view(s, b->mem); /* an omitted output still gets room to be written */
    }
    double t0 = now_s();
    st = b->run(b, ctx, &io);
    if (st == PTQ_OK && e->p.profile) /* device work is asynchronous: wait for it to time it */
        st = b->sync(b, ctx);
    e->node_s[k] += now_s() - t0;
    if (st != PTQ_OK)
        goto done;
    if (e->p.tap)
        for (int i = 0; i < n->n_outputs; i++)
            if (n->outputs[i] >= 0)
                PTQ_TRY(st, e->p.tap(e->p.tap_user, ctx, g, k, n->outputs[i], &outs[i]), done);
    for (int i = 0; i < n->n_inputs; i++) {
        if (n->inputs[i] < 0)
            continue;
        slot *s = &e->slots[n->inputs[i]];
        if (--s->refs == 0)
            slot_release(e, s);
    }
    for (int i = 0; i < n->n_outputs; i++)
        if (n->outputs[i] >= 0 && e->slots[n->outputs[i]].refs_total == 0)
            slot_release(e, &e->slots[n->outputs[i]]);
done:
    /* scratch buffers of omitted outputs, on every path */
    for (int i = 0; i < n->n_outputs; i++)
        if (n->outputs[i] < 0 && outs[i].data)
            pool_put(b == e->dev ? &e->dev_pool : &e->host_pool, outs[i].data, outs[i].cap_bytes);
    return st;
}

ptq_status ptq_exec_run(ptq_ctx *ctx, ptq_exec *e, const ptq_tensor *inputs, ptq_tensor *outputs)
{
    ptq_status st = PTQ_OK;
    const ptq_graph *g = e->g;
    for (int v = 0; v < g->n_values; v++) {
        slot *s = &e->slots[v];
        slot_release(e, s);
        s->refs = s->refs_total;
    }
    e->n_fallback = 0;
    for (int i = 0; i < g->n_inputs; i++)
        PTQ_TRY(st, bind_input(ctx, e, i, &inputs[i]), done);
    for (int k = 0; k < g->n_nodes; k++)
        PTQ_TRY(st, run_node(ctx, e, k), done);
    for (int i = 0; i < g->n_outputs; i++) {
        slot *s = &e->slots[g->outputs[i]];
        if (!s->host && !s->dev)
            return ptq_fail(ctx, PTQ_ERR_FORMAT, "graph output '%s' was not produced", g->values[g->outputs[i]].name);
        if (e->dev)
            PTQ_TRY(st, slot_ensure(ctx, e, s, PTQ_MEM_HOST), done);
        outputs[i] = slot_view(s, PTQ_MEM_HOST);
    }
    if (e->dev)
        PTQ_TRY(st, e->dev->sync(e->dev, ctx), done);
done:
    return st;
}

const char *ptq_exec_device_name(const ptq_exec *e)
{
    return e->device_name;
}

void ptq_exec_set_tap(ptq_exec *e, ptq_tap_fn tap, void *tap_user)
{
    e->p.tap = tap;
    e->p.tap_user = tap_user;
}

struct ptq_cuda_dev *ptq_exec_cuda_dev(const ptq_exec *e)
{
    return e->dev ? e->dev->cuda : NULL;
}

int ptq_exec_n_fallback_nodes(const ptq_exec *e)
{
    return e->n_fallback;
}

double ptq_exec_node_seconds(const ptq_exec *e, int node_index)
{
    return node_index >= 0 && node_index < e->g->n_nodes ? e->node_s[node_index] : 0.0;
}

void ptq_exec_free(ptq_exec *e)
{
    if (!e)
        return;
    if (e->slots) {
        for (int v = 0; v < e->g->n_values; v++) {
            slot *s = &e->slots[v];
            if (s->is_const && s->dev) { /* kept outside the pools */
                e->dev->release(e->dev, s->dev);
                s->dev = NULL;
            }
            slot_release(e, s);
        }
    }
    if (e->host_pool.b)
        pool_clear(&e->host_pool);
    if (e->dev_pool.b)
        pool_clear(&e->dev_pool);
    ptq_backend_free(e->dev);
    ptq_backend_free(e->host);
    free(e->slots);
    free(e->node_s);
    free(e);
}
