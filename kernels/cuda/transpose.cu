/* Transpose and Slice on the GPU for 1, 2, 4 and 8-byte elements, mirroring
 * ptq_k_transpose_ref and ptq_k_slice_ref: one thread per output element
 * gathers its input element through per-dim strides (permuted, or times the
 * slice's steps, from the slice's first element), the layout's contiguous
 * runs of dims merged first and int indices where they fit; a slice that is
 * one block of rows goes as a 2-D copy. Two faster walks of the same
 * gather: where the innermost dim stays innermost in whole 16 or 8-byte
 * units (a [B, S, H, D] -> [B, H, S, D] head split), the units move as one
 * element each; where the innermost dim moves (K^T, [B, H, S, D] -> [B, H,
 * D, S]) 32 x 32 tiles go through shared memory, so both reads and writes
 * are coalesced. Covered by tests/cuda_parity_kernels.c. */
#include "kernels/cuda/cuda_common.cuh"

/* Output dims and, per output dim, the input stride it walks (negative for a
 * slice's negative step), from input element base. */
typedef struct perm_layout {
    int ndim;
    int64_t base;
    int64_t out_dims[8];
    int64_t in_stride[8];
} perm_layout;

/* x: [in_dims] row-major; y: [out_dims] row-major, T-sized elements; I: the
 * index type, int where every offset fits */
template <typename T, typename I>
static __global__ void transpose_kernel(perm_layout l, I total, const T *x, T *y)
{
    I out_dims[8], in_stride[8];
    for (int dim = 0; dim < l.ndim; dim++) {
        out_dims[dim] = (I)l.out_dims[dim];
        in_stride[dim] = (I)l.in_stride[dim];
    }
    for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (I)gridDim.x * blockDim.x) {
        I rest = i, src = (I)l.base;
        for (int dim = l.ndim - 1; dim >= 0; dim--) {
            src += (rest % out_dims[dim]) * in_stride[dim];
            rest /= out_dims[dim];
        }
        y[i] = x[src];
    }
}

template <typename T>
static ptq_status launch(ptq_ctx *ctx, ptq_cuda_dev *d, const perm_layout *l, int64_t total, int narrow,
                         const void *x, void *y)
{
    if (narrow)
        transpose_kernel<T, int><<<ptq_cuda_blocks(total), PTQ_CUDA_BLOCK, 0, d->stream>>>(*l, (int)total,
                                                                                        (const T *)x, (T *)y);
    else
        transpose_kernel<T, int64_t><<<ptq_cuda_blocks(total), PTQ_CUDA_BLOCK, 0, d->stream>>>(*l, total,
                                                                                            (const T *)x, (T *)y);
    PTQ_CUDA_LAUNCHED(ctx, "transpose_kernel");
    return PTQ_OK;
}

/* l with its size-1 dims dropped and each run of output dims that walks the
 * input contiguously (a dim's stride the next one's times its length) made
 * one dim: fewer divisions per element, the same gather. */
static perm_layout coalesce(const perm_layout *l)
{
    perm_layout c = *l;
    c.ndim = 0;
    for (int dim = 0; dim < l->ndim; dim++) {
        if (l->out_dims[dim] == 1)
            continue;
        if (c.ndim > 0 && c.in_stride[c.ndim - 1] == l->in_stride[dim] * l->out_dims[dim]) {
            c.out_dims[c.ndim - 1] *= l->out_dims[dim];
            c.in_stride[c.ndim - 1] = l->in_stride[dim];
            continue;
        }
        c.out_dims[c.ndim] = l->out_dims[dim];
        c.in_stride[c.ndim++] = l->in_stride[dim];
    }
    return c;
}

/* Tiles of the 2-D transposes: a tile's side, and the rows of it a thread block's TILE_ROWS x TILE threads
 * move per step */
enum { TILE = 32, TILE_ROWS = 8 };

/* A gather whose input is contiguous along output dim j (stride 1) but not along the last output dim: for each
 * combination of the other dims (the batch), out[j, last] = in[j + last * last_stride]. */
typedef struct tile_layout {
    int64_t dim_j, dim_last, last_stride, out_stride_j, n_batch;
    int nb; /* the batch dims, outermost first */
    int64_t b_dims[6], b_in_stride[6], b_out_stride[6];
    int64_t base;
} tile_layout;

/* One thread block per (tile, batch): reads TILE consecutive inputs along j per row of the tile, writes TILE
 * consecutive outputs along last. */
template <typename T>
static __global__ void tile_transpose_kernel(tile_layout l, const T *x, T *y)
{
    __shared__ T tile[TILE][TILE + 1];
    const int64_t j0 = (int64_t)blockIdx.y * TILE, c0 = (int64_t)blockIdx.x * TILE;
    for (int64_t b = blockIdx.z; b < l.n_batch; b += gridDim.z) {
        int64_t rest = b, in_off = l.base, out_off = 0;
        for (int dim = l.nb - 1; dim >= 0; dim--) {
            const int64_t at = rest % l.b_dims[dim];
            rest /= l.b_dims[dim];
            in_off += at * l.b_in_stride[dim];
            out_off += at * l.b_out_stride[dim];
        }
        for (int r = threadIdx.y; r < TILE; r += TILE_ROWS) {
            const int64_t j = j0 + threadIdx.x, c = c0 + r;
            if (j < l.dim_j && c < l.dim_last)
                tile[r][threadIdx.x] = x[in_off + j + c * l.last_stride];
        }
        __syncthreads();
        for (int r = threadIdx.y; r < TILE; r += TILE_ROWS) {
            const int64_t j = j0 + r, c = c0 + threadIdx.x;
            if (j < l.dim_j && c < l.dim_last)
                y[out_off + j * l.out_stride_j + c] = tile[threadIdx.x][r];
        }
        __syncthreads();
    }
}

/* The tiled walk of l (coalesced) when it fits one: its input is contiguous along some output dim j before the
 * last, the last has a stride, both dims span at least a tile's rows, and the grid's y dim holds j's tiles. */
static int as_tiles(const perm_layout *l, tile_layout *t)
{
    const int last = l->ndim - 1;
    int j = -1;
    for (int dim = 0; dim < last; dim++)
        if (l->in_stride[dim] == 1)
            j = dim;
    if (last < 1 || j < 0 || l->in_stride[last] == 1 || l->ndim > 8 || l->out_dims[j] < TILE_ROWS ||
        l->out_dims[last] < TILE_ROWS || (l->out_dims[j] + TILE - 1) / TILE > 65535)
        return 0;
    memset(t, 0, sizeof *t);
    t->dim_j = l->out_dims[j];
    t->dim_last = l->out_dims[last];
    t->last_stride = l->in_stride[last];
    t->base = l->base;
    t->n_batch = 1;
    for (int dim = 0; dim < last; dim++) {
        int64_t out_stride = 1; /* of dim, in the row-major output */
        for (int after = dim + 1; after <= last; after++)
            out_stride *= l->out_dims[after];
        if (dim == j) {
            t->out_stride_j = out_stride;
            continue;
        }
        t->n_batch *= l->out_dims[dim];
        t->b_dims[t->nb] = l->out_dims[dim];
        t->b_in_stride[t->nb] = l->in_stride[dim];
        t->b_out_stride[t->nb++] = out_stride;
    }
    return 1;
}

template <typename T>
static ptq_status launch_tiles(ptq_ctx *ctx, ptq_cuda_dev *d, const tile_layout *t, const void *x, void *y)
{
    const dim3 grid((unsigned)((t->dim_last + TILE - 1) / TILE), (unsigned)((t->dim_j + TILE - 1) / TILE),
                    (unsigned)(t->n_batch < 65535 ? t->n_batch : 65535));
    tile_transpose_kernel<T><<<grid, dim3(TILE, TILE_ROWS), 0, d->stream>>>(*t, (const T *)x, (T *)y);
    PTQ_CUDA_LAUNCHED(ctx, "tile_transpose_kernel");
    return PTQ_OK;
}

/* l (coalesced) with its innermost dim, contiguous in the input, moved in units of `unit` bytes instead of
 * elem_bytes: 1 when every offset the walk takes and both pointers are whole units, the innermost dim a whole
 * number of them. */
static int as_units(perm_layout *l, int64_t *total, size_t elem_bytes, size_t unit, const void *x, const void *y)
{
    const int last = l->ndim - 1;
    const int64_t v = (int64_t)(unit / elem_bytes);
    if (last < 0 || unit <= elem_bytes || l->in_stride[last] != 1 || l->out_dims[last] % v != 0 ||
        l->base % v != 0 || (uintptr_t)x % unit != 0 || (uintptr_t)y % unit != 0)
        return 0;
    for (int dim = 0; dim < last; dim++)
        if (l->in_stride[dim] % v != 0)
            return 0;
    for (int dim = 0; dim < last; dim++)
        l->in_stride[dim] /= v;
    l->out_dims[last] /= v;
    l->base /= v;
    *total /= v;
    return 1;
}

/* y[i] = x[the element l maps output element i to], total elements */
static ptq_status gather(ptq_ctx *ctx, ptq_cuda_dev *d, const char *what, size_t elem_bytes, const perm_layout *l_in,
                         int64_t total, const void *x, void *y)
{
    if (total == 0)
        return PTQ_OK;
    perm_layout l = coalesce(l_in);
    if (as_units(&l, &total, elem_bytes, 16, x, y))
        elem_bytes = 16;
    else if (as_units(&l, &total, elem_bytes, 8, x, y))
        elem_bytes = 8;
    tile_layout t;
    if (elem_bytes <= 8 && as_tiles(&l, &t)) {
        switch (elem_bytes) {
        case 1: return launch_tiles<uint8_t>(ctx, d, &t, x, y);
        case 2: return launch_tiles<uint16_t>(ctx, d, &t, x, y);
        case 4: return launch_tiles<uint32_t>(ctx, d, &t, x, y);
        case 8: return launch_tiles<uint64_t>(ctx, d, &t, x, y);
        }
    }
    /* int indices when the output count and every input offset the walk reaches (from base, each dim's stride
     * times its length at most, either sign) stay below 2^30: the grid-stride step (at most 2^24) cannot then
     * carry an index past int's range */
    int64_t reach = l.base < 0 ? -l.base : l.base;
    for (int dim = 0; dim < l.ndim; dim++)
        reach += (l.in_stride[dim] < 0 ? -l.in_stride[dim] : l.in_stride[dim]) * l.out_dims[dim];
    const int narrow = total < ((int64_t)1 << 30) && reach < ((int64_t)1 << 30);
    switch (elem_bytes) {
    case 1: return launch<uint8_t>(ctx, d, &l, total, narrow, x, y);
    case 2: return launch<uint16_t>(ctx, d, &l, total, narrow, x, y);
    case 4: return launch<uint32_t>(ctx, d, &l, total, narrow, x, y);
    case 8: return launch<uint64_t>(ctx, d, &l, total, narrow, x, y);
    case 16: return launch<uint4>(ctx, d, &l, total, narrow, x, y);
    }
    return ptq_fail(ctx, PTQ_ERR_UNSUPPORTED, "%s: %zu-byte elements; the GPU takes 1, 2, 4 or 8", what, elem_bytes);
}

extern "C" ptq_status ptq_k_transpose_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, size_t elem_bytes, int ndim,
                                           const int64_t *in_dims, const int64_t *perm, const void *x, void *y)
{
    if (ndim < 0 || ndim > 8)
        return ptq_fail(ctx, PTQ_ERR_SHAPE, "transpose: %d dims; at most 8", ndim);
    perm_layout l;
    int64_t in_stride[8], total = 1;
    for (int dim = ndim - 1; dim >= 0; dim--) {
        in_stride[dim] = total;
        total *= in_dims[dim];
    }
    l.ndim = ndim;
    l.base = 0;
    for (int dim = 0; dim < ndim; dim++) {
        if (perm[dim] < 0 || perm[dim] >= ndim)
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "transpose: perm[%d] = %lld is out of range", dim,
                            (long long)perm[dim]);
        l.out_dims[dim] = in_dims[perm[dim]];
        l.in_stride[dim] = in_stride[perm[dim]];
    }
    return gather(ctx, d, "transpose", elem_bytes, &l, total, x, y);
}

extern "C" ptq_status ptq_k_slice_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, size_t elem_bytes, int ndim,
                                       const int64_t *in_dims, const int64_t *out_dims, const int64_t *start,
                                       const int64_t *step, const void *x, void *y)
{
    if (ndim < 0 || ndim > 8)
        return ptq_fail(ctx, PTQ_ERR_SHAPE, "slice: %d dims; at most 8", ndim);
    perm_layout l;
    int64_t in_stride[8], total = 1, s = 1;
    int cut = -1, n_cut = 0; /* the dims the slice does not take whole */
    for (int dim = ndim - 1; dim >= 0; dim--) {
        in_stride[dim] = s;
        s *= in_dims[dim];
        total *= out_dims[dim];
        if (out_dims[dim] != in_dims[dim] || (start[dim] != 0 && out_dims[dim] > 0)) {
            cut = dim;
            n_cut++;
        }
    }
    if (total == 0)
        return PTQ_OK;
    if (n_cut <= 1 && (cut < 0 || step[cut] == 1)) {
        /* rows of the dims before cut, each a block of out_dims[cut] of the dims from cut on */
        const size_t inner = (size_t)(cut < 0 ? total : in_stride[cut]) * elem_bytes;
        const int64_t rows = cut < 0 ? 1 : total / (out_dims[cut] * (int64_t)(inner / elem_bytes));
        const size_t src_row = cut < 0 ? inner : (size_t)in_dims[cut] * inner;
        const size_t dst_row = cut < 0 ? inner : (size_t)out_dims[cut] * inner;
        const unsigned char *src = (const unsigned char *)x + (cut < 0 ? 0 : (size_t)start[cut] * inner);
        return ptq_cuda_copy_2d(ctx, d, y, dst_row, src, src_row, dst_row, rows);
    }
    l.ndim = ndim;
    l.base = 0;
    for (int dim = 0; dim < ndim; dim++) {
        l.out_dims[dim] = out_dims[dim];
        l.in_stride[dim] = in_stride[dim] * step[dim];
        l.base += start[dim] * in_stride[dim];
    }
    return gather(ctx, d, "slice", elem_bytes, &l, total, x, y);
}
