/* libFuzzer harness: what comes after the ONNX reader. A model that loads, folds and infers at batch 1 with at
 * most RUN_MAX_BYTES of values (larger ones are refused before anything runs, to keep the fuzzer fast) opens a
 * CPU session, runs one batch of deterministic inputs with calibration observing every tensor, then plans (the
 * calibrator, core, placement and target picked from the input's bytes), runs the plan simulated and exports it
 * as Q/DQ ONNX, loading the export back. scripts/fuzz.sh onnx_run SECONDS; PTQ_FUZZ_VERBOSE=1 in the environment
 * prints how far each input got and why it stopped (for checking what a corpus reaches); PTQ_FUZZ_PICK=N (0..255)
 * replaces the choices taken from the input's bytes; PTQ_FUZZ_KEEP_EXPORT=PATH keeps the Q/DQ export there. */
#include "fuzz_common.h"
#include "ptq/calib.h"
#include "ptq/fake_quant.h"
#include "ptq/graph.h"
#include "ptq/plan.h"
#include "ptq/qdq.h"
#include "ptq/runner.h"
#include "ptq/runtime.h"

/* Bytes of all the values of the model at batch 1 (constants included): past it, a model is not run. */
#define RUN_MAX_BYTES ((size_t)1 << 20)
#define RUN_SLOW_CALIB_TENSORS 3
#define RUN_SHA "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

/* Every value's bytes at batch 1, SIZE_MAX when a shape is unknown or too large. */
static size_t graph_bytes(ptq_ctx *ctx, ptq_graph *g)
{
    size_t sum = 0;
    if (ptq_graph_infer_shapes(ctx, g, 1) != PTQ_OK)
        return SIZE_MAX;
    for (int v = 0; v < g->n_values; v++) {
        const ptq_value *val = &g->values[v];
        ptq_tensor t = {val->dtype, val->ndim < 0 ? 0 : val->ndim, {0}, NULL, PTQ_MEM_HOST, 0};
        for (int d = 0; d < t.ndim; d++)
            t.dims[d] = val->dims[d] < 0 ? 1 : val->dims[d];
        const size_t b = ptq_tensor_bytes(&t);
        if (b > RUN_MAX_BYTES - sum) {
            ptq_fail(ctx, PTQ_ERR_NOMEM, "the values take more than %zu bytes at batch 1: not run", RUN_MAX_BYTES);
            return SIZE_MAX;
        }
        sum += b;
    }
    return sum;
}

/* Deterministic values for a graph input (dtype and shape of t): floats in [-2, 2], integers in [-2, 3] (so
 * indices count from either end), bools alternating. */
static void fill_input(ptq_tensor *t)
{
    const int64_t n = ptq_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        const int64_t k = i % 6 - 2;
        switch (t->dtype) {
        case PTQ_DT_FLOAT: ((float *)t->data)[i] = (float)((i * 37) % 101) / 25.0f - 2.0f; break;
        case PTQ_DT_DOUBLE: ((double *)t->data)[i] = (double)((i * 37) % 101) / 25.0 - 2.0; break;
        case PTQ_DT_INT64: ((int64_t *)t->data)[i] = k; break;
        case PTQ_DT_INT32: ((int32_t *)t->data)[i] = (int32_t)k; break;
        case PTQ_DT_INT16: ((int16_t *)t->data)[i] = (int16_t)k; break;
        case PTQ_DT_INT8: ((int8_t *)t->data)[i] = (int8_t)k; break;
        case PTQ_DT_UINT8: case PTQ_DT_BOOL: ((uint8_t *)t->data)[i] = (uint8_t)(i & 1); break;
        default: memset((char *)t->data + (size_t)i * ptq_dtype_size(t->dtype), 0, ptq_dtype_size(t->dtype));
        }
    }
}

/* Graph inputs of g at batch `batch` (other unknown dims 1), allocated and filled into in[g->n_inputs]; 0 on
 * success. */
static int make_inputs(const ptq_graph *g, int64_t batch, ptq_tensor *in)
{
    for (int i = 0; i < g->n_inputs; i++) {
        const ptq_value *val = &g->values[g->inputs[i]];
        ptq_tensor *t = &in[i];
        t->dtype = val->dtype;
        t->ndim = val->ndim < 0 ? 0 : val->ndim;
        for (int d = 0; d < t->ndim; d++)
            t->dims[d] = val->dims[d] >= 0 ? val->dims[d] : d == 0 ? batch : 1;
        const size_t b = ptq_tensor_bytes(t);
        if (!ptq_dtype_size(t->dtype) || b > RUN_MAX_BYTES || !(t->data = malloc(b + 1)))
            return -1;
        t->cap_bytes = b;
        fill_input(t);
    }
    return 0;
}

/* Plans g2 (types inferred) from the observed set by choices taken from `pick`, checks the plan, runs it simulated
 * on e (graph g) and exports it from the model at path, loading the export back. */
static void plan_and_export(ptq_ctx *ctx, const char *path, ptq_exec *e, const ptq_graph *g, ptq_calib_set *s,
                            const ptq_tensor *in, unsigned pick)
{
    static const ptq_calib_method methods[] = {PTQ_CALIB_MINMAX, PTQ_CALIB_ENTROPY, PTQ_CALIB_PERCENTILE,
                                               PTQ_CALIB_MSE};
    static const ptq_prec cores[] = {PTQ_PREC_INT8, PTQ_PREC_INT8, PTQ_PREC_FP8_E4M3, PTQ_PREC_FP8_E5M2};
    ptq_graph *g2 = NULL, *back = NULL;
    ptq_plan *p = NULL;
    ptq_fq *fq = NULL;
    char out[512];
    out[0] = '\0';
    const ptq_prec core = cores[(pick >> 2) & 3];
    /* entropy and mse search their histograms for seconds per tensor under the sanitizers: few tensors only */
    const int method = ptq_calib_set_n_tensors(s) <= RUN_SLOW_CALIB_TENSORS ? pick & 3 : pick & 2;
    const ptq_calib_params cp = {methods[method], core == PTQ_PREC_INT8 ? PTQ_QFORMAT_INT8
                                                    : core == PTQ_PREC_FP8_E4M3 ? PTQ_QFORMAT_FP8_E4M3
                                                                                : PTQ_QFORMAT_FP8_E5M2, 0};
    const ptq_placement placement = (ptq_placement)((pick >> 4) % 3);
    const ptq_target target = core == PTQ_PREC_INT8 && (pick >> 6) & 1 ? PTQ_TARGET_ORT_CPU : PTQ_TARGET_TRT;
    if (ptq_calib_set_describe(ctx, s, RUN_SHA, "fuzz.onnx", "") != PTQ_OK ||
        ptq_model_load(ctx, path, &g2) != PTQ_OK || ptq_graph_infer_types(ctx, g2) != PTQ_OK ||
        ptq_plan_make_target(ctx, g2, RUN_SHA, "fuzz.onnx", s, "fuzz.h5", &cp, core, placement, target, &p) != PTQ_OK)
        goto done;
    if ((pick >> 7) & 1 && target == PTQ_TARGET_ORT_CPU && ptq_plan_reduce_range(ctx, g2, p) != PTQ_OK)
        goto done;
    if (ptq_plan_check(ctx, p, g2, RUN_SHA) != PTQ_OK)
        goto done;
    if (ptq_fq_create(ctx, g, p, &fq) == PTQ_OK) {
        ptq_tensor *outs = calloc((size_t)g->n_outputs + 1, sizeof *outs);
        ptq_exec_set_tap(e, NULL, NULL);
        ptq_exec_set_overlay(e, ptq_fq_overlay(fq));
        if (outs)
            ptq_exec_run(ctx, e, in, outs);
        ptq_exec_set_overlay(e, NULL);
        free(outs);
    }
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(out, sizeof out, "%s/ptq-fuzz-qdq-%ld.onnx", dir, (long)getpid());
    if (ptq_export_qdq(ctx, path, g2, p, 0, out) == PTQ_OK && ptq_graph_load_onnx(ctx, out, &back) == PTQ_OK)
        ctx->msg[0] = '\0';
done:
    if (getenv("PTQ_FUZZ_VERBOSE"))
        fprintf(stderr, "fuzz_onnx_run: planning (%s, %s, placement %d, target %d)%s%s\n",
                ptq_calib_method_name(cp.method), ptq_prec_name(core), (int)placement, (int)target,
                ctx->msg[0] ? ": " : ", exported", ctx->msg);
    if (out[0] && getenv("PTQ_FUZZ_KEEP_EXPORT")) /* for checking an export with onnx's checker or onnxruntime */
        rename(out, getenv("PTQ_FUZZ_KEEP_EXPORT"));
    if (out[0])
        unlink(out);
    ptq_graph_free(back);
    ptq_fq_free(fq);
    ptq_plan_free(p);
    ptq_graph_free(g2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[512];
    ptq_ctx ctx;
    ptq_graph *g0 = NULL;
    ptq_session *sess = NULL;
    ptq_calib_set *s = NULL;
    ptq_tensor *in = NULL, *outs = NULL;
    int n_in = 0;
    static int threads_set;
    if (!threads_set) { /* one thread: the runs stay deterministic and leave the machine's other cores alone */
        ptq_cpu_set_threads(1);
        threads_set = 1;
    }
    if (fuzz_begin(data, size, ".onnx", path, sizeof path, &ctx) != 0)
        goto done;
    if (ptq_graph_load_onnx_bytes(&ctx, data, size, NULL, &g0) != PTQ_OK ||
        ptq_graph_fold_constants(&ctx, g0) != PTQ_OK || graph_bytes(&ctx, g0) == SIZE_MAX)
        goto done;
    ptq_session_opts so;
    memset(&so, 0, sizeof so);
    so.model = path;
    if (ptq_session_open(&ctx, &so, &sess) != PTQ_OK)
        goto done;
    ptq_graph *g = ptq_session_graph(sess);
    ptq_exec *e = ptq_session_exec(sess);
    const char *forced = getenv("PTQ_FUZZ_PICK"); /* the choices of an input, replayed with others */
    const unsigned pick = forced ? (unsigned)atoi(forced) : size ? data[size / 2] ^ data[size - 1] : 0;
    n_in = g->n_inputs;
    in = calloc((size_t)n_in + 1, sizeof *in);
    outs = calloc((size_t)g->n_outputs + 1, sizeof *outs);
    if (!in || !outs || make_inputs(g, 1 + (pick & 1), in) != 0)
        goto done;
    if (ptq_calib_set_create(&ctx, g, NULL, 0, &s) != PTQ_OK) {
        ptq_exec_run(&ctx, e, in, outs); /* nothing to calibrate: the run alone */
        goto done;
    }
    ptq_exec_set_tap(e, ptq_calib_set_tap, s);
    if (ptq_calib_set_bind(&ctx, s, e) == PTQ_OK && ptq_calib_set_observe_inputs(&ctx, s, in) == PTQ_OK &&
        ptq_exec_run(&ctx, e, in, outs) == PTQ_OK && ptq_calib_set_sync(&ctx, s) == PTQ_OK) {
        plan_and_export(&ctx, path, e, g, s, in, pick);
        ctx.msg[0] = '\0';
    }
done:
    if (getenv("PTQ_FUZZ_VERBOSE") && ctx.msg[0])
        fprintf(stderr, "fuzz_onnx_run: stopped: %s\n", ctx.msg);
    for (int i = 0; in && i < n_in; i++)
        free(in[i].data);
    free(in);
    free(outs);
    ptq_calib_set_free(s);
    ptq_session_close(sess);
    ptq_graph_free(g0);
    unlink(path);
    return 0;
}
