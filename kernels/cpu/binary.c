/* Fast CPU binary elementwise kernel: merges dims that are contiguous for
 * both inputs, then runs tiles of the innermost run on the CPU pool (core/parallel.h) with
 * loops specialised for unit and zero strides. Same arithmetic as
 * kernels/ref/binary.c, so bit-exact in tests/parity_elementwise.c. */
#include "core/parallel.h"
#include "kernels/kernels.h"

enum {
    BIN_TILE = 8192,            /* innermost elements one thread takes at a time */
    BIN_PARALLEL_MIN = 1 << 16  /* below this many outputs stay on one thread */
};

#define BIN_ROW(OP)                                              \
    do {                                                         \
        if (sa == 1 && sb == 1) {                                \
            for (int64_t i = 0; i < len; i++)                    \
                y[i] = a[i] OP b[i];                             \
        } else if (sa == 1 && sb == 0) {                         \
            const float bv = b[0];                               \
            for (int64_t i = 0; i < len; i++)                    \
                y[i] = a[i] OP bv;                               \
        } else if (sa == 0 && sb == 1) {                         \
            const float av = a[0];                               \
            for (int64_t i = 0; i < len; i++)                    \
                y[i] = av OP b[i];                               \
        } else {                                                 \
            for (int64_t i = 0; i < len; i++)                    \
                y[i] = a[i * sa] OP b[i * sb];                   \
        }                                                        \
    } while (0)

/* a: len elements sa apart; b: len elements sb apart; y: [len]. To the CPU's widest vectors (the same bits: each
 * result one IEEE operation). */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
bin_row(ptq_binop op, int64_t len, const float *a, int64_t sa, const float *b, int64_t sb, float *y)
{
    switch (op) {
    case PTQ_BIN_ADD: BIN_ROW(+); break;
    case PTQ_BIN_SUB: BIN_ROW(-); break;
    case PTQ_BIN_MUL: BIN_ROW(*); break;
    case PTQ_BIN_DIV: BIN_ROW(/); break;
    }
}

/* Tiles of the merged layout, for the pool. */
typedef struct bin_job {
    ptq_binop op;
    int nd;
    const int64_t *dims, *sa, *sb; /* [nd] merged dims and strides */
    int64_t len, n_tiles_row;
    const float *a, *b;
    float *y;
} bin_job;

static void bin_tiles(void *arg, int64_t begin, int64_t end, int worker)
{
    const bin_job *j = arg;
    const int nd = j->nd;
    for (int64_t t = begin; t < end; t++) {
        int64_t row = t / j->n_tiles_row, lo = (t % j->n_tiles_row) * BIN_TILE;
        int64_t oa = lo * j->sa[nd - 1], ob = lo * j->sb[nd - 1];
        for (int d = nd - 2; d >= 0; d--) {
            int64_t idx = row % j->dims[d];
            row /= j->dims[d];
            oa += idx * j->sa[d];
            ob += idx * j->sb[d];
        }
        int64_t n = j->len - lo < BIN_TILE ? j->len - lo : BIN_TILE;
        int64_t oy = (t / j->n_tiles_row) * j->len + lo;
        bin_row(j->op, n, j->a + oa, j->sa[nd - 1], j->b + ob, j->sb[nd - 1], j->y + oy);
    }
}

/* a, b: laid out as bc->a_stride / bc->b_stride describe; y: [bc->out_dims], row-major. */
void ptq_k_binary_cpu(ptq_binop op, const ptq_bcast *bc, const float *a, const float *b, float *y)
{
    /* dims of size 1 dropped, neighbours that are contiguous for a and b merged; outermost first */
    int64_t dims[8], sa[8], sb[8];
    int nd = 0;
    for (int d = 0; d < bc->ndim; d++) {
        if (bc->out_dims[d] == 0)
            return;
        if (bc->out_dims[d] == 1)
            continue;
        if (nd > 0 && sa[nd - 1] == bc->a_stride[d] * bc->out_dims[d] &&
            sb[nd - 1] == bc->b_stride[d] * bc->out_dims[d]) {
            dims[nd - 1] *= bc->out_dims[d];
            sa[nd - 1] = bc->a_stride[d];
            sb[nd - 1] = bc->b_stride[d];
            continue;
        }
        dims[nd] = bc->out_dims[d];
        sa[nd] = bc->a_stride[d];
        sb[nd] = bc->b_stride[d];
        nd++;
    }
    if (nd == 0) {
        bin_row(op, 1, a, 1, b, 1, y);
        return;
    }
    const int64_t len = dims[nd - 1];
    int64_t n_rows = 1;
    for (int d = 0; d < nd - 1; d++)
        n_rows *= dims[d];
    const int64_t n_tiles_row = (len + BIN_TILE - 1) / BIN_TILE;
    const int64_t n_tiles = n_rows * n_tiles_row;
    bin_job job = {op, nd, dims, sa, sb, len, n_tiles_row, a, b, y};
    const int64_t grain = n_rows * len >= BIN_PARALLEL_MIN ? ptq_par_grain(n_tiles, 4, 1) : n_tiles;
    ptq_parallel_for(n_tiles, grain, bin_tiles, &job);
}
