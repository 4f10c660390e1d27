/* Convolution through cuDNN 9's legacy API, opened with dlopen when a GPU
 * device is created (CPU runs never load it): PTQ_CUDNN_DIR, the loader's
 * path, the folder the build found it in, then the usual CUDA homes and
 * pip's nvidia-cudnn wheel. Each conv shape gets a plan once (descriptors,
 * the chunk of images, the algorithm): the chunk is a fixed number of
 * images per layer (the last one zero-padded in scratch), and the algorithm
 * is the first of cudnnGetConvolutionForwardAlgorithm_v7's heuristic list
 * (no timing) that is deterministic, uses the math --math asks for (FP32
 * FMA by default, TF32 tensor cores) and is GEMM-like (no FFT), so an
 * image's output is the same bits whatever batch it came in, and in every
 * run. A bias is added in the convolution's epilogue when the algorithm is
 * IMPLICIT_PRECOMP_GEMM (cudnnConvolutionBiasActivationForward), else by
 * cudnnAddTensor after it. That is the reference configuration; tune() may
 * then give the plan a faster one (another algorithm of the list, up to 256
 * images a call) that it measured, on a random probe, to give the
 * reference's bits in every form of call it is used for: whole chunks of it
 * run first, the rest as the reference (PTQ_CUDNN_TUNE=0: the reference alone).
 * Under TF32, position_guard() then leaves empty the last positions of each
 * call where the reference gives an image other bits than elsewhere in the
 * call, so an image's bits never depend on where its batch put it.
 * Shapes cuDNN declines go to conv.cu's im2col + cuBLAS path, as does
 * everything when cuDNN is missing (d->dnn.note says why). Covered by
 * tests/cuda_cudnn_conv.c (tuned against PTQ_CUDNN_TUNE=0 bit for bit) and
 * tests/cuda_parity_kernels.c; bench/cudnn_tune_identity.py and
 * bench/cudnn_survey.c show the tuning on ResNet-50. */
#include <dlfcn.h>
#include <glob.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/probe.cuh"

#ifndef PTQ_CUDNN

void ptq_cudnn_open(ptq_cuda_dev *d)
{
    d->dnn.enabled = 0;
    snprintf(d->dnn.note, sizeof d->dnn.note,
             "ptq was built without cuDNN's headers; convolutions run through im2col + cuBLAS");
}

void ptq_cudnn_close(ptq_cuda_dev *d)
{
    (void)d;
}

void ptq_cudnn_drop_plans(ptq_cuda_dev *d)
{
    (void)d;
}

ptq_status ptq_conv_cudnn(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_conv_params *p, const float *x, const float *w,
                          const float *b, const float *z, int relu, float *y, int *done)
{
    *done = 0;
    return PTQ_OK;
}

ptq_status ptq_cudnn_survey(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_conv_params *p, ptq_cudnn_algo_time *out,
                            int cap, int *n_out)
{
    *n_out = 0;
    return ptq_fail(ctx, PTQ_ERR_NO_DEVICE, "%s", d->dnn.note);
}

int64_t ptq_cudnn_chunk(const ptq_conv_params *p)
{
    (void)p;
    return 0;
}

int64_t ptq_cuda_dev_cudnn_guards(const ptq_cuda_dev *d, int64_t *positional)
{
    (void)d;
    *positional = 0;
    return 0;
}

#else

/* a chunk aims at this many output positions (images x out0*out1*out2),
 * rounded down to a power of two of images so common batches split evenly */
#define CUDNN_CHUNK_POSITIONS ((int64_t)1 << 20)
#define CUDNN_CHUNK_MAX 256
/* bound on the padded last chunk's input + output copies */
#define CUDNN_PAD_BYTES ((size_t)256 << 20)
/* an algorithm needing more workspace than this is passed over: a fixed
 * bound (not the free memory), so the choice is the same in every run */
#define CUDNN_WORKSPACE_MAX ((size_t)512 << 20)

/* One way to run a layer: an algorithm at a number of images a call
 * (descriptors not owned). */
typedef struct cudnn_cfg {
    cudnnConvolutionFwdAlgo_t algo;
    int64_t chunk;
    cudnnTensorDescriptor_t x_desc, y_desc;
    size_t workspace_bytes;
} cudnn_cfg;

/* the forms of a call (FORM_*): what is added in the convolution's epilogue */
enum { FORM_PLAIN = 1, FORM_BIAS = 2, FORM_RELU = 4, FORM_Z_RELU = 8, FORM_Z = 16 };

struct ptq_cudnn_plan {
    ptq_conv_params key; /* the layer's params with n = 0 */
    int usable;          /* 0: cuDNN declined the shape; conv.cu runs it */
    int64_t chunk;       /* images per cudnnConvolutionForward */
    cudnnTensorDescriptor_t x_desc, y_desc, b_desc;
    cudnnFilterDescriptor_t w_desc;
    cudnnConvolutionDescriptor_t conv;
    cudnnConvolutionFwdAlgo_t algo;
    size_t workspace_bytes;
    int64_t runs; /* calls that ran: after the first, a failure is an error, never a fallback */
    int no_fuse;  /* cuDNN declined the bias in the epilogue: cudnnAddTensor after the convolution */
    int no_fuse_epilogue; /* cuDNN declined a residual or Relu in the epilogue: the executor runs them apart */
    /* the tuned configuration (tune()): faster, and measured to give the bits of the
     * one above, for the forms in fast_forms; has_fast 0 when there is none */
    int has_fast;
    cudnn_cfg fast;
    unsigned fast_forms;
    float ref_ms, fast_ms; /* the probe's time for one call's worth of images (fast.chunk) */
    int n_cand, n_same;    /* the tuning's candidates besides the reference, and how many gave its bits */
    cudnnTensorDescriptor_t big_x_desc, big_y_desc; /* owned: x and y at the tuning's biggest chunk */
    /* position_guard(): the last guard positions of each call left empty (chunk - guard images a
     * call, through the padded copies), where the reference gives an image there other bits */
    int64_t guard;
    int64_t positional; /* positions position_guard saw differ (0: none, or not measured) */
};

#define PTQ_STR_(x) #x
#define PTQ_STR(x) PTQ_STR_(x)
#define CUDNN_SONAME "libcudnn.so." PTQ_STR(CUDNN_MAJOR)

/* where pip puts nvidia-cudnn-cu*'s library (glob patterns) */
static const char *const wheel_globs[] = {
    "/usr/local/lib/python3*/dist-packages/nvidia/cudnn/lib/" CUDNN_SONAME,
    "/usr/local/lib/python3*/site-packages/nvidia/cudnn/lib/" CUDNN_SONAME,
    "/usr/lib/python3/dist-packages/nvidia/cudnn/lib/" CUDNN_SONAME,
    "/usr/lib/python3*/site-packages/nvidia/cudnn/lib/" CUDNN_SONAME,
    "/opt/conda/lib/python3*/site-packages/nvidia/cudnn/lib/" CUDNN_SONAME,
    "/opt/*/.venv/lib/python3*/site-packages/nvidia/cudnn/lib/" CUDNN_SONAME, /* e.g. /opt/torch/.venv */
    "/opt/*/lib/python3*/site-packages/nvidia/cudnn/lib/" CUDNN_SONAME,
};

static void *try_open(const char *path, char *first_err, size_t n_err)
{
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib && !first_err[0])
        snprintf(first_err, n_err, "%s", dlerror());
    return lib;
}

static void *try_dir(const char *dir, char *first_err, size_t n_err)
{
    char path[PATH_MAX];
    if (!dir || !dir[0] || snprintf(path, sizeof path, "%s/%s", dir, CUDNN_SONAME) >= (int)sizeof path)
        return NULL;
    return try_open(path, first_err, n_err);
}

static void *try_glob(const char *pattern, const char *prefix, char *first_err, size_t n_err)
{
    char full[PATH_MAX];
    if (snprintf(full, sizeof full, "%s%s", prefix, pattern) >= (int)sizeof full)
        return NULL;
    glob_t g;
    void *lib = NULL;
    if (glob(full, 0, NULL, &g) == 0)
        for (size_t i = 0; i < g.gl_pathc && !lib; i++)
            lib = try_open(g.gl_pathv[i], first_err, n_err);
    globfree(&g);
    return lib;
}

/* The dlopen handle of libcudnn.so.9, or NULL with the first loader error in why. */
static void *open_cudnn(char *why, size_t n_why)
{
    void *lib = try_dir(getenv("PTQ_CUDNN_DIR"), why, n_why);
    if (!lib)
        lib = try_open(CUDNN_SONAME, why, n_why);
#ifdef PTQ_CUDNN_LIB_DIR
    if (!lib)
        lib = try_dir(PTQ_CUDNN_LIB_DIR, why, n_why);
#endif
    if (!lib)
        lib = try_dir("/usr/local/cuda/lib64", why, n_why);
    if (!lib)
        lib = try_dir("/usr/lib/x86_64-linux-gnu", why, n_why);
    const char *venv = getenv("VIRTUAL_ENV");
    if (!lib && venv) {
        char pattern[PATH_MAX];
        snprintf(pattern, sizeof pattern, "/lib/python3*/site-packages/nvidia/cudnn/lib/%s", CUDNN_SONAME);
        lib = try_glob(pattern, venv, why, n_why);
    }
    for (size_t i = 0; !lib && i < sizeof wheel_globs / sizeof wheel_globs[0]; i++)
        lib = try_glob(wheel_globs[i], "", why, n_why);
    return lib;
}

/* Resolves the entry points; 0 with the missing name in why. */
static int load_fns(ptq_cudnn *f, char *why, size_t n_why)
{
#define PTQ_LOAD(field, fn)                                                             \
    do {                                                                               \
        *(void **)&f->field = dlsym(f->lib, #fn);                                      \
        if (!f->field) {                                                               \
            snprintf(why, n_why, "cuDNN has no %s", #fn);                              \
            return 0;                                                                  \
        }                                                                              \
    } while (0)
    PTQ_LOAD(get_version, cudnnGetVersion);
    PTQ_LOAD(error_string, cudnnGetErrorString);
    PTQ_LOAD(create, cudnnCreate);
    PTQ_LOAD(destroy, cudnnDestroy);
    PTQ_LOAD(set_stream, cudnnSetStream);
    PTQ_LOAD(create_tensor, cudnnCreateTensorDescriptor);
    PTQ_LOAD(destroy_tensor, cudnnDestroyTensorDescriptor);
    PTQ_LOAD(set_tensor, cudnnSetTensorNdDescriptor);
    PTQ_LOAD(create_filter, cudnnCreateFilterDescriptor);
    PTQ_LOAD(destroy_filter, cudnnDestroyFilterDescriptor);
    PTQ_LOAD(set_filter, cudnnSetFilterNdDescriptor);
    PTQ_LOAD(create_conv, cudnnCreateConvolutionDescriptor);
    PTQ_LOAD(destroy_conv, cudnnDestroyConvolutionDescriptor);
    PTQ_LOAD(set_conv, cudnnSetConvolutionNdDescriptor);
    PTQ_LOAD(set_group_count, cudnnSetConvolutionGroupCount);
    PTQ_LOAD(set_math_type, cudnnSetConvolutionMathType);
    PTQ_LOAD(output_dim, cudnnGetConvolutionNdForwardOutputDim);
    PTQ_LOAD(algo_max_count, cudnnGetConvolutionForwardAlgorithmMaxCount);
    PTQ_LOAD(get_algos, cudnnGetConvolutionForwardAlgorithm_v7);
    PTQ_LOAD(workspace_size, cudnnGetConvolutionForwardWorkspaceSize);
    PTQ_LOAD(conv_forward, cudnnConvolutionForward);
    PTQ_LOAD(add_tensor, cudnnAddTensor);
    PTQ_LOAD(conv_bias_act, cudnnConvolutionBiasActivationForward);
    PTQ_LOAD(create_act, cudnnCreateActivationDescriptor);
    PTQ_LOAD(destroy_act, cudnnDestroyActivationDescriptor);
    PTQ_LOAD(set_act, cudnnSetActivationDescriptor);
#undef PTQ_LOAD
    return 1;
}

#define FALLBACK_NOTE "convolutions run through im2col + cuBLAS, several times slower"

void ptq_cudnn_open(ptq_cuda_dev *d)
{
    ptq_cudnn *f = &d->dnn;
    char why[400] = "";
    const char *off = getenv("PTQ_CUDNN");
    if (off && strcmp(off, "0") == 0) {
        snprintf(f->note, sizeof f->note, "PTQ_CUDNN=0: " FALLBACK_NOTE);
        return;
    }
    f->lib = open_cudnn(why, sizeof why);
    if (!f->lib) {
        snprintf(f->note, sizeof f->note,
                 "cuDNN 9 not found (%s); " FALLBACK_NOTE
                 " (set PTQ_CUDNN_DIR to the folder of " CUDNN_SONAME ", e.g. site-packages/nvidia/cudnn/lib)",
                 why);
        return;
    }
    if (!load_fns(f, why, sizeof why)) {
        snprintf(f->note, sizeof f->note, "%s; " FALLBACK_NOTE, why);
    } else if (f->get_version() / 10000 != CUDNN_MAJOR) {
        snprintf(f->note, sizeof f->note, "cuDNN %zu found, ptq needs %d.x; " FALLBACK_NOTE, f->get_version(),
                 CUDNN_MAJOR);
    } else {
        cudnnStatus_t s = f->create(&f->handle);
        if (s == CUDNN_STATUS_SUCCESS && (s = f->set_stream(f->handle, d->stream)) == CUDNN_STATUS_SUCCESS &&
            (s = f->create_act(&f->identity)) == CUDNN_STATUS_SUCCESS &&
            (s = f->set_act(f->identity, CUDNN_ACTIVATION_IDENTITY, CUDNN_NOT_PROPAGATE_NAN, 0.0)) ==
                CUDNN_STATUS_SUCCESS &&
            (s = f->create_act(&f->relu)) == CUDNN_STATUS_SUCCESS &&
            (s = f->set_act(f->relu, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0)) == CUDNN_STATUS_SUCCESS) {
            f->enabled = 1;
            return;
        }
        if (f->identity)
            (void)f->destroy_act(f->identity);
        if (f->relu)
            (void)f->destroy_act(f->relu);
        f->identity = f->relu = NULL;
        snprintf(f->note, sizeof f->note, "cuDNN %zu could not start: %s; " FALLBACK_NOTE, f->get_version(),
                 f->error_string(s));
        if (f->handle)
            (void)f->destroy(f->handle);
        f->handle = NULL;
    }
    (void)dlclose(f->lib);
    f->lib = NULL;
}

static void plan_free(ptq_cudnn *f, ptq_cudnn_plan *pl)
{
    if (pl->x_desc)
        (void)f->destroy_tensor(pl->x_desc);
    if (pl->y_desc)
        (void)f->destroy_tensor(pl->y_desc);
    if (pl->b_desc)
        (void)f->destroy_tensor(pl->b_desc);
    if (pl->big_x_desc)
        (void)f->destroy_tensor(pl->big_x_desc);
    if (pl->big_y_desc)
        (void)f->destroy_tensor(pl->big_y_desc);
    if (pl->w_desc)
        (void)f->destroy_filter(pl->w_desc);
    if (pl->conv)
        (void)f->destroy_conv(pl->conv);
}

void ptq_cudnn_drop_plans(ptq_cuda_dev *d)
{
    ptq_cudnn *f = &d->dnn;
    for (int i = 0; i < f->n_plans; i++)
        plan_free(f, &f->plans[i]);
    f->n_plans = 0;
}

void ptq_cudnn_close(ptq_cuda_dev *d)
{
    ptq_cudnn *f = &d->dnn;
    ptq_cudnn_drop_plans(d);
    free(f->plans);
    if (f->workspace)
        (void)cudaFree(f->workspace);
    if (f->slices)
        (void)cudaFree(f->slices);
    if (f->identity)
        (void)f->destroy_act(f->identity);
    if (f->relu)
        (void)f->destroy_act(f->relu);
    if (f->handle)
        (void)f->destroy(f->handle);
    if (f->lib)
        (void)dlclose(f->lib);
    memset(f, 0, sizeof *f);
}

static int64_t img_numel(int64_t c, const int64_t *sp)
{
    return c * sp[0] * sp[1] * sp[2];
}

/* PTQ_CUDNN_CHUNK_SHIFT=k (0..4) scales the chunk's position and padding
 * bounds by 2^k, for bench/resnet50_targets.py's sweep. A chunk
 * stays a function of the layer (and this setting), never of the batch. */
static int chunk_shift(void)
{
    const char *v = getenv("PTQ_CUDNN_CHUNK_SHIFT");
    return v && v[0] >= '0' && v[0] <= '4' && !v[1] ? v[0] - '0' : 0;
}

/* Images per cuDNN call for this layer: a function of the layer alone. */
static int64_t chunk_of(const ptq_conv_params *p)
{
    const int64_t positions = CUDNN_CHUNK_POSITIONS << chunk_shift();
    const size_t pad_bytes = CUDNN_PAD_BYTES << chunk_shift();
    const int64_t out_sz = p->out[0] * p->out[1] * p->out[2];
    const int64_t per_img = img_numel(p->c_in, p->in) > img_numel(p->c_out, p->out) ? img_numel(p->c_in, p->in)
                                                                                    : img_numel(p->c_out, p->out);
    const size_t pad_per_img = (size_t)(img_numel(p->c_in, p->in) + img_numel(p->c_out, p->out)) * sizeof(float);
    int64_t chunk = 1;
    while (chunk * 2 <= CUDNN_CHUNK_MAX && chunk * 2 * out_sz <= positions &&
           (size_t)(chunk * 2) * pad_per_img <= pad_bytes && chunk * 2 * per_img <= INT_MAX)
        chunk *= 2;
    return chunk;
}

int64_t ptq_cudnn_chunk(const ptq_conv_params *p)
{
    return chunk_of(p);
}

int64_t ptq_cuda_dev_cudnn_guards(const ptq_cuda_dev *d, int64_t *positional)
{
    int64_t n = 0;
    *positional = 0;
    for (int i = 0; i < d->dnn.n_plans; i++) {
        n += d->dnn.plans[i].guard > 0;
        *positional += d->dnn.plans[i].positional;
    }
    return n;
}

/* GEMM-like algorithms only: each output a plain FP32 sum over its taps.
 * FFT and WINOGRAD_NONFUSED transform the data and round differently
 * (errors beyond kernels/ref's parity tolerance for wide layers).
 * PTQ_CUDNN_WINOGRAD=0 passes over the fused WINOGRAD too, for
 * bench/cudnn_winograd.sh's comparison of its rounding and speed. */
static int allowed(cudnnConvolutionFwdAlgo_t a)
{
    const char *w = getenv("PTQ_CUDNN_WINOGRAD");
    return a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM || a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
           a == CUDNN_CONVOLUTION_FWD_ALGO_GEMM || a == CUDNN_CONVOLUTION_FWD_ALGO_DIRECT ||
           (a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD && !(w && strcmp(w, "0") == 0));
}

/* Packed dims and strides of [n, c, sp[first..2]]: NC(spatial) order in
 * memory, or channels last (N(spatial)C) when nhwc. */
static void packed(int nd, int64_t n, int64_t c, const int64_t *sp, int nhwc, int *dims, int *strides)
{
    dims[0] = (int)n;
    dims[1] = (int)c;
    for (int i = 2; i < nd; i++)
        dims[i] = (int)sp[3 - (nd - i)];
    if (nhwc) {
        strides[1] = 1;
        strides[nd - 1] = dims[1];
        for (int i = nd - 2; i >= 2; i--)
            strides[i] = strides[i + 1] * dims[i + 1];
        strides[0] = strides[2] * dims[2];
        return;
    }
    strides[nd - 1] = 1;
    for (int i = nd - 2; i >= 0; i--)
        strides[i] = strides[i + 1] * dims[i + 1];
}

/* A status from planning: shapes cuDNN does not take (bad or unsupported
 * parameters) are a decline, PTQ_OK with the plan unusable; a broken
 * install or a failure is an error. */
static int is_decline(cudnnStatus_t s)
{
    const int category = (int)s / 1000 * 1000;
    const int environment = s == CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER ||
                            s == CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART ||
                            s == CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING ||
                            s == CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE;
    return (category == CUDNN_STATUS_BAD_PARAM || category == CUDNN_STATUS_NOT_SUPPORTED) && !environment;
}

static ptq_status plan_status(ptq_ctx *ctx, const ptq_cudnn *f, cudnnStatus_t s, const char *call)
{
    if (is_decline(s))
        return PTQ_OK;
    return ptq_fail(ctx, PTQ_ERR_CUDA, "cuDNN %s failed: %s (status %d)", call, f->error_string(s), (int)s);
}

#define PLAN_CALL(call)                                        \
    do {                                                       \
        cudnnStatus_t s_ = (call);                             \
        if (s_ != CUDNN_STATUS_SUCCESS)                        \
            return plan_status(ctx, f, s_, #call);             \
    } while (0)

/* cuDNN's math type for d's --math: FP32 FMA (exact), or tensor cores (TF32). */
static cudnnMathType_t math_type(const ptq_cuda_dev *d)
{
    return d->math == PTQ_CUDA_MATH_TF32 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH;
}

/* cuDNN's dims for p: 2 spatial dims when the first is trivial (1-D convs become [1, L]), else 3 */
static int n_dims(const ptq_conv_params *p)
{
    return p->in[0] == 1 && p->k[0] == 1 && p->out[0] == 1 && p->pad_lo[0] == 0 ? 4 : 5;
}

/* x and y descriptors of p's layer at n images a call (pl's filter and
 * convolution made); *taken stays 0 when cuDNN's output shape differs. */
static ptq_status io_descs(ptq_ctx *ctx, ptq_cudnn *f, const ptq_conv_params *p, int64_t n, const ptq_cudnn_plan *pl,
                           cudnnTensorDescriptor_t *x_desc, cudnnTensorDescriptor_t *y_desc, int *taken)
{
    *taken = 0;
    const int nd = n_dims(p);
    int xd[5], xs[5], yd[5], ys[5], got[5];
    packed(nd, n, p->c_in, p->in, (p->nhwc & PTQ_NHWC_X) != 0, xd, xs);
    packed(nd, n, p->c_out, p->out, (p->nhwc & PTQ_NHWC_Y) != 0, yd, ys);
    PLAN_CALL(f->create_tensor(x_desc));
    PLAN_CALL(f->create_tensor(y_desc));
    PLAN_CALL(f->set_tensor(*x_desc, CUDNN_DATA_FLOAT, nd, xd, xs));
    PLAN_CALL(f->set_tensor(*y_desc, CUDNN_DATA_FLOAT, nd, yd, ys));
    PLAN_CALL(f->output_dim(pl->conv, *x_desc, pl->w_desc, nd, got));
    *taken = memcmp(got, yd, (size_t)nd * sizeof got[0]) == 0;
    return PTQ_OK;
}

/* Descriptors of p's layer at n images a call into pl; *taken stays 0 when
 * cuDNN does not take the shape. */
static ptq_status descs_make(ptq_ctx *ctx, ptq_cudnn *f, const ptq_conv_params *p, int64_t n, cudnnMathType_t math,
                             ptq_cudnn_plan *pl, int *taken)
{
    *taken = 0;
    for (int s = 0; s < PTQ_SPATIAL; s++)
        if (p->pad_lo[s] != p->pad_hi[s] || p->k[s] > INT_MAX || p->stride[s] > INT_MAX || p->dil[s] > INT_MAX ||
            p->pad_lo[s] > INT_MAX)
            return PTQ_OK; /* cuDNN pads symmetrically */
    if (p->c_out > INT_MAX || p->c_in > INT_MAX || p->group > INT_MAX || img_numel(p->c_in, p->in) > INT_MAX ||
        img_numel(p->c_out, p->out) > INT_MAX)
        return PTQ_OK; /* cuDNN's dims and strides are ints */
    const int nd = n_dims(p);
    const int n_sp = nd - 2;
    int wd[5], bd[5], bs[5], pads[3], strides[3], dils[3];
    wd[0] = (int)p->c_out;
    wd[1] = (int)(p->c_in / p->group);
    for (int i = 0; i < nd; i++) {
        bd[i] = i == 1 ? (int)p->c_out : 1;
        bs[i] = i == 0 ? (int)p->c_out : 1;
    }
    for (int i = 0; i < n_sp; i++) {
        int s = 3 - n_sp + i;
        wd[2 + i] = (int)p->k[s];
        pads[i] = (int)p->pad_lo[s];
        strides[i] = (int)p->stride[s];
        dils[i] = (int)p->dil[s];
    }
    PLAN_CALL(f->create_tensor(&pl->b_desc));
    PLAN_CALL(f->create_filter(&pl->w_desc));
    PLAN_CALL(f->create_conv(&pl->conv));
    PLAN_CALL(f->set_tensor(pl->b_desc, CUDNN_DATA_FLOAT, nd, bd, bs));
    PLAN_CALL(f->set_filter(pl->w_desc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, nd, wd));
    PLAN_CALL(f->set_conv(pl->conv, n_sp, pads, strides, dils, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    PLAN_CALL(f->set_group_count(pl->conv, (int)p->group));
    PLAN_CALL(f->set_math_type(pl->conv, math));
    return io_descs(ctx, f, p, n, pl, &pl->x_desc, &pl->y_desc, taken);
}

/* The heuristic's list for pl's descriptors, best first: a function of the shape, no timing. */
static ptq_status heuristic_list(ptq_ctx *ctx, ptq_cudnn *f, ptq_cudnn_plan *pl, cudnnConvolutionFwdAlgoPerf_t *perf,
                                 int cap, int *n_algos)
{
    int max_algos = 0;
    *n_algos = 0;
    PLAN_CALL(f->algo_max_count(f->handle, &max_algos));
    if (max_algos > cap)
        max_algos = cap;
    PLAN_CALL(f->get_algos(f->handle, pl->x_desc, pl->w_desc, pl->conv, pl->y_desc, max_algos, n_algos, perf));
    return PTQ_OK;
}

/* The reference configuration of pl: the heuristic's algorithm at the layer's chunk. */
static cudnn_cfg ref_cfg(const ptq_cudnn_plan *pl)
{
    cudnn_cfg c = {pl->algo, pl->chunk, pl->x_desc, pl->y_desc, pl->workspace_bytes};
    return c;
}

static unsigned form_of(const float *b, const float *z, int relu)
{
    if (!b)
        return FORM_PLAIN;
    if (z)
        return relu ? FORM_Z_RELU : FORM_Z;
    return relu ? FORM_RELU : FORM_BIAS;
}

/* One call of c on c->chunk images in form (FORM_*): y = conv(x), + b,
 * or act(conv(x) + z + b) in the epilogue (FORM_Z only through
 * IMPLICIT_PRECOMP_GEMM, as cuDNN's identity activation wants); the bias
 * of FORM_BIAS in the epilogue when fuse_bias, else by cudnnAddTensor.
 * acc (FORM_PLAIN and an unfused FORM_BIAS only): y += conv(x), cuDNN's
 * beta 1. *what names the cuDNN call that answered. */
static cudnnStatus_t form_call(ptq_cudnn *f, const ptq_cudnn_plan *pl, const cudnn_cfg *c, unsigned form,
                               int fuse_bias, int acc, const float *x, const float *w, const float *b, const float *z,
                               float *y, void *ws, const char **what)
{
    const float one = 1.0f, zero = 0.0f;
    if (form & (FORM_RELU | FORM_Z_RELU | FORM_Z)) {
        /* without z, alpha2 = 0 and y stands in as z */
        const float alpha2 = z ? 1.0f : 0.0f;
        *what = "cudnnConvolutionBiasActivationForward";
        return f->conv_bias_act(f->handle, &one, c->x_desc, x, pl->w_desc, w, pl->conv, c->algo, ws,
                                c->workspace_bytes, &alpha2, c->y_desc, z ? z : y, pl->b_desc, b,
                                form == FORM_Z ? f->identity : f->relu, c->y_desc, y);
    }
    if (form == FORM_BIAS && fuse_bias) {
        *what = "cudnnConvolutionBiasActivationForward";
        return f->conv_bias_act(f->handle, &one, c->x_desc, x, pl->w_desc, w, pl->conv, c->algo, ws,
                                c->workspace_bytes, &zero, c->y_desc, y, pl->b_desc, b, f->identity, c->y_desc, y);
    }
    *what = "cudnnConvolutionForward";
    cudnnStatus_t s = f->conv_forward(f->handle, &one, c->x_desc, x, pl->w_desc, w, pl->conv, c->algo, ws,
                                      c->workspace_bytes, acc ? &one : &zero, c->y_desc, y);
    if (s == CUDNN_STATUS_SUCCESS && form == FORM_BIAS) {
        *what = "cudnnAddTensor";
        s = f->add_tensor(f->handle, &one, pl->b_desc, b, &one, c->y_desc, y);
    }
    return s;
}

static int fuses_bias(const ptq_cudnn_plan *pl, const cudnn_cfg *c)
{
    return c->algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM && !pl->no_fuse;
}

/* Tuning: a layer whose convolution cuDNN can run faster another way (an
 * algorithm, more images a call) runs that way only where it gives the
 * reference configuration's bits. On random data the candidates run the
 * reference's arithmetic or show it: a different order of the FP32 sums
 * changes some of the probe's outputs, and images near the bottom of the
 * float range show a kernel that flushes subnormals. So the choice, which
 * depends on timings, never changes a result, and archives stay
 * byte-identical whatever the batch, the shard or the run.
 * PTQ_CUDNN_TUNE=0 turns it off. */
#define TUNE_PROBE_BYTES ((size_t)2 << 30) /* bound on the probe's x, z and two y at the biggest chunk */
#define TUNE_MIN_GAIN 0.97f                /* a candidate replaces the reference at 97% of its time or less */

/* The biggest chunk tuning tries for p: up to CUDNN_CHUNK_MAX images, a
 * multiple of chunk, within the probe's bound and cuDNN's int strides. */
static int64_t big_chunk(const ptq_conv_params *p, int64_t chunk)
{
    const int64_t x_img = img_numel(p->c_in, p->in), y_img = img_numel(p->c_out, p->out);
    int64_t big = CUDNN_CHUNK_MAX;
    while (big > chunk && ((size_t)big * (size_t)(x_img + 3 * y_img) * sizeof(float) > TUNE_PROBE_BYTES ||
                           big * x_img > INT_MAX || big * y_img > INT_MAX))
        big /= 2;
    return big > chunk ? big : chunk;
}

typedef struct tune_probe {
    int64_t n, x_img, y_img; /* n images */
    float *x, *w, *b, *z, *y_ref, *y;
    void *ws;
    unsigned long long *diff;
    cudaEvent_t e0, e1;
} tune_probe;

/* c over the probe's n images in form (c->chunk a call) into y. */
static cudnnStatus_t probe_run(ptq_cudnn *f, const ptq_cudnn_plan *pl, const cudnn_cfg *c, unsigned form,
                               const tune_probe *t, float *y)
{
    cudnnStatus_t s = CUDNN_STATUS_SUCCESS;
    const char *what = NULL;
    for (int64_t i = 0; i < t->n && s == CUDNN_STATUS_SUCCESS; i += c->chunk)
        s = form_call(f, pl, c, form, fuses_bias(pl, c), 0, t->x + i * t->x_img, t->w, t->b,
                      form & (FORM_Z | FORM_Z_RELU) ? t->z + i * t->y_img : NULL, y + i * t->y_img, t->ws, &what);
    return s;
}

/* *same = 1 when the probe's y equals y_ref bit for bit. */
static ptq_status probe_same(ptq_ctx *ctx, ptq_cuda_dev *d, const tune_probe *t, int *same)
{
    const int r = probe_same_bits(d, t->y_ref, t->y, t->n * t->y_img, t->diff);
    *same = r == 1;
    if (r < 0)
        return ptq_fail(ctx, PTQ_ERR_CUDA, "the GPU failed while tuning a convolution: %s",
                        cudaGetErrorString(cudaGetLastError()));
    return PTQ_OK;
}

/* Milliseconds c takes for the probe's n images in FORM_BIAS (one run, after the one before), or -1. */
static float probe_time(ptq_cudnn *f, ptq_cuda_dev *d, const ptq_cudnn_plan *pl, const cudnn_cfg *c,
                        const tune_probe *t)
{
    float ms = -1.0f;
    if (cudaEventRecord(t->e0, d->stream) != cudaSuccess ||
        probe_run(f, pl, c, FORM_BIAS, t, t->y) != CUDNN_STATUS_SUCCESS ||
        cudaEventRecord(t->e1, d->stream) != cudaSuccess ||
        cudaEventSynchronize(t->e1) != cudaSuccess || cudaEventElapsedTime(&ms, t->e0, t->e1) != cudaSuccess) {
        (void)cudaGetLastError(); /* not sticky: this candidate is passed over */
        return -1.0f;
    }
    return ms;
}

/* Sets pl's fast configuration when a candidate is measured faster than
 * the reference with its bits; leaves pl without one otherwise (tuning
 * off, one candidate, no memory for the probe, a candidate cuDNN refuses).
 * perf[n_algos]: the heuristic's list plan_make chose from. */
static ptq_status tune(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_conv_params *p, ptq_cudnn_plan *pl,
                       const cudnnConvolutionFwdAlgoPerf_t *perf, int n_algos)
{
    const char *env = getenv("PTQ_CUDNN_TUNE");
    if (env && strcmp(env, "0") == 0)
        return PTQ_OK;
    const int always = env && strcmp(env, "always") == 0; /* the tests: any candidate with the bits, however slow */
    ptq_cudnn *f = &d->dnn;
    const cudnnMathType_t math = math_type(d);
    int64_t big = big_chunk(p, pl->chunk);
    if (big > pl->chunk) {
        int taken = 0;
        PTQ_TRY_RET(io_descs(ctx, f, p, big, pl, &pl->big_x_desc, &pl->big_y_desc, &taken));
        if (!taken)
            big = pl->chunk;
    }
    cudnn_cfg cand[CUDNN_CONVOLUTION_FWD_ALGO_COUNT + 1];
    int n_cand = 0;
    size_t ws_max = pl->workspace_bytes;
    cand[n_cand++] = ref_cfg(pl);
    /* every allowed algorithm at the biggest chunk (more images a call are rarely slower) */
    cudnnTensorDescriptor_t xd = big > pl->chunk ? pl->big_x_desc : pl->x_desc;
    cudnnTensorDescriptor_t yd = big > pl->chunk ? pl->big_y_desc : pl->y_desc;
    for (int i = 0; i < n_algos && n_cand < (int)(sizeof cand / sizeof cand[0]); i++) {
        const cudnnConvolutionFwdAlgoPerf_t *a = &perf[i];
        size_t ws = 0;
        if (a->status != CUDNN_STATUS_SUCCESS || a->determinism != CUDNN_DETERMINISTIC || a->mathType != math ||
            !allowed(a->algo) || (a->algo == pl->algo && big == pl->chunk))
            continue;
        if (f->workspace_size(f->handle, xd, pl->w_desc, pl->conv, yd, a->algo, &ws) != CUDNN_STATUS_SUCCESS ||
            ws > CUDNN_WORKSPACE_MAX)
            continue;
        cudnn_cfg c = {a->algo, big, xd, yd, ws};
        cand[n_cand++] = c;
        if (ws > ws_max)
            ws_max = ws;
    }
    pl->n_cand = n_cand - 1;
    if (n_cand == 1)
        return PTQ_OK;
    /* the probe: random x, w, b, z of big images; a failed allocation is no tuning */
    tune_probe t;
    memset(&t, 0, sizeof t);
    t.n = big;
    t.x_img = img_numel(p->c_in, p->in);
    t.y_img = img_numel(p->c_out, p->out);
    const int64_t n_w = p->c_out * (p->c_in / p->group) * p->k[0] * p->k[1] * p->k[2];
    const int64_t n_x = big * t.x_img, n_y = big * t.y_img;
    const int64_t room[] = {n_x, n_w, p->c_out, n_y, n_y, n_y}; /* x, w, b, z, y_ref, y */
    size_t at[6];
    size_t bytes = carve(room, 6, at);
    const size_t ws_at = bytes;
    bytes += (ws_max + 255) / 256 * 256;
    const size_t diff_at = bytes;
    bytes += 256;
    char *mem = NULL;
    if (cudaMalloc((void **)&mem, bytes) != cudaSuccess) {
        (void)cudaGetLastError(); /* not sticky: the runs go on with the reference */
        return PTQ_OK;
    }
    float *bufs[6];
    for (int i = 0; i < 6; i++)
        bufs[i] = (float *)(mem + at[i]);
    t.x = bufs[0], t.w = bufs[1], t.b = bufs[2], t.z = bufs[3], t.y_ref = bufs[4], t.y = bufs[5];
    t.ws = mem + ws_at;
    t.diff = (unsigned long long *)(mem + diff_at);
    ptq_status st = PTQ_OK;
    int ok = cudaEventCreate(&t.e0) == cudaSuccess && cudaEventCreate(&t.e1) == cudaSuccess;
    if (!ok)
        (void)cudaGetLastError();
    const float w_scale = 1.0f / sqrtf((float)(n_w / p->c_out > 0 ? n_w / p->c_out : 1));
    /* x: every 8th image at 2^-120 (its products and sums subnormal), b: every 8th channel 0 */
    const int64_t group_len[4] = {t.x_img, n_w, 1, t.y_img};
    const float odd_scale[4] = {ldexpf(1.0f, -120), 1.0f, 0.0f, 1.0f};
    for (int i = 0; ok && i < 4; i++) {
        probe_fill_kernel<<<ptq_cuda_blocks(room[i]), PTQ_CUDA_BLOCK, 0, d->stream>>>(
            bufs[i], room[i], 0x51ED270Bu * (uint32_t)(i + 1), i == 1 ? w_scale : 1.0f, group_len[i], odd_scale[i]);
        ok = cudaGetLastError() == cudaSuccess;
    }
    const cudnn_cfg ref = cand[0];
    /* the reference's bias form; its epilogue declined here is declined for the runs too */
    cudnnStatus_t rs = ok ? probe_run(f, pl, &ref, FORM_BIAS, &t, t.y_ref) : CUDNN_STATUS_SUCCESS;
    if (ok && rs != CUDNN_STATUS_SUCCESS) {
        (void)cudaGetLastError();
        ok = 0;
        if (fuses_bias(pl, &ref) && is_decline(rs)) { /* as a first run would: the bias apart from now on */
            pl->no_fuse = 1;
            ok = probe_run(f, pl, &ref, FORM_BIAS, &t, t.y_ref) == CUDNN_STATUS_SUCCESS;
            if (!ok) {
                (void)cudaGetLastError();
                pl->no_fuse = 0;
            }
        }
    }
    float ref_ms = ok ? probe_time(f, d, pl, &ref, &t) : -1.0f;
    int best = -1;
    float best_ms = always ? INFINITY : ref_ms * TUNE_MIN_GAIN;
    for (int i = 1; ok && ref_ms > 0 && i < n_cand; i++) {
        if (probe_run(f, pl, &cand[i], FORM_BIAS, &t, t.y) != CUDNN_STATUS_SUCCESS) {
            (void)cudaGetLastError();
            continue;
        }
        int same = 0;
        if ((st = probe_same(ctx, d, &t, &same)) != PTQ_OK)
            break;
        pl->n_same += same;
        const float ms = same ? probe_time(f, d, pl, &cand[i], &t) : -1.0f;
        if (ms > 0 && ms < best_ms) {
            best = i;
            best_ms = ms;
        }
    }
    if (st == PTQ_OK && best > 0) {
        /* the forms the winner reproduces; FORM_BIAS was its test */
        unsigned forms = FORM_BIAS;
        static const unsigned others[] = {FORM_PLAIN, FORM_RELU, FORM_Z_RELU, FORM_Z};
        for (size_t k = 0; k < sizeof others / sizeof others[0]; k++) {
            const unsigned form = others[k];
            if (form == FORM_Z && (ref.algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
                                   cand[best].algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM))
                continue;
            if (probe_run(f, pl, &ref, form, &t, t.y_ref) != CUDNN_STATUS_SUCCESS ||
                probe_run(f, pl, &cand[best], form, &t, t.y) != CUDNN_STATUS_SUCCESS) {
                (void)cudaGetLastError();
                continue;
            }
            int same = 0;
            if ((st = probe_same(ctx, d, &t, &same)) != PTQ_OK)
                break;
            if (same)
                forms |= form;
        }
        pl->has_fast = st == PTQ_OK;
        pl->fast = cand[best];
        pl->fast_forms = forms;
        pl->ref_ms = ref_ms * (float)cand[best].chunk / (float)big;
        pl->fast_ms = best_ms * (float)cand[best].chunk / (float)big;
    }
    if (t.e0)
        (void)cudaEventDestroy(t.e0);
    if (t.e1)
        (void)cudaEventDestroy(t.e1);
    (void)cudaFree(mem);
    return st;
}

/* Under TF32 some of cuDNN's kernels give the last images of a call other
 * bits than the same image elsewhere in the call (on the H200, ResNet-50's
 * layers at 256 images a call: the last two), so an image's outputs would
 * depend on the batch it came in. position_guard measures it on a random
 * probe of one call: the reference configuration (in the forms bias, bias
 * + Relu, bias + residual + Relu) on m images, and on the same images
 * rotated, image by image. When every differing position lies in the
 * call's last g (g at most half of it), and a second probe with images in
 * the first chunk - g positions only, rotated by one, gives every image its
 * bits, the runs leave those positions empty (pl->guard = g). Otherwise
 * pl->guard stays 0; pl->positional keeps how many positions differed.
 * PTQ_CUDNN_GUARD=0 turns it off. */
static __global__ void image_diff_kernel(const uint32_t *a, const uint32_t *b, int64_t y_img, int64_t m, int64_t shift,
                                         unsigned *flag)
{
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < m * y_img; e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t j = e / y_img, k = e % y_img, pos_b = ((j - shift) % m + m) % m;
        if (a[e] != b[pos_b * y_img + k])
            flag[j] = 1u;
    }
}

typedef struct guard_probe {
    int64_t chunk, x_img, y_img;
    float *x, *z, *xb, *zb, *ya, *yb, *w, *b;
    void *ws;
    unsigned *flag; /* [chunk] */
} guard_probe;

/* Copies images [0, m) of src into dst rotated by shift (dst image q = src
 * image (q + shift) % m) and zeroes dst's images [m, chunk). */
static cudaError_t rotate_images(const guard_probe *g, cudaStream_t st, const float *src, float *dst, int64_t img,
                                 int64_t m, int64_t shift)
{
    const size_t b = (size_t)img * sizeof(float);
    cudaError_t e = cudaMemcpyAsync(dst, src + shift * img, (size_t)(m - shift) * b, cudaMemcpyDeviceToDevice, st);
    if (e == cudaSuccess && shift > 0)
        e = cudaMemcpyAsync(dst + (m - shift) * img, src, (size_t)shift * b, cudaMemcpyDeviceToDevice, st);
    if (e == cudaSuccess && m < g->chunk)
        e = cudaMemsetAsync(dst + m * img, 0, (size_t)(g->chunk - m) * b, st);
    return e;
}

/* flag[j] = 1 for each image j < m whose outputs differ between the images
 * in place and rotated by shift, in form; *failed when cuDNN or CUDA did. */
static void probe_positions(ptq_cudnn *f, ptq_cuda_dev *d, const ptq_cudnn_plan *pl, const guard_probe *g,
                            unsigned form, int64_t m, int64_t shift, unsigned *host_flag, int *failed)
{
    const cudnn_cfg ref = ref_cfg(pl);
    const char *what = NULL;
    const int z = (form & FORM_Z_RELU) != 0;
    cudaStream_t st = d->stream;
    cudaError_t e = rotate_images(g, st, g->x, g->xb, g->x_img, m, 0);
    if (e == cudaSuccess && z)
        e = rotate_images(g, st, g->z, g->zb, g->y_img, m, 0);
    int ok = e == cudaSuccess &&
             form_call(f, pl, &ref, form, fuses_bias(pl, &ref), 0, g->xb, g->w, g->b, z ? g->zb : NULL, g->ya, g->ws,
                       &what) == CUDNN_STATUS_SUCCESS;
    if (ok)
        ok = rotate_images(g, st, g->x, g->xb, g->x_img, m, shift) == cudaSuccess &&
             (!z || rotate_images(g, st, g->z, g->zb, g->y_img, m, shift) == cudaSuccess);
    ok = ok && form_call(f, pl, &ref, form, fuses_bias(pl, &ref), 0, g->xb, g->w, g->b, z ? g->zb : NULL, g->yb,
                         g->ws, &what) == CUDNN_STATUS_SUCCESS;
    ok = ok && cudaMemsetAsync(g->flag, 0, (size_t)m * sizeof *g->flag, st) == cudaSuccess;
    if (ok) {
        image_diff_kernel<<<ptq_cuda_blocks(m * g->y_img), PTQ_CUDA_BLOCK, 0, st>>>(
            (const uint32_t *)g->ya, (const uint32_t *)g->yb, g->y_img, m, shift, g->flag);
        ok = cudaGetLastError() == cudaSuccess &&
             cudaMemcpyAsync(host_flag, g->flag, (size_t)m * sizeof *g->flag, cudaMemcpyDeviceToHost, st) ==
                 cudaSuccess &&
             cudaStreamSynchronize(st) == cudaSuccess;
    }
    if (!ok) {
        (void)cudaGetLastError();
        *failed = 1;
    }
}

static ptq_status position_guard(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_conv_params *p, ptq_cudnn_plan *pl)
{
    const char *env = getenv("PTQ_CUDNN_GUARD");
    const int64_t chunk = pl->chunk;
    if ((env && strcmp(env, "0") == 0) || chunk < 4 || pl->no_fuse_epilogue)
        return PTQ_OK;
    ptq_cudnn *f = &d->dnn;
    guard_probe g;
    memset(&g, 0, sizeof g);
    g.chunk = chunk;
    g.x_img = img_numel(p->c_in, p->in);
    g.y_img = img_numel(p->c_out, p->out);
    const int64_t n_w = p->c_out * (p->c_in / p->group) * p->k[0] * p->k[1] * p->k[2];
    const int64_t n_x = chunk * g.x_img, n_y = chunk * g.y_img;
    const int64_t room[] = {n_x, n_y, n_x, n_y, n_y, n_y, n_w, p->c_out, chunk}; /* x z xb zb ya yb w b flag */
    size_t at[9];
    size_t bytes = carve(room, 9, at);
    const size_t ws_at = bytes;
    bytes += (pl->workspace_bytes + 255) / 256 * 256;
    if (bytes > TUNE_PROBE_BYTES)
        return PTQ_OK;
    char *mem = NULL;
    unsigned *flag = (unsigned *)malloc((size_t)chunk * sizeof *flag);
    if (!flag || cudaMalloc((void **)&mem, bytes) != cudaSuccess) {
        (void)cudaGetLastError(); /* not sticky: no probe, no guard */
        free(flag);
        return PTQ_OK;
    }
    float *bufs[8];
    for (int i = 0; i < 8; i++)
        bufs[i] = (float *)(mem + at[i]);
    g.x = bufs[0], g.z = bufs[1], g.xb = bufs[2], g.zb = bufs[3], g.ya = bufs[4], g.yb = bufs[5];
    g.w = bufs[6], g.b = bufs[7];
    g.flag = (unsigned *)(mem + at[8]);
    g.ws = mem + ws_at;
    int failed = 0;
    const float w_scale = 1.0f / sqrtf((float)(n_w / p->c_out > 0 ? n_w / p->c_out : 1));
    const int fill[] = {0, 1, 6, 7};
    for (int i = 0; i < 4; i++) {
        const int k = fill[i];
        probe_fill_kernel<<<ptq_cuda_blocks(room[k]), PTQ_CUDA_BLOCK, 0, d->stream>>>(
            bufs[k], room[k], 0x2545F491u * (uint32_t)(i + 1), k == 6 ? w_scale : 1.0f, room[k], 1.0f);
        failed |= cudaGetLastError() != cudaSuccess;
    }
    /* a form cuDNN declines here is declined in the runs too (the executor runs the ops apart): passed over */
    static const unsigned forms[] = {FORM_BIAS, FORM_RELU, FORM_Z_RELU};
    int tried[3] = {0, 0, 0};
    int64_t lowest = chunk, n_diff = 0; /* the lowest position a differing image held */
    for (size_t k = 0; k < 3 && !failed; k++) {
        int declined = 0;
        probe_positions(f, d, pl, &g, forms[k], chunk, chunk / 2, flag, &declined);
        tried[k] = !declined;
        for (int64_t j = 0; j < chunk && tried[k]; j++)
            if (flag[j]) {
                const int64_t pa = j, pb = ((j - chunk / 2) % chunk + chunk) % chunk;
                const int64_t hi = pa > pb ? pa : pb;
                lowest = hi < lowest ? hi : lowest;
                n_diff++;
            }
    }
    const int64_t guard = chunk - lowest;
    pl->positional = n_diff;
    int holds = !failed && n_diff > 0 && guard <= chunk / 2;
    for (size_t k = 0; k < 3 && holds; k++) { /* the first chunk - guard positions give every image its bits */
        if (!tried[k])
            continue;
        probe_positions(f, d, pl, &g, forms[k], chunk - guard, 1, flag, &failed);
        for (int64_t j = 0; j < chunk - guard && holds; j++)
            holds = !failed && !flag[j];
    }
    if (holds)
        pl->guard = guard;
    (void)cudaFree(mem);
    free(flag);
    if (cudaGetLastError() != cudaSuccess)
        return ptq_fail(ctx, PTQ_ERR_CUDA, "the GPU failed while probing a convolution's positions");
    return PTQ_OK;
}

/* Fills pl for p; pl->usable stays 0 when cuDNN does not take the shape. */
static ptq_status plan_make(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_conv_params *p, ptq_cudnn_plan *pl)
{
    ptq_cudnn *f = &d->dnn;
    const cudnnMathType_t math = math_type(d);
    int taken = 0;
    pl->chunk = chunk_of(p);
    PTQ_TRY_RET(descs_make(ctx, f, p, pl->chunk, math, pl, &taken));
    if (!taken)
        return PTQ_OK;
    cudnnConvolutionFwdAlgoPerf_t perf[2 * CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int n_algos = 0;
    PTQ_TRY_RET(heuristic_list(ctx, f, pl, perf, (int)(sizeof perf / sizeof perf[0]), &n_algos));
    for (int i = 0; i < n_algos; i++) {
        const cudnnConvolutionFwdAlgoPerf_t *a = &perf[i];
        size_t ws = 0;
        if (a->status != CUDNN_STATUS_SUCCESS || a->determinism != CUDNN_DETERMINISTIC || a->mathType != math ||
            !allowed(a->algo))
            continue;
        PLAN_CALL(f->workspace_size(f->handle, pl->x_desc, pl->w_desc, pl->conv, pl->y_desc, a->algo, &ws));
        if (ws > CUDNN_WORKSPACE_MAX)
            continue;
        pl->algo = a->algo;
        pl->workspace_bytes = ws;
        pl->usable = 1;
        break;
    }
    if (pl->usable)
        PTQ_TRY_RET(tune(ctx, d, p, pl, perf, n_algos));
    if (pl->usable && d->math == PTQ_CUDA_MATH_TF32)
        PTQ_TRY_RET(position_guard(ctx, d, p, pl));
    return PTQ_OK;
}

/* The plan of p's layer, made on first sight. */
static ptq_status plan_for(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_conv_params *p, ptq_cudnn_plan **out)
{
    ptq_conv_params key = *p;
    key.n = 0;
    *out = NULL;
    ptq_cudnn *f = &d->dnn;
    for (int i = 0; i < f->n_plans; i++)
        if (memcmp(&f->plans[i].key, &key, sizeof key) == 0) {
            *out = &f->plans[i];
            return PTQ_OK;
        }
    if (f->n_plans == f->cap_plans) {
        int cap = f->cap_plans ? 2 * f->cap_plans : 64;
        ptq_cudnn_plan *grown = (ptq_cudnn_plan *)realloc(f->plans, (size_t)cap * sizeof *grown);
        if (!grown)
            return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory planning a cuDNN convolution");
        f->plans = grown;
        f->cap_plans = cap;
    }
    ptq_cudnn_plan *pl = &f->plans[f->n_plans];
    memset(pl, 0, sizeof *pl);
    pl->key = key;
    ptq_status st = plan_make(ctx, d, p, pl);
    if (st != PTQ_OK) {
        plan_free(f, pl);
        return st;
    }
    f->n_plans++;
    *out = pl;
    return PTQ_OK;
}

static int aligned16(const void *ptr)
{
    return ((uintptr_t)ptr & 15) == 0;
}

/* ptq_conv_cudnn in one convolution over all of p's input channels; acc
 * (no b, z or relu): y += conv(x) instead. */
static ptq_status conv_whole(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_conv_params *p, const float *x, const float *w,
                             const float *b, const float *z, int relu, int acc, float *y, int *done)
{
    ptq_cudnn *f = &d->dnn;
    *done = 0;
    ptq_cudnn_plan *pl = NULL;
    PTQ_TRY_RET(plan_for(ctx, d, p, &pl));
    if (!pl->usable)
        return PTQ_OK;
    /* a residual or Relu goes into the epilogue with the bias; cuDNN's identity activation takes only this algorithm */
    const int epilogue = z || relu;
    const int precomp = pl->algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
    if (epilogue && (!b || pl->no_fuse || pl->no_fuse_epilogue || (!relu && !precomp)))
        return PTQ_OK;
    const unsigned form = form_of(b, z, relu);
    const int64_t x_img = img_numel(p->c_in, p->in), y_img = img_numel(p->c_out, p->out);
    const size_t ws_bytes =
        pl->has_fast && pl->fast.workspace_bytes > pl->workspace_bytes ? pl->fast.workspace_bytes : pl->workspace_bytes;
    PTQ_TRY_RET(ptq_cuda_grow(ctx, d, ws_bytes, &f->workspace, &f->workspace_bytes));
    void *ws = f->workspace;
    const char *call = "";
    cudnnStatus_t s = CUDNN_STATUS_SUCCESS;
    int64_t img0 = 0;
    /* whole chunks of the tuned configuration first, where it gives this form's bits (tune()) */
    const cudnn_cfg *fast = pl->has_fast && !pl->guard && (pl->fast_forms & form) ? &pl->fast : NULL;
    for (; fast && img0 + fast->chunk <= p->n; img0 += fast->chunk) {
        const float *xc = x + img0 * x_img, *zc = z ? z + img0 * y_img : NULL;
        float *yc = y + img0 * y_img;
        if (!aligned16(xc) || !aligned16(yc) || (zc && !aligned16(zc)))
            break; /* the rest through the reference's padded copies */
        s = form_call(f, pl, fast, form, fuses_bias(pl, fast), acc, xc, w, b, zc, yc, ws, &call);
        /* declined at its first run: the reference, from the start (unless chunks were already added into y) */
        if (s != CUDNN_STATUS_SUCCESS && pl->runs == 0 && (img0 == 0 || !acc)) {
            pl->has_fast = 0;
            img0 = 0;
            break;
        }
        if (s != CUDNN_STATUS_SUCCESS)
            return ptq_fail(ctx, PTQ_ERR_CUDA, "cuDNN %s failed (tuned: algorithm %d, %lld images a call): %s (status %d)",
                            call, (int)fast->algo, (long long)fast->chunk, f->error_string(s), (int)s);
    }
    const int64_t first = img0, chunk = pl->chunk, step = chunk - pl->guard;
    const cudnn_cfg ref = ref_cfg(pl);
    float *x_pad = NULL, *y_pad = NULL, *z_pad = NULL; /* [chunk, c_in, in...], [chunk, c_out, out...] x2 */
    for (; img0 < p->n; img0 += step) {
        const int64_t n_valid = p->n - img0 < step ? p->n - img0 : step;
        const float *xc = x + img0 * x_img, *zc = z ? z + img0 * y_img : NULL;
        float *yc = y + img0 * y_img;
        /* a short or misaligned chunk goes through the padded copies: same shape, same algorithm */
        const int padded = n_valid < chunk || !aligned16(xc) || !aligned16(yc) || (zc && !aligned16(zc));
        if (padded) {
            if (!x_pad) {
                const int64_t x_room = (chunk * x_img + 3) / 4 * 4, y_room = (chunk * y_img + 3) / 4 * 4;
                void *scratch = NULL; /* y_pad and z_pad start 16-byte aligned */
                PTQ_TRY_RET(ptq_cuda_scratch(ctx, d, (size_t)(x_room + (z ? 2 : 1) * y_room) * sizeof(float),
                                             &scratch));
                x_pad = (float *)scratch;
                y_pad = x_pad + x_room;
                z_pad = z ? y_pad + y_room : NULL;
            }
            PTQ_TRY_RET(ptq_cuda_copy(ctx, d, x_pad, xc, (size_t)(n_valid * x_img) * sizeof(float)));
            if (n_valid < chunk)
                PTQ_TRY_RET(ptq_cuda_fill_bytes(ctx, d, x_pad + n_valid * x_img, 0,
                                                (size_t)((chunk - n_valid) * x_img) * sizeof(float)));
            if (zc) {
                PTQ_TRY_RET(ptq_cuda_copy(ctx, d, z_pad, zc, (size_t)(n_valid * y_img) * sizeof(float)));
                if (n_valid < chunk)
                    PTQ_TRY_RET(ptq_cuda_fill_bytes(ctx, d, z_pad + n_valid * y_img, 0,
                                                    (size_t)((chunk - n_valid) * y_img) * sizeof(float)));
                zc = z_pad;
            }
            if (acc) /* the sum so far, which the call adds to */
                PTQ_TRY_RET(ptq_cuda_copy(ctx, d, y_pad, yc, (size_t)(n_valid * y_img) * sizeof(float)));
            xc = x_pad;
            yc = y_pad;
        }
        const int fuse = form == FORM_BIAS && fuses_bias(pl, &ref);
        s = form_call(f, pl, &ref, form, fuse, acc, xc, w, b, zc, yc, ws, &call);
        if (s != CUDNN_STATUS_SUCCESS && pl->runs == 0 && img0 == 0) {
            if (epilogue) { /* declined: the executor runs them apart */
                pl->no_fuse_epilogue = 1;
                return PTQ_OK;
            }
            if (fuse) { /* declined: the bias added apart from now on, and no tuned form verified with it fused */
                pl->no_fuse = 1;
                pl->has_fast = 0;
                s = form_call(f, pl, &ref, form, 0, acc, xc, w, b, zc, yc, ws, &call);
            }
        }
        if (s != CUDNN_STATUS_SUCCESS) {
            if (pl->runs > 0 || epilogue || first > 0)
                return ptq_fail(ctx, PTQ_ERR_CUDA, "cuDNN %s failed: %s (status %d)", call, f->error_string(s),
                                (int)s);
            /* a shape the heuristic offered but its first run declines: im2col + cuBLAS from now on,
             * this call included (it rewrites all of y) */
            PTQ_TRY_RET(plan_status(ctx, f, s, call));
            pl->usable = 0;
            return PTQ_OK;
        }
        if (padded)
            PTQ_TRY_RET(ptq_cuda_copy(ctx, d, y + img0 * y_img, y_pad, (size_t)(n_valid * y_img) * sizeof(float)));
    }
    pl->runs++;
    f->n_runs++;
    if (epilogue)
        f->n_epilogue++;
    if (first > 0)
        f->n_tuned_runs++;
    char tuned[112];
    if (pl->has_fast)
        snprintf(tuned, sizeof tuned, "; tuned: algo %d, %lld images a call, %.3f ms against %.3f (%d of %d same)",
                 (int)pl->fast.algo, (long long)pl->fast.chunk, pl->fast_ms, pl->ref_ms, pl->n_same, pl->n_cand);
    else
        snprintf(tuned, sizeof tuned, "; untuned (%d of %d candidates same)", pl->n_same, pl->n_cand);
    char guarded[64] = "";
    if (pl->guard)
        snprintf(guarded, sizeof guarded, ", the last %lld left empty", (long long)pl->guard);
    snprintf(f->last, sizeof f->last, "algo %d, %lld images a call%s, %zu bytes of workspace%s%s%s", (int)pl->algo,
             (long long)chunk, guarded, pl->workspace_bytes, z ? ", residual in the epilogue" : "",
             relu ? ", relu in the epilogue" : "", tuned);
    *done = 1;
    return PTQ_OK;
}

/* PTQ_CONV_SPLIT=T (a diagnostic, unset by default): FP32 convolutions of
 * more than T taps (input channels x kernel size) sum their input channels
 * in slices of about T taps (multiples of 8 channels), each slice's sum
 * added into the output in order, so no cuDNN call sums an output's
 * products in a chain much longer than T. It was to bring
 * efficientnet_v2_l's ill-conditioned images nearer float64, as the im2col
 * path's PTQ_KSPLIT does; through cuDNN it does not
 * (bench/results/2026-12-04-zoo-v2l-cudnn-split-h200.md), so it stays off. */
#define SPLIT_ALIGN 8                     /* a slice's channels: a multiple of this (the last one the rest) */
#define SPLIT_X_BYTES ((size_t)256 << 20) /* bound on the copy of a slice's input channels */

/* Input channels per slice for p, or 0 when p runs whole: PTQ_CONV_SPLIT
 * set, FP32 math, channels first, one group, more taps than it says. */
static int64_t split_channels(const ptq_cuda_dev *d, const ptq_conv_params *p)
{
    const char *env = getenv("PTQ_CONV_SPLIT");
    const long long bound = env ? atoll(env) : 0;
    const int64_t taps = p->k[0] * p->k[1] * p->k[2];
    if (bound <= 0 || d->math == PTQ_CUDA_MATH_TF32 || p->nhwc || p->group != 1 || p->c_in * taps <= bound)
        return 0;
    const int64_t n_slices = (p->c_in * taps + bound - 1) / bound;
    int64_t c = (p->c_in + n_slices - 1) / n_slices;
    c = (c + SPLIT_ALIGN - 1) / SPLIT_ALIGN * SPLIT_ALIGN;
    return c < p->c_in ? c : 0;
}

/* p's slice of input channels c0.. (cs of them, fewer in the last). */
static ptq_conv_params slice_of(const ptq_conv_params *p, int64_t c0, int64_t cs, int64_t n)
{
    ptq_conv_params ps = *p;
    ps.c_in = p->c_in - c0 < cs ? p->c_in - c0 : cs;
    ps.n = n;
    return ps;
}

/* y = conv(x) + b as a sum over slices of cs input channels: the weights'
 * slices copied side by side once, then per group of images the inputs'
 * slice copied packed and convolved, the first into y with the bias, the
 * others added into it (cuDNN's beta 1). Epilogue forms (z, relu) are
 * declined, so the executor runs them apart; a slice shape cuDNN declines
 * gives the whole convolution back to the caller (*done = 0). */
static ptq_status conv_split(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_conv_params *p, int64_t cs, const float *x,
                             const float *w, const float *b, const float *z, int relu, float *y, int *done)
{
    *done = 0;
    if (z || relu)
        return PTQ_OK;
    const int64_t in_sz = p->in[0] * p->in[1] * p->in[2], taps = p->k[0] * p->k[1] * p->k[2];
    const int64_t x_img = p->c_in * in_sz, y_img = img_numel(p->c_out, p->out);
    int64_t group = 1; /* images a pass: a multiple of every slice's chunk (powers of two), the copy bounded */
    for (int64_t c0 = 0; c0 < p->c_in; c0 += cs) {
        const ptq_conv_params ps = slice_of(p, c0, cs, 0);
        ptq_cudnn_plan *pl = NULL;
        PTQ_TRY_RET(plan_for(ctx, d, &ps, &pl));
        if (!pl->usable)
            return PTQ_OK;
        if (pl->chunk > group)
            group = pl->chunk;
    }
    while (group * 2 <= p->n && (size_t)(group * 2 * cs * in_sz) * sizeof(float) <= SPLIT_X_BYTES)
        group *= 2;
    const int64_t w_room = (p->c_out * p->c_in * taps + 3) / 4 * 4;
    ptq_cudnn *f = &d->dnn;
    PTQ_TRY_RET(ptq_cuda_grow(ctx, d, (size_t)(w_room + group * cs * in_sz) * sizeof(float), &f->slices,
                              &f->slices_bytes));
    float *ws = (float *)f->slices, *xs = ws + w_room;
    for (int64_t c0 = 0; c0 < p->c_in; c0 += cs) { /* slice c0's weights [c_out, cs, taps] at c_out * c0 * taps */
        const size_t row = (size_t)(slice_of(p, c0, cs, 0).c_in * taps) * sizeof(float);
        cudaError_t e = cudaMemcpy2DAsync(ws + p->c_out * c0 * taps, row, w + c0 * taps,
                                          (size_t)(p->c_in * taps) * sizeof(float), row, (size_t)p->c_out,
                                          cudaMemcpyDeviceToDevice, d->stream);
        if (e != cudaSuccess)
            return ptq_fail(ctx, PTQ_ERR_CUDA, "conv: copying the weights of input channels %lld..: %s",
                            (long long)c0, cudaGetErrorString(e));
    }
    for (int64_t img0 = 0; img0 < p->n; img0 += group) {
        const int64_t n = p->n - img0 < group ? p->n - img0 : group;
        for (int64_t c0 = 0; c0 < p->c_in; c0 += cs) {
            const ptq_conv_params ps = slice_of(p, c0, cs, n);
            const size_t row = (size_t)(ps.c_in * in_sz) * sizeof(float);
            cudaError_t e = cudaMemcpy2DAsync(xs, row, x + img0 * x_img + c0 * in_sz, (size_t)x_img * sizeof(float),
                                              row, (size_t)n, cudaMemcpyDeviceToDevice, d->stream);
            if (e != cudaSuccess)
                return ptq_fail(ctx, PTQ_ERR_CUDA, "conv: copying input channels %lld..%lld: %s", (long long)c0,
                                (long long)(c0 + ps.c_in - 1), cudaGetErrorString(e));
            int ran = 0;
            PTQ_TRY_RET(conv_whole(ctx, d, &ps, xs, ws + p->c_out * c0 * taps, c0 ? NULL : b, NULL, 0, c0 > 0,
                                   y + img0 * y_img, &ran));
            if (!ran && (img0 > 0 || c0 > 0))
                return ptq_fail(ctx, PTQ_ERR_CUDA, "cuDNN declined input channels %lld..%lld of a convolution "
                                "after running others (PTQ_CONV_SPLIT=0 runs it whole)",
                                (long long)c0, (long long)(c0 + ps.c_in - 1));
            if (!ran)
                return PTQ_OK;
        }
    }
    f->n_split++;
    *done = 1;
    return PTQ_OK;
}

/* A patch embedding: group 1, channels first, every spatial kernel dim
 * equal to its stride (the kernel tiles the input: im2col is a permutation),
 * no padding or dilation, 64 or more taps a channel (ViT's 16 x 16 stride
 * 16). conv.cu's im2col + one cuBLAS SGEMM ran ViT-B/16's in 80 and 118 ms
 * (two runs) at 1,024 images on an H100 against cuDNN's 153 in the GEMM-like
 * algorithms ptq allows (bench/results/2026-12-06-vit-gpu-2-h100.md);
 * smaller patches are not measured and stay with cuDNN. */
static int patch_embedding(const ptq_conv_params *p)
{
    if (p->group != 1 || p->nhwc || p->k[0] * p->k[1] * p->k[2] < 64)
        return 0;
    for (int s = 0; s < PTQ_SPATIAL; s++)
        if (p->stride[s] != p->k[s] || p->pad_lo[s] != 0 || p->pad_hi[s] != 0 || p->dil[s] != 1)
            return 0;
    return 1;
}

ptq_status ptq_conv_cudnn(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_conv_params *p, const float *x, const float *w,
                          const float *b, const float *z, int relu, float *y, int *done)
{
    *done = 0;
    if (!d->dnn.enabled || patch_embedding(p))
        return PTQ_OK;
    /* diagnostics for bench/zoo_diag.py: PTQ_CUDNN_GROUPED=0, _POINTWISE=0, _SPATIAL=0 send grouped, one-group
     * 1x1 or one-group larger-kernel convolutions to conv.cu's kernels */
    const int pointwise = p->k[0] * p->k[1] * p->k[2] == 1;
    const char *off =
        getenv(p->group > 1 ? "PTQ_CUDNN_GROUPED" : pointwise ? "PTQ_CUDNN_POINTWISE" : "PTQ_CUDNN_SPATIAL");
    if (off && strcmp(off, "0") == 0)
        return PTQ_OK;
    const int64_t cs = split_channels(d, p);
    if (cs)
        return conv_split(ctx, d, p, cs, x, w, b, z, relu, y, done);
    return conv_whole(ctx, d, p, x, w, b, z, relu, 0, y, done);
}

/* Every forward algorithm cuDNN runs for p (p->n images a call) under d's
 * math, timed: a diagnostic for bench/cudnn_survey.c, not used by runs. */
ptq_status ptq_cudnn_survey(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_conv_params *p, ptq_cudnn_algo_time *out,
                            int cap, int *n_out)
{
    ptq_cudnn *f = &d->dnn;
    ptq_status st = PTQ_OK;
    *n_out = 0;
    if (!f->enabled)
        return ptq_fail(ctx, PTQ_ERR_NO_DEVICE, "%s", f->note);
    ptq_cudnn_plan pl;
    memset(&pl, 0, sizeof pl);
    void *x = NULL, *w = NULL, *y = NULL, *ws = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    int taken = 0, n_heur = 0;
    cudnnConvolutionFwdAlgoPerf_t perf[2 * CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    const cudnnMathType_t math = math_type(d);
    PTQ_TRY(st, descs_make(ctx, f, p, p->n, math, &pl, &taken), done);
    if (!taken) {
        st = ptq_fail(ctx, PTQ_ERR_UNSUPPORTED, "cuDNN does not take this convolution");
        goto done;
    }
    PTQ_TRY(st, heuristic_list(ctx, f, &pl, perf, (int)(sizeof perf / sizeof perf[0]), &n_heur), done);
    {
        const size_t xb = (size_t)(p->n * img_numel(p->c_in, p->in)) * sizeof(float);
        const size_t yb = (size_t)(p->n * img_numel(p->c_out, p->out)) * sizeof(float);
        const size_t wb = (size_t)(p->c_out * (p->c_in / p->group) * p->k[0] * p->k[1] * p->k[2]) * sizeof(float);
        if (cudaMalloc(&x, xb) != cudaSuccess || cudaMalloc(&y, yb) != cudaSuccess || cudaMalloc(&w, wb) != cudaSuccess ||
            cudaMemset(x, 0, xb) != cudaSuccess || cudaMemset(w, 0, wb) != cudaSuccess ||
            cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess) {
            st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of device memory surveying a convolution");
            goto done;
        }
    }
    for (int a = 0; a < CUDNN_CONVOLUTION_FWD_ALGO_COUNT && *n_out < cap; a++) {
        ptq_cudnn_algo_time *r = &out[*n_out];
        memset(r, 0, sizeof *r);
        r->algo = a;
        r->heuristic_rank = -1;
        for (int i = 0; i < n_heur; i++)
            if ((int)perf[i].algo == a && perf[i].mathType == math) {
                r->heuristic_rank = i;
                r->deterministic = perf[i].determinism == CUDNN_DETERMINISTIC;
                r->status = (int)perf[i].status;
                break;
            }
        r->allowed = allowed((cudnnConvolutionFwdAlgo_t)a);
        size_t wsb = 0;
        if (f->workspace_size(f->handle, pl.x_desc, pl.w_desc, pl.conv, pl.y_desc, (cudnnConvolutionFwdAlgo_t)a, &wsb) !=
            CUDNN_STATUS_SUCCESS)
            continue;
        r->workspace = wsb;
        if (ws)
            (void)cudaFree(ws);
        ws = NULL;
        if (wsb && cudaMalloc(&ws, wsb) != cudaSuccess)
            continue;
        const float one = 1.0f, zero = 0.0f;
        cudnnStatus_t cs = CUDNN_STATUS_SUCCESS;
        for (int rep = 0; rep < 5 && cs == CUDNN_STATUS_SUCCESS; rep++) {
            if (rep == 1)
                (void)cudaEventRecord(e0, d->stream);
            cs = f->conv_forward(f->handle, &one, pl.x_desc, x, pl.w_desc, w, pl.conv, (cudnnConvolutionFwdAlgo_t)a, ws,
                                 wsb, &zero, pl.y_desc, y);
        }
        if (cs != CUDNN_STATUS_SUCCESS)
            continue;
        (void)cudaEventRecord(e1, d->stream);
        if (cudaEventSynchronize(e1) != cudaSuccess) {
            st = ptq_fail(ctx, PTQ_ERR_CUDA, "a convolution failed while surveying algorithm %d", a);
            goto done;
        }
        float ms = 0;
        (void)cudaEventElapsedTime(&ms, e0, e1);
        r->ms = ms / 4;
        r->ran = 1;
        (*n_out)++;
    }
done:
    if (ws)
        (void)cudaFree(ws);
    if (x)
        (void)cudaFree(x);
    if (w)
        (void)cudaFree(w);
    if (y)
        (void)cudaFree(y);
    if (e0)
        (void)cudaEventDestroy(e0);
    if (e1)
        (void)cudaEventDestroy(e1);
    plan_free(f, &pl);
    return st;
}

#endif
