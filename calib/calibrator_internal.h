/* The calibrators' searches on a bare histogram, shared by the calib/ files and
 * tests/test_calibrators.c (whose --kl driver feeds the numpy oracle,
 * tests/calibrators_test.py). Not public API. */
#ifndef PTQ_CALIBRATOR_INTERNAL_H
#define PTQ_CALIBRATOR_INTERNAL_H

#include <stdint.h>

#include "ptq/calibrator.h"

/* p's method, format and percentile (those of ptq_calib_compute):
 * PTQ_ERR_INVALID_ARG naming the value that is not one. */
ptq_status ptq_calib_params_check(ptq_ctx *ctx, const ptq_calib_params *p);

/* The first KL candidate: 128 target levels for INT8 (ModelOpt's start_bin). */
#define PTQ_CALIB_KL_START 128

/* x: [n]. The sum exactly as numpy's np.sum adds a contiguous float64 array:
 * blocks of 8192 (the ufunc buffer) added in turn, each summed pairwise. */
double ptq_calib_np_sum(const double *x, int64_t n);

/* The entropy search on bins: [n] counts of bins of width 1 (the histogram
 * truncated after its last non-empty bin). *out_i: the chosen candidate i
 * (amax = i bin widths), in [PTQ_CALIB_KL_START, n]; n itself when n is below
 * PTQ_CALIB_KL_START or every bin is empty. bins is not modified. */
ptq_status ptq_calib_kl_choose(ptq_ctx *ctx, const int64_t *bins, int64_t n, ptq_qformat f, int64_t *out_i);

/* The mse search on bins: [n] (as above): *out_i in [1, n], the right edge
 * (in bin widths) with the least quantize-dequantize squared error of the
 * bin centres; ties go to the largest. */
void ptq_calib_mse_choose(const int64_t *bins, int64_t n, ptq_qformat f, int64_t *out_i);

#endif
