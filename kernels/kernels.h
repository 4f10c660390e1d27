/* Kernel entry points and their parameter blocks, shared by every backend:
 * ptq_k_<op>_ref (kernels/ref, plain loops, the executable spec),
 * ptq_k_<op>_cpu (kernels/cpu, OpenBLAS + the core/parallel.h pool) and ptq_k_<op>_cuda
 * (kernels/cuda, declared in kernels/cuda/cuda_kernels.h). All float32,
 * row-major. Spatial ops are written for 3 spatial dims (D,H,W); 1-D and
 * 2-D problems set the unused leading dims to size 1, kernel 1, stride 1,
 * dilation 1, pad 0. Parity: tests/parity_*.c. */
#ifndef PTQ_KERNELS_H
#define PTQ_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" { /* the CUDA files share the parameter blocks and a few helpers */
#endif

#define PTQ_SPATIAL 3

typedef struct ptq_conv_params {
    int64_t n, c_in, c_out, group;
    int64_t in[PTQ_SPATIAL];  /* input spatial size */
    int64_t out[PTQ_SPATIAL]; /* output spatial size */
    int64_t k[PTQ_SPATIAL];
    int64_t stride[PTQ_SPATIAL];
    int64_t dil[PTQ_SPATIAL];
    int64_t pad_lo[PTQ_SPATIAL];
    int64_t pad_hi[PTQ_SPATIAL];
    /* the GPU's cuDNN path only (0 everywhere else): PTQ_NHWC_X / PTQ_NHWC_Y
     * when x / y (and a residual z) are stored channels last, [n, in..., c_in]
     * and [n, out..., c_out], the dims above unchanged */
    int64_t nhwc;
} ptq_conv_params;
enum { PTQ_NHWC_X = 1, PTQ_NHWC_Y = 2 };

/* x: [n, c_in, in0, in1, in2]; w: [c_out, c_in/group, k0, k1, k2];
 * b: [c_out] or NULL; y: [n, c_out, out0, out1, out2]. */
void ptq_k_conv_ref(const ptq_conv_params *p, const float *x, const float *w, const float *b, float *y);
void ptq_k_conv_cpu(const ptq_conv_params *p, const float *x, const float *w, const float *b, float *y);
/* ptq_k_conv_cpu with a following Add of z (y's shape, or NULL) and a clamp of each output to [lo, hi] (t = y < lo ?
 * lo : y, then t > hi ? hi : t, as the Clip node rounds it; Relu: [0, +Inf]; none: [-Inf, +Inf]) applied to each
 * output tile while it is in cache: the bits of the Conv, Add and Relu or Clip nodes run one after another. */
void ptq_k_conv_cpu_epilogue(const ptq_conv_params *p, const float *x, const float *w, const float *b,
                             const float *z, float lo, float hi, float *y);
/* ptq_k_conv_cpu_epilogue's direct path (kernels/cpu/conv_direct.c): 1-D and 2-D convolutions on x86-64 with AVX2
 * and FMA; 0 when it does not apply (another layout or CPU, or no memory for its scratch), y untouched. */
int ptq_k_conv_cpu_direct(const ptq_conv_params *p, const float *x, const float *w, const float *b, const float *z,
                          float lo, float hi, float *y);
/* ptq_k_conv_cpu_epilogue's depthwise path (kernels/cpu/conv_depthwise.c): one input channel a group, 1-D or 2-D,
 * a plane at a time; 0 when its copies find no memory or would be past any (hostile strides or pads), y untouched. */
int ptq_k_conv_cpu_depthwise(const ptq_conv_params *p, const float *x, const float *w, const float *b,
                             const float *z, float lo, float hi, float *y);
/* Tests: the widest vectors the direct and depthwise paths may use, 0 none (the im2col path; portable C for
 * depthwise), 1 AVX2, 2 AVX-512, -1 (the default) the widest the CPU has. Not for use while kernels run. */
void ptq_k_conv_cpu_set_isa(int isa);
/* Tests and benches: the direct path's AVX-512 tile, 0 6 output channels by 64 columns, 1 8 by 48, 2 8 by 32, 3 32
 * channels by a row of 14 outputs, 4 32 by two rows of 7, -1 (the default) the one computing the fewest outputs
 * (conv_direct.c). Not for use while kernels run. */
void ptq_k_conv_cpu_set_tile(int tile);
/* The vectors those paths use now: ptq_k_conv_cpu_set_isa's setting, at most what the CPU has. */
int ptq_k_conv_cpu_isa(void);

/* ONNX ConvTranspose on the same parameter block, in and out its input and
 * output sizes: input position i through tap t adds to output position
 * i * stride + t * dil - pad_lo (pad_lo < 0: output positions before the
 * scatter, zero; pad_hi is not read). x: [n, c_in, in0, in1, in2];
 * w: [c_in, c_out/group, k0, k1, k2]; b: [c_out] or NULL;
 * y: [n, c_out, out0, out1, out2]. */
void ptq_k_conv_transpose_ref(const ptq_conv_params *p, const float *x, const float *w, const float *b, float *y);
void ptq_k_conv_transpose_cpu(const ptq_conv_params *p, const float *x, const float *w, const float *b, float *y);

/* 8-bit images of the model's size into the model's input, as
 * ptq_preprocess_image (datasets/preprocess.c, the reference) computes it
 * without resizing: v = pixel (gray from channel 0 when c <= 2, channel mc
 * for 3-channel models, 0.299 R + 0.587 G + 0.114 B for gray models of
 * colour images), then (v * scale - mean[oc]) / std[oc], oc = 2 - mc when
 * bgr. src: [n, h, w, c] (planar: [n, c, h, w]); dst: [n, n_out, h, w]
 * (nhwc: [n, h, w, n_out]). */
typedef struct ptq_norm_params {
    int64_t n, h, w, c;
    int planar, n_out, bgr, nhwc;
    float scale, mean[4], std[4];
} ptq_norm_params;

typedef struct ptq_pool_params {
    int64_t n, c;
    int64_t in[PTQ_SPATIAL], out[PTQ_SPATIAL], k[PTQ_SPATIAL], stride[PTQ_SPATIAL], dil[PTQ_SPATIAL];
    int64_t pad_lo[PTQ_SPATIAL], pad_hi[PTQ_SPATIAL];
    int count_include_pad; /* AveragePool: divide by the full window (pads counted) */
} ptq_pool_params;

/* x: [n, c, in0, in1, in2]; y: [n, c, out0, out1, out2]. */
void ptq_k_maxpool_ref(const ptq_pool_params *p, const float *x, float *y);
void ptq_k_avgpool_ref(const ptq_pool_params *p, const float *x, float *y);
void ptq_k_maxpool_cpu(const ptq_pool_params *p, const float *x, float *y);
void ptq_k_avgpool_cpu(const ptq_pool_params *p, const float *x, float *y);
/* LpPool: (sum over the window's taps in the input of |x|^lp)^(1 / lp), lp >= 1, in double (padding adds 0); the
 * reference is the CPU path, the CUDA backend hands it to the CPU. */
void ptq_k_lppool_ref(const ptq_pool_params *p, int64_t lp, const float *x, float *y);

/* x: [n_rows, n_cols] -> y: [n_rows], the mean of each row (GlobalAveragePool
 * with n_rows = N*C, n_cols = spatial size). Sums in double. */
void ptq_k_global_avgpool_ref(int64_t n_rows, int64_t n_cols, const float *x, float *y);
void ptq_k_global_avgpool_cpu(int64_t n_rows, int64_t n_cols, const float *x, float *y);
/* x: [outer, n_red, inner] -> y: [outer, inner], the mean over the middle axis, summed in double in its order:
 * ptq_k_reduce_mean_ref's bits for a block of reduced axes with others after it. */
void ptq_k_mean_mid_cpu(int64_t outer, int64_t n_red, int64_t inner, const float *x, float *y);

typedef struct ptq_gemm_params {
    int64_t m, n, k;
    int trans_a, trans_b; /* a is [m,k] ([k,m] when trans_a); b is [k,n] ([n,k] when trans_b) */
    float alpha, beta;
} ptq_gemm_params;

/* y: [m, n] = alpha * op(a) @ op(b) + beta * y (y's prior content is not read when beta == 0). */
void ptq_k_gemm_ref(const ptq_gemm_params *p, const float *a, const float *b, float *y);
void ptq_k_gemm_cpu(const ptq_gemm_params *p, const float *a, const float *b, float *y);
/* ptq_k_gemm_cpu's product (alpha 1, beta 0), then bias [n] added to every row as an Add node adds it: the same
 * bits as the MatMul and Add nodes apart (a MatMul's bias in one pass; runtime/backend_cpu.c). */
void ptq_k_gemm_bias_cpu(const ptq_gemm_params *p, const float *a, const float *b, const float *bias, float *y);
/* The same on the calling thread only (no pool): for callers already on a pool thread. */
void ptq_k_gemm_rows_cpu(const ptq_gemm_params *p, const float *a, const float *b, float *y);
/* A pointwise convolution's epilogue on a GEMM's rows (kernels/cpu/conv.c): each output, after the product, plus
 * row_bias[i] on row i (or NULL), plus z [m, n] (or NULL), then t = v < lo ? lo : v, t > hi ? hi : t. */
typedef struct ptq_gemm_epi {
    const float *row_bias, *z;
    float lo, hi;
} ptq_gemm_epi;
/* ptq_k_gemm_rows_cpu with beta 0 and then e, in its stores where its FMA tiles run (AVX2, AVX-512): the same bits
 * as y prefilled with the row bias and beta 1 there, then the Add and the clamp as passes of their own (every step
 * one IEEE operation); elsewhere the product, then those passes. */
void ptq_k_gemm_rows_epi_cpu(const ptq_gemm_params *p, const float *a, const float *b, const ptq_gemm_epi *e,
                             float *y);
/* Makes OpenBLAS single-threaded (once): ptq's pool does the threading. */
void ptq_k_blas_single_thread(void);

/* n_batch independent GEMMs (MatMul with batch dims): slice i reads a + a_off[i]
 * and b + b_off[i] (element offsets: [n_batch] each; broadcast slices repeat an
 * offset) and writes y + i*m*n. a, b, y as in ptq_k_gemm_*. */
void ptq_k_gemm_batched_ref(const ptq_gemm_params *p, int64_t n_batch, const int64_t *a_off, const int64_t *b_off,
                            const float *a, const float *b, float *y);
void ptq_k_gemm_batched_cpu(const ptq_gemm_params *p, int64_t n_batch, const int64_t *a_off, const int64_t *b_off,
                            const float *a, const float *b, float *y);

/* Broadcasting layout of a binary elementwise op: y has out_dims; element
 * (i0..i{n-1}) reads a at sum(i_d * a_stride[d]) (stride 0 on broadcast dims). */
typedef struct ptq_bcast {
    int ndim;
    int64_t out_dims[8];
    int64_t a_stride[8];
    int64_t b_stride[8];
} ptq_bcast;

typedef enum ptq_binop { PTQ_BIN_ADD, PTQ_BIN_SUB, PTQ_BIN_MUL, PTQ_BIN_DIV } ptq_binop;

/* The offsets into a and b of output element i of bc's layout. */
static inline void ptq_bcast_offsets(const ptq_bcast *bc, int64_t i, int64_t *ia, int64_t *ib)
{
    *ia = 0;
    *ib = 0;
    for (int d = bc->ndim - 1; d >= 0; d--) {
        int64_t idx = i % bc->out_dims[d];
        i /= bc->out_dims[d];
        *ia += idx * bc->a_stride[d];
        *ib += idx * bc->b_stride[d];
    }
}

void ptq_k_binary_ref(ptq_binop op, const ptq_bcast *bc, const float *a, const float *b, float *y);
void ptq_k_binary_cpu(ptq_binop op, const ptq_bcast *bc, const float *a, const float *b, float *y);

typedef enum ptq_unop {
    PTQ_UN_RELU,
    PTQ_UN_LEAKY_RELU,   /* alpha */
    PTQ_UN_CLIP,         /* alpha = min, beta = max */
    PTQ_UN_SIGMOID,
    PTQ_UN_HARD_SIGMOID, /* alpha, beta */
    PTQ_UN_HARD_SWISH,
    PTQ_UN_TANH,
    PTQ_UN_ERF,
    PTQ_UN_GELU,        /* x/2 (1 + erf(x/sqrt 2)), computed as x/2 erfc(-x/sqrt 2) */
    PTQ_UN_GELU_TANH    /* x/2 (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), computed as x / (1 + exp(-2u)) */
} ptq_unop;

/* Gelu's constants: 1/sqrt(2); sqrt(2/pi) and the cubic's coefficient of the tanh form. */
#define PTQ_GELU_SQRT1_2 0.70710678118654752f
#define PTQ_GELU_TANH_K 0.79788456080286536f
#define PTQ_GELU_TANH_C 0.044715f

/* y[i] = f(x[i]) for i < n; x == y allowed. */
void ptq_k_unary_ref(ptq_unop op, float alpha, float beta, int64_t n, const float *x, float *y);
void ptq_k_unary_cpu(ptq_unop op, float alpha, float beta, int64_t n, const float *x, float *y);
/* y = (x * (erf(x / c_div) + c_add)) * c_mul: an exported exact GELU's Div, Erf, Add, Mul and Mul in one pass,
 * each step as those nodes' CPU kernels compute it (Erf: erf_rows, not kernels/ref's erff), so the same bits as
 * the five ops (tests/test_exec_gelu.c); x, y: [n], x == y allowed. */
void ptq_k_erf_gelu_cpu(int64_t n, float c_div, float c_add, float c_mul, const float *x, float *y);

/* Inference BatchNormalization. x, y: [n, c, spatial]; per-channel vectors [c]. */
void ptq_k_batchnorm_ref(int64_t n, int64_t c, int64_t spatial, const float *x, const float *scale,
                         const float *bias, const float *mean, const float *var, float eps, float *y);
void ptq_k_batchnorm_cpu(int64_t n, int64_t c, int64_t spatial, const float *x, const float *scale,
                         const float *bias, const float *mean, const float *var, float eps, float *y);

/* InstanceNormalization: y = scale * (x - mean) / sqrt(var + eps) + bias, mean and (biased) var of each sample's
 * channel over its spatial elements, in double; the reference is the CPU path, the CUDA backend hands it to the CPU.
 * x, y: [n, c, spatial]; scale, bias: [c]. */
void ptq_k_instancenorm_ref(int64_t n, int64_t c, int64_t spatial, const float *x, const float *scale,
                            const float *bias, float eps, float *y);
/* GroupNormalization of x [n, groups * per_group, spatial]: each sample's group of per_group channels normalised by
 * its mean and variance (in double), then scale and bias: [groups * per_group] per channel (opset 21) or [groups] per
 * group (opset 18); y: like x. */
void ptq_k_groupnorm_ref(int64_t n, int64_t groups, int64_t per_group, int64_t spatial, int per_channel,
                         const float *x, const float *scale, const float *bias, float eps, float *y);
#define PTQ_K_NORM_MAX_DIMS 8 /* ptq/tensor.h's PTQ_MAX_DIMS */
/* MeanVarianceNormalization of x [dims] (ndim <= PTQ_K_NORM_MAX_DIMS) over the axes whose bit is set in axes:
 * y = (x - mean) / (sqrt(var) + 1e-9), mean and (biased) variance in double, as ONNX's function body defines it
 * (onnxruntime's kernel adds no 1e-9: a constant slice is NaN there, 0 here); y: like x. */
void ptq_k_mvn_ref(int ndim, const int64_t *dims, unsigned axes, const float *x, float *y);
/* LpNormalization of x [outer, len, inner] along the middle axis: y = x / (sum |x|) for p 1, x / sqrt(sum x^2) for p
 * 2, the sum in double; a norm of 0 gives 0s, as onnxruntime gives (ONNX's x / 0 would be NaN); y: like x. */
void ptq_k_lpnorm_ref(int64_t outer, int64_t len, int64_t inner, int p, const float *x, float *y);
/* Hardmax of x [outer, len, inner] along the middle axis: 1 at the first largest value, 0 elsewhere, a NaN counting as
 * the largest (the first NaN wins), as ptq_k_argmax_ref orders them; y: like x. */
void ptq_k_hardmax_ref(int64_t outer, int64_t len, int64_t inner, const float *x, float *y);
/* IsNaN and IsInf of x [n] (float32, or float64 where dbl): y [n] bool (1 or 0); IsInf counts +Inf where positive,
 * -Inf where negative. */
void ptq_k_isnan_ref(int64_t n, int dbl, const void *x, uint8_t *y);
void ptq_k_isinf_ref(int64_t n, int dbl, int positive, int negative, const void *x, uint8_t *y);
/* BitShift: y = a << b (left) or a >> b of one unsigned type of bytes 1, 2, 4 or 8, a and b laid out as bc says; a
 * shift of the type's width or more gives 0 (numpy's rule, ONNX's reference). */
void ptq_k_bitshift_ref(int bytes, int left, const ptq_bcast *bc, const void *a, const void *b, void *y);

/* Softmax over the middle dim of x viewed as [outer, len, inner]. */
void ptq_k_softmax_ref(int64_t outer, int64_t len, int64_t inner, const float *x, float *y);
void ptq_k_softmax_cpu(int64_t outer, int64_t len, int64_t inner, const float *x, float *y);
/* LogSoftmax over the middle dim of x viewed as [outer, len, inner]: (x - max) - log(sum(exp(x - max))), the sum in
 * double; the reference is the CPU path, the CUDA backend hands it to the CPU. */
void ptq_k_log_softmax_ref(int64_t outer, int64_t len, int64_t inner, const float *x, float *y);
/* onnxruntime's QLinearSoftmax on uint8 codes (an int8 tensor's codes + 128, its zero point + 128: the kernel
 * reads only differences of codes, and its int8 clamp at 127 is the uint8 one at 255): along len, with d = the
 * line's largest code - x, e = table[d], y = min(round_half_even(e * floor(1 / y_scale) / sum(e)) + y_zp, 255),
 * the product and quotient in double, sum(e) in float in order. table [256]: entry d is
 * (float)exp(((255 - d) - 255 + bias) * x_scale) in double, bias = max(0, logf(FLT_MAX / len) - 5) / x_scale,
 * what the kernel builds for that input scale and reduced length. x, y: [outer, len, inner]. */
void ptq_k_qlinear_softmax_table_ref(float x_scale, int64_t len, float *table);
void ptq_k_qlinear_softmax_ref(int64_t outer, int64_t len, int64_t inner, const uint8_t *x, float x_scale,
                               float y_scale, int32_t y_zp, uint8_t *y);

/* y = transpose(x, perm) for elements of elem_bytes bytes; x has in_dims. */
void ptq_k_transpose_ref(size_t elem_bytes, int ndim, const int64_t *in_dims, const int64_t *perm, const void *x,
                         void *y);
void ptq_k_transpose_cpu(size_t elem_bytes, int ndim, const int64_t *in_dims, const int64_t *perm, const void *x,
                         void *y);
/* y = x, n_bytes (not overlapping), in pieces over the CPU pool. */
void ptq_k_copy_cpu(size_t n_bytes, const void *x, void *y);

/* Pad modes, as ONNX Pad's mode attribute. */
typedef enum ptq_pad_mode { PTQ_PAD_CONSTANT, PTQ_PAD_EDGE, PTQ_PAD_REFLECT } ptq_pad_mode;
/* y = x padded by pads [2 * ndim] (all the begins, then all the ends, each
 * >= 0) with elements of elem_bytes bytes; value: one element, the constant. */
void ptq_k_pad_ref(ptq_pad_mode mode, size_t elem_bytes, int ndim, const int64_t *in_dims, const int64_t *pads,
                   const void *value, const void *x, void *y);

/* ONNX Resize (and Upsample): how an output coordinate maps back into the input (coordinate_transformation_mode;
 * OPSET10 is Resize 10's and Upsample's x / scale), how nearest rounds it (nearest_mode; SIMPLE is onnxruntime's
 * rule before opset 11: ceil where the axis shrinks, else floor), and the interpolation. */
typedef enum ptq_resize_mode { PTQ_RESIZE_NEAREST, PTQ_RESIZE_LINEAR, PTQ_RESIZE_CUBIC } ptq_resize_mode;
typedef enum ptq_resize_coord {
    PTQ_RESIZE_HALF_PIXEL,
    PTQ_RESIZE_HALF_PIXEL_SYMMETRIC,
    PTQ_RESIZE_PYTORCH_HALF_PIXEL,
    PTQ_RESIZE_ALIGN_CORNERS,
    PTQ_RESIZE_ASYMMETRIC,
    PTQ_RESIZE_TF_HALF_PIXEL_FOR_NN,
    PTQ_RESIZE_TF_CROP_AND_RESIZE
} ptq_resize_coord;
typedef enum ptq_resize_round {
    PTQ_RESIZE_ROUND_PREFER_FLOOR,
    PTQ_RESIZE_ROUND_PREFER_CEIL,
    PTQ_RESIZE_FLOOR,
    PTQ_RESIZE_CEIL,
    PTQ_RESIZE_SIMPLE
} ptq_resize_round;
#define PTQ_K_RESIZE_MAX_DIMS 8 /* ptq/tensor.h's PTQ_MAX_DIMS */
typedef struct ptq_resize_params {
    int ndim;
    int64_t in_dims[PTQ_K_RESIZE_MAX_DIMS], out_dims[PTQ_K_RESIZE_MAX_DIMS]; /* out_dims > 0 needs in_dims > 0 */
    float scales[PTQ_K_RESIZE_MAX_DIMS]; /* > 0: given, or out / in from sizes */
    float roi_start[PTQ_K_RESIZE_MAX_DIMS], roi_end[PTQ_K_RESIZE_MAX_DIMS]; /* TF_CROP_AND_RESIZE: axis fractions */
    ptq_resize_mode mode;
    ptq_resize_coord coord;
    ptq_resize_round round;
    float cubic_a;        /* cubic_coeff_a */
    int exclude_outside;  /* cubic: taps outside the input get weight 0, the rest renormalized */
    float extrapolation;  /* TF_CROP_AND_RESIZE: the value where the coordinate falls outside the input */
} ptq_resize_params;
/* y [p->out_dims] = x [p->in_dims] resized on every axis, separably (each output element a weighted sum of the
 * tensor product of each axis's taps: 1 nearest, 2 linear, 4 cubic), coordinates in float as onnxruntime's. */
void ptq_k_resize_ref(const ptq_resize_params *p, const float *x, float *y);

/* y = sqrt(x) elementwise (NaN below 0); x, y: [n], x == y allowed. */
void ptq_k_sqrt_ref(int64_t n, const float *x, float *y);
/* Elementwise float32 functions torch exports beside the activations of ptq_unop, as ONNX defines them (NaN passed
 * through); the reference is their CPU path, the CUDA backend hands them to the CPU. */
typedef enum ptq_fn {
    PTQ_FN_EXP,
    PTQ_FN_FLOOR,
    PTQ_FN_CEIL,
    PTQ_FN_ROUND,    /* half to even */
    PTQ_FN_SIN,
    PTQ_FN_COS,
    PTQ_FN_SOFTPLUS, /* log(1 + exp(x)), in a form that does not overflow */
    PTQ_FN_SOFTSIGN, /* x / (1 + |x|) */
    PTQ_FN_ELU,      /* alpha (exp(x) - 1) for x < 0, else x */
    PTQ_FN_SELU,     /* gamma (alpha exp(x) - alpha) for x <= 0, else gamma x */
    PTQ_FN_CELU,     /* max(0, x) + min(0, alpha (exp(x / alpha) - 1)); alpha != 0 */
    PTQ_FN_MISH,     /* x tanh(softplus(x)) */
    PTQ_FN_LOG,      /* natural log: -Inf at 0, NaN below */
    PTQ_FN_RECIPROCAL, /* 1 / x: +-Inf at +-0 */
    PTQ_FN_TAN,
    PTQ_FN_ASIN,       /* NaN outside [-1, 1], as acos and atanh */
    PTQ_FN_ACOS,
    PTQ_FN_ATAN,
    PTQ_FN_SINH,
    PTQ_FN_COSH,
    PTQ_FN_ASINH,
    PTQ_FN_ACOSH,      /* NaN below 1 */
    PTQ_FN_ATANH,      /* +-Inf at +-1 */
    PTQ_FN_SIGN,       /* -1, 0 or 1; NaN stays NaN */
    PTQ_FN_THRESHOLDED_RELU, /* x for x > alpha, else 0 */
    PTQ_FN_SHRINK      /* x + gamma for x < -alpha, x - gamma for x > alpha, else 0 (alpha lambd, gamma bias) */
} ptq_fn;

/* y[i] = f(x[i]) for i < n with f's parameters alpha, gamma (ptq_fn's); x, y: [n], x == y allowed. */
void ptq_k_fn_ref(ptq_fn op, float alpha, float gamma, int64_t n, const float *x, float *y);
/* PRelu: y = x < 0 ? slope x : x, slope broadcast to x (bc from ptq_op_bcast(x, slope), its output x's shape). */
void ptq_k_prelu_ref(const ptq_bcast *bc, const float *x, const float *slope, float *y);
/* One input of Max or Min into y: y = b (TAKE, the first input), max(y, b), min(y, b), b broadcast to y
 * (bc from ptq_op_bcast(y, b), its output y's shape); float32 NaN from either side, and where y and b compare equal
 * b, as onnxruntime. The reference is the CPU path. */
typedef enum ptq_minmax { PTQ_MINMAX_TAKE, PTQ_MINMAX_MAX, PTQ_MINMAX_MIN } ptq_minmax;
typedef enum ptq_minmax_elem { PTQ_MINMAX_F32, PTQ_MINMAX_I32, PTQ_MINMAX_I64 } ptq_minmax_elem;
void ptq_k_minmax_ref(ptq_minmax op, ptq_minmax_elem elem, const ptq_bcast *bc, const void *b, void *y);
/* y = pow(a, b) with numpy broadcasting (bc as for ptq_k_binary_ref). */
void ptq_k_pow_ref(const ptq_bcast *bc, const float *a, const float *b, float *y);
/* y = pow(a, b) for an integer exponent b (int64 when b_int64, else int32), with numpy broadcasting, as
 * onnxruntime's CPU Pow computes it: where b is one value along the output's innermost axis of more than one
 * element (and a is not), an exponent of 2 or 3 is x * x (* x) in float32; everywhere else pow in double, rounded
 * to float32. */
void ptq_k_pow_int_ref(const ptq_bcast *bc, const float *a, const void *b, int b_int64, float *y);

/* Mean over the axes with reduced[d] != 0 of x [dims[0..ndim-1]] (summed in
 * double); y holds the kept axes in order ([prod of kept dims]). */
void ptq_k_reduce_mean_ref(int ndim, const int64_t *dims, const unsigned char *reduced, const float *x, float *y);
/* Element types of the kernels that take more than float32. */
typedef enum ptq_k_elem { PTQ_K_F32, PTQ_K_F64, PTQ_K_I64, PTQ_K_I32 } ptq_k_elem;
/* What ptq_k_reduce_ref computes over the reduced axes. */
typedef enum ptq_k_reduce {
    PTQ_K_RED_MEAN,
    PTQ_K_RED_SUM,
    PTQ_K_RED_MAX,        /* NaN where a float NaN is among the elements */
    PTQ_K_RED_MIN,        /* likewise */
    PTQ_K_RED_PROD,
    PTQ_K_RED_L1,         /* sum |x| */
    PTQ_K_RED_L2,         /* sqrt(sum x^2), floats only */
    PTQ_K_RED_SUM_SQUARE, /* sum x^2 */
    PTQ_K_RED_LOG_SUM,    /* log(sum x), floats only */
    PTQ_K_RED_LOG_SUM_EXP /* log(sum exp x) as max + log(sum exp(x - max)), floats only */
} ptq_k_reduce;
/* op over the axes with reduced[d] != 0 of x [dims[0..ndim-1]] of type et into y (the kept axes in order, et): floats
 * in double, integers wrapping as two's complement; over an empty set ONNX's values: 0, Prod 1, Max -Inf or the
 * type's least value, Min +Inf or its greatest, LogSum and LogSumExp -Inf (Mean NaN). */
void ptq_k_reduce_ref(ptq_k_reduce op, int ndim, const int64_t *dims, const unsigned char *reduced, ptq_k_elem et,
                      const void *x, void *y);
/* ArgMax of x [outer, len, inner] of type et along the middle axis (len >= 1) into y [outer, inner]: the first index
 * of the largest value (the last with last != 0); a float NaN counts as the largest, as numpy's argmax. */
void ptq_k_argmax_ref(int64_t outer, int64_t len, int64_t inner, ptq_k_elem et, int last, const void *x, int64_t *y);
/* ArgMin likewise: the first (last) index of the least value, a float NaN counting as the least, as numpy's argmin. */
void ptq_k_argmin_ref(int64_t outer, int64_t len, int64_t inner, ptq_k_elem et, int last, const void *x, int64_t *y);
/* LRN of x [n, c, inner] across channels: y = x / (bias + alpha / size * sum of x^2 over channels
 * [ch - floor((size - 1) / 2), ch + ceil((size - 1) / 2)] within [0, c))^beta, the sum in double; y: [n, c, inner]. */
void ptq_k_lrn_ref(int64_t n, int64_t c, int64_t inner, int64_t size, float alpha, float beta, float bias,
                   const float *x, float *y);
/* CumSum of x [outer, len, inner] of type et along the middle axis, in its order (from the
 * end with reverse), each y the sum before (exclusive) or up to it; floats summed in their type in order as onnxruntime
 * does, integers wrapping. */
void ptq_k_cumsum_ref(int64_t outer, int64_t len, int64_t inner, ptq_k_elem et, int exclusive, int reverse,
                      const void *x, void *y);
/* LayerNormalization of x viewed as [n_rows, n_cols] over each row (mean and
 * variance in double): y = (x - mean) / sqrt(var + eps) * scale + bias;
 * scale, bias: [n_cols] (bias NULL: 0); mean, inv_std: [n_rows] or NULL. */
void ptq_k_layernorm_ref(int64_t n_rows, int64_t n_cols, const float *x, const float *scale, const float *bias,
                         float eps, float *y, float *mean, float *inv_std);
void ptq_k_layernorm_cpu(int64_t n_rows, int64_t n_cols, const float *x, const float *scale, const float *bias,
                         float eps, float *y, float *mean, float *inv_std);

/* Gather along the middle dim of x viewed as [outer, len, inner] elements of
 * elem_bytes: y [outer, n_idx, inner], y[o, j, :] = x[o, idx[j], :]; every
 * idx in 0..len-1 (the caller resolves negative ones). */
void ptq_k_gather_ref(size_t elem_bytes, int64_t outer, int64_t len, int64_t inner, int64_t n_idx,
                      const int64_t *idx, const void *x, void *y);
/* y[i0..] = x[start[d] + i_d * step[d]] for elements of elem_bytes; x has
 * in_dims, y out_dims (both [ndim]); steps may be negative. */
void ptq_k_slice_ref(size_t elem_bytes, int ndim, const int64_t *in_dims, const int64_t *out_dims,
                     const int64_t *start, const int64_t *step, const void *x, void *y);

/* Element kinds ptq_k_cast_ref converts between (ONNX Cast). */
typedef enum ptq_cast_kind {
    PTQ_CAST_F32, PTQ_CAST_F64, PTQ_CAST_I8, PTQ_CAST_U8, PTQ_CAST_I16, PTQ_CAST_U16, PTQ_CAST_I32, PTQ_CAST_U32,
    PTQ_CAST_I64, PTQ_CAST_U64, PTQ_CAST_BOOL, PTQ_CAST_F16, PTQ_CAST_BF16
} ptq_cast_kind;
/* y[i] = x[i] converted, for i < n: float to integer truncates toward zero
 * and saturates at the type's limits (NaN gives 0), integers wrap as C's
 * unsigned conversion does (two's complement), anything nonzero is true,
 * float64 to float32 rounds to nearest even. float16 and bfloat16 (Cast
 * only: ptq_op_cast_kind gives neither) convert exactly to wider floats,
 * and from them through float32 (numfmt.h's round to nearest even, past
 * the largest finite to Inf): once from float32, twice from float64 and
 * int64s beyond 2^24. */
void ptq_k_cast_ref(ptq_cast_kind from, ptq_cast_kind to, int64_t n, const void *x, void *y);

/* y [bc->out_dims] = a broadcast (Expand), elements of elem_bytes; a laid
 * out as bc->a_stride says (b_stride unused). */
void ptq_k_expand_ref(size_t elem_bytes, const ptq_bcast *bc, const void *a, void *y);
/* out[i] = cond[i] ? x[i] : y[i] (Where) over out_dims [ndim], elements of
 * elem_bytes; cond (bool bytes), x and y read at their strides [ndim] (0 on
 * broadcast dims). */
void ptq_k_where_ref(size_t elem_bytes, int ndim, const int64_t *out_dims, const int64_t *c_stride,
                     const int64_t *x_stride, const int64_t *y_stride, const uint8_t *cond, const void *x,
                     const void *y, void *out);
/* y[i] = a op b (Equal, Greater, Less, GreaterOrEqual, LessOrEqual) as bool bytes, a and b of one numeric kind,
 * laid out as bc says; floats compare as numbers (-0 == 0, NaN unequal to and neither greater nor less than
 * anything), integers as their signed or unsigned values. */
typedef enum ptq_compare { PTQ_CMP_EQ, PTQ_CMP_GT, PTQ_CMP_LT, PTQ_CMP_GE, PTQ_CMP_LE } ptq_compare;
void ptq_k_compare_ref(ptq_compare op, ptq_cast_kind kind, const ptq_bcast *bc, const void *a, const void *b,
                       uint8_t *y);
/* Trilu of x [n_mat, rows, cols] (elements of elem_bytes) into y: element (i, j) of each matrix kept where
 * j - i >= k (upper) or j - i <= k (lower), zero bytes elsewhere; x == y allowed. */
void ptq_k_trilu_ref(size_t elem_bytes, int64_t n_mat, int64_t rows, int64_t cols, int64_t k, int upper,
                     const void *x, void *y);
/* DepthToSpace of x [n, c_out * block^2, h, w] into y [n, c_out, h * block, w * block] (elements of elem_bytes):
 * output (c, h * block + i, w * block + j) from channel (i * block + j) * c_out + c (DCR) or c * block^2 +
 * i * block + j (crd). */
void ptq_k_depth_to_space_ref(size_t elem_bytes, int64_t n, int64_t c_out, int64_t h, int64_t w, int64_t block,
                              int crd, const void *x, void *y);
/* SpaceToDepth of x [n, c_in, h_out * block, w_out * block] into y [n, c_in * block^2, h_out, w_out], DepthToSpace
 * DCR's inverse. */
void ptq_k_space_to_depth_ref(size_t elem_bytes, int64_t n, int64_t c_in, int64_t h_out, int64_t w_out,
                              int64_t block, const void *x, void *y);
/* Tile: y [out_dims] (each a multiple of in_dims' entry, in_dims all >= 1 where out_dims is not 0) repeats x
 * [in_dims] along every axis. */
void ptq_k_tile_ref(size_t elem_bytes, int ndim, const int64_t *in_dims, const int64_t *out_dims, const void *x,
                    void *y);
/* GlobalMaxPool: y[r] = the largest of row r of x [n_rows, n_cols], n_cols >= 1. */
void ptq_k_global_maxpool_ref(int64_t n_rows, int64_t n_cols, const float *x, float *y);
/* One input of Sum/Mean into y [bc's out_dims]: y = b (first) or y + b, b laid out as bc's b_stride says; then
 * y /= divisor unless divisor is 0 (Mean's last input). */
void ptq_k_sum_ref(int first, float divisor, const ptq_bcast *bc, const float *b, float *y);
/* y[i] = -x[i] (Neg) for i < n, x and y of one signed kind (float32, float64, int8, int16, int32, int64):
 * integers wrap (-INT_MIN is INT_MIN, as onnxruntime computes it); x == y allowed. */
void ptq_k_neg_ref(ptq_cast_kind kind, int64_t n, const void *x, void *y);
/* y[i] = |x[i]| (Abs) for i < n, x and y of one numeric kind (float32, float64, int8..int64, uint8..uint64):
 * -0 gives 0, NaN stays NaN, signed integers wrap (|INT_MIN| is INT_MIN, as onnxruntime), unsigned ones are
 * copied; x == y allowed. */
void ptq_k_abs_ref(ptq_cast_kind kind, int64_t n, const void *x, void *y);
/* y = a mod b (Mod) of one numeric kind, laid out as bc says: fmod_sign 0
 * takes the divisor's sign (integers only), 1 the dividend's (C's % and
 * fmod). Returns -1, or the first output element whose integer divisor is 0
 * (left 0). */
int64_t ptq_k_mod_ref(ptq_cast_kind kind, int fmod_sign, const ptq_bcast *bc, const void *a, const void *b, void *y);
/* y [n] = start + i * delta (Range) for one scalar kind (float32, float64 or
 * an integer); start and delta point at one element each. */
void ptq_k_range_ref(ptq_cast_kind kind, int64_t n, const void *start, const void *delta, void *y);
/* y[i] = !x[i] (Not) as bool bytes (0 or 1; any nonzero byte of x is true). */
void ptq_k_not_ref(int64_t n, const uint8_t *x, uint8_t *y);
/* y[i] = a op b (And, Or, Xor) as bool bytes (0 or 1; any nonzero byte is true), a and b laid out as bc says. */
typedef enum ptq_logic { PTQ_LOGIC_AND, PTQ_LOGIC_OR, PTQ_LOGIC_XOR } ptq_logic;
void ptq_k_logic_ref(ptq_logic op, const ptq_bcast *bc, const uint8_t *a, const uint8_t *b, uint8_t *y);
/* ScatterND's reduction attribute. */
typedef enum ptq_scatter_reduction {
    PTQ_SCATTER_NONE, PTQ_SCATTER_ADD, PTQ_SCATTER_MUL, PTQ_SCATTER_MAX, PTQ_SCATTER_MIN
} ptq_scatter_reduction;
/* ScatterND on y, which holds a copy of data: for j = 0 .. n_slices - 1 in
 * that order, the n_slice elements at y + offset[j] (in elements; the caller
 * checked offset[j] + n_slice <= y's length) take u[j * n_slice ..] (NONE:
 * byte copies of elem_bytes, so a later index tuple overwrites an earlier
 * equal one, as onnxruntime does), or combine with them in kind's own
 * arithmetic (ADD, MUL: integers wrap, bool is or / and; MAX, MIN keep y's
 * element only where it is strictly greater / less than the update, so a NaN
 * update is taken and a NaN in y replaced, as onnxruntime does). */
void ptq_k_scatter_nd_ref(ptq_cast_kind kind, ptq_scatter_reduction red, size_t elem_bytes, int64_t n_slices,
                          int64_t n_slice, const int64_t *offset, const void *u, void *y);

/* TopK of x [outer, len, inner] of type et along the middle axis: values [outer, k, inner] and indices (int64, the
 * same shape) of the k largest (smallest unless largest) in order, equal values by lower index first as ONNX says, a
 * float NaN counting as larger than any number; scratch: [2 * len]. */
void ptq_k_topk_ref(ptq_k_elem et, int64_t outer, int64_t len, int64_t inner, int64_t k, int largest, const void *x,
                    void *values, int64_t *indices, int64_t *scratch);

/* GatherElements and GatherND: y [n, n_slice] elements of elem_bytes, y[j, :] = the n_slice elements of x at
 * offset[j] (in elements; the caller checked each slice lies within x). */
void ptq_k_gather_at_ref(size_t elem_bytes, int64_t n, int64_t n_slice, const int64_t *offset, const void *x, void *y);

/* OneHot: y [outer, depth, inner] elements of elem_bytes, y[o, d, i] = on where idx[o * inner + i] == d, else off
 * (idx -1 where an index is out of range: all off). */
void ptq_k_onehot_ref(size_t elem_bytes, int64_t outer, int64_t depth, int64_t inner, const int64_t *idx,
                      const void *off, const void *on, void *y);

/* EyeLike: y [rows, cols] elements of elem_bytes, `one` on the diagonal k places right of the main one (left for
 * k < 0), zero bytes elsewhere. */
void ptq_k_eye_ref(size_t elem_bytes, int64_t rows, int64_t cols, int64_t k, const void *one, void *y);

/* ReverseSequence: x and y [n_time, n_batch, inner] (time_first) or [n_batch, n_time, inner], elements of
 * elem_bytes; for each batch b the first lens[b] (0 .. n_time, checked by the caller) time steps reversed, the rest
 * copied. */
void ptq_k_reverse_sequence_ref(size_t elem_bytes, int time_first, int64_t n_time, int64_t n_batch, int64_t inner,
                                const int64_t *lens, const void *x, void *y);

/* Observer passes (observers/observer.c; parity: tests/parity_observe.c).
 * Both give the same result whatever the split of x into pieces: min/max
 * order -0 below +0, so they are associative and commutative bit for bit. */
typedef struct ptq_observe_stats {
    int64_t count;                /* elements */
    int64_t n_zero, n_nan, n_inf; /* +0/-0, NaN, +/-Inf */
    float min, max;               /* over finite values; +INFINITY / -INFINITY when there is none */
} ptq_observe_stats;

/* The stats of no elements. */
void ptq_observe_stats_clear(ptq_observe_stats *s);
/* dst = the stats of dst's elements and src's together. */
void ptq_observe_stats_combine(ptq_observe_stats *dst, const ptq_observe_stats *src);

/* x: [n] -> *s (overwritten). */
void ptq_k_observe_stats_ref(const float *x, int64_t n, ptq_observe_stats *s);
void ptq_k_observe_stats_cpu(const float *x, int64_t n, ptq_observe_stats *s);
/* x: [n]; hist: [n_bins], added into: each finite nonzero v adds 1 to bin
 * floor(|v| * scale), computed exactly. scale: a power of two, a double
 * because tiny ranges need one beyond float (up to 2^172); the caller
 * guarantees |v| * scale < n_bins for every finite v. */
void ptq_k_observe_hist_ref(const float *x, int64_t n, double scale, int64_t n_bins, int64_t *hist);
void ptq_k_observe_hist_cpu(const float *x, int64_t n, double scale, int64_t n_bins, int64_t *hist);
/* The same, counting only the finite v with |v| >= lo (lo > 0): the values
 * a fused pass left out when the range had to grow. */
void ptq_k_observe_hist_from_ref(const float *x, int64_t n, double scale, float lo, int64_t n_bins, int64_t *hist);
void ptq_k_observe_hist_from_cpu(const float *x, int64_t n, double scale, float lo, int64_t n_bins, int64_t *hist);
/* Both passes in one read of x: *s = x's stats (overwritten) and, into hist,
 * the finite nonzero v with |v| < limit at bin floor(|v| * scale), where
 * limit is the histogram's range 2^e (+Inf for e = 128) and limit * scale =
 * n_bins; *n_over = the finite v with |v| >= limit, left out. */
void ptq_k_observe_fused_ref(const float *x, int64_t n, double scale, float limit, int64_t n_bins, int64_t *hist,
                             ptq_observe_stats *s, int64_t *n_over);
void ptq_k_observe_fused_cpu(const float *x, int64_t n, double scale, float limit, int64_t n_bins, int64_t *hist,
                             ptq_observe_stats *s, int64_t *n_over);

/* FP8 codes (kernels/ref/fp8.c; REFERENCE.md "FP8 encodings"). from_*: round
 * to nearest even, saturating to +-max (Inf too), NaN -> 0x7F, |x| <= half the
 * smallest subnormal -> +-0: CUDA's __nv_cvt_float_to_fp8(x, __NV_SATFINITE, ..).
 * The double forms round once from the double (the calibrators use them).
 * to_*: exact decoding (E4M3 0x7F/0xFF NaN; E5M2 0x7C Inf, 0x7D-0x7F NaN). */
uint8_t ptq_k_fp8_e4m3_from_float_ref(float x);
uint8_t ptq_k_fp8_e5m2_from_float_ref(float x);
uint8_t ptq_k_fp8_e4m3_from_double_ref(double x);
uint8_t ptq_k_fp8_e5m2_from_double_ref(double x);
float ptq_k_fp8_e4m3_to_float_ref(uint8_t code);
float ptq_k_fp8_e5m2_to_float_ref(uint8_t code);

/* ONNX QuantizeLinear / DequantizeLinear (kernels/ref/qdq.c, the CPU path too; the CUDA backend hands them to the
 * CPU): the element kind of the quantized side, and x viewed as [outer, len, inner] around the op's axis, where
 * element (o, l, i) takes the scale and zero point at o * s_outer + (l / block) * s_len + i * s_inner: every stride
 * 0 per tensor, s_len 1 per axis, [outer, ceil(len / block), inner] blocked (opset 21). */
typedef enum ptq_qdq_kind {
    PTQ_QDQ_INT8,
    PTQ_QDQ_UINT8,
    PTQ_QDQ_INT16,
    PTQ_QDQ_UINT16,
    PTQ_QDQ_INT32, /* DequantizeLinear only */
    PTQ_QDQ_E4M3FN,
    PTQ_QDQ_E5M2
} ptq_qdq_kind;
typedef struct ptq_qdq_view {
    int64_t outer, len, inner;
    int64_t block;                   /* axis elements per scale, >= 1 */
    int64_t s_outer, s_len, s_inner; /* strides into the scale and zero point, in elements */
} ptq_qdq_view;
/* y = saturate(round_half_even(x / scale) + zp) for the integer kinds (NaN -> the lowest code, as onnxruntime);
 * FP8: the code of x / scale + zp, rounded to nearest even by ptq_k_fp8_*_from_float_ref, beyond the largest
 * finite value its +-max when saturate, else NaN (E4M3FN) or +-Inf (E5M2). x, y: [outer * len * inner]; zp of
 * kind (NULL: 0); y of kind. */
void ptq_k_quantize_linear_ref(ptq_qdq_kind kind, int saturate, const ptq_qdq_view *v, const float *x,
                               const float *scale, const void *zp, void *y);
/* y = (x - zp) * scale in float (the integer difference exact, in int64; FP8 decoded). */
void ptq_k_dequantize_linear_ref(ptq_qdq_kind kind, const ptq_qdq_view *v, const void *x, const float *scale,
                                 const void *zp, float *y);

/* Recurrent layers (ONNX RNN, GRU, LSTM; kernels/ref/rnn.c, the CPU path too; the CUDA backend hands them to the
 * CPU). Gates, in W's and R's rows: RNN i; GRU z, r, h; LSTM i, o, f, c (P's i, o, f). */
typedef enum ptq_rnn_cell { PTQ_RNN_CELL_RNN, PTQ_RNN_CELL_GRU, PTQ_RNN_CELL_LSTM } ptq_rnn_cell;
typedef enum ptq_rnn_act { PTQ_RNN_ACT_SIGMOID, PTQ_RNN_ACT_TANH, PTQ_RNN_ACT_RELU } ptq_rnn_act;
typedef struct ptq_rnn_params {
    ptq_rnn_cell cell;
    int64_t seq, batch, input, hidden;
    int n_dir;               /* 1 or 2 (bidirectional: direction 0 forward, 1 reverse) */
    int reverse;             /* n_dir 1: the one direction runs from the sequence's end */
    int layout;              /* 0: X [seq, batch, input], Y [seq, n_dir, batch, hidden], states [n_dir, batch,
                                hidden]; 1: X [batch, seq, input], Y [batch, seq, n_dir, hidden], states [batch,
                                n_dir, hidden] */
    int linear_before_reset; /* GRU: r multiplies (R_h H + Rb_h), not H */
    int input_forget;        /* LSTM: f = 1 - i */
    float clip;              /* > 0: every gate's input clamped to [-clip, clip]; 0: none */
    ptq_rnn_act act[2][3];   /* per direction: f (, g (, h)) */
} ptq_rnn_params;
/* Gates per cell (1, 3, 4); the work ptq_k_rnn_ref needs, in floats: (gates + 3) * hidden. */
int ptq_rnn_gates(ptq_rnn_cell cell);
/* x (layout), w [n_dir, gates*hidden, input], r [n_dir, gates*hidden, hidden], b [n_dir, 2*gates*hidden] (W's
 * biases then R's) or NULL, lens [batch] (each in 0..seq) or NULL for seq, h0 and c0 (LSTM) states (layout) or
 * NULL for zeros, peep [n_dir, 3*hidden] or NULL; y (zero past each length), y_h and y_c (the state at the last
 * step each direction takes; 0 at length 0, as onnxruntime) each may be NULL. */
void ptq_k_rnn_ref(const ptq_rnn_params *p, const float *x, const float *w, const float *r, const float *b,
                   const int32_t *lens, const float *h0, const float *c0, const float *peep, float *y, float *y_h,
                   float *y_c, float *work);

/* Einsum (kernels/ref/einsum.c, the CPU path too; the CUDA backend hands it to the CPU): every label (a letter, or
 * one of the ellipsis's dims) has a size; the output's labels come first, then the summed ones. Input i's element
 * at a choice of every label's index is at sum(index[l] * stride[i][l]): 0 for a label input i lacks or
 * broadcasts, the sum of its axes' strides for a label it repeats (a diagonal). */
#define PTQ_EINSUM_MAX_INPUTS 8
#define PTQ_EINSUM_MAX_LABELS (52 + 8)
typedef struct ptq_einsum_params {
    int n_in, n_labels, n_out;             /* n_out: the output's rank, its labels 0..n_out-1 in order */
    int64_t size[PTQ_EINSUM_MAX_LABELS];   /* [n_labels] */
    int64_t stride[PTQ_EINSUM_MAX_INPUTS][PTQ_EINSUM_MAX_LABELS]; /* [n_in][n_labels], in elements */
} ptq_einsum_params;
/* y [size[0..n_out)] = the sum over the summed labels of the product of the inputs (each of kind: float32 and
 * float64 multiplied and summed in double, int32 and int64 in wrapping 64-bit integers). */
void ptq_k_einsum_ref(const ptq_einsum_params *p, ptq_cast_kind kind, const void *const *in, void *y);

#ifdef __cplusplus
}
#endif

#endif
