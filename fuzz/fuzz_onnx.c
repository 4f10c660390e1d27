/* libFuzzer harness: the ONNX reader (ptq_graph_load_onnx_bytes) and shape
 * inference on what it accepts. scripts/fuzz.sh onnx SECONDS. */
#include "fuzz_common.h"
#include "ptq/graph.h"
#include "ptq/runtime.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ptq_ctx ctx;
    ptq_graph *g = NULL;
    fuzz_begin(data, size, NULL, NULL, 0, &ctx);
    if (ptq_graph_load_onnx_bytes(&ctx, data, size, NULL, &g) == PTQ_OK)
        ptq_graph_infer_shapes(&ctx, g, 1);
    ptq_graph_free(g);
    return 0;
}
