/* The executor: runs a graph's nodes in topological order through a
 * backend, falling back to the host for nodes the device declines, moving
 * tensors between host and device only when a consumer needs them there,
 * applying a quantization overlay (weights substituted, tensors rounded as
 * produced) and calling every tap on every produced tensor. Memory follows
 * tensor liveness: the first run of a batch size records when each buffer
 * lives (on the host it gives each back once its value's last consumer has
 * run, so that run too holds only what is alive), then one arena per memory
 * space holds them all at offsets planned so that no two buffers alive at
 * once overlap, and later runs allocate nothing. Kept values (copies a run
 * leaves behind) let a later run start at any node. Covered by
 * tests/test_exec.c, tests/test_exec_liveness.c, tests/test_runner.c,
 * tests/onnx_conformance.c and tests/cuda_exec.c. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/parallel.h"
#include "kernels/kernels.h"
#include "ptq/dataset.h"
#include "ptq/memory.h"
#include "ptq/runtime.h"
#include "runtime/backend.h"
#include "runtime/layout.h"

enum { MEM_HOST = 0, MEM_DEV = 1, N_MEM = 2 };
#define ARENA_ALIGN ((size_t)256)

/* Freed buffers of one backend, reused best-fit by the next allocation
 * that the memory plan does not cover: on a device, every such buffer (its
 * allocations are slow and synchronous); on the host, only omitted
 * outputs' scratch, since a value's buffer goes back to the system when its
 * last consumer has run, so a first run holds what liveness needs and no
 * more. */
typedef struct buf_pool {
    ptq_backend *b;
    int n, cap;
    void **ptr;
    size_t *bytes;
} buf_pool;

/* When one value's buffer in one memory space lives (steps: 0 binds the
 * inputs, k + 1 runs node k, n_nodes + 1 ends the run), over every run so
 * far, and where the plan puts it. A buffer lives from its first use to its
 * value's last consumer, which does not depend on where a run starts. */
typedef struct live {
    size_t bytes;        /* largest size seen (0: never allocated) */
    int first;           /* earliest step it was allocated at */
    size_t offset;       /* in the arena, when planned */
    size_t planned;      /* bytes the plan reserved (0: not planned) */
    int planned_first;   /* the first step the plan assumed */
} live;

/* One graph value during a run: its shape and where copies of it live. */
typedef struct slot {
    ptq_tensor meta;    /* dtype and shape; data unused */
    void *ptr[N_MEM];   /* host / device copy or NULL */
    size_t cap[N_MEM];
    int from_pool[N_MEM]; /* 1: the copy is outside the plan (slot_drop gives it back) */
    int borrowed[N_MEM];  /* points at caller, graph, overlay or kept data: never released */
    int refs_total;     /* consumers per full run (node inputs, +1 for a graph output) */
    int refs;           /* consumers left in this run */
    int is_const;       /* initializer or constant: host copy borrowed, device copy kept across runs */
    int producer;       /* node index, -1 for graph inputs and constants */
    int death;          /* the step after which no node reads it */
    int heir;           /* the value that took over its buffer (view_source), or -1: the plan keeps that
                           buffer's place until the heir's death */
    int keep;           /* keep a copy after each full run */
    live lv[N_MEM];
    /* the kept copy: in the memory the value was produced in */
    void *kept;
    size_t kept_cap;
    int kept_mem;       /* MEM_HOST or MEM_DEV; valid when kept_valid */
    int kept_valid;
    ptq_tensor kept_meta;
} slot;

/* A device copy of an overlay's replacement weight. */
typedef struct wcopy {
    uint64_t source;
    int value;
    void *dev;
} wcopy;

struct ptq_exec {
    const ptq_graph *g;
    ptq_exec_params p;
    ptq_backend *host;  /* "cpu" or "ref" */
    ptq_backend *dev;   /* "cuda" or NULL */
    ptq_backend *by_mem[N_MEM];
    buf_pool pool[N_MEM];
    const ptq_op_def **ops; /* [g->n_nodes] resolved once */
    slot *slots;        /* [g->n_values] */
    struct exec_tap {
        ptq_tap_fn fn;
        void *user;
        ptq_tap_dev_state_fn dev_state; /* NULL: the tap sees every value through fn */
        int passes; /* ptq_exec_tap_passes: it may see a batch in passes */
        int lanes;  /* ptq_exec_tap_lanes: and passes side by side, from several threads at once */
    } taps[PTQ_EXEC_MAX_TAPS];
    int n_taps;
    int tap_skip; /* a value whose taps run_node leaves to run_observed_chain, or -1 */
    ptq_overlay ov;     /* active when has_ov */
    int has_ov;
    struct { /* ptq_exec_hooks_save */
        struct exec_tap taps[PTQ_EXEC_MAX_TAPS];
        int n_taps;
        ptq_overlay ov;
        int has_ov;
    } saved;
    uint64_t sources[PTQ_EXEC_WEIGHT_SOURCES]; /* weight sources with device copies, most recent first */
    wcopy *wcopies;
    int n_wcopies, cap_wcopies;
    void *arena[N_MEM];
    size_t arena_bytes[N_MEM];
    size_t held_bytes[N_MEM]; /* run buffers held now: the arena, unplanned buffers, the pool */
    size_t peak_bytes[N_MEM]; /* the most held_bytes ever */
    void *u8_dev;       /* device staging for ptq_exec_run_u8's bytes */
    size_t u8_cap;
    int planned;        /* the arenas hold a plan */
    int replan;         /* this run needed something the plan did not cover */
    int step;
    int64_t n_allocs;
    double *vb_1, *vb_per; /* [n_values] bytes at batch 1 and per further sample, or NULL (dim 0 is the batch) */
    int n_fallback;
    double *node_s;     /* [g->n_nodes] seconds spent in each node's kernels, summed over runs */
    double *node_tap_s; /* [g->n_nodes] seconds in the taps of each node's outputs (with params.profile) */
    double round_s, tap_s; /* with params.profile: seconds in the plan's rounding and in the taps, summed */
    /* Conv -> Add -> Relu chains run as one kernel (run_epilogue), per Conv node k:
     * epi_add[k] / epi_relu[k] the Add and Relu (or, on the host, Clip) nodes (-1: none), epi_z[k] the Add's other
     * input, epi_lo[k] / epi_hi[k] the clamp of the Relu ([0, +Inf]) or Clip, [-Inf, +Inf] without either */
    int *epi_add, *epi_relu, *epi_z;
    float *epi_lo, *epi_hi;
    unsigned char *ran_early; /* [g->n_nodes] 1: already run in an earlier node's epilogue this run */
    /* Exact GELUs as exporters write them, where the backend has the fused kernel: for the Div node k of
     * Div(x, c) -> Erf -> Add(c) -> Mul(x) -> Mul(c), gelu[4k..4k+3] the Erf, Add and the two Mul nodes ([4k] -1:
     * none) and gelu_c[3k..3k+2] the three scalar constants (find_gelus; PTQ_FUSE_GELU=0: none) */
    int *gelu;
    float *gelu_c;
    int64_t n_gelu; /* GELUs run by run_gelu */
    /* MatMul(x, W) -> Add(bias) as one GEMM with the bias in its epilogue, where the backend has it: for MatMul
     * node k, bias_add[k] the Add (-1: none) and bias_v[k] its bias value (find_biases; PTQ_FUSE_BIAS=0: none) */
    int *bias_add, *bias_v;
    int64_t n_bias; /* run so by run_matmul_bias */
    int64_t n_epilogue;       /* chains run so */
    int64_t n_observed_chain; /* chains run by run_observed_chain */
    int64_t n_observed_bias, n_observed_gelu; /* run by run_observed_bias, run_observed_gelu */
    int view_alias;           /* 0 under PTQ_VIEW_ALIAS=0 (read at create): view ops always copy */
    int64_t n_view_handover;  /* buffers handed from a view op's input to its output (view_source) */
    ptq_op_frame frame;       /* run_node's views, grown to the largest node */
    unsigned char *nhwc;      /* [g->n_values] 1: stored channels last on the device (plan_layout) */
    int64_t n_nhwc;
    int64_t pass_rows;        /* ptq_exec_set_pass_rows: samples per pass of a longer batch on the CPU, 0: whole */
    int64_t n_passes;         /* passes run so, over e's life */
    ptq_tensor *pass_in, *pass_out; /* [g->n_inputs], [g->n_outputs]: one pass's views */
    void **pass_buf;          /* [g->n_outputs]: the whole batch's outputs, put together from the passes */
    size_t *pass_cap;
    int pass_auto;            /* ptq_exec_set_pass_auto: passes the session chose, on several threads side by side only */
    ptq_exec **lanes;         /* [n_lanes]: executors of their own that run passes beside e (run_lanes); [0] unused */
    int n_lanes;
    int pass_threads;         /* ptq_exec_pass_threads */
    /* ptq_exec_pass_choice: with passes the session chose (pass_auto) on several threads, the first runs of one
     * batch size time whole batches and passes side by side in turn (TRIAL_RUNS), and the faster is kept; the same
     * bytes either way */
    int trial_runs;           /* runs of the trial so far (TRIAL_RUNS: decided) */
    int64_t trial_n;          /* their batch size */
    double trial_s[2];        /* seconds a sample, the best timed run: [0] whole, [1] side by side */
    int trial_pick;           /* 0 undecided, 1 whole, 2 side by side */
    size_t freed_lanes_peak[N_MEM]; /* the peak bytes of lanes freed since (ptq_exec_peak_bytes counts them) */
    int64_t freed_lanes_allocs;
    char device_name[160];
};


uint64_t ptq_overlay_new_id(void)
{
    static atomic_uint_fast64_t next = 1;
    return (uint64_t)atomic_fetch_add(&next, 1);
}

static int mem_index(ptq_mem m)
{
    return m == PTQ_MEM_HOST ? MEM_HOST : MEM_DEV;
}

static ptq_status backend_alloc(ptq_ctx *ctx, ptq_exec *e, int m, size_t n_bytes, void **out)
{
    e->n_allocs++;
    return e->by_mem[m]->alloc(e->by_mem[m], ctx, n_bytes, out);
}

/* A run buffer of n_bytes in memory m, for ptq_exec_peak_bytes. */
static void held_add(ptq_exec *e, int m, size_t n_bytes)
{
    e->held_bytes[m] += n_bytes;
    if (e->held_bytes[m] > e->peak_bytes[m])
        e->peak_bytes[m] = e->held_bytes[m];
}

/* Gives run buffer p (cap bytes, memory m) back to the system. */
static void held_release(ptq_exec *e, int m, void *p, size_t cap)
{
    e->by_mem[m]->release(e->by_mem[m], p);
    e->held_bytes[m] -= cap;
}

static ptq_status pool_get(ptq_ctx *ctx, ptq_exec *e, int m, size_t n_bytes, void **out, size_t *cap)
{
    buf_pool *pl = &e->pool[m];
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
    PTQ_TRY_RET(backend_alloc(ctx, e, m, n_bytes, out));
    held_add(e, m, n_bytes);
    return PTQ_OK;
}

static void pool_put(ptq_exec *e, int m, void *p, size_t cap)
{
    buf_pool *pl = &e->pool[m];
    if (!p)
        return;
    if (pl->n == pl->cap) {
        int cap_new = pl->cap ? 2 * pl->cap : 64;
        void **ptr = realloc(pl->ptr, (size_t)cap_new * sizeof *ptr);
        size_t *bytes = ptr ? realloc(pl->bytes, (size_t)cap_new * sizeof *bytes) : NULL;
        if (ptr)
            pl->ptr = ptr;
        if (!bytes) {
            held_release(e, m, p, cap); /* cannot keep it: give it back */
            return;
        }
        pl->bytes = bytes;
        pl->cap = cap_new;
    }
    pl->ptr[pl->n] = p;
    pl->bytes[pl->n] = cap;
    pl->n++;
}

static void pool_clear(ptq_exec *e, int m)
{
    buf_pool *pl = &e->pool[m];
    for (int i = 0; i < pl->n; i++)
        held_release(e, m, pl->ptr[i], pl->bytes[i]);
    free(pl->ptr);
    free(pl->bytes);
    pl->ptr = NULL;
    pl->bytes = NULL;
    pl->n = pl->cap = 0;
}

static ptq_tensor slot_view(const slot *s, int m)
{
    ptq_tensor t = s->meta;
    t.mem = m == MEM_HOST ? PTQ_MEM_HOST : PTQ_MEM_CUDA;
    t.data = s->ptr[m];
    t.cap_bytes = s->cap[m];
    return t;
}

/* Drops s's copy in memory m: an unplanned one back to the system (host)
 * or the pool (device), nothing for arena, borrowed and constant data. */
static void slot_drop(ptq_exec *e, slot *s, int m)
{
    if (!s->ptr[m])
        return;
    if (s->from_pool[m] && m == MEM_HOST)
        held_release(e, m, s->ptr[m], s->cap[m]);
    else if (s->from_pool[m])
        pool_put(e, m, s->ptr[m], s->cap[m]);
    s->ptr[m] = NULL;
    s->cap[m] = 0;
    s->from_pool[m] = s->borrowed[m] = 0;
}

static void slot_release(ptq_exec *e, slot *s)
{
    if (s->is_const)
        return;
    for (int m = 0; m < N_MEM; m++)
        slot_drop(e, s, m);
}

/* Room for s in memory m: its planned place in the arena when the plan
 * covers it, else a pooled buffer (and a new plan after this run). */
static ptq_status slot_alloc(ptq_ctx *ctx, ptq_exec *e, slot *s, int m)
{
    size_t n_bytes = ptq_tensor_bytes(&s->meta);
    live *lv = &s->lv[m];
    if (lv->bytes == 0 || e->step < lv->first)
        lv->first = e->step;
    if (n_bytes > lv->bytes)
        lv->bytes = n_bytes;
    if (e->planned && lv->planned >= n_bytes && lv->planned > 0 && e->step >= lv->planned_first) {
        s->ptr[m] = (char *)e->arena[m] + lv->offset;
        s->cap[m] = lv->planned;
        s->from_pool[m] = 0;
        return PTQ_OK;
    }
    e->replan = 1;
    s->from_pool[m] = 1;
    /* recorded as a pooled buffer, its lifetime still counts for the plan */
    return pool_get(ctx, e, m, n_bytes, &s->ptr[m], &s->cap[m]);
}

/* Marks source as used now; the copies of a source pushed out of the
 * recent list are released. */
static void touch_source(ptq_exec *e, uint64_t source)
{
    int at = 0;
    while (at < PTQ_EXEC_WEIGHT_SOURCES - 1 && e->sources[at] != source)
        at++;
    const uint64_t dropped = e->sources[at] == source ? 0 : e->sources[at];
    memmove(&e->sources[1], &e->sources[0], (size_t)at * sizeof e->sources[0]);
    e->sources[0] = source;
    if (!dropped)
        return;
    int w = 0;
    for (int i = 0; i < e->n_wcopies; i++) {
        if (e->wcopies[i].source == dropped)
            e->dev->release(e->dev, e->wcopies[i].dev);
        else
            e->wcopies[w++] = e->wcopies[i];
    }
    e->n_wcopies = w;
}

/* The device copy of overlay weight v (host data w from source), uploaded on first use. */
static ptq_status overlay_weight_dev(ptq_ctx *ctx, ptq_exec *e, int v, const float *w, uint64_t source,
                                     size_t n_bytes, void **out)
{
    if (e->sources[0] != source)
        touch_source(e, source);
    for (int i = 0; i < e->n_wcopies; i++)
        if (e->wcopies[i].source == source && e->wcopies[i].value == v) {
            *out = e->wcopies[i].dev;
            return PTQ_OK;
        }
    if (e->n_wcopies == e->cap_wcopies) {
        int cap_new = e->cap_wcopies ? 2 * e->cap_wcopies : 32;
        wcopy *wc = realloc(e->wcopies, (size_t)cap_new * sizeof *wc);
        if (!wc)
            return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for overlay weight copies");
        e->wcopies = wc;
        e->cap_wcopies = cap_new;
    }
    void *d = NULL;
    PTQ_TRY_RET(backend_alloc(ctx, e, MEM_DEV, n_bytes, &d));
    ptq_status st = e->dev->upload(e->dev, ctx, d, w, n_bytes);
    if (st != PTQ_OK) {
        e->dev->release(e->dev, d);
        return st;
    }
    e->wcopies[e->n_wcopies++] = (wcopy){source, v, d};
    *out = d;
    return PTQ_OK;
}

/* A constant's view in memory m: the overlay's replacement when it has one. */
static ptq_status const_view(ptq_ctx *ctx, ptq_exec *e, int v, int m, ptq_tensor *t)
{
    slot *s = &e->slots[v];
    uint64_t source = 0;
    const float *w = e->has_ov && e->ov.weight ? e->ov.weight(e->ov.user, v, &source) : NULL;
    size_t n_bytes = ptq_tensor_bytes(&s->meta);
    if (w) {
        if (s->meta.dtype != PTQ_DT_FLOAT)
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "the overlay replaces '%s', which is %s, not float32",
                            e->g->values[v].name, ptq_dtype_name(s->meta.dtype));
        *t = slot_view(s, m);
        t->cap_bytes = n_bytes;
        if (m == MEM_HOST)
            t->data = (void *)w;
        else
            PTQ_TRY_RET(overlay_weight_dev(ctx, e, v, w, source, n_bytes, &t->data));
        return PTQ_OK;
    }
    if (!s->ptr[m]) { /* device copy, kept across runs outside the plan */
        s->cap[m] = n_bytes;
        PTQ_TRY_RET(backend_alloc(ctx, e, m, n_bytes, &s->ptr[m]));
        PTQ_TRY_RET(e->dev->upload(e->dev, ctx, s->ptr[m], s->ptr[MEM_HOST], n_bytes));
    }
    *t = slot_view(s, m);
    return PTQ_OK;
}

/* Makes sure a copy of s exists in memory m, copying from the other side. */
static ptq_status slot_ensure(ptq_ctx *ctx, ptq_exec *e, slot *s, int m)
{
    if (s->ptr[m])
        return PTQ_OK;
    if (m == MEM_HOST && e->nhwc && e->nhwc[s - e->slots]) /* plan_layout keeps these off the host */
        return ptq_fail(ctx, PTQ_ERR_INTERNAL, "'%s' is stored channels last on the GPU and cannot be read on the host; "
                        "PTQ_NHWC=0 keeps every tensor [N, C, H, W]", e->g->values[s - e->slots].name);
    size_t n_bytes = ptq_tensor_bytes(&s->meta);
    PTQ_TRY_RET(slot_alloc(ctx, e, s, m));
    if (m == MEM_HOST)
        return e->dev->download(e->dev, ctx, s->ptr[MEM_HOST], s->ptr[MEM_DEV], n_bytes);
    return e->dev->upload(e->dev, ctx, s->ptr[MEM_DEV], s->ptr[MEM_HOST], n_bytes);
}

/* Input i of a node as a view in memory m (constants through the overlay). */
static ptq_status input_view(ptq_ctx *ctx, ptq_exec *e, int v, int m, ptq_tensor *t)
{
    slot *s = &e->slots[v];
    if (s->is_const)
        return const_view(ctx, e, v, m, t);
    if (e->dev)
        PTQ_TRY_RET(slot_ensure(ctx, e, s, m));
    *t = slot_view(s, m);
    return PTQ_OK;
}

/* Every node names the outputs ptq needs (ptq_node_has_output). */
static ptq_status check_outputs(ptq_ctx *ctx, const ptq_graph *g)
{
    for (int k = 0; k < g->n_nodes; k++) {
        const ptq_node *n = &g->nodes[k];
        if (!ptq_node_has_output(n))
            return ptq_fail(ctx, PTQ_ERR_FORMAT, "node '%s' (%s) has no output", n->name, n->op_type);
    }
    return PTQ_OK;
}

ptq_status ptq_graph_check_supported(ptq_ctx *ctx, const ptq_graph *g)
{
    const ptq_op_def **ops = NULL;
    ptq_status st = ptq_op_resolve(ctx, g, &ops);
    free(ops);
    return st == PTQ_OK ? check_outputs(ctx, g) : st;
}

static ptq_status find_epilogues(ptq_ctx *ctx, ptq_exec *e);
static ptq_status plan_layout(ptq_ctx *ctx, ptq_exec *e);

ptq_status ptq_exec_create(ptq_ctx *ctx, const ptq_graph *g, const ptq_exec_params *p, ptq_exec **out)
{
    ptq_status st = PTQ_OK;
    *out = NULL;
    const ptq_op_def **ops = NULL;
    if (p->device < PTQ_DEVICE_CPU || p->device > PTQ_DEVICE_CUDA)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "executor parameters: device %d is not a ptq_device", (int)p->device);
    if (p->math < PTQ_MATH_FP32 || p->math > PTQ_MATH_FP64)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "executor parameters: math %d is not a ptq_math", (int)p->math);
    PTQ_TRY(st, ptq_op_resolve(ctx, g, &ops), fail_early);
    if ((st = check_outputs(ctx, g)) != PTQ_OK) {
        free(ops);
        return st;
    }
    ptq_exec *e = calloc(1, sizeof *e);
    if (!e) {
        free(ops);
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory creating the executor");
    }
    e->ops = ops;
    e->g = g;
    e->p = *p;
    e->p.tap = NULL;
    e->tap_skip = -1;
    e->slots = calloc((size_t)(g->n_values ? g->n_values : 1), sizeof *e->slots);
    e->node_s = calloc(2 * (size_t)(g->n_nodes ? g->n_nodes : 1), sizeof *e->node_s);
    e->node_tap_s = e->node_s ? e->node_s + (g->n_nodes ? g->n_nodes : 1) : NULL;
    if (!e->slots || !e->node_s) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory creating the executor");
        goto fail;
    }
    PTQ_TRY(st, ptq_backend_cpu_create(ctx, p->device == PTQ_DEVICE_REF, &e->host), fail);
    e->pool[MEM_HOST].b = e->by_mem[MEM_HOST] = e->host;
    if (p->device == PTQ_DEVICE_CUDA) {
        PTQ_TRY(st, ptq_backend_cuda_create(ctx, p->cuda_device, &e->dev), fail);
        ptq_backend_cuda_set_math(e->dev, p->math);
        e->pool[MEM_DEV].b = e->by_mem[MEM_DEV] = e->dev;
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
        s->producer = -1;
        if (val->flags & PTQ_VALUE_HAS_DATA) {
            s->is_const = 1;
            s->ptr[MEM_HOST] = (void *)val->data; /* read-only: ops never write their inputs */
            s->cap[MEM_HOST] = val->n_bytes;
            s->borrowed[MEM_HOST] = 1;
        }
    }
    for (int k = 0; k < g->n_nodes; k++) {
        for (int i = 0; i < g->nodes[k].n_inputs; i++)
            if (g->nodes[k].inputs[i] >= 0)
                e->slots[g->nodes[k].inputs[i]].refs_total++;
        for (int i = 0; i < g->nodes[k].n_outputs; i++)
            if (g->nodes[k].outputs[i] >= 0)
                e->slots[g->nodes[k].outputs[i]].producer = k;
    }
    for (int i = 0; i < g->n_outputs; i++)
        e->slots[g->outputs[i]].refs_total++;
    for (int v = 0; v < g->n_values; v++) {
        e->slots[v].death = e->slots[v].producer + 1;
        e->slots[v].heir = -1;
    }
    const char *view_env = getenv("PTQ_VIEW_ALIAS");
    e->view_alias = !(view_env && view_env[0] == '0');
    for (int k = 0; k < g->n_nodes; k++)
        for (int i = 0; i < g->nodes[k].n_inputs; i++)
            if (g->nodes[k].inputs[i] >= 0 && e->slots[g->nodes[k].inputs[i]].death < k + 1)
                e->slots[g->nodes[k].inputs[i]].death = k + 1;
    for (int i = 0; i < g->n_outputs; i++)
        e->slots[g->outputs[i]].death = g->n_nodes + 1;
    PTQ_TRY(st, find_epilogues(ctx, e), fail);
    PTQ_TRY(st, plan_layout(ctx, e), fail);
    if (p->tap)
        PTQ_TRY(st, ptq_exec_add_tap(ctx, e, p->tap, p->tap_user), fail);
    *out = e;
    return PTQ_OK;
fail:
    ptq_exec_free(e);
fail_early:
    return st;
}

/* The only node reading value v (from the graph's own consumers), or -1
 * when another node or the graph's outputs read it too. */
static int sole_consumer(const ptq_exec *e, const int *consumer, int v)
{
    return v >= 0 && e->slots[v].refs_total == 1 && !e->slots[v].is_const ? consumer[v] : -1;
}

static int node_is(const ptq_exec *e, int k, ptq_op_id id)
{
    return k >= 0 && e->ops[k]->traits->id == id;
}

/* The value holding v's constant data: v itself when it is an initializer or constant, the tensor of the Constant
 * node making it (that node runs each time, but its value is known now), else -1. */
static int constant_source(const ptq_exec *e, int v)
{
    if (v < 0 || e->slots[v].is_const)
        return v;
    const int p = e->slots[v].producer;
    const ptq_attr *a = node_is(e, p, PTQ_OP_CONSTANT) ? ptq_node_attr(&e->g->nodes[p], "value") : NULL;
    return a && a->type == PTQ_ATTR_TENSOR && a->tensor >= 0 ? a->tensor : -1;
}

/* Clip node c's bounds when the plan knows them, as the Clip node takes them (ptq_op_unary_params): from its
 * attributes before opset 11; after, each bound omitted, a constant, or the value of a Constant node that c alone
 * reads (run_epilogue skips that node with the Clip). 0 when a bound is known only at run time. */
static int clip_bounds_known(const ptq_exec *e, const int *consumer, int c, float *lo, float *hi)
{
    const ptq_graph *g = e->g;
    const ptq_node *n = &g->nodes[c];
    ptq_tensor x, bound[2];
    memset(&x, 0, sizeof x);
    x.dtype = PTQ_DT_FLOAT; /* the Conv's output */
    const ptq_tensor *in[3] = {&x, NULL, NULL};
    for (int i = 1; i < 3 && i < n->n_inputs; i++) {
        int v = n->inputs[i];
        if (v < 0)
            continue;
        const int src = constant_source(e, v);
        if (src < 0 || (src != v && sole_consumer(e, consumer, v) != c))
            return 0;
        v = src;
        bound[i - 1] = slot_view(&e->slots[v], MEM_HOST);
        if (!bound[i - 1].data)
            return 0;
        in[i] = &bound[i - 1];
    }
    ptq_op_io io;
    memset(&io, 0, sizeof io);
    io.graph = g;
    io.node = n;
    io.op = e->ops[c];
    io.in = in;
    io.n_in = n->n_inputs < 3 ? n->n_inputs : 3;
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_unop op;
    return ptq_op_unary_params(&ctx, &io, &op, lo, hi) == PTQ_OK;
}

/* The Conv -> [Add] -> [Relu] chains of e's graph that a device may run in
 * one kernel: the Conv has a bias and one output read only by the Add (whose
 * other input comes from before the Conv, so it exists when the Conv runs)
 * or the Relu; the Add's output is read only by the Relu. PTQ_EPILOGUE=0
 * finds none. */
/* v is a float constant of one element (an initializer or a Constant node's value): *c its value. */
static int scalar_const(const ptq_exec *e, int v, float *c)
{
    v = constant_source(e, v);
    const ptq_value *val = v >= 0 ? &e->g->values[v] : NULL;
    if (!val || !e->slots[v].is_const || val->dtype != PTQ_DT_FLOAT || !val->data || val->n_bytes != sizeof(float) ||
        val->ndim > 1) /* rank 0 or [1]: broadcasting it keeps the other operand's shape (x's rank is at least 1) */
        return 0;
    memcpy(c, val->data, sizeof *c);
    return 1;
}

/* The input of binary node k other than v, or -1 when k does not read v once as one of two inputs. */
static int other_input(const ptq_exec *e, int k, int v)
{
    const ptq_node *n = k >= 0 ? &e->g->nodes[k] : NULL;
    if (!n || n->n_inputs != 2 || n->n_outputs != 1 || (n->inputs[0] == v) == (n->inputs[1] == v))
        return -1;
    return n->inputs[0] == v ? n->inputs[1] : n->inputs[0];
}

/* Exact GELUs (e->gelu): where the executor's backend has the fused kernel (the CPU's and the GPU's; not the
 * reference's), Div(x, c1) whose output only an Erf reads, the Erf's only by Add(c2) (either order), the Add's
 * only by Mul with x, that Mul's only by Mul(c3). c1, c2, c3: float scalars, initializers or Constant nodes. */
static ptq_status find_gelus(ptq_ctx *ctx, ptq_exec *e, const int *consumer)
{
    const ptq_graph *g = e->g;
    e->gelu = malloc(((size_t)g->n_nodes + 1) * 4 * sizeof *e->gelu);
    e->gelu_c = malloc(((size_t)g->n_nodes + 1) * 3 * sizeof *e->gelu_c);
    if (!e->gelu || !e->gelu_c)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory creating the executor");
    const char *off = getenv("PTQ_FUSE_GELU");
    for (int k = 0; k < g->n_nodes; k++) {
        int *f = &e->gelu[4 * k];
        float *c = &e->gelu_c[3 * k];
        f[0] = -1;
        const ptq_node *n = &g->nodes[k];
        const ptq_backend *bk = e->dev ? e->dev : e->host;
        if (!bk->erf_gelu || (off && strcmp(off, "0") == 0) || !node_is(e, k, PTQ_OP_DIV) ||
            n->n_inputs != 2 || n->n_outputs != 1 || n->inputs[0] < 0 || e->slots[n->inputs[0]].is_const ||
            !scalar_const(e, n->inputs[1], &c[0]))
            continue;
        const int x = n->inputs[0];
        const int erf = sole_consumer(e, consumer, n->outputs[0]);
        if (!node_is(e, erf, PTQ_OP_ERF) || g->nodes[erf].n_outputs != 1)
            continue;
        const int add = sole_consumer(e, consumer, g->nodes[erf].outputs[0]);
        if (!node_is(e, add, PTQ_OP_ADD) || !scalar_const(e, other_input(e, add, g->nodes[erf].outputs[0]), &c[1]))
            continue;
        const int mul = sole_consumer(e, consumer, g->nodes[add].outputs[0]);
        if (!node_is(e, mul, PTQ_OP_MUL) || other_input(e, mul, g->nodes[add].outputs[0]) != x)
            continue;
        const int half = sole_consumer(e, consumer, g->nodes[mul].outputs[0]);
        if (!node_is(e, half, PTQ_OP_MUL) || !scalar_const(e, other_input(e, half, g->nodes[mul].outputs[0]), &c[2]))
            continue;
        f[0] = erf, f[1] = add, f[2] = mul, f[3] = half;
    }
    return PTQ_OK;
}

/* MatMul(x, W) with W a constant [K, N] matrix whose output only Add(bias) reads (either order), the bias a float
 * constant of N elements along its last dim and of no higher rank than the product: the Add then adds a row to
 * every row of the product, and the backend's matmul_bias (the GPU's) can do it in the GEMM's epilogue. */
static ptq_status find_biases(ptq_ctx *ctx, ptq_exec *e, const int *consumer)
{
    const ptq_graph *g = e->g;
    e->bias_add = malloc(((size_t)g->n_nodes + 1) * sizeof *e->bias_add);
    e->bias_v = malloc(((size_t)g->n_nodes + 1) * sizeof *e->bias_v);
    if (!e->bias_add || !e->bias_v)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory creating the executor");
    const char *off = getenv("PTQ_FUSE_BIAS");
    const ptq_backend *bk = e->dev ? e->dev : e->host;
    for (int k = 0; k < g->n_nodes; k++) {
        e->bias_add[k] = e->bias_v[k] = -1;
        const ptq_node *n = &g->nodes[k];
        if (!bk->matmul_bias || (off && strcmp(off, "0") == 0) || !node_is(e, k, PTQ_OP_MATMUL) ||
            n->n_inputs != 2 || n->n_outputs != 1 || n->inputs[0] < 0 || n->inputs[1] < 0 ||
            e->slots[n->inputs[0]].is_const || !e->slots[n->inputs[1]].is_const)
            continue;
        const ptq_value *w = &e->g->values[n->inputs[1]];
        const int add = sole_consumer(e, consumer, n->outputs[0]);
        const int b = other_input(e, add, n->outputs[0]);
        if (w->ndim != 2 || w->dtype != PTQ_DT_FLOAT || !node_is(e, add, PTQ_OP_ADD) || b < 0 ||
            !e->slots[b].is_const)
            continue;
        const ptq_value *bv = &e->g->values[b];
        if (bv->dtype != PTQ_DT_FLOAT || bv->ndim < 1 || bv->dims[bv->ndim - 1] != w->dims[1] ||
            bv->n_bytes != (size_t)w->dims[1] * sizeof(float) || !bv->data)
            continue;
        e->bias_add[k] = add;
        e->bias_v[k] = b;
    }
    return PTQ_OK;
}

static ptq_status find_epilogues(ptq_ctx *ctx, ptq_exec *e)
{
    const ptq_graph *g = e->g;
    const size_t nn = (size_t)g->n_nodes + 1;
    e->epi_add = malloc(nn * sizeof *e->epi_add);
    e->epi_relu = malloc(nn * sizeof *e->epi_relu);
    e->epi_z = malloc(nn * sizeof *e->epi_z);
    e->epi_lo = malloc(nn * sizeof *e->epi_lo);
    e->epi_hi = malloc(nn * sizeof *e->epi_hi);
    e->ran_early = calloc(nn, 1);
    int *consumer = malloc(((size_t)g->n_values + 1) * sizeof *consumer);
    if (!e->epi_add || !e->epi_relu || !e->epi_z || !e->epi_lo || !e->epi_hi || !e->ran_early || !consumer) {
        free(consumer);
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory creating the executor");
    }
    for (int v = 0; v < g->n_values; v++)
        consumer[v] = -1;
    for (int k = 0; k < g->n_nodes; k++) {
        e->epi_add[k] = e->epi_relu[k] = e->epi_z[k] = -1;
        e->epi_lo[k] = -INFINITY;
        e->epi_hi[k] = INFINITY;
        for (int i = 0; i < g->nodes[k].n_inputs; i++)
            if (g->nodes[k].inputs[i] >= 0)
                consumer[g->nodes[k].inputs[i]] = k;
    }
    const char *off = getenv("PTQ_EPILOGUE");
    for (int k = 0; k < g->n_nodes && !(off && strcmp(off, "0") == 0); k++) {
        const ptq_node *n = &g->nodes[k];
        if (!node_is(e, k, PTQ_OP_CONV) || n->n_inputs < 3 || n->inputs[2] < 0 || n->n_outputs != 1)
            continue;
        int next = sole_consumer(e, consumer, n->outputs[0]);
        if (node_is(e, next, PTQ_OP_ADD) && g->nodes[next].n_inputs == 2 && g->nodes[next].n_outputs == 1) {
            const ptq_node *add = &g->nodes[next];
            const int z = add->inputs[0] == n->outputs[0] ? add->inputs[1] : add->inputs[0];
            if (z < 0 || z == n->outputs[0] || e->slots[z].is_const || e->slots[z].producer >= k)
                continue;
            e->epi_add[k] = next;
            e->epi_z[k] = z;
            next = sole_consumer(e, consumer, add->outputs[0]);
        }
        if (node_is(e, next, PTQ_OP_RELU) && g->nodes[next].n_outputs == 1) {
            e->epi_relu[k] = next;
            e->epi_lo[k] = 0.0f;
        } else if (!e->dev && node_is(e, next, PTQ_OP_CLIP) && g->nodes[next].n_outputs == 1 &&
                   clip_bounds_known(e, consumer, next, &e->epi_lo[k], &e->epi_hi[k])) {
            e->epi_relu[k] = next; /* on the host only: the device's observe_chain takes a Relu */
        }
    }
    ptq_status st = find_gelus(ctx, e, consumer);
    if (st == PTQ_OK)
        st = find_biases(ctx, e, consumer);
    free(consumer);
    return st;
}

/* Which activations run channels last (runtime/layout.h): on a GPU whose
 * convolutions run through cuDNN in TF32, where its tensor-core kernels
 * take that layout (PTQ_NHWC=0: none; PTQ_NHWC=1: in FP32 too; never under
 * FP64 sums, which do not go through cuDNN). */
static ptq_status plan_layout(ptq_ctx *ctx, ptq_exec *e)
{
    const char *env = getenv("PTQ_NHWC");
    const int asked = env && strcmp(env, "1") == 0, off = env && strcmp(env, "0") == 0;
    if (!e->dev || off || !(asked || e->p.math == PTQ_MATH_TF32) || e->p.math == PTQ_MATH_FP64 ||
        !ptq_backend_cuda_has_cudnn(e->dev))
        return PTQ_OK;
    e->nhwc = calloc((size_t)e->g->n_values + 1, 1);
    if (!e->nhwc)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory creating the executor");
    e->n_nhwc = ptq_layout_nhwc(e->g, e->ops, e->nhwc);
    return PTQ_OK;
}

/* io's channels-last masks from the layout plan. */
static void set_layouts(const ptq_exec *e, ptq_op_io *io)
{
    io->nhwc_in = io->nhwc_out = 0;
    if (!e->nhwc)
        return;
    for (int i = 0; i < io->n_in && i < 32; i++)
        if (io->node->inputs[i] >= 0 && e->nhwc[io->node->inputs[i]])
            io->nhwc_in |= 1u << i;
    for (int i = 0; i < io->n_out && i < 32; i++)
        if (io->node->outputs[i] >= 0 && e->nhwc[io->node->outputs[i]])
            io->nhwc_out |= 1u << i;
}

static ptq_status apply_round(ptq_ctx *ctx, ptq_exec *e, int v, ptq_tensor *t)
{
    if (!e->has_ov || !e->ov.round || !e->ov.rounds || !e->ov.rounds[v])
        return PTQ_OK;
    return e->ov.round(e->ov.user, ctx, e, v, t);
}

static ptq_status bind_kept(ptq_ctx *ctx, ptq_exec *e, int v);

/* t (host memory) fits graph input v's declared dtype and dims. */
static ptq_status check_input(ptq_ctx *ctx, const ptq_value *v, const ptq_tensor *t)
{
    if (t->ndim < 0 || t->ndim > PTQ_MAX_DIMS)
        return ptq_fail(ctx, PTQ_ERR_SHAPE, "input '%s': rank %d is not in [0, %d]", v->name, t->ndim, PTQ_MAX_DIMS);
    for (int d = 0; d < t->ndim; d++) /* a symbolic model dim takes any size, but no negative one */
        if (t->dims[d] < 0)
            return ptq_fail(ctx, PTQ_ERR_SHAPE, "input '%s': dim %d is %lld, negative", v->name, d,
                            (long long)t->dims[d]);
    if (t->mem != PTQ_MEM_HOST)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "input '%s': the executor takes host tensors, got one in %s memory",
                        v->name, t->mem == PTQ_MEM_CUDA ? "CUDA" : "unknown");
    int ok = v->dtype == PTQ_DT_UNDEFINED || v->dtype == t->dtype;
    if (v->ndim >= 0 && v->ndim != t->ndim)
        ok = 0;
    for (int d = 0; ok && v->ndim >= 0 && d < v->ndim; d++)
        if (v->dims[d] >= 0 && v->dims[d] != t->dims[d])
            ok = 0;
    if (ok)
        return PTQ_OK;
    char want[96], got[96];
    return ptq_fail(ctx, PTQ_ERR_SHAPE, "input '%s': the model expects %s [%s], got %s [%s]", v->name,
                    ptq_dtype_name(v->dtype), ptq_dims_str(v->dims, v->ndim, want, sizeof want),
                    ptq_dtype_name(t->dtype), ptq_dims_str(t->dims, t->ndim, got, sizeof got));
}

/* Graph input idx from t (caller's data, or NULL: the kept copy). An input
 * the overlay rounds is copied first, so the source is never written. */
static ptq_status bind_input(ptq_ctx *ctx, ptq_exec *e, int idx, const ptq_tensor *t)
{
    const int vi = e->g->inputs[idx];
    const ptq_value *v = &e->g->values[vi];
    slot *s = &e->slots[vi];
    ptq_tensor kept;
    if (!t) {
        if (!s->kept_valid)
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "graph input '%s' was not kept by the last run", v->name);
        if (s->kept_mem == MEM_DEV) { /* normalized on the device by ptq_exec_run_u8 */
            if (!(e->has_ov && e->ov.rounds && e->ov.rounds[vi]))
                return bind_kept(ctx, e, vi);
            s->meta = s->kept_meta;
            PTQ_TRY_RET(slot_alloc(ctx, e, s, MEM_DEV));
            PTQ_TRY_RET(e->dev->copy(e->dev, ctx, s->ptr[MEM_DEV], s->kept, ptq_tensor_bytes(&s->meta)));
            ptq_tensor view = slot_view(s, MEM_DEV);
            return apply_round(ctx, e, vi, &view);
        }
        kept = s->kept_meta;
        kept.data = s->kept;
        t = &kept;
    }
    PTQ_TRY_RET(check_input(ctx, v, t));
    s->meta = *t;
    s->meta.data = NULL;
    if (e->has_ov && e->ov.rounds && e->ov.rounds[vi]) {
        PTQ_TRY_RET(slot_alloc(ctx, e, s, MEM_HOST));
        memcpy(s->ptr[MEM_HOST], t->data, ptq_tensor_bytes(t));
        ptq_tensor view = slot_view(s, MEM_HOST);
        return apply_round(ctx, e, vi, &view);
    }
    s->ptr[MEM_HOST] = t->data;
    s->cap[MEM_HOST] = ptq_tensor_bytes(t);
    s->borrowed[MEM_HOST] = 1;
    return PTQ_OK;
}

/* A copy of tensor t (value s, in memory m) for run_from. */
static ptq_status keep_copy(ptq_ctx *ctx, ptq_exec *e, slot *s, const ptq_tensor *t, int m)
{
    size_t n_bytes = ptq_tensor_bytes(t);
    if (s->kept && (s->kept_mem != m || s->kept_cap < n_bytes)) {
        e->by_mem[s->kept_mem]->release(e->by_mem[s->kept_mem], s->kept);
        s->kept = NULL;
    }
    if (!s->kept) {
        PTQ_TRY_RET(backend_alloc(ctx, e, m, n_bytes ? n_bytes : 1, &s->kept));
        s->kept_cap = n_bytes;
        s->kept_mem = m;
    }
    PTQ_TRY_RET(e->by_mem[m]->copy(e->by_mem[m], ctx, s->kept, t->data, n_bytes));
    s->kept_meta = *t;
    s->kept_meta.data = NULL;
    s->kept_valid = 1;
    return PTQ_OK;
}

/* Points value v (produced before the run's first node) at its kept copy. */
static ptq_status bind_kept(ptq_ctx *ctx, ptq_exec *e, int v)
{
    slot *s = &e->slots[v];
    if (!s->kept_valid)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "value '%s' is needed but the last full run did not keep it",
                        e->g->values[v].name);
    s->meta = s->kept_meta;
    s->ptr[s->kept_mem] = s->kept;
    s->cap[s->kept_mem] = s->kept_cap;
    s->borrowed[s->kept_mem] = 1;
    return PTQ_OK;
}

/* With params.profile: adds the seconds since *t0 to *sum once the device
 * has done what was queued, and restarts *t0. */
static ptq_status profile_split(ptq_ctx *ctx, ptq_exec *e, double *t0, double *sum)
{
    if (!e->p.profile)
        return PTQ_OK;
    if (e->dev)
        PTQ_TRY_RET(e->dev->sync(e->dev, ctx));
    const double now = ptq_clock_s();
    *sum += now - *t0;
    *t0 = now;
    return PTQ_OK;
}

/* An output whose size follows from the data (a Range limit, an Expand
 * shape read from an input) is held to the memory limit before its
 * buffer is taken on the host; dims past size_t saturate and are refused too. */
static ptq_status output_fits(ptq_ctx *ctx, const ptq_exec *e, const ptq_node *n, int i, const ptq_tensor *y)
{
    char dims[96], what[512];
    const int v = n->outputs[i];
    snprintf(what, sizeof what, "node '%s' (%s): output '%s' (%s %s)", n->name, n->op_type,
             v >= 0 ? e->g->values[v].name : "(omitted)", ptq_dtype_name(y->dtype),
             ptq_dims_str(y->dims, y->ndim, dims, sizeof dims));
    return ptq_memory_check(ctx, (uint64_t)ptq_tensor_bytes(y), what);
}

/* Whether view ops may hand buffers over in memory m: on the GPU, or on the CPU of an executor without one (heir
 * is one per value). */
static int hands_over(const ptq_exec *e, int m)
{
    return m == MEM_DEV || !e->dev;
}

/* The input value whose buffer in memory m node k's output 0 may take over instead of a copy, or -1: node k is a
 * Reshape, Flatten, Squeeze, Unsqueeze or Identity run by that memory's backend (its output is its input's bytes;
 * hands_over), the last reader of an input that is computed (no constant, no caller's data), not kept, and as
 * large. The plan must know of the takeover (heir) unless the buffer is outside it; a new one waits for the next
 * plan. */
static int view_source(ptq_exec *e, int k, int m, const ptq_tensor *out0)
{
    const ptq_node *n = &e->g->nodes[k];
    if (!e->view_alias || !hands_over(e, m) || n->n_inputs < 1 || n->n_outputs < 1 || n->inputs[0] < 0 ||
        n->outputs[0] < 0)
        return -1;
    if (!node_is(e, k, PTQ_OP_RESHAPE) && !node_is(e, k, PTQ_OP_FLATTEN) && !node_is(e, k, PTQ_OP_SQUEEZE) &&
        !node_is(e, k, PTQ_OP_UNSQUEEZE) && !node_is(e, k, PTQ_OP_IDENTITY))
        return -1;
    const int v = n->inputs[0];
    slot *in = &e->slots[v];
    if (in->is_const || in->keep || in->refs != 1 || !in->ptr[m] || in->borrowed[m] ||
        ptq_tensor_bytes(&in->meta) != ptq_tensor_bytes(out0) || in->cap[m] < ptq_tensor_bytes(out0))
        return -1;
    if (in->heir != n->outputs[0]) {
        in->heir = n->outputs[0];
        if (!in->from_pool[m]) { /* in the arena, whose plan did not know: copy this run, plan again */
            e->replan = 1;
            return -1;
        }
    }
    return v;
}

static ptq_status run_node(ptq_ctx *ctx, ptq_exec *e, int k)
{
    ptq_status st = PTQ_OK;
    const ptq_graph *g = e->g;
    const ptq_node *n = &g->nodes[k];
    const ptq_op_def *op = e->ops[k];
    ptq_backend *b = e->host;
    int m = MEM_HOST;
    PTQ_TRY_RET(ptq_op_frame_reserve(ctx, &e->frame, n->n_inputs, n->n_outputs));
    ptq_tensor *in = e->frame.in_views, *outs = e->frame.out_views;
    ptq_op_io io = e->frame.io;
    e->step = k + 1;
    io.graph = g;
    io.node = n;
    io.op = op;
    /* inputs as they are now; shape-carrying ones on the host for infer */
    for (int i = 0; i < n->n_inputs; i++) {
        const int v = n->inputs[i];
        if (v < 0)
            continue;
        slot *s = &e->slots[v];
        if (ptq_op_host_input(op, i))
            PTQ_TRY(st, input_view(ctx, e, v, MEM_HOST, &in[i]), done);
        else
            in[i] = slot_view(s, s->ptr[MEM_HOST] ? MEM_HOST : MEM_DEV);
        io.in[i] = &in[i];
    }
    /* infer writes into outs even for omitted outputs */
    PTQ_TRY(st, op->infer(ctx, &io), done);
    set_layouts(e, &io);

    /* the overlay computes it instead of the op, on the host */
    const int by_overlay = e->has_ov && e->ov.run && e->ov.runs && e->ov.runs[k];
    if (e->dev && !by_overlay && e->dev->supports(e->dev, &io))
        b = e->dev;
    if (b == e->host && (io.nhwc_in || io.nhwc_out)) {
        st = ptq_fail(ctx, PTQ_ERR_UNSUPPORTED, "node '%s' (%s) reads or writes a channels-last tensor but the %s; "
                      "PTQ_NHWC=0 keeps every tensor [N, C, H, W]", n->name, n->op_type,
                      by_overlay ? "quantization overlay computes it on the host" : "GPU declined it");
        goto done;
    }
    if (e->dev && b == e->host && !by_overlay)
        e->n_fallback++;
    m = mem_index(b->mem);
    for (int i = 0; i < n->n_inputs; i++)
        if (n->inputs[i] >= 0 && !ptq_op_host_input(op, i) && !ptq_op_meta_input(op, i))
            PTQ_TRY(st, input_view(ctx, e, n->inputs[i], m, &in[i]), done);
    for (int i = 0; m == MEM_HOST && i < n->n_outputs; i++)
        PTQ_TRY(st, output_fits(ctx, e, n, i, &outs[i]), done);
    const int from = !by_overlay ? view_source(e, k, m, &outs[0]) : -1;
    for (int i = 0; i < n->n_outputs; i++) {
        const int v = n->outputs[i];
        if (v < 0) { /* an omitted output still gets room to be written */
            PTQ_TRY(st, pool_get(ctx, e, m, ptq_tensor_bytes(&outs[i]), &outs[i].data, &outs[i].cap_bytes), done);
            outs[i].mem = b->mem;
            continue;
        }
        slot *s = &e->slots[v];
        slot_release(e, s);
        s->meta = outs[i];
        s->meta.data = NULL;
        if (i == 0 && from >= 0) { /* the input's buffer, handed over: the copy below finds source = destination */
            slot *src = &e->slots[from];
            s->ptr[m] = src->ptr[m];
            s->cap[m] = src->cap[m];
            s->from_pool[m] = src->from_pool[m];
            src->ptr[m] = NULL;
            src->cap[m] = 0;
            src->from_pool[m] = 0; /* in[0] still points at the bytes, under the input's dims */
            e->n_view_handover++;
        } else {
            PTQ_TRY(st, slot_alloc(ctx, e, s, m), done);
        }
        outs[i] = slot_view(s, m);
    }
    double t0 = ptq_clock_s();
    st = by_overlay ? e->ov.run(e->ov.user, ctx, k, io.in, io.n_in, io.out, io.n_out) : b->run(b, ctx, &io);
    if (st == PTQ_OK && e->p.profile) /* device work is asynchronous: wait for it to time it */
        st = b->sync(b, ctx);
    const double t1 = ptq_clock_s();
    e->node_s[k] += t1 - t0;
    t0 = t1;
    if (st != PTQ_OK)
        goto done;
    for (int i = 0; i < n->n_outputs; i++) {
        if (n->outputs[i] < 0)
            continue;
        PTQ_TRY(st, apply_round(ctx, e, n->outputs[i], &outs[i]), done);
        PTQ_TRY(st, profile_split(ctx, e, &t0, &e->round_s), done);
        for (int t = 0; t < e->n_taps && n->outputs[i] != e->tap_skip; t++)
            PTQ_TRY(st, e->taps[t].fn(e->taps[t].user, ctx, g, k, n->outputs[i], &outs[i]), done);
        const double tap_before = e->tap_s;
        PTQ_TRY(st, profile_split(ctx, e, &t0, &e->tap_s), done);
        e->node_tap_s[k] += e->tap_s - tap_before;
    }
    for (int i = 0; i < n->n_inputs; i++) {
        if (n->inputs[i] < 0)
            continue;
        slot *s = &e->slots[n->inputs[i]];
        if (--s->refs == 0)
            slot_release(e, s);
    }
    for (int i = 0; i < n->n_outputs; i++)
        if (n->outputs[i] >= 0 && e->slots[n->outputs[i]].refs == 0)
            slot_release(e, &e->slots[n->outputs[i]]);
done:
    /* scratch buffers of omitted outputs, on every path */
    for (int i = 0; i < n->n_outputs; i++)
        if (n->outputs[i] < 0 && outs[i].data)
            pool_put(e, m, outs[i].data, outs[i].cap_bytes);
    return st;
}

/* Sizes of the arena of memory m from the recorded lifetimes: each buffer,
 * largest first, goes to the lowest offset where it overlaps no buffer
 * placed before it whose lifetime meets its own. */
/* The step after which value v's buffer in memory m is free: its own death, or where buffers are handed over its
 * heirs' (a Reshape that took the buffer over lives on in it). */
static int plan_death(const ptq_exec *e, int v, int m)
{
    int death = e->slots[v].death;
    for (int h = e->slots[v].heir, guard = 0; hands_over(e, m) && h >= 0 && guard < e->g->n_values;
         h = e->slots[h].heir, guard++)
        death = e->slots[h].death > death ? e->slots[h].death : death;
    return death;
}

static ptq_status plan_memory(ptq_ctx *ctx, ptq_exec *e, int m)
{
    const ptq_graph *g = e->g;
    int *order = malloc(((size_t)g->n_values + 1) * sizeof *order);
    int *placed = malloc(((size_t)g->n_values + 1) * sizeof *placed);
    if (!order || !placed) {
        free(order);
        free(placed);
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory planning tensor memory");
    }
    int n = 0, n_placed = 0;
    for (int v = 0; v < g->n_values; v++) {
        live *lv = &e->slots[v].lv[m];
        lv->planned = 0;
        if (lv->bytes > 0 && !e->slots[v].is_const)
            order[n++] = v;
    }
    for (int i = 1; i < n; i++) { /* insertion sort by size, largest first; ties by value index */
        int v = order[i], j = i;
        while (j > 0 && e->slots[order[j - 1]].lv[m].bytes < e->slots[v].lv[m].bytes)
            order[j] = order[j - 1], j--;
        order[j] = v;
    }
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        live *lv = &e->slots[order[i]].lv[m];
        const int death = plan_death(e, order[i], m);
        size_t need = (lv->bytes + ARENA_ALIGN - 1) & ~(ARENA_ALIGN - 1), offset = 0;
        for (int moved = 1; moved;) { /* first fit among the placed buffers alive at the same time */
            moved = 0;
            for (int j = 0; j < n_placed; j++) {
                const live *o = &e->slots[placed[j]].lv[m];
                if (o->first > death || lv->first > plan_death(e, placed[j], m))
                    continue;
                if (offset < o->offset + o->planned && o->offset < offset + need) {
                    offset = o->offset + o->planned;
                    moved = 1;
                }
            }
        }
        lv->offset = offset;
        lv->planned = need;
        lv->planned_first = lv->first;
        placed[n_placed++] = order[i];
        if (offset + need > total)
            total = offset + need;
    }
    free(order);
    free(placed);
    if (e->arena[m]) {
        held_release(e, m, e->arena[m], e->arena_bytes[m]);
        e->arena[m] = NULL;
    }
    e->arena_bytes[m] = 0;
    if (total) {
        PTQ_TRY_RET(backend_alloc(ctx, e, m, total, &e->arena[m]));
        e->arena_bytes[m] = total;
        held_add(e, m, total);
    }
    return PTQ_OK;
}

/* Before the run after one that allocated outside the plan (the outputs it
 * returned live until then): a new plan covering what it needed; the pooled
 * buffers go back to the system. */
static ptq_status replan(ptq_ctx *ctx, ptq_exec *e)
{
    if (!e->replan)
        return PTQ_OK;
    for (int m = 0; m < N_MEM; m++) {
        if (!e->by_mem[m])
            continue;
        pool_clear(e, m);
        PTQ_TRY_RET(plan_memory(ctx, e, m));
    }
    e->planned = 1;
    e->replan = 0;
    return PTQ_OK;
}

/* Whether value v is wanted as it is between fused nodes: kept, or rounded by the plan. */
static int value_needed(const ptq_exec *e, int v)
{
    return e->slots[v].keep || (e->has_ov && e->ov.rounds && e->ov.rounds[v]);
}

/* Whether the overlay computes node k itself. */
static int node_overridden(const ptq_exec *e, int k)
{
    return e->has_ov && e->ov.runs && e->ov.runs[k];
}

/* The values of chain k kept or rounded between its nodes: the Conv's
 * output, and the Add's when a Relu follows (the chain's output y may be). */
static int chain_between_needed(const ptq_exec *e, int k)
{
    const ptq_graph *g = e->g;
    const int j = e->epi_add[k], r = e->epi_relu[k];
    const int between[2] = {g->nodes[k].outputs[0], j >= 0 && r >= 0 ? g->nodes[j].outputs[0] : -1};
    for (int i = 0; i < 2; i++)
        if (between[i] >= 0 && value_needed(e, between[i]))
            return 1;
    return 0;
}

/* Chain k's Add and Relu have run with its Conv: the residual's read is
 * counted and the two nodes are marked run. */
static void chain_ran(ptq_exec *e, int k)
{
    const int z = e->epi_z[k];
    if (z >= 0 && --e->slots[z].refs == 0)
        slot_release(e, &e->slots[z]);
    if (e->epi_add[k] >= 0)
        e->ran_early[e->epi_add[k]] = 1;
    const int r = e->epi_relu[k];
    if (r >= 0)
        e->ran_early[r] = 1;
    if (r >= 0 && node_is(e, r, PTQ_OP_CLIP)) /* its bounds' Constant nodes: skipped if still to come */
        for (int i = 1; i < 3 && i < e->g->nodes[r].n_inputs; i++) {
            const int v = e->g->nodes[r].inputs[i];
            if (v < 0 || e->slots[v].is_const)
                continue;
            if (e->slots[v].producer > k)
                e->ran_early[e->slots[v].producer] = 1;
            else if (--e->slots[v].refs == 0)
                slot_release(e, &e->slots[v]);
        }
}

/* A fused run's view of one-output node k: its first n_in inputs (at most 3) in memory mem, its output's meta as the
 * op infers it (no data yet), the layouts set. f is used in place (io points into it). *have = 0 when an input is
 * absent. */
typedef struct fused_io {
    ptq_tensor in[3], out;
    const ptq_tensor *in_ptr[3];
    ptq_tensor *out_ptr[1];
    ptq_op_io io;
} fused_io;

static ptq_status fused_io_make(ptq_ctx *ctx, ptq_exec *e, int k, int n_in, int mem, fused_io *f, int *have)
{
    const ptq_node *n = &e->g->nodes[k];
    memset(f, 0, sizeof *f);
    *have = 0;
    f->out_ptr[0] = &f->out;
    f->io.in = f->in_ptr;
    f->io.out = f->out_ptr;
    f->io.graph = e->g;
    f->io.node = n;
    f->io.op = e->ops[k];
    f->io.n_in = n_in;
    f->io.n_out = 1;
    e->step = k + 1;
    for (int i = 0; i < n_in; i++) {
        if (n->inputs[i] < 0)
            return PTQ_OK;
        PTQ_TRY_RET(input_view(ctx, e, n->inputs[i], mem, &f->in[i]));
        f->in_ptr[i] = &f->in[i];
    }
    PTQ_TRY_RET(f->io.op->infer(ctx, &f->io));
    set_layouts(e, &f->io);
    *have = 1;
    return PTQ_OK;
}

/* Value y's buffer made anew in memory mem with like's meta: *out views it (out may be like). */
static ptq_status output_like(ptq_ctx *ctx, ptq_exec *e, int y, const ptq_tensor *like, int mem, ptq_tensor *out)
{
    slot *ys = &e->slots[y];
    slot_release(e, ys);
    ys->meta = *like;
    ys->meta.data = NULL;
    PTQ_TRY_RET(slot_alloc(ctx, e, ys, mem));
    *out = slot_view(ys, mem);
    return PTQ_OK;
}

/* After node k's fused kernel (status st, begun at t0): its time counted; when it failed or declined (done 0) y is
 * released and st returned; else y rounded as the plan says and k's inputs read once. */
static ptq_status fused_done(ptq_ctx *ctx, ptq_exec *e, fused_io *f, int k, int y, ptq_status st, int done,
                             double t0)
{
    ptq_backend *bk = e->dev ? e->dev : e->host;
    if (st == PTQ_OK && done && e->p.profile)
        st = bk->sync(bk, ctx);
    e->node_s[k] += ptq_clock_s() - t0;
    if (st != PTQ_OK || !done) {
        slot_release(e, &e->slots[y]);
        return st;
    }
    PTQ_TRY_RET(apply_round(ctx, e, y, &f->out));
    const ptq_node *n = &e->g->nodes[k];
    for (int i = 0; i < n->n_inputs; i++) {
        slot *s = n->inputs[i] >= 0 ? &e->slots[n->inputs[i]] : NULL;
        if (s && --s->refs == 0)
            slot_release(e, s);
    }
    return PTQ_OK;
}

/* Conv node k with its chain's Add and Relu (find_epilogues) as one kernel
 * of the device, or of the host's cpu backend when there is no device, when
 * nothing needs the values between them this run (no taps, no rounding, no
 * kept copies) and the residual is in that backend's memory: *done = 1 and
 * the Add and Relu are marked run. Else *done = 0 and nothing changed but
 * the device copies of the Conv's inputs. */
static ptq_status run_epilogue(ptq_ctx *ctx, ptq_exec *e, int k, int *done)
{
    const ptq_graph *g = e->g;
    const ptq_node *n = &g->nodes[k];
    const int j = e->epi_add[k], r = e->epi_relu[k], z = e->epi_z[k];
    const int clip = node_is(e, r, PTQ_OP_CLIP);
    ptq_backend *bk = e->dev ? e->dev : e->host;
    const int mem = e->dev ? MEM_DEV : MEM_HOST;
    *done = 0;
    if ((j < 0 && r < 0) || !bk->conv_epilogue || e->n_taps > 0)
        return PTQ_OK;
    for (int i = 1; clip && i < 3 && i < g->nodes[r].n_inputs; i++)
        if (g->nodes[r].inputs[i] >= 0 && e->slots[g->nodes[r].inputs[i]].keep)
            return PTQ_OK; /* a bound's value is wanted: its Constant node runs */
    const int y = g->nodes[r >= 0 ? r : j].outputs[0];
    if (chain_between_needed(e, k) || e->slots[y].keep || (z >= 0 && !e->slots[z].ptr[mem]))
        return PTQ_OK;
    fused_io f;
    int have = 0;
    PTQ_TRY_RET(fused_io_make(ctx, e, k, n->n_inputs < 3 ? n->n_inputs : 3, mem, &f, &have));
    ptq_tensor zv, out = f.out;
    if (!have || !bk->supports(bk, &f.io) || out.dtype != PTQ_DT_FLOAT)
        return PTQ_OK;
    if (z >= 0) {
        zv = slot_view(&e->slots[z], mem);
        if (zv.dtype != PTQ_DT_FLOAT || zv.ndim != out.ndim ||
            memcmp(zv.dims, out.dims, (size_t)out.ndim * sizeof out.dims[0]))
            return PTQ_OK; /* a broadcasting Add runs apart */
    }
    PTQ_TRY_RET(output_like(ctx, e, y, &f.out, mem, &f.out));
    const double t0 = ptq_clock_s();
    ptq_status st = bk->conv_epilogue(bk, ctx, &f.io, z >= 0 ? &zv : NULL, e->epi_lo[k], e->epi_hi[k], done);
    PTQ_TRY_RET(fused_done(ctx, e, &f, k, y, st, *done, t0));
    if (!*done)
        return PTQ_OK;
    chain_ran(e, k);
    e->n_epilogue++;
    return PTQ_OK;
}

/* The device observers the one tap (ptq_exec_tap_dev_state) would feed values vals[0..n-1] (-1: none) of numel
 * elements each from: states[i] (NULL: not looked at) and their bin count; *fits = 0 when the tap must see one
 * itself or the bin counts differ. */
static ptq_status tap_states(ptq_ctx *ctx, ptq_exec *e, const int *vals, int n, int64_t numel, void **states,
                             int64_t *n_bins, int *fits)
{
    *n_bins = 0;
    for (int i = 0; i < n; i++) {
        int64_t nb = 0;
        states[i] = NULL;
        if (vals[i] < 0 || !*fits)
            continue;
        PTQ_TRY_RET(e->taps[0].dev_state(e->taps[0].user, ctx, vals[i], numel, &states[i], &nb));
        if (nb < 0 || (states[i] && *n_bins && nb != *n_bins))
            *fits = 0;
        if (states[i])
            *n_bins = nb;
    }
    return PTQ_OK;
}

/* Whether the executor's one tap offers its device observers (ptq_exec_tap_dev_state) to a device that can be fed
 * in fused passes. */
static int taps_on_device(const ptq_exec *e)
{
    return e->dev && e->n_taps == 1 && e->taps[0].dev_state;
}

/* Node k run as run_node runs it but for the tap call on its output c, left to the fused pass that follows: *cv
 * views c where it was made, *on_dev = 1 where that is device floats. */
static ptq_status run_untapped(ptq_ctx *ctx, ptq_exec *e, int k, int c, ptq_tensor *cv, int *on_dev)
{
    e->tap_skip = c;
    ptq_status st = run_node(ctx, e, k);
    e->tap_skip = -1;
    if (st != PTQ_OK)
        return st;
    slot *cs = &e->slots[c];
    *cv = slot_view(cs, cs->ptr[MEM_DEV] ? MEM_DEV : MEM_HOST);
    *on_dev = cs->ptr[MEM_DEV] && cv->dtype == PTQ_DT_FLOAT;
    return PTQ_OK;
}

/* Calibration's form of run_epilogue: the one tap observes on the device
 * (ptq_exec_tap_dev_state) and nothing else needs the values between the
 * nodes of chain k. The Conv runs as its own node into its output c (its
 * tap call left out), then one device pass makes the Add and Relu into the
 * chain's output y and feeds the tap's observers of c, the Add's output and
 * y (backend.observe_chain), the same states the tap would have made, and
 * the Add and Relu are marked run. *done = 1 once the Conv has run (when
 * the chain cannot be fed so, its output tapped as usual and the Add and
 * Relu left to run as nodes); *done = 0 and nothing run otherwise. */
static ptq_status run_observed_chain(ptq_ctx *ctx, ptq_exec *e, int k, int *done)
{
    const ptq_graph *g = e->g;
    const int j = e->epi_add[k], r = e->epi_relu[k], z = e->epi_z[k];
    *done = 0;
    if ((j < 0 && r < 0) || node_is(e, r, PTQ_OP_CLIP) || !taps_on_device(e) || !e->dev->observe_chain ||
        chain_between_needed(e, k))
        return PTQ_OK;
    const int c = g->nodes[k].outputs[0], a = j >= 0 ? g->nodes[j].outputs[0] : -1;
    const int y = g->nodes[r >= 0 ? r : j].outputs[0];
    if (e->slots[y].keep || (z >= 0 && !e->slots[z].ptr[MEM_DEV]))
        return PTQ_OK;
    ptq_tensor cv, zv;
    int fits = 0;
    PTQ_TRY_RET(run_untapped(ctx, e, k, c, &cv, &fits));
    *done = 1;
    slot *cs = &e->slots[c];
    memset(&zv, 0, sizeof zv);
    if (fits && z >= 0) {
        zv = slot_view(&e->slots[z], MEM_DEV);
        fits = zv.dtype == PTQ_DT_FLOAT && zv.ndim == cv.ndim &&
               memcmp(zv.dims, cv.dims, (size_t)cv.ndim * sizeof cv.dims[0]) == 0; /* a broadcasting Add runs apart */
    }
    void *states[3];
    int64_t n_bins = 0;
    const int vals[3] = {c, a, r >= 0 ? y : -1};
    PTQ_TRY_RET(tap_states(ctx, e, vals, 3, ptq_tensor_numel(&cv), states, &n_bins, &fits));
    if (!fits) /* the Conv's output as run_node would have tapped it; the Add and Relu run as nodes */
        return e->taps[0].fn(e->taps[0].user, ctx, g, k, c, &cv);
    ptq_tensor out;
    PTQ_TRY_RET(output_like(ctx, e, y, &cv, MEM_DEV, &out));
    const ptq_node *add = j >= 0 ? &g->nodes[j] : NULL;
    double t0 = ptq_clock_s();
    ptq_status st = e->dev->observe_chain(e->dev, ctx, states, n_bins, cv.data, z >= 0 ? zv.data : NULL,
                               add && add->inputs[0] == z, r >= 0, out.data, ptq_tensor_numel(&cv));
    if (st == PTQ_OK && e->p.profile)
        st = e->dev->sync(e->dev, ctx);
    const double chain_s = ptq_clock_s() - t0;
    e->tap_s += chain_s;
    e->node_tap_s[k] += chain_s;
    if (st != PTQ_OK)
        return st;
    PTQ_TRY_RET(apply_round(ctx, e, y, &out));
    if (--cs->refs == 0)
        slot_release(e, cs);
    chain_ran(e, k);
    e->n_observed_chain++;
    return PTQ_OK;
}

/* The time of a fused observing pass begun at t0 (status st): the observers' time of node k. */
static ptq_status observed_pass_done(ptq_ctx *ctx, ptq_exec *e, int k, ptq_status st, double t0)
{
    if (st == PTQ_OK && e->p.profile)
        st = e->dev->sync(e->dev, ctx);
    const double s = ptq_clock_s() - t0;
    e->tap_s += s;
    e->node_tap_s[k] += s;
    return st;
}

/* Calibration's form of run_matmul_bias: the one tap observes on the device and nothing else needs the product or
 * the sum (neither kept nor rounded, neither node overridden). The MatMul runs as its own node into its product c
 * (its tap call left out), then one device pass adds the bias row into the Add's output y and feeds the tap's
 * observers of c and y (backend.observe_bias), the same states the tap would have made, and the Add is marked run.
 * *done = 1 once the MatMul has run (when the pair cannot be fed so, c tapped as usual and the Add left to run as a
 * node); *done = 0 and nothing run otherwise. */
static ptq_status run_observed_bias(ptq_ctx *ctx, ptq_exec *e, int k, int *done)
{
    const ptq_graph *g = e->g;
    const int add = e->bias_add[k], b = e->bias_v[k];
    *done = 0;
    if (add < 0 || !taps_on_device(e) || !e->dev->observe_bias)
        return PTQ_OK;
    const int c = g->nodes[k].outputs[0], y = g->nodes[add].outputs[0];
    if (node_overridden(e, k) || node_overridden(e, add) || value_needed(e, c) || value_needed(e, y) ||
        (e->nhwc && (e->nhwc[c] || e->nhwc[y])))
        return PTQ_OK;
    ptq_tensor cv, bias;
    int fits = 0;
    PTQ_TRY_RET(run_untapped(ctx, e, k, c, &cv, &fits));
    *done = 1;
    slot *cs = &e->slots[c];
    memset(&bias, 0, sizeof bias);
    fits = fits && cv.ndim >= 1;
    if (fits) {
        PTQ_TRY_RET(const_view(ctx, e, b, MEM_DEV, &bias));
        fits = bias.ndim <= cv.ndim && ptq_tensor_numel(&bias) == cv.dims[cv.ndim - 1] && cv.dims[cv.ndim - 1] > 0;
    }
    void *states[2];
    int64_t n_bins = 0;
    const int vals[2] = {c, y};
    PTQ_TRY_RET(tap_states(ctx, e, vals, 2, ptq_tensor_numel(&cv), states, &n_bins, &fits));
    if (!fits) /* the product as run_node would have tapped it; the Add runs as a node */
        return e->taps[0].fn(e->taps[0].user, ctx, g, k, c, &cv);
    ptq_tensor out;
    PTQ_TRY_RET(output_like(ctx, e, y, &cv, MEM_DEV, &out));
    const double t0 = ptq_clock_s();
    ptq_status st = e->dev->observe_bias(e->dev, ctx, states, n_bins, cv.data, bias.data, cv.dims[cv.ndim - 1],
                              g->nodes[add].inputs[0] == b, out.data, ptq_tensor_numel(&cv));
    PTQ_TRY_RET(observed_pass_done(ctx, e, k, st, t0));
    PTQ_TRY_RET(apply_round(ctx, e, y, &out));
    if (--cs->refs == 0)
        slot_release(e, cs);
    e->ran_early[add] = 1;
    e->n_observed_bias++;
    return PTQ_OK;
}

/* GELU k's input x where its five nodes may run fused in memory mem: none overridden, no value kept, none rounded
 * (but y where y_rounds), x floats there and the layout plan keeps x and y alike; NULL otherwise. */
static slot *gelu_input(ptq_exec *e, int k, int mem, int y_rounds)
{
    const ptq_graph *g = e->g;
    const int *f = &e->gelu[4 * k];
    const int nodes[5] = {k, f[0], f[1], f[2], f[3]}, x = g->nodes[k].inputs[0], y = g->nodes[f[3]].outputs[0];
    for (int i = 0; i < 5; i++) {
        const int v = g->nodes[nodes[i]].outputs[0];
        if (node_overridden(e, nodes[i]) || (v == y && y_rounds ? e->slots[v].keep : value_needed(e, v)))
            return NULL;
    }
    slot *xs = &e->slots[x];
    if (!xs->ptr[mem] || xs->meta.dtype != PTQ_DT_FLOAT || xs->meta.ndim < 1 ||
        (e->nhwc && (e->nhwc[x] || e->nhwc[y])))
        return NULL;
    return xs;
}

/* GELU k has run fused from x (xs): x read by the Div and the first Mul, the Erf, Add and Muls marked run. */
static void gelu_ran(ptq_exec *e, int k, slot *xs)
{
    const int *f = &e->gelu[4 * k];
    for (int i = 0; i < 2; i++)
        if (--xs->refs == 0)
            slot_release(e, xs);
    for (int i = 0; i < 4; i++)
        e->ran_early[f[i]] = 1;
}

/* Calibration's form of run_gelu: the one tap observes on the device and nothing needs GELU k's five values as they
 * are (none kept or rounded, no node overridden). Two device passes over x make the Add's output a and y and feed
 * the tap's observers of the five values (backend.observe_gelu), the states the tap would have made: *done = 1 and
 * the Erf, Add and Mul nodes marked run. Else *done = 0 and nothing run. */
static ptq_status run_observed_gelu(ptq_ctx *ctx, ptq_exec *e, int k, int *done)
{
    const ptq_graph *g = e->g;
    const int *f = &e->gelu[4 * k];
    *done = 0;
    slot *xs = f[0] >= 0 && taps_on_device(e) && e->dev->observe_gelu ? gelu_input(e, k, MEM_DEV, 0) : NULL;
    if (!xs)
        return PTQ_OK;
    const int nodes[5] = {k, f[0], f[1], f[2], f[3]};
    int vals[5];
    for (int i = 0; i < 5; i++)
        vals[i] = g->nodes[nodes[i]].outputs[0];
    const int a = vals[2], y = vals[4];
    void *states[5];
    int64_t n_bins = 0;
    int fits = 1;
    const int64_t n = ptq_tensor_numel(&xs->meta);
    PTQ_TRY_RET(tap_states(ctx, e, vals, 5, n, states, &n_bins, &fits));
    if (!fits)
        return PTQ_OK;
    e->step = k + 1;
    ptq_tensor out[2];
    PTQ_TRY_RET(output_like(ctx, e, a, &xs->meta, MEM_DEV, &out[0]));
    PTQ_TRY_RET(output_like(ctx, e, y, &xs->meta, MEM_DEV, &out[1]));
    const float *c = &e->gelu_c[3 * k];
    const double t0 = ptq_clock_s();
    ptq_status st = e->dev->observe_gelu(e->dev, ctx, states, n_bins, xs->ptr[MEM_DEV], out[0].data, out[1].data, n,
                                         c[0], c[1], c[2]);
    st = observed_pass_done(ctx, e, k, st, t0);
    slot_release(e, &e->slots[a]); /* read only by the Mul, which ran here */
    if (st != PTQ_OK) {
        slot_release(e, &e->slots[y]);
        return st;
    }
    PTQ_TRY_RET(apply_round(ctx, e, y, &out[1]));
    gelu_ran(e, k, xs);
    e->n_observed_gelu++;
    *done = 1;
    return PTQ_OK;
}

/* GELU k (e->gelu) in one pass when nothing needs its values in between (no tap, no rounding, none kept, no
 * overlay), x is a float in the backend's memory and the layout plan keeps x and y alike: *done = 1 and the Erf, Add
 * and Mul nodes marked run; else *done = 0 and nothing run. */
static ptq_status run_gelu(ptq_ctx *ctx, ptq_exec *e, int k, int *done)
{
    const ptq_graph *g = e->g;
    const int *f = &e->gelu[4 * k];
    *done = 0;
    ptq_backend *bk = e->dev ? e->dev : e->host;
    const int mem = e->dev ? MEM_DEV : MEM_HOST;
    slot *xs = f[0] >= 0 && e->n_taps == 0 ? gelu_input(e, k, mem, 1) : NULL;
    if (!xs)
        return PTQ_OK;
    const int y = g->nodes[f[3]].outputs[0];
    e->step = k + 1;
    slot *ys = &e->slots[y];
    ptq_tensor out;
    PTQ_TRY_RET(output_like(ctx, e, y, &xs->meta, mem, &out));
    const float *c = &e->gelu_c[3 * k];
    double t0 = ptq_clock_s();
    ptq_status st = bk->erf_gelu(bk, ctx, xs->ptr[mem], out.data, ptq_tensor_numel(&xs->meta), c[0], c[1], c[2]);
    if (st == PTQ_OK && e->p.profile)
        st = bk->sync(bk, ctx);
    e->node_s[k] += ptq_clock_s() - t0;
    if (st != PTQ_OK) {
        slot_release(e, ys);
        return st;
    }
    PTQ_TRY_RET(apply_round(ctx, e, y, &out));
    gelu_ran(e, k, xs);
    e->n_gelu++;
    *done = 1;
    return PTQ_OK;
}

/* MatMul k and its bias Add (e->bias_add) as one GEMM when nothing needs the product alone (no tap, no rounding,
 * not kept, neither node overridden) and the backend takes the shapes: *done = 1, the Add marked run. Else *done = 0
 * and nothing changed but device copies of the MatMul's inputs. */
static ptq_status run_matmul_bias(ptq_ctx *ctx, ptq_exec *e, int k, int *done)
{
    const ptq_graph *g = e->g;
    const ptq_node *n = &g->nodes[k];
    const int add = e->bias_add[k], b = e->bias_v[k];
    *done = 0;
    if (add < 0 || e->n_taps > 0)
        return PTQ_OK;
    const int prod = n->outputs[0], y = g->nodes[add].outputs[0];
    if (node_overridden(e, k) || node_overridden(e, add) || value_needed(e, prod) || e->slots[y].keep ||
        (e->nhwc && (e->nhwc[n->inputs[0]] || e->nhwc[y])))
        return PTQ_OK;
    ptq_backend *bk = e->dev ? e->dev : e->host;
    const int mem = e->dev ? MEM_DEV : MEM_HOST;
    fused_io f;
    ptq_tensor bias;
    int have = 0;
    PTQ_TRY_RET(fused_io_make(ctx, e, k, 2, mem, &f, &have));
    PTQ_TRY_RET(const_view(ctx, e, b, mem, &bias));
    ptq_tensor out = f.out;
    if (!have || !bk->supports(bk, &f.io) || out.dtype != PTQ_DT_FLOAT || bias.ndim > out.ndim)
        return PTQ_OK;
    PTQ_TRY_RET(output_like(ctx, e, y, &f.out, mem, &f.out));
    const double t0 = ptq_clock_s();
    ptq_status st = bk->matmul_bias(bk, ctx, &f.io, &bias, done);
    PTQ_TRY_RET(fused_done(ctx, e, &f, k, y, st, *done, t0));
    if (!*done)
        return PTQ_OK;
    e->ran_early[add] = 1;
    e->n_bias++;
    return PTQ_OK;
}

/* Runs nodes node_begin.. with the values before it bound; fills outputs. */
static ptq_status run_nodes(ptq_ctx *ctx, ptq_exec *e, int node_begin, int full, ptq_tensor *outputs)
{
    ptq_status st = PTQ_OK;
    const ptq_graph *g = e->g;
    for (int k = node_begin; k < g->n_nodes; k++) {
        if (e->ran_early[k]) {
            e->ran_early[k] = 0;
            continue;
        }
        /* the fused runs, each trying node k with the nodes after it (run_observed_chain keeps no value of its
         * Conv); the first that takes it runs it */
        static ptq_status (*const fused_runs[])(ptq_ctx *, ptq_exec *, int, int *) = {
            run_epilogue, run_observed_chain, run_observed_bias, run_observed_gelu, run_gelu, run_matmul_bias};
        int fused = 0;
        for (size_t r = 0; r < sizeof fused_runs / sizeof fused_runs[0] && !fused; r++)
            PTQ_TRY(st, fused_runs[r](ctx, e, k, &fused), done);
        if (fused)
            continue;
        PTQ_TRY(st, run_node(ctx, e, k), done);
        if (!full)
            continue;
        for (int i = 0; i < g->nodes[k].n_outputs; i++) {
            const int v = g->nodes[k].outputs[i];
            slot *sv = v >= 0 ? &e->slots[v] : NULL;
            if (sv && sv->keep && (sv->ptr[MEM_HOST] || sv->ptr[MEM_DEV])) {
                const int m = sv->ptr[MEM_DEV] ? MEM_DEV : MEM_HOST;
                const ptq_tensor t = slot_view(sv, m);
                PTQ_TRY(st, keep_copy(ctx, e, sv, &t, m), done);
            }
        }
    }
    e->step = g->n_nodes + 1;
    for (int i = 0; i < g->n_outputs; i++) {
        slot *s = &e->slots[g->outputs[i]];
        if (!s->ptr[MEM_HOST] && !s->ptr[MEM_DEV]) {
            st = ptq_fail(ctx, PTQ_ERR_FORMAT, "graph output '%s' was not produced", g->values[g->outputs[i]].name);
            goto done;
        }
        if (e->dev)
            PTQ_TRY(st, slot_ensure(ctx, e, s, MEM_HOST), done);
    }
    for (int i = 0; i < g->n_outputs; i++)
        outputs[i] = slot_view(&e->slots[g->outputs[i]], MEM_HOST);
    if (e->dev)
        PTQ_TRY(st, e->dev->sync(e->dev, ctx), done);
done:
    return st;
}

/* Resets every non-constant slot before a run, and plans memory anew when
 * the last run needed it; values produced from node_begin on start with
 * their consumers from there. */
static ptq_status reset_slots(ptq_ctx *ctx, ptq_exec *e, int node_begin)
{
    const ptq_graph *g = e->g;
    for (int v = 0; v < g->n_values; v++) {
        slot *s = &e->slots[v];
        slot_release(e, s);
        s->refs = s->refs_total;
    }
    memset(e->ran_early, 0, (size_t)g->n_nodes);
    PTQ_TRY_RET(replan(ctx, e));
    if (node_begin == 0)
        return PTQ_OK;
    /* consumers before node_begin do not run */
    for (int k = 0; k < node_begin; k++)
        for (int i = 0; i < g->nodes[k].n_inputs; i++)
            if (g->nodes[k].inputs[i] >= 0)
                e->slots[g->nodes[k].inputs[i]].refs--;
    return PTQ_OK;
}

/* The samples of the run the calling thread is in (ptq_exec_this_run_samples). */
static _Thread_local int64_t this_run_samples;

int64_t ptq_exec_this_run_samples(void)
{
    return this_run_samples;
}

/* One run of ptq_exec_run over the inputs as given. */
static ptq_status run_whole(ptq_ctx *ctx, ptq_exec *e, const ptq_tensor *inputs, ptq_tensor *outputs)
{
    ptq_status st = PTQ_OK;
    const ptq_graph *g = e->g;
    this_run_samples = g->n_inputs > 0 && inputs[0].ndim >= 1 ? inputs[0].dims[0] : 0;
    PTQ_TRY(st, reset_slots(ctx, e, 0), done);
    e->n_fallback = 0;
    e->step = 0;
    for (int v = 0; v < g->n_values; v++)
        e->slots[v].kept_valid = 0;
    for (int i = 0; i < g->n_inputs; i++) {
        slot *s = &e->slots[g->inputs[i]];
        PTQ_TRY(st, bind_input(ctx, e, i, &inputs[i]), done);
        if (s->keep) /* the input as given, before any rounding */
            PTQ_TRY(st, keep_copy(ctx, e, s, &inputs[i], MEM_HOST), done);
    }
    st = run_nodes(ctx, e, 0, 1, outputs);
done:
    return st;
}

void ptq_exec_set_pass_rows(ptq_exec *e, int64_t rows)
{
    e->pass_rows = rows > 0 ? rows : 0;
    e->pass_auto = 0;
}

void ptq_exec_set_pass_auto(ptq_exec *e, int64_t rows)
{
    ptq_exec_set_pass_rows(e, rows);
    e->pass_auto = 1;
    e->trial_runs = 0;
    e->trial_pick = 0;
    e->trial_s[0] = e->trial_s[1] = 0.0;
}

int ptq_exec_pass_choice(const ptq_exec *e, double *whole_s, double *side_s)
{
    if (whole_s)
        *whole_s = e->trial_s[0];
    if (side_s)
        *side_s = e->trial_s[1];
    return e->trial_pick;
}

void ptq_exec_tap_passes(ptq_exec *e, ptq_tap_fn tap, void *tap_user)
{
    for (int t = 0; t < e->n_taps; t++)
        if (e->taps[t].fn == tap && e->taps[t].user == tap_user)
            e->taps[t].passes = 1;
}

void ptq_exec_tap_lanes(ptq_exec *e, ptq_tap_fn tap, void *tap_user)
{
    for (int t = 0; t < e->n_taps; t++)
        if (e->taps[t].fn == tap && e->taps[t].user == tap_user)
            e->taps[t].passes = e->taps[t].lanes = 1;
}

int64_t ptq_exec_pass_rows(const ptq_exec *e, int64_t *n_passes)
{
    if (n_passes)
        *n_passes = e->n_passes;
    return e->pass_rows;
}

/* Samples per pass for this batch (ptq_exec_set_pass_rows), or 0 to run it whole: on the CPU, without kept
 * values or taps other than those ptq_exec_tap_passes marks, every input a host tensor with the batch's
 * samples as dim 0, more of them than a pass takes. */
static int64_t pass_rows(const ptq_exec *e, const ptq_tensor *inputs)
{
    const ptq_graph *g = e->g;
    if (e->pass_rows <= 0 || e->p.device != PTQ_DEVICE_CPU || e->dev || g->n_inputs < 1)
        return 0;
    for (int t = 0; t < e->n_taps; t++)
        if (!e->taps[t].passes)
            return 0;
    const int64_t n = inputs[0].ndim >= 1 ? inputs[0].dims[0] : 0;
    if (n <= e->pass_rows)
        return 0;
    for (int i = 0; i < g->n_inputs; i++)
        if (inputs[i].ndim < 1 || inputs[i].dims[0] != n || inputs[i].mem != PTQ_MEM_HOST || !inputs[i].data)
            return 0;
    for (int v = 0; v < g->n_values; v++)
        if (e->slots[v].keep)
            return 0;
    return e->pass_rows;
}

/* Output i of the pass over samples [r0, r0 + m) of n, t, into the whole batch's buffer (e's, whichever executor ran
 * the pass); the first pass sizes it and sets outputs[i]. A graph ptq_graph_rows_independent accepted gives every
 * output the pass's samples as dim 0 and the same row every pass. */
static ptq_status gather_output(ptq_ctx *ctx, ptq_exec *e, int i, const ptq_tensor *t, int64_t r0, int64_t m,
                                int64_t n, ptq_tensor *outputs)
{
    const size_t row = t->ndim >= 1 && t->dims[0] == m ? ptq_tensor_bytes(t) / (size_t)m : 0;
    int same = r0 == 0 || (outputs[i].ndim == t->ndim && outputs[i].dtype == t->dtype);
    for (int d = 1; same && r0 > 0 && d < t->ndim; d++)
        same = outputs[i].dims[d] == t->dims[d];
    if (t->mem != PTQ_MEM_HOST || row == 0 || !same)
        return ptq_fail(ctx, PTQ_ERR_INTERNAL, "graph output '%s': a pass over samples %lld to %lld of %lld did not "
                        "give them as its dim 0", e->g->values[e->g->outputs[i]].name, (long long)r0,
                        (long long)(r0 + m - 1), (long long)n);
    if (r0 == 0) {
        if (e->pass_cap[i] < row * (size_t)n) {
            if (e->pass_buf[i])
                held_release(e, MEM_HOST, e->pass_buf[i], e->pass_cap[i]);
            e->pass_buf[i] = NULL;
            e->pass_cap[i] = 0;
            PTQ_TRY_RET(backend_alloc(ctx, e, MEM_HOST, row * (size_t)n, &e->pass_buf[i]));
            e->pass_cap[i] = row * (size_t)n;
            held_add(e, MEM_HOST, e->pass_cap[i]);
        }
        outputs[i] = *t;
        outputs[i].dims[0] = n;
        outputs[i].data = e->pass_buf[i];
        outputs[i].cap_bytes = e->pass_cap[i];
    }
    memcpy((char *)e->pass_buf[i] + (size_t)r0 * row, t->data, (size_t)m * row);
    return PTQ_OK;
}

/* e's pass views, each allocated when missing (after an earlier failure too). */
static ptq_status pass_arrays(ptq_ctx *ctx, ptq_exec *e)
{
    const ptq_graph *g = e->g;
    if (!e->pass_in)
        e->pass_in = calloc((size_t)g->n_inputs, sizeof *e->pass_in);
    if (!e->pass_out)
        e->pass_out = calloc((size_t)g->n_outputs + 1, sizeof *e->pass_out);
    if (!e->pass_buf)
        e->pass_buf = calloc((size_t)g->n_outputs + 1, sizeof *e->pass_buf);
    if (!e->pass_cap)
        e->pass_cap = calloc((size_t)g->n_outputs + 1, sizeof *e->pass_cap);
    if (!e->pass_in || !e->pass_out || !e->pass_buf || !e->pass_cap)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for the passes over a batch");
    return PTQ_OK;
}

/* x's pass over samples [r0, r0 + m) of n: each input's rows as a view in x's pass_in, then the graph on them. */
static ptq_status run_pass(ptq_ctx *ctx, ptq_exec *x, const ptq_tensor *inputs, int64_t r0, int64_t m, int64_t n)
{
    for (int i = 0; i < x->g->n_inputs; i++) {
        const size_t row = ptq_tensor_bytes(&inputs[i]) / (size_t)n;
        x->pass_in[i] = inputs[i];
        x->pass_in[i].dims[0] = m;
        x->pass_in[i].data = (char *)inputs[i].data + (size_t)r0 * row;
        x->pass_in[i].cap_bytes = (size_t)m * row;
    }
    return run_whole(ctx, x, x->pass_in, x->pass_out);
}

/* ptq_exec_run in passes of `rows` samples, one after another: each input's rows [r0, r0 + m) as a view, each
 * pass's outputs copied into the whole batch's. */
static ptq_status run_passes(ptq_ctx *ctx, ptq_exec *e, const ptq_tensor *inputs, ptq_tensor *outputs, int64_t rows)
{
    const ptq_graph *g = e->g;
    PTQ_TRY_RET(pass_arrays(ctx, e));
    const int64_t n = inputs[0].dims[0];
    for (int64_t r0 = 0; r0 < n; r0 += rows) {
        const int64_t m = n - r0 < rows ? n - r0 : rows;
        PTQ_TRY_RET(run_pass(ctx, e, inputs, r0, m, n));
        e->n_passes++;
        for (int i = 0; i < g->n_outputs; i++)
            PTQ_TRY_RET(gather_output(ctx, e, i, &e->pass_out[i], r0, m, n, outputs));
    }
    return PTQ_OK;
}

/* What run_lanes' pool threads share: pass p covers samples [p rows, p rows + rows) of n. */
typedef struct lane_job {
    ptq_exec *e;
    const ptq_tensor *inputs;
    ptq_tensor *outputs;
    int64_t n, rows;
    ptq_ctx *ctx;                 /* [lanes]: each lane's message */
    ptq_status *st;               /* [lanes]: its first failure */
    int64_t *bad;                 /* [lanes]: the pass of it */
    atomic_int_fast64_t first_bad; /* the earliest failing pass yet (INT64_MAX: none): later ones are not started */
    atomic_int_fast64_t ran;
} lane_job;

static void lane_passes(void *arg, int64_t begin, int64_t end, int worker)
{
    lane_job *j = arg;
    ptq_exec *x = worker == 0 ? j->e : j->e->lanes[worker];
    for (int64_t p = begin; p < end; p++) {
        if (p > atomic_load(&j->first_bad) || j->st[worker] != PTQ_OK)
            return;
        const int64_t r0 = p * j->rows, m = j->n - r0 < j->rows ? j->n - r0 : j->rows;
        ptq_status st = run_pass(&j->ctx[worker], x, j->inputs, r0, m, j->n);
        for (int i = 0; st == PTQ_OK && i < x->g->n_outputs; i++)
            st = gather_output(&j->ctx[worker], j->e, i, &x->pass_out[i], r0, m, j->n, j->outputs);
        atomic_fetch_add(&j->ran, 1);
        if (st == PTQ_OK)
            continue;
        j->st[worker] = st;
        j->bad[worker] = p;
        int_fast64_t seen = atomic_load(&j->first_bad);
        while (p < seen && !atomic_compare_exchange_weak(&j->first_bad, &seen, p))
            ;
        return;
    }
}

static void lane_passes_from_1(void *arg, int64_t begin, int64_t end, int worker)
{
    lane_passes(arg, begin + 1, end + 1, worker);
}

/* ptq_exec_run in passes on several threads, side by side: the first pass on e (it sizes the outputs), the rest
 * each on one pool thread through an executor of that thread's own (e->lanes, made on first use, e's overlay
 * copied), whose nodes run on that thread alone (their loops nest: core/parallel.h). Every pass computes the same
 * bytes on any executor, so the outputs are those of run_passes; a failure is the earliest failing pass's, as
 * there, and passes after it are not started. Only with taps ptq_exec_tap_lanes marks (their callbacks run on
 * several threads at once, each on pool worker ptq_par_worker_now()). Each node's seconds are summed over the
 * executors (ptq_exec_node_seconds). */
static ptq_status run_lanes(ptq_ctx *ctx, ptq_exec *e, const ptq_tensor *inputs, ptq_tensor *outputs, int64_t rows,
                            int workers)
{
    ptq_status st = PTQ_OK;
    const ptq_graph *g = e->g;
    const int64_t n = inputs[0].dims[0];
    /* a pass for every thread at least, where the batch allows */
    const int64_t even = (n + workers - 1) / workers;
    rows = rows < even ? rows : even;
    PTQ_TRY_RET(pass_arrays(ctx, e));
    if (e->n_lanes < workers) {
        ptq_exec **more = realloc(e->lanes, (size_t)workers * sizeof *more);
        if (!more)
            return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for the passes over a batch");
        for (int w = e->n_lanes; w < workers; w++)
            more[w] = NULL;
        e->lanes = more;
        e->n_lanes = workers;
    }
    for (int w = 1; w < workers; w++) {
        if (!e->lanes[w])
            PTQ_TRY_RET(ptq_exec_create(ctx, g, &e->p, &e->lanes[w]));
        PTQ_TRY_RET(pass_arrays(ctx, e->lanes[w]));
        ptq_exec_set_overlay(e->lanes[w], e->has_ov ? &e->ov : NULL);
        memcpy(e->lanes[w]->taps, e->taps, sizeof e->taps); /* the same taps, each marked ptq_exec_tap_lanes */
        e->lanes[w]->n_taps = e->n_taps;
    }
    const int64_t m0 = n < rows ? n : rows;
    PTQ_TRY_RET(run_pass(ctx, e, inputs, 0, m0, n));
    e->n_passes++;
    for (int i = 0; i < g->n_outputs; i++)
        PTQ_TRY_RET(gather_output(ctx, e, i, &e->pass_out[i], 0, m0, n, outputs));
    lane_job j = {.e = e, .inputs = inputs, .outputs = outputs, .n = n, .rows = rows};
    j.ctx = calloc((size_t)workers, sizeof *j.ctx);
    j.st = calloc((size_t)workers, sizeof *j.st);
    j.bad = calloc((size_t)workers, sizeof *j.bad);
    if (!j.ctx || !j.st || !j.bad) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for the passes over a batch");
        goto done;
    }
    for (int w = 0; w < workers; w++)
        ptq_ctx_init(&j.ctx[w]);
    atomic_init(&j.first_bad, INT64_MAX);
    atomic_init(&j.ran, 0);
    const int64_t n_pass = (n + rows - 1) / rows;
    /* pass 0 ran above; the pool numbers the rest from 0 */
    ptq_parallel_for(n_pass - 1, 1, lane_passes_from_1, &j);
    e->n_passes += atomic_load(&j.ran);
    for (int w = 0; w < workers; w++)
        if (j.st[w] != PTQ_OK && j.bad[w] == atomic_load(&j.first_bad)) {
            *ctx = j.ctx[w];
            st = j.st[w];
            break;
        }
done:
    free(j.ctx);
    free(j.st);
    free(j.bad);
    return st;
}

/* The trial's runs of one batch size, whole and side by side in turn: the first TRIAL_WARM untimed (whole batches
 * run twice before their memory plan is made and touched: bench/pass_runs showed their second run still 1.3x to 1.5x
 * slower on a 16-core Xeon, passes side by side once), then each way's best of two. */
#define TRIAL_WARM 3
#define TRIAL_RUNS 7
/* Fewest threads the trial runs on. On two, passes side by side beat whole batches on the four bundled image models
 * by 1.25x to 1.85x on the 2-core VM, and the trial's whole batches cost 5 to 14% of a 10,000-image eval
 * (bench/results/2026-12-07-cpu-speed-3-vm.md): there passes run side by side from the first batch. */
#define TRIAL_MIN_WORKERS 3

/* Keeps the faster way of the trial. Whole batches: the lanes' memory back. Side by side: e runs one pass a batch
 * from now on, so the plan it sized for whole batches is forgotten (the next run gives that arena back and records
 * a pass's sizes, the one after plans them). */
static void trial_decide(ptq_exec *e)
{
    e->trial_pick = e->trial_s[1] < e->trial_s[0] ? 2 : 1;
    if (e->trial_pick == 2) {
        for (int v = 0; v < e->g->n_values; v++)
            for (int m = 0; m < N_MEM; m++)
                e->slots[v].lv[m].bytes = 0;
        e->replan = 1;
        return;
    }
    for (int w = 1; w < e->n_lanes; w++) {
        for (int m = 0; e->lanes[w] && m < N_MEM; m++)
            e->freed_lanes_peak[m] += e->lanes[w]->peak_bytes[m];
        e->freed_lanes_allocs += e->lanes[w] ? e->lanes[w]->n_allocs : 0;
        ptq_exec_free(e->lanes[w]);
        e->lanes[w] = NULL;
    }
}

ptq_status ptq_exec_run(ptq_ctx *ctx, ptq_exec *e, const ptq_tensor *inputs, ptq_tensor *outputs)
{
    const int64_t rows = pass_rows(e, inputs);
    const int workers = rows ? ptq_par_workers() : 1;
    if (!rows)
        return run_whole(ctx, e, inputs, outputs);
    /* several threads: side by side when every tap may see passes from several threads at once; else one after
       another where asked for (ptq_exec_set_pass_rows), whole where the session chose the passes */
    int lanes = workers > 1;
    for (int t = 0; t < e->n_taps; t++)
        lanes &= e->taps[t].lanes;
    if (lanes && e->pass_auto && e->trial_pick == 0 && e->trial_runs == 0 && workers < TRIAL_MIN_WORKERS)
        e->trial_pick = 2; /* no trial (trial_s stays 0) */
    if (lanes && e->pass_auto && e->trial_pick != 2) { /* the trial (ptq_exec_pass_choice), or whole batches won */
        const int64_t n = inputs[0].dims[0];
        if (e->trial_pick == 1 || (e->trial_runs > 0 && n != e->trial_n))
            return run_whole(ctx, e, inputs, outputs);
        const int side = e->trial_runs % 2;
        const double t0 = ptq_clock_s();
        ptq_status st = side ? run_lanes(ctx, e, inputs, outputs, rows, workers) : run_whole(ctx, e, inputs, outputs);
        if (side)
            e->pass_threads = e->pass_threads > workers ? e->pass_threads : workers;
        if (st != PTQ_OK)
            return st;
        e->trial_n = n;
        const double s = (ptq_clock_s() - t0) / (double)n;
        if (e->trial_runs >= TRIAL_WARM && (e->trial_s[side] == 0.0 || s < e->trial_s[side]))
            e->trial_s[side] = s;
        if (++e->trial_runs == TRIAL_RUNS)
            trial_decide(e);
        return PTQ_OK;
    }
    if (lanes) {
        e->pass_threads = e->pass_threads > workers ? e->pass_threads : workers;
        return run_lanes(ctx, e, inputs, outputs, rows, workers);
    }
    if (workers > 1 && e->pass_auto)
        return run_whole(ctx, e, inputs, outputs);
    e->pass_threads = e->pass_threads > 1 ? e->pass_threads : 1;
    return run_passes(ctx, e, inputs, outputs, rows);
}

int ptq_exec_pass_threads(const ptq_exec *e)
{
    return e->pass_threads;
}

static ptq_status keep_copy(ptq_ctx *ctx, ptq_exec *e, slot *s, const ptq_tensor *t, int m);

/* Graph input 0 from 8-bit images: on a GPU uploaded as bytes and
 * normalized there, on the host by ptq_preprocess_image; kept (before any
 * rounding) where it was made. */
static ptq_status bind_input_u8(ptq_ctx *ctx, ptq_exec *e, const ptq_u8_batch *im, const ptq_preprocess *p)
{
    const int vi = e->g->inputs[0];
    slot *s = &e->slots[vi];
    if (im->h != p->height || im->w != p->width || im->c < 1 || im->c > 4 || im->n < 0 ||
        (p->n_channels != 1 && p->n_channels != 3))
        return ptq_fail(ctx, PTQ_ERR_SHAPE, "%lld images of %lldx%lldx%lld for a model input of %lldx%lld, %d channels",
                        (long long)im->n, (long long)im->h, (long long)im->w, (long long)im->c, (long long)p->height,
                        (long long)p->width, p->n_channels);
    /* resize=S rescales even an image of the model's size (torchvision's Resize) unless S is its shorter side;
     * the GPU path only normalizes */
    if (p->resize != 0 && p->resize != (im->h < im->w ? im->h : im->w))
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "8-bit images of %lldx%lld (width x height) with preprocess resize "
                        "%lld: they would be resized; run them through ptq_exec_run instead", (long long)im->w,
                        (long long)im->h, (long long)p->resize);
    ptq_tensor t = {PTQ_DT_FLOAT, 4, {im->n, p->n_channels, im->h, im->w}, NULL, PTQ_MEM_HOST, 0};
    if (p->nhwc) {
        t.dims[1] = im->h;
        t.dims[2] = im->w;
        t.dims[3] = p->n_channels;
    }
    PTQ_TRY_RET(check_input(ctx, &e->g->values[vi], &t));
    s->meta = t;
    const size_t img_bytes = (size_t)(im->h * im->w * im->c), per = (size_t)(p->n_channels * im->h * im->w);
    int m = MEM_HOST;
    if (e->dev) {
        m = MEM_DEV;
        const size_t n_bytes = img_bytes * (size_t)im->n;
        if (e->u8_cap < n_bytes) {
            if (e->u8_dev)
                e->dev->release(e->dev, e->u8_dev);
            e->u8_dev = NULL;
            e->u8_cap = 0;
            PTQ_TRY_RET(backend_alloc(ctx, e, MEM_DEV, n_bytes, &e->u8_dev));
            e->u8_cap = n_bytes;
        }
        /* queued: ptq_exec_run_u8 waits for the device before it returns, on every path */
        PTQ_TRY_RET(e->dev->upload_async(e->dev, ctx, e->u8_dev, im->data, n_bytes));
        PTQ_TRY_RET(slot_alloc(ctx, e, s, MEM_DEV));
        ptq_norm_params np = {im->n, im->h, im->w, im->c, im->planar, p->n_channels, p->bgr, p->nhwc, p->scale,
                              {0}, {0}};
        memcpy(np.mean, p->mean, sizeof np.mean);
        memcpy(np.std, p->std, sizeof np.std);
        PTQ_TRY_RET(ptq_backend_cuda_normalize_u8(e->dev, ctx, &np, e->u8_dev, s->ptr[MEM_DEV]));
    } else {
        PTQ_TRY_RET(slot_alloc(ctx, e, s, MEM_HOST));
        for (int64_t i = 0; i < im->n; i++)
            PTQ_TRY_RET(ptq_preprocess_image(ctx, p, im->data + (size_t)i * img_bytes, PTQ_DT_UINT8, im->h, im->w,
                                             im->c, im->planar, (float *)s->ptr[MEM_HOST] + (size_t)i * per));
    }
    ptq_tensor view = slot_view(s, m);
    if (s->keep)
        PTQ_TRY_RET(keep_copy(ctx, e, s, &view, m));
    for (int k = 0; k < e->n_taps; k++) /* the input as made, before any rounding */
        PTQ_TRY_RET(e->taps[k].fn(e->taps[k].user, ctx, e->g, -1, vi, &view));
    return apply_round(ctx, e, vi, &view);
}

ptq_status ptq_exec_run_u8(ptq_ctx *ctx, ptq_exec *e, const ptq_u8_batch *images, const ptq_preprocess *p,
                           ptq_tensor *outputs)
{
    ptq_status st = PTQ_OK;
    const ptq_graph *g = e->g;
    if (g->n_inputs != 1)
        return ptq_fail(ctx, PTQ_ERR_UNSUPPORTED, "8-bit images feed a model of one input; this one has %d",
                        g->n_inputs);
    PTQ_TRY(st, reset_slots(ctx, e, 0), done);
    this_run_samples = images->n;
    e->n_fallback = 0;
    e->step = 0;
    for (int v = 0; v < g->n_values; v++)
        e->slots[v].kept_valid = 0;
    PTQ_TRY(st, bind_input_u8(ctx, e, images, p), done);
    st = run_nodes(ctx, e, 0, 1, outputs);
done:
    if (st != PTQ_OK && e->dev) { /* the upload may still read the caller's images */
        ptq_ctx ignored;
        ptq_ctx_init(&ignored);
        (void)e->dev->sync(e->dev, &ignored);
    }
    return st;
}

static ptq_status run_from(ptq_ctx *ctx, ptq_exec *e, int node_begin, int keep, ptq_tensor *outputs)
{
    ptq_status st = PTQ_OK;
    const ptq_graph *g = e->g;
    if (node_begin < 0 || node_begin > g->n_nodes)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "node %d is not in the graph's %d nodes", node_begin, g->n_nodes);
    PTQ_TRY(st, reset_slots(ctx, e, node_begin), done);
    e->n_fallback = 0;
    e->step = 0;
    this_run_samples = 0; /* the kept values' batch: not known here */
    /* graph inputs the run reads, rounded again by the current overlay */
    for (int i = 0; i < g->n_inputs; i++)
        if (node_begin == 0 || e->slots[g->inputs[i]].refs > 0)
            PTQ_TRY(st, bind_input(ctx, e, i, NULL), done);
    /* values from before node_begin that the rest reads */
    for (int v = 0; v < g->n_values; v++) {
        slot *s = &e->slots[v];
        if (s->is_const || s->producer < 0 || s->producer >= node_begin || s->refs <= 0)
            continue;
        PTQ_TRY(st, bind_kept(ctx, e, v), done);
    }
    st = run_nodes(ctx, e, node_begin, keep, outputs);
done:
    return st;
}

ptq_status ptq_exec_run_from(ptq_ctx *ctx, ptq_exec *e, int node_begin, ptq_tensor *outputs)
{
    return run_from(ctx, e, node_begin, 0, outputs);
}

ptq_status ptq_exec_rerun(ptq_ctx *ctx, ptq_exec *e, ptq_tensor *outputs)
{
    return run_from(ctx, e, 0, 1, outputs);
}

ptq_status ptq_exec_keep(ptq_ctx *ctx, ptq_exec *e, int value_index, int keep)
{
    if (value_index < 0 || value_index >= e->g->n_values)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "value %d is not in the graph", value_index);
    slot *s = &e->slots[value_index];
    if (s->is_const)
        return PTQ_OK; /* constants are always there */
    s->keep = keep != 0;
    if (!keep && s->kept) {
        e->by_mem[s->kept_mem]->release(e->by_mem[s->kept_mem], s->kept);
        s->kept = NULL;
        s->kept_valid = 0;
    }
    return PTQ_OK;
}

ptq_status ptq_exec_keep_for(ptq_ctx *ctx, ptq_exec *e, int node_begin)
{
    const ptq_graph *g = e->g;
    if (node_begin < 0 || node_begin > g->n_nodes)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "node %d is not in the graph's %d nodes", node_begin, g->n_nodes);
    for (int i = 0; i < g->n_inputs; i++)
        e->slots[g->inputs[i]].keep = 1;
    for (int k = node_begin; k < g->n_nodes; k++)
        for (int i = 0; i < g->nodes[k].n_inputs; i++) {
            const int v = g->nodes[k].inputs[i];
            if (v >= 0 && e->slots[v].producer >= 0 && e->slots[v].producer < node_begin)
                e->slots[v].keep = 1;
        }
    for (int i = 0; i < g->n_outputs; i++) {
        slot *s = &e->slots[g->outputs[i]];
        if (s->producer >= 0 && s->producer < node_begin)
            s->keep = 1;
    }
    return PTQ_OK;
}

void ptq_exec_hooks_save(ptq_exec *e)
{
    memcpy(e->saved.taps, e->taps, sizeof e->taps);
    e->saved.n_taps = e->n_taps;
    e->saved.ov = e->ov;
    e->saved.has_ov = e->has_ov;
}

void ptq_exec_hooks_restore(ptq_exec *e)
{
    memcpy(e->taps, e->saved.taps, sizeof e->taps);
    e->n_taps = e->saved.n_taps;
    e->ov = e->saved.ov;
    e->has_ov = e->saved.has_ov;
}

void ptq_exec_set_overlay(ptq_exec *e, const ptq_overlay *ov)
{
    e->has_ov = ov != NULL;
    if (ov)
        e->ov = *ov;
}

ptq_status ptq_exec_add_tap(ptq_ctx *ctx, ptq_exec *e, ptq_tap_fn tap, void *tap_user)
{
    if (!tap)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "a tap needs a function");
    if (e->n_taps == PTQ_EXEC_MAX_TAPS)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "at most %d taps", PTQ_EXEC_MAX_TAPS);
    e->taps[e->n_taps].fn = tap;
    e->taps[e->n_taps].user = tap_user;
    e->taps[e->n_taps].dev_state = NULL;
    e->taps[e->n_taps].passes = 0;
    e->taps[e->n_taps].lanes = 0;
    e->n_taps++;
    return PTQ_OK;
}

ptq_status ptq_exec_tap_dev_state(ptq_ctx *ctx, ptq_exec *e, ptq_tap_fn tap, void *tap_user, ptq_tap_dev_state_fn fn)
{
    for (int t = 0; t < e->n_taps; t++)
        if (e->taps[t].fn == tap && e->taps[t].user == tap_user) {
            e->taps[t].dev_state = fn;
            return PTQ_OK;
        }
    return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "device observer states offered for a tap the executor does not have");
}

void ptq_exec_remove_tap(ptq_exec *e, ptq_tap_fn tap, void *tap_user)
{
    for (int t = 0; t < e->n_taps; t++)
        if (e->taps[t].fn == tap && e->taps[t].user == tap_user) {
            memmove(&e->taps[t], &e->taps[t + 1], (size_t)(e->n_taps - t - 1) * sizeof e->taps[0]);
            e->n_taps--;
            return;
        }
}

void ptq_exec_set_tap(ptq_exec *e, ptq_tap_fn tap, void *tap_user)
{
    e->n_taps = 0;
    if (tap) {
        e->taps[0].fn = tap;
        e->taps[0].user = tap_user;
        e->taps[0].dev_state = NULL;
        e->taps[0].passes = 0;
        e->taps[0].lanes = 0;
        e->n_taps = 1;
    }
}

const ptq_graph *ptq_exec_graph(const ptq_exec *e)
{
    return e->g;
}

const char *ptq_exec_device_name(const ptq_exec *e)
{
    return e->device_name;
}

ptq_math ptq_exec_math(const ptq_exec *e)
{
    return e->dev ? e->p.math : PTQ_MATH_FP32;
}

ptq_status ptq_math_parse(ptq_ctx *ctx, const char *name, ptq_math *out)
{
    *out = PTQ_MATH_FP32;
    if (!name || strcmp(name, "fp32") == 0)
        return PTQ_OK;
    if (strcmp(name, "tf32") == 0 || strcmp(name, "fp64") == 0) {
        *out = name[0] == 't' ? PTQ_MATH_TF32 : PTQ_MATH_FP64;
        return PTQ_OK;
    }
    return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "unknown math '%s' (fp32, tf32 or fp64)", name);
}

const char *ptq_math_name(ptq_math m)
{
    return m == PTQ_MATH_TF32 ? "tf32" : m == PTQ_MATH_FP64 ? "fp64" : "fp32";
}

ptq_device ptq_exec_device(const ptq_exec *e)
{
    return e->p.device;
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
    if (node_index < 0 || node_index >= e->g->n_nodes)
        return 0.0;
    double s = e->node_s[node_index]; /* with the lanes' passes beside e's (run_lanes) */
    for (int w = 1; w < e->n_lanes; w++)
        s += e->lanes[w] ? e->lanes[w]->node_s[node_index] : 0.0;
    return s;
}

double ptq_exec_node_tap_seconds(const ptq_exec *e, int node_index)
{
    if (node_index < 0 || node_index >= e->g->n_nodes)
        return 0.0;
    double s = e->node_tap_s[node_index];
    for (int w = 1; w < e->n_lanes; w++)
        s += e->lanes[w] ? e->lanes[w]->node_tap_s[node_index] : 0.0;
    return s;
}

double ptq_exec_round_seconds(const ptq_exec *e)
{
    double s = e->round_s;
    for (int w = 1; w < e->n_lanes; w++)
        s += e->lanes[w] ? e->lanes[w]->round_s : 0.0;
    return s;
}

double ptq_exec_tap_seconds(const ptq_exec *e)
{
    double s = e->tap_s;
    for (int w = 1; w < e->n_lanes; w++)
        s += e->lanes[w] ? e->lanes[w]->tap_s : 0.0;
    return s;
}

ptq_status ptq_exec_host_alloc(ptq_ctx *ctx, ptq_exec *e, size_t n_bytes, void **out)
{
    if (e->dev && e->dev->host_alloc)
        return e->dev->host_alloc(e->dev, ctx, n_bytes, out);
    *out = malloc(n_bytes ? n_bytes : 1);
    return *out ? PTQ_OK : ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for %zu bytes", n_bytes);
}

void ptq_exec_host_free(ptq_exec *e, void *p)
{
    if (e->dev && e->dev->host_free)
        e->dev->host_free(e->dev, p);
    else
        free(p);
}

int64_t ptq_exec_n_epilogues(const ptq_exec *e)
{
    return e->n_epilogue;
}

int64_t ptq_exec_n_channels_last(const ptq_exec *e)
{
    return e->n_nhwc;
}

int64_t ptq_exec_n_observed_chains(const ptq_exec *e)
{
    return e->n_observed_chain;
}

int64_t ptq_exec_n_observed_biases(const ptq_exec *e)
{
    return e->n_observed_bias;
}

int64_t ptq_exec_n_observed_gelus(const ptq_exec *e)
{
    return e->n_observed_gelu;
}

int64_t ptq_exec_n_view_handovers(const ptq_exec *e)
{
    return e->n_view_handover;
}

int64_t ptq_exec_n_biases(const ptq_exec *e)
{
    return e->n_bias;
}

int64_t ptq_exec_n_gelus(const ptq_exec *e)
{
    return e->n_gelu;
}

int64_t ptq_exec_n_allocs(const ptq_exec *e)
{
    int64_t n = e->n_allocs + e->freed_lanes_allocs;
    for (int w = 1; w < e->n_lanes; w++)
        n += e->lanes[w] ? e->lanes[w]->n_allocs : 0;
    return n;
}

size_t ptq_exec_peak_bytes(const ptq_exec *e, ptq_mem mem)
{
    size_t n = e->peak_bytes[mem_index(mem)] + e->freed_lanes_peak[mem_index(mem)]; /* with the lanes' runs */
    for (int w = 1; w < e->n_lanes; w++)
        n += e->lanes[w] ? e->lanes[w]->peak_bytes[mem_index(mem)] : 0;
    return n;
}

ptq_status ptq_exec_set_value_bytes(ptq_ctx *ctx, ptq_exec *e, const double *bytes_1, const double *per_sample)
{
    const size_t n = (size_t)e->g->n_values + 1;
    double *b1 = bytes_1 ? malloc(n * sizeof *b1) : NULL, *per = bytes_1 ? malloc(n * sizeof *per) : NULL;
    if (bytes_1 && (!b1 || !per)) {
        free(b1);
        free(per);
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for the sizes of %d values", e->g->n_values);
    }
    if (bytes_1) {
        memcpy(b1, bytes_1, (n - 1) * sizeof *b1);
        memcpy(per, per_sample, (n - 1) * sizeof *per);
    }
    free(e->vb_1);
    free(e->vb_per);
    e->vb_1 = b1;
    e->vb_per = per;
    return PTQ_OK;
}

/* Bytes of value v at this batch: as ptq_exec_set_value_bytes gave them, else dim 0 the batch and unknown dims 1;
 * 0 for constants, scalars and values no node makes that are not graph inputs. */
static double value_bytes(const ptq_exec *e, int v, int64_t batch)
{
    const ptq_value *val = &e->g->values[v];
    const slot *s = &e->slots[v];
    if (s->is_const || (s->producer < 0 && !(val->flags & PTQ_VALUE_INPUT)))
        return 0.0;
    if (e->vb_1)
        return e->vb_1[v] + (double)(batch - 1) * e->vb_per[v];
    if (val->ndim < 1)
        return 0.0;
    double n_bytes = (double)batch * (double)(ptq_dtype_size(val->dtype) ? ptq_dtype_size(val->dtype) : 4);
    for (int d = 1; d < val->ndim; d++) /* dim 0 is the batch */
        n_bytes *= val->dims[d] > 0 ? (double)val->dims[d] : 1.0;
    return n_bytes;
}

double ptq_exec_live_estimate(const ptq_exec *e, int64_t batch)
{
    const ptq_graph *g = e->g;
    /* bytes born (+) and dead (-) at each step: 0 binds the inputs, k + 1 runs node k */
    double *delta = calloc((size_t)g->n_nodes + 3, sizeof *delta);
    if (!delta)
        return 0.0;
    for (int v = 0; v < g->n_values; v++) {
        const double n_bytes = value_bytes(e, v, batch);
        if (n_bytes == 0.0)
            continue;
        delta[e->slots[v].producer + 1] += n_bytes;
        delta[e->slots[v].death + 1] -= n_bytes;
    }
    double alive = 0.0, peak = 0.0;
    for (int k = 0; k <= g->n_nodes + 1; k++) {
        alive += delta[k];
        if (alive > peak)
            peak = alive;
    }
    free(delta);
    return peak;
}

double ptq_exec_total_estimate(const ptq_exec *e, int64_t batch)
{
    double total = 0.0;
    for (int v = 0; v < e->g->n_values; v++)
        total += value_bytes(e, v, batch);
    return total;
}

void ptq_exec_free(ptq_exec *e)
{
    if (!e)
        return;
    if (e->slots) {
        for (int v = 0; v < e->g->n_values; v++) {
            slot *s = &e->slots[v];
            if (s->is_const && s->ptr[MEM_DEV]) { /* kept outside the plan */
                e->dev->release(e->dev, s->ptr[MEM_DEV]);
                s->ptr[MEM_DEV] = NULL;
            }
            if (s->kept)
                e->by_mem[s->kept_mem]->release(e->by_mem[s->kept_mem], s->kept);
            slot_release(e, s);
        }
    }
    for (int i = 0; e->pass_buf && i < e->g->n_outputs; i++)
        if (e->pass_buf[i])
            held_release(e, MEM_HOST, e->pass_buf[i], e->pass_cap[i]);
    for (int i = 0; i < e->n_wcopies; i++)
        e->dev->release(e->dev, e->wcopies[i].dev);
    free(e->wcopies);
    if (e->u8_dev)
        e->dev->release(e->dev, e->u8_dev);
    for (int m = 0; m < N_MEM; m++) {
        if (e->pool[m].b)
            pool_clear(e, m);
        if (e->arena[m])
            e->by_mem[m]->release(e->by_mem[m], e->arena[m]);
    }
    for (int w = 1; w < e->n_lanes; w++)
        ptq_exec_free(e->lanes[w]);
    free(e->lanes);
    ptq_backend_free(e->dev);
    ptq_backend_free(e->host);
    free(e->pass_in);
    free(e->pass_out);
    free(e->pass_buf);
    free(e->pass_cap);
    free(e->slots);
    free(e->node_s);
    free(e->epi_add);
    free(e->epi_relu);
    free(e->epi_z);
    free(e->epi_lo);
    free(e->epi_hi);
    free(e->bias_add);
    free(e->bias_v);
    free(e->gelu);
    free(e->gelu_c);
    free(e->ran_early);
    free(e->nhwc);
    ptq_op_frame_free(&e->frame);
    free(e->ops);
    free(e->vb_1);
    free(e->vb_per);
    free(e);
}
