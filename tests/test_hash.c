/* SHA-256 (core/sha256.c) against the FIPS 180-4 example digests, one
 * million 'a', and every split of a message into two updates. */
#include <stdlib.h>
#include <string.h>

#include "ptq/hash.h"
#include "testlib.h"

static void digest(const void *msg, size_t n, char hex[65])
{
    ptq_sha256 s;
    ptq_sha256_init(&s);
    ptq_sha256_update(&s, msg, n);
    ptq_sha256_final_hex(&s, hex);
}

int main(void)
{
    static const struct {
        const char *msg, *hex;
    } cases[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
    };
    char hex[65];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        digest(cases[i].msg, strlen(cases[i].msg), hex);
        CHECK_MSG(strcmp(hex, cases[i].hex) == 0, "sha256(\"%s\") = %s", cases[i].msg, hex);
    }

    char *million = malloc(1000000);
    CHECK(million != NULL);
    memset(million, 'a', 1000000);
    ptq_sha256 s;
    ptq_sha256_init(&s);
    for (int i = 0; i < 1000; i++)
        ptq_sha256_update(&s, million + 1000 * i, 1000);
    ptq_sha256_final_hex(&s, hex);
    CHECK_MSG(strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0") == 0,
              "sha256(a x 1e6) = %s", hex);
    free(million);

    /* every split point of a 200-byte message gives the one-shot digest */
    unsigned char msg[200];
    for (int i = 0; i < 200; i++)
        msg[i] = (unsigned char)(i * 37 + 11);
    char whole[65];
    digest(msg, sizeof msg, whole);
    for (size_t cut = 0; cut <= sizeof msg; cut++) {
        ptq_sha256_init(&s);
        ptq_sha256_update(&s, msg, cut);
        ptq_sha256_update(&s, msg + cut, sizeof msg - cut);
        ptq_sha256_final_hex(&s, hex);
        CHECK_MSG(strcmp(hex, whole) == 0, "split at %zu", cut);
    }

    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    CHECK(ptq_sha256_file(&ctx, "/nonexistent/ptq-model.onnx", hex) == PTQ_ERR_IO);
    CHECK(strstr(ctx.msg, "/nonexistent/ptq-model.onnx") != NULL);
    return test_done("test_hash");
}
