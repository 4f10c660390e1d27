/* The number-format table (include/ptq/numfmt.h): one row per format, the
 * only place its name and limits are written. Covered by tests/test_numfmt.c. */
#include <string.h>

#include "ptq/numfmt.h"

static const ptq_numfmt formats[PTQ_FMT_COUNT] = {
    /* id, name, bits, is_float, exp_bits, man_bits, max_finite, scaled, zero_point, in_plans, block_scaled,
       onnx_dtype, qdq_opset */
    [PTQ_FMT_FP32] = {PTQ_FMT_FP32, "fp32", 32, 1, 8, 23, 3.4028234663852886e38, 0, 0, 1, 0, 1, 0},
    [PTQ_FMT_FP16] = {PTQ_FMT_FP16, "fp16", 16, 1, 5, 10, 65504.0, 0, 0, 1, 0, 10, 0},
    [PTQ_FMT_INT8] = {PTQ_FMT_INT8, "int8", 8, 0, 0, 0, 127.0, 1, 0, 1, 0, 3, 10},
    [PTQ_FMT_FP8_E4M3] = {PTQ_FMT_FP8_E4M3, "fp8-e4m3", 8, 1, 4, 3, 448.0, 1, 0, 1, 0, 17, 19},
    [PTQ_FMT_FP8_E5M2] = {PTQ_FMT_FP8_E5M2, "fp8-e5m2", 8, 1, 5, 2, 57344.0, 1, 0, 1, 0, 19, 19},
    /* a reference rounding exists (kernels/ref/numfmt.c); plans cannot name it yet */
    [PTQ_FMT_BF16] = {PTQ_FMT_BF16, "bf16", 16, 1, 8, 7, 3.3895313892515355e38, 0, 0, 0, 0, 16, 0},
    /* max_finite: the largest code; the largest value is (255 - zp) * scale */
    [PTQ_FMT_UINT8] = {PTQ_FMT_UINT8, "uint8", 8, 0, 0, 0, 255.0, 1, 1, 1, 0, 2, 10},
};

const ptq_numfmt *ptq_numfmt_get(ptq_fmt f)
{
    return (unsigned)f < PTQ_FMT_COUNT ? &formats[f] : NULL;
}

const ptq_numfmt *ptq_numfmt_find(const char *name)
{
    for (int i = 0; name && i < PTQ_FMT_COUNT; i++)
        if (strcmp(formats[i].name, name) == 0)
            return &formats[i];
    return NULL;
}
