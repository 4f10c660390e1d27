/* JSON numbers as cJSON prints them, without sscanf (reports/json_num.h). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/c_locale.h"
#include "reports/json_num.h"

int ptq_json_num_text(double x, char buf[26])
{
    if (isnan(x) || isinf(x))
        return snprintf(buf, 26, "null");
    /* the C locale's '.', whatever locale the program set (a ',' makes invalid JSON) */
    int len = ptq_snprintf_c(buf, 26, "%1.15g", x);
    const double back = ptq_strtod_c(buf, NULL), top = fabs(back) > fabs(x) ? fabs(back) : fabs(x);
    if (!(fabs(back - x) <= top * DBL_EPSILON))
        len = ptq_snprintf_c(buf, 26, "%1.17g", x);
    return len;
}

cJSON *ptq_json_add_num(cJSON *o, const char *key, double x)
{
    char buf[26];
    ptq_json_num_text(x, buf);
    return cJSON_AddRawToObject(o, key, buf);
}
