/* Convolution on the GPU, mirroring ptq_k_conv_ref: through cuDNN when it
 * takes the shape (kernels/cuda/cudnn.cu), else here. group 1: im2col of a
 * chunk of images side by side into the device scratch, one cuBLAS SGEMM for
 * the whole chunk (a few tiny GEMMs per image run far below the card's rate),
 * then a scatter back to NCHW that adds the bias. The chunk is a fixed number
 * of images per layer, the last one zero-padded, so every SGEMM of a layer has
 * the same shape whatever the batch: cuBLAS picks its kernel by shape, and an
 * image's result then does not depend on the batch it came in (calibration
 * archives must not depend on batching; scripts/gpu-check.sh calib). Grouped
 * convs: per-image im2col and SGEMM strided-batched over groups (a fixed
 * count); one-input-channel-per-group (depthwise) convs use a direct kernel.
 * Under --math fp64 (PTQ_CUDA_MATH_FP64) no cuDNN: the same wide columns in
 * double, groups strided-batched, one cuBLAS DGEMM a chunk (conv_wide_f64).
 * Covered by tests/cuda_parity_kernels.c. */
#include <limits.h>
#include <stdlib.h>

#include "kernels/cuda/cuda_common.cuh"

/* im2col scratch is filled a chunk of images at a time, at most this much */
#define CONV_SCRATCH_BYTES ((size_t)256 << 20)
/* the wide SGEMM's columns (images x output positions) a chunk aims at */
#define CONV_CHUNK_COLS 8192

/* Taps per SGEMM: PTQ_KSPLIT=B sums each output's K taps in blocks of B,
 * each block's sum added in order into the output (cuBLAS beta 1), for
 * bench/zoo_diag.py's measure of FP32 summation order; unset: one SGEMM
 * over all K. */
static int64_t k_block(int64_t ck)
{
    const char *v = getenv("PTQ_KSPLIT");
    const long long b = v ? atoll(v) : 0;
    return b > 0 && b < ck ? (int64_t)b : ck;
}

/* The im2col element of image img, input channel c, kernel offset kk (in k
 * order) and output position o: the input under that tap, 0 in the padding. */
template <typename I>
static __device__ float im2col_value(const ptq_conv_params &p, const float *x, int64_t img, I c, I kk, I o)
{
    I o2 = o % (I)p.out[2], o1 = (o / (I)p.out[2]) % (I)p.out[1], o0 = o / ((I)p.out[2] * (I)p.out[1]);
    I q2 = kk % (I)p.k[2], q1 = (kk / (I)p.k[2]) % (I)p.k[1], q0 = kk / ((I)p.k[2] * (I)p.k[1]);
    int64_t i0 = (int64_t)o0 * p.stride[0] - p.pad_lo[0] + (int64_t)q0 * p.dil[0];
    int64_t i1 = (int64_t)o1 * p.stride[1] - p.pad_lo[1] + (int64_t)q1 * p.dil[1];
    int64_t i2 = (int64_t)o2 * p.stride[2] - p.pad_lo[2] + (int64_t)q2 * p.dil[2];
    if (i0 < 0 || i0 >= p.in[0] || i1 < 0 || i1 >= p.in[1] || i2 < 0 || i2 >= p.in[2])
        return 0.0f;
    return x[(img * p.c_in + c) * (p.in[0] * p.in[1] * p.in[2]) + (i0 * p.in[1] + i1) * p.in[2] + i2];
}

/* col: [n_img, c_in * K, OUT] for images img0.. of x, where K = k0*k1*k2 and
 * OUT = out0*out1*out2; row (c * K + kk), kk the kernel offset in k order. */
template <typename I>
static __global__ void im2col_kernel(ptq_conv_params p, const float *x, int64_t img0, I n_img, float *col)
{
    const I k_sz = (I)(p.k[0] * p.k[1] * p.k[2]);
    const I out_sz = (I)(p.out[0] * p.out[1] * p.out[2]);
    const I total = n_img * (I)p.c_in * k_sz * out_sz;
    for (I i = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; i < total; i += (I)gridDim.x * (I)blockDim.x) {
        I r = i / out_sz;
        I kk = r % k_sz;
        r /= k_sz;
        col[i] = im2col_value<I>(p, x, img0 + r / (I)p.c_in, r % (I)p.c_in, kk, i % out_sz);
    }
}

/* colw: [c_in * K, n_img, OUT] (images side by side along the columns) for
 * images img0.. of x; images n_valid.. of the chunk (past the batch) are 0.
 * T: float, or double under --math fp64. */
template <typename I, typename T>
static __global__ void im2col_wide_kernel(ptq_conv_params p, const float *x, int64_t img0, I n_img, I n_valid,
                                          T *colw)
{
    const I k_sz = (I)(p.k[0] * p.k[1] * p.k[2]);
    const I out_sz = (I)(p.out[0] * p.out[1] * p.out[2]);
    const I total = (I)p.c_in * k_sz * n_img * out_sz;
    for (I i = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; i < total; i += (I)gridDim.x * (I)blockDim.x) {
        I r = i / out_sz;
        I img = r % n_img;
        r /= n_img;
        colw[i] = img < n_valid ? (T)im2col_value<I>(p, x, img0 + img, r / k_sz, r % k_sz, i % out_sz) : (T)0;
    }
}

/* Launches im2col_wide_kernel with 32-bit index math (cheaper div/mod) where
 * i + the grid stride cannot overflow. */
template <typename T>
static ptq_status im2col_wide(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_conv_params *p, const float *x, int64_t img0,
                              int64_t chunk, int64_t n_valid, int64_t n_col, T *colw)
{
    if (n_col <= INT_MAX - (int64_t)ptq_cuda_blocks(n_col) * PTQ_CUDA_BLOCK)
        im2col_wide_kernel<int, T><<<ptq_cuda_blocks(n_col), PTQ_CUDA_BLOCK, 0, d->stream>>>(*p, x, img0, (int)chunk,
                                                                                            (int)n_valid, colw);
    else
        im2col_wide_kernel<int64_t, T><<<ptq_cuda_blocks(n_col), PTQ_CUDA_BLOCK, 0, d->stream>>>(*p, x, img0, chunk,
                                                                                                n_valid, colw);
    PTQ_CUDA_LAUNCHED(ctx, "im2col_wide_kernel");
    return PTQ_OK;
}

/* y[img0 + img, co, o] = acc[co, img, o] + b[co] (b may be NULL) for the
 * first n_valid of the chunk's n_img images; T the sums' type (a double sum
 * takes the bias in double and rounds once). */
template <typename T>
static __global__ void scatter_bias_kernel(int64_t c_out, int64_t n_img, int64_t n_valid, int64_t out_sz,
                                           const T *acc, const float *b, float *y)
{
    const int64_t total = c_out * n_valid * out_sz;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t o = i % out_sz;
        int64_t co = (i / out_sz) % c_out;
        int64_t img = i / (out_sz * c_out);
        y[i] = (float)(acc[(co * n_img + img) * out_sz + o] + (b ? (T)b[co] : (T)0));
    }
}

/* The chunk of images a wide conv's GEMM takes side by side: a function of
 * the layer alone, never of p->n (so an image's bits do not depend on its
 * batch); img_bytes: the scratch one image of the chunk needs. */
static int64_t wide_chunk(int64_t out_sz, size_t img_bytes)
{
    int64_t chunk = CONV_CHUNK_COLS / out_sz;
    if (chunk > (int64_t)(CONV_SCRATCH_BYTES / img_bytes))
        chunk = (int64_t)(CONV_SCRATCH_BYTES / img_bytes);
    return chunk < 1 ? 1 : chunk;
}

/* group 1: y = conv(x) + b through one SGEMM per chunk of images, every
 * chunk (the last one padded with zero images) of the same size. */
static ptq_status conv_wide(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_conv_params *p, const float *x,
                            const float *w, const float *b, float *y)
{
    const int64_t k_sz = p->k[0] * p->k[1] * p->k[2];
    const int64_t out_sz = p->out[0] * p->out[1] * p->out[2];
    const int64_t ck = p->c_in * k_sz;
    const size_t img_bytes = (size_t)((ck + p->c_out) * out_sz) * sizeof(float);
    const int64_t chunk = wide_chunk(out_sz, img_bytes);
    if (chunk * out_sz > INT_MAX)
        return ptq_fail(ctx, PTQ_ERR_UNSUPPORTED, "conv: %lld output positions per image exceed cuBLAS's int range",
                        (long long)out_sz);
    void *scratch = NULL;
    ptq_status st = ptq_cuda_scratch(ctx, d, (size_t)chunk * img_bytes, &scratch);
    if (st != PTQ_OK)
        return st;
    float *colw = (float *)scratch;
    float *acc = colw + chunk * ck * out_sz;
    const float one = 1.0f, zero = 0.0f;
    const int64_t cols = chunk * out_sz, n_col = ck * cols, kb = k_block(ck);
    for (int64_t img0 = 0; img0 < p->n; img0 += chunk) {
        const int64_t n_valid = p->n - img0 < chunk ? p->n - img0 : chunk;
        PTQ_TRY_RET(im2col_wide(ctx, d, p, x, img0, chunk, n_valid, n_col, colw));
        /* row-major acc [c_out, cols] = w [c_out, ck] @ colw [ck, cols] is column-major
         * acc^T [cols, c_out] = colw^T [cols, ck] @ w^T [ck, c_out] */
        for (int64_t k0 = 0; k0 < ck; k0 += kb)
            PTQ_CUBLAS(ctx, d, sgemm, d->cublas, CUBLAS_OP_N, CUBLAS_OP_N, (int)cols, (int)p->c_out,
                       (int)(ck - k0 < kb ? ck - k0 : kb), &one, colw + k0 * cols, (int)cols, w + k0, (int)ck,
                       k0 ? &one : &zero, acc, (int)cols);
        const int64_t n_out = p->c_out * n_valid * out_sz;
        scatter_bias_kernel<float><<<ptq_cuda_blocks(n_out), PTQ_CUDA_BLOCK, 0, d->stream>>>(
            p->c_out, chunk, n_valid, out_sz, acc, b, y + img0 * p->c_out * out_sz);
        PTQ_CUDA_LAUNCHED(ctx, "scatter_bias_kernel");
    }
    return PTQ_OK;
}

/* --math fp64, any group count: y = conv(x) + b with every output's taps
 * summed in double (cuBLAS DGEMM, the FP64 tensor cores of sm_80+) and
 * rounded to FP32 once, as kernels/ref does. Columns, weights and sums are
 * double in the scratch; chunks of images side by side as in conv_wide, the
 * groups one strided-batched DGEMM. */
static ptq_status conv_wide_f64(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_conv_params *p, const float *x,
                                const float *w, const float *b, float *y)
{
    const int64_t k_sz = p->k[0] * p->k[1] * p->k[2];
    const int64_t out_sz = p->out[0] * p->out[1] * p->out[2];
    const int64_t ck = p->c_in * k_sz, ckg = ck / p->group, mg = p->c_out / p->group;
    const size_t img_bytes = (size_t)((ck + p->c_out) * out_sz) * sizeof(double);
    const int64_t chunk = wide_chunk(out_sz, img_bytes), cols = chunk * out_sz;
    if (cols > INT_MAX || ckg > INT_MAX || mg > INT_MAX || p->group > INT_MAX)
        return ptq_fail(ctx, PTQ_ERR_UNSUPPORTED,
                        "conv: a DGEMM side exceeds cuBLAS's int range (%lld x %lld x %lld, %lld groups)",
                        (long long)cols, (long long)mg, (long long)ckg, (long long)p->group);
    const int64_t n_w = p->c_out * ckg;
    void *scratch = NULL;
    PTQ_TRY_RET(ptq_cuda_scratch(ctx, d, (size_t)n_w * sizeof(double) + (size_t)chunk * img_bytes, &scratch));
    double *wd = (double *)scratch, *colw = wd + n_w, *acc = colw + chunk * ck * out_sz;
    PTQ_TRY_RET(ptq_cuda_widen(ctx, d, 1, n_w, w, 0, wd));
    const double one = 1.0, zero = 0.0;
    for (int64_t img0 = 0; img0 < p->n; img0 += chunk) {
        const int64_t n_valid = p->n - img0 < chunk ? p->n - img0 : chunk;
        PTQ_TRY_RET(im2col_wide(ctx, d, p, x, img0, chunk, n_valid, ck * cols, colw));
        /* per group g, row-major acc_g [mg, cols] = w_g [mg, ckg] @ colw_g [ckg, cols], i.e. column-major
         * acc_g^T = colw_g^T @ w_g^T; colw_g starts at row g * ckg, w_g at row g * mg, acc_g at row g * mg */
        PTQ_CUBLAS(ctx, d, dgemm_strided_batched, d->cublas, CUBLAS_OP_N, CUBLAS_OP_N, (int)cols, (int)mg, (int)ckg,
                   &one, colw, (int)cols, ckg * cols, wd, (int)ckg, mg * ckg, &zero, acc, (int)cols, mg * cols,
                   (int)p->group);
        const int64_t n_out = p->c_out * n_valid * out_sz;
        scatter_bias_kernel<double><<<ptq_cuda_blocks(n_out), PTQ_CUDA_BLOCK, 0, d->stream>>>(
            p->c_out, chunk, n_valid, out_sz, acc, b, y + img0 * p->c_out * out_sz);
        PTQ_CUDA_LAUNCHED(ctx, "scatter_bias_kernel");
    }
    return PTQ_OK;
}

/* y: [n, c_out, OUT] += b[c_out] broadcast */
static __global__ void bias_kernel(int64_t total, int64_t c_out, int64_t out_sz, const float *b, float *y)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x)
        y[i] += b[(i / out_sz) % c_out];
}

/* Each output element directly, for c_in/group == 1: like the ref, starts
 * from the bias and sums the taps in double, kernel dims outer to inner. */
static __global__ void conv_direct_kernel(ptq_conv_params p, const float *x, const float *w, const float *b,
                                          float *y)
{
    const int64_t out_sz = p.out[0] * p.out[1] * p.out[2];
    const int64_t in_sz = p.in[0] * p.in[1] * p.in[2];
    const int64_t k_sz = p.k[0] * p.k[1] * p.k[2];
    const int64_t per_group = p.c_out / p.group;
    const int64_t total = p.n * p.c_out * out_sz;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t o = i % out_sz;
        int64_t co = (i / out_sz) % p.c_out;
        int64_t img = i / (out_sz * p.c_out);
        int64_t o2 = o % p.out[2], o1 = (o / p.out[2]) % p.out[1], o0 = o / (p.out[2] * p.out[1]);
        int64_t ci = co / per_group; /* the group's one input channel */
        const float *xs = x + (img * p.c_in + ci) * in_sz;
        const float *ws = w + co * k_sz;
        double acc = b ? (double)b[co] : 0.0;
        for (int64_t q0 = 0; q0 < p.k[0]; q0++) {
            int64_t i0 = o0 * p.stride[0] - p.pad_lo[0] + q0 * p.dil[0];
            if (i0 < 0 || i0 >= p.in[0])
                continue;
            for (int64_t q1 = 0; q1 < p.k[1]; q1++) {
                int64_t i1 = o1 * p.stride[1] - p.pad_lo[1] + q1 * p.dil[1];
                if (i1 < 0 || i1 >= p.in[1])
                    continue;
                for (int64_t q2 = 0; q2 < p.k[2]; q2++) {
                    int64_t i2 = o2 * p.stride[2] - p.pad_lo[2] + q2 * p.dil[2];
                    if (i2 < 0 || i2 >= p.in[2])
                        continue;
                    acc += (double)xs[(i0 * p.in[1] + i1) * p.in[2] + i2] *
                           (double)ws[(q0 * p.k[1] + q1) * p.k[2] + q2];
                }
            }
        }
        y[i] = (float)acc;
    }
}

static int fits_int(int64_t v)
{
    return v >= 0 && v <= INT_MAX;
}

/* Grouped convs: y[img0 .. img0+n_img) from columns col ([n_img, c_in*K,
 * OUT]; col_stride elements per image), one SGEMM strided-batched over the
 * groups per image (a fixed shape and count per layer). */
static ptq_status conv_gemm(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_conv_params *p, const float *col,
                            int64_t col_stride, const float *w, float *y, int64_t n_img)
{
    const int64_t k_sz = p->k[0] * p->k[1] * p->k[2];
    const int64_t out_sz = p->out[0] * p->out[1] * p->out[2];
    const int64_t cg = p->c_in / p->group, mg = p->c_out / p->group;
    const int64_t ck = cg * k_sz, kb = k_block(ck);
    const float one = 1.0f, zero = 0.0f;
    if (!fits_int(p->group))
        return ptq_fail(ctx, PTQ_ERR_UNSUPPORTED, "conv: group %lld", (long long)p->group);
    /* row-major y_g [mg, OUT] = w_g [mg, ck] @ col_g [ck, OUT] is column-major
     * y_g^T [OUT, mg] = col_g^T [OUT, ck] @ w_g^T [ck, mg]: no transposes */
    for (int64_t img = 0; img < n_img; img++)
        for (int64_t k0 = 0; k0 < ck; k0 += kb)
            PTQ_CUBLAS(ctx, d, sgemm_strided_batched, d->cublas, CUBLAS_OP_N, CUBLAS_OP_N, (int)out_sz, (int)mg,
                       (int)(ck - k0 < kb ? ck - k0 : kb), &one, col + img * col_stride + k0 * out_sz,
                       (int)out_sz, ck * out_sz, w + k0, (int)ck, mg * ck, k0 ? &one : &zero,
                       y + img * p->c_out * out_sz, (int)out_sz, mg * out_sz, (int)p->group);
    return PTQ_OK;
}

extern "C" ptq_status ptq_k_conv_epilogue_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_conv_params *p,
                                               const float *x, const float *w, const float *b, const float *z,
                                               int relu, float *y, int *done)
{
    *done = 0;
    if (p->group < 1 || p->c_in % p->group || p->c_out % p->group || p->n * p->c_out == 0 ||
        d->math == PTQ_CUDA_MATH_FP64)
        return PTQ_OK;
    return ptq_conv_cudnn(ctx, d, p, x, w, b, z, relu, y, done);
}

extern "C" ptq_status ptq_k_conv_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_conv_params *p, const float *x,
                                      const float *w, const float *b, float *y)
{
    const int64_t k_sz = p->k[0] * p->k[1] * p->k[2];
    const int64_t out_sz = p->out[0] * p->out[1] * p->out[2];
    const int64_t in_sz = p->in[0] * p->in[1] * p->in[2];
    const int64_t total = p->n * p->c_out * out_sz;
    if (p->group < 1 || p->c_in % p->group || p->c_out % p->group)
        return ptq_fail(ctx, PTQ_ERR_SHAPE, "conv: channels %lld -> %lld do not split into %lld groups",
                        (long long)p->c_in, (long long)p->c_out, (long long)p->group);
    if (total == 0)
        return PTQ_OK;
    int done = 0;
    if (d->math != PTQ_CUDA_MATH_FP64)
        PTQ_TRY_RET(ptq_conv_cudnn(ctx, d, p, x, w, b, NULL, 0, y, &done));
    if (done)
        return PTQ_OK;
    if (p->nhwc) /* the paths below read and write [n, c, spatial...] */
        return ptq_fail(ctx, PTQ_ERR_UNSUPPORTED,
                        "conv %lld -> %lld channels: cuDNN did not take it with channels-last tensors (%s); "
                        "PTQ_NHWC=0 keeps every tensor [N, C, H, W]",
                        (long long)p->c_in, (long long)p->c_out,
                        ptq_cuda_dev_note(d)[0] ? ptq_cuda_dev_note(d) : "declined");
    const int64_t cg = p->c_in / p->group;
    if (cg == 1) { /* sums in double already: the same under every math */
        conv_direct_kernel<<<ptq_cuda_blocks(total), PTQ_CUDA_BLOCK, 0, d->stream>>>(*p, x, w, b, y);
        PTQ_CUDA_LAUNCHED(ctx, "conv_direct_kernel");
        return PTQ_OK;
    }
    PTQ_CUBLAS(ctx, d, set_stream, d->cublas, d->stream);
    if (d->math == PTQ_CUDA_MATH_FP64)
        return conv_wide_f64(ctx, d, p, x, w, b, y);
    const int64_t ck = cg * k_sz;
    if (!fits_int(out_sz) || !fits_int(ck) || !fits_int(p->c_out))
        return ptq_fail(ctx, PTQ_ERR_UNSUPPORTED, "conv: a GEMM side exceeds cuBLAS's int range (%lld x %lld x %lld)",
                        (long long)out_sz, (long long)p->c_out, (long long)ck);
    int pointwise = k_sz == 1 && out_sz == in_sz;
    for (int s = 0; s < PTQ_SPATIAL; s++)
        pointwise = pointwise && p->stride[s] == 1 && p->pad_lo[s] == 0 && p->out[s] == p->in[s];
    if (p->group == 1)
        return conv_wide(ctx, d, p, x, w, b, y);
    if (pointwise) {
        /* x itself is the column matrix: [n, c_in, OUT] */
        ptq_status st = conv_gemm(ctx, d, p, x, p->c_in * out_sz, w, y, p->n);
        if (st != PTQ_OK)
            return st;
    } else {
        const int64_t col_per_img = p->c_in * k_sz * out_sz;
        const size_t img_bytes = (size_t)col_per_img * sizeof(float);
        int64_t chunk = (int64_t)(CONV_SCRATCH_BYTES / img_bytes);
        if (chunk < 1)
            chunk = 1;
        if (chunk > p->n)
            chunk = p->n;
        void *scratch = NULL;
        ptq_status st = ptq_cuda_scratch(ctx, d, (size_t)chunk * img_bytes, &scratch);
        if (st != PTQ_OK)
            return st;
        float *col = (float *)scratch;
        for (int64_t img0 = 0; img0 < p->n; img0 += chunk) {
            int64_t n_img = p->n - img0 < chunk ? p->n - img0 : chunk;
            int64_t n_col = n_img * col_per_img;
            /* 32-bit index math (cheaper div/mod) where i + the grid stride cannot overflow */
            if (n_col <= INT_MAX - (int64_t)ptq_cuda_blocks(n_col) * PTQ_CUDA_BLOCK)
                im2col_kernel<int><<<ptq_cuda_blocks(n_col), PTQ_CUDA_BLOCK, 0, d->stream>>>(*p, x, img0, (int)n_img,
                                                                                             col);
            else
                im2col_kernel<int64_t><<<ptq_cuda_blocks(n_col), PTQ_CUDA_BLOCK, 0, d->stream>>>(*p, x, img0, n_img,
                                                                                                 col);
            PTQ_CUDA_LAUNCHED(ctx, "im2col_kernel");
            st = conv_gemm(ctx, d, p, col, col_per_img, w, y + img0 * p->c_out * out_sz, n_img);
            if (st != PTQ_OK)
                return st;
        }
    }
    if (b) {
        bias_kernel<<<ptq_cuda_blocks(total), PTQ_CUDA_BLOCK, 0, d->stream>>>(total, p->c_out, out_sz, b, y);
        PTQ_CUDA_LAUNCHED(ctx, "bias_kernel");
    }
    return PTQ_OK;
}
