/* Parity of the CPU MaxPool / AveragePool / GlobalAveragePool / BatchNormalization
 * kernels with kernels/ref on seeded data: 1-3 D, strides, dilations, uneven pads,
 * ceil_mode overhangs, all-padding windows, count_include_pad, NaN. Tolerance:
 * pooling bit-exact (same taps, order, double sums); batchnorm rtol 1e-5, atol 1e-6. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "testlib.h"

typedef struct pool_case {
    int n_sp;
    int64_t n, c;
    int64_t in[3], k[3], stride[3], dil[3], pad_lo[3], pad_hi[3]; /* first n_sp entries */
    int ceil_mode; /* one more output where a window starts inside input or left padding */
} pool_case;

static const pool_case cases[] = {
    {2, 1, 3, {32, 32}, {2, 2}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, 0},
    {2, 2, 3, {7, 9}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 0},
    {2, 1, 1, {4, 4}, {3, 3}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, 1},
    {2, 2, 2, {6, 7}, {3, 2}, {2, 3}, {1, 1}, {1, 0}, {0, 1}, 1},
    {2, 1, 2, {4, 4}, {2, 2}, {1, 1}, {2, 2}, {0, 0}, {0, 0}, 0},
    {2, 2, 3, {11, 10}, {3, 2}, {2, 3}, {2, 3}, {2, 1}, {1, 3}, 1},
    {2, 1, 2, {5, 5}, {5, 5}, {1, 1}, {1, 1}, {2, 2}, {2, 2}, 0},
    {2, 1, 2, {5, 5}, {2, 2}, {1, 1}, {1, 1}, {3, 0}, {0, 3}, 0}, /* whole windows in the padding */
    {2, 2, 4, {28, 28}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 1},
    {1, 2, 5, {32}, {2}, {1}, {1}, {0}, {0}, 0},
    {1, 2, 3, {50}, {3}, {2}, {1}, {0}, {0}, 1},
    {1, 1, 1, {2000}, {20}, {10}, {10}, {100}, {100}, 0},
    {1, 3, 2, {9}, {4}, {3}, {2}, {1}, {2}, 1},
    {3, 1, 3, {8, 8, 8}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, 0},
    {3, 2, 3, {5, 5, 5}, {2, 2, 2}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1},
    {3, 1, 2, {6, 5, 7}, {3, 2, 3}, {2, 1, 2}, {2, 2, 1}, {1, 0, 2}, {2, 1, 0}, 1},
    {2, 3, 16, {28, 28}, {2, 2}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, 0}, /* a VGG's pools */
    {2, 2, 32, {14, 14}, {2, 2}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, 0},
    {2, 2, 3, {13, 70}, {2, 2}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, 0}, /* 2x2 rows of 35 outputs: 3 vectors, odd edges */
    {2, 1, 2, {7, 9}, {2, 2}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, 1},   /* ceil_mode's overhang: not the 2x2 path */
    {2, 2, 5, {56, 57}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 0}, /* ResNet's stem pool */
    {2, 1, 3, {9, 40}, {3, 5}, {1, 3}, {1, 1}, {0, 2}, {0, 1}, 1},
    {2, 1, 2, {3, 3}, {4, 4}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 0}, /* windows wider than the image */
};

static int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t d, int64_t lo, int64_t hi, int ceil_mode)
{
    const int64_t room = in + lo + hi - (k - 1) * d - 1;
    int64_t out = (ceil_mode ? (room + s - 1) / s : room / s) + 1;
    if (ceil_mode && (out - 1) * s >= in + lo)
        out--;
    return out;
}

static int same_bits(const char *label, const float *got, const float *want, int64_t n)
{
    ptq_test_checks++;
    if (memcmp(got, want, (size_t)n * sizeof *got) == 0)
        return 1;
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof *got) != 0) {
            fprintf(stderr, "%s: differs at %lld: got %.9g want %.9g\n", label, (long long)i, got[i], want[i]);
            break;
        }
    ptq_test_failures++;
    return 0;
}

static void run_case(int idx, const pool_case *pc)
{
    ptq_pool_params p;
    memset(&p, 0, sizeof p);
    p.n = pc->n;
    p.c = pc->c;
    for (int s = 0; s < PTQ_SPATIAL; s++)
        p.in[s] = p.out[s] = p.k[s] = p.stride[s] = p.dil[s] = 1;
    for (int i = 0; i < pc->n_sp; i++) {
        const int s = PTQ_SPATIAL - pc->n_sp + i;
        p.in[s] = pc->in[i];
        p.k[s] = pc->k[i];
        p.stride[s] = pc->stride[i];
        p.dil[s] = pc->dil[i];
        p.pad_lo[s] = pc->pad_lo[i];
        p.pad_hi[s] = pc->pad_hi[i];
        p.out[s] = out_size(pc->in[i], pc->k[i], pc->stride[i], pc->dil[i], pc->pad_lo[i], pc->pad_hi[i],
                            pc->ceil_mode);
    }
    const int64_t n_x = p.n * p.c * p.in[0] * p.in[1] * p.in[2];
    const int64_t n_y = p.n * p.c * p.out[0] * p.out[1] * p.out[2];
    float *x = malloc((size_t)n_x * sizeof *x);
    float *y_ref = malloc((size_t)n_y * sizeof *y_ref), *y_cpu = malloc((size_t)n_y * sizeof *y_cpu);
    CHECK(x && y_ref && y_cpu);
    if (x && y_ref && y_cpu) {
        test_rand_seed(4000 + (uint64_t)idx);
        test_fill_uniform(x, n_x, -2.0f, 1.0f); /* mostly negative: a zero from the padding would win a max */
        if (idx % 3 == 1)
            x[n_x / 2] = NAN;
        char label[64];
        snprintf(label, sizeof label, "maxpool case %d", idx);
        ptq_k_maxpool_ref(&p, x, y_ref);
        ptq_k_maxpool_cpu(&p, x, y_cpu);
        same_bits(label, y_cpu, y_ref, n_y);
        /* ties: the first of equal values in tap order is the max, so -0 or +0 as the taps take them; and a NaN
         * in every third window's place at once */
        float *t = malloc((size_t)n_x * sizeof *t);
        CHECK(t != NULL);
        if (t) {
            static const float pick[4] = {-0.0f, 0.0f, -1.0f, -0.0f};
            for (int64_t i = 0; i < n_x; i++)
                t[i] = pick[test_rand_u64() % 4];
            snprintf(label, sizeof label, "maxpool case %d ties", idx);
            ptq_k_maxpool_ref(&p, t, y_ref);
            ptq_k_maxpool_cpu(&p, t, y_cpu);
            same_bits(label, y_cpu, y_ref, n_y);
            for (int64_t i = 0; i < n_x; i += 97)
                t[i] = i % 2 ? NAN : -NAN;
            snprintf(label, sizeof label, "maxpool case %d ties and NaNs", idx);
            ptq_k_maxpool_ref(&p, t, y_ref);
            ptq_k_maxpool_cpu(&p, t, y_cpu);
            same_bits(label, y_cpu, y_ref, n_y);
            free(t);
        }
        for (int include = 0; include < 2; include++) {
            p.count_include_pad = include;
            snprintf(label, sizeof label, "avgpool case %d include_pad %d", idx, include);
            ptq_k_avgpool_ref(&p, x, y_ref);
            ptq_k_avgpool_cpu(&p, x, y_cpu);
            same_bits(label, y_cpu, y_ref, n_y);
        }
    }
    free(x);
    free(y_ref);
    free(y_cpu);
}

/* Hand-checked values from the ONNX operator docs. */
static void known_values(void)
{
    ptq_pool_params p = {1, 1, {1, 4, 4}, {1, 2, 2}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, 0};
    float x[16], y[4];
    for (int i = 0; i < 16; i++)
        x[i] = (float)(i + 1);
    ptq_k_maxpool_cpu(&p, x, y); /* maxpool_2d_ceil */
    CHECK(y[0] == 11.0f && y[1] == 12.0f && y[2] == 15.0f && y[3] == 16.0f);
    ptq_k_avgpool_cpu(&p, x, y); /* averagepool_2d_ceil */
    CHECK(y[0] == 6.0f && y[1] == 7.5f && y[2] == 12.0f && y[3] == 13.5f);
    /* count_include_pad: a 3x3 window at the corner of a 1-padded 2x2 input sees 4 values of 9 */
    ptq_pool_params q = {1, 1, {1, 2, 2}, {1, 2, 2}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1};
    const float x4[4] = {1, 2, 3, 4};
    ptq_k_avgpool_ref(&q, x4, y);
    CHECK(fabsf(y[0] - 10.0f / 9.0f) < 1e-6f);
    ptq_k_maxpool_ref(&q, (const float[4]){-1, -2, -3, -4}, y);
    CHECK(y[0] == -1.0f && y[3] == -1.0f); /* padding never wins a max */
}

static void global_and_batchnorm(void)
{
    static const int64_t shapes[][3] = {{1, 1, 1}, {2, 3, 25}, {4, 7, 49}, {3, 5, 1000}, {64, 96, 49}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int64_t n = shapes[s][0], c = shapes[s][1], sp = shapes[s][2], n_x = n * c * sp;
        float *x = malloc((size_t)n_x * sizeof *x), *y_ref = malloc((size_t)n_x * sizeof *y_ref);
        float *y_cpu = malloc((size_t)n_x * sizeof *y_cpu), *ch = malloc(4 * (size_t)c * sizeof *ch);
        CHECK(x && y_ref && y_cpu && ch);
        if (x && y_ref && y_cpu && ch) {
            char label[64];
            test_rand_seed(5000 + s);
            test_fill_uniform(x, n_x, -3.0f, 3.0f);
            test_fill_uniform(ch, 3 * c, -1.0f, 1.0f);      /* scale, bias, mean */
            test_fill_uniform(ch + 3 * c, c, 0.0f, 2.0f); /* var */
            snprintf(label, sizeof label, "global avgpool %lldx%lld", (long long)(n * c), (long long)sp);
            ptq_k_global_avgpool_ref(n * c, sp, x, y_ref);
            ptq_k_global_avgpool_cpu(n * c, sp, x, y_cpu);
            same_bits(label, y_cpu, y_ref, n * c);
            snprintf(label, sizeof label, "batchnorm %lldx%lldx%lld", (long long)n, (long long)c, (long long)sp);
            ptq_k_batchnorm_ref(n, c, sp, x, ch, ch + c, ch + 2 * c, ch + 3 * c, 1e-5f, y_ref);
            ptq_k_batchnorm_cpu(n, c, sp, x, ch, ch + c, ch + 2 * c, ch + 3 * c, 1e-5f, y_cpu);
            test_close(label, y_cpu, y_ref, n_x, 1e-5f, 1e-6f);
            ptq_k_batchnorm_cpu(n, c, sp, x, ch, ch + c, ch + 2 * c, ch + 3 * c, 1e-5f, x); /* in place */
            CHECK(memcmp(x, y_cpu, (size_t)n_x * sizeof *x) == 0);
        }
        free(x);
        free(y_ref);
        free(y_cpu);
        free(ch);
    }
}

/* ptq_k_mean_mid_cpu against ptq_k_reduce_mean_ref over the middle axis of [outer, n_red, inner] (and over two
 * middle axes of [outer, r0, r1, inner]): bit for bit, on data whose double sums depend on their order, and on
 * sums of NaNs of both signs (the ref's first NaN). */
static void mean_middle(void)
{
    static const int64_t shapes[][3] = {{3, 17, 128}, {1, 1, 5}, {2, 300, 3}, {4, 5, 1000}, {0, 3, 4}, {7, 2, 257}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int64_t outer = shapes[s][0], n_red = shapes[s][1], inner = shapes[s][2];
        const int64_t n_x = outer * n_red * inner, n_y = outer * inner;
        float *x = malloc((size_t)(n_x + 1) * sizeof *x), *y_ref = malloc((size_t)(n_y + 1) * sizeof *y_ref);
        float *y_cpu = malloc((size_t)(n_y + 1) * sizeof *y_cpu);
        CHECK(x && y_ref && y_cpu);
        if (x && y_ref && y_cpu) {
            test_rand_seed(6000 + s);
            test_fill_uniform(x, n_x, -3.0f, 3.0f);
            for (int64_t i = 0; i < n_x; i += 3) /* 3e16 + v - 3e16 in double: the order matters */
                x[i] = (i / inner) % 2 ? -3e16f : 3e16f;
            if (n_x > 10)
                x[n_x / 2] = NAN;
            const int64_t dims[3] = {outer, n_red, inner};
            const unsigned char reduced[3] = {0, 1, 0};
            ptq_k_reduce_mean_ref(3, dims, reduced, x, y_ref);
            ptq_k_mean_mid_cpu(outer, n_red, inner, x, y_cpu);
            char label[64];
            snprintf(label, sizeof label, "mean over the middle axis, shape %zu", s);
            same_bits(label, y_cpu, y_ref, n_y);
            if (n_red % 5 == 0 && n_red > 0) { /* the same bytes as two axes [n_red / 5, 5] */
                const int64_t dims4[4] = {outer, n_red / 5, 5, inner};
                const unsigned char reduced4[4] = {0, 1, 1, 0};
                ptq_k_reduce_mean_ref(4, dims4, reduced4, x, y_ref);
                snprintf(label, sizeof label, "mean over two middle axes, shape %zu", s);
                same_bits(label, y_cpu, y_ref, n_y);
            }
            if (n_red > 1) { /* NaNs of both signs in one sum: the first, as the ref adds them, is the mean */
                for (int64_t o = 0; o < outer; o++)
                    for (int64_t i = 0; i < inner; i++) {
                        x[(o * n_red + n_red - 1) * inner + i] = i % 2 ? NAN : -NAN;
                        x[(o * n_red + (i % 3 == 0 ? 0 : n_red / 2)) * inner + i] = i % 2 ? -NAN : NAN;
                    }
                ptq_k_reduce_mean_ref(3, dims, reduced, x, y_ref);
                ptq_k_mean_mid_cpu(outer, n_red, inner, x, y_cpu);
                snprintf(label, sizeof label, "mean over the middle axis, NaNs of both signs, shape %zu", s);
                same_bits(label, y_cpu, y_ref, n_y);
            }
        }
        free(x);
        free(y_ref);
        free(y_cpu);
    }
}

int main(void)
{
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++)
        run_case(i, &cases[i]);
    known_values();
    global_and_batchnorm();
    mean_middle();
    return test_done("parity_pool");
}
