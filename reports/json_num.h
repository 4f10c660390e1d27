/* A JSON number as cJSON_Print writes it, made without its sscanf (about a
 * microsecond a number: the per-class tables of a 1000-class report hold
 * some 15,000). Not ptq_export_format_double (the shortest text that reads
 * back): the reports keep the bytes they had. Covered by tests/test_validate_report.c (against cJSON's
 * own printing) and the report tests. */
#ifndef PTQ_REPORTS_JSON_NUM_H
#define PTQ_REPORTS_JSON_NUM_H

#include <cjson/cJSON.h>

/* The text cJSON 1.7.15's print_number gives x ("null" for NaN and +-Inf,
 * else %1.15g where it reads back within DBL_EPSILON, else %1.17g) into buf
 * (at least 26 bytes); its length. */
int ptq_json_num_text(double x, char buf[26]);
/* As cJSON_AddNumberToObject, printed as above (a raw item); NULL when out of memory. */
cJSON *ptq_json_add_num(cJSON *o, const char *key, double x);

#endif
