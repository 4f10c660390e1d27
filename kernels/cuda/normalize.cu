/* 8-bit images into the model's float input on the GPU (the input is
 * uploaded as bytes, 4x less than floats): the arithmetic of
 * ptq_preprocess_image without resizing, each operation rounded as the
 * host rounds it (__fmul_rn/__fsub_rn/__fdiv_rn: no FMA contraction), so
 * the floats are the same bits. Covered by tests/cuda_normalize.c. */
#include "kernels/cuda/cuda_common.cuh"

static __device__ float sample(const ptq_norm_params &p, const uint8_t *img, int64_t y, int64_t x, int64_t ch)
{
    return (float)(p.planar ? img[(ch * p.h + y) * p.w + x] : img[(y * p.w + x) * p.c + ch]);
}

static __global__ void normalize_u8_kernel(ptq_norm_params p, const uint8_t *src, float *dst)
{
    const int64_t per_out = p.h * p.w, total = p.n * p.n_out * per_out;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        /* i walks the output in its own layout */
        int64_t img_i, oc, y, x;
        if (p.nhwc) {
            oc = i % p.n_out;
            x = i / p.n_out % p.w;
            y = i / p.n_out / p.w % p.h;
            img_i = i / p.n_out / per_out;
        } else {
            x = i % p.w;
            y = i / p.w % p.h;
            oc = i / per_out % p.n_out;
            img_i = i / per_out / p.n_out;
        }
        const int64_t mc = p.bgr && p.n_out == 3 ? 2 - oc : oc;
        const uint8_t *img = src + img_i * p.h * p.w * p.c;
        float v;
        if (p.c <= 2)
            v = sample(p, img, y, x, 0);
        else if (p.n_out == 3)
            v = sample(p, img, y, x, mc);
        else
            v = __fadd_rn(__fadd_rn(__fmul_rn(0.299f, sample(p, img, y, x, 0)), __fmul_rn(0.587f, sample(p, img, y, x, 1))),
                          __fmul_rn(0.114f, sample(p, img, y, x, 2)));
        dst[i] = __fdiv_rn(__fsub_rn(__fmul_rn(v, p.scale), p.mean[oc]), p.std[oc]);
    }
}

extern "C" ptq_status ptq_k_normalize_u8_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_norm_params *p,
                                              const uint8_t *src, float *dst)
{
    if (p->c < 1 || p->c > 4 || (p->n_out != 1 && p->n_out != 3))
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "normalize: %lld source channels into %d", (long long)p->c, p->n_out);
    const int64_t total = p->n * p->n_out * p->h * p->w;
    if (total == 0)
        return PTQ_OK;
    normalize_u8_kernel<<<ptq_cuda_blocks(total), PTQ_CUDA_BLOCK, 0, d->stream>>>(*p, src, dst);
    PTQ_CUDA_LAUNCHED(ctx, "normalize_u8_kernel");
    return PTQ_OK;
}
