/* libFuzzer harness: the plan JSON reader (ptq_plan_from_json).
 * scripts/fuzz.sh plan SECONDS. */
#include "fuzz_common.h"
#include "ptq/plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ptq_ctx ctx;
    ptq_plan *p = NULL;
    char *text = fuzz_text(data, size);
    if (!text)
        return 0;
    fuzz_begin(data, size, NULL, NULL, 0, &ctx);
    ptq_plan_from_json(&ctx, text, &p);
    ptq_plan_free(p);
    free(text);
    return 0;
}
