/* Tiny test harness: CHECK records a failure and goes on; test_done()
 * returns the exit code (0 pass, 1 fail). Skips exit with PTQ_TEST_SKIP. */
#ifndef PTQ_TESTLIB_H
#define PTQ_TESTLIB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ptq/graph.h"
#include "runtime/op.h"

#define PTQ_TEST_SKIP 77

extern int ptq_test_failures;
extern int ptq_test_checks;

#define CHECK(cond)                                                                 \
    do {                                                                            \
        ptq_test_checks++;                                                          \
        if (!(cond)) {                                                              \
            ptq_test_failures++;                                                    \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                           \
    } while (0)

#define CHECK_MSG(cond, ...)                                                        \
    do {                                                                            \
        ptq_test_checks++;                                                          \
        if (!(cond)) {                                                              \
            ptq_test_failures++;                                                    \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                           \
            fprintf(stderr, "\n");                                                  \
        }                                                                           \
    } while (0)

/* Deterministic uniform floats in [lo, hi) (xorshift64*), and the raw 64-bit draws behind them. */
void test_rand_seed(uint64_t seed);
uint64_t test_rand_u64(void);
float test_rand_uniform(float lo, float hi);
void test_fill_uniform(float *x, int64_t n, float lo, float hi);

/* x: [n]: uniform in [-amax, amax), with rate `special` of them replaced by
 * +0, -0, NaN, +/-Inf, subnormals or the largest value below amax (-FLT_MAX
 * when amax > 1e38): the observer tests' data. */
void test_fill_specials(float *x, int64_t n, float amax, float special);

/* max |a-b| / (atol + rtol*|ref|) over n elements: <= 1 passes. Prints the
 * worst element under label when it fails. Returns 1 on pass. */
int test_close(const char *label, const float *got, const float *ref, int64_t n, float rtol, float atol);

/* Prints "<name>: N checks, M failed" and returns the exit code. */
int test_done(const char *name);
/* models/fmnist_resnet.onnx under $PTQ_SOURCE_DIR (or .), loaded with its
 * shapes inferred at batch 1; NULL after printing why, prefixed by test. */
ptq_graph *test_load_demo_model(const char *test);
/* models/FILE of the source tree, loaded with its shapes at batch 1 (NULL, the reason printed, if it fails). */
ptq_graph *test_load_model(const char *test, const char *file);
/* Occurrences of needle in hay (overlapping ones too); whether hay holds needle in any case. */
int64_t test_count_str(const char *hay, const char *needle);
int test_contains_ci(const char *hay, const char *needle);
/* Removes path and, for a folder, everything below it (symlinks not followed). */
void test_remove_tree(const char *path);
/* Writes n bytes of data to path (a failed CHECK when it cannot). */
void test_write_bytes(const char *path, const void *data, size_t n);
/* The node of g called name (its index into *index when index is not NULL), or NULL. */
const ptq_node *test_node_named(const ptq_graph *g, const char *name, int *index);

/* One op invocation built by hand (tests/test_ops_*.c): a graph at an
 * opset, the node "node_under_test" with attrs, its inputs borrowed host
 * tensors, its outputs allocated by test_case_run. */
#define TEST_CASE_MAX_IN 72 /* Concat of 64+ inputs (DenseNet has 25 to 49) */
#define TEST_CASE_MAX_OUT 8
typedef struct test_op_case {
    ptq_graph graph;
    ptq_node node;
    ptq_op_io io;
    ptq_tensor in[TEST_CASE_MAX_IN];
    ptq_tensor out[TEST_CASE_MAX_OUT];
    const ptq_tensor *in_ptr[TEST_CASE_MAX_IN];
    ptq_tensor *out_ptr[TEST_CASE_MAX_OUT];
    ptq_ctx ctx;
} test_op_case;

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

void test_case_init(test_op_case *c, const char *op_type, int64_t opset, const ptq_attr *attrs, int n_attrs,
                    int n_in, int n_out);
/* in[i] as a host tensor of dtype over data (borrowed); dims [ndim]. */
void test_case_input(test_op_case *c, int i, ptq_dtype dt, const void *data, int ndim, const int64_t *dims);
/* infer, allocate the outputs, run (fast: run_cpu when there is one). */
ptq_status test_case_run(test_op_case *c, const ptq_op_def *op, int fast);
/* Frees the outputs test_case_run allocated. */
void test_case_free(test_op_case *c);
/* t has rank ndim and dims [ndim]. */
int test_dims_are(const ptq_tensor *t, int ndim, const int64_t *dims);
/* st is want and the message names the node. */
int test_fails_naming_node(const test_op_case *c, ptq_status st, ptq_status want);

#endif
