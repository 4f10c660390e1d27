/* Elementwise activations on the GPU (every ptq_unop: Erf and Gelu too),
 * mirroring ptq_k_unary_ref formula for formula, and Sqrt (ptq_k_sqrt_ref);
 * expf/tanhf/erff/erfcf are CUDA's accurate versions (no fast-math), within
 * 2 ulp of the host's (erfcf 4); sqrtf is correctly rounded on both. Covered
 * by tests/cuda_parity_kernels.c and tests/cuda_parity_transformer_ops.c. */
#include "kernels/cuda/cuda_common.cuh"

/* Sqrt is no ptq_unop (the CPU runs it through ptq_k_sqrt_ref): this file's code for it */
enum { UN_SQRT = PTQ_UN_GELU_TANH + 1 };

/* Comparisons rather than fminf/fmaxf so NaN passes through as in the ref;
 * __fmul_rn/__fadd_rn keep nvcc from fusing into an FMA the host rounds twice. */
template <int OP>
static __device__ float apply(float v, float alpha, float beta)
{
    float t;
    switch (OP) {
    case PTQ_UN_RELU: return v < 0.0f ? 0.0f : v;
    case PTQ_UN_LEAKY_RELU: return v < 0.0f ? alpha * v : v;
    case PTQ_UN_CLIP:
        t = v < alpha ? alpha : v;
        return t > beta ? beta : t;
    case PTQ_UN_SIGMOID: return 1.0f / (1.0f + expf(-v));
    case PTQ_UN_HARD_SIGMOID:
        t = __fadd_rn(__fmul_rn(alpha, v), beta);
        t = t > 1.0f ? 1.0f : t;
        return t < 0.0f ? 0.0f : t;
    case PTQ_UN_HARD_SWISH:
        t = __fadd_rn(__fmul_rn(v, 1.0f / 6.0f), 0.5f);
        t = t > 1.0f ? 1.0f : t;
        return v * (t < 0.0f ? 0.0f : t);
    case PTQ_UN_TANH: return tanhf(v);
    case PTQ_UN_ERF: return erff(v);
    case PTQ_UN_GELU: return __fmul_rn(__fmul_rn(0.5f, v), erfcf(__fmul_rn(v, -PTQ_GELU_SQRT1_2)));
    case PTQ_UN_GELU_TANH:
        t = __fmul_rn(PTQ_GELU_TANH_K, __fadd_rn(v, __fmul_rn(PTQ_GELU_TANH_C, __fmul_rn(__fmul_rn(v, v), v))));
        return v / __fadd_rn(1.0f, expf(__fmul_rn(-2.0f, t)));
    case UN_SQRT: return sqrtf(v);
    }
    return v;
}

/* x, y: [n]; x == y allowed (each element is read before it is written) */
template <int OP>
static __global__ void unary_kernel(int64_t n, float alpha, float beta, const float *x, float *y)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = apply<OP>(x[i], alpha, beta);
}

template <int OP>
static ptq_status launch(ptq_ctx *ctx, ptq_cuda_dev *d, float alpha, float beta, int64_t n, const float *x, float *y)
{
    if (n <= 0)
        return PTQ_OK;
    unary_kernel<OP><<<ptq_cuda_blocks(n), PTQ_CUDA_BLOCK, 0, d->stream>>>(n, alpha, beta, x, y);
    PTQ_CUDA_LAUNCHED(ctx, "unary_kernel");
    return PTQ_OK;
}

extern "C" ptq_status ptq_k_unary_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, ptq_unop op, float alpha, float beta,
                                       int64_t n, const float *x, float *y)
{
    switch (op) {
    case PTQ_UN_RELU: return launch<PTQ_UN_RELU>(ctx, d, alpha, beta, n, x, y);
    case PTQ_UN_LEAKY_RELU: return launch<PTQ_UN_LEAKY_RELU>(ctx, d, alpha, beta, n, x, y);
    case PTQ_UN_CLIP: return launch<PTQ_UN_CLIP>(ctx, d, alpha, beta, n, x, y);
    case PTQ_UN_SIGMOID: return launch<PTQ_UN_SIGMOID>(ctx, d, alpha, beta, n, x, y);
    case PTQ_UN_HARD_SIGMOID: return launch<PTQ_UN_HARD_SIGMOID>(ctx, d, alpha, beta, n, x, y);
    case PTQ_UN_HARD_SWISH: return launch<PTQ_UN_HARD_SWISH>(ctx, d, alpha, beta, n, x, y);
    case PTQ_UN_TANH: return launch<PTQ_UN_TANH>(ctx, d, alpha, beta, n, x, y);
    case PTQ_UN_ERF: return launch<PTQ_UN_ERF>(ctx, d, alpha, beta, n, x, y);
    case PTQ_UN_GELU: return launch<PTQ_UN_GELU>(ctx, d, alpha, beta, n, x, y);
    case PTQ_UN_GELU_TANH: return launch<PTQ_UN_GELU_TANH>(ctx, d, alpha, beta, n, x, y);
    }
    return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "unary: unknown op %d", (int)op);
}

/* The exported exact GELU's five nodes in one pass: y = (x * (erff(x / c_div) + c_add)) * c_mul, each step the one
 * IEEE operation the Div, Erf, Add and Mul kernels make, so the result is theirs bit for bit. x == y allowed. */
static __global__ void erf_gelu_kernel(int64_t n, float c_div, float c_add, float c_mul, const float *x, float *y)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const float v = x[i];
        y[i] = __fmul_rn(__fmul_rn(v, __fadd_rn(erff(__fdiv_rn(v, c_div)), c_add)), c_mul);
    }
}

extern "C" ptq_status ptq_k_erf_gelu_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, int64_t n, float c_div, float c_add,
                                          float c_mul, const float *x, float *y)
{
    if (n <= 0)
        return PTQ_OK;
    erf_gelu_kernel<<<ptq_cuda_blocks(n), PTQ_CUDA_BLOCK, 0, d->stream>>>(n, c_div, c_add, c_mul, x, y);
    PTQ_CUDA_LAUNCHED(ctx, "erf_gelu_kernel");
    return PTQ_OK;
}

extern "C" ptq_status ptq_k_sqrt_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, int64_t n, const float *x, float *y)
{
    return launch<UN_SQRT>(ctx, d, 0.0f, 0.0f, n, x, y);
}
