/* ptq_exec_run on one batch of random images, run after run, each run whole (W), in passes side by side (S, the
 * rows given) or under the session's timed choice (A: ptq_exec_set_pass_auto, set before the first A); each run's
 * microseconds a sample and the process's resident MiB after it printed in order, and the choice. Shows how the
 * first runs of a process differ from the later ones, which the timed choice must not mistake for a difference
 * between the ways, and that the whole batches' memory goes back once passes side by side are kept.
 * build/bench/pass_runs MODEL THREADS BATCH ROWS PATTERN, e.g. pass_runs m.onnx 16 256 9 WSWSWSWSWSWSWS */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ptq/graph.h"
#include "ptq/runtime.h"
#include "runtime/backend.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The process's resident memory in MiB (Linux: /proc/self/statm), 0 where unknown. */
static double resident_mib(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return 0.0;
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
        resident = 0;
    fclose(f);
    return (double)resident * (double)sysconf(_SC_PAGESIZE) / 1048576.0;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: pass_runs MODEL THREADS BATCH ROWS PATTERN (W whole, S side by side, A auto)\n");
        return 2;
    }
    const int threads = atoi(argv[2]);
    const int64_t n = atoll(argv[3]), rows = atoll(argv[4]);
    const char *pattern = argv[5];
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_graph *g = NULL;
    ptq_exec *e = NULL;
    ptq_cpu_set_threads(threads);
    if (ptq_model_load(&ctx, argv[1], &g) != PTQ_OK || g->n_inputs != 1) {
        fprintf(stderr, "pass_runs: %s\n", g ? "one input only" : ctx.msg);
        return 1;
    }
    const ptq_value *in = &g->values[g->inputs[0]];
    ptq_tensor x = {PTQ_DT_FLOAT, in->ndim, {0}, NULL, PTQ_MEM_HOST, 0}, out[8];
    int64_t count = 1;
    for (int d = 0; d < in->ndim; d++) {
        x.dims[d] = d == 0 ? n : in->dims[d];
        count *= x.dims[d];
    }
    float *data = malloc((size_t)count * sizeof *data);
    if (!data)
        return 1;
    srand(1);
    for (int64_t i = 0; i < count; i++)
        data[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    x.data = data;
    ptq_exec_params p = {PTQ_DEVICE_CPU, 0, NULL, NULL, 0, PTQ_MATH_FP32};
    if (ptq_exec_create(&ctx, g, &p, &e) != PTQ_OK) {
        fprintf(stderr, "pass_runs: %s\n", ctx.msg);
        return 1;
    }
    int autoset = 0;
    printf("%s, %d threads, batch %lld, rows %lld:", argv[1], threads, (long long)n, (long long)rows);
    for (const char *c = pattern; *c; c++) {
        if (*c == 'A' && !autoset) {
            ptq_exec_set_pass_auto(e, rows);
            autoset = 1;
        } else if (*c != 'A') {
            ptq_exec_set_pass_rows(e, *c == 'S' ? rows : 0);
            autoset = 0;
        }
        const double t0 = now_s();
        if (ptq_exec_run(&ctx, e, &x, out) != PTQ_OK) {
            fprintf(stderr, "pass_runs: %s\n", ctx.msg);
            return 1;
        }
        const double us = 1e6 * (now_s() - t0) / (double)n;
        printf(" %c%.1f/%.0fM", *c, us, resident_mib());
    }
    double whole_s = 0, side_s = 0;
    const int pick = ptq_exec_pass_choice(e, &whole_s, &side_s);
    printf("\nchoice %d (whole %.1f us, side by side %.1f us)\n", pick, 1e6 * whole_s, 1e6 * side_s);
    ptq_exec_free(e);
    ptq_graph_free(g);
    free(data);
    return 0;
}
