/* Plain-C entry points of kernels/cuda and of the device object they run on
 * (one GPU, one stream, one cuBLAS handle in FP32 math, scratch memory); no
 * CUDA types, so C code may include it. Tensor pointers are device memory.
 * Covered by tests/cuda_parity_kernels.c and tests/cuda_backend_exec.c. */
#ifndef PTQ_CUDA_KERNELS_H
#define PTQ_CUDA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "ptq/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Owns a stream, a cuBLAS handle, cuDNN's handle, workspace and conv plans
 * (when cuDNN loads) and scratch memory on one GPU. Work is
 * queued on its stream in call order; only download and sync wait. */
typedef struct ptq_cuda_dev ptq_cuda_dev;

/* Number of usable GPUs; 0 with the CUDA runtime's reason in why. */
int ptq_cuda_device_count(char *why, size_t n_why);
/* Makes device_index current and creates its stream and cuBLAS handle. */
ptq_status ptq_cuda_dev_create(ptq_ctx *ctx, int device_index, ptq_cuda_dev **out);
void ptq_cuda_dev_free(ptq_cuda_dev *d);
/* "NVIDIA H200" */
const char *ptq_cuda_dev_name(const ptq_cuda_dev *d);
/* Why convolutions do not run through cuDNN (not found, PTQ_CUDNN=0, ...), or "". */
const char *ptq_cuda_dev_note(const ptq_cuda_dev *d);
/* Turns cuDNN convolutions on (when loaded) or off (im2col + cuBLAS);
 * returns 1 when they are now on. */
int ptq_cuda_dev_set_cudnn(ptq_cuda_dev *d, int on);
/* Convolutions run through cuDNN so far (shapes it declined not counted);
 * *last (when last is not NULL): the last one's cudnnConvolutionFwdAlgo_t,
 * images per call and workspace bytes, in words. */
int64_t ptq_cuda_dev_cudnn_runs(const ptq_cuda_dev *d, const char **last);
/* GEMMs d ran as one cuBLASLt call of all their rows (gemm.cu's gemm_lt), for the tests; *last (when last is not
 * NULL): the last shape it chose an algorithm for, and whether tuning replaced the heuristic's first. */
int64_t ptq_cuda_dev_lt_runs(const ptq_cuda_dev *d, const char **last);
/* Convolutions cuDNN ran as a sum over slices of their input channels
 * (the PTQ_CONV_SPLIT diagnostic: cudnn.cu's conv_split); each slice
 * counts as a run above. */
int64_t ptq_cuda_dev_cudnn_splits(const ptq_cuda_dev *d);
/* Of them, those that ran whole chunks in a tuned configuration (cudnn.cu's
 * tune(): another algorithm or more images a call, measured to give the
 * reference configuration's bits). */
int64_t ptq_cuda_dev_cudnn_tuned_runs(const ptq_cuda_dev *d);
/* cuDNN plans that leave their calls' last positions empty (cudnn.cu's
 * position_guard, under TF32), and in *positional the positions all plans'
 * probes saw give an image other bits. */
int64_t ptq_cuda_dev_cudnn_guards(const ptq_cuda_dev *d, int64_t *positional);
/* Forgets every cuDNN plan: the next convolution of each shape plans (and
 * tunes, as PTQ_CUDNN_TUNE then says) again. */
void ptq_cuda_dev_drop_conv_plans(ptq_cuda_dev *d);
/* The math convolutions and matrix products run in: FP32 FMA (exact, the
 * default), TF32 tensor cores (cuDNN's tensor-op math, cuBLAS's TF32
 * mode), or FP64 sums (FP32 tensors, each product summed in double by cuBLAS
 * DGEMM and rounded to FP32 once, as kernels/ref does; no cuDNN). Plans made
 * under another math are dropped. */
enum { PTQ_CUDA_MATH_FP32 = 0, PTQ_CUDA_MATH_TF32 = 1, PTQ_CUDA_MATH_FP64 = 2 };
void ptq_cuda_dev_set_math(ptq_cuda_dev *d, int math);

/* One cuDNN forward algorithm on one convolution (bench/cudnn_survey.c). */
typedef struct ptq_cudnn_algo_time {
    int algo;           /* cudnnConvolutionFwdAlgo_t */
    int heuristic_rank; /* place in cudnnGetConvolutionForwardAlgorithm_v7's list, -1 when absent */
    int deterministic, status, allowed; /* allowed: ptq's runs may pick it (GEMM-like, no FFT) */
    int ran;
    size_t workspace;
    float ms;           /* one call, the mean of 4 after a warm-up */
} ptq_cudnn_algo_time;
/* 8-bit images (device memory) into the model's float input on the GPU,
 * bit for bit as ptq_preprocess_image. Covered by tests/cuda_normalize.c. */
ptq_status ptq_k_normalize_u8_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_norm_params *p, const uint8_t *src,
                                   float *dst);

/* Images per cuDNN call ptq's runs use for p's layer. */
int64_t ptq_cudnn_chunk(const ptq_conv_params *p);
/* Times every algorithm cuDNN runs for p at p->n images a call under d's
 * math; out[cap] gets those that ran. A diagnostic: runs never call it. */
ptq_status ptq_cudnn_survey(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_conv_params *p, ptq_cudnn_algo_time *out,
                            int cap, int *n_out);

ptq_status ptq_cuda_alloc(ptq_ctx *ctx, ptq_cuda_dev *d, size_t n_bytes, void **out);
/* Waits for queued work first, so no kernel still uses p; NULL-safe. */
void ptq_cuda_release(ptq_cuda_dev *d, void *p);
/* The host source may be reused when upload returns. */
ptq_status ptq_cuda_upload(ptq_ctx *ctx, ptq_cuda_dev *d, void *dst, const void *host_src, size_t n_bytes);
/* Queued only: host_src must stay unchanged until the next sync (from
 * page-locked memory, ptq_cuda_host_alloc's, the copy overlaps the host). */
ptq_status ptq_cuda_upload_async(ptq_ctx *ctx, ptq_cuda_dev *d, void *dst, const void *host_src, size_t n_bytes);
/* Page-locked host memory (cudaHostAlloc), freed by ptq_cuda_host_free. */
ptq_status ptq_cuda_host_alloc(ptq_ctx *ctx, size_t n_bytes, void **out);
void ptq_cuda_host_free(void *p);
/* Complete when it returns. */
ptq_status ptq_cuda_download(ptq_ctx *ctx, ptq_cuda_dev *d, void *host_dst, const void *src, size_t n_bytes);
ptq_status ptq_cuda_copy(ptq_ctx *ctx, ptq_cuda_dev *d, void *dst, const void *src, size_t n_bytes);
/* n_rows rows of row_bytes each, from src (rows src_pitch bytes apart) to dst
 * (dst_pitch apart), both on the device: Concat's strided blocks. */
ptq_status ptq_cuda_copy_2d(ptq_ctx *ctx, ptq_cuda_dev *d, void *dst, size_t dst_pitch, const void *src,
                            size_t src_pitch, size_t row_bytes, int64_t n_rows);
/* Sets n_bytes at dst to byte (0xFF poisons floats with NaN). */
ptq_status ptq_cuda_fill_bytes(ptq_ctx *ctx, ptq_cuda_dev *d, void *dst, int byte, size_t n_bytes);
ptq_status ptq_cuda_sync(ptq_ctx *ctx, ptq_cuda_dev *d);

/* Same contracts as the ptq_k_*_ref functions in kernels/kernels.h. */

/* x: [n, c_in, in0, in1, in2]; w: [c_out, c_in/group, k0, k1, k2];
 * b: [c_out] or NULL; y: [n, c_out, out0, out1, out2]. cuDNN in fixed
 * chunks of images when it is loaded and takes the shape, else im2col +
 * cuBLAS SGEMM through the device's scratch, or a direct kernel for depthwise. */
ptq_status ptq_k_conv_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_conv_params *p, const float *x, const float *w,
                           const float *b, float *y);
/* y = relu?(conv(x) + z + b) in one cuDNN call (z: y's shape, or NULL;
 * b required): *done = 1; *done = 0 and nothing computed when cuDNN does not
 * take it, and the caller runs the convolution, Add and Relu apart. */
ptq_status ptq_k_conv_epilogue_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_conv_params *p, const float *x,
                                    const float *w, const float *b, const float *z, int relu, float *y, int *done);
/* Convolutions that ran with a residual or Relu in cuDNN's epilogue. */
int64_t ptq_cuda_dev_epilogue_runs(const ptq_cuda_dev *d);

/* a: [m, k] ([k, m] when trans_a); b: [k, n] ([n, k] when trans_b);
 * y: [m, n] = alpha * op(a) @ op(b) + beta * y (y not read when beta == 0). */
ptq_status ptq_k_gemm_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_gemm_params *p, const float *a, const float *b,
                           float *y);
/* y: [m, n] = alpha * op(a) @ op(b) + bias (bias: [n], added to every row) in the GEMM's epilogue: *done = 1;
 * *done = 0 and nothing queued where cuBLASLt does not take it (p->beta must be 0; a transposed a, n or k not a
 * multiple of 4, a pointer off 16 bytes, --math fp64: the caller adds the bias apart). A row's bits do not depend
 * on m. */
ptq_status ptq_k_gemm_bias_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_gemm_params *p, const float *a,
                                const float *b, const float *bias, float *y, int *done);
/* n_batch independent products of ptq_k_gemm_cuda: a, b, y advance by
 * a_stride, b_stride, y_stride elements per batch (0 repeats an operand). */
ptq_status ptq_k_gemm_batched_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_gemm_params *p, int64_t n_batch,
                                   const float *a, int64_t a_stride, const float *b, int64_t b_stride, float *y,
                                   int64_t y_stride);

/* a, b: laid out as bc's a_stride / b_stride describe; y: [bc->out_dims], row-major. */
ptq_status ptq_k_binary_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, ptq_binop op, const ptq_bcast *bc, const float *a,
                             const float *b, float *y);

/* y = powf(a, b) (Pow), laid out as for ptq_k_binary_cuda. */
ptq_status ptq_k_pow_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_bcast *bc, const float *a, const float *b,
                          float *y);

/* a: laid out as bc's a_stride describes; y: [bc->out_dims] = a broadcast (b_stride unused). */
ptq_status ptq_k_expand_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_bcast *bc, const float *a, float *y);

/* out: [out_dims] (ndim of them, at most 8) = cond ? x : y (Where); cond
 * (bool bytes), x and y read at their strides [ndim], 0 on broadcast dims. */
ptq_status ptq_k_where_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, int ndim, const int64_t *out_dims, const int64_t *c_stride,
                            const int64_t *x_stride, const int64_t *y_stride, const uint8_t *cond, const float *x,
                            const float *y, float *out);

/* x, y: [n]; x == y allowed. */
ptq_status ptq_k_unary_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, ptq_unop op, float alpha, float beta, int64_t n,
                            const float *x, float *y);
/* y = (x * (erf(x / c_div) + c_add)) * c_mul: an exported exact GELU's Div, Erf, Add, Mul, Mul in one pass, bit
 * for bit what the five nodes' kernels give (the CPU's is ptq_k_erf_gelu_cpu); x, y: [n], x == y allowed. */
ptq_status ptq_k_erf_gelu_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, int64_t n, float c_div, float c_add, float c_mul,
                               const float *x, float *y);
/* y = sqrtf(x) (Sqrt); x, y: [n], x == y allowed. */
ptq_status ptq_k_sqrt_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, int64_t n, const float *x, float *y);

/* x: [outer, len, inner] -> y: [outer, inner], the mean over len summed in
 * double (ReduceMean over a block of adjacent axes); len 0 gives NaN as the ref. */
ptq_status ptq_k_reduce_mean_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, int64_t outer, int64_t len, int64_t inner,
                                  const float *x, float *y);

/* x: [n_rows, n_cols] -> y: [n_rows], row means summed in double. */
ptq_status ptq_k_global_avgpool_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, int64_t n_rows, int64_t n_cols, const float *x,
                                     float *y);

/* x: [n, c, in0, in1, in2]; y: [n, c, out0, out1, out2]. */
ptq_status ptq_k_maxpool_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_pool_params *p, const float *x, float *y);
ptq_status ptq_k_avgpool_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_pool_params *p, const float *x, float *y);
/* Channels-last forms (the executor's NHWC tensors under TF32): x [n, hw, c]
 * -> y [n, c]; and a 2-D MaxPool (max) or AveragePool, x [n, in1, in2, c] ->
 * y [n, out1, out2, c]. Each output has the bits of its NCHW form above. */
ptq_status ptq_k_global_avgpool_nhwc_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, int64_t n, int64_t hw, int64_t c,
                                          const float *x, float *y);
ptq_status ptq_k_pool_nhwc_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, int max, const ptq_pool_params *p, const float *x,
                                float *y);

/* x, y: [n, c, spatial]; scale, bias, mean, var: [c]. */
ptq_status ptq_k_batchnorm_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, int64_t n, int64_t c, int64_t spatial, const float *x,
                                const float *scale, const float *bias, const float *mean, const float *var, float eps,
                                float *y);

/* Softmax over the middle dim of x, y viewed as [outer, len, inner]. */
ptq_status ptq_k_softmax_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, int64_t outer, int64_t len, int64_t inner,
                              const float *x, float *y);

/* LayerNormalization of x, y viewed as [n_rows, n_cols] over each row;
 * scale, bias: [n_cols] (bias NULL: 0); mean, inv_std: [n_rows] or NULL. */
ptq_status ptq_k_layernorm_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, int64_t n_rows, int64_t n_cols, const float *x,
                                const float *scale, const float *bias, float eps, float *y, float *mean,
                                float *inv_std);

/* x: [in_dims] row-major, elem_bytes (1, 2, 4 or 8) each; perm: [ndim];
 * y: [in_dims[perm[0]], ..., in_dims[perm[ndim-1]]]. */
ptq_status ptq_k_transpose_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, size_t elem_bytes, int ndim, const int64_t *in_dims,
                                const int64_t *perm, const void *x, void *y);
/* x: [in_dims], elem_bytes (1, 2, 4 or 8) each; y: [out_dims], y's element
 * (i0, i1, ...) = x's (start[0] + i0 step[0], start[1] + i1 step[1], ...). */
ptq_status ptq_k_slice_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, size_t elem_bytes, int ndim, const int64_t *in_dims,
                            const int64_t *out_dims, const int64_t *start, const int64_t *step, const void *x, void *y);

/* Observer passes (kernels/ref/observe.c's contracts). x: [n] device
 * floats. stats: into host *s, complete on return. hist: adds into the
 * device histogram hist: [n_bins] (scale and n_bins as in the ref). */
ptq_status ptq_k_observe_stats_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const float *x, int64_t n, ptq_observe_stats *s);
ptq_status ptq_k_observe_hist_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const float *x, int64_t n, double scale,
                                   int64_t n_bins, unsigned long long *hist);

/* A device observer's whole state (observers/observer_cuda.c) in one device
 * allocation of ptq_k_observe_dev_bytes(n_bins) bytes: counts, min/max, the
 * range e, the |x| histogram [n_bins] (a power of two) and an overflow
 * buffer. Same results as observers/observer.c, bit for bit. */
size_t ptq_k_observe_dev_bytes(int64_t n_bins);
/* Queues "nothing seen yet" into state. */
ptq_status ptq_k_observe_dev_clear_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, void *state, int64_t n_bins);
/* Queues the observation of x: [n] device floats (x must stay until the
 * stream reaches it): one fused read binning at the device's current range,
 * a one-block settle growing the range when values reached it, and a pass
 * that re-reads x only when more than the overflow buffer's 65536 values
 * did (always so for a first batch that large: it has no range yet). */
ptq_status ptq_k_observe_dev_update_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, void *state, int64_t n_bins,
                                         const float *x, int64_t n);
/* The observed chain of a Conv's output c: [n] device floats: y = c + z
 * (z: [n], or NULL without an Add; z_first: the Add's first operand is z),
 * then relu(y) when relu, written to y: [n]; the observers states[0] (c),
 * states[1] (c + z, used with z) and states[2] (y, used with relu) see the
 * values as ptq_k_observe_dev_update_cuda on each tensor would (NULL: not
 * observed), from one read of c and z. c and z must stay until the stream
 * reaches the work (a rescue pass may re-read them). */
ptq_status ptq_k_observe_chain_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, void *const states[3], int64_t n_bins,
                                    const float *c, const float *z, int z_first, int relu, float *y, int64_t n);
/* The observed bias of a MatMul's product c: [n] device floats: y = c + bias, bias: [cols] device floats added to
 * every row of cols values (bias_first: the Add's first operand is the bias), written to y: [n]; the observers
 * states[0] (c) and states[1] (y) as ptq_k_observe_chain_cuda's, from one read of c. */
ptq_status ptq_k_observe_bias_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, void *const states[2], int64_t n_bins,
                                   const float *c, const float *bias, int64_t cols, int bias_first, float *y,
                                   int64_t n);
/* The observed exact GELU of x: [n] device floats in two passes: d = x / c_div, e = erff(d), a = e + c_add (written
 * to a_out: [n]), then m = x * a and y = m * c_mul (written to y: [n]), each the IEEE operation of its node's kernel
 * (ptq_k_erf_gelu_cuda's); the observers states[0..4] (d, e, a, m, y; NULL: not observed) as
 * ptq_k_observe_chain_cuda's. */
ptq_status ptq_k_observe_gelu_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, void *const states[5], int64_t n_bins,
                                   const float *x, float *a_out, float *y, int64_t n, float c_div, float c_add,
                                   float c_mul);
/* Waits for queued work and downloads: *s (all fields), *e (0 while nothing
 * is binned) and hist: [n_bins] host counts. */
ptq_status ptq_k_observe_dev_read_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const void *state, int64_t n_bins,
                                       ptq_observe_stats *s, int *e, int64_t *hist);

#ifdef __cplusplus
}
#endif
#endif
