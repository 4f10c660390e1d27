/* Parity of ptq_k_layernorm_cpu (rows over the pool) with
 * ptq_k_layernorm_ref: bit for bit, outputs, means and inverse deviations,
 * on seeded data of 0 to 3,001 rows of 1 to 768 columns (NaN, -0 and Inf
 * rows among them, and one whose sums depend on their order), with and without
 * a bias and the two optional outputs, pool sizes 1, 2 and 5. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/parallel.h"
#include "kernels/kernels.h"
#include "testlib.h"

int main(void)
{
    const int saved = ptq_par_workers();
    static const int64_t shapes[][2] = {{0, 8}, {1, 1}, {3, 5}, {17, 64}, {200, 192}, {3001, 16}, {65, 768}};
    static const int pools[] = {1, 2, 5};
    test_rand_seed(7);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int64_t rows = shapes[s][0], cols = shapes[s][1], n = rows * cols;
        float *x = malloc((size_t)(n + 1) * sizeof *x), *g = malloc((size_t)cols * sizeof *g);
        float *b = malloc((size_t)cols * sizeof *b), *y[2], *m[2], *v[2];
        for (int k = 0; k < 2; k++) {
            y[k] = malloc((size_t)(n + 1) * sizeof *y[k]);
            m[k] = malloc((size_t)(rows + 1) * sizeof *m[k]);
            v[k] = malloc((size_t)(rows + 1) * sizeof *v[k]);
        }
        CHECK(x && g && b && y[0] && y[1] && m[0] && m[1] && v[0] && v[1]);
        if (x && g && b && y[0] && y[1] && m[0] && m[1] && v[0] && v[1]) {
            test_fill_uniform(x, n, -3.0f, 5.0f);
            test_fill_uniform(g, cols, 0.5f, 1.5f);
            test_fill_uniform(b, cols, -1.0f, 1.0f);
            if (rows > 10) { /* a NaN row, a row of -0 (without a bias, +0 out: the ref adds 0.0), an Inf row */
                x[0] = NAN;
                for (int64_t c = 0; c < cols; c++)
                    x[cols + c] = -0.0f;
                x[9 * cols] = INFINITY;
                for (int64_t c = 0; c < cols; c++) /* sums in double that depend on their order */
                    x[2 * cols + c] = c % 3 == 0 ? 3e16f : c % 3 == 1 ? 1.0f + (float)c : -3e16f;
            }
            for (int p = 0; p < 3; p++)
                for (int with = 0; with < 2; with++) {
                    for (int k = 0; k < 2; k++) {
                        memset(y[k], k ? 0x11 : 0x22, (size_t)(n + 1) * sizeof *y[k]);
                        memset(m[k], k ? 0x11 : 0x22, (size_t)(rows + 1) * sizeof *m[k]);
                        memset(v[k], k ? 0x11 : 0x22, (size_t)(rows + 1) * sizeof *v[k]);
                    }
                    ptq_par_set_workers(pools[p]);
                    ptq_k_layernorm_ref(rows, cols, x, g, with ? b : NULL, 1e-5f, y[0], with ? m[0] : NULL,
                                        with ? v[0] : NULL);
                    ptq_k_layernorm_cpu(rows, cols, x, g, with ? b : NULL, 1e-5f, y[1], with ? m[1] : NULL,
                                        with ? v[1] : NULL);
                    CHECK_MSG(memcmp(y[0], y[1], (size_t)n * sizeof *y[0]) == 0 &&
                                  (!with || (memcmp(m[0], m[1], (size_t)rows * sizeof *m[0]) == 0 &&
                                             memcmp(v[0], v[1], (size_t)rows * sizeof *v[0]) == 0)),
                              "rows %lld cols %lld pool %d %s", (long long)rows, (long long)cols, pools[p],
                              with ? "bias, mean, inv_std" : "no bias");
                }
        }
        free(x);
        free(g);
        free(b);
        for (int k = 0; k < 2; k++) {
            free(y[k]);
            free(m[k]);
            free(v[k]);
        }
    }
    ptq_par_set_workers(saved);
    return test_done("parity_layernorm");
}
