/* The pipeline in the library (include/ptq/runner.h, runtime/exec.c) on the
 * demo model, CPU: its Conv -> Add -> Relu chains fused with the same bits
 * as run apart (not with a tap, nor on the reference backend); memory
 * planned by liveness (steady runs allocate nothing, results unchanged
 * across batch sizes), several taps, kept
 * values and ptq_exec_run_from (a suffix run equals the full run, with and
 * without an overlay, and leaves the kept prefix untouched), sample picks
 * and shards, the runner's consumers (batch size and prefetch change
 * nothing; ids out of order refused), and a validation run in shards
 * merged into the single run's report, byte for byte. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/parallel.h"
#include "ptq/consumers.h"
#include "ptq/runner.h"
#include "runtime/backend.h"
#include "testlib.h"

enum { N_REF = 16, N_CLASSES = 10, SAMPLE = 784 };

typedef struct counter {
    int n_calls;
    int64_t n_values;
} counter;

static ptq_status count_tap(void *user, ptq_ctx *ctx, const ptq_graph *g, int node, int value, const ptq_tensor *t)
{
    counter *c = user;
    (void)ctx, (void)g, (void)node, (void)value;
    c->n_calls++;
    c->n_values += ptq_tensor_numel(t);
    return PTQ_OK;
}

/* A test overlay: halves the tensors marked in rounds (host only). */
static ptq_status halve(void *user, ptq_ctx *ctx, const ptq_exec *e, int v, ptq_tensor *t)
{
    (void)user, (void)ctx, (void)e, (void)v;
    float *x = t->data;
    for (int64_t i = 0; i < ptq_tensor_numel(t); i++)
        x[i] *= 0.5f;
    return PTQ_OK;
}

static int run(ptq_exec *e, float *x, int64_t n, float *logits)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_tensor in = {PTQ_DT_FLOAT, 4, {n, 1, 28, 28}, x, PTQ_MEM_HOST, 0}, out[4];
    ptq_status st = ptq_exec_run(&ctx, e, &in, out);
    if (st != PTQ_OK) {
        fprintf(stderr, "run: %s\n", ctx.msg);
        return 0;
    }
    memcpy(logits, out[0].data, (size_t)(n * N_CLASSES) * sizeof *logits);
    return 1;
}

static int run_from(ptq_exec *e, int k, int64_t n, float *logits)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_tensor out[4];
    if (ptq_exec_run_from(&ctx, e, k, out) != PTQ_OK) {
        fprintf(stderr, "run_from(%d): %s\n", k, ctx.msg);
        return 0;
    }
    memcpy(logits, out[0].data, (size_t)(n * N_CLASSES) * sizeof *logits);
    return 1;
}

/* ptq_exec_set_pass_rows: a batch of 16 in passes of 3 (the last of 1) gives the bytes of one run; runs with a tap
 * or a kept value, and the reference device, stay whole. */
static void test_passes(ptq_graph *g, float *x)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    float ref[N_REF * N_CLASSES], got[N_REF * N_CLASSES];
    ptq_exec_params p = {PTQ_DEVICE_CPU, 0, NULL, NULL, 0, PTQ_MATH_FP32};
    ptq_exec *e = NULL, *r = NULL;
    int64_t passes = -1;
    CHECK(ptq_exec_create(&ctx, g, &p, &e) == PTQ_OK && run(e, x, N_REF, ref));
    CHECK(ptq_exec_pass_rows(e, &passes) == 0 && passes == 0);
    ptq_exec_set_pass_rows(e, 3);
    memset(got, 0, sizeof got);
    CHECK(run(e, x, N_REF, got) && ptq_exec_pass_rows(e, &passes) == 3);
    CHECK_MSG(passes == 6, "%lld passes for 16 samples in passes of 3", (long long)passes);
    CHECK_MSG(memcmp(got, ref, sizeof ref) == 0, "logits in passes of 3 differ from one run's");
    CHECK(run(e, x, 3, got) && ptq_exec_pass_rows(e, &passes) == 3 && passes == 6); /* 3 samples: one run */
    counter seen = {0, 0};
    CHECK(ptq_exec_add_tap(&ctx, e, count_tap, &seen) == PTQ_OK && run(e, x, N_REF, got));
    CHECK(ptq_exec_pass_rows(e, &passes) == 3 && passes == 6 && memcmp(got, ref, sizeof ref) == 0);
    ptq_exec_remove_tap(e, count_tap, &seen);
    CHECK(ptq_exec_keep(&ctx, e, g->inputs[0], 1) == PTQ_OK && run(e, x, N_REF, got));
    CHECK(ptq_exec_pass_rows(e, &passes) == 3 && passes == 6 && memcmp(got, ref, sizeof ref) == 0);
    CHECK(ptq_exec_keep(&ctx, e, g->inputs[0], 0) == PTQ_OK && run(e, x, N_REF, got));
    CHECK(ptq_exec_pass_rows(e, &passes) == 3 && passes == 12 && memcmp(got, ref, sizeof ref) == 0);
    CHECK(ptq_exec_pass_threads(e) == 1 || ptq_par_workers() > 1);
    /* side by side on three pool threads, an executor each: the same bytes; 16 samples in passes of 3, or of 1
       (16 passes: a batch shorter than the threads times the rows gives each thread one); an overlay goes to every
       executor; a tap marked for passes has them one after another where asked for (ptq_exec_set_pass_rows), the
       batch whole where the session chose them (ptq_exec_set_pass_auto) */
    const int workers = ptq_par_workers();
    ptq_par_set_workers(3);
    ptq_exec *s3 = NULL;
    CHECK(ptq_exec_create(&ctx, g, &p, &s3) == PTQ_OK);
    ptq_exec_set_pass_rows(s3, 3);
    memset(got, 0, sizeof got);
    CHECK(run(s3, x, N_REF, got) && ptq_exec_pass_rows(s3, &passes) == 3 && passes == 6);
    CHECK_MSG(ptq_exec_pass_threads(s3) == 3, "passes on %d threads side by side", ptq_exec_pass_threads(s3));
    CHECK_MSG(memcmp(got, ref, sizeof ref) == 0, "logits in passes side by side differ from one run's");
    ptq_exec_set_pass_rows(s3, 1000); /* more than the batch: a run whole */
    CHECK(run(s3, x, N_REF, got) && ptq_exec_pass_rows(s3, &passes) == 1000 && passes == 6);
    ptq_exec_set_pass_rows(s3, 8); /* 16 samples on three threads: passes of 6, 6 and 4 */
    CHECK(run(s3, x, N_REF, got) && ptq_exec_pass_rows(s3, &passes) == 8 && passes == 9);
    CHECK(memcmp(got, ref, sizeof ref) == 0);
    unsigned char *rounds = calloc((size_t)g->n_values, 1);
    float q_whole[N_REF * N_CLASSES];
    CHECK(rounds != NULL);
    if (rounds) {
        rounds[g->nodes[g->n_nodes / 2].outputs[0]] = 1;
        ptq_overlay ov = {NULL, NULL, halve, rounds, NULL, NULL};
        ptq_exec_set_overlay(e, &ov); /* e: passes of 3, one after another when the pool had one thread */
        ptq_exec_set_pass_rows(e, 0);
        CHECK(run(e, x, N_REF, q_whole) && memcmp(q_whole, ref, sizeof ref) != 0);
        ptq_exec_set_overlay(s3, &ov);
        CHECK(run(s3, x, N_REF, got) && ptq_exec_pass_rows(s3, &passes) == 8 && passes == 12);
        CHECK_MSG(memcmp(got, q_whole, sizeof got) == 0, "passes side by side under an overlay differ from one run");
        ptq_exec_set_overlay(s3, NULL);
        ptq_exec_set_overlay(e, NULL);
        free(rounds);
    }
    counter seen3 = {0, 0};
    CHECK(ptq_exec_add_tap(&ctx, s3, count_tap, &seen3) == PTQ_OK);
    ptq_exec_tap_passes(s3, count_tap, &seen3);
    ptq_exec_set_pass_auto(s3, 4);
    CHECK(run(s3, x, N_REF, got) && ptq_exec_pass_rows(s3, &passes) == 4 && passes == 12); /* whole */
    ptq_exec_set_pass_rows(s3, 4);
    CHECK(run(s3, x, N_REF, got) && ptq_exec_pass_rows(s3, &passes) == 4 && passes == 16); /* 4 after another */
    CHECK(memcmp(got, ref, sizeof ref) == 0 && seen3.n_calls > 0);
    ptq_exec_remove_tap(s3, count_tap, &seen3);
    /* the session's passes (ptq_exec_set_pass_auto) without taps: seven runs whole and side by side in turn, the
       last four timed, then the faster kept; the same bytes throughout, and a batch of another size runs whole
       during the trial */
    ptq_exec_set_pass_auto(s3, 3);
    CHECK(ptq_exec_pass_choice(s3, NULL, NULL) == 0);
    for (int k = 0; k < 8; k++) {
        const int64_t n = k == 1 ? 5 : N_REF;
        memset(got, 0, sizeof got);
        CHECK(run(s3, x, n, got) && memcmp(got, ref, (size_t)n * N_CLASSES * sizeof *ref) == 0);
        CHECK(k == 7 || ptq_exec_pass_choice(s3, NULL, NULL) == 0); /* undecided until the seventh of N_REF */
    }
    double whole_s = 0, side_s = 0;
    const int pick = ptq_exec_pass_choice(s3, &whole_s, &side_s);
    CHECK_MSG(whole_s > 0 && side_s > 0 && pick == (side_s < whole_s ? 2 : 1),
              "pass choice %d from %.3g s whole, %.3g s side by side", pick, whole_s, side_s);
    /* after it (whole batches winning frees the lanes), passes asked for run side by side again */
    ptq_exec_set_pass_rows(s3, 3);
    memset(got, 0, sizeof got);
    CHECK(run(s3, x, N_REF, got) && memcmp(got, ref, sizeof ref) == 0 && ptq_exec_pass_threads(s3) == 3);
    ptq_exec_free(s3);
    ptq_par_set_workers(workers);
    p.device = PTQ_DEVICE_REF;
    CHECK(ptq_exec_create(&ctx, g, &p, &r) == PTQ_OK);
    ptq_exec_set_pass_rows(r, 3);
    CHECK(run(r, x, N_REF, got) && ptq_exec_pass_rows(r, &passes) == 3 && passes == 0);
    ptq_exec_free(r);
    ptq_exec_free(e);
}

static void test_exec(ptq_graph *g, float *x)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    float ref[N_REF * N_CLASSES], got[N_REF * N_CLASSES], q_full[N_REF * N_CLASSES];
    ptq_exec_params p = {PTQ_DEVICE_CPU, 0, NULL, NULL, 0, PTQ_MATH_FP32};
    ptq_exec *a = NULL, *e = NULL;
    CHECK(ptq_exec_create(&ctx, g, &p, &a) == PTQ_OK && run(a, x, N_REF, ref));
    /* the Conv -> Add -> Relu chains run fused (kernels/cpu/conv.c's epilogue): the bits of the nodes run apart,
     * as PTQ_EPILOGUE=0 and the reference backend run them; a tap sees every value, so none is fused then */
    CHECK_MSG(ptq_exec_n_epilogues(a) == 7, "%lld chains fused on the CPU, the demo model has 7",
              (long long)ptq_exec_n_epilogues(a));
    counter seen_apart = {0, 0}, seen_fused = {0, 0};
    for (int i = 0; i < 2; i++) {
        ptq_exec *apart = NULL;
        ptq_exec_params pa = p;
        pa.device = i ? PTQ_DEVICE_REF : PTQ_DEVICE_CPU;
        if (i == 0)
            setenv("PTQ_EPILOGUE", "0", 1);
        CHECK(ptq_exec_create(&ctx, g, &pa, &apart) == PTQ_OK && run(apart, x, N_REF, got));
        unsetenv("PTQ_EPILOGUE");
        CHECK(ptq_exec_n_epilogues(apart) == 0);
        if (i == 0) {
            CHECK_MSG(memcmp(got, ref, sizeof ref) == 0, "the fused chains changed the logits");
            CHECK(ptq_exec_add_tap(&ctx, apart, count_tap, &seen_apart) == PTQ_OK && run(apart, x, N_REF, got));
        }
        ptq_exec_free(apart);
    }
    CHECK(ptq_exec_add_tap(&ctx, a, count_tap, &seen_fused) == PTQ_OK && run(a, x, N_REF, got));
    CHECK_MSG(ptq_exec_n_epilogues(a) == 7 && seen_fused.n_calls == seen_apart.n_calls &&
                  seen_fused.n_values == seen_apart.n_values,
              "with a tap: %lld chains fused, %d values seen (%d unfused)", (long long)ptq_exec_n_epilogues(a),
              seen_fused.n_calls, seen_apart.n_calls);
    CHECK(memcmp(got, ref, sizeof ref) == 0);
    ptq_exec_free(a);

    /* memory: the second run plans it, later runs of that size allocate nothing */
    CHECK(ptq_exec_create(&ctx, g, &p, &e) == PTQ_OK);
    CHECK(run(e, x, N_REF, got) && run(e, x, N_REF, got));
    const int64_t allocs = ptq_exec_n_allocs(e);
    for (int i = 0; i < 3; i++)
        CHECK(run(e, x, N_REF, got));
    CHECK_MSG(ptq_exec_n_allocs(e) == allocs, "steady runs allocated %lld times",
              (long long)(ptq_exec_n_allocs(e) - allocs));
    CHECK_MSG(memcmp(got, ref, sizeof ref) == 0, "planned memory changed the logits");
    /* a smaller batch fits the plan; a larger one gets a new plan */
    CHECK(run(e, x, 5, got) && memcmp(got, ref, 5 * N_CLASSES * sizeof *ref) == 0);
    CHECK_MSG(ptq_exec_n_allocs(e) == allocs, "a smaller batch allocated");
    float big_x[2 * N_REF * SAMPLE], big[2 * N_REF * N_CLASSES];
    memcpy(big_x, x, N_REF * SAMPLE * sizeof *x);
    memcpy(big_x + N_REF * SAMPLE, x, N_REF * SAMPLE * sizeof *x);
    CHECK(run(e, big_x, 2 * N_REF, big) && run(e, big_x, 2 * N_REF, big));
    CHECK(memcmp(big, ref, sizeof ref) == 0 && memcmp(big + N_REF * N_CLASSES, ref, sizeof ref) == 0);

    /* taps: several at once, in order, removable */
    counter c1 = {0, 0}, c2 = {0, 0};
    CHECK(ptq_exec_add_tap(&ctx, e, count_tap, &c1) == PTQ_OK && ptq_exec_add_tap(&ctx, e, count_tap, &c2) == PTQ_OK);
    CHECK(run(e, x, N_REF, got));
    CHECK_MSG(c1.n_calls > 0 && c1.n_calls == c2.n_calls && c1.n_values == c2.n_values, "taps saw %d and %d tensors",
              c1.n_calls, c2.n_calls);
    ptq_exec_remove_tap(e, count_tap, &c1);
    const int seen = c1.n_calls;
    CHECK(run(e, x, N_REF, got));
    CHECK_MSG(c1.n_calls == seen && c2.n_calls == 2 * seen, "a removed tap was still called");
    ptq_exec_set_tap(e, NULL, NULL);

    /* kept values: every suffix run from the kept prefix equals the full run */
    const int n_nodes = g->n_nodes;
    CHECK(ptq_exec_run_from(&ctx, e, n_nodes / 2, (ptq_tensor[4]){{0}}) == PTQ_ERR_INVALID_ARG);
    for (int k = 0; k <= n_nodes; k++)
        CHECK(ptq_exec_keep_for(&ctx, e, k) == PTQ_OK);
    CHECK(run(e, x, N_REF, got) && memcmp(got, ref, sizeof ref) == 0);
    for (int k = n_nodes - 1; k >= 0; k -= 3) {
        CHECK(run_from(e, k, N_REF, got));
        CHECK_MSG(memcmp(got, ref, sizeof ref) == 0, "run_from(%d) differs from the full run", k);
    }
    /* an overlay on one node's output: run from that node equals the full run under it */
    unsigned char *rounds = calloc((size_t)g->n_values, 1);
    const int k_mid = n_nodes / 2, v_mid = g->nodes[k_mid].outputs[0];
    rounds[v_mid] = 1;
    ptq_overlay ov = {NULL, NULL, halve, rounds, NULL, NULL};
    ptq_exec *f = NULL;
    CHECK(ptq_exec_create(&ctx, g, &p, &f) == PTQ_OK);
    ptq_exec_set_overlay(f, &ov);
    CHECK(run(f, x, N_REF, q_full));
    ptq_exec_free(f);
    CHECK_MSG(memcmp(q_full, ref, sizeof ref) != 0, "halving '%s' changed nothing", g->values[v_mid].name);
    ptq_exec_set_overlay(e, &ov);
    CHECK(run_from(e, k_mid, N_REF, got));
    CHECK_MSG(memcmp(got, q_full, sizeof got) == 0, "run_from under the overlay differs from the full run under it");
    ptq_exec_set_overlay(e, NULL);
    CHECK(run_from(e, k_mid + 1, N_REF, got)); /* the kept prefix was not touched by the overlay run */
    CHECK_MSG(memcmp(got, ref, sizeof ref) == 0, "an overlay run changed the kept values");
    CHECK(run_from(e, 0, N_REF, got) && memcmp(got, ref, sizeof ref) == 0);
    /* a graph input rounded by the overlay: run_from(0) rounds the kept input again, the caller's stays */
    rounds[v_mid] = 0;
    rounds[g->inputs[0]] = 1;
    float *x_copy = malloc(N_REF * SAMPLE * sizeof *x_copy);
    memcpy(x_copy, x, N_REF * SAMPLE * sizeof *x);
    for (int64_t i = 0; i < N_REF * SAMPLE; i++)
        x_copy[i] *= 0.5f;
    ptq_exec_set_overlay(e, NULL);
    CHECK(run(e, x_copy, N_REF, q_full));
    CHECK(run(e, x, N_REF, got));
    ptq_exec_set_overlay(e, &ov);
    CHECK(run_from(e, 0, N_REF, got));
    CHECK_MSG(memcmp(got, q_full, sizeof got) == 0, "run_from(0) did not round the kept input");
    CHECK(run(e, x, N_REF, got) && memcmp(got, q_full, sizeof got) == 0);
    CHECK_MSG(memcmp(x_copy, x, sizeof *x) != 0 && x[0] == 2 * x_copy[0], "the overlay wrote the caller's input");
    free(x_copy);
    free(rounds);
    ptq_exec_free(e);
}

static void test_pick(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    int64_t *ids = NULL, n = 0;
    ptq_pick all = {0, 0, 0, 0, 0}, lim = {7, 0, 0, 0, 0}, rnd = {0, 50, 3, 0, 0};
    CHECK(ptq_pick_samples(&ctx, 100, &all, &ids, &n) == PTQ_OK && n == 100 && ids[99] == 99);
    free(ids);
    CHECK(ptq_pick_samples(&ctx, 100, &lim, &ids, &n) == PTQ_OK && n == 7 && ids[6] == 6);
    free(ids);
    CHECK(ptq_pick_samples(&ctx, 100, &rnd, &ids, &n) == PTQ_OK && n == 50);
    int sorted = 1;
    for (int64_t i = 1; i < n; i++)
        sorted &= ids[i] > ids[i - 1] && ids[i] < 100;
    CHECK_MSG(sorted, "a random pick is not ascending and distinct");
    int64_t whole[50];
    memcpy(whole, ids, sizeof whole);
    free(ids);
    /* shards of the pick cover it exactly, in order */
    int64_t at = 0;
    for (int64_t s = 0; s < 3; s++) {
        ptq_pick sh = {0, 50, 3, s, 3};
        CHECK(ptq_pick_samples(&ctx, 100, &sh, &ids, &n) == PTQ_OK);
        for (int64_t i = 0; i < n && at < 50; i++)
            CHECK(ids[i] == whole[at++]);
        free(ids);
    }
    CHECK_MSG(at == 50, "three shards covered %lld of 50 samples", (long long)at);
    ptq_pick bad = {0, 0, 0, 3, 3};
    CHECK(ptq_pick_samples(&ctx, 100, &bad, &ids, &n) == PTQ_ERR_INVALID_ARG);
    /* a negative count is named, not reported as a bad shard */
    const ptq_pick negative[] = {{-3, 0, 0, 0, 0}, {0, -3, 0, 0, 0}};
    for (int k = 0; k < 2; k++) {
        const ptq_status st = ptq_pick_samples(&ctx, 100, &negative[k], &ids, &n);
        CHECK_MSG(st == PTQ_ERR_INVALID_ARG && strstr(ctx.msg, "negative") &&
                      strstr(ctx.msg, k ? "-3 at random" : "limit -3"),
                  "pick %d: status %d, '%s'", k, (int)st, ctx.msg);
    }
    ptq_device d;
    int ord;
    CHECK(ptq_device_parse(&ctx, "cuda:3", &d, &ord) == PTQ_OK && d == PTQ_DEVICE_CUDA && ord == 3);
    CHECK(ptq_device_parse(&ctx, "cpu", &d, &ord) == PTQ_OK && d == PTQ_DEVICE_CPU);
    CHECK(ptq_device_parse(&ctx, "cuda:x", &d, &ord) == PTQ_ERR_INVALID_ARG);
    CHECK(ptq_device_parse(&ctx, "cuda: 0", &d, &ord) == PTQ_ERR_INVALID_ARG); /* digits only, as strtol does not */
    CHECK(ptq_device_parse(&ctx, "cuda:+0", &d, &ord) == PTQ_ERR_INVALID_ARG);
    CHECK(ptq_device_parse(&ctx, "cuda:-0", &d, &ord) == PTQ_ERR_INVALID_ARG);
    CHECK(ptq_device_parse(&ctx, "tpu", &d, &ord) == PTQ_ERR_INVALID_ARG);
}

/* The demo model over a data set: eval stats with the given batch and prefetch. */
static char *eval_json(ptq_session *s, const int64_t *ids, int64_t n_ids, int64_t batch, int prefetch)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_eval_stats stats = {0};
    char *json = NULL;
    ptq_runner_params rp = {.session = s, .ids = ids, .n_ids = n_ids, .batch = batch, .need_labels = 1,
                            .need_logits = 1, .prefetch = prefetch};
    rp.consumers[rp.n_consumers++] = ptq_eval_consumer(&stats);
    if (ptq_runner_run(&ctx, &rp) != PTQ_OK || ptq_eval_format_json(&ctx, &stats, NULL, NULL, &json) != PTQ_OK)
        fprintf(stderr, "eval run: %s\n", ctx.msg);
    ptq_eval_stats_free(&stats);
    return json;
}

/* The demo model on data_path on the CPU (options zeroed but the paths: device 0 is the CPU), and every sample's
 * id; NULL (a failed check) if it does not open. */
static ptq_session *open_demo(const char *data_path, int64_t **ids, int64_t *n_ids)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_session_opts so;
    memset(&so, 0, sizeof so);
    char model[4096];
    snprintf(model, sizeof model, "%s/models/fmnist_resnet.onnx", getenv("PTQ_SOURCE_DIR") ? getenv("PTQ_SOURCE_DIR") : ".");
    so.model = model;
    so.data = data_path;
    ptq_session *s = NULL;
    CHECK_MSG(ptq_session_open(&ctx, &so, &s) == PTQ_OK, "%s", ctx.msg);
    CHECK_MSG(!s || ptq_exec_device(ptq_session_exec(s)) == PTQ_DEVICE_CPU, "zeroed session options run on '%s'",
              ptq_exec_device_name(ptq_session_exec(s)));
    ptq_pick all = {0, 0, 0, 0, 0};
    *ids = NULL;
    *n_ids = 0;
    CHECK(!s || ptq_pick_samples(&ctx, ptq_session_n_samples(s), &all, ids, n_ids) == PTQ_OK);
    return s;
}

/* The validate consumer over ids in batches of 64 with prefetch, under ov, into vr (zeroed first). */
static ptq_status validate_all(ptq_ctx *ctx, ptq_session *s, const int64_t *ids, int64_t n_ids, const ptq_overlay *ov,
                               ptq_validate_run *vr)
{
    memset(vr, 0, sizeof *vr);
    vr->overlay = ov;
    ptq_runner_params rp = {.session = s, .ids = ids, .n_ids = n_ids, .batch = 64, .need_labels = 1, .need_logits = 1,
                            .prefetch = 1};
    rp.consumers[rp.n_consumers++] = ptq_validate_consumer(vr);
    return ptq_runner_run(ctx, &rp);
}

static void test_runner(const char *data_path, const unsigned char *rounds)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    int64_t *ids = NULL, n_ids = 0;
    ptq_session *s = open_demo(data_path, &ids, &n_ids);
    if (!s)
        return;
    CHECK(n_ids == 300);
    char *a = eval_json(s, ids, n_ids, 64, 1), *b = eval_json(s, ids, n_ids, 7, 0), *c = eval_json(s, ids, n_ids, 300, 1);
    CHECK_MSG(a && b && c && strcmp(a, b) == 0 && strcmp(a, c) == 0, "eval stats depend on batch or prefetch");
    free(a), free(b), free(c);

    /* validation: the single run against three shards merged */
    ptq_overlay ov = {NULL, NULL, halve, rounds, NULL, NULL};
    ptq_validate_run whole;
    CHECK_MSG(validate_all(&ctx, s, ids, n_ids, &ov, &whole) == PTQ_OK, "%s", ctx.msg);
    ptq_validate_stats *merged = NULL;
    for (int64_t sh = 2; sh >= 0; sh--) { /* merged in reverse order */
        ptq_pick pick = {0, 0, 0, sh, 3};
        int64_t *sids = NULL, n_s = 0;
        CHECK(ptq_pick_samples(&ctx, ptq_session_n_samples(s), &pick, &sids, &n_s) == PTQ_OK);
        ptq_validate_run part;
        memset(&part, 0, sizeof part);
        part.overlay = &ov;
        ptq_runner_params pp = {.session = s, .ids = sids, .n_ids = n_s, .batch = 17 + sh, .need_labels = 1,
                                .need_logits = 1, .prefetch = sh != 1};
        pp.consumers[pp.n_consumers++] = ptq_validate_consumer(&part);
        CHECK_MSG(ptq_runner_run(&ctx, &pp) == PTQ_OK, "%s", ctx.msg);
        if (!merged) {
            merged = part.stats;
            part.stats = NULL;
        } else {
            CHECK(ptq_validate_stats_merge(&ctx, merged, part.stats) == PTQ_OK);
        }
        ptq_validate_run_free(&part);
        free(sids);
    }
    char *j1 = NULL, *j2 = NULL, *m1 = NULL, *m2 = NULL;
    CHECK(whole.stats && merged);
    if (whole.stats && merged) {
        CHECK(ptq_validate_format_json(&ctx, whole.stats, NULL, &j1) == PTQ_OK);
        CHECK(ptq_validate_format_json(&ctx, merged, NULL, &j2) == PTQ_OK);
        CHECK(ptq_validate_format_markdown(&ctx, whole.stats, NULL, &m1) == PTQ_OK);
        CHECK(ptq_validate_format_markdown(&ctx, merged, NULL, &m2) == PTQ_OK);
        CHECK_MSG(j1 && j2 && strcmp(j1, j2) == 0, "three validation shards merged differ from the single run (JSON)");
        CHECK_MSG(m1 && m2 && strcmp(m1, m2) == 0, "three validation shards merged differ from the single run (Markdown)");
        CHECK_MSG(j1 && strstr(j1, "\"changed_predictions\":\t0") == NULL, "the overlay changed no prediction");
    }
    free(j1), free(j2), free(m1), free(m2);
    ptq_validate_stats_free(merged);
    ptq_validate_run_free(&whole);
    free(ids);
    ptq_session_close(s);
}

/* A label out of range in the batch at sample `bad` (the validate consumer adds a batch's figures on a worker
 * thread while the next runs): the run fails naming that sample, in a middle batch and in the last. */
static void test_validate_bad_label(const char *data_path, const unsigned char *rounds, int64_t bad)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    int64_t *ids = NULL, n_ids = 0;
    ptq_session *s = open_demo(data_path, &ids, &n_ids);
    if (!s)
        return;
    ptq_overlay ov = {NULL, NULL, halve, rounds, NULL, NULL};
    ptq_validate_run vr;
    char want[64];
    snprintf(want, sizeof want, "sample %lld: label", (long long)bad);
    const ptq_status st = validate_all(&ctx, s, ids, n_ids, &ov, &vr);
    CHECK_MSG(st == PTQ_ERR_DATA && strstr(ctx.msg, want) && strstr(ctx.msg, "out of range"),
              "a label out of range at sample %lld: status %d, '%s'", (long long)bad, (int)st, ctx.msg);
    ptq_exec_set_overlay(ptq_session_exec(s), NULL);
    ptq_validate_run_free(&vr);
    free(ids);
    ptq_session_close(s);
}

/* The eval and validate consumers in a run that asks for no labels or no logits: an error naming the flag to
 * set, not a read through the batch's NULL labels or logits. */
static void test_consumer_needs(const char *data_path, const unsigned char *rounds)
{
    int64_t *ids = NULL, n_ids = 0;
    ptq_session *s = open_demo(data_path, &ids, &n_ids);
    if (!s)
        return;
    ptq_overlay ov = {NULL, NULL, halve, rounds, NULL, NULL};
    for (int k = 0; k < 4; k++) {
        const int validate = k >= 2, labels = k % 2 == 0;
        ptq_ctx ctx;
        ptq_ctx_init(&ctx);
        ptq_eval_stats stats = {0};
        ptq_validate_run vr;
        memset(&vr, 0, sizeof vr);
        vr.overlay = &ov;
        ptq_runner_params rp = {.session = s, .ids = ids, .n_ids = 10, .batch = 4, .need_labels = labels,
                                .need_logits = !labels};
        rp.consumers[rp.n_consumers++] = validate ? ptq_validate_consumer(&vr) : ptq_eval_consumer(&stats);
        const ptq_status st = ptq_runner_run(&ctx, &rp);
        const char *want = labels ? "set need_logits" : "set need_labels";
        CHECK_MSG(st == PTQ_ERR_INVALID_ARG && strstr(ctx.msg, validate ? "validate consumer" : "eval consumer") &&
                      strstr(ctx.msg, want),
                  "%s consumer without %s: status %d, '%s'", validate ? "validate" : "eval",
                  labels ? "logits" : "labels", (int)st, ctx.msg);
        ptq_exec_set_overlay(ptq_session_exec(s), NULL);
        ptq_validate_run_free(&vr);
        ptq_eval_stats_free(&stats);
    }
    free(ids);
    ptq_session_close(s);
}

/* ids out of order or repeated: refused before any batch runs, naming the first position at fault (the reads go
 * in ascending runs, and a sample given twice would be counted twice). */
static void test_runner_ids(const char *data_path)
{
    int64_t *ids = NULL, n_ids = 0;
    ptq_session *s = open_demo(data_path, &ids, &n_ids);
    if (!s)
        return;
    const int64_t unordered[] = {0, 1, 5, 3, 7}, repeated[] = {0, 2, 2, 9};
    const char *const want[] = {"ids[3] = 3 after ids[2] = 5", "ids[2] = 2 after ids[1] = 2"};
    for (int k = 0; k < 2; k++) {
        ptq_ctx ctx;
        ptq_ctx_init(&ctx);
        ptq_eval_stats stats = {0};
        ptq_runner_params rp = {.session = s, .ids = k ? repeated : unordered, .n_ids = k ? 4 : 5, .batch = 2,
                                .need_labels = 1, .need_logits = 1};
        rp.consumers[rp.n_consumers++] = ptq_eval_consumer(&stats);
        const ptq_status st = ptq_runner_run(&ctx, &rp);
        CHECK_MSG(st == PTQ_ERR_INVALID_ARG && strstr(ctx.msg, want[k]) && strstr(ctx.msg, "ascending and distinct"),
                  "%s ids: status %d, '%s'", k ? "repeated" : "unordered", (int)st, ctx.msg);
        ptq_eval_stats_free(&stats);
    }
    free(ids);
    ptq_session_close(s);
}

/* ReLU6 chains: the MobileNet's Conv -> Clip(0, 6) nodes, bounds from Constant nodes that only the Clip reads, fuse
 * on the CPU (ptq_k_conv_cpu_epilogue; the Constant nodes skipped): the logits of PTQ_EPILOGUE=0 bit for bit, run after
 * run, and later runs allocate nothing; a tap sees every value, so none is fused then. */
static void test_clip_chains(const float *x)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    char path[4096];
    const char *src = getenv("PTQ_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/models/fmnist_mobilenet.onnx", src ? src : ".");
    ptq_graph *g = NULL;
    CHECK_MSG(ptq_graph_load_onnx(&ctx, path, &g) == PTQ_OK && ptq_graph_infer_shapes(&ctx, g, 1) == PTQ_OK, "%s",
              ctx.msg);
    if (!g)
        return;
    int n_clip = 0;
    for (int k = 0; k < g->n_nodes; k++)
        n_clip += strcmp(g->nodes[k].op_type, "Clip") == 0;
    float ref[N_REF * N_CLASSES], got[N_REF * N_CLASSES];
    ptq_exec_params p = {PTQ_DEVICE_CPU, 0, NULL, NULL, 0, PTQ_MATH_FP32};
    ptq_exec *a = NULL, *apart = NULL;
    setenv("PTQ_EPILOGUE", "0", 1);
    CHECK(ptq_exec_create(&ctx, g, &p, &apart) == PTQ_OK && run(apart, (float *)x, N_REF, ref));
    unsetenv("PTQ_EPILOGUE");
    CHECK(ptq_exec_create(&ctx, g, &p, &a) == PTQ_OK && run(a, (float *)x, N_REF, got));
    const int64_t chains = ptq_exec_n_epilogues(a);
    CHECK_MSG(n_clip == 18 && chains >= n_clip, "%lld chains fused on the CPU; the MobileNet has %d Clip nodes",
              (long long)chains, n_clip);
    CHECK_MSG(memcmp(got, ref, sizeof ref) == 0, "the fused Clip chains changed the logits");
    CHECK(run(a, (float *)x, N_REF, got) && memcmp(got, ref, sizeof ref) == 0);
    const int64_t allocs = ptq_exec_n_allocs(a);
    CHECK(run(a, (float *)x, N_REF, got) && memcmp(got, ref, sizeof ref) == 0 && ptq_exec_n_allocs(a) == allocs);
    CHECK(ptq_exec_n_epilogues(a) == 3 * chains);
    counter seen = {0, 0};
    CHECK(ptq_exec_add_tap(&ctx, a, count_tap, &seen) == PTQ_OK && run(a, (float *)x, N_REF, got));
    CHECK(ptq_exec_n_epilogues(a) == 3 * chains && memcmp(got, ref, sizeof ref) == 0);
    ptq_exec_free(a);
    ptq_exec_free(apart);
    ptq_graph_free(g);
}

int main(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_graph *g = test_load_demo_model("test_runner");
    if (!g)
        return 1;
    float *x = malloc((size_t)N_REF * SAMPLE * sizeof *x);
    test_rand_seed(11);
    test_fill_uniform(x, N_REF * SAMPLE, -0.81f, 2.03f);
    test_exec(g, x);
    test_passes(g, x);
    test_clip_chains(x);
    test_pick();

    /* a labelled set of 300 random images */
    enum { N_IMG = 300 };
    uint8_t *img = malloc((size_t)N_IMG * SAMPLE);
    int64_t labels[N_IMG];
    for (int64_t i = 0; i < N_IMG * SAMPLE; i++)
        img[i] = (uint8_t)(test_rand_u64() % 256);
    for (int i = 0; i < N_IMG; i++)
        labels[i] = (int64_t)(test_rand_u64() % N_CLASSES);
    char path[256];
    /* the process id: test_rand_u64's sequence is the same in every run, and two runs at once (two checkouts'
       suites on one machine) removed each other's file */
    snprintf(path, sizeof path, "/tmp/ptq-test-runner-%ld.h5", (long)getpid());
    ptq_tensor ti = {PTQ_DT_UINT8, 3, {N_IMG, 28, 28}, img, PTQ_MEM_HOST, 0};
    ptq_tensor tl = {PTQ_DT_INT64, 1, {N_IMG}, labels, PTQ_MEM_HOST, 0};
    CHECK_MSG(ptq_dataset_write_hdf5(&ctx, path, &ti, &tl, NULL) == PTQ_OK, "%s", ctx.msg);
    unsigned char *rounds = calloc((size_t)g->n_values, 1);
    for (int k = 0; k < g->n_nodes; k += 4) /* halve a few activations */
        rounds[g->nodes[k].outputs[0]] = 1;
    test_runner(path, rounds);
    test_consumer_needs(path, rounds);
    test_runner_ids(path);
    remove(path);
    for (int k = 0; k < 2; k++) { /* in the third batch of 64, and in the last */
        const int64_t bad = k ? N_IMG - 1 : 150, kept = labels[bad];
        labels[bad] = N_CLASSES + 3;
        CHECK_MSG(ptq_dataset_write_hdf5(&ctx, path, &ti, &tl, NULL) == PTQ_OK, "%s", ctx.msg);
        test_validate_bad_label(path, rounds, bad);
        labels[bad] = kept;
        remove(path);
    }
    free(rounds);
    free(img);
    free(x);
    ptq_graph_free(g);
    return test_done("test_runner");
}
