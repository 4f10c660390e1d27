/* Every cuDNN forward algorithm on every distinct convolution of ResNet-50
 * (torchvision's, 224x224), timed on the GPU: what ptq's rule (the first
 * deterministic GEMM-like algorithm of cuDNN's heuristic list, at ptq's
 * images per call) costs against the fastest algorithm ptq allows and the
 * fastest of all, at ptq's chunk and at 256 images a call, in FP32 and in
 * TF32 math. Markdown on stdout. Built with CUDA and cuDNN headers
 * (build/bench/cudnn_survey, bundled as bin/cudnn_survey); run on the GPU
 * machine: bundle/bin/cudnn_survey [--images N]. Last, ptq's own
 * convolution of each layer with its tuning (kernels/cuda/cudnn.cu's
 * tune()) against PTQ_CUDNN_TUNE=0: times and bit-for-bit equality. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"

#ifndef PTQ_CUDA

int main(void)
{
    printf("cudnn_survey: ptq was built without CUDA\n");
    return 77;
}

#else

#include "core/clock.h"
#include "kernels/cuda/cuda_kernels.h"

typedef struct shape {
    int64_t c_in, c_out, k, stride, in;
    int count;
} shape;

static int n_shapes;
static shape shapes[64];

static void add(int64_t c_in, int64_t c_out, int64_t k, int64_t stride, int64_t in)
{
    for (int i = 0; i < n_shapes; i++)
        if (shapes[i].c_in == c_in && shapes[i].c_out == c_out && shapes[i].k == k && shapes[i].stride == stride &&
            shapes[i].in == in) {
            shapes[i].count++;
            return;
        }
    shapes[n_shapes++] = (shape){c_in, c_out, k, stride, in, 1};
}

/* torchvision resnet50: stem, then bottlenecks [3, 4, 6, 3] (stride on the 3x3) */
static void resnet50(void)
{
    static const int blocks[4] = {3, 4, 6, 3};
    add(3, 64, 7, 2, 224);
    int64_t ch = 64, sp = 56;
    for (int st = 0; st < 4; st++) {
        const int64_t w = 64 << st;
        for (int b = 0; b < blocks[st]; b++) {
            const int64_t s = b == 0 && st > 0 ? 2 : 1, out = sp / s;
            add(ch, w, 1, 1, sp);
            add(w, w, 3, s, sp);
            add(w, 4 * w, 1, 1, out);
            if (b == 0)
                add(ch, 4 * w, 1, s, sp);
            ch = 4 * w;
            sp = out;
        }
    }
}

static ptq_conv_params params_of(const shape *s, int64_t n)
{
    ptq_conv_params p;
    memset(&p, 0, sizeof p);
    p.n = n;
    p.c_in = s->c_in;
    p.c_out = s->c_out;
    p.group = 1;
    const int64_t pad = s->k / 2, out = (s->in + 2 * pad - s->k) / s->stride + 1;
    p.in[0] = p.out[0] = p.k[0] = p.stride[0] = p.dil[0] = 1;
    for (int d = 1; d < 3; d++) {
        p.in[d] = s->in;
        p.out[d] = out;
        p.k[d] = s->k;
        p.stride[d] = s->stride;
        p.dil[d] = 1;
        p.pad_lo[d] = p.pad_hi[d] = pad;
    }
    return p;
}

typedef struct pick {
    int algo;
    float ms; /* per 256 images */
} pick;

/* ptq's rule, the fastest allowed and the fastest of all, per 256 images */
static int survey(ptq_ctx *ctx, ptq_cuda_dev *d, const shape *s, int64_t n, pick *rule, pick *fast_ok, pick *fast_any)
{
    ptq_conv_params p = params_of(s, n);
    ptq_cudnn_algo_time t[16];
    int nt = 0;
    if (ptq_cudnn_survey(ctx, d, &p, t, 16, &nt) != PTQ_OK) {
        fprintf(stderr, "cudnn_survey: %s\n", ctx->msg);
        return 0;
    }
    const float per = 256.0f / (float)n;
    int best_rank = 1 << 30;
    *rule = *fast_ok = *fast_any = (pick){-1, 0};
    for (int i = 0; i < nt; i++) {
        const float ms = t[i].ms * per;
        if (t[i].allowed && t[i].deterministic && t[i].heuristic_rank >= 0 && t[i].heuristic_rank < best_rank &&
            t[i].workspace <= ((size_t)512 << 20)) {
            best_rank = t[i].heuristic_rank;
            *rule = (pick){t[i].algo, ms};
        }
        if (t[i].allowed && (fast_ok->algo < 0 || ms < fast_ok->ms))
            *fast_ok = (pick){t[i].algo, ms};
        if (fast_any->algo < 0 || ms < fast_any->ms)
            *fast_any = (pick){t[i].algo, ms};
    }
    return 1;
}

static float *dev_random(ptq_ctx *ctx, ptq_cuda_dev *d, int64_t n, float scale, uint32_t *state)
{
    float *h = malloc((size_t)n * sizeof *h);
    void *p = NULL;
    if (!h)
        return NULL;
    for (int64_t i = 0; i < n; i++) {
        *state = *state * 1664525u + 1013904223u;
        h[i] = scale * ((float)(*state >> 8) / 8388608.0f - 1.0f);
    }
    if (ptq_cuda_alloc(ctx, d, (size_t)n * sizeof *h, &p) != PTQ_OK ||
        ptq_cuda_upload(ctx, d, p, h, (size_t)n * sizeof *h) != PTQ_OK) {
        ptq_cuda_release(d, p);
        p = NULL;
    }
    free(h);
    return p;
}

/* ms per call of ptq's convolution of 256 images (the mean of 4 after one
 * that plans), its output in host (256 images), and the plan's description */
static float ptq_conv_ms(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_conv_params *p, const float *x, const float *w,
                         const float *b, float *y, float *host, char *desc, size_t n_desc)
{
    const int64_t n_y = p->n * p->c_out * p->out[0] * p->out[1] * p->out[2];
    const char *last = "";
    if (ptq_k_conv_cuda(ctx, d, p, x, w, b, y) != PTQ_OK || ptq_cuda_sync(ctx, d) != PTQ_OK)
        return -1.0f;
    (void)ptq_cuda_dev_cudnn_runs(d, &last);
    snprintf(desc, n_desc, "%s", last);
    const double t0 = ptq_clock_s();
    for (int r = 0; r < 4; r++)
        if (ptq_k_conv_cuda(ctx, d, p, x, w, b, y) != PTQ_OK)
            return -1.0f;
    if (ptq_cuda_sync(ctx, d) != PTQ_OK)
        return -1.0f;
    const double t1 = ptq_clock_s();
    if (ptq_cuda_download(ctx, d, host, y, (size_t)n_y * sizeof(float)) != PTQ_OK)
        return -1.0f;
    return (float)((t1 - t0) * 1000.0 / 4);
}

/* ptq's convolutions with tuning (cudnn.cu's tune()) against PTQ_CUDNN_TUNE=0, 256 images a call, FP32 */
static void tuned_section(ptq_ctx *ctx, ptq_cuda_dev *d)
{
    printf("## ptq's plans, tuned against the reference (FP32, 256 images a call, bias added)\n\n"
           "Times per call of ptq's own convolution (the mean of 4 after the call that plans and tunes). \"same\": "
           "the 256 images' outputs bit for bit equal with and without tuning (random data).\n\n"
           "| conv (c_in>c_out k s @in) | count | PTQ_CUDNN_TUNE=0 ms | tuned ms | same | tuned plan |\n"
           "|---|---|---|---|---|---|\n");
    double tot[2] = {0, 0};
    int all_same = 1;
    uint32_t state = 20261202u;
    ptq_cuda_dev_set_math(d, PTQ_CUDA_MATH_FP32);
    for (int i = 0; i < n_shapes; i++) {
        const shape *s = &shapes[i];
        ptq_conv_params p = params_of(s, 256);
        const int64_t n_x = 256 * p.c_in * p.in[1] * p.in[2], n_y = 256 * p.c_out * p.out[1] * p.out[2];
        const int64_t n_w = p.c_out * p.c_in * p.k[1] * p.k[2];
        float *x = dev_random(ctx, d, n_x, 1.0f, &state), *w = dev_random(ctx, d, n_w, 0.05f, &state);
        float *b = dev_random(ctx, d, p.c_out, 0.5f, &state), *y = NULL;
        float *h_ref = malloc((size_t)n_y * sizeof(float)), *h_tuned = malloc((size_t)n_y * sizeof(float));
        char desc_ref[256], desc[256];
        float ms_ref = -1.0f, ms = -1.0f;
        if (x && w && b && h_ref && h_tuned && ptq_cuda_alloc(ctx, d, (size_t)n_y * sizeof(float), (void **)&y) == PTQ_OK) {
            setenv("PTQ_CUDNN_TUNE", "0", 1);
            ptq_cuda_dev_drop_conv_plans(d);
            ms_ref = ptq_conv_ms(ctx, d, &p, x, w, b, y, h_ref, desc_ref, sizeof desc_ref);
            unsetenv("PTQ_CUDNN_TUNE");
            ptq_cuda_dev_drop_conv_plans(d);
            ms = ptq_conv_ms(ctx, d, &p, x, w, b, y, h_tuned, desc, sizeof desc);
        }
        if (ms_ref < 0 || ms < 0) {
            fprintf(stderr, "cudnn_survey: %s\n", ctx->msg);
        } else {
            const int same = memcmp(h_ref, h_tuned, (size_t)n_y * sizeof(float)) == 0;
            all_same &= same;
            printf("| %lld>%lld k%lld s%lld @%lld | %d | %.3f | %.3f | %s | %s |\n", (long long)s->c_in,
                   (long long)s->c_out, (long long)s->k, (long long)s->stride, (long long)s->in, s->count, ms_ref, ms,
                   same ? "yes" : "NO", desc);
            tot[0] += s->count * ms_ref;
            tot[1] += s->count * ms;
        }
        ptq_cuda_release(d, x);
        ptq_cuda_release(d, w);
        ptq_cuda_release(d, b);
        ptq_cuda_release(d, y);
        free(h_ref);
        free(h_tuned);
    }
    printf("| **all 53 convs** | | **%.2f** | **%.2f** | %s | |\n\n", tot[0], tot[1], all_same ? "all" : "NOT ALL");
}

int main(int argc, char **argv)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_cuda_dev *d = NULL;
    (void)argc;
    (void)argv;
    if (ptq_cuda_dev_create(&ctx, 0, &d) != PTQ_OK) {
        printf("cudnn_survey: no GPU: %s\n", ctx.msg);
        return 77;
    }
    if (ptq_cuda_dev_note(d)[0]) {
        printf("cudnn_survey: %s\n", ptq_cuda_dev_note(d));
        ptq_cuda_dev_free(d);
        return 77;
    }
    resnet50();
    static const char *const algo_names[] = {"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT",
                                             "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
    printf("# cuDNN forward algorithms on ResNet-50's convolutions, %s\n\n", ptq_cuda_dev_name(d));
    printf("Times are per 256 images (ms), each the mean of 4 calls after a warm-up. \"rule\": ptq's pick (first\n"
           "deterministic GEMM-like algorithm in cuDNN's heuristic order) at ptq's images per call; \"ok\": the\n"
           "fastest GEMM-like algorithm; \"any\": the fastest of all (FFT and Winograd-nonfused included).\n\n");
    for (int math = 0; math < 2; math++) {
        ptq_cuda_dev_set_math(d, math);
        printf("## %s math\n\n| conv (c_in>c_out k s @in) | count | chunk | rule @chunk | ok @chunk | ok @256 | any @256 |\n"
               "|---|---|---|---|---|---|---|\n", math ? "TF32" : "FP32");
        double tot[4] = {0, 0, 0, 0};
        for (int i = 0; i < n_shapes; i++) {
            const shape *s = &shapes[i];
            ptq_conv_params p = params_of(s, 256);
            const int64_t chunk = ptq_cudnn_chunk(&p);
            pick r, ok, any, r2, ok2, any2;
            if (!survey(&ctx, d, s, chunk, &r, &ok, &any) || !survey(&ctx, d, s, 256, &r2, &ok2, &any2))
                continue;
            printf("| %lld>%lld k%lld s%lld @%lld | %d | %lld | %.3f %s | %.3f %s | %.3f %s | %.3f %s |\n",
                   (long long)s->c_in, (long long)s->c_out, (long long)s->k, (long long)s->stride, (long long)s->in,
                   s->count, (long long)chunk, r.ms, r.algo >= 0 ? algo_names[r.algo] : "-", ok.ms,
                   ok.algo >= 0 ? algo_names[ok.algo] : "-", ok2.ms, ok2.algo >= 0 ? algo_names[ok2.algo] : "-",
                   any2.ms, any2.algo >= 0 ? algo_names[any2.algo] : "-");
            tot[0] += s->count * r.ms;
            tot[1] += s->count * ok.ms;
            tot[2] += s->count * ok2.ms;
            tot[3] += s->count * any2.ms;
        }
        printf("| **all 53 convs** | | | **%.2f** | **%.2f** | **%.2f** | **%.2f** |\n\n", tot[0], tot[1], tot[2],
               tot[3]);
    }
    tuned_section(&ctx, d);
    ptq_cuda_dev_free(d);
    return 0;
}

#endif
