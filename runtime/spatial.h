/* Window geometry shared by Conv, ConvTranspose and the pooling ops:
 * kernel_shape, strides, dilations, pads / auto_pad, ceil_mode,
 * output_padding and output_shape resolved into output sizes and explicit
 * pads, following ONNX's shape rules (onnx/defs/nn/defs.cc and the
 * reference pool_common, op_conv_transpose). Covered by tests/test_ops_dense.c. */
#ifndef PTQ_RUNTIME_SPATIAL_H
#define PTQ_RUNTIME_SPATIAL_H

#include "runtime/op.h"

/* One to three spatial axes, right-aligned in PTQ_SPATIAL slots as the
 * kernels expect (an N-D input uses slots PTQ_SPATIAL-N..PTQ_SPATIAL-1; the
 * leading slots are size 1, kernel 1, stride 1, dilation 1, pad 0). */
typedef struct ptq_window {
    int n_spatial;
    int64_t in[PTQ_SPATIAL];
    int64_t out[PTQ_SPATIAL];
    int64_t k[PTQ_SPATIAL];
    int64_t stride[PTQ_SPATIAL];
    int64_t dil[PTQ_SPATIAL];
    int64_t pad_lo[PTQ_SPATIAL];
    int64_t pad_hi[PTQ_SPATIAL];
} ptq_window;

enum {
    PTQ_WINDOW_CEIL_MODE = 1u << 0 /* the op has a ceil_mode attribute (pooling) */
};

/* Resolves io's node's window attributes over x: [N, C, spatial...] (rank
 * 3..5). kernel: [rank-2] kernel sizes taken from the weights (Conv) or NULL
 * to require the kernel_shape attribute (pooling); when both are given they
 * must agree. Fails naming the node on bad attributes or an empty output. */
ptq_status ptq_window_parse(ptq_ctx *ctx, const ptq_op_io *io, const ptq_tensor *x, const int64_t *kernel,
                            unsigned flags, ptq_window *w);

/* The most work one image may take in one window node: PTQ_WINDOW_WORK_MAX taps (a convolution's
 * multiply-adds, a pool's window reads), 2^44: a 3x3 convolution of 64 channels on a 4K frame is some 2^38,
 * a 3x3x3 one of 32 channels on a 512^3 volume 2^42; the kernels' tap counts and offsets stay far from
 * int64's range under it. */
#define PTQ_WINDOW_WORK_LOG2 44
#define PTQ_WINDOW_WORK_MAX ((int64_t)1 << PTQ_WINDOW_WORK_LOG2)

/* PTQ_ERR_UNSUPPORTED naming the node, its kernel and output when one image's work on w passes
 * PTQ_WINDOW_WORK_MAX: channels x w's output positions x fan x w's kernel positions, fan the input
 * channels each output reads (a convolution's per group, 1 for a pool). */
ptq_status ptq_window_check_work(ptq_ctx *ctx, const ptq_op_io *io, const ptq_window *w, int64_t channels,
                                 int64_t fan);

/* Conv (transposed 0: W [M, C/group, k...]) and ConvTranspose (1: W [C,
 * M/group, k...]) over X [N, C, spatial...] with the optional bias B [M]:
 * no attribute ptq does not know (one it ignored would change the result),
 * float32 inputs, the window, group and channel counts checked, naming the
 * node; the kernels' parameter block into p (for ConvTranspose in and out
 * are its input's and output's sizes, ptq_k_conv_transpose_ref). */
ptq_status ptq_conv_parse(ptq_ctx *ctx, const ptq_op_io *io, int transposed, ptq_conv_params *p);

/* Sets y to float32 [n, c, out...]: out holds PTQ_SPATIAL right-aligned
 * sizes of which the last n_spatial are used. Fails naming the node when
 * the element count does not fit int64. */
ptq_status ptq_window_output(ptq_ctx *ctx, const ptq_op_io *io, int64_t n, int64_t c, int n_spatial,
                             const int64_t *out, ptq_tensor *y);

/* Copies w's geometry into a kernel parameter block's arrays (each [PTQ_SPATIAL]). */
void ptq_window_export(const ptq_window *w, int64_t *in, int64_t *out, int64_t *k, int64_t *stride, int64_t *dil,
                       int64_t *pad_lo, int64_t *pad_hi);

#endif
