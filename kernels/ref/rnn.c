/* Reference ONNX RNN, GRU and LSTM (opset 7 and 14's equations, kernels/kernels.h's ptq_rnn_params): one sample
 * at a time through its own length, each gate's input summed in double over X W^T + H R^T + Wb + Rb (+ P (.) C).
 * The CPU path too; tests/ops_rnn_test.py against onnxruntime and the ONNX conformance run cover it. */
#include <math.h>
#include <string.h>

#include "kernels/kernels.h"

int ptq_rnn_gates(ptq_rnn_cell cell)
{
    return cell == PTQ_RNN_CELL_LSTM ? 4 : cell == PTQ_RNN_CELL_GRU ? 3 : 1;
}

static float act(ptq_rnn_act a, float clip, float v)
{
    if (clip > 0)
        v = v < -clip ? -clip : v > clip ? clip : v;
    switch (a) {
    case PTQ_RNN_ACT_SIGMOID:
        return 1.0f / (1.0f + expf(-v));
    case PTQ_RNN_ACT_TANH:
        return tanhf(v);
    case PTQ_RNN_ACT_RELU:
        return v > 0 ? v : 0.0f;
    }
    return v;
}

/* The dot product of row [n] and v [n], in double, plus bias. */
static double dot(const float *row, const float *v, int64_t n, double bias)
{
    double s = bias;
    for (int64_t k = 0; k < n; k++)
        s += (double)row[k] * v[k];
    return s;
}

/* Element offsets of X at (t, b), Y at (t, d, b) and a state at (d, b) under p's layout. */
static int64_t x_at(const ptq_rnn_params *p, int64_t t, int64_t b)
{
    return (p->layout ? b * p->seq + t : t * p->batch + b) * p->input;
}
static int64_t y_at(const ptq_rnn_params *p, int64_t t, int d, int64_t b)
{
    return (p->layout ? (b * p->seq + t) * p->n_dir + d : (t * p->n_dir + d) * p->batch + b) * p->hidden;
}
static int64_t state_at(const ptq_rnn_params *p, int d, int64_t b)
{
    return (p->layout ? b * p->n_dir + d : d * p->batch + b) * p->hidden;
}

/* One step of direction d for one sample: x [input], h and c [hidden] updated in place; gates [gates*hidden]
 * and rh [hidden] scratch. */
static void step(const ptq_rnn_params *p, int d, const float *x, const float *w, const float *r, const float *b,
                 const float *peep, float *h, float *c, float *gates, float *rh)
{
    const int64_t H = p->hidden, G = ptq_rnn_gates(p->cell);
    const ptq_rnn_act *a = p->act[d];
    for (int64_t j = 0; j < G * H; j++) {
        const double bias = b ? (double)b[j] + b[G * H + j] : 0.0;
        const int gru_h = p->cell == PTQ_RNN_CELL_GRU && j >= 2 * H; /* R's part waits for r */
        gates[j] = (float)(dot(w + j * p->input, x, p->input, bias) +
                           (gru_h ? 0.0 : dot(r + j * H, h, H, 0.0)));
    }
    if (p->cell == PTQ_RNN_CELL_RNN) {
        for (int64_t j = 0; j < H; j++)
            h[j] = act(a[0], p->clip, gates[j]);
        return;
    }
    if (p->cell == PTQ_RNN_CELL_GRU) {
        float *z = gates, *rg = gates + H, *hh = gates + 2 * H;
        for (int64_t j = 0; j < H; j++) {
            z[j] = act(a[0], p->clip, z[j]);
            rg[j] = act(a[0], p->clip, rg[j]);
            rh[j] = rg[j] * h[j];
        }
        for (int64_t j = 0; j < H; j++) {
            const float *row = r + (2 * H + j) * H;
            const double rb = b ? b[5 * H + j] : 0.0;
            /* the biases of h's gate: Wb_h is in hh already with Rb_h; split them for linear_before_reset */
            if (p->linear_before_reset)
                hh[j] = (float)((double)hh[j] - rb + rg[j] * dot(row, h, H, rb));
            else
                hh[j] = (float)((double)hh[j] + dot(row, rh, H, 0.0));
        }
        for (int64_t j = 0; j < H; j++)
            h[j] = (1.0f - z[j]) * act(a[1], p->clip, hh[j]) + z[j] * h[j];
        return;
    }
    float *gi = gates, *go = gates + H, *gf = gates + 2 * H, *gc = gates + 3 * H;
    for (int64_t j = 0; j < H; j++) {
        const float pi = peep ? peep[j] : 0.0f, pf = peep ? peep[2 * H + j] : 0.0f;
        const float i = act(a[0], p->clip, gi[j] + pi * c[j]);
        const float f = p->input_forget ? 1.0f - i : act(a[0], p->clip, gf[j] + pf * c[j]);
        c[j] = f * c[j] + i * act(a[1], p->clip, gc[j]);
        const float po = peep ? peep[H + j] : 0.0f;
        const float o = act(a[0], p->clip, go[j] + po * c[j]);
        h[j] = o * act(a[2], 0.0f, c[j]);
    }
}

void ptq_k_rnn_ref(const ptq_rnn_params *p, const float *x, const float *w, const float *r, const float *b,
                   const int32_t *lens, const float *h0, const float *c0, const float *peep, float *y, float *y_h,
                   float *y_c, float *work)
{
    const int64_t H = p->hidden, G = ptq_rnn_gates(p->cell);
    const size_t state_bytes = (size_t)H * sizeof(float);
    float *gates = work, *h = work + G * H, *c = h + H, *rh = c + H;
    if (y)
        memset(y, 0, (size_t)(p->seq * p->n_dir * p->batch) * state_bytes);
    for (int d = 0; d < p->n_dir; d++) {
        const int back = p->n_dir == 2 ? d == 1 : p->reverse;
        const float *wd = w + d * G * H * p->input, *rd = r + d * G * H * H;
        const float *bd = b ? b + d * 2 * G * H : NULL, *pd = peep ? peep + d * 3 * H : NULL;
        for (int64_t n = 0; n < p->batch; n++) {
            const int64_t len = lens ? lens[n] : p->seq, at = state_at(p, d, n);
            if (h0)
                memcpy(h, h0 + at, state_bytes);
            else
                memset(h, 0, state_bytes);
            if (c0)
                memcpy(c, c0 + at, state_bytes);
            else
                memset(c, 0, state_bytes);
            for (int64_t s = 0; s < len; s++) {
                const int64_t t = back ? len - 1 - s : s;
                step(p, d, x + x_at(p, t, n), wd, rd, bd, pd, h, c, gates, rh);
                if (y)
                    memcpy(y + y_at(p, t, d, n), h, state_bytes);
            }
            if (len == 0) { /* onnxruntime's states of an empty sequence */
                memset(h, 0, state_bytes);
                memset(c, 0, state_bytes);
            }
            if (y_h)
                memcpy(y_h + at, h, state_bytes);
            if (y_c && p->cell == PTQ_RNN_CELL_LSTM)
                memcpy(y_c + at, c, state_bytes);
        }
    }
}
