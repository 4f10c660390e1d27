/* ptq_fail records the code, the formatted message and a short source
 * location; status names are distinct; ptq_version matches the header. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptq/status.h"
#include "ptq/tensor.h"
#include "ptq/version.h"
#include "testlib.h"

int main(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_status st = ptq_fail(&ctx, PTQ_ERR_IO, "cannot open %s", "/nope/model.onnx");
    CHECK(st == PTQ_ERR_IO && ctx.code == PTQ_ERR_IO);
    CHECK(strcmp(ctx.msg, "cannot open /nope/model.onnx") == 0);
    CHECK_MSG(strstr(ctx.where, "test_status.c:") != NULL, "where: %s", ctx.where);
    CHECK(ptq_fail(NULL, PTQ_ERR_DATA, "no context") == PTQ_ERR_DATA);
    for (int a = PTQ_OK; a <= PTQ_ERR_INTERNAL; a++)
        for (int b = a + 1; b <= PTQ_ERR_INTERNAL; b++)
            CHECK(strcmp(ptq_status_name((ptq_status)a), ptq_status_name((ptq_status)b)) != 0);

    ptq_tensor t = {PTQ_DT_FLOAT, 3, {2, 3, 4}, NULL, PTQ_MEM_HOST, 0};
    CHECK(ptq_tensor_numel(&t) == 24 && ptq_tensor_bytes(&t) == 96);
    t.ndim = 0;
    CHECK(ptq_tensor_numel(&t) == 1);
    CHECK(ptq_dtype_size(PTQ_DT_INT64) == 8 && ptq_dtype_size(PTQ_DT_FLOAT8E4M3FN) == 1 &&
          ptq_dtype_size(PTQ_DT_FLOAT16) == 2 && ptq_dtype_size(PTQ_DT_STRING) == 0);
    char buf[64];
    int64_t dims[] = {-1, 3, 224, 224};
    CHECK(strcmp(ptq_dims_str(dims, 4, buf, sizeof buf), "?x3x224x224") == 0);
    CHECK(strcmp(ptq_dims_str(dims, 0, buf, sizeof buf), "scalar") == 0);
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", PTQ_VERSION_MAJOR, PTQ_VERSION_MINOR, PTQ_VERSION_PATCH);
    CHECK_MSG(strcmp(ptq_version(), PTQ_VERSION_STRING) == 0 && strcmp(want, PTQ_VERSION_STRING) == 0,
              "ptq_version %s, header %s", ptq_version(), PTQ_VERSION_STRING);
    /* names from files are printed with control characters escaped */
    char esc[16];
    CHECK(strcmp(ptq_escape("a\x1b[31mb", esc, sizeof esc), "a\\x1b[31mb") == 0);
    CHECK(strcmp(ptq_escape("tab\there\x7fXY", esc, sizeof esc), "tab\\x09here\\x7f") == 0); /* cut to fit */
    CHECK(strcmp(ptq_escape("caf\xc3\xa9", esc, sizeof esc), "caf\xc3\xa9") == 0);  /* UTF-8 kept */
    /* bytes that start no UTF-8 character are escaped too (a lone 0xff, a cut character, an overlong '/') */
    CHECK(strcmp(ptq_escape("a\xff" "b\xc3", esc, sizeof esc), "a\\xffb\\xc3") == 0);
    CHECK(strcmp(ptq_escape("\xc0\xaf", esc, sizeof esc), "\\xc0\\xaf") == 0);
    CHECK(strcmp(ptq_escape(NULL, esc, sizeof esc), "") == 0);
    /* C1 controls (NEL U+0085, CSI U+009B) and U+2028/U+2029 byte by byte; U+00A0 and U+2027 kept; a whole
     * escaped character or none when cut */
    char wide[64];
    CHECK(strcmp(ptq_escape("a\xc2\x85" "b\xc2\x9b" "c\xc2\xa0", wide, sizeof wide),
                 "a\\xc2\\x85b\\xc2\\x9bc\xc2\xa0") == 0);
    CHECK(strcmp(ptq_escape("\xe2\x80\xa8" "\xe2\x80\xa9" "\xe2\x80\xa7", wide, sizeof wide),
                 "\\xe2\\x80\\xa8\\xe2\\x80\\xa9\xe2\x80\xa7") == 0);
    CHECK(strcmp(ptq_escape("ab\xc2\x85", esc, 10), "ab") == 0);
    /* bidi formatting characters (RLO U+202E, LRI U+2066, ALM U+061C, RLM U+200F) byte by byte; U+2030 kept */
    CHECK(strcmp(ptq_escape("a\xe2\x80\xae" "b\xe2\x81\xa6" "c\xd8\x9c" "\xe2\x80\x8f" "\xe2\x80\xb0", wide,
                            sizeof wide),
                 "a\\xe2\\x80\\xaeb\\xe2\\x81\\xa6c\\xd8\\x9c\\xe2\\x80\\x8f\xe2\x80\xb0") == 0);
    /* terminal columns: CJK and emoji 2, a combining acute 0, e-acute 1, an escaped byte's \xNN 4 */
    CHECK(ptq_utf8_width("ab") == 2 && ptq_utf8_width("\xe4\xb8\xad\xe6\x96\x87") == 4);
    CHECK(ptq_utf8_width("e\xcc\x81") == 1 && ptq_utf8_width("\xc3\xa9") == 1);
    CHECK(ptq_utf8_width("\xf0\x9f\x98\x80") == 2 && ptq_utf8_width("\xf0\x9f\x9a\x80") == 2); /* U+1F600, U+1F680 */
    CHECK(ptq_utf8_width("\xff") == 1 && ptq_utf8_width(NULL) == 0 && ptq_utf8_width("\\xff") == 4);
    /* names that are not UTF-8 become valid UTF-8 for the reports: each bad byte U+FFFD */
    static const struct { const char *in, *want; } fix[] = {
        {"caf\xc3\xa9 \xf0\x9f\x98\x80", "caf\xc3\xa9 \xf0\x9f\x98\x80"}, /* valid: kept */
        {"\xff\xfe bad", "\xef\xbf\xbd\xef\xbf\xbd bad"},
        {"cut \xc3", "cut \xef\xbf\xbd"},                              /* a character cut at the end */
        {"\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd"},                    /* overlong '/' */
        {"\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"}, /* a surrogate */
        {"\xf4\x90\x80\x80x", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdx"}, /* above U+10FFFF */
        {NULL, ""},
    };
    for (size_t i = 0; i < sizeof fix / sizeof fix[0]; i++) {
        char *got = ptq_utf8_dup(fix[i].in);
        CHECK_MSG(got && strcmp(got, fix[i].want) == 0, "ptq_utf8_dup case %zu: %s", i, got ? got : "(null)");
        free(got);
    }
    return test_done("test_status");
}
