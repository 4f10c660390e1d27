/* cuDNN 9's backend (graph) API on FP32 forward convolutions, NCHW and NHWC:
 * which engines take the graph, their numerical notes and knobs, and for the
 * knobs that split the reduction (SPLIT_K, SPLIT_K_SLC, SPLIT_K_BUF,
 * STREAM_K, ...) a sweep of values, each configuration timed and its
 * summation error measured against float64 on sampled outputs, beside the
 * legacy API's GEMM-like algorithms (ptq's pick by kernels/cuda/cudnn.cu's
 * rule marked) and host models of FP32 sums. The question it answers: does
 * an FP32 engine sum K in shorter chains (as MLAS's 256-tap blocks do) at a
 * usable speed? Shapes: efficientnet_v2_l's fused-MBConv 3x3 convs and two
 * of ResNet-50's 3x3 convs, 64 images. Markdown on stdout.
 * build/bench/cudnn_splitk, bundled as bin/cudnn_splitk; run on the GPU
 * machine by scripts/gpu-check.sh splitk (SPLITK_ARGS: --budget-s S, the
 * seconds for all backend sweeps; --tc, the TENSOR_CORE engines instead, for
 * reference). cuDNN is dlopen'ed where ptq finds it; exit 77 without a GPU
 * or cuDNN. Record: bench/results/2026-12-04-cudnn-splitk-h200.md. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef PTQ_CUDNN

int main(void)
{
    printf("cudnn_splitk: built without CUDA or cuDNN's headers\n");
    return 77;
}

#else

#include <cuda_runtime.h>
#include <cudnn.h>
#include <dlfcn.h>
#include <glob.h>
#include <time.h>

#define N_IMAGES 64
#define N_SAMPLES 4096
#define N_TIMED 10
#define MAX_KNOBS 64
#define MAX_HEUR 64
#define WS_CAP_BYTES ((size_t)4 << 30)
/* knob values a sweep tries at most, per knob */
#define MAX_SWEEP 12

typedef struct dnn {
    void *lib;
    cudnnHandle_t handle;
    size_t (*get_version)(void);
    const char *(*error_string)(cudnnStatus_t);
    cudnnStatus_t (*create)(cudnnHandle_t *);
    cudnnStatus_t (*destroy)(cudnnHandle_t);
    cudnnStatus_t (*be_create)(cudnnBackendDescriptorType_t, cudnnBackendDescriptor_t *);
    cudnnStatus_t (*be_destroy)(cudnnBackendDescriptor_t);
    cudnnStatus_t (*be_finalize)(cudnnBackendDescriptor_t);
    cudnnStatus_t (*be_set)(cudnnBackendDescriptor_t, cudnnBackendAttributeName_t, cudnnBackendAttributeType_t,
                            int64_t, const void *);
    cudnnStatus_t (*be_get)(cudnnBackendDescriptor_t, cudnnBackendAttributeName_t, cudnnBackendAttributeType_t,
                            int64_t, int64_t *, void *);
    cudnnStatus_t (*be_execute)(cudnnHandle_t, cudnnBackendDescriptor_t, cudnnBackendDescriptor_t);
    cudnnStatus_t (*create_tensor)(cudnnTensorDescriptor_t *);
    cudnnStatus_t (*destroy_tensor)(cudnnTensorDescriptor_t);
    cudnnStatus_t (*set_tensor)(cudnnTensorDescriptor_t, cudnnTensorFormat_t, cudnnDataType_t, int, int, int, int);
    cudnnStatus_t (*create_filter)(cudnnFilterDescriptor_t *);
    cudnnStatus_t (*destroy_filter)(cudnnFilterDescriptor_t);
    cudnnStatus_t (*set_filter)(cudnnFilterDescriptor_t, cudnnDataType_t, cudnnTensorFormat_t, int, int, int, int);
    cudnnStatus_t (*create_conv)(cudnnConvolutionDescriptor_t *);
    cudnnStatus_t (*destroy_conv)(cudnnConvolutionDescriptor_t);
    cudnnStatus_t (*set_conv)(cudnnConvolutionDescriptor_t, int, int, int, int, int, int, cudnnConvolutionMode_t,
                              cudnnDataType_t);
    cudnnStatus_t (*set_math)(cudnnConvolutionDescriptor_t, cudnnMathType_t);
    cudnnStatus_t (*algo_max)(cudnnHandle_t, int *);
    cudnnStatus_t (*get_algos)(cudnnHandle_t, cudnnTensorDescriptor_t, cudnnFilterDescriptor_t,
                               cudnnConvolutionDescriptor_t, cudnnTensorDescriptor_t, int, int *,
                               cudnnConvolutionFwdAlgoPerf_t *);
    cudnnStatus_t (*ws_size)(cudnnHandle_t, cudnnTensorDescriptor_t, cudnnFilterDescriptor_t,
                             cudnnConvolutionDescriptor_t, cudnnTensorDescriptor_t, cudnnConvolutionFwdAlgo_t,
                             size_t *);
    cudnnStatus_t (*forward)(cudnnHandle_t, const void *, cudnnTensorDescriptor_t, const void *,
                             cudnnFilterDescriptor_t, const void *, cudnnConvolutionDescriptor_t,
                             cudnnConvolutionFwdAlgo_t, void *, size_t, const void *, cudnnTensorDescriptor_t,
                             void *);
} dnn;

static dnn D;
/* --tc: run the TENSOR_CORE engines (for reference: what their split knobs do) instead of the FP32 ones, in a
 * process of its own, so a configuration that breaks the GPU cannot cost the FP32 rows */
static int tc_run;

/* ---- finding cuDNN: the places kernels/cuda/cudnn.cu's open_cudnn looks ---- */

static const char *const wheel_globs[] = {
    "/usr/local/lib/python3*/dist-packages/nvidia/cudnn/lib/libcudnn.so.9",
    "/usr/local/lib/python3*/site-packages/nvidia/cudnn/lib/libcudnn.so.9",
    "/usr/lib/python3/dist-packages/nvidia/cudnn/lib/libcudnn.so.9",
    "/usr/lib/python3*/site-packages/nvidia/cudnn/lib/libcudnn.so.9",
    "/opt/conda/lib/python3*/site-packages/nvidia/cudnn/lib/libcudnn.so.9",
    "/opt/*/.venv/lib/python3*/site-packages/nvidia/cudnn/lib/libcudnn.so.9",
    "/opt/*/lib/python3*/site-packages/nvidia/cudnn/lib/libcudnn.so.9",
};

static void *try_dir(const char *dir)
{
    char path[4096];
    if (!dir || !dir[0] || snprintf(path, sizeof path, "%s/libcudnn.so.9", dir) >= (int)sizeof path)
        return NULL;
    return dlopen(path, RTLD_NOW | RTLD_LOCAL);
}

static void *try_glob(const char *prefix, const char *pattern)
{
    char full[4096];
    glob_t g;
    void *lib = NULL;
    if (snprintf(full, sizeof full, "%s%s", prefix, pattern) >= (int)sizeof full)
        return NULL;
    if (glob(full, 0, NULL, &g) == 0)
        for (size_t i = 0; i < g.gl_pathc && !lib; i++)
            lib = dlopen(g.gl_pathv[i], RTLD_NOW | RTLD_LOCAL);
    globfree(&g);
    return lib;
}

static void *open_cudnn(void)
{
    void *lib = try_dir(getenv("PTQ_CUDNN_DIR"));
    if (!lib)
        lib = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        lib = try_dir("/usr/local/cuda/lib64");
    if (!lib)
        lib = try_dir("/usr/lib/x86_64-linux-gnu");
    if (!lib && getenv("VIRTUAL_ENV"))
        lib = try_glob(getenv("VIRTUAL_ENV"), "/lib/python3*/site-packages/nvidia/cudnn/lib/libcudnn.so.9");
    for (size_t i = 0; !lib && i < sizeof wheel_globs / sizeof wheel_globs[0]; i++)
        lib = try_glob("", wheel_globs[i]);
    return lib;
}

/* 0 with the missing name printed */
static int load_fns(void)
{
#define LOAD(field, fn)                                                                                               \
    do {                                                                                                              \
        *(void **)&D.field = dlsym(D.lib, #fn);                                                                       \
        if (!D.field) {                                                                                               \
            printf("cudnn_splitk: cuDNN has no %s\n", #fn);                                                           \
            return 0;                                                                                                 \
        }                                                                                                             \
    } while (0)
    LOAD(get_version, cudnnGetVersion);
    LOAD(error_string, cudnnGetErrorString);
    LOAD(create, cudnnCreate);
    LOAD(destroy, cudnnDestroy);
    LOAD(be_create, cudnnBackendCreateDescriptor);
    LOAD(be_destroy, cudnnBackendDestroyDescriptor);
    LOAD(be_finalize, cudnnBackendFinalize);
    LOAD(be_set, cudnnBackendSetAttribute);
    LOAD(be_get, cudnnBackendGetAttribute);
    LOAD(be_execute, cudnnBackendExecute);
    LOAD(create_tensor, cudnnCreateTensorDescriptor);
    LOAD(destroy_tensor, cudnnDestroyTensorDescriptor);
    LOAD(set_tensor, cudnnSetTensor4dDescriptor);
    LOAD(create_filter, cudnnCreateFilterDescriptor);
    LOAD(destroy_filter, cudnnDestroyFilterDescriptor);
    LOAD(set_filter, cudnnSetFilter4dDescriptor);
    LOAD(create_conv, cudnnCreateConvolutionDescriptor);
    LOAD(destroy_conv, cudnnDestroyConvolutionDescriptor);
    LOAD(set_conv, cudnnSetConvolution2dDescriptor);
    LOAD(set_math, cudnnSetConvolutionMathType);
    LOAD(algo_max, cudnnGetConvolutionForwardAlgorithmMaxCount);
    LOAD(get_algos, cudnnGetConvolutionForwardAlgorithm_v7);
    LOAD(ws_size, cudnnGetConvolutionForwardWorkspaceSize);
    LOAD(forward, cudnnConvolutionForward);
#undef LOAD
    return 1;
}

/* ---- the problem: one shape's data, sampled outputs and their float64 values ---- */

typedef struct shape {
    const char *name;
    int64_t c_in, c_out, stride, in; /* 3x3, pad 1 */
} shape;

static const shape shapes[] = {
    {"v2_l stage 1 (x4)", 32, 32, 1, 112},
    {"v2_l stage 2 first", 32, 128, 2, 112},
    {"v2_l stage 2 (x6)", 64, 256, 1, 56},
    {"v2_l stage 3 (x6)", 96, 384, 1, 28},
    {"ResNet-50 layer1", 64, 64, 1, 56},
    {"ResNet-50 layer4", 512, 512, 1, 7},
};
#define N_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))

typedef struct problem {
    const shape *s;
    int64_t out, k_taps, n_x, n_w, n_y;
    float *hx, *hw;                 /* host x [N, C_in, in, in], w [C_out, C_in, 3, 3] */
    float *hy;                      /* pinned host copy of y [N, C_out, out, out] */
    float *dx, *dw, *dy;            /* the same on the device */
    float *dx_cl, *dw_cl;           /* channels last on the device: x [N, in, in, C_in], w [C_out, 3, 3, C_in] */
    int cl;                         /* the layout of the run in progress: 1 channels last (y [N, out, out, C_out]) */
    void *ws;                       /* workspace, grown as configurations ask */
    size_t ws_bytes;
    int64_t at[N_SAMPLES];          /* sampled outputs: offsets into y */
    int64_t at_cl[N_SAMPLES];       /* the same outputs' offsets into a channels-last y */
    double ref[N_SAMPLES];          /* their float64 values */
    double abs_sum[N_SAMPLES];      /* sum over taps of |w * x|: the error's yardstick */
} problem;

static uint32_t lcg(uint32_t *state)
{
    *state = *state * 1664525u + 1013904223u;
    return *state >> 8;
}

/* x of the 3x3 window's tap (c, r, t) for output (n, p, q); 0 in the padding */
static float x_at(const problem *pb, int64_t n, int64_t c, int64_t p, int64_t q, int64_t r, int64_t t)
{
    const int64_t h = p * pb->s->stride - 1 + r, w = q * pb->s->stride - 1 + t, in = pb->s->in;
    if (h < 0 || h >= in || w < 0 || w >= in)
        return 0.0f;
    return pb->hx[((n * pb->s->c_in + c) * in + h) * in + w];
}

/* the taps of sampled output i, in im2col's order (c, then r, t): weights into w_out, inputs into x_out */
static void taps_of(const problem *pb, int i, float *w_out, float *x_out)
{
    const int64_t o = pb->out, a = pb->at[i];
    const int64_t q = a % o, p = a / o % o, k = a / (o * o) % pb->s->c_out, n = a / (o * o * pb->s->c_out);
    int64_t j = 0;
    for (int64_t c = 0; c < pb->s->c_in; c++)
        for (int64_t r = 0; r < 3; r++)
            for (int64_t t = 0; t < 3; t++, j++) {
                w_out[j] = pb->hw[((k * pb->s->c_in + c) * 3 + r) * 3 + t];
                x_out[j] = x_at(pb, n, c, p, q, r, t);
            }
}

/* src [n, c, hw] to the device as [n, hw, c] */
static int upload_cl(float *dst, const float *src, int64_t n, int64_t c, int64_t hw)
{
    float *t = malloc((size_t)(n * c * hw) * sizeof(float));
    int ok = t != NULL;
    for (int64_t i = 0; ok && i < n; i++)
        for (int64_t j = 0; j < c; j++)
            for (int64_t k = 0; k < hw; k++)
                t[(i * hw + k) * c + j] = src[(i * c + j) * hw + k];
    ok = ok && cudaMemcpy(dst, t, (size_t)(n * c * hw) * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess;
    free(t);
    return ok;
}

static int problem_make(problem *pb, const shape *s, uint32_t seed)
{
    memset(pb, 0, sizeof *pb);
    pb->s = s;
    pb->out = (s->in + 2 - 3) / s->stride + 1;
    pb->k_taps = s->c_in * 9;
    pb->n_x = N_IMAGES * s->c_in * s->in * s->in;
    pb->n_w = s->c_out * pb->k_taps;
    pb->n_y = N_IMAGES * s->c_out * pb->out * pb->out;
    pb->hx = malloc((size_t)pb->n_x * sizeof(float));
    pb->hw = malloc((size_t)pb->n_w * sizeof(float));
    if (!pb->hx || !pb->hw || cudaMallocHost((void **)&pb->hy, (size_t)pb->n_y * sizeof(float)) != cudaSuccess ||
        cudaMalloc((void **)&pb->dx, (size_t)pb->n_x * sizeof(float)) != cudaSuccess ||
        cudaMalloc((void **)&pb->dw, (size_t)pb->n_w * sizeof(float)) != cudaSuccess ||
        cudaMalloc((void **)&pb->dy, (size_t)pb->n_y * sizeof(float)) != cudaSuccess ||
        cudaMalloc((void **)&pb->dx_cl, (size_t)pb->n_x * sizeof(float)) != cudaSuccess ||
        cudaMalloc((void **)&pb->dw_cl, (size_t)pb->n_w * sizeof(float)) != cudaSuccess)
        return 0;
    /* x in [0, 1) as after an activation, w zero-mean scaled by 1/sqrt(K): products of both signs whose
     * partial sums wander, the case where the length of the summation chain shows */
    uint32_t st = seed;
    for (int64_t i = 0; i < pb->n_x; i++)
        pb->hx[i] = (float)lcg(&st) / 16777216.0f;
    const float scale = 1.0f / sqrtf((float)pb->k_taps);
    for (int64_t i = 0; i < pb->n_w; i++)
        pb->hw[i] = scale * ((float)lcg(&st) / 8388608.0f - 1.0f);
    if (cudaMemcpy(pb->dx, pb->hx, (size_t)pb->n_x * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaMemcpy(pb->dw, pb->hw, (size_t)pb->n_w * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess ||
        !upload_cl(pb->dx_cl, pb->hx, N_IMAGES, s->c_in, s->in * s->in) ||
        !upload_cl(pb->dw_cl, pb->hw, s->c_out, s->c_in, 9))
        return 0;
    float *w = malloc((size_t)pb->k_taps * sizeof(float)), *x = malloc((size_t)pb->k_taps * sizeof(float));
    if (!w || !x) {
        free(w);
        free(x);
        return 0;
    }
    for (int i = 0; i < N_SAMPLES; i++) {
        pb->at[i] = (int64_t)(((uint64_t)lcg(&st) << 24 | lcg(&st)) % (uint64_t)pb->n_y);
        const int64_t o = pb->out, a = pb->at[i];
        const int64_t pq = a % (o * o), k = a / (o * o) % s->c_out, n = a / (o * o * s->c_out);
        pb->at_cl[i] = (n * o * o + pq) * s->c_out + k;
        taps_of(pb, i, w, x);
        double sum = 0.0, abs_sum = 0.0;
        for (int64_t j = 0; j < pb->k_taps; j++) { /* each product exact in double (24 + 24 bits) */
            sum += (double)w[j] * (double)x[j];
            abs_sum += fabs((double)w[j] * (double)x[j]);
        }
        pb->ref[i] = sum;
        pb->abs_sum[i] = abs_sum;
    }
    free(w);
    free(x);
    return 1;
}

static void problem_free(problem *pb)
{
    free(pb->hx);
    free(pb->hw);
    if (pb->hy)
        (void)cudaFreeHost(pb->hy);
    (void)cudaFree(pb->dx);
    (void)cudaFree(pb->dw);
    (void)cudaFree(pb->dy);
    (void)cudaFree(pb->dx_cl);
    (void)cudaFree(pb->dw_cl);
    (void)cudaFree(pb->ws);
}

static int ws_grow(problem *pb, size_t bytes)
{
    if (bytes <= pb->ws_bytes)
        return 1;
    (void)cudaFree(pb->ws);
    pb->ws = NULL;
    pb->ws_bytes = 0;
    if (cudaMalloc(&pb->ws, bytes) != cudaSuccess)
        return 0;
    pb->ws_bytes = bytes;
    return 1;
}

/* ---- measuring: error of sampled outputs against float64, time of a call ---- */

typedef struct result {
    int ok;
    char why[96];   /* when !ok: what failed */
    double ms;      /* median of N_TIMED calls */
    double err_max, err_rms; /* of |y - y64| / sum |w x| over the samples */
    size_t ws_bytes;
} result;

static void errors_of(const problem *pb, const float *y_at, result *r)
{
    double mx = 0.0, sq = 0.0;
    for (int i = 0; i < N_SAMPLES; i++) {
        const double e = pb->abs_sum[i] > 0 ? fabs((double)y_at[i] - pb->ref[i]) / pb->abs_sum[i] : 0.0;
        if (!isfinite(y_at[i]) || !(e == e)) {
            mx = sq = INFINITY;
            break;
        }
        mx = e > mx ? e : mx;
        sq += e * e;
    }
    r->err_max = mx;
    r->err_rms = sqrt(sq / N_SAMPLES);
}

static void errors_of_device(const problem *pb, result *r)
{
    static float y_at[N_SAMPLES];
    if (cudaMemcpy(pb->hy, pb->dy, (size_t)pb->n_y * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess) {
        r->ok = 0;
        snprintf(r->why, sizeof r->why, "copying y back failed");
        return;
    }
    for (int i = 0; i < N_SAMPLES; i++)
        y_at[i] = pb->hy[pb->cl ? pb->at_cl[i] : pb->at[i]];
    errors_of(pb, y_at, r);
}

/* FP32 models of a summation on the host: fmaf chains over blocks of `block` taps, each block's partial added into
 * the running sum (block >= K: one chain, cuDNN's kernels as measured; 256: MLAS; 64: ptq's im2col + cuBLAS) */
static void host_model(const problem *pb, int64_t block, result *r)
{
    static float y_at[N_SAMPLES];
    float *w = malloc((size_t)pb->k_taps * sizeof(float)), *x = malloc((size_t)pb->k_taps * sizeof(float));
    memset(r, 0, sizeof *r);
    if (!w || !x) {
        free(w);
        free(x);
        snprintf(r->why, sizeof r->why, "out of host memory");
        return;
    }
    for (int i = 0; i < N_SAMPLES; i++) {
        taps_of(pb, i, w, x);
        float acc = 0.0f;
        for (int64_t j0 = 0; j0 < pb->k_taps; j0 += block) {
            float part = 0.0f;
            for (int64_t j = j0; j < j0 + block && j < pb->k_taps; j++)
                part = fmaf(w[j], x[j], part);
            acc = j0 == 0 ? part : acc + part;
        }
        y_at[i] = acc;
    }
    free(w);
    free(x);
    r->ok = 1;
    errors_of(pb, y_at, r);
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of N_TIMED calls of once(arg), each timed by events on the default stream, in ms. */
static double median_ms(void (*once)(void *), void *arg)
{
    cudaEvent_t ev[2 * N_TIMED];
    double ms[N_TIMED];
    for (int i = 0; i < 2 * N_TIMED; i++)
        (void)cudaEventCreate(&ev[i]);
    for (int i = 0; i < N_TIMED; i++) {
        (void)cudaEventRecord(ev[2 * i], 0);
        once(arg);
        (void)cudaEventRecord(ev[2 * i + 1], 0);
    }
    (void)cudaDeviceSynchronize();
    for (int i = 0; i < N_TIMED; i++) {
        float t = 0;
        (void)cudaEventElapsedTime(&t, ev[2 * i], ev[2 * i + 1]);
        ms[i] = t;
    }
    for (int i = 0; i < 2 * N_TIMED; i++)
        (void)cudaEventDestroy(ev[i]);
    qsort(ms, N_TIMED, sizeof ms[0], cmp_double);
    return ms[N_TIMED / 2];
}

/* ---- the legacy API: what ptq runs today ---- */

static const char *const algo_names[] = {"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT",
                                         "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};

/* kernels/cuda/cudnn.cu's allowed(): GEMM-like algorithms, each output a plain FP32 sum over its taps */
static int allowed(cudnnConvolutionFwdAlgo_t a)
{
    return a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM || a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
           a == CUDNN_CONVOLUTION_FWD_ALGO_GEMM || a == CUDNN_CONVOLUTION_FWD_ALGO_DIRECT ||
           a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD;
}

typedef struct legacy_row {
    int algo, rule;
    result r;
} legacy_row;

typedef struct legacy_descs {
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
} legacy_descs;

typedef struct legacy_call {
    problem *pb;
    const legacy_descs *ld;
    cudnnConvolutionFwdAlgo_t algo;
    size_t ws;
} legacy_call;

static void legacy_once(void *arg)
{
    const legacy_call *c = arg;
    const float one = 1.0f, zero = 0.0f;
    (void)D.forward(D.handle, &one, c->ld->x, c->pb->dx, c->ld->w, c->pb->dw, c->ld->conv, c->algo, c->pb->ws, c->ws,
                    &zero, c->ld->y, c->pb->dy);
}

static void legacy_run(problem *pb, const legacy_descs *ld, cudnnConvolutionFwdAlgo_t algo, size_t ws, result *r)
{
    const float one = 1.0f, zero = 0.0f;
    memset(r, 0, sizeof *r);
    r->ws_bytes = ws;
    if (!ws_grow(pb, ws)) {
        snprintf(r->why, sizeof r->why, "no room for %zu bytes of workspace", ws);
        return;
    }
    (void)cudaMemset(pb->dy, 0xff, (size_t)pb->n_y * sizeof(float)); /* NaN: an output not written shows */
    cudnnStatus_t st = D.forward(D.handle, &one, ld->x, pb->dx, ld->w, pb->dw, ld->conv, algo, pb->ws, ws, &zero,
                                 ld->y, pb->dy);
    if (st != CUDNN_STATUS_SUCCESS || cudaDeviceSynchronize() != cudaSuccess) {
        snprintf(r->why, sizeof r->why, "forward: %s", D.error_string(st));
        return;
    }
    r->ok = 1;
    errors_of_device(pb, r);
    legacy_call c = {pb, ld, algo, ws};
    r->ms = median_ms(legacy_once, &c);
}

/* every allowed algorithm of the heuristic's list (FP32 FMA math); the rule's pick marked: the first deterministic
 * one with at most 512 MiB of workspace. Returns the number of rows. */
static int legacy_section(problem *pb, legacy_row *rows, int cap)
{
    const shape *s = pb->s;
    legacy_descs ld = {NULL, NULL, NULL, NULL};
    cudnnConvolutionFwdAlgoPerf_t perf[2 * CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int n_perf = 0, max_algos = 0, n = 0, rule_taken = 0;
    if (D.create_tensor(&ld.x) || D.create_tensor(&ld.y) || D.create_filter(&ld.w) || D.create_conv(&ld.conv) ||
        D.set_tensor(ld.x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, N_IMAGES, (int)s->c_in, (int)s->in, (int)s->in) ||
        D.set_tensor(ld.y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, N_IMAGES, (int)s->c_out, (int)pb->out,
                     (int)pb->out) ||
        D.set_filter(ld.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, (int)s->c_out, (int)s->c_in, 3, 3) ||
        D.set_conv(ld.conv, 1, 1, (int)s->stride, (int)s->stride, 1, 1, CUDNN_CROSS_CORRELATION,
                   CUDNN_DATA_FLOAT) ||
        D.set_math(ld.conv, CUDNN_FMA_MATH) || D.algo_max(D.handle, &max_algos)) {
        printf("legacy descriptors failed\n\n");
        goto done;
    }
    if (max_algos > (int)(sizeof perf / sizeof perf[0]))
        max_algos = (int)(sizeof perf / sizeof perf[0]);
    if (D.get_algos(D.handle, ld.x, ld.w, ld.conv, ld.y, max_algos, &n_perf, perf)) {
        printf("legacy heuristic failed\n\n");
        goto done;
    }
    for (int i = 0; i < n_perf && n < cap; i++) {
        const cudnnConvolutionFwdAlgoPerf_t *a = &perf[i];
        size_t ws = 0;
        int seen = 0;
        if (a->status != CUDNN_STATUS_SUCCESS || a->mathType != CUDNN_FMA_MATH || !allowed(a->algo))
            continue;
        for (int j = 0; j < n; j++)
            seen |= rows[j].algo == (int)a->algo;
        if (seen || D.ws_size(D.handle, ld.x, ld.w, ld.conv, ld.y, a->algo, &ws) || ws > WS_CAP_BYTES)
            continue;
        rows[n].algo = (int)a->algo;
        rows[n].rule = !rule_taken && a->determinism == CUDNN_DETERMINISTIC && ws <= ((size_t)512 << 20);
        rule_taken |= rows[n].rule;
        legacy_run(pb, &ld, a->algo, ws, &rows[n].r);
        n++;
    }
done:
    if (ld.x)
        (void)D.destroy_tensor(ld.x);
    if (ld.y)
        (void)D.destroy_tensor(ld.y);
    if (ld.w)
        (void)D.destroy_filter(ld.w);
    if (ld.conv)
        (void)D.destroy_conv(ld.conv);
    return n;
}

/* ---- the backend API ---- */

static const char *const knob_names[] = {
    "SPLIT_K", "SWIZZLE", "TILE_SIZE", "USE_TEX", "EDGE", "KBLOCK", "LDGA", "LDGB", "CHUNK_K", "SPLIT_H",
    "WINO_TILE", "MULTIPLY", "SPLIT_K_BUF", "TILEK", "STAGES", "REDUCTION_MODE", "CTA_SPLIT_K_MODE",
    "SPLIT_K_SLC", "IDX_MODE", "SLICED", "SPLIT_RS", "SINGLEBUFFER", "LDGC", "SPECFILT", "KERNEL_CFG",
    "WORKSPACE", "TILE_CGA", "TILE_CGA_M", "TILE_CGA_N", "BLOCK_SIZE", "OCCUPANCY", "ARRAY_SIZE_PER_THREAD",
    "NUM_C_PER_BLOCK", "SPLIT_COLS", "TILE_ROWS", "TILE_COLS", "LOAD_SIZE", "CTA_COUNT", "STREAM_K",
    "SPLIT_P_SLC", "TILE_M", "TILE_N", "WARP_SPEC_CFG", "SWAP_AB"};

static void knob_name(int type, char *buf, size_t n)
{
    if (type >= 0 && type < (int)(sizeof knob_names / sizeof knob_names[0]))
        snprintf(buf, n, "%s", knob_names[type]);
    else
        snprintf(buf, n, "knob%d", type);
}

/* knobs that split or reorder the reduction over K (the sum's chain), swept one at a time */
static int splits_k(int type)
{
    return type == 0 || type == 12 || type == 15 || type == 16 || type == 17 || type == 20 || type == 38;
}

static const char *const num_note_names[] = {"TENSOR_CORE", "DOWN_CONVERT", "REDUCED_PRECISION", "FFT", "NONDET",
                                             "WINOGRAD", "WINO4x4", "WINO6x6", "WINO13x13", "STRICT_NAN"};
static const char *const beh_note_names[] = {"RUNTIME_COMPILATION", "FILTER_INT8x32", "BIAS_INT8x32",
                                             "CUDA_GRAPH_API", "CUBLASLT"};

typedef struct knob {
    int type;
    int64_t min, max, stride;
} knob;

typedef struct choice {
    int type;
    int64_t value;
} choice;

typedef struct engine {
    int64_t id;
    int n_num, n_beh, n_knobs;
    int num[16], beh[16];
    knob knobs[MAX_KNOBS];
    int heur_rank; /* its first place in heuristic mode A's list, -1: not listed */
    int n_heur;
    choice heur[MAX_KNOBS]; /* the knob choices of that place */
} engine;

typedef struct graph {
    cudnnBackendDescriptor_t x, w, y, conv, op, g;
} graph;

static void graph_free(graph *g)
{
    cudnnBackendDescriptor_t *all[] = {&g->g, &g->op, &g->conv, &g->x, &g->w, &g->y};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (*all[i]) {
            (void)D.be_destroy(*all[i]);
            *all[i] = NULL;
        }
}

#define BE(call)                                                                                                     \
    do {                                                                                                             \
        if ((st = (call)) != CUDNN_STATUS_SUCCESS)                                                                   \
            goto done;                                                                                               \
    } while (0)

/* dims [n, c, h, w] always; in memory NCHW, or NHWC when cl */
static cudnnStatus_t tensor_make(int64_t uid, int64_t n, int64_t c, int64_t h, int64_t w, int cl,
                                 cudnnBackendDescriptor_t *out)
{
    cudnnStatus_t st;
    const int64_t dims[4] = {n, c, h, w}, align = 16;
    const int64_t nchw[4] = {c * h * w, h * w, w, 1}, nhwc[4] = {h * w * c, 1, w * c, c};
    const int64_t *strides = cl ? nhwc : nchw;
    const cudnnDataType_t dt = CUDNN_DATA_FLOAT;
    BE(D.be_create(CUDNN_BACKEND_TENSOR_DESCRIPTOR, out));
    BE(D.be_set(*out, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt));
    BE(D.be_set(*out, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims));
    BE(D.be_set(*out, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides));
    BE(D.be_set(*out, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid));
    BE(D.be_set(*out, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align));
    BE(D.be_finalize(*out));
done:
    return st;
}

/* y = conv(x, w) in pb->cl's layout, FP32 data and FP32 compute */
static cudnnStatus_t graph_make(const problem *pb, graph *g)
{
    cudnnStatus_t st;
    const shape *s = pb->s;
    const cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    const int64_t dims = 2, one[2] = {1, 1}, stride[2] = {s->stride, s->stride};
    const float alpha = 1.0f, beta = 0.0f;
    memset(g, 0, sizeof *g);
    BE(tensor_make('x', N_IMAGES, s->c_in, s->in, s->in, pb->cl, &g->x));
    BE(tensor_make('w', s->c_out, s->c_in, 3, 3, pb->cl, &g->w));
    BE(tensor_make('y', N_IMAGES, s->c_out, pb->out, pb->out, pb->cl, &g->y));
    BE(D.be_create(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &g->conv));
    BE(D.be_set(g->conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp));
    BE(D.be_set(g->conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode));
    BE(D.be_set(g->conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims));
    BE(D.be_set(g->conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, one));
    BE(D.be_set(g->conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, stride));
    BE(D.be_set(g->conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, one));
    BE(D.be_set(g->conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, one));
    BE(D.be_finalize(g->conv));
    BE(D.be_create(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, &g->op));
    BE(D.be_set(g->op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g->x));
    BE(D.be_set(g->op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g->w));
    BE(D.be_set(g->op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g->y));
    BE(D.be_set(g->op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                &g->conv));
    BE(D.be_set(g->op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha));
    BE(D.be_set(g->op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta));
    BE(D.be_finalize(g->op));
    BE(D.be_create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &g->g));
    BE(D.be_set(g->g, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g->op));
    BE(D.be_set(g->g, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &D.handle));
    BE(D.be_finalize(g->g));
done:
    return st;
}

static cudnnStatus_t engine_make(const graph *g, int64_t id, cudnnBackendDescriptor_t *e)
{
    cudnnStatus_t st;
    BE(D.be_create(CUDNN_BACKEND_ENGINE_DESCRIPTOR, e));
    BE(D.be_set(*e, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g->g));
    BE(D.be_set(*e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &id));
    BE(D.be_finalize(*e));
done:
    return st;
}

/* the engine's notes and knobs; st of its finalize (not SUCCESS: it does not take the graph) */
static cudnnStatus_t engine_describe(const graph *g, int64_t id, engine *en)
{
    cudnnBackendDescriptor_t e = NULL, info[MAX_KNOBS];
    cudnnStatus_t st;
    int64_t n = 0;
    int n_info = 0;
    memset(en, 0, sizeof *en);
    en->id = id;
    en->heur_rank = -1;
    BE(engine_make(g, id, &e));
    cudnnBackendNumericalNote_t num[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    cudnnBackendBehaviorNote_t beh[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
    BE(D.be_get(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE, CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n,
                num));
    for (int64_t i = 0; i < n && i < 16; i++)
        en->num[en->n_num++] = (int)num[i];
    BE(D.be_get(e, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &n,
                beh));
    for (int64_t i = 0; i < n && i < 16; i++)
        en->beh[en->n_beh++] = (int)beh[i];
    for (; n_info < MAX_KNOBS; n_info++)
        BE(D.be_create(CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR, &info[n_info]));
    BE(D.be_get(e, CUDNN_ATTR_ENGINE_KNOB_INFO, CUDNN_TYPE_BACKEND_DESCRIPTOR, MAX_KNOBS, &n, info));
    for (int64_t i = 0; i < n && i < MAX_KNOBS; i++) {
        knob *k = &en->knobs[en->n_knobs];
        cudnnBackendKnobType_t type;
        int64_t got = 0;
        BE(D.be_get(info[i], CUDNN_ATTR_KNOB_INFO_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &got, &type));
        BE(D.be_get(info[i], CUDNN_ATTR_KNOB_INFO_MINIMUM_VALUE, CUDNN_TYPE_INT64, 1, &got, &k->min));
        BE(D.be_get(info[i], CUDNN_ATTR_KNOB_INFO_MAXIMUM_VALUE, CUDNN_TYPE_INT64, 1, &got, &k->max));
        BE(D.be_get(info[i], CUDNN_ATTR_KNOB_INFO_STRIDE, CUDNN_TYPE_INT64, 1, &got, &k->stride));
        k->type = (int)type;
        en->n_knobs++;
    }
done:
    for (int i = 0; i < n_info; i++)
        (void)D.be_destroy(info[i]);
    if (e)
        (void)D.be_destroy(e);
    return st;
}

static int has_num(const engine *en, int note)
{
    for (int i = 0; i < en->n_num; i++)
        if (en->num[i] == note)
            return 1;
    return 0;
}

static int has_beh(const engine *en, int note)
{
    for (int i = 0; i < en->n_beh; i++)
        if (en->beh[i] == note)
            return 1;
    return 0;
}

/* TF32 or lower precision inside: not the FP32 sums asked about */
static int not_fp32(const engine *en)
{
    return has_num(en, CUDNN_NUMERICAL_NOTE_TENSOR_CORE) || has_num(en, CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS) ||
           has_num(en, CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION);
}

/* heuristic mode A's list: each engine's first place and that place's knob choices; the list's length or -1 */
static int heuristics(const graph *g, engine *ens, int n_ens)
{
    cudnnBackendDescriptor_t h = NULL, cfgs[MAX_HEUR];
    cudnnStatus_t st;
    const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    int n_cfgs = 0;
    int64_t n = 0;
    BE(D.be_create(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &h));
    BE(D.be_set(h, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g->g));
    BE(D.be_set(h, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode));
    BE(D.be_finalize(h));
    for (; n_cfgs < MAX_HEUR; n_cfgs++)
        BE(D.be_create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfgs[n_cfgs]));
    BE(D.be_get(h, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, MAX_HEUR, &n, cfgs));
    for (int64_t r = 0; r < n && r < MAX_HEUR; r++) {
        cudnnBackendDescriptor_t e = NULL, ch[MAX_KNOBS];
        int64_t id = -1, got = 0, n_ch = 0;
        int made = 0;
        if (D.be_create(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &e) != CUDNN_STATUS_SUCCESS)
            continue;
        if (D.be_get(cfgs[r], CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &got, &e) ==
                CUDNN_STATUS_SUCCESS &&
            D.be_get(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &got, &id) == CUDNN_STATUS_SUCCESS) {
            engine *en = NULL;
            for (int i = 0; i < n_ens; i++)
                if (ens[i].id == id)
                    en = &ens[i];
            while (made < MAX_KNOBS && D.be_create(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, &ch[made]) ==
                                           CUDNN_STATUS_SUCCESS)
                made++;
            if (en && en->heur_rank < 0 &&
                D.be_get(cfgs[r], CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR, made, &n_ch,
                         ch) == CUDNN_STATUS_SUCCESS) {
                en->heur_rank = (int)r;
                for (int64_t i = 0; i < n_ch && i < made; i++) {
                    cudnnBackendKnobType_t type;
                    int64_t v = 0;
                    if (D.be_get(ch[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &got, &type) ==
                            CUDNN_STATUS_SUCCESS &&
                        D.be_get(ch[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &got, &v) ==
                            CUDNN_STATUS_SUCCESS)
                        en->heur[en->n_heur++] = (choice){(int)type, v};
                }
            }
            for (int i = 0; i < made; i++)
                (void)D.be_destroy(ch[i]);
        }
        (void)D.be_destroy(e);
    }
done:
    for (int i = 0; i < n_cfgs; i++)
        (void)D.be_destroy(cfgs[i]);
    if (h)
        (void)D.be_destroy(h);
    return st == CUDNN_STATUS_SUCCESS ? (int)n : -1;
}

/* one engine configuration: plan, run, time, errors */
typedef struct backend_call {
    cudnnBackendDescriptor_t plan, vp;
} backend_call;

static void backend_once(void *arg)
{
    const backend_call *c = arg;
    (void)D.be_execute(D.handle, c->plan, c->vp);
}

static void backend_run(problem *pb, const graph *g, int64_t id, const choice *chs, int n_chs, result *r)
{
    cudnnBackendDescriptor_t e = NULL, cfg = NULL, plan = NULL, vp = NULL, kc[MAX_KNOBS];
    cudnnStatus_t st;
    const char *stage = "engine";
    int n_kc = 0;
    int64_t ws = 0, got = 0;
    void *ptrs[3] = {pb->cl ? pb->dx_cl : pb->dx, pb->cl ? pb->dw_cl : pb->dw, pb->dy};
    const int64_t uids[3] = {'x', 'w', 'y'};
    memset(r, 0, sizeof *r);
    BE(engine_make(g, id, &e));
    stage = "knob choice";
    while (n_kc < n_chs) {
        const cudnnBackendKnobType_t type = (cudnnBackendKnobType_t)chs[n_kc].type;
        cudnnBackendDescriptor_t *k = &kc[n_kc];
        BE(D.be_create(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, k));
        n_kc++; /* made: destroyed below whatever follows */
        BE(D.be_set(*k, CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &type));
        BE(D.be_set(*k, CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &chs[n_kc - 1].value));
        BE(D.be_finalize(*k));
    }
    stage = "engine config";
    BE(D.be_create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfg));
    BE(D.be_set(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &e));
    if (n_kc > 0)
        BE(D.be_set(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR, n_kc, kc));
    BE(D.be_finalize(cfg));
    stage = "plan";
    BE(D.be_create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan));
    BE(D.be_set(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &D.handle));
    BE(D.be_set(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg));
    BE(D.be_finalize(plan));
    BE(D.be_get(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &got, &ws));
    r->ws_bytes = (size_t)ws;
    if ((size_t)ws > WS_CAP_BYTES || !ws_grow(pb, (size_t)ws)) {
        snprintf(r->why, sizeof r->why, "workspace of %lld bytes", (long long)ws);
        goto done_quiet;
    }
    stage = "variant pack";
    BE(D.be_create(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp));
    BE(D.be_set(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs));
    BE(D.be_set(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids));
    BE(D.be_set(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &pb->ws));
    BE(D.be_finalize(vp));
    stage = "execute";
    (void)cudaMemset(pb->dy, 0xff, (size_t)pb->n_y * sizeof(float)); /* NaN: an output not written shows */
    BE(D.be_execute(D.handle, plan, vp));
    if (cudaDeviceSynchronize() != cudaSuccess) {
        snprintf(r->why, sizeof r->why, "the GPU failed: %s", cudaGetErrorString(cudaGetLastError()));
        goto done_quiet;
    }
    r->ok = 1;
    errors_of_device(pb, r);
    backend_call c = {plan, vp};
    r->ms = median_ms(backend_once, &c);
done:
    if (st != CUDNN_STATUS_SUCCESS)
        snprintf(r->why, sizeof r->why, "%s: %s", stage, D.error_string(st));
done_quiet:
    if (vp)
        (void)D.be_destroy(vp);
    if (plan)
        (void)D.be_destroy(plan);
    if (cfg)
        (void)D.be_destroy(cfg);
    for (int i = 0; i < n_kc; i++)
        (void)D.be_destroy(kc[i]);
    if (e)
        (void)D.be_destroy(e);
}

/* the values a sweep of k tries: every one when few, else min, powers of two and max */
static int sweep_values(const knob *k, int64_t *v)
{
    const int64_t stride = k->stride > 0 ? k->stride : 1;
    int n = 0;
    if ((k->max - k->min) / stride < MAX_SWEEP) {
        for (int64_t x = k->min; x <= k->max && n < MAX_SWEEP; x += stride)
            v[n++] = x;
        return n;
    }
    v[n++] = k->min;
    for (int64_t p = 1; p < k->max && n < MAX_SWEEP - 1; p *= 2)
        if (p > k->min && (p - k->min) % stride == 0)
            v[n++] = p;
    v[n++] = k->max;
    return n;
}

static void choices_text(const choice *chs, int n, char *buf, size_t cap)
{
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < n && at < cap; i++) {
        char name[32];
        knob_name(chs[i].type, name, sizeof name);
        at += (size_t)snprintf(buf + at, cap - at, "%s%s=%lld", i ? " " : "", name, (long long)chs[i].value);
    }
    if (n == 0)
        snprintf(buf, cap, "(none set)");
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* a backend row the summary shows */
typedef struct best {
    int have;
    int64_t engine;
    int rank; /* heuristic mode A's place (heur_first) */
    char knobs[420];
    result r;
} best;

static void keep(best *b, int64_t engine_id, int rank, const char *knobs, const result *r)
{
    b->have = 1;
    b->engine = engine_id;
    b->rank = rank;
    snprintf(b->knobs, sizeof b->knobs, "%s", knobs);
    b->r = *r;
}

/* what the summary keeps of one shape's backend rows */
typedef struct bests {
    best lowest;     /* least RMS error, any knobs */
    best fastest;    /* fastest with a split knob off the heuristic's value */
    best heur_first; /* the FP32 engine heuristic mode A places first, its choices */
    best tc_lowest;  /* least RMS error among the TENSOR_CORE engines (reference) */
} bests;

static void print_row(const char *what, const char *knobs, const result *r, const result *base)
{
    char ms[32] = "-", t_ratio[32] = "-", e_ratio[32] = "-", ws[32] = "";
    if (!r->ok) {
        printf("| %s | %s | - | - | - | - | - | %s |\n", what, knobs, r->why);
        return;
    }
    if (r->ms > 0) { /* host models have no time */
        snprintf(ms, sizeof ms, "%.3f", r->ms);
        snprintf(ws, sizeof ws, "%.1f MiB ws", (double)r->ws_bytes / (1 << 20));
        if (base && base->ok && base->ms > 0)
            snprintf(t_ratio, sizeof t_ratio, "%.2f", r->ms / base->ms);
    }
    if (base && base->ok && base->err_rms > 0)
        snprintf(e_ratio, sizeof e_ratio, "%.2f", r->err_rms / base->err_rms);
    printf("| %s | %s | %s | %.2e | %.2e | %s | %s | %s |\n", what, knobs, ms, r->err_max, r->err_rms, t_ratio,
           e_ratio, ws);
}

enum { ROW_BASE, ROW_SPLIT, ROW_NONE_SET };

/* the row of one configuration (ROW_BASE: the heuristic's choices or all knobs at their minimum; ROW_SPLIT: a split
 * knob set off the base), into the summary's picks (TENSOR_CORE engines only into tc_lowest) */
static void config_row(problem *pb, const graph *g, const engine *en, const char *layout, const choice *chs,
                       int n_chs, int kind, const result *base, bests *out)
{
    char what[48], text[400], kept_text[420];
    result r;
    const int tc = not_fp32(en);
    snprintf(what, sizeof what, "%lld%s%s", (long long)en->id,
             has_beh(en, CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION) ? " rtc" : "", tc ? " (TC ref)" : "");
    backend_run(pb, g, en->id, chs, n_chs, &r);
    choices_text(chs, n_chs, text, sizeof text);
    print_row(what, text, &r, base);
    if (!r.ok)
        return;
    snprintf(kept_text, sizeof kept_text, "%s %s", layout, text);
    if (tc) {
        if (!out->tc_lowest.have || r.err_rms < out->tc_lowest.r.err_rms)
            keep(&out->tc_lowest, en->id, en->heur_rank, kept_text, &r);
        return;
    }
    if (!out->lowest.have || r.err_rms < out->lowest.r.err_rms)
        keep(&out->lowest, en->id, en->heur_rank, kept_text, &r);
    if (kind == ROW_SPLIT && (!out->fastest.have || r.ms < out->fastest.r.ms))
        keep(&out->fastest, en->id, en->heur_rank, kept_text, &r);
    if (kind == ROW_BASE && en->heur_rank >= 0 && (!out->heur_first.have || en->heur_rank < out->heur_first.rank))
        keep(&out->heur_first, en->id, en->heur_rank, kept_text, &r);
}

/* an engine's rows: its base configuration, the split knobs swept from it */
static void engine_rows(problem *pb, const graph *g, const engine *en, const char *layout, const result *base,
                        double deadline, bests *out, int *skipped)
{
    choice chs[MAX_KNOBS + 1], from[MAX_KNOBS];
    int n_from = en->n_heur;
    memcpy(from, en->heur, (size_t)en->n_heur * sizeof from[0]);
    if (en->heur_rank < 0) { /* not listed: every knob at its minimum, a complete choice (some engines need one) */
        n_from = en->n_knobs;
        for (int j = 0; j < en->n_knobs; j++)
            from[j] = (choice){en->knobs[j].type, en->knobs[j].min};
    }
    if (now_s() > deadline) {
        (*skipped)++;
        return;
    }
    config_row(pb, g, en, layout, from, n_from, ROW_BASE, base, out);
    if (en->heur_rank < 0 && en->n_knobs > 0) /* and with no choice at all: the engine's own defaults */
        config_row(pb, g, en, layout, from, 0, ROW_NONE_SET, base, out);
    for (int j = 0; j < en->n_knobs; j++) {
        const knob *k = &en->knobs[j];
        int64_t vals[MAX_SWEEP];
        if (!splits_k(k->type))
            continue;
        const int n_vals = sweep_values(k, vals);
        for (int v = 0; v < n_vals; v++) {
            int n_chs = n_from, slot = -1;
            memcpy(chs, from, (size_t)n_from * sizeof chs[0]);
            for (int c = 0; c < n_chs; c++)
                if (chs[c].type == k->type)
                    slot = c;
            if (slot >= 0 && chs[slot].value == vals[v])
                continue; /* the base row above */
            if (slot < 0)
                slot = n_chs++;
            chs[slot] = (choice){k->type, vals[v]};
            if (now_s() > deadline) {
                (*skipped)++;
                continue;
            }
            config_row(pb, g, en, layout, chs, n_chs, ROW_SPLIT, base, out);
        }
    }
}

static void backend_section(problem *pb, const char *layout, const result *base, double deadline, bests *out)
{
    graph g;
    cudnnStatus_t st = graph_make(pb, &g);
    int64_t count = 0, got = 0;
    if (st != CUDNN_STATUS_SUCCESS ||
        (st = D.be_get(g.g, CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT, CUDNN_TYPE_INT64, 1, &got, &count)) !=
            CUDNN_STATUS_SUCCESS) {
        printf("The operation graph failed: %s\n\n", D.error_string(st));
        graph_free(&g);
        return;
    }
    engine *ens = calloc((size_t)(count > 0 ? count : 1), sizeof *ens);
    int n_ens = 0;
    printf("### Backend engines, %s\n\nThe graph's engine count: %lld. Engines that do not take it (status):",
           layout, (long long)count);
    for (int64_t id = 0; ens && id < count; id++) {
        st = engine_describe(&g, id, &ens[n_ens]);
        if (st == CUDNN_STATUS_SUCCESS)
            n_ens++;
        else
            printf(" %lld (%d)", (long long)id, (int)st);
    }
    const int n_heur = heuristics(&g, ens, n_ens);
    printf(".\nHeuristic mode A lists %d configurations.\n\n", n_heur);
    printf("| engine | numerical notes | behaviour notes | knobs (min..max step; **split**) | heur A rank: its choices "
           "| FP32 by its notes |\n"
           "|---|---|---|---|---|---|\n");
    for (int i = 0; i < n_ens; i++) {
        const engine *en = &ens[i];
        char knobs[1024] = "", heur[512] = "-";
        size_t at = 0;
        printf("| %lld | ", (long long)en->id);
        for (int j = 0; j < en->n_num; j++)
            printf("%s%s", j ? " " : "", en->num[j] < 10 ? num_note_names[en->num[j]] : "?");
        printf(" | ");
        for (int j = 0; j < en->n_beh; j++)
            printf("%s%s", j ? " " : "", en->beh[j] < 5 ? beh_note_names[en->beh[j]] : "?");
        for (int j = 0; j < en->n_knobs && at < sizeof knobs; j++) {
            char name[32];
            knob_name(en->knobs[j].type, name, sizeof name);
            at += (size_t)snprintf(knobs + at, sizeof knobs - at, "%s%s%s %lld..%lld/%lld", j ? ", " : "",
                                   splits_k(en->knobs[j].type) ? "**" : "", name, (long long)en->knobs[j].min,
                                   (long long)en->knobs[j].max, (long long)en->knobs[j].stride);
            if (splits_k(en->knobs[j].type) && at < sizeof knobs)
                at += (size_t)snprintf(knobs + at, sizeof knobs - at, "**");
        }
        if (en->heur_rank >= 0) {
            char ch[400];
            choices_text(en->heur, en->n_heur, ch, sizeof ch);
            snprintf(heur, sizeof heur, "%d: %s", en->heur_rank, ch);
        }
        printf(" | %s | %s | %s |\n", en->n_knobs ? knobs : "none", heur, not_fp32(en) ? "no" : "yes");
    }
    printf("\n### Backend configurations, %s\n\n%s Each engine with the heuristic's choices (all knobs at their "
           "minimum when it is not listed, and then with none set), then its split knobs swept one at a time from "
           "there.\n\n| engine | knobs | ms | err max | err rms | time / rule | rms / rule | note |\n"
           "|---|---|---|---|---|---|---|---|\n",
           layout, tc_run ? "Only the engines whose notes say TENSOR_CORE (\"TC ref\"), measured for reference (--tc)."
                          : "The FP32 engines (no TENSOR_CORE, DOWN_CONVERT or REDUCED_PRECISION note).");
    int skipped = 0;
    /* engines compiled at run time after the others: they may take seconds each, and the deadline then cuts them */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n_ens; i++) {
            const engine *en = &ens[i];
            if (not_fp32(en) != tc_run || has_beh(en, CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION) != pass)
                continue;
            engine_rows(pb, &g, en, layout, base, deadline, out, &skipped);
        }
    if (skipped)
        printf("\nDeadline reached: %d configurations not tried.\n", skipped);
    printf("\n");
    free(ens);
    graph_free(&g);
}

int main(int argc, char **argv)
{
    double budget_s = 120.0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--budget-s") == 0 && i + 1 < argc) {
            budget_s = atof(argv[++i]);
        } else if (strcmp(argv[i], "--tc") == 0) {
            tc_run = 1;
        } else {
            fprintf(stderr, "usage: cudnn_splitk [--budget-s S] [--tc]\n");
            return 2;
        }
    }
    int n_dev = 0;
    struct cudaDeviceProp prop;
    setvbuf(stdout, NULL, _IOLBF, 0); /* a crash or a timeout keeps the rows already printed */
    if (cudaGetDeviceCount(&n_dev) != cudaSuccess || n_dev < 1 || cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
        printf("cudnn_splitk: no GPU\n");
        return 77;
    }
    D.lib = open_cudnn();
    if (!D.lib) {
        printf("cudnn_splitk: libcudnn.so.9 not found (set PTQ_CUDNN_DIR)\n");
        return 77;
    }
    if (!load_fns())
        return 77;
    cudnnStatus_t st = D.create(&D.handle);
    if (st != CUDNN_STATUS_SUCCESS) {
        printf("cudnn_splitk: cudnnCreate: %s\n", D.error_string(st));
        return 77;
    }
    printf("# cuDNN's backend engines and split-K knobs on FP32 3x3 convolutions, %s, cuDNN %zu\n\n", prop.name,
           D.get_version());
    printf("%s. %d images, FP32 (the legacy API NCHW, the backend NCHW and NHWC), x in [0, 1), w uniform zero-mean "
           "/ sqrt(K), seed fixed. Errors: over %d sampled "
           "outputs, |y - y64| / sum_k |w x| (y64 in float64); FP32's unit roundoff is 5.96e-08. ms: median of %d "
           "calls. \"rule\": the legacy algorithm ptq picks (kernels/cuda/cudnn.cu: the heuristic's first "
           "deterministic GEMM-like one, FMA math), here at %d images a call. Host rows: FP32 fmaf chains over "
           "blocks of taps (im2col order), each block's partial added into the sum.\n\n",
           tc_run ? "--tc: the backend's TENSOR_CORE engines, for reference" : "The backend's FP32 engines", N_IMAGES,
           N_SAMPLES, N_TIMED, N_IMAGES);
    result rule_of[N_SHAPES], chain_of[N_SHAPES], b256_of[N_SHAPES];
    bests kept[N_SHAPES];
    int rule_algo[N_SHAPES];
    memset(kept, 0, sizeof kept);
    const double t0 = now_s();
    for (int si = 0; si < N_SHAPES; si++) {
        const shape *s = &shapes[si];
        problem pb;
        memset(&rule_of[si], 0, sizeof rule_of[si]);
        memset(&chain_of[si], 0, sizeof chain_of[si]);
        memset(&b256_of[si], 0, sizeof b256_of[si]);
        rule_algo[si] = -1;
        if (!problem_make(&pb, s, 20261204u + (uint32_t)si)) {
            printf("## %s: out of memory\n\n", s->name);
            problem_free(&pb);
            continue;
        }
        printf("## %s: %lld>%lld 3x3 s%lld @%lld (K = %lld taps)\n\n", s->name, (long long)s->c_in,
               (long long)s->c_out, (long long)s->stride, (long long)s->in, (long long)pb.k_taps);
        legacy_row rows[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        const int n_rows = legacy_section(&pb, rows, CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
        for (int i = 0; i < n_rows; i++)
            if (rows[i].rule) {
                rule_of[si] = rows[i].r;
                rule_algo[si] = rows[i].algo;
            }
        host_model(&pb, pb.k_taps, &chain_of[si]);
        host_model(&pb, 256, &b256_of[si]);
        result b64;
        host_model(&pb, 64, &b64);
        printf("### Legacy API and host models\n\n| what | knobs | ms | err max | err rms | time / rule | rms / rule | "
               "note |\n|---|---|---|---|---|---|---|---|\n");
        for (int i = 0; i < n_rows; i++) {
            char what[64];
            snprintf(what, sizeof what, "legacy %s%s", algo_names[rows[i].algo], rows[i].rule ? " (rule)" : "");
            print_row(what, "-", &rows[i].r, &rule_of[si]);
        }
        print_row("host FP32 one chain", "-", &chain_of[si], &rule_of[si]);
        print_row("host FP32 256-tap blocks", "-", &b256_of[si], &rule_of[si]);
        print_row("host FP32 64-tap blocks", "-", &b64, &rule_of[si]);
        printf("\n");
        /* half of the shape's share of the budget to each layout */
        backend_section(&pb, "NCHW", &rule_of[si], t0 + budget_s * (2 * si + 1) / (2 * N_SHAPES), &kept[si]);
        pb.cl = 1;
        backend_section(&pb, "NHWC", &rule_of[si], t0 + budget_s * (2 * si + 2) / (2 * N_SHAPES), &kept[si]);
        problem_free(&pb);
        fprintf(stderr, "cudnn_splitk: %s done at %.1f s\n", s->name, now_s() - t0);
    }
    printf("## Summary\n\nRMS errors; ms per call of %d images. \"heur first\": the FP32 engine heuristic mode A "
           "places first, with its choices; \"lowest rms\": the FP32 backend configuration of least RMS error; "
           "\"fastest split\": the fastest FP32 configuration with a split knob set off its base; \"TC lowest\": the "
           "least RMS error of the TENSOR_CORE engines (reference).\n\n"
           "| shape | rule: algo ms rms | host chain | host 256-blocks | heur first: engine knobs ms rms | "
           "lowest rms: engine knobs ms rms | fastest split: engine knobs ms rms | TC lowest: engine knobs ms rms |\n"
           "|---|---|---|---|---|---|---|---|\n",
           N_IMAGES);
    for (int si = 0; si < N_SHAPES; si++) {
        const best *b[4] = {&kept[si].heur_first, &kept[si].lowest, &kept[si].fastest, &kept[si].tc_lowest};
        printf("| %s | %s %.3f %.2e | %.2e | %.2e |", shapes[si].name,
               rule_algo[si] >= 0 ? algo_names[rule_algo[si]] : "-", rule_of[si].ms, rule_of[si].err_rms,
               chain_of[si].err_rms, b256_of[si].err_rms);
        for (int i = 0; i < 4; i++)
            if (b[i]->have)
                printf(" %lld %s %.3f %.2e |", (long long)b[i]->engine, b[i]->knobs, b[i]->r.ms, b[i]->r.err_rms);
            else
                printf(" - |");
        printf("\n");
    }
    printf("\nWall time: %.1f s\n", now_s() - t0);
    (void)D.destroy(D.handle);
    return 0;
}

#endif
