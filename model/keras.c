/* The Keras HDF5 importer: reads model.save("x.h5") files of Keras 3 and
 * tf.keras 2.x (root attributes model_config, keras_version, backend; weights
 * under /model_weights/<layer>/ by the names in its weight_names attribute,
 * REFERENCE.md) and writes the same computation as an ONNX ModelProto
 * (model/onnx_build.c), which the ONNX loader and the Q/DQ exporter then
 * read. Keras tensors are NHWC; rank-4 values run NCHW inside (one Transpose
 * after the input, one back before Flatten, Reshape, Dense on images and the
 * outputs), kernels are turned from HWIO to OIHW, 'same' padding is written
 * out with the odd pixel at the end as TensorFlow pads. Every attribute,
 * dataset and config value is checked before use. Covered by
 * tests/test_keras.c and tests/keras_test.py (real Keras files). */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "core/json.h"
#include "datasets/datasets_internal.h"
#include "model/keras.h"
#include "model/onnx_build.h"
#include "ptq/memory.h"

#define MAX_LAYERS 10000   /* a model_config with more is refused, not walked */
#define MAX_NODE_INPUTS 64 /* Keras tensors one layer call takes */
#define MAX_DIM ((int64_t)1 << 31)
/* Steps the functional graph may take to put its layer calls in order (calls looked at and outputs scanned for
 * their inputs, pass after pass): Keras lists layers in call order, so a real model takes a few per output; a
 * config listing a long chain backwards takes the cube of its length (minutes for 10,000 layers) and is refused */
#define MAX_ORDER_STEPS ((int64_t)1 << 28)
#define ONNX_FLOAT 1
#define ONNX_INT64 7

static const unsigned char hdf5_signature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};

int ptq_keras_is_hdf5(const void *bytes, size_t n)
{
    return n >= sizeof hdf5_signature && memcmp(bytes, hdf5_signature, sizeof hdf5_signature) == 0;
}

/* A Keras tensor as the ONNX graph holds it. */
typedef struct kval {
    const char *name; /* the ONNX value */
    int rank;
    int64_t shape[PTQ_MAX_DIMS]; /* Keras's order (NHWC for images); -1 unknown (the batch) */
    int nchw;                    /* a rank-4 value stored NCHW */
} kval;

/* The output `index` of call `node` of layer `layer`. */
typedef struct kout {
    const char *layer;
    int64_t node, index;
    kval v;
} kout;

/* One call of a layer being translated. */
typedef struct klayer {
    const char *name, *cls;
    const cJSON *cfg;
    const char *out; /* its output's value name: the layer name, "<name>/call<k>" for calls after the first */
} klayer;

typedef struct kimp {
    ptq_ctx *ctx;
    const char *path;
    hid_t file, weights;
    double file_bytes;
    ptq_onnx_builder ob;
    kout *outs;
    int n_outs, cap_outs;
    char **strs; /* every string made here, freed at the end */
    int n_strs, cap_strs;
    int n_inputs;
    const char *input_layout; /* "NHWC" when the model's input is an image batch */
    int n_layers, n_half;     /* layers translated; of them computing in float16 or bfloat16 (check_dtype_policy) */
    const char *half_policy;  /* the first of those layers' dtype policy */
} kimp;

/* ---- strings and values ---- */

static char *kstr(kimp *K, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static char *kstr(kimp *K, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || (K->n_strs == K->cap_strs && K->cap_strs > (1 << 28)))
        return NULL;
    if (K->n_strs == K->cap_strs) {
        int cap = K->cap_strs ? 2 * K->cap_strs : 256;
        char **grown = realloc(K->strs, (size_t)cap * sizeof *grown);
        if (!grown)
            return NULL;
        K->strs = grown;
        K->cap_strs = cap;
    }
    char *s = malloc((size_t)n + 1);
    if (!s)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    K->strs[K->n_strs++] = s;
    return s;
}

static ptq_status oom(kimp *K)
{
    return ptq_fail(K->ctx, PTQ_ERR_NOMEM, "%s: out of memory reading the Keras model", K->path);
}

/* "<layer out>/<suffix>" */
static const char *sub_name(kimp *K, const klayer *L, const char *suffix)
{
    return kstr(K, "%s/%s", L->out, suffix);
}

static ptq_status bad_cfg(kimp *K, const klayer *L, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static ptq_status bad_cfg(kimp *K, const klayer *L, const char *fmt, ...)
{
    char what[512], esc[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return ptq_fail(K->ctx, PTQ_ERR_FORMAT, "%s: layer '%s' (%s): %s", K->path, ptq_escape(L->name, esc, sizeof esc),
                    L->cls, what);
}

static ptq_status unsupported(kimp *K, const klayer *L, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static ptq_status unsupported(kimp *K, const klayer *L, const char *fmt, ...)
{
    char what[512], esc[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return ptq_fail(K->ctx, PTQ_ERR_UNSUPPORTED, "%s: layer '%s' (%s): %s is not supported by ptq", K->path,
                    ptq_escape(L->name, esc, sizeof esc), L->cls, what);
}

static const char *shape_str(const kval *v, char *buf, size_t n)
{
    return ptq_dims_str(v->shape, v->rank, buf, n);
}

/* ---- config values ---- */

static const cJSON *jget(const cJSON *o, const char *key)
{
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

static int is_null(const cJSON *j)
{
    return !j || cJSON_IsNull(j);
}

static int json_int(const cJSON *j, int64_t lo, int64_t hi, int64_t *v)
{
    if (!cJSON_IsNumber(j) || !isfinite(j->valuedouble) || j->valuedouble != floor(j->valuedouble) ||
        j->valuedouble < (double)lo || j->valuedouble > (double)hi)
        return 0;
    *v = (int64_t)j->valuedouble;
    return 1;
}

/* An integer in [lo, hi]; dflt when absent or null (required when dflt < lo). */
static ptq_status cfg_int(kimp *K, const klayer *L, const char *key, int64_t dflt, int64_t lo, int64_t hi, int64_t *v)
{
    const cJSON *j = jget(L->cfg, key);
    if (is_null(j) && dflt >= lo) {
        *v = dflt;
        return PTQ_OK;
    }
    if (!json_int(j, lo, hi, v))
        return bad_cfg(K, L, "'%s' must be an integer in [%lld, %lld]", key, (long long)lo, (long long)hi);
    return PTQ_OK;
}

/* An int or a list of n ints, each in [lo, hi]; absent or null: dflt each (required when dflt < lo). */
static ptq_status cfg_ints(kimp *K, const klayer *L, const char *key, int n, int64_t dflt, int64_t lo, int64_t hi,
                           int64_t *v)
{
    const cJSON *j = jget(L->cfg, key);
    if (is_null(j) && dflt >= lo) {
        for (int i = 0; i < n; i++)
            v[i] = dflt;
        return PTQ_OK;
    }
    if (json_int(j, lo, hi, &v[0])) {
        for (int i = 1; i < n; i++)
            v[i] = v[0];
        return PTQ_OK;
    }
    if (!cJSON_IsArray(j) || cJSON_GetArraySize(j) != n)
        return bad_cfg(K, L, "'%s' must be an integer or a list of %d integers", key, n);
    for (int i = 0; i < n; i++)
        if (!json_int(cJSON_GetArrayItem(j, i), lo, hi, &v[i]))
            return bad_cfg(K, L, "'%s'[%d] must be an integer in [%lld, %lld]", key, i, (long long)lo,
                           (long long)hi);
    return PTQ_OK;
}

static ptq_status cfg_num(kimp *K, const klayer *L, const char *key, double dflt, double *v)
{
    const cJSON *j = jget(L->cfg, key);
    if (is_null(j)) {
        *v = dflt;
        return PTQ_OK;
    }
    if (!cJSON_IsNumber(j) || !isfinite(j->valuedouble) || fabs(j->valuedouble) > 3.0e38)
        return bad_cfg(K, L, "'%s' must be a finite number", key);
    *v = j->valuedouble;
    return PTQ_OK;
}

static ptq_status cfg_bool(kimp *K, const klayer *L, const char *key, int dflt, int *v)
{
    const cJSON *j = jget(L->cfg, key);
    if (is_null(j)) {
        *v = dflt;
        return PTQ_OK;
    }
    if (!cJSON_IsBool(j))
        return bad_cfg(K, L, "'%s' must be true or false", key);
    *v = cJSON_IsTrue(j);
    return PTQ_OK;
}

static ptq_status cfg_str(kimp *K, const klayer *L, const char *key, const char *dflt, const char **v)
{
    const cJSON *j = jget(L->cfg, key);
    if (is_null(j) && dflt) {
        *v = dflt;
        return PTQ_OK;
    }
    if (!cJSON_IsString(j))
        return bad_cfg(K, L, "'%s' must be a string", key);
    *v = j->valuestring;
    return PTQ_OK;
}

/* 'same' (1) or 'valid' (0); anything else is unsupported. */
static ptq_status cfg_padding(kimp *K, const klayer *L, int *same)
{
    const char *p;
    PTQ_TRY_RET(cfg_str(K, L, "padding", "valid", &p));
    if (strcasecmp(p, "same") != 0 && strcasecmp(p, "valid") != 0)
        return unsupported(K, L, "padding '%.40s'", p);
    *same = strcasecmp(p, "same") == 0;
    return PTQ_OK;
}

static ptq_status cfg_channels_last(kimp *K, const klayer *L)
{
    const char *f;
    PTQ_TRY_RET(cfg_str(K, L, "data_format", "channels_last", &f));
    if (strcmp(f, "channels_last") != 0)
        return unsupported(K, L, "data_format '%.40s' (ptq reads channels_last models)", f);
    return PTQ_OK;
}

/* A Keras axis in [-rank, rank) as 0..rank-1; a one-element list is taken too. */
static ptq_status cfg_axis(kimp *K, const klayer *L, const char *key, int64_t dflt, int rank, int *axis)
{
    const cJSON *j = jget(L->cfg, key);
    int64_t a = dflt;
    if (cJSON_IsArray(j)) {
        if (cJSON_GetArraySize(j) != 1)
            return unsupported(K, L, "'%s' over %d axes", key, cJSON_GetArraySize(j));
        j = cJSON_GetArrayItem(j, 0);
    }
    if (!is_null(j) && !json_int(j, -rank, rank - 1, &a))
        return bad_cfg(K, L, "'%s' must be an axis of a rank-%d tensor", key, rank);
    *axis = (int)(a < 0 ? a + rank : a);
    return PTQ_OK;
}

/* ---- HDF5 ---- */

/* Strings of attribute name of loc, or of its chunks name0, name1, ...
 * (Keras splits long lists so); an attribute with no elements is an empty
 * list whatever its type (Keras 3 writes empty float arrays). *n_out = -1
 * when there is no such attribute. */
static ptq_status read_attr_strings(kimp *K, hid_t loc, const char *name, const char *what, char ***out, int *n_out)
{
    ptq_status st = PTQ_OK;
    char **all = NULL;
    int n_all = 0;
    *out = NULL;
    *n_out = -1;
    for (int chunk = -1; chunk < 1 << 16; chunk++) {
        char key[256];
        snprintf(key, sizeof key, chunk < 0 ? "%s" : "%s%d", name, chunk);
        if (H5Aexists(loc, key) <= 0) {
            if (chunk < 0)
                continue;
            break;
        }
        hid_t a = H5Aopen(loc, key, H5P_DEFAULT);
        hid_t space = a >= 0 ? H5Aget_space(a) : -1;
        hssize_t n_points = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
        if (space >= 0)
            H5Sclose(space);
        char **strs = NULL;
        int n = 0;
        if (a < 0 || n_points < 0)
            st = ptq_fail(K->ctx, PTQ_ERR_FORMAT, "%s: cannot read %s", K->path, what);
        else if (n_points > 0)
            st = ds_h5_read_strings(K->ctx, a, 1, what, &strs, &n);
        if (a >= 0)
            H5Aclose(a);
        if (st == PTQ_OK && n > 0) {
            char **grown = realloc(all, ((size_t)n_all + (size_t)n + 1) * sizeof *grown);
            if (!grown) {
                st = oom(K);
            } else {
                all = grown;
                memcpy(all + n_all, strs, (size_t)n * sizeof *strs);
                n_all += n;
                free(strs);
                strs = NULL;
                n = 0;
            }
        }
        ds_strings_free(strs, n);
        if (st != PTQ_OK)
            break;
        *n_out = n_all;
        if (chunk < 0)
            break; /* the plain attribute: no chunks */
    }
    if (st != PTQ_OK) {
        ds_strings_free(all, n_all);
        *n_out = -1;
        return st;
    }
    *out = all;
    return PTQ_OK;
}

/* The one string of a root attribute; NULL in *out when absent. */
static ptq_status read_root_string(kimp *K, const char *name, char **out)
{
    char **strs = NULL, what[96];
    int n = 0;
    *out = NULL;
    snprintf(what, sizeof what, "the root attribute '%s'", name);
    PTQ_TRY_RET(read_attr_strings(K, K->file, name, what, &strs, &n));
    if (n < 0)
        return PTQ_OK;
    if (n != 1) {
        ds_strings_free(strs, n);
        return ptq_fail(K->ctx, PTQ_ERR_FORMAT, "%s: %s holds %d strings, not one", K->path, what, n);
    }
    *out = strs[0];
    free(strs);
    return PTQ_OK;
}

/* The last path component of a Keras weight name without its ":0". */
static void weight_role(const char *name, char *role, size_t n_role)
{
    const char *slash = strrchr(name, '/');
    snprintf(role, n_role, "%s", slash ? slash + 1 : name);
    char *colon = strchr(role, ':');
    if (colon)
        *colon = '\0';
}

/* Weight `role` (or alias, may be NULL) of layer into *out (malloc'd float32,
 * numel of dims), checking it is a float dataset of exactly dims [ndim] —
 * or, with any_shape, of numel dims[0] in any shape. */
static ptq_status read_weight(kimp *K, const klayer *L, const char *role, const char *alias, int ndim,
                              const int64_t *dims, int any_shape, float **out)
{
    ptq_status st = PTQ_OK;
    char **names = NULL, esc[160], esc2[160], have[256] = "", r[128];
    int n_names = -1;
    hid_t grp = -1, d = -1, type = -1, space = -1;
    float *data = NULL;
    *out = NULL;
    int64_t numel = 1;
    const char *lname = ptq_escape(L->name, esc, sizeof esc);
    for (int i = 0; i < (any_shape ? 1 : ndim); i++) { /* each dim fits; their product (a kernel's four) may not */
        if (dims[i] < 0 || (dims[i] > 0 && numel > INT64_MAX / dims[i]))
            return ptq_fail(K->ctx, PTQ_ERR_FORMAT, "%s: layer '%s' (%s): weight '%s' of the config's shape would "
                            "hold more than 2^63 values", K->path, lname, L->cls, role);
        numel *= dims[i];
    }
    if (K->weights < 0 || H5Lexists(K->weights, L->name, H5P_DEFAULT) <= 0 ||
        (grp = H5Gopen2(K->weights, L->name, H5P_DEFAULT)) < 0) {
        st = ptq_fail(K->ctx, PTQ_ERR_FORMAT, "%s: layer '%s' (%s) needs weight '%s' but model_weights has no group '%s'",
                      K->path, lname, L->cls, role, lname);
        goto done;
    }
    PTQ_TRY(st, read_attr_strings(K, grp, "weight_names", "a layer's weight_names attribute", &names, &n_names), done);
    int found = -1;
    for (int i = 0; i < n_names; i++) {
        weight_role(names[i], r, sizeof r);
        if (strcmp(r, role) == 0 || (alias && strcmp(r, alias) == 0))
            found = i;
        if (strlen(have) + strlen(r) + 3 < sizeof have)
            snprintf(have + strlen(have), sizeof have - strlen(have), "%s%s", have[0] ? ", " : "", r);
    }
    if (found < 0) {
        st = ptq_fail(K->ctx, PTQ_ERR_FORMAT, "%s: layer '%s' (%s): weight '%s' is missing from model_weights/%s (it has: %s)",
                      K->path, lname, L->cls, role, lname, have[0] ? have : "no weights");
        goto done;
    }
    if (H5Lexists(grp, names[found], H5P_DEFAULT) <= 0 || (d = H5Dopen2(grp, names[found], H5P_DEFAULT)) < 0) {
        st = ptq_fail(K->ctx, PTQ_ERR_FORMAT, "%s: layer '%s' (%s): weight_names lists '%s' but there is no such dataset",
                      K->path, lname, L->cls, ptq_escape(names[found], esc2, sizeof esc2));
        goto done;
    }
    type = H5Dget_type(d);
    space = H5Dget_space(d);
    int rank = space >= 0 ? H5Sget_simple_extent_ndims(space) : -1;
    hsize_t hd[H5S_MAX_RANK];
    if (type < 0 || H5Tget_class(type) != H5T_FLOAT || rank < 0 || rank > PTQ_MAX_DIMS ||
        H5Sget_simple_extent_dims(space, hd, NULL) < 0) {
        st = ptq_fail(K->ctx, PTQ_ERR_FORMAT, "%s: layer '%s' (%s): weight '%s' is not a float array of rank <= %d",
                      K->path, lname, L->cls, role, PTQ_MAX_DIMS);
        goto done;
    }
    int64_t got[PTQ_MAX_DIMS], got_numel = 1;
    int same = any_shape || rank == ndim;
    for (int i = 0; i < rank; i++) {
        got[i] = hd[i] > (hsize_t)MAX_DIM ? MAX_DIM : (int64_t)hd[i];
        got_numel = got_numel > MAX_DIM ? got_numel : got_numel * got[i];
        if (!any_shape && i < ndim && got[i] != dims[i])
            same = 0;
    }
    if (!same || (any_shape && got_numel != numel)) {
        char g[96], w[96];
        st = ptq_fail(K->ctx, PTQ_ERR_FORMAT,
                      "%s: layer '%s' (%s): weight '%s' has shape %s but the layer's config and input give %s", K->path,
                      lname, L->cls, role, ptq_dims_str(got, rank, g, sizeof g),
                      any_shape ? ptq_dims_str(dims, 1, w, sizeof w) : ptq_dims_str(dims, ndim, w, sizeof w));
        goto done;
    }
    /* the data must come from the file: a declared size past any compression of it is hostile */
    if ((double)numel * (double)H5Tget_size(type) > K->file_bytes * DS_H5_MAX_COMPRESSION) {
        st = ptq_fail(K->ctx, PTQ_ERR_FORMAT, "%s: layer '%s': weight '%s' declares %lld values in a file of %.0f bytes",
                      K->path, lname, role, (long long)numel, K->file_bytes);
        goto done;
    }
    PTQ_TRY(st, ptq_memory_check(K->ctx, (uint64_t)numel * sizeof(float), "a Keras weight"), done);
    data = malloc((size_t)(numel ? numel : 1) * sizeof *data);
    if (!data) {
        st = oom(K);
        goto done;
    }
    if (numel && H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) {
        char why[256];
        st = ptq_fail(K->ctx, PTQ_ERR_FORMAT, "%s: layer '%s': cannot read weight '%s': %s", K->path, lname, role,
                      ds_h5_error(why, sizeof why));
        goto done;
    }
    *out = data;
    data = NULL;
done:
    free(data);
    ds_strings_free(names, n_names);
    if (space >= 0)
        H5Sclose(space);
    if (type >= 0)
        H5Tclose(type);
    if (d >= 0)
        H5Dclose(d);
    if (grp >= 0)
        H5Gclose(grp);
    return st;
}

/* ---- emitting ---- */

static void add_floats(kimp *K, const char *name, int ndim, const int64_t *dims, const float *data)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= dims[i];
    ptq_ob_initializer(&K->ob, name, ONNX_FLOAT, ndim, dims, data, (size_t)n * sizeof(float));
}

static const char *add_scalar(kimp *K, const char *name, float v)
{
    if (name)
        ptq_ob_initializer(&K->ob, name, ONNX_FLOAT, 0, NULL, &v, sizeof v);
    return name;
}

static void node(kimp *K, const char *op, const char *name, int n_in, const char *const *in, const char *out,
                 int n_attrs, const ptq_ob_attr *attrs)
{
    ptq_ob_node(&K->ob, op, name, n_in, in, 1, &out, n_attrs, attrs);
}

/* Transposes a rank-4 value between NHWC and NCHW; to_nchw picks the direction. */
static ptq_status relayout(kimp *K, const char *name, const kval *x, int to_nchw, kval *y)
{
    static const int64_t to_first[4] = {0, 3, 1, 2}, to_last[4] = {0, 2, 3, 1};
    ptq_ob_attr perm = {"perm", PTQ_ATTR_INTS, 0, 0, NULL, 4, to_nchw ? to_first : to_last};
    if (!name)
        return oom(K);
    node(K, "Transpose", name, 1, &x->name, name, 1, &perm);
    *y = *x;
    y->name = name;
    y->nchw = to_nchw;
    return PTQ_OK;
}

/* x in Keras's layout (NHWC for rank 4): x itself, or its transpose "<out>/nhwc". */
static ptq_status keras_layout(kimp *K, const klayer *L, const kval *x, kval *y)
{
    if (!x->nchw) {
        *y = *x;
        return PTQ_OK;
    }
    return relayout(K, sub_name(K, L, "nhwc"), x, 0, y);
}

/* The stored axis of Keras axis a of v. */
static int stored_axis(const kval *v, int a)
{
    static const int nchw_of[4] = {0, 2, 3, 1};
    return v->nchw ? nchw_of[a] : a;
}

/* Output size and begin/end padding of one spatial axis, as TensorFlow. */
static ptq_status window(kimp *K, const klayer *L, int same, int64_t in, int64_t k, int64_t s, int64_t d, int64_t *out,
                         int64_t *begin, int64_t *end)
{
    if (in < 0)
        return unsupported(K, L, "an input of unknown height or width");
    int64_t span = (k - 1) * d + 1;
    if (same) {
        *out = (in + s - 1) / s;
        int64_t total = (*out - 1) * s + span - in;
        total = total > 0 ? total : 0;
        *begin = total / 2;
        *end = total - *begin;
    } else {
        if (in < span)
            return bad_cfg(K, L, "a window of %lld does not fit an input of %lld", (long long)span, (long long)in);
        *out = (in - span) / s + 1;
        *begin = *end = 0;
    }
    return PTQ_OK;
}

/* An activation by Keras name applied to x (any layout), its result named out. */
static ptq_status activation(kimp *K, const klayer *L, const char *act, const kval *x, const char *out, kval *y)
{
    const char *in1[1] = {x->name};
    *y = *x;
    y->name = out;
    if (!out)
        return oom(K);
    if (!strcmp(act, "linear")) {
        node(K, "Identity", out, 1, in1, out, 0, NULL);
    } else if (!strcmp(act, "relu")) {
        node(K, "Relu", out, 1, in1, out, 0, NULL);
    } else if (!strcmp(act, "relu6")) {
        const char *in[3] = {x->name, add_scalar(K, kstr(K, "%s/min", out), 0.0f),
                             add_scalar(K, kstr(K, "%s/max", out), 6.0f)};
        if (!in[1] || !in[2])
            return oom(K);
        node(K, "Clip", out, 3, in, out, 0, NULL);
    } else if (!strcmp(act, "sigmoid")) {
        node(K, "Sigmoid", out, 1, in1, out, 0, NULL);
    } else if (!strcmp(act, "tanh")) {
        node(K, "Tanh", out, 1, in1, out, 0, NULL);
    } else if (!strcmp(act, "swish") || !strcmp(act, "silu")) {
        const char *sig = kstr(K, "%s/sigmoid", out);
        if (!sig)
            return oom(K);
        node(K, "Sigmoid", sig, 1, in1, sig, 0, NULL);
        const char *in[2] = {x->name, sig};
        node(K, "Mul", out, 2, in, out, 0, NULL);
    } else if (!strcmp(act, "gelu")) {
        /* Keras's exact gelu: x * 0.5 * (1 + erf(x / sqrt(2))) */
        const char *scaled = kstr(K, "%s/scaled", out), *erf = kstr(K, "%s/erf", out),
                   *plus = kstr(K, "%s/plus1", out), *prod = kstr(K, "%s/times_x", out);
        const char *c = add_scalar(K, kstr(K, "%s/rsqrt2", out), 0.70710678118654752f);
        const char *one = add_scalar(K, kstr(K, "%s/one", out), 1.0f);
        const char *half = add_scalar(K, kstr(K, "%s/half", out), 0.5f);
        if (!scaled || !erf || !plus || !prod || !c || !one || !half)
            return oom(K);
        const char *a[2] = {x->name, c}, *b[2] = {erf, one}, *m[2] = {x->name, plus}, *h[2] = {prod, half};
        node(K, "Mul", scaled, 2, a, scaled, 0, NULL);
        node(K, "Erf", erf, 1, &scaled, erf, 0, NULL);
        node(K, "Add", plus, 2, b, plus, 0, NULL);
        node(K, "Mul", prod, 2, m, prod, 0, NULL);
        node(K, "Mul", out, 2, h, out, 0, NULL);
    } else if (!strcmp(act, "softmax")) {
        /* over Keras's last axis, the channels: axis 1 when stored NCHW */
        ptq_ob_attr axis = {"axis", PTQ_ATTR_INT, x->nchw ? 1 : x->rank - 1, 0, NULL, 0, NULL};
        node(K, "Softmax", out, 1, in1, out, 1, &axis);
    } else {
        return unsupported(K, L, "activation '%.40s' (ptq knows linear, relu, relu6, sigmoid, tanh, swish, gelu, softmax)",
                           act);
    }
    return PTQ_OK;
}

/* The layer's "activation" (a name, or Keras 3's serialized function). */
static ptq_status cfg_activation(kimp *K, const klayer *L, const char **act)
{
    const cJSON *j = jget(L->cfg, "activation");
    if (is_null(j)) {
        *act = "linear";
        return PTQ_OK;
    }
    if (cJSON_IsObject(j) && cJSON_IsString(jget(j, "config")))
        j = jget(j, "config");
    if (!cJSON_IsString(j))
        return unsupported(K, L, "a custom activation");
    *act = j->valuestring;
    return PTQ_OK;
}

/* The layer's main op result named so that a non-linear activation after it
 * gives the layer's name: "<out>/<op>" then, else "<out>". */
static const char *pre_activation_name(kimp *K, const klayer *L, const char *act, const char *op)
{
    return strcmp(act, "linear") ? sub_name(K, L, op) : L->out;
}

/* y = act(z) where z is named `z_name` (already emitted with x's shape set in *z). */
static ptq_status finish_activation(kimp *K, const klayer *L, const char *act, const kval *z, kval *y)
{
    if (!strcmp(act, "linear")) {
        *y = *z;
        return PTQ_OK;
    }
    return activation(K, L, act, z, L->out, y);
}

/* ---- layers ---- */

typedef ptq_status (*layer_fn)(kimp *K, const klayer *L, const kval *const *in, int n_in, kval *y);

static ptq_status need_rank(kimp *K, const klayer *L, const kval *x, int rank)
{
    char s[96];
    if (x->rank != rank)
        return unsupported(K, L, "an input of shape %s (it takes rank %d)", shape_str(x, s, sizeof s), rank);
    return PTQ_OK;
}

static ptq_status channels_of(kimp *K, const klayer *L, const kval *x, int64_t *c)
{
    *c = x->shape[x->rank - 1];
    if (*c <= 0)
        return unsupported(K, L, "an input with an unknown channel count");
    return PTQ_OK;
}

/* Conv geometry shared by Conv2D, DepthwiseConv2D and SeparableConv2D. */
typedef struct conv_geo {
    int64_t k[2], s[2], d[2], pads[4], out[2];
} conv_geo;

static ptq_status conv_geometry(kimp *K, const klayer *L, const kval *x, conv_geo *g)
{
    int same = 0;
    PTQ_TRY_RET(cfg_channels_last(K, L));
    PTQ_TRY_RET(cfg_ints(K, L, "kernel_size", 2, -1, 1, 1 << 16, g->k));
    PTQ_TRY_RET(cfg_ints(K, L, "strides", 2, 1, 1, 1 << 16, g->s));
    PTQ_TRY_RET(cfg_ints(K, L, "dilation_rate", 2, 1, 1, 1 << 16, g->d));
    PTQ_TRY_RET(cfg_padding(K, L, &same));
    for (int a = 0; a < 2; a++)
        PTQ_TRY_RET(window(K, L, same, x->shape[1 + a], g->k[a], g->s[a], g->d[a], &g->out[a], &g->pads[a],
                           &g->pads[2 + a]));
    return PTQ_OK;
}

/* Conv (NCHW) of x by w_name [C_out, C_in/group, kh, kw] (+ b_name) into out. */
static void emit_conv(kimp *K, const char *out, const kval *x, const char *w_name, const char *b_name, int64_t group,
                      const conv_geo *g)
{
    const char *in[3] = {x->name, w_name, b_name};
    ptq_ob_attr a[5] = {{"kernel_shape", PTQ_ATTR_INTS, 0, 0, NULL, 2, g->k},
                        {"strides", PTQ_ATTR_INTS, 0, 0, NULL, 2, g->s},
                        {"dilations", PTQ_ATTR_INTS, 0, 0, NULL, 2, g->d},
                        {"pads", PTQ_ATTR_INTS, 0, 0, NULL, 4, g->pads},
                        {"group", PTQ_ATTR_INT, group, 0, NULL, 0, NULL}};
    node(K, "Conv", out, b_name ? 3 : 2, in, out, 5, a);
}

/* HWIO [kh, kw, ci, co] -> OIHW [co, ci, kh, kw]. */
static void hwio_to_oihw(const float *src, int64_t kh, int64_t kw, int64_t ci, int64_t co, float *dst)
{
    for (int64_t o = 0; o < co; o++)
        for (int64_t i = 0; i < ci; i++)
            for (int64_t y = 0; y < kh; y++)
                for (int64_t x = 0; x < kw; x++)
                    dst[((o * ci + i) * kh + y) * kw + x] = src[((y * kw + x) * ci + i) * co + o];
}

/* Keras 3's LoRA (a config's lora_rank r > 0): the layer computes with kernel + lora_alpha / r * lora_kernel_a @
 * lora_kernel_b, a [the kernel's dims but the last, r], b [r, the last]; w [ndim dims] gets that sum. */
static ptq_status merge_lora(kimp *K, const klayer *L, int ndim, const int64_t *dims, float *w)
{
    int64_t r = 0, ad[PTQ_MAX_DIMS], bd[2], n_in = 1;
    double alpha = 0.0;
    float *a = NULL, *b = NULL;
    ptq_status st = PTQ_OK;
    PTQ_TRY_RET(cfg_int(K, L, "lora_rank", 0, 0, 1 << 16, &r));
    if (r == 0)
        return PTQ_OK;
    PTQ_TRY_RET(cfg_num(K, L, "lora_alpha", (double)r, &alpha));
    for (int i = 0; i < ndim - 1; i++)
        n_in *= ad[i] = dims[i]; /* w was read with these dims */
    ad[ndim - 1] = bd[0] = r;
    bd[1] = dims[ndim - 1];
    PTQ_TRY(st, read_weight(K, L, "lora_kernel_a", NULL, ndim, ad, 0, &a), done);
    PTQ_TRY(st, read_weight(K, L, "lora_kernel_b", NULL, 2, bd, 0, &b), done);
    for (int64_t i = 0; i < n_in; i++)
        for (int64_t o = 0; o < bd[1]; o++) {
            double sum = 0.0;
            for (int64_t k = 0; k < r; k++)
                sum += (double)a[i * r + k] * b[k * bd[1] + o];
            w[i * bd[1] + o] += (float)(alpha / (double)r * sum);
        }
done:
    free(a);
    free(b);
    return st;
}

/* Reads a [kh, kw, a, b] kernel, adds it as OIHW: depthwise (a = C, b = multiplier:
 * [C*m, 1, kh, kw], channel c*m+j) or plain HWIO (a = C_in/group, b = C_out). */
static ptq_status add_kernel(kimp *K, const klayer *L, const char *role, const char *alias, const int64_t hw[2],
                             int64_t a, int64_t b, int depthwise, const char **name)
{
    float *w = NULL, *t = NULL;
    int64_t dims[4] = {hw[0], hw[1], a, b};
    *name = sub_name(K, L, role);
    if (!*name)
        return oom(K);
    PTQ_TRY_RET(read_weight(K, L, role, alias, 4, dims, 0, &w));
    ptq_status st = depthwise ? PTQ_OK : merge_lora(K, L, 4, dims, w);
    if (st != PTQ_OK) {
        free(w);
        return st;
    }
    t = malloc((size_t)(hw[0] * hw[1] * a * b) * sizeof *t + 1);
    if (!t) {
        free(w);
        return oom(K);
    }
    if (depthwise) { /* a depthwise kernel is HWIO with I = 1 and O = C*m in TensorFlow's channel order */
        hwio_to_oihw(w, hw[0], hw[1], 1, a * b, t);
        int64_t od[4] = {a * b, 1, hw[0], hw[1]};
        add_floats(K, *name, 4, od, t);
    } else {
        hwio_to_oihw(w, hw[0], hw[1], a, b, t);
        int64_t od[4] = {b, a, hw[0], hw[1]};
        add_floats(K, *name, 4, od, t);
    }
    free(w);
    free(t);
    return PTQ_OK;
}

/* A [n] vector weight added as "<out>/<role>"; NULL name when use is 0. */
static ptq_status add_vector(kimp *K, const klayer *L, const char *role, int64_t n, int use, const char **name)
{
    float *v = NULL;
    *name = NULL;
    if (!use)
        return PTQ_OK;
    if (!(*name = sub_name(K, L, role)))
        return oom(K);
    PTQ_TRY_RET(read_weight(K, L, role, NULL, 1, &n, 0, &v));
    add_floats(K, *name, 1, &n, v);
    free(v);
    return PTQ_OK;
}

static int64_t checked_dim(int64_t a, int64_t b)
{
    return a > 0 && b > 0 && a <= MAX_DIM / b ? a * b : -1;
}

static ptq_status conv_output(kimp *K, const klayer *L, const kval *x, const conv_geo *g, int64_t c_out,
                              const char *act, const char *pre, kval *y)
{
    kval z = *x;
    z.name = pre;
    z.shape[1] = g->out[0];
    z.shape[2] = g->out[1];
    z.shape[3] = c_out;
    return finish_activation(K, L, act, &z, y);
}

static ptq_status layer_conv2d(kimp *K, const klayer *L, const kval *const *in, int n_in, kval *y)
{
    const kval *x = in[0];
    conv_geo g;
    int64_t filters = 0, groups = 1, c = 0;
    int use_bias = 1;
    const char *act, *w, *b;
    PTQ_TRY_RET(need_rank(K, L, x, 4));
    PTQ_TRY_RET(channels_of(K, L, x, &c));
    PTQ_TRY_RET(conv_geometry(K, L, x, &g));
    PTQ_TRY_RET(cfg_int(K, L, "filters", -1, 1, 1 << 20, &filters));
    PTQ_TRY_RET(cfg_int(K, L, "groups", 1, 1, 1 << 20, &groups));
    PTQ_TRY_RET(cfg_bool(K, L, "use_bias", 1, &use_bias));
    PTQ_TRY_RET(cfg_activation(K, L, &act));
    if (c % groups || filters % groups)
        return bad_cfg(K, L, "groups %lld does not divide %lld input and %lld output channels", (long long)groups,
                       (long long)c, (long long)filters);
    PTQ_TRY_RET(add_kernel(K, L, "kernel", NULL, g.k, c / groups, filters, 0, &w));
    PTQ_TRY_RET(add_vector(K, L, "bias", filters, use_bias, &b));
    const char *pre = pre_activation_name(K, L, act, "Conv");
    if (!pre)
        return oom(K);
    emit_conv(K, pre, x, w, b, groups, &g);
    return conv_output(K, L, x, &g, filters, act, pre, y);
}

static ptq_status layer_depthwise(kimp *K, const klayer *L, const kval *const *in, int n_in, kval *y)
{
    const kval *x = in[0];
    conv_geo g;
    int64_t mult = 1, c = 0;
    int use_bias = 1;
    const char *act, *w, *b;
    PTQ_TRY_RET(need_rank(K, L, x, 4));
    PTQ_TRY_RET(channels_of(K, L, x, &c));
    PTQ_TRY_RET(conv_geometry(K, L, x, &g));
    PTQ_TRY_RET(cfg_int(K, L, "depth_multiplier", 1, 1, 1 << 16, &mult));
    PTQ_TRY_RET(cfg_bool(K, L, "use_bias", 1, &use_bias));
    PTQ_TRY_RET(cfg_activation(K, L, &act));
    if (checked_dim(c, mult) < 0)
        return bad_cfg(K, L, "depth_multiplier %lld is too large", (long long)mult);
    /* Keras 3 names the weight "kernel", tf.keras 2 "depthwise_kernel" */
    PTQ_TRY_RET(add_kernel(K, L, "kernel", "depthwise_kernel", g.k, c, mult, 1, &w));
    PTQ_TRY_RET(add_vector(K, L, "bias", c * mult, use_bias, &b));
    const char *pre = pre_activation_name(K, L, act, "Conv");
    if (!pre)
        return oom(K);
    emit_conv(K, pre, x, w, b, c, &g);
    return conv_output(K, L, x, &g, c * mult, act, pre, y);
}

static ptq_status layer_separable(kimp *K, const klayer *L, const kval *const *in, int n_in, kval *y)
{
    const kval *x = in[0];
    conv_geo g, pw;
    int64_t mult = 1, c = 0, filters = 0, one[2] = {1, 1};
    int use_bias = 1;
    const char *act, *wd, *wp, *b;
    PTQ_TRY_RET(need_rank(K, L, x, 4));
    PTQ_TRY_RET(channels_of(K, L, x, &c));
    PTQ_TRY_RET(conv_geometry(K, L, x, &g));
    PTQ_TRY_RET(cfg_int(K, L, "depth_multiplier", 1, 1, 1 << 16, &mult));
    PTQ_TRY_RET(cfg_int(K, L, "filters", -1, 1, 1 << 20, &filters));
    PTQ_TRY_RET(cfg_bool(K, L, "use_bias", 1, &use_bias));
    PTQ_TRY_RET(cfg_activation(K, L, &act));
    if (checked_dim(c, mult) < 0)
        return bad_cfg(K, L, "depth_multiplier %lld is too large", (long long)mult);
    PTQ_TRY_RET(add_kernel(K, L, "depthwise_kernel", NULL, g.k, c, mult, 1, &wd));
    PTQ_TRY_RET(add_kernel(K, L, "pointwise_kernel", NULL, one, c * mult, filters, 0, &wp));
    PTQ_TRY_RET(add_vector(K, L, "bias", filters, use_bias, &b));
    const char *dw = sub_name(K, L, "depthwise"), *pre = pre_activation_name(K, L, act, "Conv");
    if (!dw || !pre)
        return oom(K);
    emit_conv(K, dw, x, wd, NULL, c, &g);
    kval mid = *x;
    mid.name = dw;
    memset(&pw, 0, sizeof pw);
    pw.k[0] = pw.k[1] = pw.s[0] = pw.s[1] = pw.d[0] = pw.d[1] = 1;
    pw.out[0] = g.out[0];
    pw.out[1] = g.out[1];
    emit_conv(K, pre, &mid, wp, b, 1, &pw);
    return conv_output(K, L, x, &g, filters, act, pre, y);
}

static ptq_status layer_dense(kimp *K, const klayer *L, const kval *const *in, int n_in, kval *y)
{
    kval x;
    int64_t units = 0, c = 0;
    int use_bias = 1;
    const char *act, *w, *b;
    float *kern = NULL;
    PTQ_TRY_RET(keras_layout(K, L, in[0], &x));
    PTQ_TRY_RET(channels_of(K, L, &x, &c));
    PTQ_TRY_RET(cfg_int(K, L, "units", -1, 1, 1 << 24, &units));
    PTQ_TRY_RET(cfg_bool(K, L, "use_bias", 1, &use_bias));
    PTQ_TRY_RET(cfg_activation(K, L, &act));
    if (checked_dim(c, units) < 0)
        return bad_cfg(K, L, "%lld x %lld weights are too many", (long long)c, (long long)units);
    int64_t kd[2] = {c, units};
    if (!(w = sub_name(K, L, "kernel")))
        return oom(K);
    PTQ_TRY_RET(read_weight(K, L, "kernel", NULL, 2, kd, 0, &kern));
    ptq_status st = merge_lora(K, L, 2, kd, kern);
    if (st != PTQ_OK) {
        free(kern);
        return st;
    }
    add_floats(K, w, 2, kd, kern);
    free(kern);
    PTQ_TRY_RET(add_vector(K, L, "bias", units, use_bias, &b));
    kval z = x;
    z.shape[z.rank - 1] = units;
    if (x.rank == 2) {
        z.name = pre_activation_name(K, L, act, "Gemm");
        const char *gin[3] = {x.name, w, b};
        if (!z.name)
            return oom(K);
        node(K, "Gemm", z.name, b ? 3 : 2, gin, z.name, 0, NULL);
    } else { /* on the last axis of a higher-rank tensor; an image result then runs NCHW as every image does */
        int image = x.rank == 4;
        const char *mm = b || image ? sub_name(K, L, "MatMul") : pre_activation_name(K, L, act, "MatMul");
        const char *min[2] = {x.name, w};
        if (!mm)
            return oom(K);
        node(K, "MatMul", mm, 2, min, mm, 0, NULL);
        z.name = mm;
        if (b) {
            const char *ain[2] = {mm, b};
            if (!(z.name = image ? sub_name(K, L, "Add") : pre_activation_name(K, L, act, "Add")))
                return oom(K);
            node(K, "Add", z.name, 2, ain, z.name, 0, NULL);
        }
        if (image)
            PTQ_TRY_RET(relayout(K, pre_activation_name(K, L, act, "nchw"), &z, 1, &z));
    }
    return finish_activation(K, L, act, &z, y);
}

/* A per-channel constant [C] (or a scalar when n is 1) shaped to broadcast over x. */
static void add_channel_const(kimp *K, const char *name, const kval *x, int64_t n, const float *v)
{
    int64_t dims[3] = {n, 1, 1};
    add_floats(K, name, n == 1 ? 0 : (x->nchw ? 3 : 1), dims, v);
}

/* Scale and offset of Rescaling, or mean and variance of Normalization
 * given in the config: a number or a list of C (or 1) numbers. */
static ptq_status cfg_channel_values(kimp *K, const klayer *L, const char *key, double dflt, int64_t c, float *v,
                                     int64_t *n)
{
    const cJSON *j = jget(L->cfg, key);
    *n = 1;
    if (is_null(j)) {
        v[0] = (float)dflt;
        return PTQ_OK;
    }
    if (cJSON_IsNumber(j) && isfinite(j->valuedouble)) {
        v[0] = (float)j->valuedouble;
        return PTQ_OK;
    }
    while (cJSON_IsArray(j) && cJSON_GetArraySize(j) == 1 && cJSON_IsArray(cJSON_GetArrayItem(j, 0)))
        j = cJSON_GetArrayItem(j, 0);
    int m = cJSON_IsArray(j) ? cJSON_GetArraySize(j) : -1;
    if (m != 1 && m != c)
        return bad_cfg(K, L, "'%s' must be a number or a list of 1 or %lld numbers", key, (long long)c);
    for (int i = 0; i < m; i++) {
        const cJSON *e = cJSON_GetArrayItem(j, i);
        if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble))
            return bad_cfg(K, L, "'%s'[%d] must be a finite number", key, i);
        v[i] = (float)e->valuedouble;
    }
    *n = m;
    return PTQ_OK;
}

static ptq_status layer_rescaling(kimp *K, const klayer *L, const kval *const *in, int n_in, kval *y)
{
    const kval *x = in[0];
    int64_t c = x->shape[x->rank - 1] > 0 ? x->shape[x->rank - 1] : 1, n_scale, n_offset;
    float *scale = calloc((size_t)c, sizeof *scale), *offset = calloc((size_t)c, sizeof *offset);
    ptq_status st = PTQ_OK;
    if (!scale || !offset) {
        st = oom(K);
        goto done;
    }
    PTQ_TRY(st, cfg_channel_values(K, L, "scale", 1.0, c, scale, &n_scale), done);
    PTQ_TRY(st, cfg_channel_values(K, L, "offset", 0.0, c, offset, &n_offset), done);
    int has_offset = 0;
    for (int64_t i = 0; i < n_offset; i++)
        has_offset |= offset[i] != 0.0f;
    const char *sname = sub_name(K, L, "scale"), *oname = sub_name(K, L, "offset");
    const char *mul = has_offset ? sub_name(K, L, "Mul") : L->out;
    if (!sname || !oname || !mul) {
        st = oom(K);
        goto done;
    }
    add_channel_const(K, sname, x, n_scale, scale);
    const char *mi[2] = {x->name, sname};
    node(K, "Mul", mul, 2, mi, mul, 0, NULL);
    if (has_offset) {
        add_channel_const(K, oname, x, n_offset, offset);
        const char *ai[2] = {mul, oname};
        node(K, "Add", L->out, 2, ai, L->out, 0, NULL);
    }
    *y = *x;
    y->name = L->out;
done:
    free(scale);
    free(offset);
    return st;
}

static ptq_status layer_normalization(kimp *K, const klayer *L, const kval *const *in, int n_in, kval *y)
{
    const kval *x = in[0];
    int axis = 0, invert = 0;
    int64_t c = 0, n_mean = 1, n_var = 1;
    ptq_status st = PTQ_OK;
    float *mean = NULL, *var = NULL;
    PTQ_TRY_RET(channels_of(K, L, x, &c));
    PTQ_TRY_RET(cfg_axis(K, L, "axis", -1, x->rank, &axis));
    PTQ_TRY_RET(cfg_bool(K, L, "invert", 0, &invert));
    if (axis != x->rank - 1)
        return unsupported(K, L, "normalizing over axis %d (ptq takes the last axis)", axis);
    if (invert)
        return unsupported(K, L, "invert=True");
    if (!is_null(jget(L->cfg, "mean"))) { /* given to the constructor, not adapted */
        if (!(mean = calloc((size_t)c, sizeof *mean)) || !(var = calloc((size_t)c, sizeof *var))) {
            st = oom(K);
            goto done;
        }
        PTQ_TRY(st, cfg_channel_values(K, L, "mean", 0.0, c, mean, &n_mean), done);
        PTQ_TRY(st, cfg_channel_values(K, L, "variance", 1.0, c, var, &n_var), done);
    } else {
        PTQ_TRY(st, read_weight(K, L, "mean", NULL, 1, &c, 1, &mean), done);
        PTQ_TRY(st, read_weight(K, L, "variance", NULL, 1, &c, 1, &var), done);
        n_mean = n_var = c;
    }
    for (int64_t i = 0; i < n_var; i++) { /* Keras divides by max(sqrt(variance), epsilon 1e-7) */
        float s = sqrtf(var[i]);
        var[i] = s > 1e-7f ? s : 1e-7f;
    }
    const char *mname = sub_name(K, L, "mean"), *sname = sub_name(K, L, "std"), *centred = sub_name(K, L, "Sub");
    if (!mname || !sname || !centred) {
        st = oom(K);
        goto done;
    }
    add_channel_const(K, mname, x, n_mean, mean);
    add_channel_const(K, sname, x, n_var, var);
    const char *si[2] = {x->name, mname}, *di[2] = {centred, sname};
    node(K, "Sub", centred, 2, si, centred, 0, NULL);
    node(K, "Div", L->out, 2, di, L->out, 0, NULL);
    *y = *x;
    y->name = L->out;
done:
    free(mean);
    free(var);
    return st;
}

static ptq_status layer_batchnorm(kimp *K, const klayer *L, const kval *const *in, int n_in, kval *y)
{
    const kval *x = in[0];
    int axis = 0, center = 1, scale = 1;
    int64_t c = 0;
    double eps = 0.0;
    const char *names[4];
    static const char *const roles[4] = {"gamma", "beta", "moving_mean", "moving_variance"};
    PTQ_TRY_RET(channels_of(K, L, x, &c));
    PTQ_TRY_RET(cfg_axis(K, L, "axis", -1, x->rank, &axis));
    PTQ_TRY_RET(cfg_bool(K, L, "center", 1, &center));
    PTQ_TRY_RET(cfg_bool(K, L, "scale", 1, &scale));
    PTQ_TRY_RET(cfg_num(K, L, "epsilon", 1e-3, &eps));
    if (axis != x->rank - 1 || stored_axis(x, axis) != 1) /* ONNX normalizes axis 1 */
        return unsupported(K, L, "normalizing axis %d of a rank-%d tensor (ptq takes the channels)", axis, x->rank);
    if (eps < 0)
        return bad_cfg(K, L, "epsilon %g is negative", eps);
    const int use[4] = {scale, center, 1, 1};
    for (int i = 0; i < 4; i++) {
        if (use[i]) {
            PTQ_TRY_RET(add_vector(K, L, roles[i], c, 1, &names[i]));
            continue;
        }
        float *fill = malloc((size_t)c * sizeof *fill);
        if (!fill || !(names[i] = sub_name(K, L, roles[i]))) {
            free(fill);
            return oom(K);
        }
        for (int64_t k = 0; k < c; k++)
            fill[k] = i == 0 ? 1.0f : 0.0f; /* no gamma: 1; no beta: 0 */
        add_floats(K, names[i], 1, &c, fill);
        free(fill);
    }
    const char *bi[5] = {x->name, names[0], names[1], names[2], names[3]};
    ptq_ob_attr a = {"epsilon", PTQ_ATTR_FLOAT, 0, (float)eps, NULL, 0, NULL};
    node(K, "BatchNormalization", L->out, 5, bi, L->out, 1, &a);
    *y = *x;
    y->name = L->out;
    return PTQ_OK;
}

static ptq_status layer_activation(kimp *K, const klayer *L, const kval *const *in, int n_in, kval *y)
{
    const char *act;
    PTQ_TRY_RET(cfg_activation(K, L, &act));
    return activation(K, L, act, in[0], L->out, y);
}

static ptq_status layer_relu(kimp *K, const klayer *L, const kval *const *in, int n_in, kval *y)
{
    const kval *x = in[0];
    double max_value = -1.0, slope = 0.0, threshold = 0.0;
    PTQ_TRY_RET(cfg_num(K, L, "max_value", -1.0, &max_value));
    PTQ_TRY_RET(cfg_num(K, L, "negative_slope", 0.0, &slope));
    PTQ_TRY_RET(cfg_num(K, L, "threshold", 0.0, &threshold));
    if (threshold != 0.0)
        return unsupported(K, L, "threshold %g", threshold);
    if (slope != 0.0 && max_value >= 0.0)
        return unsupported(K, L, "negative_slope with max_value");
    *y = *x;
    y->name = L->out;
    if (slope != 0.0) {
        ptq_ob_attr a = {"alpha", PTQ_ATTR_FLOAT, 0, (float)slope, NULL, 0, NULL};
        node(K, "LeakyRelu", L->out, 1, &x->name, L->out, 1, &a);
    } else if (max_value >= 0.0) {
        const char *ci[3] = {x->name, add_scalar(K, sub_name(K, L, "min"), 0.0f),
                             add_scalar(K, sub_name(K, L, "max"), (float)max_value)};
        if (!ci[1] || !ci[2])
            return oom(K);
        node(K, "Clip", L->out, 3, ci, L->out, 0, NULL);
    } else {
        node(K, "Relu", L->out, 1, &x->name, L->out, 0, NULL);
    }
    return PTQ_OK;
}

static ptq_status layer_softmax(kimp *K, const klayer *L, const kval *const *in, int n_in, kval *y)
{
    int axis = 0;
    PTQ_TRY_RET(cfg_axis(K, L, "axis", -1, in[0]->rank, &axis));
    if (axis != in[0]->rank - 1)
        return unsupported(K, L, "softmax over axis %d (ptq takes the last axis)", axis);
    return activation(K, L, "softmax", in[0], L->out, y);
}

static ptq_status layer_pool(kimp *K, const klayer *L, const kval *const *in, int n_in, kval *y, int max)
{
    const kval *x = in[0];
    conv_geo g;
    int same = 0;
    memset(&g, 0, sizeof g);
    PTQ_TRY_RET(need_rank(K, L, x, 4));
    PTQ_TRY_RET(cfg_channels_last(K, L));
    PTQ_TRY_RET(cfg_ints(K, L, "pool_size", 2, 2, 1, 1 << 16, g.k));
    PTQ_TRY_RET(cfg_padding(K, L, &same));
    if (is_null(jget(L->cfg, "strides"))) { /* Keras's strides=None: the pool size */
        g.s[0] = g.k[0];
        g.s[1] = g.k[1];
    } else {
        PTQ_TRY_RET(cfg_ints(K, L, "strides", 2, 1, 1, 1 << 16, g.s));
    }
    for (int a = 0; a < 2; a++)
        PTQ_TRY_RET(window(K, L, same, x->shape[1 + a], g.k[a], g.s[a], 1, &g.out[a], &g.pads[a], &g.pads[2 + a]));
    /* AveragePool's count_include_pad 0 divides by the pixels inside, as TensorFlow */
    ptq_ob_attr a[3] = {{"kernel_shape", PTQ_ATTR_INTS, 0, 0, NULL, 2, g.k},
                        {"strides", PTQ_ATTR_INTS, 0, 0, NULL, 2, g.s},
                        {"pads", PTQ_ATTR_INTS, 0, 0, NULL, 4, g.pads}};
    node(K, max ? "MaxPool" : "AveragePool", L->out, 1, &x->name, L->out, 3, a);
    *y = *x;
    y->name = L->out;
    y->shape[1] = g.out[0];
    y->shape[2] = g.out[1];
    return PTQ_OK;
}

static ptq_status layer_maxpool(kimp *K, const klayer *L, const kval *const *in, int n_in, kval *y)
{
    return layer_pool(K, L, in, n_in, y, 1);
}

static ptq_status layer_avgpool(kimp *K, const klayer *L, const kval *const *in, int n_in, kval *y)
{
    return layer_pool(K, L, in, n_in, y, 0);
}

static ptq_status layer_global_pool(kimp *K, const klayer *L, const kval *const *in, int n_in, kval *y, int max)
{
    const kval *x = in[0];
    int keepdims = 0;
    PTQ_TRY_RET(need_rank(K, L, x, 4));
    PTQ_TRY_RET(cfg_channels_last(K, L));
    PTQ_TRY_RET(cfg_bool(K, L, "keepdims", 0, &keepdims));
    const char *pooled = keepdims ? L->out : sub_name(K, L, max ? "MaxPool" : "GlobalAveragePool");
    if (!pooled)
        return oom(K);
    if (max) { /* a max over the whole image: MaxPool with the image as its window */
        if (x->shape[1] <= 0 || x->shape[2] <= 0)
            return unsupported(K, L, "an input of unknown height or width");
        ptq_ob_attr a = {"kernel_shape", PTQ_ATTR_INTS, 0, 0, NULL, 2, &x->shape[1]};
        node(K, "MaxPool", pooled, 1, &x->name, pooled, 1, &a);
    } else {
        node(K, "GlobalAveragePool", pooled, 1, &x->name, pooled, 0, NULL);
    }
    *y = *x;
    y->name = L->out;
    y->shape[1] = y->shape[2] = 1;
    if (!keepdims) { /* [N, C, 1, 1] -> [N, C] */
        node(K, "Flatten", L->out, 1, &pooled, L->out, 0, NULL);
        y->rank = 2;
        y->nchw = 0;
        y->shape[1] = x->shape[3];
    }
    return PTQ_OK;
}

static ptq_status layer_gap(kimp *K, const klayer *L, const kval *const *in, int n_in, kval *y)
{
    return layer_global_pool(K, L, in, n_in, y, 0);
}

static ptq_status layer_gmp(kimp *K, const klayer *L, const kval *const *in, int n_in, kval *y)
{
    return layer_global_pool(K, L, in, n_in, y, 1);
}

/* Add, Multiply: same-shape inputs folded left to right. */
static ptq_status layer_merge(kimp *K, const klayer *L, const kval *const *in, int n_in, kval *y, const char *op)
{
    char a[96], b[96];
    if (n_in < 2)
        return bad_cfg(K, L, "a merge of %d inputs", n_in);
    for (int i = 1; i < n_in; i++)
        if (in[i]->rank != in[0]->rank || in[i]->nchw != in[0]->nchw ||
            memcmp(in[i]->shape, in[0]->shape, (size_t)in[0]->rank * sizeof in[0]->shape[0]) != 0)
            return unsupported(K, L, "merging shapes %s and %s (ptq merges equal shapes)",
                               shape_str(in[0], a, sizeof a), shape_str(in[i], b, sizeof b));
    const char *acc = in[0]->name;
    for (int i = 1; i < n_in; i++) {
        const char *out = i == n_in - 1 ? L->out : kstr(K, "%s/%s%d", L->out, op, i);
        const char *bi[2] = {acc, in[i]->name};
        if (!out)
            return oom(K);
        node(K, op, out, 2, bi, out, 0, NULL);
        acc = out;
    }
    *y = *in[0];
    y->name = L->out;
    return PTQ_OK;
}

static ptq_status layer_add(kimp *K, const klayer *L, const kval *const *in, int n_in, kval *y)
{
    return layer_merge(K, L, in, n_in, y, "Add");
}

static ptq_status layer_multiply(kimp *K, const klayer *L, const kval *const *in, int n_in, kval *y)
{
    return layer_merge(K, L, in, n_in, y, "Mul");
}

static ptq_status layer_concat(kimp *K, const klayer *L, const kval *const *in, int n_in, kval *y)
{
    int axis = 0;
    char a[96], b[96];
    if (n_in < 1)
        return bad_cfg(K, L, "no inputs");
    PTQ_TRY_RET(cfg_axis(K, L, "axis", -1, in[0]->rank, &axis));
    if (axis == 0)
        return unsupported(K, L, "concatenating along the batch axis");
    const char **names = calloc((size_t)n_in, sizeof *names);
    if (!names)
        return oom(K);
    *y = *in[0];
    y->name = L->out;
    y->shape[axis] = 0;
    for (int i = 0; i < n_in; i++) {
        int ok = in[i]->rank == in[0]->rank && in[i]->nchw == in[0]->nchw;
        for (int d = 0; ok && d < in[0]->rank; d++)
            ok = d == axis || in[i]->shape[d] == in[0]->shape[d];
        if (!ok) {
            free(names);
            return unsupported(K, L, "concatenating shapes %s and %s along axis %d", shape_str(in[0], a, sizeof a),
                               shape_str(in[i], b, sizeof b), axis);
        }
        y->shape[axis] = y->shape[axis] < 0 || in[i]->shape[axis] < 0 ? -1 : y->shape[axis] + in[i]->shape[axis];
        names[i] = in[i]->name;
    }
    ptq_ob_attr at = {"axis", PTQ_ATTR_INT, stored_axis(in[0], axis), 0, NULL, 0, NULL};
    node(K, "Concat", L->out, n_in, names, L->out, 1, &at);
    free(names);
    return PTQ_OK;
}

static ptq_status layer_zeropad(kimp *K, const klayer *L, const kval *const *in, int n_in, kval *y)
{
    const kval *x = in[0];
    int64_t p[4]; /* top, bottom, left, right */
    const cJSON *j = jget(L->cfg, "padding");
    PTQ_TRY_RET(need_rank(K, L, x, 4));
    PTQ_TRY_RET(cfg_channels_last(K, L));
    if (cJSON_IsArray(j) && cJSON_GetArraySize(j) == 2 && cJSON_IsArray(cJSON_GetArrayItem(j, 0))) {
        for (int a = 0; a < 2; a++) {
            const cJSON *pair = cJSON_GetArrayItem(j, a);
            if (!cJSON_IsArray(pair) || cJSON_GetArraySize(pair) != 2 ||
                !json_int(cJSON_GetArrayItem(pair, 0), 0, 1 << 16, &p[2 * a]) ||
                !json_int(cJSON_GetArrayItem(pair, 1), 0, 1 << 16, &p[2 * a + 1]))
                return bad_cfg(K, L, "'padding' must be ((top, bottom), (left, right)) of integers in [0, 65536]");
        }
    } else {
        int64_t s[2];
        PTQ_TRY_RET(cfg_ints(K, L, "padding", 2, 1, 0, 1 << 16, s));
        p[0] = p[1] = s[0];
        p[2] = p[3] = s[1];
    }
    int64_t pads[8] = {0, 0, p[0], p[2], 0, 0, p[1], p[3]}, eight = 8;
    const char *pname = sub_name(K, L, "pads");
    if (!pname)
        return oom(K);
    ptq_ob_initializer(&K->ob, pname, ONNX_INT64, 1, &eight, pads, sizeof pads);
    const char *pi[2] = {x->name, pname};
    node(K, "Pad", L->out, 2, pi, L->out, 0, NULL);
    *y = *x;
    y->name = L->out;
    y->shape[1] = x->shape[1] < 0 ? -1 : x->shape[1] + p[0] + p[1];
    y->shape[2] = x->shape[2] < 0 ? -1 : x->shape[2] + p[2] + p[3];
    return PTQ_OK;
}

static ptq_status layer_flatten(kimp *K, const klayer *L, const kval *const *in, int n_in, kval *y)
{
    kval x;
    PTQ_TRY_RET(cfg_channels_last(K, L));
    PTQ_TRY_RET(keras_layout(K, L, in[0], &x)); /* Keras flattens NHWC */
    *y = x;
    y->name = L->out;
    y->rank = 2;
    y->shape[1] = 1;
    for (int d = 1; d < x.rank; d++)
        y->shape[1] = y->shape[1] < 0 || x.shape[d] < 0 ? -1 : checked_dim(y->shape[1], x.shape[d]);
    node(K, "Flatten", L->out, 1, &x.name, L->out, 0, NULL);
    return PTQ_OK;
}

static ptq_status layer_reshape(kimp *K, const klayer *L, const kval *const *in, int n_in, kval *y)
{
    kval x, z;
    const cJSON *t = jget(L->cfg, "target_shape");
    int n = cJSON_IsArray(t) ? cJSON_GetArraySize(t) : -1, infer = -1;
    int64_t shape[PTQ_MAX_DIMS], known = 1, total = 1;
    if (n < 1 || n + 1 > PTQ_MAX_DIMS)
        return bad_cfg(K, L, "'target_shape' must be a list of 1 to %d integers", PTQ_MAX_DIMS - 1);
    PTQ_TRY_RET(keras_layout(K, L, in[0], &x));
    shape[0] = 0; /* the batch, copied */
    for (int i = 0; i < n; i++) {
        if (!json_int(cJSON_GetArrayItem(t, i), -1, MAX_DIM, &shape[i + 1]) || shape[i + 1] == 0)
            return bad_cfg(K, L, "'target_shape'[%d] must be a positive integer or -1", i);
        if (shape[i + 1] < 0) {
            if (infer >= 0)
                return bad_cfg(K, L, "'target_shape' has more than one -1");
            infer = i + 1;
        } else if ((known = checked_dim(known, shape[i + 1])) < 0) {
            return bad_cfg(K, L, "'target_shape' has too many elements");
        }
    }
    for (int d = 1; d < x.rank && total >= 0; d++)
        total = x.shape[d] < 0 ? -1 : checked_dim(total, x.shape[d]);
    if (total >= 0 && (infer < 0 ? known != total : total % known != 0))
        return bad_cfg(K, L, "cannot reshape %lld values per sample to 'target_shape'", (long long)total);
    const char *sname = sub_name(K, L, "shape"), *out = n + 1 == 4 ? sub_name(K, L, "Reshape") : L->out;
    if (!sname || !out)
        return oom(K);
    int64_t len = n + 1;
    ptq_ob_initializer(&K->ob, sname, ONNX_INT64, 1, &len, shape, (size_t)len * sizeof shape[0]);
    const char *ri[2] = {x.name, sname};
    node(K, "Reshape", out, 2, ri, out, 0, NULL);
    z = x;
    z.name = out;
    z.rank = n + 1;
    z.nchw = 0;
    z.shape[0] = -1;
    for (int i = 1; i <= n; i++)
        z.shape[i] = i == infer ? (total >= 0 ? total / known : -1) : shape[i];
    if (z.rank != 4) {
        *y = z;
        return PTQ_OK;
    }
    return relayout(K, L->out, &z, 1, y); /* images run NCHW */
}

/* Layers inference leaves out: the output is the input. */
static ptq_status layer_dropped(kimp *K, const klayer *L, const kval *const *in, int n_in, kval *y)
{
    *y = *in[0];
    return PTQ_OK;
}

static const struct {
    const char *cls;
    layer_fn fn;
    int n_in; /* -1: any number of inputs (merges) */
} layer_table[] = {
    {"Conv2D", layer_conv2d, 1},
    {"DepthwiseConv2D", layer_depthwise, 1},
    {"SeparableConv2D", layer_separable, 1},
    {"Dense", layer_dense, 1},
    {"BatchNormalization", layer_batchnorm, 1},
    {"Rescaling", layer_rescaling, 1},
    {"Normalization", layer_normalization, 1},
    {"Activation", layer_activation, 1},
    {"ReLU", layer_relu, 1},
    {"Softmax", layer_softmax, 1},
    {"MaxPooling2D", layer_maxpool, 1},
    {"AveragePooling2D", layer_avgpool, 1},
    {"GlobalAveragePooling2D", layer_gap, 1},
    {"GlobalMaxPooling2D", layer_gmp, 1},
    {"Add", layer_add, -1},
    {"Multiply", layer_multiply, -1},
    {"Concatenate", layer_concat, -1},
    {"ZeroPadding2D", layer_zeropad, 1},
    {"Flatten", layer_flatten, 1},
    {"Reshape", layer_reshape, 1},
    {"Dropout", layer_dropped, 1},
    {"SpatialDropout2D", layer_dropped, 1},
};

/* ---- the model graph ---- */

static const kval *find_out(const kimp *K, const char *layer, int64_t node_index, int64_t index)
{
    for (int i = 0; i < K->n_outs; i++)
        if (K->outs[i].node == node_index && K->outs[i].index == index && !strcmp(K->outs[i].layer, layer))
            return &K->outs[i].v;
    return NULL;
}

static ptq_status add_out(kimp *K, const char *layer, int64_t node_index, const kval *v)
{
    if (K->n_outs == K->cap_outs) {
        int cap = K->cap_outs ? 2 * K->cap_outs : 64;
        kout *grown = realloc(K->outs, (size_t)cap * sizeof *grown);
        if (!grown)
            return oom(K);
        K->outs = grown;
        K->cap_outs = cap;
    }
    K->outs[K->n_outs++] = (kout){layer, node_index, 0, *v};
    return PTQ_OK;
}

static const char *layer_name(const cJSON *layer)
{
    const cJSON *n = jget(jget(layer, "config"), "name");
    if (!cJSON_IsString(n))
        n = jget(layer, "name");
    return cJSON_IsString(n) && n->valuestring[0] ? n->valuestring : NULL;
}

/* An InputLayer: the graph input (NHWC, as Keras feeds it) and, for images,
 * its NCHW transpose that the layers read. */
static ptq_status input_layer(kimp *K, const klayer *L, kval *y)
{
    const cJSON *bs = jget(L->cfg, "batch_shape");
    const char *dtype = "float32";
    if (is_null(bs))
        bs = jget(L->cfg, "batch_input_shape");
    int n = cJSON_IsArray(bs) ? cJSON_GetArraySize(bs) : -1;
    if (n < 2 || n > 4)
        return unsupported(K, L, "an input that is not a batch of rank 2 to 4 (batch_shape)");
    const cJSON *dt = jget(L->cfg, "dtype");
    if (cJSON_IsString(dt))
        dtype = dt->valuestring;
    if (strcmp(dtype, "float32") != 0)
        return unsupported(K, L, "input dtype '%.40s'", dtype);
    memset(y, 0, sizeof *y);
    y->name = L->name;
    y->rank = n;
    for (int i = 0; i < n; i++) { /* a batch given (keras.Input(batch_size=B)) stays fixed, as in ONNX */
        const cJSON *e = cJSON_GetArrayItem(bs, i);
        y->shape[i] = -1;
        if (!is_null(e) && !json_int(e, 1, MAX_DIM, &y->shape[i]))
            return bad_cfg(K, L, "batch_shape[%d] must be null or a positive integer", i);
    }
    if (++K->n_inputs > 1)
        return unsupported(K, L, "a second model input");
    ptq_ob_value(&K->ob, 0, y->name, y->rank, y->shape);
    if (n != 4)
        return PTQ_OK;
    K->input_layout = "NHWC";
    return relayout(K, kstr(K, "%s/nchw", L->name), y, 1, y);
}

/* The inputs of one inbound node (call) of a layer: Keras 3 writes
 * {"args": [...], "kwargs": {...}} with __keras_tensor__ objects in args,
 * tf.keras 2 a list of [layer, node, index, kwargs]. */
typedef struct kref {
    const char *layer;
    int64_t node, index;
} kref;

static ptq_status collect_k3(kimp *K, const klayer *L, const cJSON *j, kref *refs, int *n, int depth, int args)
{
    if (depth > 16)
        return bad_cfg(K, L, "inbound_nodes nest deeper than 16 levels");
    /* a layer takes tensors as arguments; a number is the operand of a Keras operation (x * 2 saves a Multiply
     * op called on x and 2), which its layer namesake would compute without */
    if (args && (cJSON_IsNumber(j) || cJSON_IsString(j) || cJSON_IsBool(j))) {
        char *text = cJSON_PrintUnformatted(j);
        ptq_status st = unsupported(K, L, "a call with the constant argument %.40s (a Keras operation on a "
                                    "constant, such as x * 2 or x + 1)", text ? text : "?");
        cJSON_free(text);
        return st;
    }
    if (cJSON_IsObject(j)) {
        const cJSON *cls = jget(j, "class_name");
        if (!cJSON_IsString(cls) || strcmp(cls->valuestring, "__keras_tensor__") != 0)
            return PTQ_OK;
        const cJSON *h = jget(jget(j, "config"), "keras_history");
        if (*n == MAX_NODE_INPUTS)
            return unsupported(K, L, "a call with more than %d inputs", MAX_NODE_INPUTS);
        kref *r = &refs[*n];
        if (!cJSON_IsArray(h) || cJSON_GetArraySize(h) != 3 || !cJSON_IsString(cJSON_GetArrayItem(h, 0)) ||
            !json_int(cJSON_GetArrayItem(h, 1), 0, 1 << 20, &r->node) ||
            !json_int(cJSON_GetArrayItem(h, 2), 0, 1 << 20, &r->index))
            return bad_cfg(K, L, "an input tensor without a valid keras_history [layer, node, index]");
        r->layer = cJSON_GetArrayItem(h, 0)->valuestring;
        (*n)++;
        return PTQ_OK;
    }
    if (cJSON_IsArray(j))
        for (const cJSON *e = j->child; e; e = e->next)
            PTQ_TRY_RET(collect_k3(K, L, e, refs, n, depth + 1, args));
    return PTQ_OK;
}

static ptq_status node_inputs(kimp *K, const klayer *L, const cJSON *nd, kref *refs, int *n)
{
    *n = 0;
    if (cJSON_IsObject(nd)) {
        const cJSON *kw = jget(nd, "kwargs");
        int n_kw = 0;
        kref scratch[MAX_NODE_INPUTS];
        PTQ_TRY_RET(collect_k3(K, L, jget(nd, "args"), refs, n, 0, 1));
        for (const cJSON *e = cJSON_IsObject(kw) ? kw->child : NULL; e; e = e->next) {
            PTQ_TRY_RET(collect_k3(K, L, e, scratch, &n_kw, 0, 0));
            if (n_kw)
                return unsupported(K, L, "a tensor passed as keyword argument '%.40s'", e->string);
        }
        return PTQ_OK;
    }
    if (!cJSON_IsArray(nd))
        return bad_cfg(K, L, "an inbound node that is neither a list nor an object");
    for (const cJSON *e = nd->child; e; e = e->next) {
        if (*n == MAX_NODE_INPUTS)
            return unsupported(K, L, "a call with more than %d inputs", MAX_NODE_INPUTS);
        kref *r = &refs[*n];
        if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) < 3 || !cJSON_IsString(cJSON_GetArrayItem(e, 0)) ||
            !json_int(cJSON_GetArrayItem(e, 1), 0, 1 << 20, &r->node) ||
            !json_int(cJSON_GetArrayItem(e, 2), 0, 1 << 20, &r->index))
            return bad_cfg(K, L, "an inbound node entry that is not [layer, node, index, kwargs]");
        r->layer = cJSON_GetArrayItem(e, 0)->valuestring;
        (*n)++;
    }
    return PTQ_OK;
}

/* A layer of Keras 3's quantized dtype policies (model.quantize: int8, int4, float8 kernels with scales) or of
 * bfloat16 weights (stored as HDF5 opaque values) is named as such, not read as a float layer. */
static ptq_status check_dtype_policy(kimp *K, const klayer *L)
{
    const cJSON *d = jget(L->cfg, "dtype"), *mode = jget(jget(d, "config"), "mode");
    const cJSON *name = cJSON_IsString(d) ? d : jget(jget(d, "config"), "name");
    /* Keras 3.4 on records the mode; 3.2 and 3.3 name the policy '<mode>_from_<source>' (int8_from_float32) */
    const char *from = cJSON_IsString(name) ? strstr(name->valuestring, "_from_") : NULL;
    if (cJSON_IsString(mode) || from || !is_null(jget(L->cfg, "quantization_config"))) {
        char m[48], esc[160];
        if (cJSON_IsString(mode))
            snprintf(m, sizeof m, "%s", mode->valuestring);
        else if (from)
            snprintf(m, sizeof m, "%.*s", (int)(from - name->valuestring < 40 ? from - name->valuestring : 40),
                     name->valuestring);
        else
            snprintf(m, sizeof m, "?");
        return unsupported(K, L, "a quantized layer (dtype policy mode '%s'; ptq quantizes float models: save "
                           "the model before model.quantize())", ptq_escape(m, esc, sizeof esc));
    }
    if (cJSON_IsString(name) && !strcmp(name->valuestring, "bfloat16"))
        return unsupported(K, L, "dtype policy 'bfloat16' (bfloat16 weights)");
    /* float16 weights are read as float32, and mixed policies keep float32 ones: each computes in float32 here */
    static const char *const half[] = {"mixed_float16", "mixed_bfloat16", "float16"};
    K->n_layers++;
    for (size_t i = 0; cJSON_IsString(name) && i < sizeof half / sizeof *half; i++)
        if (!strcmp(name->valuestring, half[i])) {
            K->half_policy = K->half_policy ? K->half_policy : half[i];
            K->n_half++;
        }
    return PTQ_OK;
}

/* Translates one call of a layer whose inputs are ready. */
static ptq_status apply_layer(kimp *K, const klayer *L, const kval *const *in, int n_in, int64_t node_index)
{
    kval y;
    char esc[160];
    if (!strcmp(L->cls, "InputLayer")) {
        PTQ_TRY_RET(input_layer(K, L, &y));
        return add_out(K, L->name, node_index, &y);
    }
    for (size_t i = 0; i < sizeof layer_table / sizeof layer_table[0]; i++) {
        if (strcmp(layer_table[i].cls, L->cls) != 0)
            continue;
        if (layer_table[i].n_in >= 0 && n_in != layer_table[i].n_in)
            return unsupported(K, L, "a call with %d inputs", n_in);
        if (!L->out)
            return oom(K);
        PTQ_TRY_RET(check_dtype_policy(K, L));
        PTQ_TRY_RET(layer_table[i].fn(K, L, in, n_in, &y));
        return add_out(K, L->name, node_index, &y);
    }
    return ptq_fail(K->ctx, PTQ_ERR_UNSUPPORTED,
                    "%s: layer '%s' is a %.60s, a Keras layer ptq does not know (README.md, Keras models, lists those it "
                    "reads)",
                    K->path, ptq_escape(L->name, esc, sizeof esc), L->cls);
}

static ptq_status layer_of(kimp *K, const cJSON *layer, klayer *L, int64_t call)
{
    const cJSON *cls = jget(layer, "class_name");
    memset(L, 0, sizeof *L);
    L->name = layer_name(layer);
    L->cfg = jget(layer, "config");
    if (!L->name || !cJSON_IsString(cls) || !cJSON_IsObject(L->cfg))
        return ptq_fail(K->ctx, PTQ_ERR_FORMAT, "%s: model_config has a layer without class_name, config or name",
                        K->path);
    L->cls = cls->valuestring;
    L->out = call ? kstr(K, "%s/call%lld", L->name, (long long)call) : L->name;
    return PTQ_OK;
}

static ptq_status functional(kimp *K, const cJSON *layers, int n_layers)
{
    /* calls are translated once their inputs exist, so the layer order does not matter */
    char *done = NULL;
    int64_t n_calls = 0, steps = 0;
    int64_t *first = calloc((size_t)n_layers + 1, sizeof *first);
    ptq_status st = PTQ_OK;
    kref refs[MAX_NODE_INPUTS];
    const kval *in[MAX_NODE_INPUTS];
    if (!first)
        return oom(K);
    int i = 0;
    for (const cJSON *l = layers->child; l; l = l->next, i++) {
        const cJSON *nodes = jget(l, "inbound_nodes");
        first[i] = n_calls;
        n_calls += cJSON_IsArray(nodes) && cJSON_GetArraySize(nodes) > 0 ? cJSON_GetArraySize(nodes) : 1;
        if (n_calls > MAX_LAYERS * 16) {
            free(first);
            return ptq_fail(K->ctx, PTQ_ERR_UNSUPPORTED, "%s: model_config has more than %d layer calls", K->path,
                            MAX_LAYERS * 16);
        }
    }
    if (!(done = calloc((size_t)n_calls + 1, 1))) {
        free(first);
        return oom(K);
    }
    for (int progress = 1; progress && st == PTQ_OK;) {
        progress = 0;
        i = 0;
        for (const cJSON *l = layers->child; l && st == PTQ_OK; l = l->next, i++) {
            const cJSON *nodes = jget(l, "inbound_nodes");
            int n_nodes = cJSON_IsArray(nodes) ? cJSON_GetArraySize(nodes) : 0;
            for (int k = 0; k < (n_nodes ? n_nodes : 1) && st == PTQ_OK; k++) {
                if (done[first[i] + k])
                    continue;
                klayer L;
                int n_in = 0, ready = 1;
                PTQ_TRY(st, layer_of(K, l, &L, k), done);
                if (n_nodes)
                    PTQ_TRY(st, node_inputs(K, &L, cJSON_GetArrayItem(nodes, k), refs, &n_in), done);
                else if (strcmp(L.cls, "InputLayer") != 0)
                    continue; /* a layer never called (not part of the graph) */
                for (int j = 0; j < n_in && ready; j++) {
                    steps += 1 + K->n_outs; /* find_out scans at most every output */
                    ready = (in[j] = find_out(K, refs[j].layer, refs[j].node, refs[j].index)) != NULL;
                }
                if (steps > MAX_ORDER_STEPS) {
                    st = ptq_fail(K->ctx, PTQ_ERR_UNSUPPORTED,
                                  "%s: model_config's layers are listed too far from the order they are called in: "
                                  "ordering their %lld calls took more than %lld steps (a long chain of layers "
                                  "listed backwards?); ptq reads layers listed as Keras saves them",
                                  K->path, (long long)n_calls, (long long)MAX_ORDER_STEPS);
                    goto done;
                }
                if (!ready)
                    continue;
                PTQ_TRY(st, apply_layer(K, &L, in, n_in, k), done);
                done[first[i] + k] = 1;
                progress = 1;
            }
        }
    }
done:
    free(first);
    free(done);
    return st;
}

/* [layer, node, index] (or a list of them) of input_layers / output_layers. */
static ptq_status model_refs(kimp *K, const cJSON *j, const char *key, kref *refs, int *n)
{
    *n = 0;
    if (cJSON_IsArray(j) && cJSON_GetArraySize(j) == 3 && cJSON_IsString(cJSON_GetArrayItem(j, 0))) {
        const cJSON *one = j;
        j = NULL;
        kref *r = &refs[0];
        if (!json_int(cJSON_GetArrayItem(one, 1), 0, 1 << 20, &r->node) ||
            !json_int(cJSON_GetArrayItem(one, 2), 0, 1 << 20, &r->index))
            return ptq_fail(K->ctx, PTQ_ERR_FORMAT, "%s: model_config's %s is not [layer, node, index]", K->path, key);
        r->layer = cJSON_GetArrayItem(one, 0)->valuestring;
        *n = 1;
        return PTQ_OK;
    }
    if (!cJSON_IsArray(j) || cJSON_GetArraySize(j) < 1)
        return ptq_fail(K->ctx, PTQ_ERR_FORMAT, "%s: model_config has no %s", K->path, key);
    for (const cJSON *e = j->child; e; e = e->next) {
        kref *r = &refs[*n];
        if (*n == MAX_NODE_INPUTS)
            return ptq_fail(K->ctx, PTQ_ERR_UNSUPPORTED, "%s: model_config has more than %d %s", K->path,
                            MAX_NODE_INPUTS, key);
        if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 3 || !cJSON_IsString(cJSON_GetArrayItem(e, 0)) ||
            !json_int(cJSON_GetArrayItem(e, 1), 0, 1 << 20, &r->node) ||
            !json_int(cJSON_GetArrayItem(e, 2), 0, 1 << 20, &r->index))
            return ptq_fail(K->ctx, PTQ_ERR_FORMAT, "%s: model_config's %s entries are not [layer, node, index]",
                            K->path, key);
        r->layer = cJSON_GetArrayItem(e, 0)->valuestring;
        (*n)++;
    }
    return PTQ_OK;
}

/* Declares v as a graph output, in Keras's layout. */
static ptq_status add_output(kimp *K, const kval *v)
{
    kval o = *v;
    if (o.nchw)
        PTQ_TRY_RET(relayout(K, kstr(K, "%s/nhwc", v->name), v, 0, &o));
    ptq_ob_value(&K->ob, 1, o.name, o.rank, o.shape);
    return PTQ_OK;
}

static ptq_status sequential(kimp *K, const cJSON *layers)
{
    kval cur;
    int have = 0;
    int64_t i = 0;
    for (const cJSON *l = layers->child; l; l = l->next, i++) {
        klayer L;
        PTQ_TRY_RET(layer_of(K, l, &L, 0));
        if (!strcmp(L.cls, "InputLayer")) {
            if (have)
                return ptq_fail(K->ctx, PTQ_ERR_FORMAT, "%s: a Sequential model with an InputLayer after layer 0",
                                K->path);
            PTQ_TRY_RET(input_layer(K, &L, &cur));
            have = 1;
            continue;
        }
        if (!have) { /* tf.keras 2 without an InputLayer: the first layer carries the input shape */
            klayer I = L;
            I.cls = "InputLayer";
            if (!(I.name = kstr(K, "%s_input", L.name)))
                return oom(K);
            PTQ_TRY_RET(input_layer(K, &I, &cur));
            have = 1;
        }
        const kval *in = &cur;
        kval y;
        PTQ_TRY_RET(apply_layer(K, &L, &in, 1, 0));
        y = K->outs[K->n_outs - 1].v;
        cur = y;
    }
    if (!have)
        return ptq_fail(K->ctx, PTQ_ERR_FORMAT, "%s: the Sequential model has no layers", K->path);
    return add_output(K, &cur);
}

/* model_config -> the ONNX graph in K->ob. */
static ptq_status translate(kimp *K, const cJSON *model)
{
    const cJSON *cls = jget(model, "class_name"), *cfg = jget(model, "config");
    const cJSON *layers = jget(cfg, "layers");
    if (!cJSON_IsString(cls) || !cJSON_IsArray(layers))
        return ptq_fail(K->ctx, PTQ_ERR_FORMAT, "%s: model_config is not a Keras model (no class_name and config.layers)",
                        K->path);
    int n_layers = cJSON_GetArraySize(layers);
    if (n_layers > MAX_LAYERS)
        return ptq_fail(K->ctx, PTQ_ERR_UNSUPPORTED, "%s: model_config has %d layers; ptq reads at most %d", K->path,
                        n_layers, MAX_LAYERS);
    if (!strcmp(cls->valuestring, "Sequential"))
        return sequential(K, layers);
    if (strcmp(cls->valuestring, "Functional") != 0 && strcmp(cls->valuestring, "Model") != 0)
        return ptq_fail(K->ctx, PTQ_ERR_UNSUPPORTED, "%s: a Keras model of class '%.60s' (ptq reads Sequential and "
                        "Functional models)", K->path, cls->valuestring);
    kref outs[MAX_NODE_INPUTS];
    int n_outs;
    PTQ_TRY_RET(model_refs(K, jget(cfg, "output_layers"), "output_layers", outs, &n_outs));
    PTQ_TRY_RET(functional(K, layers, n_layers));
    for (int i = 0; i < n_outs; i++) {
        const kval *v = find_out(K, outs[i].layer, outs[i].node, outs[i].index);
        char esc[160];
        if (!v)
            return ptq_fail(K->ctx, PTQ_ERR_FORMAT,
                            "%s: output layer '%s' is not computed from the model's inputs (a missing or cyclic link in "
                            "model_config)", K->path, ptq_escape(outs[i].layer, esc, sizeof esc));
        PTQ_TRY_RET(add_output(K, v));
    }
    if (K->n_inputs != 1)
        return ptq_fail(K->ctx, PTQ_ERR_FORMAT, "%s: model_config has no InputLayer", K->path);
    return PTQ_OK;
}

/* What an HDF5 file without model_config is, for the message. */
static const char *not_keras_hint(kimp *K)
{
    char *fmt = NULL;
    const char *hint = "an HDF5 file that is not a Keras model (no 'model_config' attribute at the root; an image "
                       "set or other data)";
    if (H5Aexists(K->file, "layer_names") > 0 || H5Lexists(K->file, "layers", H5P_DEFAULT) > 0 ||
        H5Lexists(K->file, "vars", H5P_DEFAULT) > 0)
        hint = "a Keras weights-only file (model.save_weights): it has no model_config, so ptq cannot know the "
               "layers; save the whole model with model.save(\"x.h5\")";
    else if (read_root_string(K, "format", &fmt) == PTQ_OK && fmt && !strcmp(fmt, "ptq calibration archive"))
        hint = "a ptq calibration archive, not a model";
    free(fmt);
    return hint;
}

ptq_status ptq_keras_to_onnx(ptq_ctx *ctx, const char *path, void **bytes, size_t *n_bytes)
{
    ptq_status st = PTQ_OK;
    kimp K;
    ds_h5_quiet quiet;
    char *config = NULL, *version = NULL, *backend = NULL, why[256], what[1024];
    cJSON *model = NULL;
    struct stat sb;
    *bytes = NULL;
    *n_bytes = 0;
    memset(&K, 0, sizeof K);
    K.ctx = ctx;
    K.path = path;
    K.file = K.weights = -1;
    if (stat(path, &sb) != 0)
        return ptq_fail(ctx, PTQ_ERR_IO, "%s: cannot read the file", path);
    K.file_bytes = (double)sb.st_size;
    PTQ_TRY_RET(ds_h5_vet(ctx, path, 1));
    ds_h5_quiet_begin(&quiet);
    K.file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (K.file < 0) {
        st = ptq_fail(ctx, PTQ_ERR_FORMAT, "%s: not a readable HDF5 file: %s", path, ds_h5_error(why, sizeof why));
        goto done;
    }
    PTQ_TRY(st, ds_h5_check_self_contained(ctx, K.file, path, "a Keras model never does"), done);
    PTQ_TRY(st, read_root_string(&K, "model_config", &config), done);
    if (!config) {
        st = ptq_fail(ctx, PTQ_ERR_FORMAT, "%s: %s", path, not_keras_hint(&K));
        goto done;
    }
    PTQ_TRY(st, read_root_string(&K, "keras_version", &version), done);
    PTQ_TRY(st, read_root_string(&K, "backend", &backend), done);
    if (H5Lexists(K.file, "model_weights", H5P_DEFAULT) > 0)
        K.weights = H5Gopen2(K.file, "model_weights", H5P_DEFAULT);
    snprintf(what, sizeof what, "%s: model_config", path);
    PTQ_TRY(st, ptq_json_parse(ctx, config, what, &model), done);
    PTQ_TRY(st, translate(&K, model), done);
    const cJSON *name = jget(jget(model, "config"), "name");
    if (K.input_layout)
        ptq_ob_meta(&K.ob, "ptq.preprocess", "layout=NHWC");
    ptq_ob_meta(&K.ob, "keras_version", version ? version : "");
    ptq_ob_meta(&K.ob, "keras_backend", backend ? backend : "");
    if (K.n_half) {
        char *half = kstr(&K, "%s on %d of %d layers", K.half_policy, K.n_half, K.n_layers);
        if (!half) {
            st = oom(&K);
            goto done;
        }
        ptq_ob_meta(&K.ob, "keras_dtype_policy", half);
    }
    st = ptq_ob_finish(ctx, &K.ob, cJSON_IsString(name) ? name->valuestring : "keras", "ptq keras import", 13, bytes,
                       n_bytes);
done:
    ptq_ob_free(&K.ob);
    cJSON_Delete(model);
    free(config);
    free(version);
    free(backend);
    free(K.outs);
    for (int i = 0; i < K.n_strs; i++)
        free(K.strs[i]);
    free(K.strs);
    if (K.weights >= 0)
        H5Gclose(K.weights);
    if (K.file >= 0)
        H5Fclose(K.file);
    ds_h5_quiet_end(&quiet);
    return st;
}

ptq_status ptq_graph_load_keras(ptq_ctx *ctx, const char *path, ptq_graph **out)
{
    void *bytes = NULL;
    size_t n = 0;
    *out = NULL;
    PTQ_TRY_RET(ptq_keras_to_onnx(ctx, path, &bytes, &n));
    return ptq_graph_load_onnx_owned(ctx, path, bytes, n, out);
}
