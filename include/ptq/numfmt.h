/* Number formats: the one table of every format ptq rounds to (FP32, FP16,
 * BF16, INT8, asymmetric UINT8, FP8 E4M3/E5M2), with its name, width, largest finite value
 * and what it takes (scales, block scales). Plans (ptq_prec), calibrators
 * (ptq_qformat) and kernels (ptq_fp8_kind) name formats with ptq_fmt.
 * core/numfmt.c; covered by tests/test_numfmt.c. */
#ifndef PTQ_NUMFMT_H
#define PTQ_NUMFMT_H

#include "ptq/export_api.h"

#include "ptq/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The values are those of the plan precisions (fp32 is 0: "left as it is"). */
typedef enum ptq_fmt {
    PTQ_FMT_FP32 = 0,     /* IEEE binary32, left as it is */
    PTQ_FMT_FP16 = 1,     /* IEEE binary16, round to nearest even, no scale */
    PTQ_FMT_INT8 = 2,     /* symmetric, zero point 0: q = saturate(rne(x / scale)) in [-128, 127] */
    PTQ_FMT_FP8_E4M3 = 3, /* E4M3FN of x / scale, saturating (max 448, no Inf) */
    PTQ_FMT_FP8_E5M2 = 4, /* E5M2 of x / scale, saturating (max 57344) */
    PTQ_FMT_BF16 = 5,     /* bfloat16, round to nearest even, no scale */
    PTQ_FMT_UINT8 = 6     /* asymmetric, with a zero point zp in [0, 255]: q = saturate(rne(x / scale) + zp)
                             in [0, 255] (onnxruntime's CPU activations); activations only */
} ptq_fmt;
#define PTQ_FMT_COUNT 7

typedef struct ptq_numfmt {
    ptq_fmt id;
    const char *name;   /* as plans, exports and the command line spell it: "int8", "fp8-e4m3", ... */
    int bits;           /* storage width */
    int is_float;
    int exp_bits;       /* float formats: exponent and stored mantissa bits; 0 for integers */
    int man_bits;
    double max_finite;  /* largest finite value; a scaled format maps amax to it (127, 448, 57344) */
    int scaled;         /* 1: values are x / scale (plan entries carry scales; calibrators target it unless
                           it has a zero point) */
    int zero_point;     /* 1: codes are x / scale + a zero point (asymmetric): its range is the calibrated
                           amax clipped to the observed [min, max], as ptq_k_uint8_params makes it */
    int in_plans;       /* 1: a plan entry may run in it (simulated quantization implements it) */
    int block_scaled;   /* 1: a plan entry may carry a block size and one scale per block */
    int onnx_dtype;     /* ONNX TensorProto element type (1 float, 10 float16, 16 bfloat16, 3 int8, 2 uint8, 17, 19) */
    int qdq_opset;      /* oldest ONNX opset whose QuantizeLinear/DequantizeLinear take it; 0: not a Q/DQ type */
} ptq_numfmt;

/* The entry of f, or NULL when f is not a format. */
PTQ_API const ptq_numfmt *ptq_numfmt_get(ptq_fmt f);
/* The entry named name (exactly), or NULL. */
PTQ_API const ptq_numfmt *ptq_numfmt_find(const char *name);

#ifdef __cplusplus
}
#endif
#endif
