/* Which activations a GPU run keeps channels last ([N, H, W, C] in memory):
 * under TF32, cuDNN's tensor-core convolutions read and write that layout,
 * and would otherwise convert every input and output around each call. */
#ifndef PTQ_RUNTIME_LAYOUT_H
#define PTQ_RUNTIME_LAYOUT_H

#include "runtime/op.h"

/* nhwc [g->n_values] gets 1 for each value a run may store channels last,
 * 0 for the rest; returns how many got 1. ops [g->n_nodes]: the nodes'
 * resolved entries. A value qualifies when it is a float32 4-D activation
 * with its dims after the batch known (not a graph input, output or
 * constant), made by a Conv, an elementwise activation (Relu, Clip,
 * LeakyRelu, Sigmoid, HardSigmoid, HardSwish, Tanh), a same-shape Add or a
 * 2-D MaxPool / AveragePool, and read only as the data input of a Conv,
 * MaxPool, AveragePool, GlobalAveragePool or activation, or by a
 * same-shape Add; an activation, Add or pool's data inputs and output then
 * all qualify or none does. So no
 * other op, no host copy and no caller ever sees one, and the per-tensor
 * observers and rounding that read it do not depend on the order. A Conv
 * may read one layout and write the other. Covered by tests/test_layout.c. */
int ptq_layout_nhwc(const ptq_graph *g, const ptq_op_def *const *ops, unsigned char *nhwc);

/* How op id takes channels-last values, the one list the plan above and
 * the GPU backend both follow: PTQ_LAYOUT_READS, its data input (input 0)
 * in either layout (Conv, whose output may be either too;
 * GlobalAveragePool); PTQ_LAYOUT_TIED, its data inputs and output in one
 * layout (the elementwise activations, MaxPool and AveragePool without
 * indices, and Add when its inputs have one shape); PTQ_LAYOUT_NONE, never. */
typedef enum { PTQ_LAYOUT_NONE = 0, PTQ_LAYOUT_READS, PTQ_LAYOUT_TIED } ptq_layout_take;
ptq_layout_take ptq_layout_takes(ptq_op_id id);

#endif
