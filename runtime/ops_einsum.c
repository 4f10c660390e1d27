/* ONNX Einsum (opset 12) on float32, float64, int32 and int64 through kernels/ref/einsum.c, its CPU path too (the
 * CUDA backend hands it to the CPU): the equation parsed strictly here (letters, one "..." per term, spaces
 * ignored; an explicit "->" output, or numpy's implicit one: the letters seen once, in ASCII order, after the
 * ellipsis's dims), ellipsis dims broadcast numpy's way, a repeated letter taking a diagonal. Every fault is
 * refused naming the node. Covered by tests/ops_rnn_test.py (against onnxruntime) and the ONNX conformance run. */
#include <string.h>

#include "runtime/op_util.h"

#define N_LETTERS 52
#define MAX_TERM 64 /* letters of one term; a term longer than the rank ptq runs is refused anyway */
/* The most iterations (every label's index) one run may take: 2^40, about 20 minutes on a CPU core; attention's
 * bhid,bhjd->bhij at batch 256, 12 heads, length 512 and 64 dims takes 2^35.6. More would be a model of a few
 * vectors ('a,b,c,d->' of 8192 each: 2^52) keeping a command busy for days. */
#define MAX_WORK ((int64_t)1 << 40)

/* A letter's label (0..51: a-z, A-Z), or -1. */
static int letter_id(char c)
{
    return c >= 'a' && c <= 'z' ? c - 'a' : c >= 'A' && c <= 'Z' ? 26 + c - 'A' : -1;
}

/* One side of the equation: its letters' ids in order, with ELL where its "..." stands. */
#define ELL (-2)
typedef struct {
    int n;
    int ids[MAX_TERM];
    int has_ell;
} term;

/* Parses s[*at..] up to ',' '-' or the end into t. */
static ptq_status parse_term(ptq_ctx *ctx, const ptq_op_io *io, const char *s, size_t *at, term *t)
{
    memset(t, 0, sizeof *t);
    for (; s[*at] && s[*at] != ',' && s[*at] != '-'; (*at)++) {
        const char c = s[*at];
        if (c == ' ')
            continue;
        if (c == '.') {
            if (strncmp(s + *at, "...", 3) != 0 || t->has_ell)
                return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "equation '%.80s': a term may hold one '...' and no "
                                   "other '.' (at character %zu)", s, *at);
            t->has_ell = 1;
            *at += 2;
        } else if (letter_id(c) < 0) {
            return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "equation '%.80s': character %zu ('%c', byte %u) is not a "
                               "letter, ',', '...' or '->'", s, *at, c >= 32 && c < 127 ? c : '?', (unsigned char)c);
        }
        if (t->n == MAX_TERM)
            return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "equation '%.80s': a term of more than %d labels", s,
                               MAX_TERM);
        t->ids[t->n++] = c == '.' ? ELL : letter_id(c);
    }
    return PTQ_OK;
}

/* The node's equation and inputs into *p, and the output's dims (rank *out_ndim) into out_dims. */
static ptq_status einsum_plan(ptq_ctx *ctx, const ptq_op_io *io, ptq_einsum_params *p, int64_t *out_dims,
                              int *out_ndim)
{
    const ptq_attr *eq = ptq_node_attr(io->node, "equation");
    if (!eq || eq->type != PTQ_ATTR_STRING)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "the equation attribute (a string) is missing");
    if (io->n_in < 1 || io->n_in > PTQ_EINSUM_MAX_INPUTS || io->n_out != 1)
        return ptq_op_fail(ctx, io, PTQ_ERR_UNSUPPORTED, "takes 1 to %d inputs and one output, got %d and %d",
                           PTQ_EINSUM_MAX_INPUTS, io->n_in, io->n_out);
    const char *s = eq->s;
    if (strlen(s) != eq->s_len)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "the equation holds a NUL byte");
    term in[PTQ_EINSUM_MAX_INPUTS], out;
    int n_terms = 0, explicit_out = 0;
    size_t at = 0;
    for (;;) {
        if (n_terms == io->n_in)
            return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "equation '%.80s' has more terms than the node's %d inputs",
                               s, io->n_in);
        PTQ_TRY_RET(parse_term(ctx, io, s, &at, &in[n_terms]));
        n_terms++;
        if (s[at] != ',')
            break;
        at++;
    }
    if (s[at] == '-') {
        if (s[at + 1] != '>')
            return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "equation '%.80s': '-' not followed by '>'", s);
        at += 2;
        PTQ_TRY_RET(parse_term(ctx, io, s, &at, &out));
        if (s[at])
            return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "equation '%.80s': '%c' after the output", s, s[at]);
        explicit_out = 1;
    }
    if (n_terms != io->n_in)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "equation '%.80s' has %d input terms for %d inputs", s, n_terms,
                           io->n_in);

    /* every letter's size, and the ellipsis's dims broadcast (right-aligned) over the inputs */
    int64_t letter_size[N_LETTERS], ell_dims[PTQ_MAX_DIMS];
    int letter_count[N_LETTERS] = {0}, ell_rank = 0, any_ell = 0;
    for (int l = 0; l < N_LETTERS; l++)
        letter_size[l] = -1;
    for (int i = 0; i < n_terms; i++) {
        const ptq_tensor *x = io->in[i];
        if (!x)
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "input %d is missing", i);
        if (x->dtype != io->in[0]->dtype)
            return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "input %d is %s but input 0 is %s", i,
                               ptq_dtype_name(x->dtype), ptq_dtype_name(io->in[0]->dtype));
        const int n_letters = in[i].n - in[i].has_ell, ell_n = x->ndim - n_letters;
        if (ell_n < 0 || (!in[i].has_ell && ell_n != 0))
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "equation '%.80s': term %d has %d letters%s for input %d of "
                               "rank %d", s, i, n_letters, in[i].has_ell ? " and '...'" : "", i, x->ndim);
        any_ell |= in[i].has_ell;
        for (int k = 0, d = 0; k < in[i].n; k++) {
            if (in[i].ids[k] == ELL) {
                for (int e = 0; e < ell_n; e++, d++) { /* dims [d, d + ell_n) right-aligned into ell_dims */
                    const int slot = PTQ_MAX_DIMS - ell_n + e;
                    const int64_t have = PTQ_MAX_DIMS - slot <= ell_rank ? ell_dims[slot] : 1, got = x->dims[d];
                    if (have != 1 && got != 1 && have != got)
                        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "equation '%.80s': input %d's '...' dim %lld "
                                           "does not broadcast with %lld", s, i, (long long)got, (long long)have);
                    ell_dims[slot] = have == 1 ? got : have;
                }
                ell_rank = ell_n > ell_rank ? ell_n : ell_rank;
                continue;
            }
            const int l = in[i].ids[k];
            if (letter_size[l] >= 0 && letter_size[l] != x->dims[d])
                return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "equation '%.80s': label '%c' is %lld in input %d but %lld "
                                   "before", s, l < 26 ? 'a' + l : 'A' + l - 26, (long long)x->dims[d], i,
                                   (long long)letter_size[l]);
            letter_size[l] = x->dims[d++];
            letter_count[l]++;
        }
    }
    if (!explicit_out) { /* numpy's implicit output: "...", then the letters seen once in ASCII order */
        out.n = 0;
        out.has_ell = any_ell;
        if (any_ell)
            out.ids[out.n++] = ELL;
        for (int pass = 0; pass < 2; pass++) /* 'A'..'Z' sort before 'a'..'z' */
            for (int l = pass ? 0 : 26; l < (pass ? 26 : N_LETTERS); l++)
                if (letter_count[l] == 1)
                    out.ids[out.n++] = l;
    }
    if (out.has_ell && !any_ell)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "equation '%.80s': the output has '...' but no input does", s);
    if (any_ell && !out.has_ell && ell_rank > 0)
        return ptq_op_unsupported(ctx, io, "equation '%.80s': the output leaves out the inputs' '...' (summing "
                                  "over it is not supported)", s);

    /* labels: the output's in order (the ellipsis's dims where it stands), then the summed letters */
    int label_of[N_LETTERS], used[N_LETTERS] = {0};
    memset(p, 0, sizeof *p);
    p->n_in = n_terms;
    const int ell_base = PTQ_MAX_DIMS - ell_rank;
    int ell_label = -1;
    for (int k = 0; k < out.n; k++) {
        const int l = out.ids[k];
        if (l == ELL) {
            ell_label = p->n_labels;
            for (int e = 0; e < ell_rank; e++)
                p->size[p->n_labels++] = ell_dims[ell_base + e];
            continue;
        }
        if (letter_size[l] < 0 || used[l])
            return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "equation '%.80s': output label '%c' is %s", s,
                               l < 26 ? 'a' + l : 'A' + l - 26, used[l] ? "repeated" : "in no input");
        used[l] = 1;
        label_of[l] = p->n_labels;
        p->size[p->n_labels++] = letter_size[l];
    }
    p->n_out = p->n_labels;
    if (p->n_out > PTQ_MAX_DIMS)
        return ptq_op_unsupported(ctx, io, "equation '%.80s': an output of rank %d (ptq runs at most %d)", s,
                                  p->n_out, PTQ_MAX_DIMS);
    for (int l = 0; l < N_LETTERS; l++)
        if (letter_size[l] >= 0 && !used[l]) {
            label_of[l] = p->n_labels;
            p->size[p->n_labels++] = letter_size[l];
        }
    for (int i = 0; i < n_terms; i++) {
        const ptq_tensor *x = io->in[i];
        const int ell_n = x->ndim - (in[i].n - in[i].has_ell);
        int64_t stride = 1, strides[PTQ_MAX_DIMS];
        for (int d = x->ndim - 1; d >= 0; d--) {
            strides[d] = stride;
            stride *= x->dims[d];
        }
        for (int k = 0, d = 0; k < in[i].n; k++) {
            if (in[i].ids[k] != ELL) {
                p->stride[i][label_of[in[i].ids[k]]] += strides[d++];
                continue;
            }
            for (int e = 0; e < ell_n; e++, d++) /* a broadcast dim of 1 keeps stride 0 */
                if (x->dims[d] != 1 || ell_dims[PTQ_MAX_DIMS - ell_n + e] == 1)
                    p->stride[i][ell_label + ell_rank - ell_n + e] += strides[d];
        }
    }
    int64_t work = 1; /* iterations of the kernel: every label's index */
    for (int l = 0; l < p->n_labels; l++)
        if (__builtin_mul_overflow(work, p->size[l] > 0 ? p->size[l] : 1, &work))
            return ptq_op_unsupported(ctx, io, "equation '%.80s': its labels' sizes multiply past 2^63", s);
    if (work > MAX_WORK)
        return ptq_op_unsupported(ctx, io, "equation '%.80s' takes %lld iterations (every label's index), more than "
                                  "ptq runs (2^40)", s, (long long)work);
    *out_ndim = p->n_out;
    for (int k = 0; k < p->n_out; k++)
        out_dims[k] = p->size[k];
    return PTQ_OK;
}

static ptq_status einsum_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_einsum_params p;
    ptq_cast_kind kind;
    if (io->n_in < 1 || !io->in[0])
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "input 0 is missing");
    if (!ptq_op_cast_kind(io->in[0]->dtype, &kind) ||
        (kind != PTQ_CAST_F32 && kind != PTQ_CAST_F64 && kind != PTQ_CAST_I32 && kind != PTQ_CAST_I64))
        return ptq_op_unsupported(ctx, io, "input 0 is %s; only float32, float64, int32 and int64 are supported",
                                  ptq_dtype_name(io->in[0]->dtype));
    PTQ_TRY_RET(einsum_plan(ctx, io, &p, io->out[0]->dims, &io->out[0]->ndim));
    io->out[0]->dtype = io->in[0]->dtype;
    return PTQ_OK;
}

static ptq_status einsum_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    ptq_einsum_params p;
    ptq_cast_kind kind;
    int64_t dims[PTQ_MAX_DIMS];
    int ndim;
    const void *in[PTQ_EINSUM_MAX_INPUTS];
    PTQ_TRY_RET(einsum_plan(ctx, io, &p, dims, &ndim));
    ptq_op_cast_kind(io->in[0]->dtype, &kind);
    for (int i = 0; i < p.n_in; i++)
        in[i] = io->in[i]->data;
    ptq_k_einsum_ref(&p, kind, in, io->out[0]->data);
    return PTQ_OK;
}

const ptq_op_def ptq_op_Einsum = {PTQ_OP_TRAITS(EINSUM), 12, 0, einsum_infer, einsum_run, NULL, 0, 0};

uint64_t ptq_op_einsum_work(const ptq_op_io *io)
{
    ptq_einsum_params p;
    ptq_ctx scratch; /* a failure is infer's to report */
    int64_t dims[PTQ_MAX_DIMS];
    int ndim;
    uint64_t work = 1;
    ptq_ctx_init(&scratch);
    if (einsum_plan(&scratch, io, &p, dims, &ndim) != PTQ_OK)
        return 0;
    for (int l = 0; l < p.n_labels; l++)
        work *= (uint64_t)p.size[l]; /* at most 2^40: einsum_plan checked */
    return work;
}
