/* Fast CPU softmax over the middle dim of [outer, len, inner]: rows (inner
 * 1) or tiles of SM_TILE adjacent columns, so reads stay contiguous, spread
 * over the CPU pool (core/parallel.h). Same arithmetic and summation order as
 * kernels/ref/softmax.c, so bit-exact in tests/parity_elementwise.c. */
#include <math.h>

#include "core/parallel.h"
#include "kernels/kernels.h"

enum {
    SM_TILE = 64,              /* columns of one [len, inner] slab handled together */
    SM_PARALLEL_MIN = 1 << 12  /* below this many elements stay on one thread */
};

/* x, y: [len] rows. */
static void softmax_row(int64_t len, const float *x, float *y)
{
    float max = -INFINITY;
    for (int64_t l = 0; l < len; l++)
        if (x[l] > max)
            max = x[l];
    double sum = 0.0;
    for (int64_t l = 0; l < len; l++) {
        y[l] = expf(x[l] - max);
        sum += y[l];
    }
    for (int64_t l = 0; l < len; l++)
        y[l] = (float)(y[l] / sum);
}

/* x, y: [len, inner] slabs, columns [0, n_cols) of them (n_cols <= SM_TILE). */
static void softmax_cols(int64_t len, int64_t inner, int64_t n_cols, const float *x, float *y)
{
    float max[SM_TILE];
    double sum[SM_TILE];
    for (int64_t j = 0; j < n_cols; j++) {
        max[j] = -INFINITY;
        sum[j] = 0.0;
    }
    for (int64_t l = 0; l < len; l++)
        for (int64_t j = 0; j < n_cols; j++)
            if (x[l * inner + j] > max[j])
                max[j] = x[l * inner + j];
    for (int64_t l = 0; l < len; l++)
        for (int64_t j = 0; j < n_cols; j++) {
            y[l * inner + j] = expf(x[l * inner + j] - max[j]);
            sum[j] += y[l * inner + j];
        }
    for (int64_t l = 0; l < len; l++)
        for (int64_t j = 0; j < n_cols; j++)
            y[l * inner + j] = (float)(y[l * inner + j] / sum[j]);
}

typedef struct sm_job {
    int64_t len, inner, n_tiles_slab;
    const float *x;
    float *y;
} sm_job;

/* Tiles [begin, end): a whole row when inner is 1, else SM_TILE columns of one slab. */
static void sm_tiles(void *arg, int64_t begin, int64_t end, int worker)
{
    const sm_job *j = arg;
    const int64_t len = j->len, inner = j->inner;
    for (int64_t t = begin; t < end; t++) {
        if (inner == 1) {
            softmax_row(len, j->x + t * len, j->y + t * len);
            continue;
        }
        int64_t o = t / j->n_tiles_slab, lo = (t % j->n_tiles_slab) * SM_TILE;
        int64_t n_cols = inner - lo < SM_TILE ? inner - lo : SM_TILE;
        softmax_cols(len, inner, n_cols, j->x + o * len * inner + lo, j->y + o * len * inner + lo);
    }
}

/* x, y: [outer, len, inner], row-major. */
void ptq_k_softmax_cpu(int64_t outer, int64_t len, int64_t inner, const float *x, float *y)
{
    const int64_t n_tiles_slab = inner == 1 ? 1 : (inner + SM_TILE - 1) / SM_TILE;
    const int64_t n_tiles = outer * n_tiles_slab;
    sm_job job = {len, inner, n_tiles_slab, x, y};
    int64_t grain = outer * len * inner >= SM_PARALLEL_MIN ? ptq_par_grain(n_tiles, 4, 1) : n_tiles;
    ptq_parallel_for(n_tiles, grain, sm_tiles, &job);
}
