/* Observer passes on the GPU, mirroring kernels/ref/observe.c: per-block
 * min/max and special-value counts combined on the host with
 * ptq_observe_stats_combine (so the result is the ref's, whatever the
 * grid), and the |x| histogram added into a device histogram through
 * per-block shared-memory counts. Binning is the ref's exact double
 * product. Covered by tests/cuda_parity_observe.c.
 * Below them, the device observer of observers/observer_cuda.c: a fused
 * pass that reads a batch once against the range held on the device (the
 * common value binned without a branch, zeros, NaN, Inf and values past
 * the range on a rare path), a one-block settle that grows the range, and
 * a rescue pass for when the overflow buffer filled
 * (tests/cuda_observer_dev.c). */
#include <math.h>
#include <string.h>

#include "kernels/cuda/cuda_common.cuh"

#define OBS_MAX_BLOCKS 1024
#define OBS_SHARED_BINS 8192 /* histograms up to this size count in shared memory first */

/* a orders before b; -0 before +0 (the ref's rule) */
static __device__ bool precedes(float a, float b)
{
    return a < b || (a == b && signbit(a) && !signbit(b));
}

/* One partial per block: [gridDim.x] into part. */
static __global__ void stats_kernel(const float *x, int64_t n, ptq_observe_stats *part)
{
    __shared__ unsigned long long zero[PTQ_CUDA_BLOCK], nan_[PTQ_CUDA_BLOCK], inf_[PTQ_CUDA_BLOCK];
    __shared__ float lo[PTQ_CUDA_BLOCK], hi[PTQ_CUDA_BLOCK];
    unsigned long long z = 0, nn = 0, ni = 0;
    float mn = INFINITY, mx = -INFINITY;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const float v = x[i];
        if (isnan(v)) {
            nn++;
        } else if (isinf(v)) {
            ni++;
        } else {
            z += v == 0.0f;
            if (precedes(v, mn))
                mn = v;
            if (precedes(mx, v))
                mx = v;
        }
    }
    const int t = threadIdx.x;
    zero[t] = z;
    nan_[t] = nn;
    inf_[t] = ni;
    lo[t] = mn;
    hi[t] = mx;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
        if (t < s) {
            zero[t] += zero[t + s];
            nan_[t] += nan_[t + s];
            inf_[t] += inf_[t + s];
            if (precedes(lo[t + s], lo[t]))
                lo[t] = lo[t + s];
            if (precedes(hi[t], hi[t + s]))
                hi[t] = hi[t + s];
        }
        __syncthreads();
    }
    if (t == 0) {
        part[blockIdx.x].count = 0;
        part[blockIdx.x].n_zero = (int64_t)zero[0];
        part[blockIdx.x].n_nan = (int64_t)nan_[0];
        part[blockIdx.x].n_inf = (int64_t)inf_[0];
        part[blockIdx.x].min = lo[0];
        part[blockIdx.x].max = hi[0];
    }
}

/* hist: [n_bins] device counts += the bins of x's finite nonzero |x|. With
 * shared counts each block sees at most 2^31 elements (see the launch). */
static __global__ void hist_kernel(const float *x, int64_t n, double scale, int64_t n_bins, int use_shared,
                                   unsigned long long *hist)
{
    extern __shared__ unsigned int local[];
    if (use_shared) {
        for (int64_t b = threadIdx.x; b < n_bins; b += blockDim.x)
            local[b] = 0;
        __syncthreads();
    }
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const float v = x[i];
        if (!isfinite(v) || v == 0.0f)
            continue;
        const int64_t bin = (int64_t)(fabs((double)v) * scale);
        if (use_shared)
            atomicAdd(&local[bin], 1u);
        else
            atomicAdd(&hist[bin], 1ull);
    }
    if (use_shared) {
        __syncthreads();
        for (int64_t b = threadIdx.x; b < n_bins; b += blockDim.x)
            if (local[b])
                atomicAdd(&hist[b], (unsigned long long)local[b]);
    }
}

static unsigned obs_blocks(int64_t n)
{
    unsigned b = ptq_cuda_blocks(n);
    return b > OBS_MAX_BLOCKS ? OBS_MAX_BLOCKS : b;
}

/* blocks, raised for a pass counting into 32-bit shared bins: no block may see 2^31 elements. */
static unsigned shared_count_blocks(int64_t n, unsigned blocks, int use_shared)
{
    while (use_shared && (n + blocks - 1) / blocks >= ((int64_t)1 << 31) && blocks < 65535u)
        blocks *= 2;
    return blocks;
}

extern "C" ptq_status ptq_k_observe_stats_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const float *x, int64_t n,
                                               ptq_observe_stats *s)
{
    ptq_observe_stats_clear(s);
    s->count = n;
    if (n <= 0)
        return PTQ_OK;
    const unsigned blocks = obs_blocks(n);
    void *scratch = NULL;
    ptq_status st = ptq_cuda_scratch(ctx, d, blocks * sizeof(ptq_observe_stats), &scratch);
    if (st != PTQ_OK)
        return st;
    stats_kernel<<<blocks, PTQ_CUDA_BLOCK, 0, d->stream>>>(x, n, (ptq_observe_stats *)scratch);
    PTQ_CUDA_LAUNCHED(ctx, "stats_kernel");
    ptq_observe_stats part[OBS_MAX_BLOCKS];
    st = ptq_cuda_download(ctx, d, part, scratch, blocks * sizeof(ptq_observe_stats));
    if (st != PTQ_OK)
        return st;
    for (unsigned b = 0; b < blocks; b++)
        ptq_observe_stats_combine(s, &part[b]);
    return PTQ_OK;
}

extern "C" ptq_status ptq_k_observe_hist_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const float *x, int64_t n, double scale,
                                              int64_t n_bins, unsigned long long *hist)
{
    if (n <= 0)
        return PTQ_OK;
    const int use_shared = n_bins <= OBS_SHARED_BINS;
    const unsigned blocks = shared_count_blocks(n, obs_blocks(n), use_shared);
    const size_t shared = use_shared ? (size_t)n_bins * sizeof(unsigned int) : 0;
    hist_kernel<<<blocks, PTQ_CUDA_BLOCK, shared, d->stream>>>(x, n, scale, n_bins, use_shared, hist);
    PTQ_CUDA_LAUNCHED(ctx, "hist_kernel");
    return PTQ_OK;
}

/* ---- device observer ----
 * One allocation: the state header, the histogram hist: [n_bins] u64 over
 * [0, 2^e), and the overflow buffer over: [OBS_OVERFLOW_CAP] |x| of the
 * current batch that fell at or beyond 2^e. */

#define OBS_OVERFLOW_CAP 65536
#define OBS_HEADER_BYTES 256
#define OBS_SETTLE_THREADS 1024
#define OBS_UNROLL 4            /* elements a thread loads per step of the fused pass (x not 16-byte aligned) */
/* The fused passes' shape: each macro below may be given at compile time (-D) to build and time a variant
 * (bench/results/2026-12-03-resnet50-observers-2-h200.md); the defaults are what measured fastest there. */
#ifndef OBS_VEC
#define OBS_VEC 2 /* float4s of each input a thread loads per step of the fused pass (x 16-byte aligned) */
#endif
#ifndef OBS_PREFETCH
#define OBS_PREFETCH 1 /* a block's full steps load the next step's float4s before binning this one's */
#endif
#define OBS_ONCE_MAX_BLOCKS 512 /* the fused pass's grid when the occupancy query fails */
#define OBS_CHAIN_SHARED_BYTES (96 * 1024) /* the chain pass's shared histograms at most (3 of 8192 bins) */
/* the chain pass: one block of 1024 threads a multiprocessor (64 registers each, none spilled), so a quarter
 * as many blocks as with 256 threads flush their shared counts into the histograms (1-3% faster on ResNet-50) */
#ifndef OBS_CHAIN_THREADS
#define OBS_CHAIN_THREADS 1024
#endif
#ifndef OBS_CHAIN_BLOCKS_PER_SM
#define OBS_CHAIN_BLOCKS_PER_SM 1
#endif
/* the single pass: 6 blocks a multiprocessor (40 registers; at 8, its 32 registers spilled) */
#ifndef OBS_ONCE_BLOCKS_PER_SM
#define OBS_ONCE_BLOCKS_PER_SM 6
#endif

typedef struct obs_dev_state {
    unsigned long long count, n_zero, n_nan, n_inf;
    unsigned long long n_over;     /* this batch's values >= 2^e: the overflow buffer's fill index; past the
                                      capacity it only says "full" (it then stops counting exactly) */
    unsigned int min_key, max_key; /* order_key of min and max over finite values */
    int e, has_range;              /* range [0, 2^e), set once a finite nonzero value was seen */
    int old_e, old_has_range;      /* the range before the last settle: what the rescue pass tests against */
    int rescue;                    /* the last settle found the overflow buffer full */
} obs_dev_state;

static_assert(sizeof(obs_dev_state) <= OBS_HEADER_BYTES, "observer header outgrew its slot");

/* float -> u32 whose unsigned order is precedes()'s order: -0 below +0, so
 * atomicMin/atomicMax on keys give the ref's bits whatever the order. */
static __host__ __device__ unsigned order_key(float v)
{
    unsigned b;
    memcpy(&b, &v, sizeof b);
    return (b & 0x80000000u) ? ~b : b | 0x80000000u;
}

static __host__ __device__ float key_value(unsigned k)
{
    const unsigned b = (k & 0x80000000u) ? k & 0x7FFFFFFFu : ~k;
    float v;
    memcpy(&v, &b, sizeof v);
    return v;
}

/* observer.c's range_exponent (frexpf's exponent) from the bits, exact for
 * subnormals: the smallest e with amax < 2^e, amax finite and > 0. */
static __device__ int range_exponent(float amax)
{
    const unsigned b = __float_as_uint(amax);
    const int biased = (int)(b >> 23);
    return biased ? biased - 126 : (32 - __clz((int)b)) - 149;
}

/* 2^(log2_bins - e) as a double, built from its bits: the exponent lies in
 * [-117, 172], so it is normal and |v| times it is exact (see the ref). */
static __device__ double bin_scale(int log2_bins, int e)
{
    return __longlong_as_double((long long)(1023 + log2_bins - e) << 52);
}

static __device__ unsigned long long warp_sum(unsigned long long v)
{
    for (int o = 16; o > 0; o /= 2)
        v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

/* Reserves cnt slots of the overflow buffer; once it is past full no more
 * atomics are spent (the settle only asks "full or not"). */
static __device__ unsigned long long reserve_overflow(obs_dev_state *s, unsigned cnt)
{
    const unsigned long long cur = *(volatile unsigned long long *)&s->n_over;
    if (cur > OBS_OVERFLOW_CAP)
        return cur;
    return atomicAdd(&s->n_over, (unsigned long long)cnt);
}

static __device__ void local_clear(unsigned *local, int64_t n_bins)
{
    for (int64_t b = threadIdx.x; b < n_bins; b += blockDim.x)
        local[b] = 0;
}

static __device__ void local_flush(const unsigned *local, int64_t n_bins, unsigned long long *hist)
{
    for (int64_t b = threadIdx.x; b < n_bins; b += blockDim.x)
        if (local[b])
            atomicAdd(&hist[b], (unsigned long long)local[b]);
}

static __device__ void count_bin(unsigned *local, unsigned long long *hist, int use_shared, int64_t bin)
{
    if (use_shared)
        atomicAdd(&local[bin], 1u);
    else
        atomicAdd(&hist[bin], 1ull);
}

/* How observe_once_kernel bins |v|: the ref's exact double product
 * |v| * 2^k (k = log2_bins - e), or, when 2^k is a normal float, the float
 * product |v| * 2^k, which is the same number wherever it can matter: a
 * product by a power of two is exact unless it leaves the normal range,
 * and then it is below 2^-126 (bin 0, inside the range, as the exact one)
 * or overflows to +Inf (at or past the range, as the exact one, the
 * range's top 2^log2_bins being far below 2^128). Small: at most 2^22
 * bins, so the bin of p < limit is the low bits of p + 2^23 rounded toward
 * zero (an add, at full rate), not a conversion. Without a range the scale
 * is +Inf: no finite nonzero value is in range (NaN and Inf never are). */
template <bool Small>
struct bin_f32_t {
    float scale, limit;
    __device__ float product(float a) const
    {
        return a * scale;
    }
    __device__ bool in(float p) const
    {
        return p < limit;
    }
    __device__ unsigned bin(float p) const /* meaningful where in(p) */
    {
        if (Small) /* p + 2^23 in [2^23, 2^24) where it counts: floor(p) in the low 23 bits */
            return (unsigned)__float_as_int(__fadd_rz(p, 8388608.0f)) & 0x7FFFFFu;
        return (unsigned)(int)p; /* p < limit <= 2^24 when used */
    }
};
typedef bin_f32_t<true> bin_f32_small;
typedef bin_f32_t<false> bin_f32;

struct bin_f64 {
    double scale, limit;
    __device__ double product(float a) const
    {
        return (double)a * scale;
    }
    __device__ bool in(double p) const
    {
        return p < limit;
    }
    __device__ unsigned bin(double p) const
    {
        return (unsigned)(long long)p; /* p < limit <= 2^24 when used */
    }
};

/* Per-thread counts of the fused passes, of the values their common path
 * takes: min and max of the finite nonzero values in range as floats
 * (fminf/fmaxf order them as the ref does: no zero, no NaN among them);
 * for an observer whose zeros are common (ZeroFast: Relu's outputs), its
 * +0s, 32 bits (no thread sees 2^32 values of one pass: a block of
 * PTQ_CUDA_BLOCK threads would need a tensor past 2^40 floats); their key
 * joins min and max at the commit. (-0 is rare: Relu makes +0.) */
enum { ZERO_NEG = 1, ZERO_POS = 2 };
struct obs_counts {
    unsigned z;
    float mn, mx;
};

/* A block's tallies of one observer's rare values (observe_rare), in shared
 * memory: zeros (but for ZeroFast observers), NaN, Inf, and which zeros. */
struct rare_counts {
    unsigned long long zero, nan, inf;
    unsigned zeros;
};

/* A block's shared sums of its threads' obs_counts. */
struct blk_counts {
    unsigned long long zero, nan, inf;
    unsigned min, max;
};

/* Adds every thread's counts c and the block's rare tallies r into s: a
 * warp's sums into the block's in b, then one atomic each. Every thread of
 * the block calls it; b is free again on return. */
static __device__ void commit_counts(const obs_counts &c, const rare_counts *r, obs_dev_state *s, blk_counts *b)
{
    __syncthreads(); /* every rare tally made */
    if (threadIdx.x == 0) {
        b->zero = r->zero;
        b->nan = r->nan;
        b->inf = r->inf;
        b->min = 0xFFFFFFFFu;
        b->max = 0;
        if (r->zeros & ZERO_NEG) {
            b->min = min(b->min, order_key(-0.0f));
            b->max = max(b->max, order_key(-0.0f));
        }
        if (r->zeros & ZERO_POS) {
            b->min = min(b->min, order_key(0.0f));
            b->max = max(b->max, order_key(0.0f));
        }
    }
    __syncthreads();
    const unsigned long long z = warp_sum(c.z); /* widened first */
    unsigned tmin = c.mn < INFINITY ? order_key(c.mn) : 0xFFFFFFFFu, tmax = c.mx > -INFINITY ? order_key(c.mx) : 0;
    if (c.z) { /* the common path's zeros are +0 */
        tmin = min(tmin, order_key(0.0f));
        tmax = max(tmax, order_key(0.0f));
    }
    const unsigned kmin = __reduce_min_sync(0xffffffffu, tmin), kmax = __reduce_max_sync(0xffffffffu, tmax);
    if ((threadIdx.x & 31) == 0) {
        if (z)
            atomicAdd(&b->zero, z);
        atomicMin(&b->min, kmin);
        atomicMax(&b->max, kmax);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        if (b->zero)
            atomicAdd(&s->n_zero, b->zero);
        if (b->nan)
            atomicAdd(&s->n_nan, b->nan);
        if (b->inf)
            atomicAdd(&s->n_inf, b->inf);
        if (b->min != 0xFFFFFFFFu)
            atomicMin(&s->min_key, b->min);
        if (b->max != 0)
            atomicMax(&s->max_key, b->max);
    }
    __syncthreads();
}

/* 2^(log2_bins - e) is a normal float at s's range (always, but for ranges
 * below 2^-103): bin_f32 bins as the ref does. */
static __device__ bool f32_bins_exact(const obs_dev_state *s, int log2_bins)
{
    const int k = s->has_range ? log2_bins - s->e : 0;
    return k >= -126 && k <= 127;
}

template <bool Small>
static __device__ bin_f32_t<Small> bins_f32(const obs_dev_state *s, int log2_bins)
{
    const int k = s->has_range ? log2_bins - s->e : 0;
    return bin_f32_t<Small>{s->has_range ? __int_as_float((127 + k) << 23) : INFINITY,
                            (float)((int64_t)1 << log2_bins)};
}

static __device__ bin_f64 bins_f64(const obs_dev_state *s, int log2_bins)
{
    return bin_f64{s->has_range ? bin_scale(log2_bins, s->e) : (double)INFINITY, (double)((int64_t)1 << log2_bins)};
}

template <bool Small>
static __device__ void set_bins(bin_f32_t<Small> *b, const obs_dev_state *s, int log2_bins)
{
    *b = bins_f32<Small>(s, log2_bins);
}

static __device__ void set_bins(bin_f64 *b, const obs_dev_state *s, int log2_bins)
{
    *b = bins_f64(s, log2_bins);
}

/* ---- the fused passes: one read of a batch per observer update ----
 * observe_once_kernel updates one observer from x; observe_chain_kernel
 * feeds up to three, each the value of one stage of a short program P over
 * c (and z), and writes the last stage's value y:
 *   PASS_CONV: a Conv's output c, a = c + z (in the Add's operand order) and
 *     the chain's output y = relu(a) (or a, without a Relu);
 *   PASS_BIAS: a MatMul's product c and y = c + z, z one row of z_cols
 *     values added to every row (the Add's operand order);
 *   PASS_GELU_A, PASS_GELU_B: an exact GELU's five nodes in two passes over
 *     x = c: d = x / k0, e = erff(d), a = e + k1 (y: a), then with z = a
 *     m = x * z and y = m * k0 (its third stage y itself, not observed).
 * Each stage is the IEEE operation of its node's kernel (unary.cu's,
 * binary.cu's), so each observer's update is the one observe_once_kernel
 * would make on that tensor. */

#define CHAIN_OBS 3

enum { PASS_ONCE, PASS_CONV, PASS_BIAS, PASS_GELU_A, PASS_GELU_B };

struct chain_args {
    const float *c, *z; /* z: NULL without one */
    float *y;           /* NULL: nothing written (observe_once_kernel) */
    int z_first, relu;  /* the Add (or Mul) reads z first; a Relu follows (PASS_CONV) */
    int kind;           /* PASS_*: the program (the rescue pass's; the fused pass has it as P) */
    float k0, k1;       /* the GELU's constants */
    int64_t z_cols;     /* PASS_BIAS: z's length, a divisor of n; else 0 (z: [n]) */
    obs_dev_state *s[CHAIN_OBS]; /* c's, a's, y's observer (y's only with relu); NULL: not observed */
    unsigned long long *hist[CHAIN_OBS];
    float *over[CHAIN_OBS];
    int slot[CHAIN_OBS]; /* each observer's shared histogram, in units of n_bins */
};

/* One observer of a pass, as a block holds it. */
template <typename Bin>
struct chain_view {
    bool on;
    Bin bins;      /* no value in range while the observer has no range (bins_f32, bins_f64) */
    unsigned base; /* its shared histogram: the shared-window address of its bin 0 (with shared counts) */
    obs_counts c;
};

/* The chain's values at one element: a = c + z as the Add, y as the Relu
 * (unary.cu's v < 0 ? 0 : v). */
static __device__ __forceinline__ float chain_add(const chain_args &a, float cv, float zv)
{
    return !a.z ? cv : a.z_first ? zv + cv : cv + zv;
}

static __device__ __forceinline__ float chain_out(const chain_args &a, float av)
{
    return a.relu && av < 0.0f ? 0.0f : av;
}

/* Program P's stages at one element: stage 0 from c and z, stage 1 from stage 0 (and c, z), stage 2 from stage 1. */
template <int P>
static __device__ __forceinline__ float stage0(const chain_args &a, float cv, float zv)
{
    if (P == PASS_GELU_A)
        return __fdiv_rn(cv, a.k0);
    if (P == PASS_GELU_B)
        return a.z_first ? __fmul_rn(zv, cv) : __fmul_rn(cv, zv);
    return cv;
}

template <int P>
static __device__ __forceinline__ float stage1(const chain_args &a, float v0, float cv, float zv)
{
    if (P == PASS_GELU_A)
        return erff(v0);
    if (P == PASS_GELU_B)
        return __fmul_rn(v0, a.k0);
    if (P == PASS_BIAS)
        return a.z_first ? __fadd_rn(zv, cv) : __fadd_rn(cv, zv);
    return chain_add(a, cv, zv);
}

template <int P>
static __device__ __forceinline__ float stage2(const chain_args &a, float v1)
{
    if (P == PASS_GELU_A)
        return __fadd_rn(v1, a.k1);
    if (P == PASS_CONV)
        return chain_out(a, v1);
    return v1;
}

/* Element i's index into z: a row's under PASS_BIAS. */
template <int P>
static __device__ __forceinline__ int64_t z_index(const chain_args &a, int64_t i)
{
    return P == PASS_BIAS ? i % a.z_cols : i;
}

/* Stage `stage` of program P at one element (the rescue pass's, stage by stage). */
template <int P>
static __device__ float stage_of(const chain_args &a, int stage, float cv, float zv)
{
    const float v0 = stage0<P>(a, cv, zv);
    if (stage == 0)
        return v0;
    const float v1 = stage1<P>(a, v0, cv, zv);
    return stage == 1 ? v1 : stage2<P>(a, v1);
}

static __device__ float stage_value(const chain_args &a, int stage, float cv, float zv)
{
    switch (a.kind) {
    case PASS_BIAS:
        return stage_of<PASS_BIAS>(a, stage, cv, zv);
    case PASS_GELU_A:
        return stage_of<PASS_GELU_A>(a, stage, cv, zv);
    case PASS_GELU_B:
        return stage_of<PASS_GELU_B>(a, stage, cv, zv);
    default: /* PASS_ONCE reads only stage 0, c */
        return stage_of<PASS_CONV>(a, stage, cv, zv);
    }
}

/* Whether observer o's common path takes v: |v| finite, nonzero and in
 * o's range (NaN and Inf never are: p is NaN or +Inf), or, with ZeroFast,
 * v is +0. */
template <typename Bin, bool ZeroFast>
static __device__ __forceinline__ bool fast_takes(float v, const chain_view<Bin> &o)
{
    return (o.bins.in(o.bins.product(fabsf(v))) && v != 0.0f) || (ZeroFast && __float_as_uint(v) == 0u);
}

/* Adds 1 to the shared count at window address addr where p, without a
 * branch (a predicated reduction). */
static __device__ __forceinline__ void count_shared_if(unsigned addr, bool p)
{
    asm volatile("{\n\t.reg .pred q;\n\tsetp.ne.u32 q, %1, 0;\n\t@q red.shared.add.u32 [%0], %2;\n\t}" ::"r"(addr),
                 "r"((unsigned)p), "r"(1u)
                 : "memory");
}

/* The common path of observer o at v (when valid): bins |v| when it is
 * finite, nonzero and inside o's range, with min and max, in one test and
 * no branch; with ZeroFast (Relu's outputs, about half zeros) counts a +0
 * too. Returns 1 when v still needs observe_rare: NaN, Inf, a value at or
 * past the range (every finite nonzero one before there is a range), -0
 * or, without ZeroFast, +0 (fast_takes is the same test). */
template <typename Bin, bool Shared, bool ZeroFast>
static __device__ __forceinline__ bool observe_fast(float v, bool valid, chain_view<Bin> &o,
                                                    unsigned long long *hist)
{
    const auto p = o.bins.product(fabsf(v));
    const bool in = valid && o.bins.in(p) && v != 0.0f;
    const unsigned bin = o.bins.bin(p);
    if (Shared)
        count_shared_if(o.base + 4u * bin, in); /* bin < n_bins <= OBS_SHARED_BINS where in (no access elsewhere) */
    else if (in)
        atomicAdd(&hist[bin], 1ull);
    const float w = in ? v : __int_as_float(0x7FFFFFFF); /* a NaN: fminf and fmaxf pass over it */
    o.c.mn = fminf(o.c.mn, w);
    o.c.mx = fmaxf(o.c.mx, w);
    if (ZeroFast) {
        const bool zero = valid && __float_as_uint(v) == 0u;
        o.c.z += zero ? 1u : 0u;
        return valid && !in && !zero;
    }
    return valid && !in;
}

/* The rest of v's observation where observe_fast returned 1: a zero, NaN or
 * Inf tallied in the block's r; a finite nonzero value past the range goes
 * into min and max, and 1 is returned: it goes to the overflow buffer. */
static __device__ __forceinline__ unsigned observe_rare(float v, obs_counts &c, rare_counts *r)
{
    const float a = fabsf(v);
    if (a == 0.0f) {
        atomicAdd(&r->zero, 1ull);
        atomicOr(&r->zeros, signbit(v) ? (unsigned)ZERO_NEG : (unsigned)ZERO_POS);
        return 0;
    }
    if (!(a < INFINITY)) {
        atomicAdd(isnan(v) ? &r->nan : &r->inf, 1ull);
        return 0;
    }
    c.mn = fminf(c.mn, v);
    c.mx = fmaxf(c.mx, v);
    return 1;
}

/* Appends |v| to observer s's overflow buffer where spill is set: every
 * lane of the warp calls it, for one ballot and one atomic a warp. */
static __device__ __forceinline__ void append_over(float v, bool spill, obs_dev_state *s, float *over)
{
    const unsigned spilled = __ballot_sync(0xffffffffu, spill);
    if (!spilled)
        return;
    const int lane = threadIdx.x & 31;
    const int leader = __ffs(spilled) - 1;
    unsigned long long at = 0;
    if (lane == leader)
        at = reserve_overflow(s, __popc(spilled));
    at = __shfl_sync(0xffffffffu, at, leader);
    if (spill) {
        at += __popc(spilled & ((1u << lane) - 1u));
        if (at < OBS_OVERFLOW_CAP)
            over[at] = fabsf(v);
    }
}

/* Observer o (on) at a thread's N values v of one step: the common path for
 * each, then, only when some lane of the warp has a value it left (past a
 * tensor's first batch: rarely), the rare path and the overflow appends.
 * The step is the same for the whole block, so every lane takes part in
 * the votes. */
template <typename Bin, bool Shared, bool ZeroFast, int N>
static __device__ __forceinline__ void observe_values(const float *v, const bool *ok, chain_view<Bin> &o,
                                                      unsigned long long *hist, obs_dev_state *s, float *over,
                                                      rare_counts *r)
{
    bool rare = false;
#pragma unroll
    for (int e = 0; e < N; e++)
        rare |= observe_fast<Bin, Shared, ZeroFast>(v[e], ok[e], o, hist);
    if (!__any_sync(0xffffffffu, rare))
        return;
    unsigned spill = 0;
#pragma unroll
    for (int e = 0; e < N; e++)
        if (ok[e] && !fast_takes<Bin, ZeroFast>(v[e], o))
            spill |= observe_rare(v[e], o.c, r) << e;
#pragma unroll
    for (int e = 0; e < N; e++)
        append_over(v[e], (spill >> e) & 1u, s, over);
}

/* One step of a thread: its N values of c (and z) with valid flags; feeds
 * the observers: c's alone for PASS_ONCE, else the three stages' of P in
 * turn (zv holds y on return). A single pass's tensor and Relu's output
 * count their zeros in the common path. */
template <typename Bin, bool Shared, int P, int N>
static __device__ __forceinline__ void observe_step(const chain_args &a, const float *cv, float *zv, const bool *ok,
                                                    chain_view<Bin> *o, rare_counts *rare)
{
    if constexpr (P == PASS_ONCE) {
        if (o[0].on)
            observe_values<Bin, Shared, true, N>(cv, ok, o[0], a.hist[0], a.s[0], a.over[0], &rare[0]);
    } else {
        float w[N];
#pragma unroll
        for (int e = 0; e < N; e++)
            w[e] = stage0<P>(a, cv[e], zv[e]);
        if (o[0].on)
            observe_values<Bin, Shared, false, N>(w, ok, o[0], a.hist[0], a.s[0], a.over[0], &rare[0]);
#pragma unroll
        for (int e = 0; e < N; e++)
            w[e] = stage1<P>(a, w[e], cv[e], zv[e]);
        if (o[1].on)
            observe_values<Bin, Shared, false, N>(w, ok, o[1], a.hist[1], a.s[1], a.over[1], &rare[1]);
#pragma unroll
        for (int e = 0; e < N; e++)
            zv[e] = stage2<P>(a, w[e]);
        if (o[2].on)
            observe_values<Bin, Shared, P == PASS_CONV, N>(zv, ok, o[2], a.hist[2], a.s[2], a.over[2], &rare[2]);
    }
}

/* observe_span's 16-byte path: OBS_VEC float4s of c (and z) a thread, from
 * float4 index base + threadIdx.x, a block apart; a whole step's, so no
 * bound is tested. */
template <int P>
static __device__ __forceinline__ void vec_load(const chain_args &a, int64_t base, bool has_z, float4 *cv, float4 *zv)
{
    const float4 *c4 = (const float4 *)a.c, *z4 = (const float4 *)a.z;
#pragma unroll
    for (int u = 0; u < OBS_VEC; u++) {
        const int64_t i = base + u * (int64_t)blockDim.x + threadIdx.x;
        cv[u] = __ldg(&c4[i]);
        zv[u] = has_z ? __ldg(&z4[P == PASS_BIAS ? i % (a.z_cols / 4) : i]) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
}

/* A whole step's float4s, loaded: the observers fed, y written. */
template <typename Bin, bool Shared, int P>
static __device__ __forceinline__ void vec_observe(const chain_args &a, int64_t base, const float4 *cv, float4 *zv,
                                                   chain_view<Bin> *o, rare_counts *rare)
{
    bool ok[4 * OBS_VEC];
#pragma unroll
    for (int e = 0; e < 4 * OBS_VEC; e++)
        ok[e] = true;
    observe_step<Bin, Shared, P, 4 * OBS_VEC>(a, (const float *)cv, (float *)zv, ok, o, rare);
    if (P != PASS_ONCE)
#pragma unroll
        for (int u = 0; u < OBS_VEC; u++)
            ((float4 *)a.y)[base + u * (int64_t)blockDim.x + threadIdx.x] = zv[u];
}

/* The step at base that n4 cuts: bounds on every float4. */
template <typename Bin, bool Shared, int P>
static __device__ void vec_step_cut(const chain_args &a, int64_t base, int64_t n4, bool has_z, chain_view<Bin> *o,
                                    rare_counts *rare)
{
    const float4 *c4 = (const float4 *)a.c, *z4 = (const float4 *)a.z;
    float4 cv[OBS_VEC], zv[OBS_VEC];
    bool ok[4 * OBS_VEC];
#pragma unroll
    for (int u = 0; u < OBS_VEC; u++) {
        const int64_t i = base + u * (int64_t)blockDim.x + threadIdx.x;
        const bool in = i < n4;
        const float4 zero4 = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        cv[u] = in ? __ldg(&c4[i]) : zero4;
        zv[u] = in && has_z ? __ldg(&z4[P == PASS_BIAS ? i % (a.z_cols / 4) : i]) : zero4;
        ok[4 * u] = ok[4 * u + 1] = ok[4 * u + 2] = ok[4 * u + 3] = in;
    }
    observe_step<Bin, Shared, P, 4 * OBS_VEC>(a, (const float *)cv, (float *)zv, ok, o, rare);
    if (P != PASS_ONCE)
#pragma unroll
        for (int u = 0; u < OBS_VEC; u++)
            if (ok[4 * u])
                ((float4 *)a.y)[base + u * (int64_t)blockDim.x + threadIdx.x] = zv[u];
}

/* The elements of c: [n] (and z, y) a block reads: with all 16-byte
 * aligned, OBS_VEC float4s a thread per step, the next whole step's loads
 * in flight while this one is binned (OBS_PREFETCH), the last n % 4 by the
 * first block's first warp; else OBS_UNROLL floats. */
template <typename Bin, bool Shared, int P>
static __device__ void observe_span(const chain_args &a, int64_t n, chain_view<Bin> *o, rare_counts *rare)
{
    const int64_t span = blockDim.x;
    constexpr bool Chain = P != PASS_ONCE;
    const uintptr_t addr = (uintptr_t)a.c | (Chain ? (uintptr_t)a.y | (uintptr_t)a.z : (uintptr_t)0);
    const bool has_z = Chain && a.z;
    if ((addr & 15) == 0 && (P != PASS_BIAS || a.z_cols % 4 == 0)) { /* a bias row of whole float4s */
        const int64_t n4 = n / 4, step = OBS_VEC * span, stride = (int64_t)gridDim.x * step;
        int64_t base = (int64_t)blockIdx.x * step;
        float4 cv[OBS_VEC], zv[OBS_VEC];
        bool whole = base + step <= n4; /* every step but a block's last few is whole: no per-value bounds */
        if (OBS_PREFETCH && whole)
            vec_load<P>(a, base, has_z, cv, zv);
        for (; base < n4; base += stride) {
            if (!whole) { /* the block's last step */
                vec_step_cut<Bin, Shared, P>(a, base, n4, has_z, o, rare);
                break;
            }
            const bool next_whole = base + stride + step <= n4;
            if (OBS_PREFETCH) {
                float4 cn[OBS_VEC], zn[OBS_VEC];
                if (next_whole)
                    vec_load<P>(a, base + stride, has_z, cn, zn);
                vec_observe<Bin, Shared, P>(a, base, cv, zv, o, rare);
#pragma unroll
                for (int u = 0; u < OBS_VEC; u++) {
                    cv[u] = cn[u];
                    zv[u] = zn[u];
                }
            } else {
                vec_load<P>(a, base, has_z, cv, zv);
                vec_observe<Bin, Shared, P>(a, base, cv, zv, o, rare);
            }
            whole = next_whole;
        }
        if (blockIdx.x == 0 && threadIdx.x < 32) { /* the tail: one warp, every lane in the votes */
            const int64_t i = n4 * 4 + threadIdx.x;
            const bool ok1 = i < n;
            const float c1 = ok1 ? a.c[i] : 0.0f;
            float z1 = ok1 && has_z ? a.z[z_index<P>(a, i)] : 0.0f;
            observe_step<Bin, Shared, P, 1>(a, &c1, &z1, &ok1, o, rare);
            if (Chain && ok1)
                a.y[i] = z1;
        }
        return;
    }
    for (int64_t base = (int64_t)blockIdx.x * span * OBS_UNROLL; base < n;
         base += (int64_t)gridDim.x * span * OBS_UNROLL) {
        float cv[OBS_UNROLL], zv[OBS_UNROLL];
        bool ok[OBS_UNROLL];
#pragma unroll
        for (int u = 0; u < OBS_UNROLL; u++) {
            const int64_t i = base + u * span + threadIdx.x;
            ok[u] = i < n;
            cv[u] = ok[u] ? a.c[i] : 0.0f;
            zv[u] = ok[u] && has_z ? a.z[z_index<P>(a, i)] : 0.0f;
        }
        observe_step<Bin, Shared, P, OBS_UNROLL>(a, cv, zv, ok, o, rare);
        if (P != PASS_ONCE)
#pragma unroll
            for (int u = 0; u < OBS_UNROLL; u++)
                if (ok[u])
                    a.y[base + u * span + threadIdx.x] = zv[u];
    }
}

/* A pass's observers at their ranges, the span, and the counts committed. */
template <typename Bin, bool Shared, int P>
static __device__ void observe_body(const chain_args &a, int64_t n, int log2_bins, rare_counts *rare,
                                    blk_counts *blk)
{
    extern __shared__ unsigned local[];
    const unsigned local_at = (unsigned)__cvta_generic_to_shared(local);
    chain_view<Bin> o[CHAIN_OBS];
#pragma unroll
    for (int i = 0; i < CHAIN_OBS; i++) {
        o[i].on = a.s[i] != NULL && (P != PASS_ONCE || i == 0);
        o[i].base = local_at + 4u * ((unsigned)a.slot[i] << log2_bins); /* slot < CHAIN_OBS; shared counts only */
        o[i].c = obs_counts{0, INFINITY, -INFINITY};
        if (o[i].on)
            set_bins(&o[i].bins, a.s[i], log2_bins);
    }
    observe_span<Bin, Shared, P>(a, n, o, rare);
#pragma unroll
    for (int i = 0; i < CHAIN_OBS; i++)
        if (o[i].on)
            commit_counts(o[i].c, &rare[i], a.s[i], blk);
}

/* The fused pass of the observers in a (a.s[0] alone unless Chain): counts,
 * min/max keys, bins of |v| < 2^e at each observer's range on the device,
 * and |v| >= 2^e (all finite nonzero values before there is a range)
 * appended to its overflow buffer; with Chain, y written. Counts go to
 * shared memory first where use_shared and the bins are f32 (with at most
 * OBS_SHARED_BINS bins they are the small kind); f64 bins (ranges below
 * 2^-100 or so) count straight into the histograms. */
template <int P>
static __device__ void observe_pass(const chain_args &a, int64_t n, int log2_bins, int use_shared)
{
    extern __shared__ unsigned local[];
    __shared__ blk_counts blk;
    __shared__ rare_counts rare[CHAIN_OBS];
    const int64_t n_bins = (int64_t)1 << log2_bins;
    bool f64 = false;
    int n_on = 0;
    for (int i = 0; i < (P != PASS_ONCE ? CHAIN_OBS : 1); i++)
        if (a.s[i]) {
            if (threadIdx.x == 0 && blockIdx.x == 0)
                a.s[i]->count += (unsigned long long)n; /* the only writer of count */
            f64 = f64 || !f32_bins_exact(a.s[i], log2_bins);
            n_on++;
        }
    if (threadIdx.x < CHAIN_OBS)
        rare[threadIdx.x] = rare_counts{0, 0, 0, 0};
    if (use_shared)
        local_clear(local, n_on * n_bins);
    __syncthreads();
    /* every observer in double when one needs it: bin_f64 is the ref's product itself. The transformer passes
     * (bias, GELU) have two forms only, shared f32 counts or f64 bins in global memory, so that each program adds
     * two bodies, not four, to the binaries (the others bin the same). */
    constexpr bool two_forms = P == PASS_BIAS || P == PASS_GELU_A || P == PASS_GELU_B;
    if (f64 || (two_forms && !use_shared))
        observe_body<bin_f64, false, P>(a, n, log2_bins, rare, &blk);
    else if (use_shared) /* n_bins <= OBS_SHARED_BINS: small bins */
        observe_body<bin_f32_small, true, P>(a, n, log2_bins, rare, &blk);
    else if constexpr (!two_forms) {
        if (log2_bins <= 22)
            observe_body<bin_f32_small, false, P>(a, n, log2_bins, rare, &blk);
        else
            observe_body<bin_f32, false, P>(a, n, log2_bins, rare, &blk);
    }
    if (use_shared)
        for (int i = 0; i < (P != PASS_ONCE ? CHAIN_OBS : 1); i++)
            if (a.s[i])
                local_flush(local + (int64_t)a.slot[i] * n_bins, n_bins, a.hist[i]);
}

/* The one read of a batch a.c: [n] for the observer a.s[0]. */
static __global__ void __launch_bounds__(PTQ_CUDA_BLOCK, OBS_ONCE_BLOCKS_PER_SM)
    observe_once_kernel(chain_args a, int64_t n, int log2_bins, int use_shared)
{
    observe_pass<PASS_ONCE>(a, n, log2_bins, use_shared);
}

template <int P>
static __global__ void __launch_bounds__(OBS_CHAIN_THREADS, OBS_CHAIN_BLOCKS_PER_SM)
    observe_chain_kernel(chain_args a, int64_t n, int log2_bins, int use_shared)
{
    observe_pass<P>(a, n, log2_bins, use_shared);
}

/* observer.c's regrow, in place by one block: new bin j sums old bins
 * [j*group, (j+1)*group). New bins go in chunks of blockDim: a chunk's sums
 * are all read before any is written (only chunk 0 reads what it writes),
 * and later chunks read bins >= (c+1)*blockDim*group, beyond every write so
 * far. Groups of 32 or more are summed by a warp per new bin, coalesced. */
static __device__ void regrow(unsigned long long *hist, int log2_bins, int k)
{
    const int64_t n_bins = (int64_t)1 << log2_bins;
    const int64_t group = k >= log2_bins ? n_bins : (int64_t)1 << k;
    const int64_t n_new = n_bins / group;
    const int lane = threadIdx.x & 31;
    const int64_t warp_first = threadIdx.x - lane; /* chunk offset of this warp's 32 new bins */
    for (int64_t c = 0; c < n_new; c += blockDim.x) {
        const int64_t j = c + threadIdx.x;
        unsigned long long sum = 0;
        if (group < 32) {
            if (j < n_new)
                for (int64_t i = j * group; i < (j + 1) * group; i++)
                    sum += hist[i];
        } else {
            for (int r = 0; r < 32 && c + warp_first + r < n_new; r++) {
                const int64_t jr = c + warp_first + r;
                unsigned long long part = 0;
                for (int64_t i = jr * group + lane; i < (jr + 1) * group; i += 32)
                    part += hist[i];
                part = __shfl_sync(0xffffffffu, warp_sum(part), 0);
                if (lane == r)
                    sum = part;
            }
        }
        __syncthreads();
        if (j < n_new)
            hist[j] = sum;
        __syncthreads();
    }
    for (int64_t i = n_new + threadIdx.x; i < n_bins; i += blockDim.x)
        hist[i] = 0;
}

/* Item i of a chain_args array by constant indices: indexing a kernel
 * parameter by a variable copies the whole parameter to local memory in
 * every thread. */
template <typename T>
static __device__ __forceinline__ T pick(const T (&v)[CHAIN_OBS], unsigned i)
{
    return i == 0 ? v[0] : i == 1 ? v[1] : v[2];
}

/* One block per observer of a pass (block i: a.s[i], none when NULL),
 * after the pass: when anything overflowed, grows e to cover the new
 * max|x| (regrowing the histogram), then bins the buffered values at the
 * new e, or asks the rescue pass to when the buffer filled. */
static __global__ void __launch_bounds__(OBS_SETTLE_THREADS) settle_kernel(chain_args a, int log2_bins, int use_shared)
{
    extern __shared__ unsigned local[];
    obs_dev_state *s = pick(a.s, blockIdx.x);
    if (!s)
        return;
    unsigned long long *hist = pick(a.hist, blockIdx.x);
    const float *over = pick(a.over, blockIdx.x);
    const int64_t n_bins = (int64_t)1 << log2_bins;
    const unsigned long long n_over = s->n_over;
    if (n_over == 0) {
        if (threadIdx.x == 0)
            s->rescue = 0;
        return;
    }
    const int old_e = s->e, old_has_range = s->has_range;
    const float amax = fmaxf(-key_value(s->min_key), key_value(s->max_key));
    const int e = range_exponent(amax);
    if (old_has_range)
        regrow(hist, log2_bins, e - old_e); /* e > old_e: something reached 2^old_e */
    const int rescue = n_over > OBS_OVERFLOW_CAP;
    if (!rescue) {
        const double scale = bin_scale(log2_bins, e);
        if (use_shared)
            local_clear(local, n_bins);
        __syncthreads();
        for (int64_t i = threadIdx.x; i < (int64_t)n_over; i += blockDim.x)
            count_bin(local, hist, use_shared, (int64_t)((double)over[i] * scale));
        __syncthreads();
        if (use_shared)
            local_flush(local, n_bins, hist);
    }
    __syncthreads(); /* every thread has read the old header */
    if (threadIdx.x == 0) {
        s->old_e = old_e;
        s->old_has_range = old_has_range;
        s->e = e;
        s->has_range = 1;
        s->rescue = rescue;
        s->n_over = 0;
    }
}

/* Re-reads x only when the settle asked: bins at the new e exactly the
 * values observe_once_kernel did not (|v| >= 2^old_e, or every finite
 * nonzero value when there was no range). x is the value of stage
 * blockIdx.y of the pass's program (a.kind), made again from a.c and a.z;
 * one row of blocks per observer of the pass. */
static __global__ void rescue_kernel(chain_args a, int64_t n, int log2_bins, int use_shared)
{
    extern __shared__ unsigned local[];
    const int stage = (int)blockIdx.y;
    const obs_dev_state *s = pick(a.s, (unsigned)stage);
    unsigned long long *hist = pick(a.hist, (unsigned)stage);
    if (!s || !s->rescue)
        return;
    const int64_t n_bins = (int64_t)1 << log2_bins;
    const int old_has_range = s->old_has_range;
    const double old_scale = old_has_range ? bin_scale(log2_bins, s->old_e) : 0.0;
    const double scale = bin_scale(log2_bins, s->e);
    const double limit = (double)n_bins;
    if (use_shared) {
        local_clear(local, n_bins);
        __syncthreads();
    }
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const float cv = a.c[i];
        const float v = stage_value(a, stage, cv, a.z ? a.z[a.kind == PASS_BIAS ? i % a.z_cols : i] : 0.0f);
        if (!isfinite(v) || v == 0.0f)
            continue;
        const double m = fabs((double)v);
        if (!old_has_range || !(m * old_scale < limit)) /* observe_once_kernel's test, negated */
            count_bin(local, hist, use_shared, (int64_t)(m * scale));
    }
    if (use_shared) {
        __syncthreads();
        local_flush(local, n_bins, hist);
    }
}

static obs_dev_state *state_of(void *state)
{
    return (obs_dev_state *)state;
}

static unsigned long long *hist_of(void *state)
{
    return (unsigned long long *)((char *)state + OBS_HEADER_BYTES);
}

static float *over_of(void *state, int64_t n_bins)
{
    return (float *)((char *)state + OBS_HEADER_BYTES + (size_t)n_bins * sizeof(unsigned long long));
}

static int log2_of(int64_t n_bins)
{
    int l = 0;
    while (((int64_t)1 << l) < n_bins)
        l++;
    return l;
}

/* Blocks of kernel (observe_once_kernel or observe_chain_kernel) the whole
 * GPU runs at once with threads and shared bytes each: the multiprocessors
 * times the blocks one holds (asked once per kernel and shared size;
 * OBS_ONCE_MAX_BLOCKS when the runtime cannot say). */
static unsigned resident_blocks(const void *kernel, int threads, size_t shared)
{
    static struct {
        const void *kernel;
        size_t shared;
        unsigned blocks;
    } cache[8];
    static int n_cached = 0;
    for (int i = 0; i < n_cached; i++)
        if (cache[i].kernel == kernel && cache[i].shared == shared)
            return cache[i].blocks;
    int dev = 0, n_sm = 0, per_sm = 0;
    unsigned r = OBS_ONCE_MAX_BLOCKS;
    if (cudaGetDevice(&dev) == cudaSuccess &&
        cudaDeviceGetAttribute(&n_sm, cudaDevAttrMultiProcessorCount, dev) == cudaSuccess &&
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, shared) == cudaSuccess &&
        n_sm > 0 && per_sm > 0)
        r = (unsigned)(n_sm * per_sm);
    cudaGetLastError(); /* a failed query leaves no error for the launch to report */
    const int at = n_cached < 8 ? n_cached++ : 7;
    cache[at].kernel = kernel;
    cache[at].shared = shared;
    cache[at].blocks = r;
    return r;
}

/* The grid of a fused pass over n values: as many blocks as the GPU holds at
 * once (latency, not bandwidth, bounded the pass at 512: ncu showed 43%
 * occupancy, 32% of DRAM bandwidth on ResNet-50's tensors), none idle on
 * small tensors. */
static unsigned fused_blocks(const void *kernel, int threads, int64_t n, size_t shared, int use_shared)
{
    const int64_t per_block = (int64_t)threads * 4 * OBS_VEC; /* a block's values a step */
    const int64_t want = (n + per_block - 1) / per_block;
    unsigned blocks = want < 1 ? 1u : want > 65536 ? 65536u : (unsigned)want;
    const unsigned resident = resident_blocks(kernel, threads, shared);
    if (blocks > resident)
        blocks = resident;
    return shared_count_blocks(n, blocks, use_shared);
}

extern "C" size_t ptq_k_observe_dev_bytes(int64_t n_bins)
{
    return OBS_HEADER_BYTES + (size_t)n_bins * sizeof(unsigned long long) + OBS_OVERFLOW_CAP * sizeof(float);
}

extern "C" ptq_status ptq_k_observe_dev_clear_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, void *state, int64_t n_bins)
{
    obs_dev_state h;
    memset(&h, 0, sizeof h);
    h.min_key = order_key(INFINITY);
    h.max_key = order_key(-INFINITY);
    PTQ_CUDA_CHECK(ctx, cudaMemsetAsync(hist_of(state), 0, (size_t)n_bins * sizeof(unsigned long long), d->stream));
    return ptq_cuda_upload(ctx, d, state, &h, sizeof h);
}

/* Observer i of a pass: the device state at state. */
static void bind_observer(chain_args *a, int i, void *state, int64_t n_bins)
{
    a->s[i] = state_of(state);
    a->hist[i] = hist_of(state);
    a->over[i] = over_of(state, n_bins);
}

/* After a fused pass over a's n values: every observer's settle in one
 * launch, then every rescue pass in one (a rescue reads only when its
 * settle asked). Two launches a pass, whatever its observers. */
static ptq_status settle_observers(ptq_ctx *ctx, ptq_cuda_dev *d, const chain_args &a, int64_t n, int64_t n_bins)
{
    const int log2_bins = log2_of(n_bins);
    const int use_shared = n_bins <= OBS_SHARED_BINS;
    const size_t shared = use_shared ? (size_t)n_bins * sizeof(unsigned) : 0;
    const unsigned blocks = shared_count_blocks(n, obs_blocks(n), use_shared);
    unsigned rows = 0; /* observers 0 .. rows-1, the absent ones skipped by their blocks */
    for (int i = 0; i < CHAIN_OBS; i++)
        if (a.s[i])
            rows = (unsigned)i + 1;
    if (rows == 0)
        return PTQ_OK;
    settle_kernel<<<rows, OBS_SETTLE_THREADS, shared, d->stream>>>(a, log2_bins, use_shared);
    PTQ_CUDA_LAUNCHED(ctx, "settle_kernel");
    rescue_kernel<<<dim3(blocks, rows), PTQ_CUDA_BLOCK, shared, d->stream>>>(a, n, log2_bins, use_shared);
    PTQ_CUDA_LAUNCHED(ctx, "rescue_kernel");
    return PTQ_OK;
}

extern "C" ptq_status ptq_k_observe_dev_update_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, void *state, int64_t n_bins,
                                                    const float *x, int64_t n)
{
    if (n <= 0)
        return PTQ_OK;
    const int use_shared = n_bins <= OBS_SHARED_BINS;
    const size_t shared = use_shared ? (size_t)n_bins * sizeof(unsigned) : 0;
    const unsigned blocks = fused_blocks((const void *)observe_once_kernel, PTQ_CUDA_BLOCK, n, shared, use_shared);
    chain_args a;
    memset(&a, 0, sizeof a);
    a.c = x;
    bind_observer(&a, 0, state, n_bins);
    observe_once_kernel<<<blocks, PTQ_CUDA_BLOCK, shared, d->stream>>>(a, n, log2_of(n_bins), use_shared);
    PTQ_CUDA_LAUNCHED(ctx, "observe_once_kernel");
    return settle_observers(ctx, d, a, n, n_bins);
}

/* Program P's pass over a's n values: the observers of states (those used and present), y written, then settled. */
template <int P>
static ptq_status chain_pass(ptq_ctx *ctx, ptq_cuda_dev *d, chain_args &a, void *const states[CHAIN_OBS],
                             const int used[CHAIN_OBS], int64_t n_bins, int64_t n)
{
    a.kind = P;
    int n_on = 0;
    for (int i = 0; i < CHAIN_OBS; i++) {
        if (!states[i] || !used[i])
            continue;
        bind_observer(&a, i, states[i], n_bins);
        a.slot[i] = n_on++;
    }
    /* counts in shared memory while all the observers' histograms fit the multiprocessor's share a block may have */
    const size_t shared_bytes = (size_t)n_on * (size_t)n_bins * sizeof(unsigned);
    const int use_shared = n_on > 0 && n_bins <= OBS_SHARED_BINS && shared_bytes <= OBS_CHAIN_SHARED_BYTES;
    const size_t shared = use_shared ? shared_bytes : 0;
    if (shared > 32 * 1024) /* near or past the 48 KiB (static included) a block gets without asking; per device */
        PTQ_CUDA_CHECK(ctx, cudaFuncSetAttribute(observe_chain_kernel<P>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                 (int)OBS_CHAIN_SHARED_BYTES));
    const unsigned blocks =
        fused_blocks((const void *)observe_chain_kernel<P>, OBS_CHAIN_THREADS, n, shared, use_shared);
    observe_chain_kernel<P><<<blocks, OBS_CHAIN_THREADS, shared, d->stream>>>(a, n, log2_of(n_bins), use_shared);
    PTQ_CUDA_LAUNCHED(ctx, "observe_chain_kernel");
    return settle_observers(ctx, d, a, n, n_bins);
}

static chain_args chain_io(const float *c, const float *z, int z_first, float *y)
{
    chain_args a;
    memset(&a, 0, sizeof a);
    a.c = c;
    a.z = z;
    a.z_first = z_first;
    a.y = y;
    return a;
}

extern "C" ptq_status ptq_k_observe_chain_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, void *const states[3], int64_t n_bins,
                                               const float *c, const float *z, int z_first, int relu, float *y,
                                               int64_t n)
{
    if (n <= 0)
        return PTQ_OK;
    chain_args a = chain_io(c, z, z_first, y);
    a.relu = relu;
    const int used[CHAIN_OBS] = {1, z != NULL, relu}; /* a is c without an Add, y is a without a Relu */
    return chain_pass<PASS_CONV>(ctx, d, a, states, used, n_bins, n);
}

extern "C" ptq_status ptq_k_observe_bias_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, void *const states[2], int64_t n_bins,
                                              const float *c, const float *bias, int64_t cols, int bias_first,
                                              float *y, int64_t n)
{
    if (n <= 0)
        return PTQ_OK;
    if (cols <= 0 || n % cols)
        return ptq_fail(ctx, PTQ_ERR_INTERNAL, "bias of %lld values added to %lld values", (long long)cols,
                        (long long)n);
    chain_args a = chain_io(c, bias, bias_first, y);
    a.z_cols = cols;
    void *const st[CHAIN_OBS] = {states[0], states[1], NULL};
    const int used[CHAIN_OBS] = {1, 1, 0};
    return chain_pass<PASS_BIAS>(ctx, d, a, st, used, n_bins, n);
}

extern "C" ptq_status ptq_k_observe_gelu_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, void *const states[5], int64_t n_bins,
                                              const float *x, float *a_out, float *y, int64_t n, float c_div,
                                              float c_add, float c_mul)
{
    if (n <= 0)
        return PTQ_OK;
    const int used[CHAIN_OBS] = {1, 1, 1};
    chain_args first = chain_io(x, NULL, 0, a_out);
    first.k0 = c_div;
    first.k1 = c_add;
    ptq_status st = chain_pass<PASS_GELU_A>(ctx, d, first, states, used, n_bins, n);
    if (st != PTQ_OK)
        return st;
    chain_args second = chain_io(x, a_out, 0, y);
    second.k0 = c_mul;
    void *const st2[CHAIN_OBS] = {states[3], states[4], NULL};
    return chain_pass<PASS_GELU_B>(ctx, d, second, st2, used, n_bins, n);
}

extern "C" ptq_status ptq_k_observe_dev_read_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const void *state, int64_t n_bins,
                                                  ptq_observe_stats *s, int *e, int64_t *hist)
{
    obs_dev_state h;
    ptq_status st = ptq_cuda_download(ctx, d, &h, state, sizeof h);
    if (st != PTQ_OK)
        return st;
    /* u64 counts below 2^63 have int64_t's bits */
    st = ptq_cuda_download(ctx, d, hist, (const char *)state + OBS_HEADER_BYTES, (size_t)n_bins * sizeof *hist);
    if (st != PTQ_OK)
        return st;
    s->count = (int64_t)h.count;
    s->n_zero = (int64_t)h.n_zero;
    s->n_nan = (int64_t)h.n_nan;
    s->n_inf = (int64_t)h.n_inf;
    s->min = key_value(h.min_key);
    s->max = key_value(h.max_key);
    *e = h.has_range ? h.e : 0;
    return PTQ_OK;
}
