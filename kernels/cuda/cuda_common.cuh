/* Shared by the .cu files of kernels/cuda only: the device object's layout,
 * the cuBLAS entry points it loads, CUDA/cuBLAS error checks that record into
 * a ptq_ctx (naming the call and CUDA's error string), launch checks and grid
 * sizing. */
#ifndef PTQ_CUDA_COMMON_CUH
#define PTQ_CUDA_COMMON_CUH

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#ifdef PTQ_CUDNN
#include <cudnn.h>
#endif

#include "kernels/cuda/cuda_kernels.h"

/* cuBLAS is opened with dlopen when a device is created, not linked: loading
 * libcublas costs a process about 217 MiB of RSS and 70 ms, which CPU-only
 * runs of a CUDA build should not pay (kernels/cuda/device.cu). */
typedef struct ptq_cublas_fns {
    void *lib; /* the dlopen handle */
    decltype(&cublasCreate) create;
    decltype(&cublasDestroy) destroy;
    decltype(&cublasSetStream) set_stream;
    decltype(&cublasSetMathMode) set_math_mode;
    decltype(&cublasSgemm) sgemm;
    decltype(&cublasSgemmStridedBatched) sgemm_strided_batched;
    decltype(&cublasDgemm) dgemm;                             /* --math fp64 */
    decltype(&cublasDgemmStridedBatched) dgemm_strided_batched;
    decltype(&cublasGetStatusString) status_string;
    /* cuBLASLt (libcublas's dependency, found through its handle): single GEMMs of any row count with one fixed
     * algorithm (gemm.cu's gemm_lt); NULL when this cuBLAS lacks one, and those GEMMs go as row blocks */
    decltype(&cublasLtCreate) lt_create;
    decltype(&cublasLtDestroy) lt_destroy;
    decltype(&cublasLtMatmulDescCreate) lt_desc_create;
    decltype(&cublasLtMatmulDescDestroy) lt_desc_destroy;
    decltype(&cublasLtMatmulDescSetAttribute) lt_desc_set;
    decltype(&cublasLtMatrixLayoutCreate) lt_layout_create;
    decltype(&cublasLtMatrixLayoutDestroy) lt_layout_destroy;
    decltype(&cublasLtMatmulPreferenceCreate) lt_pref_create;
    decltype(&cublasLtMatmulPreferenceDestroy) lt_pref_destroy;
    decltype(&cublasLtMatmulPreferenceSetAttribute) lt_pref_set;
    decltype(&cublasLtMatmulAlgoGetHeuristic) lt_heuristic;
    decltype(&cublasLtMatmulAlgoConfigGetAttribute) lt_algo_get;
    decltype(&cublasLtMatmul) lt_matmul;
} ptq_cublas_fns;

/* One GEMM shape's cuBLASLt algorithm (gemm.cu's lt_algo): the weights' n, k and layout, the math, whether a bias
 * epilogue; found 0 when cuBLASLt offered none that keeps each sum in one thread block. */
typedef struct ptq_lt_plan {
    int64_t n, k;
    int trans_b, math, bias, found;
    cublasLtMatmulAlgo_t algo;
    int n_cand, n_same, tuned; /* lt_tune: candidates tried, with the reference's bits, 1 when one replaced it */
    size_t ws_bytes;           /* the workspace the algorithm asks for (0 unless PTQ_GEMM_WS=1) */
    float ref_ms, tuned_ms;    /* the probe's times */
} ptq_lt_plan;

/* cuDNN, opened with dlopen like cuBLAS but optional: without it
 * convolutions run through im2col + cuBLAS (kernels/cuda/cudnn.cu). */
typedef struct ptq_cudnn_plan ptq_cudnn_plan; /* one conv shape's descriptors and algorithm */
typedef struct ptq_cudnn {
#ifdef PTQ_CUDNN
    void *lib; /* the dlopen handle */
    decltype(&cudnnGetVersion) get_version;
    decltype(&cudnnGetErrorString) error_string;
    decltype(&cudnnCreate) create;
    decltype(&cudnnDestroy) destroy;
    decltype(&cudnnSetStream) set_stream;
    decltype(&cudnnCreateTensorDescriptor) create_tensor;
    decltype(&cudnnDestroyTensorDescriptor) destroy_tensor;
    decltype(&cudnnSetTensorNdDescriptor) set_tensor;
    decltype(&cudnnCreateFilterDescriptor) create_filter;
    decltype(&cudnnDestroyFilterDescriptor) destroy_filter;
    decltype(&cudnnSetFilterNdDescriptor) set_filter;
    decltype(&cudnnCreateConvolutionDescriptor) create_conv;
    decltype(&cudnnDestroyConvolutionDescriptor) destroy_conv;
    decltype(&cudnnSetConvolutionNdDescriptor) set_conv;
    decltype(&cudnnSetConvolutionGroupCount) set_group_count;
    decltype(&cudnnSetConvolutionMathType) set_math_type;
    decltype(&cudnnGetConvolutionNdForwardOutputDim) output_dim;
    decltype(&cudnnGetConvolutionForwardAlgorithmMaxCount) algo_max_count;
    decltype(&cudnnGetConvolutionForwardAlgorithm_v7) get_algos;
    decltype(&cudnnGetConvolutionForwardWorkspaceSize) workspace_size;
    decltype(&cudnnConvolutionForward) conv_forward;
    decltype(&cudnnAddTensor) add_tensor;
    decltype(&cudnnConvolutionBiasActivationForward) conv_bias_act;
    decltype(&cudnnCreateActivationDescriptor) create_act;
    decltype(&cudnnDestroyActivationDescriptor) destroy_act;
    decltype(&cudnnSetActivationDescriptor) set_act;
    cudnnActivationDescriptor_t identity; /* the fused bias's activation */
    cudnnActivationDescriptor_t relu;     /* a fused Relu's (ptq_conv_cudnn's relu) */
    cudnnHandle_t handle;
#endif
    int enabled;            /* 1 when loaded and not switched off (ptq_cuda_dev_set_cudnn) */
    void *workspace;        /* one per device, grown when a plan needs more */
    size_t workspace_bytes;
    void *slices;           /* a split convolution's weight and input slices (cudnn.cu's conv_split) */
    size_t slices_bytes;
    ptq_cudnn_plan *plans;  /* [n_plans]: every conv shape seen, with its algorithm */
    int n_plans, cap_plans;
    int64_t n_runs;         /* convolutions cuDNN ran (the tests check it took their shapes) */
    int64_t n_epilogue;     /* of them, with a residual or Relu in the epilogue */
    int64_t n_split;        /* convolutions run as a sum over slices of input channels (conv_split) */
    int64_t n_tuned_runs;   /* of them, with chunks in a tuned configuration (cudnn.cu's tune()) */
    char last[320];         /* the last one's algorithm, chunk and workspace, for the tests */
    char note[512];         /* why cuDNN is not used, or "" */
} ptq_cudnn;

/* Loads cuDNN into d->dnn and creates its handle on d's stream; when it is
 * missing or fails, d->dnn.note says why and convolutions use cuBLAS. */
void ptq_cudnn_open(ptq_cuda_dev *d);
void ptq_cudnn_close(ptq_cuda_dev *d);
/* Drops every conv plan (after a change of math). */
void ptq_cudnn_drop_plans(ptq_cuda_dev *d);
/* y = conv(x) + b through cuDNN when it takes this shape: *done = 1; else
 * *done = 0 and nothing was queued. With a residual z (y's shape, or NULL)
 * or relu, y = relu?(conv(x) + z + b) in the convolution's epilogue, which
 * needs a bias b; *done = 0 when cuDNN cannot (the caller runs the ops apart). */
ptq_status ptq_conv_cudnn(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_conv_params *p, const float *x, const float *w,
                          const float *b, const float *z, int relu, float *y, int *done);

struct ptq_cuda_dev {
    int index;
    cudaStream_t stream;
    ptq_cublas_fns blas;
    cublasHandle_t cublas;
    cublasLtHandle_t lt;   /* NULL without cuBLASLt or with PTQ_GEMM_LT=0 */
    ptq_lt_plan *lt_plans; /* [n_lt]: every shape seen */
    int n_lt, cap_lt;
    int64_t n_lt_runs;     /* GEMMs cuBLASLt ran (the tests check it took their shapes) */
    void *lt_ws;           /* with PTQ_GEMM_WS=1 (an experiment): cuBLASLt's workspace, PTQ_LT_WS_BYTES */
    char lt_last[160];     /* the last plan made: its shape and tuning, for the tests and benchmarks */
    ptq_cudnn dnn;
    int math; /* PTQ_CUDA_MATH_* */
    void *scratch; /* grown on demand by ptq_cuda_scratch */
    size_t scratch_bytes;
    char name[256];
    char late_err[256]; /* first failure of a void call (release), reported by the next sync */
};

static inline ptq_status ptq_cuda_fail_at(ptq_ctx *ctx, const char *file, int line, cudaError_t err,
                                          const char *call)
{
    return ptq_fail_at(ctx, file, line, PTQ_ERR_CUDA, "%s failed: %s (%s)", call, cudaGetErrorString(err),
                       cudaGetErrorName(err));
}

static inline ptq_status ptq_cublas_fail_at(ptq_ctx *ctx, const char *file, int line, const ptq_cuda_dev *d,
                                            cublasStatus_t err, const char *call)
{
    return ptq_fail_at(ctx, file, line, PTQ_ERR_CUDA, "%s failed: %s (cuBLAS status %d)", call,
                       d->blas.status_string ? d->blas.status_string(err) : "?", (int)err);
}

/* Return from the enclosing function with PTQ_ERR_CUDA when call fails. */
#define PTQ_CUDA_CHECK(ctx, call)                                                  \
    do {                                                                           \
        cudaError_t err_ = (call);                                                 \
        if (err_ != cudaSuccess)                                                   \
            return ptq_cuda_fail_at((ctx), __FILE__, __LINE__, err_, #call);       \
    } while (0)

/* d->blas.fn(args...), returning PTQ_ERR_CUDA when it fails. */
#define PTQ_CUBLAS(ctx, d, fn, ...)                                                      \
    do {                                                                                 \
        cublasStatus_t err_ = (d)->blas.fn(__VA_ARGS__);                                 \
        if (err_ != CUBLAS_STATUS_SUCCESS)                                               \
            return ptq_cublas_fail_at((ctx), __FILE__, __LINE__, (d), err_, "cuBLAS " #fn); \
    } while (0)

/* After a <<<...>>> launch: configuration and earlier asynchronous errors. */
#define PTQ_CUDA_LAUNCHED(ctx, kernel_name)                                                               \
    do {                                                                                                  \
        cudaError_t err_ = cudaGetLastError();                                                            \
        if (err_ != cudaSuccess)                                                                          \
            return ptq_fail_at((ctx), __FILE__, __LINE__, PTQ_ERR_CUDA, "launch of %s failed: %s (%s)",   \
                               (kernel_name), cudaGetErrorString(err_), cudaGetErrorName(err_));          \
    } while (0)

#define PTQ_CUDA_BLOCK 256

/* Blocks for a grid-stride loop over n items; at least 1, bounded so the
 * launch stays legal for any n (each thread then takes several items). */
static inline unsigned ptq_cuda_blocks(int64_t n)
{
    int64_t blocks = (n + PTQ_CUDA_BLOCK - 1) / PTQ_CUDA_BLOCK;
    if (blocks < 1)
        blocks = 1;
    if (blocks > 65536)
        blocks = 65536;
    return (unsigned)blocks;
}

/* Grows the device buffer *buf (*buf_bytes long) to at least n_bytes,
 * waiting for queued work that may still use it; never shrinks it. */
ptq_status ptq_cuda_grow(ptq_ctx *ctx, ptq_cuda_dev *d, size_t n_bytes, void **buf, size_t *buf_bytes);

/* --math fp64's operands: dst [n_slices, len] = slice s of src (src + s * stride, len floats) in double, on d's
 * stream (kernels/cuda/gemm.cu). */
ptq_status ptq_cuda_widen(ptq_ctx *ctx, ptq_cuda_dev *d, int64_t n_slices, int64_t len, const float *src,
                          int64_t stride, double *dst);

/* Scratch of at least n_bytes owned by d, valid until the next call that
 * asks for more; growing it waits for queued work that may still read it. */
ptq_status ptq_cuda_scratch(ptq_ctx *ctx, ptq_cuda_dev *d, size_t n_bytes, void **out);

#endif
