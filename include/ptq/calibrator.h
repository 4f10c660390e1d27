/* Calibrators: turn one observer's |x| histogram and statistics into a
 * quantization range (amax) for a target format, without running the model
 * again. minmax, entropy (the TensorRT-style KL search of REFERENCE.md,
 * agreeing bin for bin with NVIDIA's published implementation), percentile
 * and mse, each for INT8 (127 levels) and FP8 E4M3 / E5M2 (amax maps to
 * 448 / 57344). Implemented in calib/; covered by tests/test_calibrators.c
 * and tests/calibrators_test.py (an independent numpy oracle). */
#ifndef PTQ_CALIBRATOR_H
#define PTQ_CALIBRATOR_H

#include <stdint.h>

#include "ptq/export_api.h"
#include "ptq/numfmt.h"
#include "ptq/observer.h"
#include "ptq/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ptq_calib_method {
    PTQ_CALIB_MINMAX = 0,
    PTQ_CALIB_ENTROPY = 1,
    PTQ_CALIB_PERCENTILE = 2,
    PTQ_CALIB_MSE = 3
} ptq_calib_method;

/* The format a range is computed for (include/ptq/numfmt.h): a scaled one,
 * int8 (scale = amax / 127), fp8-e4m3 (amax / 448) or fp8-e5m2 (amax / 57344). */
typedef ptq_fmt ptq_qformat;
#define PTQ_QFORMAT_INT8 PTQ_FMT_INT8
#define PTQ_QFORMAT_FP8_E4M3 PTQ_FMT_FP8_E4M3
#define PTQ_QFORMAT_FP8_E5M2 PTQ_FMT_FP8_E5M2

/* The percentile when none is given (bench/results/2026-12-04-accuracy-heldout-vm.md:
 * per-family values chosen on the four accuracy models did not carry over to a held-out CNN). */
#define PTQ_CALIB_DEFAULT_PERCENTILE 99.99

typedef struct ptq_calib_params {
    ptq_calib_method method;
    ptq_qformat format;
    double percentile; /* PTQ_CALIB_PERCENTILE: p in (0, 100]; 0 means PTQ_CALIB_DEFAULT_PERCENTILE */
} ptq_calib_params;

typedef struct ptq_calib_range {
    double amax;             /* > 0, or 0 when every finite value was zero (degenerate = 1) */
    double scale;            /* amax / the format's largest level (127, 448, 57344) */
    double clipped_fraction; /* share of the non-NaN values with |x| > amax (Inf counts as clipped) */
    int degenerate;          /* 1: no finite nonzero value was seen; amax and scale are 0 */
    double zero_fraction;    /* share of the nonzero finite values that round to the zero code at scale
                                (ptq_calib_zero_fraction); above PTQ_CALIB_ZERO_WARN the amax sits far
                                above the tensor's bulk (one outlier set it) and most of the tensor is lost */
} ptq_calib_range;

/* A zero_fraction above this makes ptq export and ptq plan warn, naming the tensor. */
#define PTQ_CALIB_ZERO_WARN 0.5

/* "minmax", "entropy", "percentile", "mse"; "int8", "fp8-e4m3", "fp8-e5m2". */
PTQ_API const char *ptq_calib_method_name(ptq_calib_method m);
PTQ_API const char *ptq_qformat_name(ptq_qformat f);
/* Parses the names above (and "fp8" for fp8-e4m3); PTQ_ERR_INVALID_ARG listing the choices otherwise. */
PTQ_API ptq_status ptq_calib_method_parse(ptq_ctx *ctx, const char *s, ptq_calib_method *out);
/* Parses a method as a plan records it and --method takes it: a name above,
 * or percentile=P with P in (0, 100] (*percentile = P; 0 when no P is
 * given). PTQ_ERR_INVALID_ARG naming the fault otherwise. */
PTQ_API ptq_status ptq_calib_spec_parse(ptq_ctx *ctx, const char *s, ptq_calib_method *method, double *percentile);
PTQ_API ptq_status ptq_qformat_parse(ptq_ctx *ctx, const char *s, ptq_qformat *out);
/* The format's largest finite value from the table: 127, 448 or 57344 (127 for a format that takes no scale). */
PTQ_API double ptq_qformat_max(ptq_qformat f);

/* Computes the range of what obs saw. PTQ_ERR_DATA when obs saw no finite
 * value at all (empty, or only NaN/Inf); PTQ_ERR_INVALID_ARG for a bad
 * percentile. Deterministic: the same observer state gives the same bits.
 * Only finite zeros (no nonzero finite value): degenerate, amax = scale = 0.
 *
 * w is the bin width 2^e / n_bins; "the histogram" is obs's, truncated after
 * its last non-empty bin (len bins); inside a bin the values are taken as
 * spread evenly, the last non-empty bin ending at max|x| rather than its edge.
 *
 * minmax: amax = max(|min|, |max|) exactly.
 * entropy: ModelOpt's _compute_amax_entropy (REFERENCE.md) on the histogram
 *   (ModelOpt's own ends at max|x|, ours at a bin edge past it): bins[0] =
 *   bins[1], candidates i = 128 .. len, amax = i * w (so up to one bin above
 *   max|x|, but never above FLT_MAX: an edge past it gives FLT_MAX). Its arithmetic is reproduced operation for operation (np.sum's
 *   order, scipy's entropy and rel_entr) so near-ties resolve as in numpy;
 *   ties go to the largest i. One departure: where every bin below a
 *   candidate is empty, ModelOpt's Q is 0/0 = NaN and numpy's argmin would
 *   take it (amax at the first non-empty bin, clipping everything); here, as
 *   REFERENCE.md states the rule, P > 0 where Q = 0 is infinity and loses.
 *   Under 128 bins (never for an observer: its last
 *   non-empty bin is at least n_bins / 2) ModelOpt's search has no candidate
 *   and fails; ours keeps the whole histogram, amax = len * w.
 *   FP8 targets: the same search with the FP8 grid as the levels: for
 *   candidate i the centre (j + 0.5) w of bin j is scaled by fmax / (i w)
 *   and rounded to its FP8 code (nearest even, saturating, from the double);
 *   bins with the same code form one level, whose count Q spreads evenly over
 *   its non-empty bins, as for INT8. Same P, outliers, candidates and ties.
 *   Cost O(len^2): about 0.1 s (INT8) / 0.2 s (FP8) for 4096 bins.
 * percentile: amax below which p% of the non-NaN |x| lie, exact zeros being
 *   values at 0 and Inf above everything, interpolated linearly inside the
 *   bin; kept within [right edge of the first non-empty bin, max|x|]: a
 *   target among the zeros, or inside the first non-empty bin, gives that
 *   lower bound (amax > 0 and the smallest values not all clipped), one
 *   among the Inf gives max|x|. The floor can lie far above the percentile
 *   asked for: the bins are max|x| / n_bins wide (rounded up to a power of
 *   two), so where one outlier sets max|x| the first bin may hold most of
 *   the tensor, and percentile=50 of 4095 N(0,1) values and one 1e4 gives
 *   4.0, the first bin's right edge, not the median 0.67.
 * mse: amax among the bin right edges i * w, i = 1 .. len (FLT_MAX for an edge past it), with the least
 *   sum over bins of count * (qdq(centre) - centre)^2, centres (j + 0.5) w;
 *   INT8 qdq: scale amax / 127, round half to even, clamp to +-127 (the
 *   histogram is of |x|: the -128 code is not counted); FP8:
 *   x * (fmax / amax) to the FP8 code (nearest even, saturating, in double)
 *   and back times amax / fmax. Ties go to the largest. O(len^2): about 50 ms
 *   for 4096 bins.
 * clipped_fraction: (Inf + the binned values above amax, a linear share of a
 *   straddled bin) / the non-NaN values; 0 for minmax without Inf.  *
 * entropy and mse search at most the default resolution: an observer of
 * more bins is regrouped first (summing groups of n_bins / 4096 bins), which
 * is exactly the histogram a 4096-bin observer of the same data would hold,
 * so their O(len^2) search stays under a second whatever --bins was.
 */
PTQ_API ptq_status ptq_calib_compute(ptq_ctx *ctx, const ptq_calib_params *p, const ptq_observer *obs,
                                     ptq_calib_range *out);

/* The share of the nonzero finite values obs saw that round to the zero
 * code at scale in format f: |x| below half the format's smallest positive
 * level (1 for int8 and uint8, 2^-9 for fp8-e4m3, 2^-16 for fp8-e5m2) times
 * scale, counted on the histogram as the calibrators read it (values spread
 * evenly inside a bin). 0 when obs saw no nonzero finite value or scale is
 * not > 0. */
PTQ_API double ptq_calib_zero_fraction(const ptq_observer *obs, double scale, ptq_qformat f);

/* The asymmetric range of what obs saw for a calibrated amax (target
 * ort-cpu, include/ptq/plan.h): [max(min, -amax), min(max, amax)] as
 * float32, the observed range clipped to the calibrator's (minmax: exactly
 * [min, max]), widened to hold 0 as onnxruntime's compute_scale_zp widens
 * it (*lo <= 0 <= *hi): the range the plan's uint8 scale and zero point
 * come from, and the one ptq export writes. */
PTQ_API void ptq_calib_clip_range(const ptq_observer *obs, double amax, float *lo, float *hi);

#ifdef __cplusplus
}
#endif
#endif
