/* SHA-256 (FIPS 180-4) for provenance: the model file and the sample ids a
 * calibration archive was built from. core/sha256.c; covered by
 * tests/test_hash.c (FIPS test vectors and hashlib on random inputs). */
#ifndef PTQ_HASH_H
#define PTQ_HASH_H

#include <stddef.h>
#include <stdint.h>

#include "ptq/export_api.h"
#include "ptq/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ptq_sha256 {
    uint32_t h[8];
    uint64_t n_bytes;
    unsigned char block[64];
} ptq_sha256;

PTQ_API void ptq_sha256_init(ptq_sha256 *s);
PTQ_API void ptq_sha256_update(ptq_sha256 *s, const void *data, size_t n_bytes);
/* Writes the digest as 64 lowercase hex digits and a NUL into hex[65]. */
PTQ_API void ptq_sha256_final_hex(ptq_sha256 *s, char hex[65]);
/* Which compress function runs: mode 0 the portable C one, 1 the x86 SHA
 * extensions if the CPU has them (the default), -1 only asks. Returns 1
 * when the SHA extensions are in use. Not thread-safe: for tests and
 * benchmarks, before any hashing. */
PTQ_API int ptq_sha256_accel(int mode);
/* The digest of a whole file, read in blocks; PTQ_ERR_IO naming path. */
PTQ_API ptq_status ptq_sha256_file(ptq_ctx *ctx, const char *path, char hex[65]);

#ifdef __cplusplus
}
#endif
#endif
