/* The CUDA device object: GPU discovery, its stream and cuBLAS handle
 * (cuBLAS opened with dlopen here, see cuda_common.cuh; FP32 math: TF32
 * stays off so results match kernels/ref), cuDNN when it can be loaded
 * (kernels/cuda/cudnn.cu), device memory
 * and host<->device copies on that stream, and the scratch buffer the conv
 * kernels carve im2col columns from. Covered by tests/cuda_backend_exec.c. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda/cuda_common.cuh"

extern "C" int ptq_cuda_device_count(char *why, size_t n_why)
{
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess) {
        /* the runtime also says "insufficient driver" when there is no driver at all */
        const char *hint = err == cudaErrorInsufficientDriver ? "; no NVIDIA driver, or an older one" : "";
        if (why && n_why)
            snprintf(why, n_why, "cudaGetDeviceCount failed: %s (%s)%s", cudaGetErrorString(err),
                     cudaGetErrorName(err), hint);
        return 0;
    }
    if (n <= 0 && why && n_why)
        snprintf(why, n_why, "the CUDA runtime sees no GPU");
    return n > 0 ? n : 0;
}

#define PTQ_STR_(x) #x
#define PTQ_STR(x) PTQ_STR_(x) /* the exported name a cublas_v2.h macro stands for */

/* Opens libcublas (by soname through the loader's path, then where the
 * toolkit that built ptq keeps it, then the usual CUDA homes) and finds the
 * entry points ptq calls. */
static ptq_status load_cublas(ptq_ctx *ctx, ptq_cublas_fns *f)
{
    static const char *const names[] = {"libcublas.so." PTQ_STR(CUBLAS_VER_MAJOR),
                                        PTQ_CUBLAS_DIR "/libcublas.so." PTQ_STR(CUBLAS_VER_MAJOR),
                                        "/usr/local/cuda/lib64/libcublas.so." PTQ_STR(CUBLAS_VER_MAJOR),
                                        "/usr/local/cuda/lib/libcublas.so." PTQ_STR(CUBLAS_VER_MAJOR)};
    char why[512] = "";
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !f->lib; i++) {
        f->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!f->lib && i == 0)
            snprintf(why, sizeof why, "%s", dlerror());
    }
    if (!f->lib)
        return ptq_fail(ctx, PTQ_ERR_NO_DEVICE, "cannot load cuBLAS: %s (set LD_LIBRARY_PATH to CUDA's lib folder)",
                        why);
#define PTQ_LOAD(field, fn)                                                                            \
    do {                                                                                              \
        *(void **)&f->field = dlsym(f->lib, PTQ_STR(fn));                                             \
        if (!f->field)                                                                                \
            return ptq_fail(ctx, PTQ_ERR_NO_DEVICE, "cuBLAS has no %s: %s", PTQ_STR(fn), dlerror());   \
    } while (0)
    PTQ_LOAD(create, cublasCreate);
    PTQ_LOAD(destroy, cublasDestroy);
    PTQ_LOAD(set_stream, cublasSetStream);
    PTQ_LOAD(set_math_mode, cublasSetMathMode);
    PTQ_LOAD(sgemm, cublasSgemm);
    PTQ_LOAD(sgemm_strided_batched, cublasSgemmStridedBatched);
    PTQ_LOAD(dgemm, cublasDgemm);
    PTQ_LOAD(dgemm_strided_batched, cublasDgemmStridedBatched);
    PTQ_LOAD(status_string, cublasGetStatusString);
#undef PTQ_LOAD
    void **lt[] = {(void **)&f->lt_create, (void **)&f->lt_destroy, (void **)&f->lt_desc_create,
                   (void **)&f->lt_desc_destroy, (void **)&f->lt_desc_set, (void **)&f->lt_layout_create,
                   (void **)&f->lt_layout_destroy, (void **)&f->lt_pref_create, (void **)&f->lt_pref_destroy,
                   (void **)&f->lt_pref_set, (void **)&f->lt_heuristic, (void **)&f->lt_algo_get,
                   (void **)&f->lt_matmul};
    static const char *const lt_names[] = {"cublasLtCreate", "cublasLtDestroy", "cublasLtMatmulDescCreate",
                                           "cublasLtMatmulDescDestroy", "cublasLtMatmulDescSetAttribute",
                                           "cublasLtMatrixLayoutCreate", "cublasLtMatrixLayoutDestroy",
                                           "cublasLtMatmulPreferenceCreate", "cublasLtMatmulPreferenceDestroy",
                                           "cublasLtMatmulPreferenceSetAttribute", "cublasLtMatmulAlgoGetHeuristic",
                                           "cublasLtMatmulAlgoConfigGetAttribute", "cublasLtMatmul"};
    int have_lt = 1;
    for (size_t i = 0; i < sizeof lt / sizeof lt[0]; i++)
        have_lt &= (*lt[i] = dlsym(f->lib, lt_names[i])) != NULL;
    if (!have_lt) /* optional: GEMMs then go through cublasSgemm alone */
        f->lt_create = NULL;
    return PTQ_OK;
}

static ptq_status dev_init(ptq_ctx *ctx, ptq_cuda_dev *d, int device_index)
{
    int n = 0;
    PTQ_CUDA_CHECK(ctx, cudaGetDeviceCount(&n));
    if (device_index < 0 || device_index >= n)
        return ptq_fail(ctx, PTQ_ERR_NO_DEVICE, "GPU %d requested, but the CUDA runtime sees %d", device_index, n);
    cudaDeviceProp prop;
    PTQ_CUDA_CHECK(ctx, cudaGetDeviceProperties(&prop, device_index));
    if (prop.major < 8)
        return ptq_fail(ctx, PTQ_ERR_NO_DEVICE, "GPU %d (%s) has compute capability %d.%d; ptq is built for 8.0+",
                        device_index, prop.name, prop.major, prop.minor);
    snprintf(d->name, sizeof d->name, "%s", prop.name);
    PTQ_CUDA_CHECK(ctx, cudaSetDevice(device_index));
    d->index = device_index;
    PTQ_CUDA_CHECK(ctx, cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking));
    PTQ_TRY_RET(load_cublas(ctx, &d->blas));
    PTQ_CUBLAS(ctx, d, create, &d->cublas);
    PTQ_CUBLAS(ctx, d, set_stream, d->cublas, d->stream);
    PTQ_CUBLAS(ctx, d, set_math_mode, d->cublas, CUBLAS_DEFAULT_MATH);
    const char *lt_off = getenv("PTQ_GEMM_LT");
    if (d->blas.lt_create && !(lt_off && strcmp(lt_off, "0") == 0))
        PTQ_CUBLAS(ctx, d, lt_create, &d->lt);
    ptq_cudnn_open(d);
    return PTQ_OK;
}

extern "C" ptq_status ptq_cuda_dev_create(ptq_ctx *ctx, int device_index, ptq_cuda_dev **out)
{
    *out = NULL;
    ptq_cuda_dev *d = (ptq_cuda_dev *)calloc(1, sizeof *d);
    if (!d)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory creating the CUDA device object");
    ptq_status st = dev_init(ctx, d, device_index);
    if (st != PTQ_OK) {
        ptq_cuda_dev_free(d);
        return st;
    }
    *out = d;
    return PTQ_OK;
}

/* Teardown cannot report: failures here leave nothing the caller could act on. */
extern "C" void ptq_cuda_dev_free(ptq_cuda_dev *d)
{
    if (!d)
        return;
    if (d->stream)
        (void)cudaStreamSynchronize(d->stream);
    if (d->scratch)
        (void)cudaFree(d->scratch);
    ptq_cudnn_close(d);
    if (d->cublas)
        (void)d->blas.destroy(d->cublas);
    if (d->lt)
        (void)d->blas.lt_destroy(d->lt);
    free(d->lt_plans);
    if (d->lt_ws)
        (void)cudaFree(d->lt_ws);
    if (d->stream)
        (void)cudaStreamDestroy(d->stream);
    if (d->blas.lib)
        (void)dlclose(d->blas.lib);
    free(d);
}

extern "C" const char *ptq_cuda_dev_name(const ptq_cuda_dev *d)
{
    return d->name;
}

extern "C" const char *ptq_cuda_dev_note(const ptq_cuda_dev *d)
{
    return d->dnn.note;
}

extern "C" int ptq_cuda_dev_set_cudnn(ptq_cuda_dev *d, int on)
{
#ifdef PTQ_CUDNN
    d->dnn.enabled = on && d->dnn.handle != NULL;
#else
    (void)on;
#endif
    return d->dnn.enabled;
}

extern "C" void ptq_cuda_dev_drop_conv_plans(ptq_cuda_dev *d)
{
    ptq_cudnn_drop_plans(d);
}

extern "C" void ptq_cuda_dev_set_math(ptq_cuda_dev *d, int math)
{
    if (d->math == math)
        return;
    d->math = math;
    ptq_cudnn_drop_plans(d);
    /* a failure here leaves cuBLAS in its last mode; the next gemm's checks report a broken handle */
    (void)d->blas.set_math_mode(d->cublas, math == PTQ_CUDA_MATH_TF32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
}

extern "C" int64_t ptq_cuda_dev_lt_runs(const ptq_cuda_dev *d, const char **last)
{
    if (last)
        *last = d->lt_last;
    return d->n_lt_runs;
}

extern "C" int64_t ptq_cuda_dev_epilogue_runs(const ptq_cuda_dev *d)
{
    return d->dnn.n_epilogue;
}

extern "C" int64_t ptq_cuda_dev_cudnn_runs(const ptq_cuda_dev *d, const char **last)
{
    if (last)
        *last = d->dnn.last;
    return d->dnn.n_runs;
}

extern "C" int64_t ptq_cuda_dev_cudnn_splits(const ptq_cuda_dev *d)
{
    return d->dnn.n_split;
}

extern "C" int64_t ptq_cuda_dev_cudnn_tuned_runs(const ptq_cuda_dev *d)
{
    return d->dnn.n_tuned_runs;
}

extern "C" ptq_status ptq_cuda_alloc(ptq_ctx *ctx, ptq_cuda_dev *d, size_t n_bytes, void **out)
{
    *out = NULL;
    void *p = NULL;
    size_t free_bytes = 0, total_bytes = 0;
    /* a request past what the device has free is named before it is made (exit 10, not a CUDA error) */
    if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess && n_bytes > free_bytes)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "%zu MiB wanted on GPU %d (%s), which has %zu MiB free of %zu",
                        n_bytes >> 20, d->index, d->name, free_bytes >> 20, total_bytes >> 20);
    (void)cudaGetLastError();
    /* never a zero-byte request: an empty tensor still gets a distinct pointer */
    cudaError_t err = cudaMalloc(&p, n_bytes ? n_bytes : 256);
    if (err == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError(); /* so the next launch check does not report it */
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "cudaMalloc of %zu bytes on GPU %d (%s) failed: %s", n_bytes, d->index,
                        d->name, cudaGetErrorString(err));
    }
    if (err != cudaSuccess)
        return ptq_cuda_fail_at(ctx, __FILE__, __LINE__, err, "cudaMalloc");
    *out = p;
    return PTQ_OK;
}

static void note_late(ptq_cuda_dev *d, cudaError_t err, const char *call)
{
    if (err != cudaSuccess && !d->late_err[0])
        snprintf(d->late_err, sizeof d->late_err, "%s failed: %s (%s)", call, cudaGetErrorString(err),
                 cudaGetErrorName(err));
}

extern "C" void ptq_cuda_release(ptq_cuda_dev *d, void *p)
{
    if (!p)
        return;
    note_late(d, cudaStreamSynchronize(d->stream), "cudaStreamSynchronize before cudaFree");
    note_late(d, cudaFree(p), "cudaFree");
}

extern "C" ptq_status ptq_cuda_upload_async(ptq_ctx *ctx, ptq_cuda_dev *d, void *dst, const void *host_src,
                                            size_t n_bytes)
{
    if (n_bytes)
        PTQ_CUDA_CHECK(ctx, cudaMemcpyAsync(dst, host_src, n_bytes, cudaMemcpyHostToDevice, d->stream));
    return PTQ_OK;
}

extern "C" ptq_status ptq_cuda_host_alloc(ptq_ctx *ctx, size_t n_bytes, void **out)
{
    *out = NULL;
    cudaError_t err = cudaHostAlloc(out, n_bytes ? n_bytes : 1, cudaHostAllocDefault);
    if (err != cudaSuccess) {
        *out = NULL;
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "cannot page-lock %zu bytes of host memory: %s", n_bytes,
                        cudaGetErrorString(err));
    }
    return PTQ_OK;
}

extern "C" void ptq_cuda_host_free(void *p)
{
    if (p)
        (void)cudaFreeHost(p);
}

extern "C" ptq_status ptq_cuda_upload(ptq_ctx *ctx, ptq_cuda_dev *d, void *dst, const void *host_src, size_t n_bytes)
{
    if (!n_bytes)
        return PTQ_OK;
    PTQ_CUDA_CHECK(ctx, cudaMemcpyAsync(dst, host_src, n_bytes, cudaMemcpyHostToDevice, d->stream));
    /* From pageable memory the copy has left host_src when it returns; from
     * page-locked memory it has not, so wait to keep the reuse promise. */
    cudaPointerAttributes attr;
    PTQ_CUDA_CHECK(ctx, cudaPointerGetAttributes(&attr, host_src));
    if (attr.type == cudaMemoryTypeHost)
        PTQ_CUDA_CHECK(ctx, cudaStreamSynchronize(d->stream));
    return PTQ_OK;
}

extern "C" ptq_status ptq_cuda_download(ptq_ctx *ctx, ptq_cuda_dev *d, void *host_dst, const void *src,
                                        size_t n_bytes)
{
    if (n_bytes)
        PTQ_CUDA_CHECK(ctx, cudaMemcpyAsync(host_dst, src, n_bytes, cudaMemcpyDeviceToHost, d->stream));
    PTQ_CUDA_CHECK(ctx, cudaStreamSynchronize(d->stream));
    return PTQ_OK;
}

extern "C" ptq_status ptq_cuda_copy(ptq_ctx *ctx, ptq_cuda_dev *d, void *dst, const void *src, size_t n_bytes)
{
    if (n_bytes && dst != src)
        PTQ_CUDA_CHECK(ctx, cudaMemcpyAsync(dst, src, n_bytes, cudaMemcpyDeviceToDevice, d->stream));
    return PTQ_OK;
}

extern "C" ptq_status ptq_cuda_copy_2d(ptq_ctx *ctx, ptq_cuda_dev *d, void *dst, size_t dst_pitch, const void *src,
                                       size_t src_pitch, size_t row_bytes, int64_t n_rows)
{
    if (row_bytes && n_rows > 0)
        PTQ_CUDA_CHECK(ctx, cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, row_bytes, (size_t)n_rows,
                                              cudaMemcpyDeviceToDevice, d->stream));
    return PTQ_OK;
}

extern "C" ptq_status ptq_cuda_fill_bytes(ptq_ctx *ctx, ptq_cuda_dev *d, void *dst, int byte, size_t n_bytes)
{
    if (n_bytes)
        PTQ_CUDA_CHECK(ctx, cudaMemsetAsync(dst, byte, n_bytes, d->stream));
    return PTQ_OK;
}

extern "C" ptq_status ptq_cuda_sync(ptq_ctx *ctx, ptq_cuda_dev *d)
{
    PTQ_CUDA_CHECK(ctx, cudaStreamSynchronize(d->stream));
    if (d->late_err[0]) {
        ptq_status st = ptq_fail(ctx, PTQ_ERR_CUDA, "earlier on GPU %d: %s", d->index, d->late_err);
        d->late_err[0] = '\0';
        return st;
    }
    return PTQ_OK;
}

ptq_status ptq_cuda_grow(ptq_ctx *ctx, ptq_cuda_dev *d, size_t n_bytes, void **buf, size_t *buf_bytes)
{
    if (n_bytes <= *buf_bytes)
        return PTQ_OK;
    if (*buf) {
        PTQ_CUDA_CHECK(ctx, cudaStreamSynchronize(d->stream));
        PTQ_CUDA_CHECK(ctx, cudaFree(*buf));
        *buf = NULL;
        *buf_bytes = 0;
    }
    PTQ_TRY_RET(ptq_cuda_alloc(ctx, d, n_bytes, buf));
    *buf_bytes = n_bytes;
    return PTQ_OK;
}

ptq_status ptq_cuda_scratch(ptq_ctx *ctx, ptq_cuda_dev *d, size_t n_bytes, void **out)
{
    *out = NULL;
    PTQ_TRY_RET(ptq_cuda_grow(ctx, d, n_bytes, &d->scratch, &d->scratch_bytes));
    *out = d->scratch;
    return PTQ_OK;
}
