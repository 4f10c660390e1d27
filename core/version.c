/* ptq_version (include/ptq/version.h, generated from version.h.in).
 * Covered by tests/test_status.c. */
#include "ptq/version.h"

const char *ptq_version(void)
{
    return PTQ_VERSION_STRING;
}
