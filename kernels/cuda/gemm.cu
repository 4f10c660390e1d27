/* GEMM on the GPU through cuBLAS SGEMM (FP32 math), mirroring
 * ptq_k_gemm_ref: row-major operands are handed to column-major cuBLAS as
 * their transposes, computing y^T = op(b)^T op(a)^T. Also the strided-
 * batched form MatMul uses. Covered by tests/cuda_parity_kernels.c. */
#include <limits.h>

#include "kernels/cuda/cuda_common.cuh"

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
    PTQ_CUBLAS_CHECK(ctx, cublasSetStream(d->cublas, d->stream));
    if (n_batch == 1)
        PTQ_CUBLAS_CHECK(ctx, cublasSgemm(d->cublas, op_b, op_a, n, m, k, &p->alpha, b, ld_b, a, ld_a, &p->beta, y, n));
    else
        PTQ_CUBLAS_CHECK(ctx, cublasSgemmStridedBatched(d->cublas, op_b, op_a, n, m, k, &p->alpha, b, ld_b, b_stride,
                                                        a, ld_a, a_stride, &p->beta, y, n, y_stride, (int)n_batch));
    return PTQ_OK;
}

extern "C" ptq_status ptq_k_gemm_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_gemm_params *p, const float *a,
                                      const float *b, float *y)
{
    return ptq_k_gemm_batched_cuda(ctx, d, p, 1, a, 0, b, 0, y, 0);
}
