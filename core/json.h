/* JSON text that users hand to ptq (plans, Keras model_config), read with
 * the two checks cJSON leaves out. In core/json.c; covered by
 * tests/test_plan.c, tests/badinput_test.py and tests/keras_badinput_test.py. */
#ifndef PTQ_CORE_JSON_H
#define PTQ_CORE_JSON_H

#include <cjson/cJSON.h>

#include "ptq/status.h"

/* *out = the one JSON value in text (free with cJSON_Delete). Refused with
 * PTQ_ERR_FORMAT "<what>: ...": text that is not JSON, anything but white
 * space after the value, and an object holding a key twice anywhere (cJSON
 * keeps both and finds the first; Python and Keras take the last), named by
 * the key and the object's path ("config.layers[1].config", in 'rescaling':
 * the nearest "name" on the way), and a string holding \u0000 (cJSON would
 * cut it there, "a\u0000b" reading as "a"). */
ptq_status ptq_json_parse(ptq_ctx *ctx, const char *text, const char *what, cJSON **out);

/* Adds s (NULL as "") to obj under key as valid UTF-8: each byte that starts
 * no UTF-8 character is U+FFFD (ptq_utf8_dup), so a path from the command
 * line, which may hold any bytes, cannot make ptq's JSON unreadable
 * (RFC 8259 JSON is UTF-8). The added item, or NULL when out of memory. */
cJSON *ptq_json_add_text(cJSON *obj, const char *key, const char *s);

#endif
