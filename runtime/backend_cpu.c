/* The host backends: "ref" runs every op's kernels/ref implementation,
 * "cpu" its kernels/cpu one (OpenBLAS + the core/parallel.h pool) where it has one.
 * Covered by tests/test_exec.c and the ONNX conformance run. */
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "runtime/backend.h"

static ptq_status host_alloc(ptq_backend *b, ptq_ctx *ctx, size_t n_bytes, void **out)
{
    /* 64-byte alignment for vector loads; never a zero-byte request, nor a size that wraps when rounded up */
    size_t rounded = (n_bytes + 63) & ~(size_t)63;
    if (rounded < n_bytes)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of host memory allocating %zu bytes", n_bytes);
    *out = aligned_alloc(64, rounded ? rounded : 64);
    if (!*out)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of host memory allocating %zu bytes", n_bytes);
    return PTQ_OK;
}

static void host_release(ptq_backend *b, void *p)
{
    free(p);
}

static ptq_status host_copy(ptq_backend *b, ptq_ctx *ctx, void *dst, const void *src, size_t n_bytes)
{
    if (n_bytes)
        memcpy(dst, src, n_bytes);
    return PTQ_OK;
}

static ptq_status host_sync(ptq_backend *b, ptq_ctx *ctx)
{
    return PTQ_OK;
}

static int host_supports(ptq_backend *b, const ptq_op_io *io)
{
    return 1;
}

static ptq_status host_run(ptq_backend *b, ptq_ctx *ctx, const ptq_op_io *io)
{
    const ptq_op_def *op = ptq_op_of(io);
    if (!op)
        return ptq_fail(ctx, PTQ_ERR_UNSUPPORTED, "node '%s': op %s is not supported", io->node->name,
                        io->node->op_type);
    int reference_only = b->impl != NULL;
    if (!reference_only && op->run_cpu)
        return op->run_cpu(ctx, io);
    return op->run_ref(ctx, io);
}

/* The cpu backend's Conv -> [Add] -> [Relu or Clip] chain (backend.h's conv_epilogue): the Add and the clamp to
 * [lo, hi] on each output tile right after its GEMM (ptq_k_conv_cpu_epilogue). */
static ptq_status host_conv_epilogue(ptq_backend *bk, ptq_ctx *ctx, const ptq_op_io *io, const ptq_tensor *z,
                                     float lo, float hi, int *done)
{
    ptq_conv_params p;
    *done = 0;
    if (ptq_op_conv_params(ctx, io, &p) != PTQ_OK)
        return PTQ_OK; /* the executor runs the node apart, which reports any error */
    const ptq_tensor *b = io->n_in > 2 ? io->in[2] : NULL;
    ptq_k_conv_cpu_epilogue(&p, io->in[0]->data, io->in[1]->data, b ? b->data : NULL, z ? z->data : NULL, lo, hi,
                            io->out[0]->data);
    *done = 1;
    return PTQ_OK;
}

static void host_destroy(ptq_backend *b)
{
    free(b);
}

static ptq_status host_erf_gelu(ptq_backend *b, ptq_ctx *ctx, const float *x, float *y, int64_t n, float c_div,
                                float c_add, float c_mul)
{
    (void)b;
    (void)ctx;
    ptq_k_erf_gelu_cpu(n, c_div, c_add, c_mul, x, y);
    return PTQ_OK;
}

/* The cpu backend's MatMul with a bias row (backend.h's matmul_bias): the rows of every batch stacked, one GEMM
 * whose tiles add the bias as they store (ptq_k_gemm_bias_cpu: the same bits as the two nodes). */
static ptq_status host_matmul_bias(ptq_backend *b, ptq_ctx *ctx, const ptq_op_io *io, const ptq_tensor *bias,
                                   int *done)
{
    (void)b;
    *done = 0;
    ptq_gemm_params p;
    int ok;
    const ptq_status st = ptq_op_matmul_bias_params(ctx, io, bias, &p, &ok);
    if (st != PTQ_OK || !ok)
        return st;
    ptq_k_gemm_bias_cpu(&p, io->in[0]->data, io->in[1]->data, bias->data, io->out[0]->data);
    *done = 1;
    return PTQ_OK;
}

ptq_status ptq_backend_cpu_create(ptq_ctx *ctx, int reference_only, ptq_backend **out)
{
    *out = NULL;
    ptq_backend *b = calloc(1, sizeof *b);
    if (!b)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory creating the cpu backend");
    b->name = reference_only ? "ref" : "cpu";
    b->mem = PTQ_MEM_HOST;
    b->impl = reference_only ? (void *)b : NULL; /* non-NULL marks the reference backend */
    b->alloc = host_alloc;
    b->release = host_release;
    b->upload = host_copy;
    b->download = host_copy;
    b->copy = host_copy;
    b->sync = host_sync;
    b->supports = host_supports;
    b->run = host_run;
    b->conv_epilogue = reference_only ? NULL : host_conv_epilogue;
    b->erf_gelu = reference_only ? NULL : host_erf_gelu; /* the reference runs the five nodes with erff */
    b->matmul_bias = reference_only ? NULL : host_matmul_bias;
    b->destroy = host_destroy;
    *out = b;
    return PTQ_OK;
}

void ptq_backend_free(ptq_backend *b)
{
    if (b)
        b->destroy(b);
}
