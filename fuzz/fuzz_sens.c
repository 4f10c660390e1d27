/* libFuzzer harness: the sensitivity report reader `ptq plan --budget
 * --sensitivity` uses (ptq_sens_read). scripts/fuzz.sh sens SECONDS. */
#include "fuzz_common.h"
#include "ptq/sensitivity.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ptq_ctx ctx;
    ptq_sens_summary s;
    memset(&s, 0, sizeof s);
    char *text = fuzz_text(data, size);
    if (!text)
        return 0;
    fuzz_begin(data, size, NULL, NULL, 0, &ctx);
    ptq_sens_read(&ctx, text, &s);
    ptq_sens_summary_free(&s);
    free(text);
    return 0;
}
