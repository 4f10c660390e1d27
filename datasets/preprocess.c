/* Preprocessing: the spec-string parser and the one function that turns a
 * decoded image (uint8/uint16/float, any size, 1-4 channels) into the
 * model's float layout, resizing as torchvision's Resize + CenterCrop on PIL
 * images do; both dataset readers use it. Steps and conventions are documented
 * in include/ptq/dataset.h. Covered by tests/test_datasets.c and, against
 * torchvision, tests/preprocess_test.py. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/c_locale.h"
#include "datasets/datasets_internal.h"

void ptq_preprocess_default(ptq_preprocess *p)
{
    memset(p, 0, sizeof *p);
    p->scale = 1.0f / 255.0f;
    p->n_channels = 1;
    for (int c = 0; c < 4; c++) {
        p->mean[c] = 0.0f;
        p->std[c] = 1.0f;
    }
}

/* scale > 0, and (v * scale - mean) / std finite over pixels 0..255 for
 * the first n channels: a spec that makes every input the same value, or
 * Inf/NaN, is a mistake. */
static ptq_status check_normalization(ptq_ctx *ctx, const ptq_preprocess *p, int n)
{
    if (!(p->scale > 0.0f))
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "preprocess scale must be > 0, got %g", (double)p->scale);
    for (int c = 0; c < n; c++)
        for (int v = 0; v <= 255; v += 255) {
            const float y = ((float)v * p->scale - p->mean[c]) / p->std[c];
            if (p->std[c] != 0.0f && !isfinite(y))
                return ptq_fail(ctx, PTQ_ERR_INVALID_ARG,
                                "preprocess scale=%g mean=%g std=%g (channel %d) turn pixel %d into %g: every "
                                "normalized value must be finite", (double)p->scale, (double)p->mean[c],
                                (double)p->std[c], c, v, (double)y);
        }
    return PTQ_OK;
}

ptq_status ds_preprocess_check(ptq_ctx *ctx, const ptq_preprocess *p)
{
    if (p->n_channels != 1 && p->n_channels != 3 && p->n_channels != 4)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "preprocess channels must be 1, 3 or 4, got %d", p->n_channels);
    if (p->height <= 0 || p->width <= 0)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "preprocess size must be set, got %lldx%lld",
                        (long long)p->height, (long long)p->width);
    if (p->resize < 0)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "preprocess resize must be >= 0, got %lld", (long long)p->resize);
    if (!isfinite(p->scale))
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "preprocess scale must be finite");
    for (int c = 0; c < p->n_channels; c++)
        if (!isfinite(p->mean[c]) || !isfinite(p->std[c]) || p->std[c] == 0.0f)
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "preprocess mean/std of channel %d must be finite, std non-zero",
                            c);
    return check_normalization(ctx, p, p->n_channels);
}

/* ---- spec parsing ---- */

/* 1 when s starts as a decimal number is written ("-0.5", ".5", "3"), as the CLI's number flags take it:
 * strtod and strtoll would also read " 5", "+5" and hex ("0x10") */
static int starts_decimal(const char *s)
{
    const char *d = s[0] == '-' ? s + 1 : s;
    return isdigit((unsigned char)d[0]) || (d[0] == '.' && isdigit((unsigned char)d[1]));
}

static int parse_float(const char *s, float *out)
{
    char *end;
    errno = 0;
    double v = ptq_strtod_c(s, &end);
    if (end == s || errno || !starts_decimal(s) || strpbrk(s, "xX"))
        return 0;
    if (*end == '/') { /* "1/255" */
        const char *d = end + 1;
        double den = ptq_strtod_c(d, &end);
        if (end == d || errno || den == 0.0 || !starts_decimal(d))
            return 0;
        v /= den;
    }
    if (*end || !isfinite(v))
        return 0;
    *out = (float)v;
    return 1;
}

static int parse_int(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || errno || v < 0 || !isdigit((unsigned char)s[0]))
        return 0;
    *out = v;
    return 1;
}

/* "0.485,0.456,0.406" -> v[0..n); at most 4 values. */
static int parse_floats(const char *s, float *v, int *n)
{
    char buf[256];
    if (strlen(s) >= sizeof buf)
        return 0;
    strcpy(buf, s);
    *n = 0;
    for (char *tok = buf;;) {
        char *comma = strchr(tok, ',');
        if (comma)
            *comma = '\0';
        if (*n == 4 || !parse_float(tok, &v[*n]))
            return 0;
        (*n)++;
        if (!comma)
            return 1;
        tok = comma + 1;
    }
}

static int equal_nocase(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return 0;
    return *a == *b;
}

/* Applies one key=value item to q; n_mean/n_std record how many values were given. */
static ptq_status parse_item(ptq_ctx *ctx, const char *key, const char *val, ptq_preprocess *q, int *n_mean,
                             int *n_std)
{
    int64_t iv;
    if (!strcmp(key, "scale")) {
        if (!parse_float(val, &q->scale))
            goto bad;
    } else if (!strcmp(key, "mean") || !strcmp(key, "std")) {
        float v[4];
        int n;
        if (!parse_floats(val, v, &n))
            goto bad;
        float *dst = key[0] == 'm' ? q->mean : q->std;
        const int last = n > 1 ? n - 1 : 0; /* one value fills every channel */
        for (int c = 0; c < 4; c++)
            dst[c] = v[c < last ? c : last];
        *(key[0] == 'm' ? n_mean : n_std) = n;
    } else if (!strcmp(key, "channels")) {
        if (!parse_int(val, &iv) || (iv != 1 && iv != 3 && iv != 4))
            goto bad;
        q->n_channels = (int)iv;
    } else if (!strcmp(key, "layout")) {
        if (equal_nocase(val, "NCHW"))
            q->nhwc = 0;
        else if (equal_nocase(val, "NHWC"))
            q->nhwc = 1;
        else
            goto bad;
    } else if (!strcmp(key, "order")) {
        if (equal_nocase(val, "RGB"))
            q->bgr = 0;
        else if (equal_nocase(val, "BGR"))
            q->bgr = 1;
        else
            goto bad;
    } else if (!strcmp(key, "size")) {
        const char *x = strpbrk(val, "xX");
        char hbuf[32];
        if (!x) {
            if (!parse_int(val, &iv) || iv == 0)
                goto bad;
            q->height = q->width = iv;
        } else {
            int64_t h, w;
            if ((size_t)(x - val) >= sizeof hbuf)
                goto bad;
            memcpy(hbuf, val, (size_t)(x - val));
            hbuf[x - val] = '\0';
            if (!parse_int(hbuf, &h) || !parse_int(x + 1, &w) || h == 0 || w == 0)
                goto bad;
            q->height = h;
            q->width = w;
        }
    } else if (!strcmp(key, "height") || !strcmp(key, "width")) {
        if (!parse_int(val, &iv) || iv == 0)
            goto bad;
        *(key[0] == 'h' ? &q->height : &q->width) = iv;
    } else if (!strcmp(key, "resize")) {
        if (!parse_int(val, &iv))
            goto bad;
        q->resize = iv;
    } else {
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG,
                        "unknown preprocess key '%s' (known: scale mean std channels layout order size height "
                        "width resize)",
                        key);
    }
    return PTQ_OK;
bad:
    return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "bad value '%s' for preprocess key '%s'", val, key);
}

/* The named presets (include/ptq/dataset.h), in their canonical spelling: the one name equals, any case; NULL
 * when it names none. */
static const char *preset_named(const char *name)
{
    static const char *const presets[] = {"imagenet", "imagenet-bgr-caffe"};
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (equal_nocase(name, presets[i]))
            return presets[i];
    return NULL;
}

/* The named presets: 1 when name is one. The crop keeps a size already set (the model's), else 224. */
static int apply_preset(const char *name, ptq_preprocess *q, int *n_mean, int *n_std)
{
    static const float im_mean[3] = {0.485f, 0.456f, 0.406f}, im_std[3] = {0.229f, 0.224f, 0.225f};
    static const float caffe_mean[3] = {103.939f, 116.779f, 123.68f}; /* B, G, R */
    const char *preset = preset_named(name);
    if (!preset)
        return 0;
    const int caffe = strcmp(preset, "imagenet-bgr-caffe") == 0;
    q->scale = caffe ? 1.0f : 1.0f / 255.0f;
    q->bgr = caffe;
    q->n_channels = 3;
    q->resize = 256;
    if (q->height <= 0)
        q->height = 224;
    if (q->width <= 0)
        q->width = 224;
    for (int c = 0; c < 4; c++) {
        q->mean[c] = caffe ? caffe_mean[c < 3 ? c : 2] : im_mean[c < 3 ? c : 2];
        q->std[c] = caffe ? 1.0f : im_std[c < 3 ? c : 2];
    }
    *n_mean = 3;
    *n_std = caffe ? 1 : 3;
    return 1;
}

/* v[0] <-> v[2]: per-channel values from RGB order to BGR, or back */
static void swap_r_b(float *v)
{
    const float r = v[0];
    v[0] = v[2];
    v[2] = r;
}

/* The settings a key sets, one bit each, by name (size= is height and width): 0 for a name that is no key. */
static unsigned key_fields(const char *key)
{
    static const char *const names[] = {"scale", "mean", "std", "channels", "layout", "order", "height", "width",
                                        "resize"};
    if (!strcmp(key, "size"))
        return key_fields("height") | key_fields("width");
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(key, names[i]))
            return 1u << i;
    return 0;
}

const char *ds_preprocess_spec_preset(const char *spec)
{
    char item[32];
    for (const char *c = spec; c && *c;) {
        while (isspace((unsigned char)*c))
            c++;
        size_t n = 0;
        while (c[n] && !isspace((unsigned char)c[n]))
            n++;
        if (n > 0 && n < sizeof item) {
            memcpy(item, c, n);
            item[n] = '\0';
            if (preset_named(item))
                return preset_named(item);
        }
        c += n;
    }
    return NULL;
}

ptq_status ds_preprocess_parse(ptq_ctx *ctx, const char *spec, ptq_preprocess *p, int *normalizes)
{
    ptq_status st = PTQ_OK;
    ptq_preprocess q = *p;
    const char *set_by[9] = {NULL}; /* the key item that set each of key_fields' settings (a preset's are refined) */
    int n_mean = 1, n_std = 1, named = 0;
    int mean_bgr = -1, std_bgr = -1; /* bgr of the preset that set mean / std (per colour), -1: none did */
    char *buf = malloc(strlen(spec) + 1);
    if (!buf)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "preprocess spec: out of memory");
    strcpy(buf, spec);
    for (char *s = buf; *s;) {
        while (isspace((unsigned char)*s))
            s++;
        if (!*s)
            break;
        char *item = s;
        while (*s && !isspace((unsigned char)*s))
            s++;
        if (*s)
            *s++ = '\0';
        char *eq = strchr(item, '=');
        if (!eq && apply_preset(item, &q, &n_mean, &n_std)) {
            named = DS_PRE_NORM | DS_PRE_MEAN | DS_PRE_STD;
            mean_bgr = std_bgr = q.bgr;
            continue;
        }
        if (!eq || eq == item) {
            st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG,
                          "preprocess item '%s' is not key=value nor a preset (imagenet, imagenet-bgr-caffe)", item);
            goto done;
        }
        *eq = '\0';
        const unsigned fields = key_fields(item);
        for (int i = 0; i < 9; i++)
            if ((fields >> i & 1u) && set_by[i]) { /* the later one would win, silently */
                const char *was = set_by[i] + strlen(set_by[i]) + 1; /* its value, after its '=' (now '\0') */
                if (strcmp(set_by[i], item) == 0)
                    st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "preprocess key '%s' is given twice (%s=%s, then %s=%s): "
                                  "name it once", item, item, was, item, eq + 1);
                else
                    st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "preprocess keys '%s' and '%s' both set the %s (%s=%s, "
                                  "then %s=%s): name it once", set_by[i], item, i == 6 ? "height" : "width",
                                  set_by[i], was, item, eq + 1);
                goto done;
            }
        for (int i = 0; i < 9; i++)
            if (fields >> i & 1u)
                set_by[i] = item;
        PTQ_TRY(st, parse_item(ctx, item, eq + 1, &q, &n_mean, &n_std), done);
        if (!strcmp(item, "scale") || !strcmp(item, "mean") || !strcmp(item, "std") || !strcmp(item, "order"))
            named |= DS_PRE_NORM | (!strcmp(item, "mean") ? DS_PRE_MEAN : !strcmp(item, "std") ? DS_PRE_STD : 0);
        if (!strcmp(item, "mean")) /* a list is per model channel: it stays where it is */
            mean_bgr = -1;
        if (!strcmp(item, "std"))
            std_bgr = -1;
    }
    /* a preset's means and stds are per colour (caffe's 103.939 is B's): an order= after it takes them along */
    if (mean_bgr >= 0 && mean_bgr != q.bgr)
        swap_r_b(q.mean);
    if (std_bgr >= 0 && std_bgr != q.bgr)
        swap_r_b(q.std);
    if ((n_mean != 1 && n_mean != q.n_channels) || (n_std != 1 && n_std != q.n_channels)) {
        st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "preprocess mean/std give %d/%d values for %d channels", n_mean,
                      n_std, q.n_channels);
        goto done;
    }
    for (int c = 0; c < 4; c++)
        if (q.std[c] == 0.0f) {
            st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "preprocess std must be non-zero");
            goto done;
        }
    PTQ_TRY(st, check_normalization(ctx, &q, 4), done);
    *p = q;
    *normalizes = named;
done:
    free(buf);
    return st;
}

ptq_status ptq_preprocess_parse(ptq_ctx *ctx, const char *spec, ptq_preprocess *p)
{
    int normalizes;
    return ds_preprocess_parse(ctx, spec, p, &normalizes);
}

/* ---- one image -> model input ---- */

typedef struct src_image {
    const void *data;
    ptq_dtype dtype;
    int64_t h, w, c;
    int planar;
} src_image;

static inline float sample_at(const src_image *s, int64_t y, int64_t x, int64_t ch)
{
    int64_t i = s->planar ? (ch * s->h + y) * s->w + x : (y * s->w + x) * s->c + ch;
    switch (s->dtype) {
    case PTQ_DT_UINT8: return (float)((const uint8_t *)s->data)[i];
    case PTQ_DT_UINT16: return (float)((const uint16_t *)s->data)[i] / 257.0f;
    default: return ((const float *)s->data)[i];
    }
}

/* Value of model channel mc (RGB or RGBA order) at (y, x) after channel
 * conversion; opaque is the alpha an image without one gets. */
static inline float pixel_at(const src_image *s, int n_out, int mc, int64_t y, int64_t x, float opaque)
{
    if (n_out == 4 && mc == 3)
        return s->c == 4 ? sample_at(s, y, x, 3) : s->c == 2 ? sample_at(s, y, x, 1) : opaque;
    if (s->c <= 2)
        return sample_at(s, y, x, 0);
    if (n_out >= 3)
        return sample_at(s, y, x, mc);
    return 0.299f * sample_at(s, y, x, 0) + 0.587f * sample_at(s, y, x, 1) + 0.114f * sample_at(s, y, x, 2);
}

/* ---- resize: Pillow's antialiased bilinear (ImagingResample in src/libImaging/Resample.c), so that
 * resize + crop is torchvision's Resize(S) + CenterCrop on a PIL image: a triangle filter whose support
 * widens with the downscale factor, normalized weights, a horizontal pass then a vertical one; 8-bit
 * images in Pillow's fixed point, rounded and clamped to uint8 after each pass, bit for bit. Only the
 * outputs inside the crop are computed; each is the same as in the whole resized image. ---- */

#define PIL_PRECISION_BITS 22 /* Pillow's 32 - 8 - 2 */

typedef struct resample_axis {
    int64_t ksize;  /* weights per output */
    int64_t *first; /* [n_out] first input index */
    int64_t *count; /* [n_out] inputs used */
    double *k;      /* [n_out, ksize] normalized weights */
    int32_t *k8;    /* [n_out, ksize] the weights in fixed point */
} resample_axis;

static void resample_axis_free(resample_axis *a)
{
    free(a->first);
    free(a->count);
    free(a->k);
    free(a->k8);
}

static double triangle(double x)
{
    x = x < 0.0 ? -x : x;
    return x < 1.0 ? 1.0 - x : 0.0;
}

/* Weights of outputs off..off+n_out of an n_in -> n_resized resample (Pillow's precompute_coeffs and
 * normalize_coeffs_8bpc, same arithmetic); 0 when out of memory. */
static int resample_axis_init(resample_axis *a, int64_t n_in, int64_t n_resized, int64_t off, int64_t n_out)
{
    const double scale = (double)(float)n_in / (double)n_resized; /* Pillow: (double)(in1 - in0) / outSize */
    const double filterscale = scale < 1.0 ? 1.0 : scale;
    const double support = 1.0 * filterscale, ss = 1.0 / filterscale;
    memset(a, 0, sizeof *a);
    a->ksize = (int64_t)ceil(support) * 2 + 1;
    a->first = malloc((size_t)n_out * sizeof *a->first);
    a->count = malloc((size_t)n_out * sizeof *a->count);
    a->k = malloc((size_t)(n_out * a->ksize) * sizeof *a->k);
    a->k8 = malloc((size_t)(n_out * a->ksize) * sizeof *a->k8);
    if (!a->first || !a->count || !a->k || !a->k8)
        return 0;
    for (int64_t o = 0; o < n_out; o++) {
        const double center = ((double)(o + off) + 0.5) * scale;
        int64_t lo = (int64_t)(center - support + 0.5), hi = (int64_t)(center + support + 0.5);
        lo = lo < 0 ? 0 : lo;
        hi = (hi > n_in ? n_in : hi) - lo;
        double *k = a->k + o * a->ksize, ww = 0.0;
        for (int64_t i = 0; i < hi; i++) {
            k[i] = triangle(((double)(i + lo) - center + 0.5) * ss);
            ww += k[i];
        }
        for (int64_t i = 0; i < hi; i++) {
            if (ww != 0.0)
                k[i] /= ww;
            a->k8[o * a->ksize + i] = (int32_t)(k[i] < 0 ? -0.5 + k[i] * (1 << PIL_PRECISION_BITS)
                                                         : 0.5 + k[i] * (1 << PIL_PRECISION_BITS));
        }
        a->first[o] = lo;
        a->count[o] = hi;
    }
    return 1;
}

static inline uint8_t clip8(int64_t ss)
{
    if (ss < 0)
        return 0;
    ss >>= PIL_PRECISION_BITS;
    return ss > 255 ? 255 : (uint8_t)ss;
}

static inline uint8_t sample_u8(const src_image *s, int64_t y, int64_t x, int64_t ch)
{
    return ((const uint8_t *)s->data)[s->planar ? (ch * s->h + y) * s->w + x : (y * s->w + x) * s->c + ch];
}

/* s resized to rh x rw and cropped at (top, left) to H x W into out: [H, W, s->c] uint8 for a uint8 s
 * (Pillow's 8-bit path), else float (its 32-bit float path, on sample_at's values). */
static ptq_status resample_crop(ptq_ctx *ctx, const src_image *s, int64_t rh, int64_t rw, int64_t top, int64_t left,
                                int64_t H, int64_t W, void *out)
{
    ptq_status st = PTQ_OK;
    const int u8 = s->dtype == PTQ_DT_UINT8, need_h = rw != s->w, need_v = rh != s->h;
    const int64_t c = s->c, row = W * c;
    resample_axis ax = {0}, ay = {0};
    void *tmp = NULL;
    if (!resample_axis_init(&ax, s->w, rw, left, W) || !resample_axis_init(&ay, s->h, rh, top, H)) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "resize of a %lldx%lld image: out of memory", (long long)s->w,
                      (long long)s->h);
        goto done;
    }
    /* source rows the vertical pass reads */
    const int64_t y_first = need_v ? ay.first[0] : top;
    const int64_t y_end = need_v ? ay.first[H - 1] + ay.count[H - 1] : top + H;
    tmp = malloc((size_t)((y_end - y_first) * row) * (u8 ? sizeof(uint8_t) : sizeof(float)));
    if (!tmp) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "resize of a %lldx%lld image: out of memory", (long long)s->w,
                      (long long)s->h);
        goto done;
    }
    for (int64_t y = y_first; y < y_end; y++)
        for (int64_t ox = 0; ox < W; ox++)
            for (int64_t ch = 0; ch < c; ch++) {
                const int64_t o = (y - y_first) * row + ox * c + ch, x0 = need_h ? ax.first[ox] : left + ox;
                const int64_t n = need_h ? ax.count[ox] : 1;
                if (u8) {
                    int64_t acc = (int64_t)1 << (PIL_PRECISION_BITS - 1);
                    for (int64_t i = 0; i < n; i++)
                        acc += (int64_t)sample_u8(s, y, x0 + i, ch) *
                               (need_h ? ax.k8[ox * ax.ksize + i] : (int32_t)1 << PIL_PRECISION_BITS);
                    ((uint8_t *)tmp)[o] = clip8(acc);
                } else {
                    double acc = 0.0;
                    for (int64_t i = 0; i < n; i++)
                        acc += (double)sample_at(s, y, x0 + i, ch) * (need_h ? ax.k[ox * ax.ksize + i] : 1.0);
                    ((float *)tmp)[o] = (float)acc;
                }
            }
    for (int64_t oy = 0; oy < H; oy++)
        for (int64_t j = 0; j < row; j++) {
            const int64_t y0 = (need_v ? ay.first[oy] : top + oy) - y_first, n = need_v ? ay.count[oy] : 1;
            if (u8) {
                int64_t acc = (int64_t)1 << (PIL_PRECISION_BITS - 1);
                for (int64_t i = 0; i < n; i++)
                    acc += (int64_t)((const uint8_t *)tmp)[(y0 + i) * row + j] *
                           (need_v ? ay.k8[oy * ay.ksize + i] : (int32_t)1 << PIL_PRECISION_BITS);
                ((uint8_t *)out)[oy * row + j] = clip8(acc);
            } else {
                double acc = 0.0;
                for (int64_t i = 0; i < n; i++)
                    acc += (double)((const float *)tmp)[(y0 + i) * row + j] * (need_v ? ay.k[oy * ay.ksize + i] : 1.0);
                ((float *)out)[oy * row + j] = (float)acc;
            }
        }
done:
    free(tmp);
    resample_axis_free(&ax);
    resample_axis_free(&ay);
    return st;
}

/* Whether each output channel of s is one source channel read along contiguous rows: 8-bit samples, one channel
 * or planar, no luma mix, no made-up alpha, output [C, H, W]. normalize_row_u8 then does a row the general loop's
 * way, pixel_at's float and the same expression, so the same bits, on the widest vectors. */
static int rows_direct(const src_image *s, const ptq_preprocess *p, int n_out)
{
    if (s->dtype != PTQ_DT_UINT8 || (s->c > 1 && !s->planar) || (p->nhwc && n_out > 1))
        return 0;
    if (n_out == 1)
        return s->c <= 2;
    return n_out >= 3 && (s->c <= 2 ? n_out == 3 : s->c >= n_out); /* gray replicated into RGB; RGB(A) kept */
}

__attribute__((target_clones("avx512f", "avx2", "default"))) static void
normalize_row_u8(const uint8_t *src, int64_t n, float scale, float mean, float std, float *dst)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] = ((float)src[i] * scale - mean) / std;
}

/* round(d / 2) with ties to even, as Python's round() in torchvision's center_crop */
static int64_t half_round_even(int64_t d)
{
    const int64_t m = d / 2;
    return d % 2 == 0 || m % 2 == 0 ? m : m + 1;
}

ptq_status ptq_preprocess_image(ptq_ctx *ctx, const ptq_preprocess *p, const void *img, ptq_dtype dtype, int64_t h,
                                int64_t w, int64_t c, int planar, float *out)
{
    ptq_status st = ds_preprocess_check(ctx, p);
    if (st != PTQ_OK)
        return st;
    if (dtype != PTQ_DT_UINT8 && dtype != PTQ_DT_UINT16 && dtype != PTQ_DT_FLOAT)
        return ptq_fail(ctx, PTQ_ERR_UNSUPPORTED, "image samples of type %s (uint8, uint16 or float32 expected)",
                        ptq_dtype_name(dtype));
    if (h <= 0 || w <= 0 || c < 1 || c > 4)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "image of %lldx%lld with %lld channels", (long long)h,
                        (long long)w, (long long)c);
    src_image s = {img, dtype, h, w, c, planar};
    const int64_t H = p->height, W = p->width;
    const int n_out = p->n_channels;
    /* alpha for a 4-channel model from an image without one: 255 in the 8-bit range, float images the value
     * that scale takes to 1 */
    const float opaque = dtype == PTQ_DT_FLOAT && p->scale != 0.0f ? 1.0f / p->scale : 255.0f;
    int64_t rh = h, rw = w, top = 0, left = 0;
    const int same_size = h == H && w == W;
    /* Stretching would silently distort the aspect ratio of one odd image
     * among many; a change of geometry must be asked for. */
    if (!same_size && p->resize == 0 && p->to_convert)
        return ptq_fail(ctx, PTQ_ERR_SHAPE,
                        "image is %lldx%lld (width x height) but the set is %lldx%lld (the first image's size); pass "
                        "--resize WxH to resize and center-crop every image", (long long)w, (long long)h, (long long)W,
                        (long long)H);
    if (!same_size && p->resize == 0)
        return ptq_fail(ctx, PTQ_ERR_SHAPE,
                        "image is %lldx%lld (width x height) but the model takes %lldx%lld; pass --preprocess "
                        "resize=... to resize and center-crop", (long long)w, (long long)h, (long long)W, (long long)H);
    if (p->resize > 0) { /* torchvision's Resize(S): shorter side S (w when square), longer int(S * long / short) */
        const int64_t S = p->resize;
        rw = w <= h ? S : (int64_t)((double)(S * w) / (double)h);
        rh = w <= h ? (int64_t)((double)(S * h) / (double)w) : S;
        if (rh < H || rw < W)
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG,
                            "preprocess resize %lld makes a %lldx%lld image (width x height) %lldx%lld, smaller than "
                            "the crop %lldx%lld", (long long)S, (long long)w, (long long)h, (long long)rw,
                            (long long)rh, (long long)W, (long long)H);
        top = half_round_even(rh - H);
        left = half_round_even(rw - W);
    }
    void *resized = NULL;
    if (rh != h || rw != w) {
        resized = malloc((size_t)(H * W * c) * (dtype == PTQ_DT_UINT8 ? sizeof(uint8_t) : sizeof(float)));
        if (!resized)
            return ptq_fail(ctx, PTQ_ERR_NOMEM, "resize of a %lldx%lld image: out of memory", (long long)w,
                            (long long)h);
        st = resample_crop(ctx, &s, rh, rw, top, left, H, W, resized);
        if (st != PTQ_OK) {
            free(resized);
            return st;
        }
        s = (src_image){resized, dtype == PTQ_DT_UINT8 ? PTQ_DT_UINT8 : PTQ_DT_FLOAT, H, W, c, 0};
        top = left = 0;
    }
    if (rows_direct(&s, p, n_out)) {
        for (int mc = 0; mc < n_out; mc++) {
            const int oc = p->bgr && n_out >= 3 && mc < 3 ? 2 - mc : mc, ch = s.c <= 2 ? 0 : mc;
            for (int64_t oy = 0; oy < H; oy++)
                normalize_row_u8((const uint8_t *)s.data + (s.planar ? ch * s.h + oy + top : oy + top) * s.w + left,
                                 W, p->scale, p->mean[oc], p->std[oc], out + ((int64_t)oc * H + oy) * W);
        }
        free(resized);
        return PTQ_OK;
    }
    for (int64_t oy = 0; oy < H; oy++)
        for (int64_t ox = 0; ox < W; ox++)
            for (int mc = 0; mc < n_out; mc++) {
                float v = pixel_at(&s, n_out, mc, oy + top, ox + left, opaque);
                int oc = p->bgr && n_out >= 3 && mc < 3 ? 2 - mc : mc; /* BGR, BGRA */
                v = (v * p->scale - p->mean[oc]) / p->std[oc];
                out[p->nhwc ? (oy * W + ox) * n_out + oc : ((int64_t)oc * H + oy) * W + ox] = v;
            }
    free(resized);
    return PTQ_OK;
}

/* "a,b,c" of the first n values, each %.9g (float round-trips). */
static void format_floats(const float *v, int n, char *buf, size_t n_buf)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && used < n_buf; i++) {
        int k = snprintf(buf + used, n_buf - used, "%s%.9g", i ? "," : "", (double)v[i]);
        used += k > 0 ? (size_t)k : 0;
    }
}

char *ptq_preprocess_format(const ptq_preprocess *p, char *buf, size_t n_buf)
{
    char mean[128], std[128];
    const int n_ch = p->n_channels == 3 || p->n_channels == 4 ? p->n_channels : 1;
    void *locale = ptq_c_locale_enter(); /* the spec archives record: "0.5" whatever the program's LC_NUMERIC */
    format_floats(p->mean, n_ch, mean, sizeof mean);
    format_floats(p->std, n_ch, std, sizeof std);
    snprintf(buf, n_buf, "scale=%.9g mean=%s std=%s channels=%d layout=%s order=%s size=%lldx%lld resize=%lld",
             (double)p->scale, mean, std, p->n_channels, p->nhwc ? "NHWC" : "NCHW", p->bgr ? "BGR" : "RGB",
             (long long)p->height, (long long)p->width, (long long)p->resize);
    ptq_c_locale_leave(locale);
    return buf;
}
