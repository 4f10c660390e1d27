/* Internal to model/: a bounds-checked protobuf wire-format reader (varint,
 * fixed32/64, length-delimited, packed or unpacked repeated scalars) and the
 * onnx TensorProto decoder built on it, shared by the ONNX loader and
 * ptq_tensor_load_pb; and the field writers the ONNX editor and the Keras
 * importer encode with. Covered by tests/test_onnx_load.c, tests/test_onnx_malformed.c. */
#ifndef PTQ_MODEL_PB_H
#define PTQ_MODEL_PB_H

#include <stddef.h>
#include <stdint.h>

#include "ptq/buf.h"
#include "ptq/status.h"
#include "ptq/tensor.h"

enum { PTQ_PB_VARINT = 0, PTQ_PB_I64 = 1, PTQ_PB_LEN = 2, PTQ_PB_I32 = 5 };

/* A message type, for error messages: field_names[num] names field num. */
typedef struct ptq_pb_desc {
    const char *name; /* "GraphProto" */
    int n_names;
    const char *const *field_names;
} ptq_pb_desc;

/* Reads one message: bytes [p, end) of a buffer that starts at base (offsets
 * in messages count from base). parent/in_field say where it is nested. */
typedef struct ptq_pb {
    ptq_ctx *ctx;
    const char *path; /* the file, for messages */
    const uint8_t *base;
    const uint8_t *p;
    const uint8_t *end;
    const ptq_pb_desc *desc;
    const struct ptq_pb *parent;
    uint32_t in_field;
} ptq_pb;

typedef struct ptq_pb_field {
    uint32_t num;
    int wire;            /* PTQ_PB_* */
    uint64_t u;          /* VARINT value, or the bits of I32 / I64 */
    const uint8_t *data; /* LEN payload */
    size_t len;
    size_t at;           /* offset of the field's key from base */
} ptq_pb_field;

void ptq_pb_init(ptq_pb *r, ptq_ctx *ctx, const char *path, const void *bytes, size_t n_bytes,
                 const ptq_pb_desc *desc);
/* A reader over field f's payload (f must be PTQ_PB_LEN, see ptq_pb_expect). */
void ptq_pb_sub(const ptq_pb *r, const ptq_pb_field *f, const ptq_pb_desc *desc, ptq_pb *child);
int ptq_pb_more(const ptq_pb *r);
/* Reads the next field; any wire type is accepted (that is how unknown
 * fields are skipped). Groups, bad wire types, field 0, varints over 10
 * bytes or 64 bits and lengths past the end give PTQ_ERR_FORMAT. */
ptq_status ptq_pb_next(ptq_pb *r, ptq_pb_field *f);
/* PTQ_ERR_FORMAT unless f has the wire type a known field needs. */
ptq_status ptq_pb_expect(const ptq_pb *r, const ptq_pb_field *f, int wire);
/* "<path>: <what> at byte <at> inside ModelProto.graph.node" */
ptq_status ptq_pb_fail(const ptq_pb *r, size_t at, ptq_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Scalar getters with the wire-type check. */
ptq_status ptq_pb_get_int64(const ptq_pb *r, const ptq_pb_field *f, int64_t *v);
ptq_status ptq_pb_get_float(const ptq_pb *r, const ptq_pb_field *f, float *v);

/* Repeated scalars: one field occurrence holds either one value (wire type
 * of the kind) or a packed run of them (PTQ_PB_LEN). begin validates the
 * whole run and counts it; next then cannot fail. */
typedef enum ptq_pb_kind { PTQ_PB_KIND_VARINT, PTQ_PB_KIND_FIXED32, PTQ_PB_KIND_FIXED64 } ptq_pb_kind;

typedef struct ptq_pb_scalars {
    const uint8_t *p, *end; /* packed run; p == end once read */
    ptq_pb_kind kind;
    int single_left; /* unpacked: 1 until the one value is read */
    uint64_t single;
} ptq_pb_scalars;

ptq_status ptq_pb_scalars_begin(const ptq_pb *r, const ptq_pb_field *f, ptq_pb_kind kind, ptq_pb_scalars *it,
                                int64_t *n_values);
int ptq_pb_scalars_next(ptq_pb_scalars *it, uint64_t *v);

/* ---- writing (the ONNX editor, the Keras importer's ModelProto) ----
 * Each appends one field to b; a failed put sticks in b->failed. */
void ptq_pb_put_varint(ptq_buf *b, uint64_t v);
void ptq_pb_put_key(ptq_buf *b, uint32_t num, int wire);
void ptq_pb_put_len(ptq_buf *b, uint32_t num, const void *data, size_t n); /* a LEN field */
void ptq_pb_put_str(ptq_buf *b, uint32_t num, const char *s);
void ptq_pb_put_int(ptq_buf *b, uint32_t num, int64_t v); /* a VARINT field */

/* ---- onnx TensorProto ---- */

extern const ptq_pb_desc ptq_pb_tensor_desc;
extern const ptq_pb_desc ptq_pb_entry_desc; /* StringStringEntryProto {key=1, value=2} */

typedef enum ptq_pb_data_kind {
    PTQ_PB_DATA_NONE = 0,  /* no data: only valid for 0 elements */
    PTQ_PB_DATA_RAW,       /* n_bytes at raw: raw_data, or one packed float_data/double_data run */
    PTQ_PB_DATA_TYPED,     /* typed_field values decoded by ptq_pb_tensor_decode */
    PTQ_PB_DATA_EXTERNAL   /* ext_* say which file and where */
} ptq_pb_data_kind;

typedef struct ptq_pb_tensor {
    const uint8_t *name; /* not NUL-terminated */
    size_t name_len;
    ptq_dtype dtype;
    int ndim;
    int64_t dims[PTQ_MAX_DIMS];
    int64_t numel;
    size_t n_bytes; /* numel * dtype size */
    ptq_pb_data_kind kind;
    const uint8_t *raw;   /* RAW: n_bytes inside the message's buffer, maybe unaligned */
    uint32_t typed_field; /* TYPED: TensorProto field number holding the values */
    ptq_pb msg; /* the TensorProto, re-read by decode */
    const uint8_t *ext_location;
    size_t ext_location_len;
    int64_t ext_offset;
    int64_t ext_length; /* -1: to the end of the file */
} ptq_pb_tensor;

/* Parses a TensorProto read by r (desc ptq_pb_tensor_desc) and checks
 * dims, dtype and that the data holds exactly n_bytes. role names it in
 * messages: "<path>: <role> '<name>': raw_data has 100 bytes, dims ... need 576". */
ptq_status ptq_pb_tensor_parse(ptq_pb *r, const char *role, ptq_pb_tensor *t);
/* Writes a RAW or TYPED tensor's data to dst: t->n_bytes, dtype-native
 * little-endian elements in row-major order of t->dims. */
void ptq_pb_tensor_decode(const ptq_pb_tensor *t, void *dst);
/* Reads an EXTERNAL tensor's bytes into dst (t->n_bytes, laid out as decode's). The location
 * is relative to base_dir; absolute paths and '..' are refused. */
ptq_status ptq_pb_tensor_read_external(const ptq_pb_tensor *t, const char *role, const char *base_dir, void *dst);
/* The same checks without reading: run before allocating n_bytes, so a
 * model cannot claim more external bytes than its files hold. */
ptq_status ptq_pb_tensor_check_external(const ptq_pb_tensor *t, const char *role, const char *base_dir);
/* What read_external and check_external run first: checks the location,
 * resolves it (symlinks followed) inside base_dir, opens the file and checks
 * that ext_offset + n_bytes fit in it; on success *fd is open for reading and
 * *full is its resolved path (malloc'd), both the caller's (the ONNX editor
 * copies external data through it in pieces). */
ptq_status ptq_pb_tensor_open_external(const ptq_pb_tensor *t, const char *role, const char *base_dir, int *fd,
                                       char **full);
/* Alignment the dtype's elements need to be read in place. */
size_t ptq_pb_dtype_align(ptq_dtype dt);
/* The folder of a file path ("." when it has none), malloc'd; NULL when out of memory. */
char *ptq_pb_dirname(const char *path);

#endif
