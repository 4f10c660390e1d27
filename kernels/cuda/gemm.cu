/* GEMM on the GPU through cuBLAS (FP32 math), mirroring ptq_k_gemm_ref:
 * row-major operands are handed to column-major cuBLAS as their transposes,
 * computing y^T = op(b)^T op(a)^T. A single GEMM runs as one cuBLASLt call
 * with an algorithm fixed per shape of the weights (gemm_lt), or else in
 * blocks of gemm_block_rows(n, k) rows of y, the last one zero-padded in
 * scratch, so every SGEMM has the same shape whatever m (the batch, for
 * Gemm; the batch times the sequence, for a transformer's MatMul): cuBLAS
 * picks its kernel by shape, and either way a row's result then does not
 * depend on the batch it came in. Also the strided-batched form MatMul uses
 * (its shape follows the batch). Under --math fp64 (PTQ_CUDA_MATH_FP64) the
 * same shapes through DGEMM on double copies of the operands, each result
 * rounded to FP32 once (gemm_f64). Covered by tests/cuda_parity_kernels.c. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/probe.cuh"

/* rows of y per DGEMM call (--math fp64) */
#define GEMM_ROW_BLOCK 128

/* Rows of y per SGEMM call: about 2^23 outputs a call, so that one call
 * fills the GPU (128 rows of a 768-wide layer made a handful of thread
 * blocks: ViT-B/16's projections ran at a fifth of PyTorch's rate), a
 * multiple of 128 from 128 to 4096, fewer where the padded block's scratch
 * would pass 2^24 floats. A function of n and k alone, never of m. */
static int64_t gemm_block_rows(int64_t n, int64_t k)
{
    int64_t r = ((((int64_t)1 << 23) / (n > 0 ? n : 1)) + 127) / 128 * 128;
    r = r < 128 ? 128 : r > 4096 ? 4096 : r;
    while (r > 128 && r * (k + n) > ((int64_t)1 << 24))
        r = (r / 2 + 127) / 128 * 128;
    return r;
}

/* dst: [rows, k] = rows r0 .. r0+mb of op(a) (a: [m, k], or [k, m] when
 * trans_a), then zero rows; T: float, or double under --math fp64. */
template <typename T>
static __global__ void pack_rows_kernel(const float *a, int64_t m, int64_t k, int trans_a, int64_t r0, int64_t mb,
                                        int64_t rows, T *dst)
{
    const int64_t total = rows * k;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t row = i / k, col = i % k;
        dst[i] = row >= mb ? (T)0 : (T)(trans_a ? a[col * m + r0 + row] : a[(r0 + row) * k + col]);
    }
}

/* dst [n_slices, len] = slice s of src (src + s * stride, len floats) in double */
static __global__ void widen_slices_kernel(int64_t n_slices, int64_t len, const float *src, int64_t stride,
                                           double *dst)
{
    const int64_t total = n_slices * len;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x)
        dst[i] = (double)src[(i / len) * stride + i % len];
}

ptq_status ptq_cuda_widen(ptq_ctx *ctx, ptq_cuda_dev *d, int64_t n_slices, int64_t len, const float *src,
                          int64_t stride, double *dst)
{
    widen_slices_kernel<<<ptq_cuda_blocks(n_slices * len), PTQ_CUDA_BLOCK, 0, d->stream>>>(n_slices, len, src, stride,
                                                                                           dst);
    PTQ_CUDA_LAUNCHED(ctx, "widen_slices_kernel");
    return PTQ_OK;
}

/* y (slice s at y + s * y_stride, [m, n] each) = alpha * acc + beta * y,
 * summed in double and rounded once, as kernels/ref (y not read when beta 0) */
static __global__ void finish_f64_kernel(int64_t n_slices, int64_t mn, const double *acc, float alpha, float beta,
                                         float *y, int64_t y_stride)
{
    const int64_t total = n_slices * mn;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        float *yi = y + (i / mn) * y_stride + i % mn;
        double v = acc[i] * (double)alpha;
        if (beta != 0.0f)
            v += (double)beta * (double)*yi;
        *yi = (float)v;
    }
}

/* --math fp64: y = alpha * op(a) @ op(b) + beta * y for n_batch slices, the
 * operands widened to double in the scratch, one DGEMM (alpha 1, beta 0)
 * per GEMM_ROW_BLOCK rows of a single GEMM (so a row's bits do not depend on
 * m, the batch) or one strided-batched DGEMM over the slices, then alpha and
 * beta applied in double and each result rounded once. */
static ptq_status gemm_f64(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_gemm_params *p, int64_t n_batch, const float *a,
                           int64_t a_stride, const float *b, int64_t b_stride, float *y, int64_t y_stride)
{
    const int m = (int)p->m, n = (int)p->n, k = (int)p->k, R = GEMM_ROW_BLOCK;
    const int64_t m_rows = n_batch == 1 ? (p->m + R - 1) / R * R : p->m; /* a single GEMM: whole row blocks */
    const int64_t na = n_batch == 1 || a_stride == 0 ? 1 : n_batch, nb = b_stride == 0 ? 1 : n_batch;
    const int64_t a_len = m_rows * p->k, b_len = p->k * p->n, y_len = p->m * p->n;
    const size_t bytes = (size_t)(na * a_len + nb * b_len + n_batch * m_rows * p->n) * sizeof(double);
    void *scratch = NULL;
    PTQ_TRY_RET(ptq_cuda_scratch(ctx, d, bytes, &scratch));
    double *ad = (double *)scratch, *bd = ad + na * a_len, *yd = bd + nb * b_len;
    const double one = 1.0, zero = 0.0;
    const cublasOperation_t op_b = p->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const int ld_b = p->trans_b ? k : n;
    PTQ_TRY_RET(ptq_cuda_widen(ctx, d, nb, b_len, b, b_stride, bd));
    if (n_batch == 1) {
        /* a as untransposed [m_rows, k], the rows past m zero */
        pack_rows_kernel<double><<<ptq_cuda_blocks(a_len), PTQ_CUDA_BLOCK, 0, d->stream>>>(a, p->m, p->k, p->trans_a,
                                                                                          0, p->m, m_rows, ad);
        PTQ_CUDA_LAUNCHED(ctx, "pack_rows_kernel");
        for (int64_t r0 = 0; r0 < p->m; r0 += R)
            PTQ_CUBLAS(ctx, d, dgemm, d->cublas, op_b, CUBLAS_OP_N, n, R, k, &one, bd, ld_b, ad + r0 * k, k, &zero,
                       yd + r0 * n, n);
    } else {
        PTQ_TRY_RET(ptq_cuda_widen(ctx, d, na, a_len, a, a_stride, ad));
        PTQ_CUBLAS(ctx, d, dgemm_strided_batched, d->cublas, op_b, p->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k,
                   &one, bd, ld_b, nb == 1 ? 0 : b_len, ad, p->trans_a ? m : k, na == 1 ? 0 : a_len, &zero, yd, n,
                   y_len, (int)n_batch);
    }
    finish_f64_kernel<<<ptq_cuda_blocks(n_batch * y_len), PTQ_CUDA_BLOCK, 0, d->stream>>>(n_batch, y_len, yd, p->alpha,
                                                                                         p->beta, y, y_stride);
    PTQ_CUDA_LAUNCHED(ctx, "finish_f64_kernel");
    return PTQ_OK;
}

/* One GEMM (n_batch 1) as SGEMMs of exactly gemm_block_rows rows: full
 * blocks of an untransposed a in place, the rest through zero-padded scratch
 * copies. */
static ptq_status gemm_row_blocks(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_gemm_params *p, const float *a,
                                  const float *b, float *y)
{
    const int n = (int)p->n, k = (int)p->k, R = (int)gemm_block_rows(p->n, p->k);
    const cublasOperation_t op_b = p->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const int ld_b = p->trans_b ? k : n;
    float *ap = NULL, *yp = NULL;
    for (int64_t r0 = 0; r0 < p->m; r0 += R) {
        const int64_t mb = p->m - r0 < R ? p->m - r0 : R;
        if (mb == R && !p->trans_a) {
            PTQ_CUBLAS(ctx, d, sgemm, d->cublas, op_b, CUBLAS_OP_N, n, R, k, &p->alpha, b, ld_b, a + r0 * k, k,
                                              &p->beta, y + r0 * n, n);
            continue;
        }
        if (!ap) {
            void *scratch = NULL;
            PTQ_TRY_RET(ptq_cuda_scratch(ctx, d, (size_t)R * (size_t)(k + n) * sizeof(float), &scratch));
            ap = (float *)scratch;
            yp = ap + (int64_t)R * k;
        }
        pack_rows_kernel<float><<<ptq_cuda_blocks((int64_t)R * k), PTQ_CUDA_BLOCK, 0, d->stream>>>(
            a, p->m, k, p->trans_a, r0, mb, R, ap);
        PTQ_CUDA_LAUNCHED(ctx, "pack_rows_kernel");
        if (p->beta != 0.0f)
            PTQ_TRY_RET(ptq_cuda_copy(ctx, d, yp, y + r0 * n, (size_t)(mb * n) * sizeof(float)));
        PTQ_CUBLAS(ctx, d, sgemm, d->cublas, op_b, CUBLAS_OP_N, n, R, k, &p->alpha, b, ld_b, ap, k, &p->beta,
                                          yp, n);
        PTQ_TRY_RET(ptq_cuda_copy(ctx, d, y + r0 * n, yp, (size_t)(mb * n) * sizeof(float)));
    }
    return PTQ_OK;
}

/* ---- one cuBLASLt call of all the rows ----
 * A row's result must not depend on the GEMM it came in, and cublasSgemm picks its kernel by shape, m included:
 * hence gemm_row_blocks' fixed shapes, at the cost of a padded last block (ViT-B/16's 25,216 rows ran as 7 blocks
 * of 4,096) and of waves that do not fill the GPU. cuBLASLt lets the algorithm be chosen once per shape of the
 * weights (n, k), for LT_REF_ROWS rows, and then run for any m: among its heuristic's candidates the first that
 * splits no sum (split-K 1, no workspace), so that each output is one thread block's sum over k in one order
 * whatever m. tests/cuda_parity_kernels.c's row invariance checks it bit for bit. */
enum { LT_REF_ROWS = 4096, LT_CANDIDATES = 16 };
/* Candidates that split no sum but ask for up to this much workspace are eligible too (on an H100 in TF32 some ran
 * 1.5 to 1.8x faster than the first without, bench/gemm_lt_survey.c); their bits stay the same at every row count
 * (tests/cuda_parity_kernels.c's row invariance, bench/results/2026-12-07-gpu-check-h100.md). PTQ_GEMM_WS=0: none
 * that needs workspace. */
#define PTQ_LT_WS_BYTES ((size_t)1 << 20)

/* A cuBLASLt GEMM's descriptors: w the weights b, x the rows a, y the result (column-major: y^T = op(b)^T a^T). */
typedef struct lt_desc {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t w, x, y;
} lt_desc;

static void lt_desc_free(ptq_cuda_dev *d, lt_desc *c)
{
    if (c->op)
        (void)d->blas.lt_desc_destroy(c->op);
    cublasLtMatrixLayout_t *layouts[3] = {&c->w, &c->x, &c->y};
    for (int i = 0; i < 3; i++)
        if (*layouts[i])
            (void)d->blas.lt_layout_destroy(*layouts[i]);
}

/* c (zeroed by the caller, freed by it too) for m rows of k against b ([k, n], or [n, k] when trans_b), with
 * bias [n] added in the epilogue when not NULL. */
static ptq_status lt_describe(ptq_ctx *ctx, ptq_cuda_dev *d, int64_t m, int64_t n, int64_t k, int trans_b,
                              const float *bias, lt_desc *c)
{
    const cublasComputeType_t math = d->math == PTQ_CUDA_MATH_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    const cublasOperation_t op_w = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, op_x = CUBLAS_OP_N;
    PTQ_CUBLAS(ctx, d, lt_desc_create, &c->op, math, CUDA_R_32F);
    PTQ_CUBLAS(ctx, d, lt_desc_set, c->op, CUBLASLT_MATMUL_DESC_TRANSA, &op_w, sizeof op_w);
    PTQ_CUBLAS(ctx, d, lt_desc_set, c->op, CUBLASLT_MATMUL_DESC_TRANSB, &op_x, sizeof op_x);
    if (bias) {
        const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
        PTQ_CUBLAS(ctx, d, lt_desc_set, c->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue);
        PTQ_CUBLAS(ctx, d, lt_desc_set, c->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
    }
    PTQ_CUBLAS(ctx, d, lt_layout_create, &c->w, CUDA_R_32F, (uint64_t)(trans_b ? k : n), (uint64_t)(trans_b ? n : k),
               trans_b ? k : n);
    PTQ_CUBLAS(ctx, d, lt_layout_create, &c->x, CUDA_R_32F, (uint64_t)k, (uint64_t)m, k);
    PTQ_CUBLAS(ctx, d, lt_layout_create, &c->y, CUDA_R_32F, (uint64_t)n, (uint64_t)m, n);
    return PTQ_OK;
}

/* Tuning: another of the eligible candidates replaces the first where it runs the probe (LT_PROBE_ROWS random rows,
 * every 8th near the bottom of the float range, random weights and bias) in at most LT_MIN_GAIN of the first's time
 * with its bits: a candidate that sums in another order, or flushes subnormals, shows on the probe. The choice
 * depends on timings but never changes a result. PTQ_GEMM_TUNE=0 turns it off (bench/gemm_lt_survey.c times every
 * candidate on ViT-B/16's shapes: on an H100 some ran 5 to 18% faster than the first, all with its bits). */
enum { LT_PROBE_ROWS = 16384 };
#define LT_MIN_GAIN 0.97f

typedef struct lt_probe {
    float *x, *w, *bias, *y_ref, *y;
    unsigned long long *diff;
    cudaEvent_t e0, e1;
} lt_probe;

static cublasStatus_t lt_run(ptq_cuda_dev *d, const lt_desc *c, const cublasLtMatmulAlgo_t *algo, const lt_probe *t,
                             float *y)
{
    const float one = 1.0f, zero = 0.0f;
    return d->blas.lt_matmul(d->lt, c->op, &one, t->w, c->w, t->x, c->x, &zero, y, c->y, y, c->y, algo, d->lt_ws,
                             d->lt_ws ? PTQ_LT_WS_BYTES : 0, d->stream);
}

/* Milliseconds of one run of algo on the probe (after the runs before it), or -1 when it fails. */
static float lt_time(ptq_cuda_dev *d, const lt_desc *c, const cublasLtMatmulAlgo_t *algo, const lt_probe *t)
{
    float ms = -1.0f;
    if (cudaEventRecord(t->e0, d->stream) != cudaSuccess || lt_run(d, c, algo, t, t->y) != CUBLAS_STATUS_SUCCESS ||
        cudaEventRecord(t->e1, d->stream) != cudaSuccess || cudaEventSynchronize(t->e1) != cudaSuccess ||
        cudaEventElapsedTime(&ms, t->e0, t->e1) != cudaSuccess) {
        (void)cudaGetLastError(); /* not sticky: this candidate is passed over */
        return -1.0f;
    }
    return ms;
}

/* pl->algo: the fastest of cand[n_cand] (cand[0] the reference) with the reference's bits on the probe; left at
 * cand[0] where tuning is off (PTQ_GEMM_TUNE=0), there is one candidate, or the probe's memory cannot be had. */
static ptq_status lt_tune(ptq_ctx *ctx, ptq_cuda_dev *d, ptq_lt_plan *pl, const cublasLtMatmulAlgo_t *cand,
                          const size_t *ws, int n_cand)
{
    const char *env = getenv("PTQ_GEMM_TUNE");
    pl->n_cand = n_cand;
    if ((env && strcmp(env, "0") == 0) || n_cand < 2)
        return PTQ_OK;
    const int64_t rows = LT_PROBE_ROWS, n_x = rows * pl->k, n_w = pl->n * pl->k, n_y = rows * pl->n;
    const int64_t room[5] = {n_x, n_w, pl->n, n_y, n_y};
    size_t at[6];
    size_t bytes = carve(room, 5, at);
    at[5] = bytes;
    bytes += 256;
    char *mem = NULL;
    if (cudaMalloc((void **)&mem, bytes) != cudaSuccess) {
        (void)cudaGetLastError(); /* not sticky: the runs go on with the reference */
        return PTQ_OK;
    }
    lt_probe t;
    memset(&t, 0, sizeof t);
    float **bufs[5] = {&t.x, &t.w, &t.bias, &t.y_ref, &t.y};
    for (int i = 0; i < 5; i++)
        *bufs[i] = (float *)(mem + at[i]);
    t.diff = (unsigned long long *)(mem + at[5]);
    int ok = cudaEventCreate(&t.e0) == cudaSuccess && cudaEventCreate(&t.e1) == cudaSuccess;
    /* x: every 8th row at 2^-120; w scaled for sums of order 1; bias: every 8th 0 */
    const int64_t group_len[3] = {pl->k, n_w, 1};
    const float scale[3] = {1.0f, 1.0f / sqrtf((float)pl->k), 1.0f}, odd[3] = {ldexpf(1.0f, -120), 1.0f, 0.0f};
    for (int i = 0; ok && i < 3; i++) {
        probe_fill_kernel<<<ptq_cuda_blocks(room[i]), PTQ_CUDA_BLOCK, 0, d->stream>>>(
            *bufs[i], room[i], 0x2F6B1A3Du * (uint32_t)(i + 1), scale[i], group_len[i], odd[i]);
        ok = cudaGetLastError() == cudaSuccess;
    }
    if (!ok)
        (void)cudaGetLastError();
    lt_desc c = {};
    ptq_status st = PTQ_OK;
    if (ok)
        st = lt_describe(ctx, d, rows, pl->n, pl->k, pl->trans_b, pl->bias ? t.bias : NULL, &c);
    ok = ok && st == PTQ_OK && lt_run(d, &c, &cand[0], &t, t.y_ref) == CUBLAS_STATUS_SUCCESS;
    const float ref_ms = ok ? lt_time(d, &c, &cand[0], &t) : -1.0f;
    int best = 0;
    float best_ms = ref_ms * LT_MIN_GAIN;
    for (int i = 1; ok && ref_ms > 0 && i < n_cand; i++) {
        if (lt_run(d, &c, &cand[i], &t, t.y) != CUBLAS_STATUS_SUCCESS) {
            (void)cudaGetLastError();
            continue;
        }
        const int same = probe_same_bits(d, t.y_ref, t.y, n_y, t.diff);
        if (same < 0) {
            st = ptq_fail(ctx, PTQ_ERR_CUDA, "the GPU failed while tuning a GEMM: %s",
                          cudaGetErrorString(cudaGetLastError()));
            break;
        }
        pl->n_same += same;
        const float ms = same ? lt_time(d, &c, &cand[i], &t) : -1.0f;
        if (ms > 0 && ms < best_ms) {
            best = i;
            best_ms = ms;
        }
    }
    lt_desc_free(d, &c);
    if (t.e0)
        (void)cudaEventDestroy(t.e0);
    if (t.e1)
        (void)cudaEventDestroy(t.e1);
    (void)cudaStreamSynchronize(d->stream);
    (void)cudaFree(mem);
    (void)cudaGetLastError();
    pl->ref_ms = ref_ms;
    if (st == PTQ_OK && best > 0) {
        pl->algo = cand[best];
        pl->ws_bytes = ws[best];
        pl->tuned = 1;
        pl->tuned_ms = best_ms;
    }
    return st;
}

/* The first of the heuristic's candidates for c that splits no sum and needs at most PTQ_LT_WS_BYTES of workspace
 * (none with PTQ_GEMM_WS=0), into pl, then tuned (lt_tune). */
static ptq_status lt_choose(ptq_ctx *ctx, ptq_cuda_dev *d, const lt_desc *c, ptq_lt_plan *pl)
{
    const char *ws_env = getenv("PTQ_GEMM_WS");
    const int ws_on = !(ws_env && strcmp(ws_env, "0") == 0);
    if (ws_on && !d->lt_ws && cudaMalloc(&d->lt_ws, PTQ_LT_WS_BYTES) != cudaSuccess) {
        (void)cudaGetLastError(); /* not sticky: no workspace then */
        d->lt_ws = NULL;
    }
    cublasLtMatmulPreference_t pref = NULL;
    PTQ_CUBLAS(ctx, d, lt_pref_create, &pref);
    const size_t max_ws = ws_on && d->lt_ws ? PTQ_LT_WS_BYTES : 0;
    const uint32_t align = 16;
    const cublasLtMatmulPreferenceAttributes_t aligns[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    cublasStatus_t err = d->blas.lt_pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_ws,
                                             sizeof max_ws);
    for (int i = 0; i < 4 && err == CUBLAS_STATUS_SUCCESS; i++)
        err = d->blas.lt_pref_set(pref, aligns[i], &align, sizeof align);
    cublasLtMatmulHeuristicResult_t found[LT_CANDIDATES];
    int n_found = 0;
    if (err == CUBLAS_STATUS_SUCCESS) {
        err = d->blas.lt_heuristic(d->lt, c->op, c->w, c->x, c->y, c->y, pref, LT_CANDIDATES, found, &n_found);
        if (err == CUBLAS_STATUS_NOT_SUPPORTED) { /* no candidate at all: the row blocks take this shape */
            err = CUBLAS_STATUS_SUCCESS;
            n_found = 0;
        }
    }
    (void)d->blas.lt_pref_destroy(pref);
    if (err != CUBLAS_STATUS_SUCCESS)
        return ptq_cublas_fail_at(ctx, __FILE__, __LINE__, d, err, "cuBLASLt cublasLtMatmulAlgoGetHeuristic");
    cublasLtMatmulAlgo_t cand[LT_CANDIDATES];
    size_t ws[LT_CANDIDATES];
    int n_cand = 0;
    for (int i = 0; i < n_found; i++) {
        uint32_t splits = 0;
        size_t written = 0;
        if (found[i].state != CUBLAS_STATUS_SUCCESS || found[i].workspaceSize > max_ws ||
            d->blas.lt_algo_get(&found[i].algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splits, sizeof splits, &written) !=
                CUBLAS_STATUS_SUCCESS || splits > 1)
            continue;
        ws[n_cand] = found[i].workspaceSize;
        cand[n_cand++] = found[i].algo;
    }
    if (n_cand == 0)
        return PTQ_OK;
    pl->algo = cand[0];
    pl->ws_bytes = ws[0];
    pl->found = 1;
    return lt_tune(ctx, d, pl, cand, ws, n_cand);
}

/* *algo: the algorithm for this shape of the weights, chosen the first time it is seen; NULL when none. */
static ptq_status lt_algo(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_gemm_params *p, const float *bias,
                          const cublasLtMatmulAlgo_t **algo)
{
    *algo = NULL;
    const int with_bias = bias != NULL;
    for (int i = 0; i < d->n_lt; i++) {
        const ptq_lt_plan *pl = &d->lt_plans[i];
        if (pl->n == p->n && pl->k == p->k && pl->trans_b == p->trans_b && pl->math == d->math &&
            pl->bias == with_bias) {
            *algo = pl->found ? &pl->algo : NULL;
            return PTQ_OK;
        }
    }
    if (d->n_lt == d->cap_lt) {
        const int cap = d->cap_lt ? 2 * d->cap_lt : 16;
        ptq_lt_plan *grown = (ptq_lt_plan *)realloc(d->lt_plans, (size_t)cap * sizeof *grown);
        if (!grown)
            return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory keeping cuBLASLt's algorithms");
        d->lt_plans = grown;
        d->cap_lt = cap;
    }
    ptq_lt_plan *pl = &d->lt_plans[d->n_lt];
    memset(pl, 0, sizeof *pl);
    pl->n = p->n;
    pl->k = p->k;
    pl->trans_b = p->trans_b;
    pl->math = d->math;
    pl->bias = with_bias;
    lt_desc c = {};
    ptq_status st = lt_describe(ctx, d, LT_REF_ROWS, p->n, p->k, p->trans_b, bias, &c);
    if (st == PTQ_OK)
        st = lt_choose(ctx, d, &c, pl);
    lt_desc_free(d, &c);
    if (st != PTQ_OK)
        return st;
    d->n_lt++;
    *algo = pl->found ? &pl->algo : NULL;
    snprintf(d->lt_last, sizeof d->lt_last, "n %lld k %lld%s%s: %d candidates, %d with the first's bits, %s",
             (long long)pl->n, (long long)pl->k, pl->trans_b ? " (weights [n, k])" : "", pl->bias ? " + bias" : "",
             pl->n_cand, pl->n_same, pl->tuned ? "tuned" : "untuned");
    if (pl->ws_bytes) {
        const size_t used = strlen(d->lt_last);
        snprintf(d->lt_last + used, sizeof d->lt_last - used, ", %zu bytes of workspace", pl->ws_bytes);
    }
    if (pl->tuned) {
        const size_t used = strlen(d->lt_last);
        snprintf(d->lt_last + used, sizeof d->lt_last - used, " (%.3f ms against %.3f)", pl->tuned_ms, pl->ref_ms);
    }
    return PTQ_OK;
}

static int aligned16(const void *ptr)
{
    return (uintptr_t)ptr % 16 == 0;
}

/* y = alpha op(a) op(b) + beta y (+ bias [n] on every row, with beta 0) as one cuBLASLt call of all p->m rows:
 * *done = 1; *done = 0 and nothing queued where this GEMM does not go that way (no cuBLASLt, --math fp64, a
 * transposed a, n or k not whole 16-byte units, a pointer off 16 bytes, no algorithm that splits no sum). What
 * decides is the weights' shape and the pointers' alignment, never m. */
static ptq_status gemm_lt(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_gemm_params *p, const float *a, const float *b,
                          const float *bias, float *y, int *done)
{
    *done = 0;
    if (!d->lt || d->math == PTQ_CUDA_MATH_FP64 || p->trans_a || p->n % 4 != 0 || p->k % 4 != 0 || !aligned16(a) ||
        !aligned16(b) || !aligned16(y) || (bias && (!aligned16(bias) || p->beta != 0.0f)))
        return PTQ_OK;
    const cublasLtMatmulAlgo_t *algo = NULL;
    PTQ_TRY_RET(lt_algo(ctx, d, p, bias, &algo));
    if (!algo)
        return PTQ_OK;
    lt_desc c = {};
    ptq_status st = lt_describe(ctx, d, p->m, p->n, p->k, p->trans_b, bias, &c);
    if (st == PTQ_OK) {
        const cublasStatus_t err = d->blas.lt_matmul(d->lt, c.op, &p->alpha, b, c.w, a, c.x, &p->beta, y, c.y, y,
                                                     c.y, algo, d->lt_ws, d->lt_ws ? PTQ_LT_WS_BYTES : 0, d->stream);
        if (err != CUBLAS_STATUS_SUCCESS)
            st = ptq_cublas_fail_at(ctx, __FILE__, __LINE__, d, err, "cuBLASLt cublasLtMatmul");
    }
    lt_desc_free(d, &c);
    if (st == PTQ_OK) {
        *done = 1;
        d->n_lt_runs++;
    }
    return st;
}

/* y: [total] = beta * y, or 0 when beta == 0 (y not read): the k == 0 product */
static __global__ void scale_kernel(int64_t total, float beta, float *y)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = beta == 0.0f ? 0.0f : beta * y[i];
}

extern "C" ptq_status ptq_k_gemm_batched_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_gemm_params *p,
                                              int64_t n_batch, const float *a, int64_t a_stride, const float *b,
                                              int64_t b_stride, float *y, int64_t y_stride)
{
    if (p->m < 0 || p->n < 0 || p->k < 0 || n_batch < 0)
        return ptq_fail(ctx, PTQ_ERR_SHAPE, "gemm: negative size m %lld n %lld k %lld batch %lld", (long long)p->m,
                        (long long)p->n, (long long)p->k, (long long)n_batch);
    if (p->m == 0 || p->n == 0 || n_batch == 0)
        return PTQ_OK;
    if (p->k == 0) {
        /* every product is empty: y = beta * y in each batch (y_stride apart) */
        for (int64_t i = 0; i < n_batch; i++) {
            scale_kernel<<<ptq_cuda_blocks(p->m * p->n), PTQ_CUDA_BLOCK, 0, d->stream>>>(p->m * p->n, p->beta,
                                                                                        y + i * y_stride);
            PTQ_CUDA_LAUNCHED(ctx, "scale_kernel");
        }
        return PTQ_OK;
    }
    if (p->m > INT_MAX || p->n > INT_MAX || p->k > INT_MAX || n_batch > INT_MAX)
        return ptq_fail(ctx, PTQ_ERR_UNSUPPORTED, "gemm: %lld x %lld x %lld (batch %lld) exceeds cuBLAS's int range",
                        (long long)p->m, (long long)p->n, (long long)p->k, (long long)n_batch);
    const int m = (int)p->m, n = (int)p->n, k = (int)p->k;
    const cublasOperation_t op_b = p->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_a = p->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const int ld_b = p->trans_b ? k : n; /* b: [k, n] or [n, k] row-major */
    const int ld_a = p->trans_a ? m : k; /* a: [m, k] or [k, m] row-major */
    PTQ_CUBLAS(ctx, d, set_stream, d->cublas, d->stream);
    if (d->math == PTQ_CUDA_MATH_FP64)
        return gemm_f64(ctx, d, p, n_batch, a, a_stride, b, b_stride, y, y_stride);
    if (n_batch == 1) {
        int done = 0;
        PTQ_TRY_RET(gemm_lt(ctx, d, p, a, b, NULL, y, &done));
        return done ? PTQ_OK : gemm_row_blocks(ctx, d, p, a, b, y);
    }
        PTQ_CUBLAS(ctx, d, sgemm_strided_batched, d->cublas, op_b, op_a, n, m, k, &p->alpha, b, ld_b, b_stride,
                                                        a, ld_a, a_stride, &p->beta, y, n, y_stride, (int)n_batch);
    return PTQ_OK;
}

extern "C" ptq_status ptq_k_gemm_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_gemm_params *p, const float *a,
                                      const float *b, float *y)
{
    return ptq_k_gemm_batched_cuda(ctx, d, p, 1, a, 0, b, 0, y, 0);
}

extern "C" ptq_status ptq_k_gemm_bias_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_gemm_params *p, const float *a,
                                           const float *b, const float *bias, float *y, int *done)
{
    *done = 0;
    if (p->m <= 0 || p->n <= 0 || p->k <= 0 || p->beta != 0.0f || p->m > INT_MAX || p->n > INT_MAX ||
        p->k > INT_MAX)
        return PTQ_OK;
    return gemm_lt(ctx, d, p, a, b, bias, y, done);
}
