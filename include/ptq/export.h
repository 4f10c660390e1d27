/* Range exporters: per-tensor ranges as the bytes other runtimes read: a
 * TensorRT INT8 calibration cache, ONNX Runtime's TensorRT-EP tables (byte
 * for byte as ORT's write_calibration_table) and ptq's JSON. In quant/export_*.c;
 * covered by tests/test_export.c and tests/export_test.py (ORT as the oracle).
 * Each writer sets *out to the new bytes without reading it (it may be
 * uninitialised): ptq_buf_free a buffer that holds earlier bytes first, which
 * would otherwise leak. */
#ifndef PTQ_EXPORT_H
#define PTQ_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "ptq/export_api.h"
#include "ptq/buf.h"
#include "ptq/calibrator.h"
#include "ptq/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One tensor's range as a calibrator produced it. A range is degenerate
 * when r.degenerate is set or r.amax is 0 (the tensor was all zeros). */
typedef struct ptq_tensor_range {
    const char *name;        /* ONNX tensor name: valid UTF-8, non-empty, no '\n' or '\r' */
    ptq_calib_range r;       /* amax finite and >= 0; scale finite and >= 0; clipped_fraction in [0, 1] */
    ptq_calib_method method;
    ptq_qformat format;
    double percentile;       /* PTQ_CALIB_PERCENTILE only: the p used, in (0, 100] */
    int asymmetric;          /* 1: the range is [lowest, highest] (target ort-cpu: ptq_calib_clip_range),
                                which calibration.json and ptq's JSON write; 0: [-amax, amax] */
    float lowest, highest;   /* asymmetric only: finite, lowest <= highest */
} ptq_tensor_range;

/* Exporters write into a ptq_buf (include/ptq/buf.h): each overwrites its
 * out buf (it does not free what was there) and leaves it zeroed on failure. */

/* What an export did, for the caller's warnings. */
typedef struct ptq_export_stats {
    int64_t n_written;     /* tensors written */
    int64_t n_degenerate;  /* degenerate ranges: left out of the TensorRT-facing tables (TRT cache,
                              calibration.flatbuffers, calibration.cache), written with amax 0 in JSON */
    int64_t n_colon_names; /* names with ':' (ORT's TensorRT-cache parser cuts them there) */
    int64_t n_no_positive; /* asymmetric ranges (target ort-cpu) whose highest is 0, no positive value seen: the
                              TensorRT EP's amax would be 0, so calibration.flatbuffers and calibration.cache
                              leave them out (ptq_export_range_no_positive names them); calibration.json keeps
                              them */
    int64_t n_tiny;        /* ranges whose INT8 scale (amax/127, or highest/127) is below float32's smallest normal
                              value (amax under about 1.5e-36): left out of the TensorRT-facing tables as degenerate
                              ones are (ptq_export_range_tiny names them); JSON and calibration.json keep them */
} ptq_export_stats;

/* 1 when a name in a TensorRT cache would not read back whole: it contains
 * ':' and ORT's TensorRT-EP parser splits each line at the first ':'. */
PTQ_API int ptq_export_name_warns(const char *name);

/* 1 when t is an asymmetric range (target ort-cpu), not degenerate, with
 * no positive value (max(highest, lowest) <= 0: the tensor was never
 * positive): the amax the TensorRT EP would read is 0, so
 * calibration.flatbuffers and calibration.cache leave it out. */
PTQ_API int ptq_export_range_no_positive(const ptq_tensor_range *t);

/* 1 when t is not degenerate, the value a TensorRT-facing table holds for it (amax; highest for an
 * asymmetric range) is positive, and its INT8 scale, (float)(value / 127), is not a normal float32 (under
 * 2^-126: |x| below about 1.5e-36), which TensorRT cannot take: the TensorRT cache, calibration.flatbuffers
 * and calibration.cache leave it out, as they leave out all-zero tensors (ptq plan keeps such a tensor FP32). */
PTQ_API int ptq_export_range_tiny(const ptq_tensor_range *t);

/* 1 when s is a name (or path) the exporters accept: non-empty, valid
 * UTF-8 (no overlong forms or surrogates), no '\n' or '\r'. */
PTQ_API int ptq_export_name_valid(const char *s);

/* The checks every exporter runs first: each range as documented on
 * ptq_tensor_range (a name: non-empty, valid UTF-8), and no name twice. PTQ_ERR_INVALID_ARG naming the
 * tensor (its index and name) otherwise. stats may be NULL; n_written is 0. */
PTQ_API ptq_status ptq_export_check(ptq_ctx *ctx, const ptq_tensor_range *ranges, int64_t n, ptq_export_stats *stats);

/* ptq_export_check, then no name with a line break ('\n' or '\r'): the
 * checks of the line- and key-based files (TensorRT cache, ONNX Runtime
 * tables). ptq's JSON carries such names escaped. */
PTQ_API ptq_status ptq_export_check_lines(ptq_ctx *ctx, const ptq_tensor_range *ranges, int64_t n,
                                          ptq_export_stats *stats);

/* x (finite) as Python's repr(float) writes it: the shortest decimal that
 * reads back to the same double ("0.1", "1e-05", "100.0", "1.5e+16",
 * "-0.0"). ORT writes its table values with str(float). Returns the length,
 * or 0 when x is not finite or out_bytes is under 32. */
PTQ_API size_t ptq_export_format_double(double x, char *out, size_t out_bytes);

/* ---- TensorRT INT8 calibration cache (TensorRT <= 10.x) ----
 * "TRT-<version>-<algorithm>\n" then "name: %08x\n" per tensor in the given
 * order: the IEEE-754 bits of the float32 scale (float)(amax / 127).
 * INT8 only: an FP8 range is PTQ_ERR_UNSUPPORTED (TensorRT reads FP8 ranges
 * only from explicit Q/DQ models). Degenerate ranges, and tiny ones whose
 * scale is under float32's smallest normal 2^-126 (ptq_export_range_tiny),
 * are left out (TensorRT then keeps those tensors out of INT8) and counted
 * in stats. An amax whose scale overflows float32 is PTQ_ERR_INVALID_ARG.
 * Names with ':' are written, and counted. */

/* TensorRT's version number as caches spell it: major*1000+minor*100+patch
 * up to TensorRT 9 (8.6.1 -> 8601), major*10000+minor*100+patch from 10
 * (10.3.0 -> 100300). */
PTQ_API int ptq_trt_cache_version(int major, int minor, int patch);

/* 10.3.0: the TensorRT of JetPack 6.x, the usual home of implicit-INT8
 * engines. TensorRT ignores a cache whose header does not match its own
 * version, so callers should let users set it. */
#define PTQ_TRT_CACHE_VERSION_DEFAULT 100300
/* trtexec --calib reads the cache through an IInt8EntropyCalibrator2 and
 * TensorRT rejects a cache whose algorithm differs from the calibrator's,
 * so this is the default whatever method made the ranges (the scales are
 * used as they are either way). "MinMaxCalibration" suits an
 * IInt8MinMaxCalibrator. */
#define PTQ_TRT_CACHE_ALGORITHM_DEFAULT "EntropyCalibration2"

typedef struct ptq_trt_cache_params {
    int version;           /* > 0; 0 means PTQ_TRT_CACHE_VERSION_DEFAULT */
    const char *algorithm; /* non-empty, no ':', whitespace or control character; NULL means the default */
} ptq_trt_cache_params;

/* p may be NULL (defaults); stats may be NULL. */
PTQ_API ptq_status ptq_export_trt_cache(ptq_ctx *ctx, const ptq_trt_cache_params *p, const ptq_tensor_range *ranges,
                                        int64_t n, ptq_buf *out, ptq_export_stats *stats);

/* ---- ONNX Runtime TensorRT EP tables (write_calibration_table) ----
 * Each function writes the bytes ORT 1.32's write_calibration_table writes
 * to that file for TensorsData holding, per tensor, float32 lowest = -amax
 * and highest = amax: the value ORT writes is str(float(float32 amax)), so
 * amax is rounded to float32 first (the EP reads it with std::stof). An
 * asymmetric range (target ort-cpu) holds its own lowest and highest, and
 * ORT then writes max(highest, lowest), its highest: so does ptq.
 * calibration.flatbuffers and calibration.cache feed TensorRT's INT8 path:
 * FP8 ranges are PTQ_ERR_UNSUPPORTED there; degenerate ranges, asymmetric
 * ones with no positive value (highest <= 0) and tiny ones
 * (ptq_export_range_tiny) are left out (counted), and the value written
 * must round to a finite float32 (else PTQ_ERR_INVALID_ARG). */

/* TrtTable { dict: [KeyValue { key: string (key); value: string }] }, no
 * file identifier, laid out exactly as ORT's Python flatbuffers Builder
 * lays it out. Like ORT's file, the dict is in descending byte order of the
 * keys (ORT prepends its sorted list), so readers iterate it (as the EP
 * does) rather than binary-search it. */
PTQ_API ptq_status ptq_export_ort_flatbuffers(ptq_ctx *ctx, const ptq_tensor_range *ranges, int64_t n, ptq_buf *out,
                                              ptq_export_stats *stats);

/* calibration.cache: "name amax\n" per tensor (highest for an asymmetric range), names in ascending byte order. */
PTQ_API ptq_status ptq_export_ort_cache(ptq_ctx *ctx, const ptq_tensor_range *ranges, int64_t n, ptq_buf *out,
                                        ptq_export_stats *stats);

/* calibration.json: json.dumps of ORT's TensorsData, as ORT writes it and
 * as onnxruntime.quantization's load_tensors_data (quantize_static's
 * calibration_cache_path) reads it back: {"CLS": "TensorsData", "data":
 * {name: {"lowest": -amax, "highest": amax, "CLS": "TensorData"}, ...},
 * "calibration_method": {"CLS": "CalibrationMethod", "value":
 * "CalibrationMethod.<M>"}}, tensors in the given order, ASCII only
 * (\uXXXX escapes), no trailing newline. <M> is MinMax, Entropy or
 * Percentile when every range has that method, MinMax otherwise (mse or
 * mixed: the file then just carries given ranges). Any format; degenerate
 * ranges are kept with lowest -0.0 and highest 0.0. An asymmetric range
 * writes its own lowest and highest (quantize_static then derives the
 * uint8 scale and zero point ptq's ort-cpu plans use). */
PTQ_API ptq_status ptq_export_ort_json(ptq_ctx *ctx, const ptq_tensor_range *ranges, int64_t n, ptq_buf *out,
                                       ptq_export_stats *stats);

/* ---- ptq's own JSON of ranges ----
 * {"format": "ptq-ranges", "format_version": 1, "ptq_version", "model":
 * {"path", "sha256"}, "archive": {"path"}, "tensors": [{"name", "amax",
 * "scale", "method", ["percentile",] "format", "clipped_fraction",
 * "degenerate"}, ...]}: tensors in the given order, every number the
 * shortest decimal that reads back to the same double, ends with '\n'.
 * scale is r.scale as the calibrator gave it; "percentile" only for the
 * percentile method; "lowest" and "highest" (after "amax") only for an
 * asymmetric range. Any format; degenerate ranges are written (amax and
 * scale 0, "degenerate": true). */
typedef struct ptq_export_json_meta {
    /* the two paths may hold any bytes (a line break is escaped; a byte that
     * starts no UTF-8 character is written as U+FFFD); empty is refused */
    const char *model_path;   /* NULL -> null */
    const char *model_sha256; /* 64 lowercase hex digits, or NULL -> null */
    const char *archive_path; /* the calibration archive the ranges came from; NULL -> null */
} ptq_export_json_meta;

/* meta may be NULL (every field null); stats may be NULL. */
PTQ_API ptq_status ptq_export_json(ptq_ctx *ctx, const ptq_export_json_meta *meta, const ptq_tensor_range *ranges,
                                   int64_t n, ptq_buf *out, ptq_export_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
