/* Parity of ptq_k_gemm_cpu / ptq_k_gemm_batched_cpu (FMA tiles, or OpenBLAS
 * without AVX2) with the ref on seeded data: odd and degenerate sizes, all
 * trans_a/trans_b, alpha/beta (beta 0 must not read y), broadcast batches on
 * both threading paths; each row of a product bit-identical to the same row
 * computed alone (batch invariance: OpenBLAS's Haswell/Zen kernels round
 * rows 12-15 of a 16-row call their own way); the AVX2 tiles, the AVX-512
 * tiles and the AVX-512 narrow rows the same bits (isa_alike); and
 * ptq_k_gemm_bias_cpu the product then an Add, bit for bit (bias_alike).
 * Tolerance: rtol 1e-4, atol 1e-5 (inputs in [-1, 1], k <= 160). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "testlib.h"

#define RTOL 1e-4f
#define ATOL 1e-5f

static const int64_t sizes[][3] = {
    {1, 1, 1}, {1, 7, 5}, {3, 1, 4}, {5, 4, 1}, {2, 3, 0}, {17, 13, 11}, {33, 65, 17}, {64, 64, 64},
    {127, 31, 129}, {200, 150, 160}, {1, 300, 129}, {300, 2, 3},
};

static const float alphas_betas[][2] = {{1.0f, 0.0f}, {0.25f, 0.35f}, {-1.5f, 1.0f}, {1.0f, 1.0f}};

static void run_gemm(int idx, const ptq_gemm_params *p)
{
    const int64_t n_a = p->m * p->k, n_b = p->k * p->n, n_y = p->m * p->n;
    float *a = malloc((size_t)(n_a + 1) * sizeof *a), *b = malloc((size_t)(n_b + 1) * sizeof *b);
    float *y_ref = malloc((size_t)(n_y + 1) * sizeof *y_ref), *y_cpu = malloc((size_t)(n_y + 1) * sizeof *y_cpu);
    CHECK(a && b && y_ref && y_cpu);
    if (a && b && y_ref && y_cpu) {
        test_rand_seed(2000 + (uint64_t)idx);
        test_fill_uniform(a, n_a, -1.0f, 1.0f);
        test_fill_uniform(b, n_b, -1.0f, 1.0f);
        test_fill_uniform(y_ref, n_y, -1.0f, 1.0f);
        for (int64_t i = 0; i < n_y; i++)
            y_cpu[i] = p->beta == 0.0f ? NAN : y_ref[i]; /* beta == 0: y must not be read */
        if (p->beta == 0.0f)
            for (int64_t i = 0; i < n_y; i++)
                y_ref[i] = NAN;
        ptq_k_gemm_ref(p, a, b, y_ref);
        ptq_k_gemm_cpu(p, a, b, y_cpu);
        char label[96];
        snprintf(label, sizeof label, "gemm %lldx%lldx%lld ta%d tb%d a%g b%g", (long long)p->m, (long long)p->n,
                 (long long)p->k, p->trans_a, p->trans_b, p->alpha, p->beta);
        int finite = 1;
        for (int64_t i = 0; i < n_y; i++)
            finite &= isfinite(y_ref[i]) != 0;
        CHECK_MSG(finite, "%s: ref read y with beta 0 or left it unwritten", label);
        test_close(label, y_cpu, y_ref, n_y, RTOL, ATOL);
    }
    free(a);
    free(b);
    free(y_ref);
    free(y_cpu);
}

/* n_batch slices; A has a_batch distinct slices, B b_batch (1 = shared), the
 * rest repeat them as MatMul's broadcasting does. */
static void run_batched(int idx, const ptq_gemm_params *p, int64_t n_batch, int64_t a_batch, int64_t b_batch)
{
    const int64_t n_a = a_batch * p->m * p->k, n_b = b_batch * p->k * p->n, n_y = n_batch * p->m * p->n;
    float *a = malloc((size_t)n_a * sizeof *a), *b = malloc((size_t)n_b * sizeof *b);
    float *y_ref = malloc((size_t)n_y * sizeof *y_ref), *y_cpu = malloc((size_t)n_y * sizeof *y_cpu);
    int64_t *a_off = malloc((size_t)n_batch * sizeof *a_off), *b_off = malloc((size_t)n_batch * sizeof *b_off);
    CHECK(a && b && y_ref && y_cpu && a_off && b_off);
    if (a && b && y_ref && y_cpu && a_off && b_off) {
        test_rand_seed(3000 + (uint64_t)idx);
        test_fill_uniform(a, n_a, -1.0f, 1.0f);
        test_fill_uniform(b, n_b, -1.0f, 1.0f);
        for (int64_t i = 0; i < n_batch; i++) {
            a_off[i] = i % a_batch * p->m * p->k;
            b_off[i] = i / (n_batch / b_batch) * p->k * p->n;
        }
        for (int64_t i = 0; i < n_y; i++)
            y_ref[i] = y_cpu[i] = NAN;
        ptq_k_gemm_batched_ref(p, n_batch, a_off, b_off, a, b, y_ref);
        ptq_k_gemm_batched_cpu(p, n_batch, a_off, b_off, a, b, y_cpu);
        char label[96];
        snprintf(label, sizeof label, "batched %lld x (%lldx%lldx%lld) a_batch %lld b_batch %lld", (long long)n_batch,
                 (long long)p->m, (long long)p->n, (long long)p->k, (long long)a_batch, (long long)b_batch);
        test_close(label, y_cpu, y_ref, n_y, RTOL, ATOL);
        /* slice 1 by hand: the batched ref must equal a single gemm on it */
        if (n_batch > 1) {
            float *y1 = malloc((size_t)(p->m * p->n) * sizeof *y1);
            CHECK(y1 != NULL);
            if (y1) {
                ptq_k_gemm_ref(p, a + a_off[1], b + b_off[1], y1);
                CHECK_MSG(memcmp(y_ref + p->m * p->n, y1, (size_t)(p->m * p->n) * sizeof *y1) == 0,
                          "%s: slice 1 differs from a single gemm", label);
            }
            free(y1);
        }
    }
    free(a);
    free(b);
    free(y_ref);
    free(y_cpu);
    free(a_off);
    free(b_off);
}

/* Every row of an m-row product against the same row as a product of one
 * row: bit-identical, whatever m and the row's place. */
static void run_rows_alone(int idx, int64_t m, int64_t n, int64_t k, int trans_b, float beta)
{
    const ptq_gemm_params p = {m, n, k, 0, trans_b, 1.0f, beta}, one = {1, n, k, 0, trans_b, 1.0f, beta};
    float *a = malloc((size_t)(m * k) * sizeof *a), *b = malloc((size_t)(k * n) * sizeof *b);
    float *y0 = malloc((size_t)(m * n) * sizeof *y0), *y = malloc((size_t)(m * n) * sizeof *y);
    float *row = malloc((size_t)n * sizeof *row);
    CHECK(a && b && y0 && y && row);
    if (!(a && b && y0 && y && row))
        return;
    test_rand_seed(5000 + (uint64_t)idx);
    test_fill_uniform(a, m * k, -1.0f, 1.0f);
    test_fill_uniform(b, k * n, -1.0f, 1.0f);
    test_fill_uniform(y0, m * n, -1.0f, 1.0f);
    memcpy(y, y0, (size_t)(m * n) * sizeof *y);
    ptq_k_gemm_cpu(&p, a, b, y);
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < m; i++) {
        memcpy(row, y0 + i * n, (size_t)n * sizeof *row);
        ptq_k_gemm_cpu(&one, a + i * k, b, row);
        if (memcmp(row, y + i * n, (size_t)n * sizeof *row) != 0 && bad++ == 0)
            first = i;
    }
    CHECK_MSG(bad == 0, "gemm %lldx%lldx%lld trans_b %d beta %g: %lld rows differ from the row alone (first %lld)",
              (long long)m, (long long)n, (long long)k, trans_b, beta, (long long)bad, (long long)first);
    free(a);
    free(b);
    free(y0);
    free(y);
    free(row);
}

/* The product of p on the AVX-512 paths (tiles, and narrow_rows where n <= 16) against the AVX2 tiles, with
 * y's old values (beta) or a bias row: bit-identical. Skipped (said) on a CPU without AVX-512. */
static void isa_alike(int idx, const ptq_gemm_params *p, int with_bias)
{
    if (ptq_k_conv_cpu_isa() < 2)
        return;
    const int64_t n_a = p->m * p->k, n_b = p->k * p->n, n_y = p->m * p->n;
    float *a = malloc((size_t)(n_a + 1) * sizeof *a), *b = malloc((size_t)(n_b + 1) * sizeof *b);
    float *y0 = malloc((size_t)(n_y + 1) * sizeof *y0), *y1 = malloc((size_t)(n_y + 1) * sizeof *y1);
    float *bias = malloc((size_t)(p->n + 1) * sizeof *bias);
    CHECK(a && b && y0 && y1 && bias);
    if (a && b && y0 && y1 && bias) {
        test_rand_seed(7000 + (uint64_t)idx);
        test_fill_uniform(a, n_a, -1.0f, 1.0f);
        test_fill_uniform(b, n_b, -1.0f, 1.0f);
        test_fill_uniform(bias, p->n, -1.0f, 1.0f);
        test_fill_uniform(y0, n_y, -1.0f, 1.0f);
        memcpy(y1, y0, (size_t)n_y * sizeof *y1);
        for (int isa = 2; isa >= 1; isa--) {
            ptq_k_conv_cpu_set_isa(isa);
            if (with_bias)
                ptq_k_gemm_bias_cpu(p, a, b, bias, isa == 2 ? y0 : y1);
            else
                ptq_k_gemm_cpu(p, a, b, isa == 2 ? y0 : y1);
        }
        ptq_k_conv_cpu_set_isa(-1);
        CHECK_MSG(memcmp(y0, y1, (size_t)n_y * sizeof *y0) == 0,
                  "gemm %lldx%lldx%lld ta%d tb%d a%g b%g%s: AVX-512 and AVX2 differ", (long long)p->m, (long long)p->n,
                  (long long)p->k, p->trans_a, p->trans_b, p->alpha, p->beta, with_bias ? " bias" : "");
    }
    free(a);
    free(b);
    free(y0);
    free(y1);
    free(bias);
}

/* ptq_k_gemm_bias_cpu against ptq_k_gemm_cpu (alpha 1, beta 0) and then bias added to each row as the Add node
 * does: bit-identical; the product within tolerance of the ref's plus bias. */
static void bias_alike(int idx, int64_t m, int64_t n, int64_t k, int trans_b)
{
    const ptq_gemm_params p = {m, n, k, 0, trans_b, 1.0f, 0.0f};
    float *a = malloc((size_t)(m * k + 1) * sizeof *a), *b = malloc((size_t)(k * n + 1) * sizeof *b);
    float *y0 = malloc((size_t)(m * n + 1) * sizeof *y0), *y1 = malloc((size_t)(m * n + 1) * sizeof *y1);
    float *bias = malloc((size_t)(n + 1) * sizeof *bias);
    CHECK(a && b && y0 && y1 && bias);
    if (a && b && y0 && y1 && bias) {
        test_rand_seed(8000 + (uint64_t)idx);
        test_fill_uniform(a, m * k, -1.0f, 1.0f);
        test_fill_uniform(b, k * n, -1.0f, 1.0f);
        test_fill_uniform(bias, n, -1.0f, 1.0f);
        ptq_k_gemm_bias_cpu(&p, a, b, bias, y0);
        ptq_k_gemm_cpu(&p, a, b, y1);
        for (int64_t i = 0; i < m * n; i++)
            y1[i] = y1[i] + bias[i % n];
        char label[96];
        snprintf(label, sizeof label, "gemm+bias %lldx%lldx%lld tb%d", (long long)m, (long long)n, (long long)k,
                 trans_b);
        CHECK_MSG(memcmp(y0, y1, (size_t)(m * n) * sizeof *y0) == 0, "%s: differs from the product then an Add",
                  label);
        ptq_k_gemm_ref(&p, a, b, y1);
        for (int64_t i = 0; i < m * n; i++)
            y1[i] = y1[i] + bias[i % n];
        test_close(label, y0, y1, m * n, RTOL, ATOL);
    }
    free(a);
    free(b);
    free(y0);
    free(y1);
    free(bias);
}

/* ptq_k_gemm_rows_epi_cpu (a pointwise convolution's row bias, residual and clamp in the stores) against y
 * prefilled with the row bias, ptq_k_gemm_rows_cpu with beta 1 (beta 0 without a bias), then the residual added
 * and the clamp as passes: bit-identical on the AVX-512 and the AVX2 tiles. z holds a NaN and a -0. */
static void epi_alike(int idx, const ptq_gemm_params *shape, int with_bias, int with_z, float lo, float hi)
{
    const int64_t m = shape->m, n = shape->n, k = shape->k, n_y = m * n;
    float *a = malloc((size_t)(m * k + 1) * sizeof *a), *b = malloc((size_t)(k * n + 1) * sizeof *b);
    float *y0 = malloc((size_t)(n_y + 1) * sizeof *y0), *y1 = malloc((size_t)(n_y + 1) * sizeof *y1);
    float *rb = malloc((size_t)(m + 1) * sizeof *rb), *z = malloc((size_t)(n_y + 1) * sizeof *z);
    CHECK(a && b && y0 && y1 && rb && z);
    if (a && b && y0 && y1 && rb && z) {
        test_rand_seed(9000 + (uint64_t)idx);
        test_fill_uniform(a, m * k, -1.0f, 1.0f);
        test_fill_uniform(b, k * n, -1.0f, 1.0f);
        test_fill_uniform(rb, m, -1.0f, 1.0f);
        test_fill_uniform(z, n_y, -1.0f, 1.0f);
        z[n_y / 2] = NAN;
        z[n_y / 3] = -0.0f;
        const ptq_gemm_epi e = {with_bias ? rb : NULL, with_z ? z : NULL, lo, hi};
        for (int isa = 2; isa >= 1; isa--) {
            ptq_k_conv_cpu_set_isa(isa);
            ptq_gemm_params q = *shape;
            q.alpha = 1.0f;
            q.beta = 0.0f;
            ptq_k_gemm_rows_epi_cpu(&q, a, b, &e, y0);
            for (int64_t i = 0; i < n_y; i++)
                y1[i] = with_bias ? rb[i / n] : NAN;
            q.beta = with_bias ? 1.0f : 0.0f;
            ptq_k_gemm_rows_cpu(&q, a, b, y1);
            for (int64_t i = 0; i < n_y; i++) {
                const float v = with_z ? y1[i] + z[i] : y1[i], t = v < lo ? lo : v;
                y1[i] = t > hi ? hi : t;
            }
            CHECK_MSG(memcmp(y0, y1, (size_t)n_y * sizeof *y0) == 0,
                      "gemm epilogue %lldx%lldx%lld ta%d tb%d bias %d z %d clamp [%g, %g], isa %d: differs from the "
                      "passes",
                      (long long)m, (long long)n, (long long)k, shape->trans_a, shape->trans_b, with_bias, with_z,
                      lo, hi, isa);
        }
        ptq_k_conv_cpu_set_isa(-1);
    }
    free(a);
    free(b);
    free(y0);
    free(y1);
    free(rb);
    free(z);
}

int main(void)
{
    int idx = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int t = 0; t < 4; t++)
            for (size_t ab = 0; ab < sizeof alphas_betas / sizeof alphas_betas[0]; ab++) {
                const ptq_gemm_params p = {sizes[s][0], sizes[s][1], sizes[s][2], t & 1, t >> 1,
                                           alphas_betas[ab][0], alphas_betas[ab][1]};
                run_gemm(idx++, &p);
            }
    const ptq_gemm_params small = {3, 4, 5, 0, 0, 1.0f, 0.0f}, big = {96, 80, 128, 0, 0, 1.0f, 0.0f};
    const ptq_gemm_params small_t = {7, 3, 9, 1, 1, 0.5f, 0.0f};
    run_batched(idx++, &small, 12, 12, 12); /* many small slices: threaded over slices */
    run_batched(idx++, &small, 12, 4, 3);   /* A repeats every 4 slices, B changes every 4 */
    run_batched(idx++, &small_t, 9, 9, 1);  /* B shared */
    run_batched(idx++, &big, 6, 6, 2);      /* big slices: sgemm threads itself */
    run_batched(idx++, &big, 1, 1, 1);
    /* a classifier head (the demo's 96 -> 10), a square layer, an odd shape */
    run_rows_alone(idx++, 64, 10, 96, 1, 1.0f);
    run_rows_alone(idx++, 40, 64, 96, 0, 0.0f);
    run_rows_alone(idx++, 37, 256, 256, 1, 0.0f);
    run_rows_alone(idx++, 50, 13, 7, 0, 1.0f);
    run_rows_alone(idx++, 37, 16, 16, 1, 0.0f); /* attention's slices: narrow_rows on AVX-512 */
    /* widths on both sides of the narrow rows (16) and of the AVX-512 panels' 64 and 32-left rules */
    static const int64_t shapes[][3] = {{37, 1, 9}, {23, 10, 96}, {16, 16, 16}, {33, 17, 40}, {50, 49, 24},
                                        {19, 64, 300}, {30, 80, 64}, {13, 97, 33}, {41, 192, 64}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int t = 0; t < 4; t++)
            for (size_t ab = 0; ab < sizeof alphas_betas / sizeof alphas_betas[0]; ab++) {
                const ptq_gemm_params p = {shapes[s][0], shapes[s][1], shapes[s][2], t & 1, t >> 1,
                                           alphas_betas[ab][0], alphas_betas[ab][1]};
                isa_alike(idx++, &p, 0);
                run_gemm(idx++, &p);
                if (ab == 0)
                    isa_alike(idx++, &p, 1);
            }
    if (ptq_k_conv_cpu_isa() < 2)
        printf("parity_gemm: no AVX-512 here: the AVX-512 paths were not compared with the AVX2 tiles\n");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int tb = 0; tb < 2; tb++)
            bias_alike(idx++, shapes[s][0], shapes[s][1], shapes[s][2], tb);
    /* the pointwise convolution's epilogue: its shapes (96 -> 24 channels of 196 and 49 positions) and the
     * shapes' widths, whole and partial blocks of rows, with and without each part */
    static const int64_t conv_shapes[][3] = {{24, 196, 96}, {96, 49, 24}, {13, 300, 20}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0] + 3; s++)
        for (int t = 0; t < 4; t++) {
            const int64_t *sh = s < 3 ? conv_shapes[s] : shapes[s - 3];
            const ptq_gemm_params p = {sh[0], sh[1], sh[2], s < 3 ? 0 : t & 1, s < 3 ? 0 : t >> 1, 1.0f, 0.0f};
            epi_alike(idx++, &p, t != 1, t != 2, t == 3 ? -INFINITY : 0.0f, t == 0 ? 0.5f : INFINITY);
        }
    return test_done("parity_gemm");
}
