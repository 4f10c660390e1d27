/* ONNX RNN, GRU and LSTM (opset 7 on; layout from 14) on float32 through kernels/ref/rnn.c, which is their CPU
 * path too (the CUDA backend hands them to the CPU): direction, hidden_size, layout, clip, GRU's
 * linear_before_reset, LSTM's input_forget and peepholes, sequence_lens, initial states, any output omitted.
 * Activations Sigmoid, Tanh and Relu; the others ONNX lists (and activation_alpha / beta) are refused naming the
 * node. Covered by tests/ops_rnn_test.py (against onnxruntime), tests/badinput_test.py and the ONNX conformance
 * run. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/op_util.h"

/* The node's cell, from its op id. */
static ptq_rnn_cell cell_of(const ptq_op_io *io)
{
    const ptq_op_def *op = ptq_op_of(io);
    const ptq_op_id id = op ? op->traits->id : PTQ_OP_RNN;
    return id == PTQ_OP_LSTM ? PTQ_RNN_CELL_LSTM : id == PTQ_OP_GRU ? PTQ_RNN_CELL_GRU : PTQ_RNN_CELL_RNN;
}

/* The activations attribute into p->act (the cell's defaults when absent). */
static ptq_status read_activations(ptq_ctx *ctx, const ptq_op_io *io, ptq_rnn_params *p)
{
    static const char *const names[] = {"Sigmoid", "Tanh", "Relu"};
    const int per_dir = p->cell == PTQ_RNN_CELL_LSTM ? 3 : p->cell == PTQ_RNN_CELL_GRU ? 2 : 1;
    const ptq_attr *a = ptq_node_attr(io->node, "activations");
    for (int d = 0; d < 2; d++) {
        p->act[d][0] = p->cell == PTQ_RNN_CELL_RNN ? PTQ_RNN_ACT_TANH : PTQ_RNN_ACT_SIGMOID;
        p->act[d][1] = p->act[d][2] = PTQ_RNN_ACT_TANH;
    }
    if (ptq_node_attr(io->node, "activation_alpha") || ptq_node_attr(io->node, "activation_beta"))
        return ptq_op_unsupported(ctx, io, "activation_alpha and activation_beta are not supported (only the "
                                  "activations Sigmoid, Tanh and Relu)");
    if (!a)
        return PTQ_OK;
    if (a->type != PTQ_ATTR_STRINGS || a->n != (int64_t)per_dir * p->n_dir)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "activations must list %d names (%d per direction), got %lld",
                           per_dir * p->n_dir, per_dir, a->type == PTQ_ATTR_STRINGS ? (long long)a->n : -1LL);
    for (int k = 0; k < per_dir * p->n_dir; k++) {
        int found = -1;
        for (int m = 0; m < 3; m++)
            if (strcmp(a->strings[k], names[m]) == 0)
                found = m;
        if (found < 0)
            return ptq_op_unsupported(ctx, io, "activation %d '%.64s' is not supported (only Sigmoid, Tanh and Relu)",
                                      k, a->strings[k]);
        p->act[k / per_dir][k % per_dir] = (ptq_rnn_act)found;
    }
    return PTQ_OK;
}

/* Input i is absent or a float32 tensor of rank ndim with dims want; SHAPE naming it. */
static ptq_status need_dims(ptq_ctx *ctx, const ptq_op_io *io, int i, const char *name, int ndim,
                            const int64_t *want)
{
    const ptq_tensor *t = i < io->n_in ? io->in[i] : NULL;
    if (!t)
        return PTQ_OK;
    if (t->dtype != PTQ_DT_FLOAT)
        return ptq_op_unsupported(ctx, io, "%s (input %d) is %s; only float32 is supported", name, i,
                                  ptq_dtype_name(t->dtype));
    int ok = t->ndim == ndim;
    for (int d = 0; ok && d < ndim; d++)
        ok = t->dims[d] == want[d];
    if (!ok) {
        char got[96], exp[96];
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "%s (input %d) has shape [%s], expected [%s]", name, i,
                           ptq_dims_str(t->dims, t->ndim, got, sizeof got), ptq_dims_str(want, ndim, exp, sizeof exp));
    }
    return PTQ_OK;
}

/* Validates the node's attributes and inputs into *p (everything but the data). */
static ptq_status rnn_params(ptq_ctx *ctx, const ptq_op_io *io, ptq_rnn_params *p)
{
    ptq_status st;
    memset(p, 0, sizeof *p);
    p->cell = cell_of(io);
    const int lstm = p->cell == PTQ_RNN_CELL_LSTM, max_in = lstm ? 8 : 6, max_out = lstm ? 3 : 2;
    const int64_t G = ptq_rnn_gates(p->cell);
    if (io->n_in < 3 || io->n_in > max_in || io->n_out > max_out)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "takes 3 to %d inputs and at most %d outputs, got %d and %d",
                           max_in, max_out, io->n_in, io->n_out);
    for (int i = 0; i < 3; i++)
        if ((st = ptq_op_need_float(ctx, io, i)) != PTQ_OK)
            return st;
    const ptq_attr *dir = ptq_node_attr(io->node, "direction");
    const char *dir_s = dir && dir->type == PTQ_ATTR_STRING ? dir->s : dir ? "(not a string)" : "forward";
    if (strcmp(dir_s, "forward") != 0 && strcmp(dir_s, "reverse") != 0 && strcmp(dir_s, "bidirectional") != 0)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "direction must be forward, reverse or bidirectional, got "
                           "'%.64s'", dir_s);
    p->n_dir = strcmp(dir_s, "bidirectional") == 0 ? 2 : 1;
    p->reverse = strcmp(dir_s, "reverse") == 0;
    p->layout = (int)ptq_node_attr_int(io->node, "layout", 0);
    if (ptq_node_attr_int(io->node, "layout", 0) != p->layout || (p->layout != 0 && p->layout != 1))
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "layout must be 0 or 1, got %lld",
                           (long long)ptq_node_attr_int(io->node, "layout", 0));
    const int64_t lbr = ptq_node_attr_int(io->node, "linear_before_reset", 0);
    const int64_t forget = ptq_node_attr_int(io->node, "input_forget", 0);
    if (lbr != 0 && lbr != 1)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "linear_before_reset must be 0 or 1, got %lld", (long long)lbr);
    if (forget != 0 && forget != 1)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "input_forget must be 0 or 1, got %lld", (long long)forget);
    p->linear_before_reset = (int)lbr;
    p->input_forget = (int)forget;
    const ptq_attr *clip = ptq_node_attr(io->node, "clip");
    if (clip && !(clip->type == PTQ_ATTR_FLOAT && clip->f > 0 && isfinite(clip->f)))
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "clip must be a positive finite float, got %g",
                           clip->type == PTQ_ATTR_FLOAT ? (double)clip->f : NAN);
    p->clip = clip ? clip->f : 0.0f;
    PTQ_TRY_RET(read_activations(ctx, io, p));

    const ptq_tensor *x = io->in[0], *w = io->in[1], *r = io->in[2];
    if (x->ndim != 3 || w->ndim != 3 || r->ndim != 3)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "X, W and R must have rank 3, got %d, %d and %d", x->ndim,
                           w->ndim, r->ndim);
    p->seq = x->dims[p->layout ? 1 : 0];
    p->batch = x->dims[p->layout ? 0 : 1];
    p->input = x->dims[2];
    const ptq_attr *hs = ptq_node_attr(io->node, "hidden_size");
    p->hidden = hs && hs->type == PTQ_ATTR_INT ? hs->i : r->dims[2];
    if (p->hidden < 1)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "hidden_size must be at least 1, got %lld", (long long)p->hidden);
    if (p->hidden != r->dims[2] || p->hidden > INT64_MAX / (2 * G))
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "hidden_size %lld does not match R's last dim %lld",
                           (long long)p->hidden, (long long)r->dims[2]);
    const int64_t H = p->hidden, n_dir = p->n_dir;
    const int64_t w_dims[3] = {n_dir, G * H, p->input}, r_dims[3] = {n_dir, G * H, H}, b_dims[2] = {n_dir, 2 * G * H};
    const int64_t seq_dims[1] = {p->batch}, p_dims[2] = {n_dir, 3 * H};
    const int64_t s_dims[3] = {p->layout ? p->batch : n_dir, p->layout ? n_dir : p->batch, H};
    PTQ_TRY_RET(need_dims(ctx, io, 1, "W", 3, w_dims));
    PTQ_TRY_RET(need_dims(ctx, io, 2, "R", 3, r_dims));
    PTQ_TRY_RET(need_dims(ctx, io, 3, "B", 2, b_dims));
    PTQ_TRY_RET(need_dims(ctx, io, 5, "initial_h", 3, s_dims));
    if (lstm) {
        PTQ_TRY_RET(need_dims(ctx, io, 6, "initial_c", 3, s_dims));
        PTQ_TRY_RET(need_dims(ctx, io, 7, "P", 2, p_dims));
    }
    const ptq_tensor *lens = io->n_in > 4 ? io->in[4] : NULL;
    if (lens && lens->dtype != PTQ_DT_INT32)
        return ptq_op_unsupported(ctx, io, "sequence_lens (input 4) is %s; ONNX gives int32",
                                  ptq_dtype_name(lens->dtype));
    if (lens && (lens->ndim != 1 || lens->dims[0] != seq_dims[0]))
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "sequence_lens (input 4) must be [%lld], one length per sample",
                           (long long)p->batch);
    return PTQ_OK;
}

static ptq_status rnn_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_rnn_params p;
    PTQ_TRY_RET(rnn_params(ctx, io, &p));
    const int64_t n_dir = p.n_dir;
    const int64_t y_dims[2][4] = {{p.seq, n_dir, p.batch, p.hidden}, {p.batch, p.seq, n_dir, p.hidden}};
    const int64_t s_dims[2][3] = {{n_dir, p.batch, p.hidden}, {p.batch, n_dir, p.hidden}};
    for (int i = 0; i < io->n_out; i++) {
        ptq_tensor *t = io->out[i];
        t->dtype = PTQ_DT_FLOAT;
        t->ndim = i == 0 ? 4 : 3;
        memcpy(t->dims, i == 0 ? y_dims[p.layout] : s_dims[p.layout], (size_t)t->ndim * sizeof t->dims[0]);
    }
    return PTQ_OK;
}

static ptq_status rnn_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    ptq_rnn_params p;
    PTQ_TRY_RET(rnn_params(ctx, io, &p));
    const ptq_tensor *lens = io->n_in > 4 ? io->in[4] : NULL;
    const int32_t *lv = lens ? lens->data : NULL;
    for (int64_t n = 0; lv && n < p.batch; n++)
        if (lv[n] < 0 || lv[n] > p.seq)
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "sequence_lens[%lld] is %d, outside [0, %lld] (X's sequence "
                               "length)", (long long)n, (int)lv[n], (long long)p.seq);
    const int64_t G = ptq_rnn_gates(p.cell);
    float *work = malloc((size_t)((G + 3) * p.hidden) * sizeof(float));
    if (!work)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "node '%s' (%s): no memory for a %lld-unit state", io->node->name,
                        io->node->op_type, (long long)p.hidden);
#define IN(i) (io->n_in > (i) && io->in[i] ? (const float *)io->in[i]->data : NULL)
#define OUT(i) (io->n_out > (i) && io->out[i] ? (float *)io->out[i]->data : NULL)
    ptq_k_rnn_ref(&p, IN(0), IN(1), IN(2), IN(3), lv, IN(5), IN(6), IN(7), OUT(0), OUT(1), OUT(2), work);
#undef IN
#undef OUT
    free(work);
    return PTQ_OK;
}

const ptq_op_def ptq_op_RNN = {PTQ_OP_TRAITS(RNN), 7, 0, rnn_infer, rnn_run, NULL, 0, 0};
const ptq_op_def ptq_op_GRU = {PTQ_OP_TRAITS(GRU), 7, 0, rnn_infer, rnn_run, NULL, 0, 0};
const ptq_op_def ptq_op_LSTM = {PTQ_OP_TRAITS(LSTM), 7, 0, rnn_infer, rnn_run, NULL, 0, 0};
