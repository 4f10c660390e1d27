/* ONNX Gemm (transA/transB/alpha/beta, optional C broadcast to [M, N]) and
 * MatMul (numpy semantics: 1-D promotion, broadcast batch dims), float32:
 * shape inference, the shared parameter parser and the ref / cpu runners.
 * Covered by tests/test_ops_dense.c and tests/parity_gemm.c. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/op_util.h"

/* m, n, k as given by shapes (before the batch), for either op. */
typedef struct mm_shape {
    int64_t m, n, k;
    int trans_a, trans_b;
} mm_shape;

static ptq_status gemm_shape(ptq_ctx *ctx, const ptq_op_io *io, mm_shape *s)
{
    const ptq_tensor *a = io->in[0]; /* [M, K] or [K, M] with transA */
    const ptq_tensor *b = io->in[1]; /* [K, N] or [N, K] with transB */
    char as[96], bs[96];
    if (a->ndim != 2 || b->ndim != 2)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "A %s and B %s must both be 2-D",
                           ptq_dims_str(a->dims, a->ndim, as, sizeof as),
                           ptq_dims_str(b->dims, b->ndim, bs, sizeof bs));
    s->trans_a = ptq_node_attr_int(io->node, "transA", 0) != 0;
    s->trans_b = ptq_node_attr_int(io->node, "transB", 0) != 0;
    s->m = a->dims[s->trans_a ? 1 : 0];
    s->k = a->dims[s->trans_a ? 0 : 1];
    s->n = b->dims[s->trans_b ? 0 : 1];
    const int64_t kb = b->dims[s->trans_b ? 1 : 0];
    if (kb != s->k)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "inner dims differ: A %s%s gives K=%lld, B %s%s gives K=%lld",
                           ptq_dims_str(a->dims, a->ndim, as, sizeof as), s->trans_a ? " (transA)" : "",
                           (long long)s->k, ptq_dims_str(b->dims, b->ndim, bs, sizeof bs),
                           s->trans_b ? " (transB)" : "", (long long)kb);
    return PTQ_OK;
}

/* Numpy matmul: a 1-D A is [1, K] and a 1-D B is [K, 1], their added dim
 * dropped from the output; dims before the last two broadcast. */
static ptq_status matmul_shape(ptq_ctx *ctx, const ptq_op_io *io, mm_shape *s, int *n_batch_dims,
                               int64_t *batch_dims /* [PTQ_MAX_DIMS] */)
{
    const ptq_tensor *a = io->in[0]; /* [..., M, K] or [K] */
    const ptq_tensor *b = io->in[1]; /* [..., K, N] or [K] */
    char as[96], bs[96];
    if (a->ndim < 1 || b->ndim < 1)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "MatMul inputs must be at least 1-D, got %s and %s",
                           ptq_dims_str(a->dims, a->ndim, as, sizeof as),
                           ptq_dims_str(b->dims, b->ndim, bs, sizeof bs));
    s->trans_a = s->trans_b = 0;
    s->m = a->ndim == 1 ? 1 : a->dims[a->ndim - 2];
    s->k = a->dims[a->ndim - 1];
    s->n = b->ndim == 1 ? 1 : b->dims[b->ndim - 1];
    const int64_t kb = b->dims[b->ndim == 1 ? 0 : b->ndim - 2];
    if (kb != s->k)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "inner dims differ: A %s has K=%lld, B %s has K=%lld",
                           ptq_dims_str(a->dims, a->ndim, as, sizeof as), (long long)s->k,
                           ptq_dims_str(b->dims, b->ndim, bs, sizeof bs), (long long)kb);
    const int na = a->ndim > 2 ? a->ndim - 2 : 0, nb = b->ndim > 2 ? b->ndim - 2 : 0;
    const int nd = na > nb ? na : nb;
    for (int i = 0; i < nd; i++) {
        const int ia = i - (nd - na), ib = i - (nd - nb);
        const int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "batch dims of A %s and B %s do not broadcast",
                               ptq_dims_str(a->dims, a->ndim, as, sizeof as),
                               ptq_dims_str(b->dims, b->ndim, bs, sizeof bs));
        batch_dims[i] = da == 1 ? db : da;
    }
    *n_batch_dims = nd;
    return PTQ_OK;
}

/* cblas takes 32-bit sizes. */
static ptq_status check_blas_size(ptq_ctx *ctx, const ptq_op_io *io, const mm_shape *s)
{
    if (s->m > INT32_MAX || s->n > INT32_MAX || s->k > INT32_MAX)
        return ptq_op_unsupported(ctx, io, "GEMM of M=%lld N=%lld K=%lld: a size exceeds 2^31-1", (long long)s->m,
                                  (long long)s->n, (long long)s->k);
    return PTQ_OK;
}

ptq_status ptq_op_gemm_params(ptq_ctx *ctx, const ptq_op_io *io, ptq_gemm_params *p)
{
    ptq_status st = PTQ_OK;
    mm_shape s;
    int n_batch_dims;
    int64_t batch_dims[PTQ_MAX_DIMS];
    const int is_gemm = ptq_op_of(io)->traits->id == PTQ_OP_GEMM;
    PTQ_TRY(st, ptq_op_need_float(ctx, io, 0), done);
    PTQ_TRY(st, ptq_op_need_float(ctx, io, 1), done);
    if (is_gemm)
        PTQ_TRY(st, gemm_shape(ctx, io, &s), done);
    else
        PTQ_TRY(st, matmul_shape(ctx, io, &s, &n_batch_dims, batch_dims), done);
    PTQ_TRY(st, check_blas_size(ctx, io, &s), done);
    p->m = s.m;
    p->n = s.n;
    p->k = s.k;
    p->trans_a = s.trans_a;
    p->trans_b = s.trans_b;
    p->alpha = is_gemm ? ptq_node_attr_float(io->node, "alpha", 1.0f) : 1.0f;
    p->beta = is_gemm && io->n_in > 2 && io->in[2] ? ptq_node_attr_float(io->node, "beta", 1.0f) : 0.0f;
done:
    return st;
}

ptq_status ptq_op_matmul_bias_params(ptq_ctx *ctx, const ptq_op_io *io, const ptq_tensor *bias, ptq_gemm_params *p,
                                     int *ok)
{
    *ok = 0;
    ptq_status st = ptq_op_gemm_params(ctx, io, p);
    if (st != PTQ_OK || io->in[1]->ndim != 2 || ptq_tensor_numel(bias) != p->n || p->trans_a || p->beta != 0.0f)
        return st;
    const int64_t mn = p->m * p->n;
    const int64_t n_batch = mn ? ptq_tensor_numel(io->out[0]) / mn : 0;
    if (n_batch <= 0)
        return PTQ_OK;
    p->m *= n_batch;
    *ok = 1;
    return PTQ_OK;
}

/* Element strides of Gemm's C (rank 0..2) as broadcast over [M, N] (0 on broadcast dims). */
static ptq_status gemm_c_strides(ptq_ctx *ctx, const ptq_op_io *io, const ptq_gemm_params *p, int64_t *s_m,
                                 int64_t *s_n)
{
    const ptq_tensor *c = io->in[2]; /* [M, N] or anything unidirectionally broadcastable to it */
    char cs[96];
    const int64_t d_m = c->ndim == 2 ? c->dims[0] : 1, d_n = c->ndim >= 1 ? c->dims[c->ndim - 1] : 1;
    const int64_t opset = io->graph ? io->graph->opset : 0;
    const int strict = opset > 0 && opset < 7 && ptq_node_attr_int(io->node, "broadcast", 0) == 0; /* Gemm-1/6 */
    if (c->ndim > 2 || (d_m != 1 && d_m != p->m) || (d_n != 1 && d_n != p->n) ||
        (strict && (c->ndim != 2 || d_m != p->m || d_n != p->n)))
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "C %s does not %s to Y [%lld, %lld]",
                           ptq_dims_str(c->dims, c->ndim, cs, sizeof cs), strict ? "match (broadcast=0)" : "broadcast",
                           (long long)p->m, (long long)p->n);
    *s_m = d_m == 1 ? 0 : d_n;
    *s_n = d_n == 1 ? 0 : 1;
    return PTQ_OK;
}

static ptq_status gemm_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_gemm_params p;
    int64_t s_m, s_n;
    ptq_status st = ptq_op_gemm_params(ctx, io, &p);
    if (st != PTQ_OK)
        return st;
    if (io->n_in > 2 && io->in[2]) {
        if ((st = ptq_op_need_float(ctx, io, 2)) != PTQ_OK || (st = gemm_c_strides(ctx, io, &p, &s_m, &s_n)) != PTQ_OK)
            return st;
    }
    ptq_tensor *y = io->out[0]; /* [M, N] */
    y->dtype = PTQ_DT_FLOAT;
    y->ndim = 2;
    y->dims[0] = p.m;
    y->dims[1] = p.n;
    return PTQ_OK;
}

typedef void (*gemm_kernel)(const ptq_gemm_params *, const float *, const float *, float *);

static ptq_status gemm_run(ptq_ctx *ctx, const ptq_op_io *io, gemm_kernel k)
{
    ptq_gemm_params p;
    int64_t s_m, s_n;
    ptq_status st = ptq_op_gemm_params(ctx, io, &p);
    if (st != PTQ_OK)
        return st;
    float *y = io->out[0]->data; /* [M, N] */
    if (p.beta != 0.0f) {
        const float *c = io->in[2]->data;
        if ((st = gemm_c_strides(ctx, io, &p, &s_m, &s_n)) != PTQ_OK)
            return st;
        for (int64_t i = 0; i < p.m; i++)
            for (int64_t j = 0; j < p.n; j++)
                y[i * p.n + j] = c[i * s_m + j * s_n];
    }
    k(&p, io->in[0]->data, io->in[1]->data, y);
    return PTQ_OK;
}

static ptq_status gemm_run_ref(ptq_ctx *ctx, const ptq_op_io *io)
{
    return gemm_run(ctx, io, ptq_k_gemm_ref);
}

static ptq_status gemm_run_cpu(ptq_ctx *ctx, const ptq_op_io *io)
{
    return gemm_run(ctx, io, ptq_k_gemm_cpu);
}

static ptq_status matmul_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_status st = PTQ_OK;
    mm_shape s;
    int nd;
    int64_t batch_dims[PTQ_MAX_DIMS];
    ptq_gemm_params p;
    PTQ_TRY(st, ptq_op_gemm_params(ctx, io, &p), done);
    PTQ_TRY(st, matmul_shape(ctx, io, &s, &nd, batch_dims), done);
    ptq_tensor *y = io->out[0]; /* [batch..., M (unless A is 1-D), N (unless B is 1-D)] */
    y->dtype = PTQ_DT_FLOAT;
    y->ndim = 0;
    for (int i = 0; i < nd; i++)
        y->dims[y->ndim++] = batch_dims[i];
    if (io->in[0]->ndim > 1)
        y->dims[y->ndim++] = s.m;
    if (io->in[1]->ndim > 1)
        y->dims[y->ndim++] = s.n;
done:
    return st;
}

typedef void (*gemm_batched_kernel)(const ptq_gemm_params *, int64_t, const int64_t *, const int64_t *,
                                    const float *, const float *, float *);

/* Element offset of batch slice `idx` of x (rank x_nd, matrix dims last,
 * batch dims right-aligned against the nd output batch dims, broadcast ones
 * contributing 0). */
static int64_t batch_offset(const ptq_tensor *x, int nd, const int64_t *batch_dims, int64_t idx)
{
    const int nx = x->ndim > 2 ? x->ndim - 2 : 0;
    int64_t off = 0, stride = x->ndim >= 2 ? x->dims[x->ndim - 1] * x->dims[x->ndim - 2] : x->dims[0];
    for (int i = nd - 1; i >= 0; i--) {
        const int64_t pos = idx % batch_dims[i];
        idx /= batch_dims[i];
        const int ix = i - (nd - nx);
        if (ix < 0)
            continue;
        if (x->dims[ix] != 1)
            off += pos * stride;
        stride *= x->dims[ix];
    }
    return off;
}

static ptq_status matmul_run(ptq_ctx *ctx, const ptq_op_io *io, gemm_kernel k, gemm_batched_kernel kb)
{
    ptq_status st = PTQ_OK;
    mm_shape s;
    int nd;
    int64_t batch_dims[PTQ_MAX_DIMS];
    ptq_gemm_params p;
    int64_t *offs = NULL;
    const ptq_tensor *a = io->in[0], *b = io->in[1];
    PTQ_TRY(st, ptq_op_gemm_params(ctx, io, &p), done);
    PTQ_TRY(st, matmul_shape(ctx, io, &s, &nd, batch_dims), done);
    const int64_t n_batch = ptq_dims_prod(batch_dims, 0, nd);
    const int64_t a_batch = a->ndim > 2 ? ptq_dims_prod(a->dims, 0, a->ndim - 2) : 1;
    const int64_t b_batch = b->ndim > 2 ? ptq_dims_prod(b->dims, 0, b->ndim - 2) : 1;
    if (b_batch == 1 && a_batch == n_batch) {
        /* B is shared by every slice and A's slices are stacked rows: one GEMM */
        p.m *= n_batch;
        PTQ_TRY(st, check_blas_size(ctx, io, &(mm_shape){p.m, p.n, p.k, 0, 0}), done);
        k(&p, a->data, b->data, io->out[0]->data);
        goto done;
    }
    offs = malloc(2 * (size_t)n_batch * sizeof *offs);
    if (!offs)
        return ptq_op_fail(ctx, io, PTQ_ERR_NOMEM, "no memory for %lld batch offsets", (long long)n_batch);
    for (int64_t i = 0; i < n_batch; i++) {
        offs[i] = batch_offset(a, nd, batch_dims, i);
        offs[n_batch + i] = batch_offset(b, nd, batch_dims, i);
    }
    kb(&p, n_batch, offs, offs + n_batch, a->data, b->data, io->out[0]->data);
done:
    free(offs);
    return st;
}

static ptq_status matmul_run_ref(ptq_ctx *ctx, const ptq_op_io *io)
{
    return matmul_run(ctx, io, ptq_k_gemm_ref, ptq_k_gemm_batched_ref);
}

static ptq_status matmul_run_cpu(ptq_ctx *ctx, const ptq_op_io *io)
{
    return matmul_run(ctx, io, ptq_k_gemm_cpu, ptq_k_gemm_batched_cpu);
}

const ptq_op_def ptq_op_Gemm = {PTQ_OP_TRAITS(GEMM), 1, 0, gemm_infer, gemm_run_ref, gemm_run_cpu, 0, 0};
const ptq_op_def ptq_op_MatMul = {PTQ_OP_TRAITS(MATMUL), 1, 0, matmul_infer, matmul_run_ref, matmul_run_cpu, 0, 0};
