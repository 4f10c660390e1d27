/* cuBLASLt's candidates for ViT-B/16's single GEMMs (25,216 rows: 128
 * images of 197 tokens), timed on the GPU against cublasSgemm of the same
 * call and against the algorithm ptq picks (kernels/cuda/gemm.cu's
 * gemm_lt: the heuristic's first candidate for 4,096 rows that splits no
 * sum and needs no workspace), in FP32 and TF32 math. For every candidate
 * of the heuristic's lists (for 4,096 rows without workspace, and for the
 * full rows with 64 MiB of it): its algorithm id, tile, stages, split-K,
 * workspace, time, TFLOP/s and whether its result has ptq's pick's bits.
 * Markdown on stdout. Built with the CUDA toolkit (build/bench/gemm_lt_survey,
 * bundled as bin/gemm_lt_survey with PTQ_BUNDLE_DIAG=1); run on the GPU
 * machine: bundle/bin/gemm_lt_survey [--rows M]. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

enum { REF_ROWS = 4096, MAX_CAND = 64, TIMED_RUNS = 5 };
#define WORKSPACE_BYTES ((size_t)64 << 20)

#define CK(call)                                                                                 \
    do {                                                                                         \
        cudaError_t e_ = (call);                                                                 \
        if (e_ != cudaSuccess) {                                                                 \
            fprintf(stderr, "gemm_lt_survey: %s: %s\n", #call, cudaGetErrorString(e_));          \
            exit(1);                                                                             \
        }                                                                                        \
    } while (0)
#define CB(call)                                                                                 \
    do {                                                                                         \
        cublasStatus_t s_ = (call);                                                              \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                       \
            fprintf(stderr, "gemm_lt_survey: %s: status %d\n", #call, (int)s_);                  \
            exit(1);                                                                             \
        }                                                                                        \
    } while (0)

typedef struct shape {
    int64_t n, k;
    int trans_b;
    const char *what;
} shape;

typedef struct gemm_bufs {
    float *x, *w, *y_ref, *y;
    void *ws;
} gemm_bufs;

static cublasLtHandle_t lt;
static cublasHandle_t blas;
static cudaStream_t stream;
static cudaEvent_t e0, e1;

static void fill(float *dev, int64_t n, float scale, unsigned seed)
{
    float *h = malloc((size_t)n * sizeof *h);
    if (!h)
        exit(1);
    srand(seed);
    for (int64_t i = 0; i < n; i++)
        h[i] = scale * ((float)rand() / (float)RAND_MAX * 2.0f - 1.0f);
    CK(cudaMemcpy(dev, h, (size_t)n * sizeof *h, cudaMemcpyHostToDevice));
    free(h);
}

/* y^T [n, m] = op(w)^T x^T in column-major terms, as gemm.cu's lt_describe */
static void describe(int64_t m, const shape *s, int tf32, cublasLtMatmulDesc_t *op, cublasLtMatrixLayout_t *lw,
                     cublasLtMatrixLayout_t *lx, cublasLtMatrixLayout_t *ly)
{
    const cublasOperation_t tw = s->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, tx = CUBLAS_OP_N;
    CB(cublasLtMatmulDescCreate(op, tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUDA_R_32F));
    CB(cublasLtMatmulDescSetAttribute(*op, CUBLASLT_MATMUL_DESC_TRANSA, &tw, sizeof tw));
    CB(cublasLtMatmulDescSetAttribute(*op, CUBLASLT_MATMUL_DESC_TRANSB, &tx, sizeof tx));
    CB(cublasLtMatrixLayoutCreate(lw, CUDA_R_32F, (uint64_t)(s->trans_b ? s->k : s->n),
                                  (uint64_t)(s->trans_b ? s->n : s->k), s->trans_b ? s->k : s->n));
    CB(cublasLtMatrixLayoutCreate(lx, CUDA_R_32F, (uint64_t)s->k, (uint64_t)m, s->k));
    CB(cublasLtMatrixLayoutCreate(ly, CUDA_R_32F, (uint64_t)s->n, (uint64_t)m, s->n));
}

static int heuristic(int64_t m, const shape *s, int tf32, size_t ws, cublasLtMatmulHeuristicResult_t *out, int cap)
{
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t lw, lx, ly;
    describe(m, s, tf32, &op, &lw, &lx, &ly);
    cublasLtMatmulPreference_t pref;
    CB(cublasLtMatmulPreferenceCreate(&pref));
    CB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    const uint32_t align = 16;
    const cublasLtMatmulPreferenceAttributes_t aligns[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    for (int i = 0; i < 4; i++)
        CB(cublasLtMatmulPreferenceSetAttribute(pref, aligns[i], &align, sizeof align));
    int got = 0;
    if (cublasLtMatmulAlgoGetHeuristic(lt, op, lw, lx, ly, ly, pref, cap, out, &got) != CUBLAS_STATUS_SUCCESS)
        got = 0;
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatmulDescDestroy(op);
    cublasLtMatrixLayoutDestroy(lw);
    cublasLtMatrixLayoutDestroy(lx);
    cublasLtMatrixLayoutDestroy(ly);
    return got;
}

/* milliseconds of one run (median of TIMED_RUNS after one warm-up), or -1 when cuBLASLt refuses */
static float run_lt(int64_t m, const shape *s, int tf32, const cublasLtMatmulAlgo_t *algo, size_t ws,
                    const gemm_bufs *b, float *y)
{
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t lw, lx, ly;
    describe(m, s, tf32, &op, &lw, &lx, &ly);
    const float one = 1.0f, zero = 0.0f;
    float ms[TIMED_RUNS + 1];
    int ok = 1;
    for (int r = 0; r <= TIMED_RUNS && ok; r++) {
        CK(cudaEventRecord(e0, stream));
        ok = cublasLtMatmul(lt, op, &one, b->w, lw, b->x, lx, &zero, y, ly, y, ly, algo, b->ws, ws, stream) ==
             CUBLAS_STATUS_SUCCESS;
        CK(cudaEventRecord(e1, stream));
        CK(cudaEventSynchronize(e1));
        CK(cudaEventElapsedTime(&ms[r], e0, e1));
    }
    cublasLtMatmulDescDestroy(op);
    cublasLtMatrixLayoutDestroy(lw);
    cublasLtMatrixLayoutDestroy(lx);
    cublasLtMatrixLayoutDestroy(ly);
    if (!ok)
        return -1.0f;
    for (int i = 1; i <= TIMED_RUNS; i++) /* sort the timed runs */
        for (int j = i + 1; j <= TIMED_RUNS; j++)
            if (ms[j] < ms[i]) {
                const float t = ms[i];
                ms[i] = ms[j];
                ms[j] = t;
            }
    return ms[1 + TIMED_RUNS / 2];
}

static float run_sgemm(int64_t m, const shape *s, const gemm_bufs *b)
{
    const float one = 1.0f, zero = 0.0f;
    float ms[TIMED_RUNS + 1];
    for (int r = 0; r <= TIMED_RUNS; r++) {
        CK(cudaEventRecord(e0, stream));
        CB(cublasSgemm(blas, s->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, (int)s->n, (int)m, (int)s->k, &one,
                       b->w, s->trans_b ? (int)s->k : (int)s->n, b->x, (int)s->k, &zero, b->y, (int)s->n));
        CK(cudaEventRecord(e1, stream));
        CK(cudaEventSynchronize(e1));
        CK(cudaEventElapsedTime(&ms[r], e0, e1));
    }
    float best = ms[1];
    for (int r = 2; r <= TIMED_RUNS; r++)
        best = ms[r] < best ? ms[r] : best;
    return best;
}

static int same_bits(const float *a, const float *b, int64_t n)
{
    static uint32_t *ha, *hb;
    static int64_t cap;
    if (n > cap) {
        free(ha);
        free(hb);
        ha = malloc((size_t)n * 4);
        hb = malloc((size_t)n * 4);
        cap = n;
        if (!ha || !hb)
            exit(1);
    }
    CK(cudaMemcpy(ha, a, (size_t)n * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hb, b, (size_t)n * 4, cudaMemcpyDeviceToHost));
    return memcmp(ha, hb, (size_t)n * 4) == 0;
}

static uint32_t cfg(const cublasLtMatmulAlgo_t *a, cublasLtMatmulAlgoConfigAttributes_t attr)
{
    uint32_t v = 0;
    size_t written = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(a, attr, &v, sizeof v, &written) != CUBLAS_STATUS_SUCCESS)
        return 0xFFFFFFFFu;
    return v;
}

static void survey(int64_t m, const shape *s, int tf32, gemm_bufs *b)
{
    const double flop = 2.0 * (double)m * (double)s->n * (double)s->k;
    cublasLtMatmulHeuristicResult_t cand[2 * MAX_CAND];
    const int n_ref = heuristic(REF_ROWS, s, tf32, 0, cand, MAX_CAND);
    const int n_full = heuristic(m, s, tf32, WORKSPACE_BYTES, cand + n_ref, MAX_CAND);
    int pick = -1;
    for (int i = 0; i < n_ref && pick < 0; i++)
        if (cand[i].state == CUBLAS_STATUS_SUCCESS && cand[i].workspaceSize == 0 &&
            cfg(&cand[i].algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM) <= 1)
            pick = i;
    printf("\n### %s: m %lld n %lld k %lld%s, %s\n\n", s->what, (long long)m, (long long)s->n, (long long)s->k,
           s->trans_b ? " (weights [n, k])" : "", tf32 ? "TF32" : "FP32");
    float sg = 0.0f;
    if (!tf32) {
        sg = run_sgemm(m, s, b);
        printf("cublasSgemm, one call: %.3f ms, %.1f TFLOP/s\n\n", sg, flop / sg * 1e-9);
    }
    if (pick < 0) {
        printf("no candidate ptq would pick (%d for %d rows)\n", n_ref, REF_ROWS);
        return;
    }
    const float pick_ms = run_lt(m, s, tf32, &cand[pick].algo, 0, b, b->y_ref);
    printf("ptq's pick (candidate %d of %d for %d rows): %.3f ms, %.1f TFLOP/s\n\n", pick, n_ref, REF_ROWS, pick_ms,
           flop / pick_ms * 1e-9);
    printf("| list | # | algo | tile | stages | split-K | cluster | workspace | ms | TFLOP/s | vs pick "
           "| ptq's bits |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < n_ref + n_full; i++) {
        if (cand[i].state != CUBLAS_STATUS_SUCCESS)
            continue;
        int dup = 0;
        for (int j = 0; j < i && !dup; j++)
            dup = memcmp(&cand[j].algo, &cand[i].algo, sizeof cand[i].algo) == 0;
        if (dup)
            continue;
        CK(cudaMemset(b->y, 0xFF, (size_t)(m * s->n) * sizeof(float)));
        const float ms = run_lt(m, s, tf32, &cand[i].algo, cand[i].workspaceSize, b, b->y);
        const int same = ms > 0 && same_bits(b->y, b->y_ref, m * s->n);
        printf("| %s | %d | %u | %u | %u | %u | %u | %zu | %.3f | %.1f | %.2fx | %s |\n",
               i < n_ref ? "4096 rows" : "full", i < n_ref ? i : i - n_ref, cfg(&cand[i].algo, CUBLASLT_ALGO_CONFIG_ID),
               cfg(&cand[i].algo, CUBLASLT_ALGO_CONFIG_TILE_ID), cfg(&cand[i].algo, CUBLASLT_ALGO_CONFIG_STAGES_ID),
               cfg(&cand[i].algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM),
               cfg(&cand[i].algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID), cand[i].workspaceSize, ms,
               ms > 0 ? flop / ms * 1e-9 : 0.0, ms > 0 ? pick_ms / ms : 0.0, same ? "yes" : "no");
    }
}

int main(int argc, char **argv)
{
    int64_t m = 25216;
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--rows") == 0)
            m = atoll(argv[++i]);
    int n_dev = 0;
    if (cudaGetDeviceCount(&n_dev) != cudaSuccess || n_dev == 0) {
        printf("gemm_lt_survey: skipped: no GPU\n");
        return 77;
    }
    struct cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    CK(cudaStreamCreate(&stream));
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CB(cublasLtCreate(&lt));
    CB(cublasCreate(&blas));
    CB(cublasSetStream(blas, stream));
    const shape shapes[] = {{2304, 768, 0, "attention in-projection (MatMul)"},
                            {768, 768, 1, "attention out-projection (Gemm)"},
                            {3072, 768, 0, "MLP up (MatMul)"},
                            {768, 3072, 0, "MLP down (MatMul)"}};
    int64_t max_x = 0, max_w = 0, max_y = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        max_x = m * shapes[i].k > max_x ? m * shapes[i].k : max_x;
        max_w = shapes[i].n * shapes[i].k > max_w ? shapes[i].n * shapes[i].k : max_w;
        max_y = m * shapes[i].n > max_y ? m * shapes[i].n : max_y;
    }
    gemm_bufs b;
    CK(cudaMalloc((void **)&b.x, (size_t)max_x * sizeof(float)));
    CK(cudaMalloc((void **)&b.w, (size_t)max_w * sizeof(float)));
    CK(cudaMalloc((void **)&b.y_ref, (size_t)max_y * sizeof(float)));
    CK(cudaMalloc((void **)&b.y, (size_t)max_y * sizeof(float)));
    CK(cudaMalloc(&b.ws, WORKSPACE_BYTES));
    fill(b.x, max_x, 1.0f, 1);
    fill(b.w, max_w, 0.036f, 2);
    int cublas_ver = 0;
    CB(cublasGetVersion(blas, &cublas_ver));
    printf("# cuBLASLt candidates for ViT-B/16's GEMMs on %s (cuBLAS %d), %lld rows\n", prop.name, cublas_ver,
           (long long)m);
    for (int tf32 = 0; tf32 < 2; tf32++)
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
            survey(m, &shapes[i], tf32, &b);
    return 0;
}
