/* SHA-256 (core/sha256.c) against the FIPS 180-4 example digests, one
 * million 'a', every split of a message into two updates, and the x86 SHA
 * extensions against the portable compress on the same inputs. */
#include <stdint.h>
#include <stdio.h>
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

    /* the x86 SHA extensions against the portable compress: every length to 300 bytes, then 1 MiB split at
     * odd places, same digests (on a CPU without them, or another architecture, both runs are portable) */
    const int shani = ptq_sha256_accel(1);
    printf("    test_hash: SHA extensions %s\n", shani ? "present: compared with the portable compress" : "absent");
    enum { BIG = 1 << 20 };
    unsigned char *big = malloc(BIG);
    CHECK(big != NULL);
    uint32_t x = 12345;
    for (int i = 0; i < BIG; i++) {
        x = x * 1664525u + 1013904223u;
        big[i] = (unsigned char)(x >> 24);
    }
    int differ = 0;
    for (size_t n = 0; n <= 300; n++) {
        char fast[65], slow[65];
        ptq_sha256_accel(1);
        digest(big + n, n, fast);
        ptq_sha256_accel(0);
        digest(big + n, n, slow);
        differ += strcmp(fast, slow) != 0;
    }
    char fast[65], slow[65];
    for (int mode = 1; mode >= 0; mode--) {
        ptq_sha256_accel(mode);
        ptq_sha256_init(&s);
        for (size_t at = 0, step = 1; at < BIG; at += step, step = step * 3 % 65521 + 1)
            ptq_sha256_update(&s, big + at, step < BIG - at ? step : BIG - at);
        ptq_sha256_final_hex(&s, mode ? fast : slow);
    }
    differ += strcmp(fast, slow) != 0;
    CHECK_MSG(differ == 0, "%d digests differ between the SHA extensions and the portable compress", differ);
    ptq_sha256_accel(1);
    free(big);

    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    CHECK(ptq_sha256_file(&ctx, "/nonexistent/ptq-model.onnx", hex) == PTQ_ERR_IO);
    CHECK(strstr(ctx.msg, "/nonexistent/ptq-model.onnx") != NULL);
    return test_done("test_hash");
}
