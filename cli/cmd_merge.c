/* `ptq merge`: adds calibration archives of disjoint shards exactly (counts
 * and histograms sum, min/max combine), refusing archives of another model,
 * other observer settings or shared samples. Covered by tests/cli_calib_test.py. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ptq/calib.h"

static const char merge_help[] =
    "usage: ptq merge A.h5 B.h5 [C.h5 ...] --out OUT.h5\n"
    "\n"
    "Adds calibration archives made by `ptq calibrate` on disjoint shards of\n"
    "the calibration data (say, --shard 0/2 and --shard 1/2, or one archive per\n"
    "MPI rank or machine). The result equals the archive of all the samples at\n"
    "once: the same counts, min/max and histograms, bit for bit. The archives\n"
    "must come from the same model file (SHA-256), the same observer settings\n"
    "(bins, tensor selection, preprocessing) and share no sample.\n"
    "\n"
    "  --out FILE           the merged archive (written whole or not at all)\n"
    "  --json               print a JSON summary on stdout\n";

enum { MERGE_MAX_INPUTS = 1024 };

/* Archives of ptq before content hashes name their sources by path only:
 * they are matched by name then, and the user is told. */
static void warn_unhashed(const ptq_calib_set *set, const char *path)
{
    ptq_calib_provenance pv;
    ptq_calib_set_provenance(set, &pv);
    for (int i = 0; i < pv.n_sources; i++)
        if (!pv.sources_sha256[i][0]) {
            fprintf(stderr, "ptq merge: warning: %s records no content hash for source %s; it is matched by name, "
                            "so the same data under another path is not recognised\n", path, pv.sources[i]);
            return;
        }
}

int cmd_merge(int argc, char **argv)
{
    cli_opt opts[] = {{"out", 1, NULL}, {"json", 0, NULL}, {"help", 0, NULL}};
    const int n_opts = (int)(sizeof opts / sizeof opts[0]);
    static const char *pos[MERGE_MAX_INPUTS];
    int n_pos = 0, rc = cli_parse("merge", argc, argv, opts, n_opts, pos, &n_pos, MERGE_MAX_INPUTS);
    if (rc)
        return rc;
    if (cli_get(opts, n_opts, "help")) {
        fputs(merge_help, stdout);
        return 0;
    }
    const char *out = cli_get(opts, n_opts, "out");
    if (n_pos < 2 || !out)
        return cli_usage_error("merge", "two or more archives and --out are required");
    if ((rc = cli_check_outputs("merge", pos, n_pos, &out, 1)))
        return rc;
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_status st = PTQ_OK;
    ptq_calib_set *acc = NULL, *next = NULL;
    char tmp[PTQ_TMP_NAME_BYTES] = "";
    PTQ_TRY(st, ptq_calib_set_read(&ctx, pos[0], &acc), done);
    warn_unhashed(acc, pos[0]);
    for (int i = 1; i < n_pos; i++) {
        PTQ_TRY(st, ptq_calib_set_read(&ctx, pos[i], &next), done);
        warn_unhashed(next, pos[i]);
        st = ptq_calib_set_merge(&ctx, acc, next);
        if (st != PTQ_OK) {
            char why[PTQ_MSG_BYTES];
            snprintf(why, sizeof why, "%s", ctx.msg);
            ptq_fail(&ctx, st, "%s into %s: %s; nothing written", pos[i], pos[0], why);
            goto done;
        }
        ptq_calib_set_free(next);
        next = NULL;
    }
    PTQ_TRY(st, ptq_atomic_create(&ctx, out, tmp, sizeof tmp, NULL), done);
    PTQ_TRY(st, ptq_calib_set_write(&ctx, acc, tmp), done);
    PTQ_TRY(st, ptq_atomic_commit(&ctx, tmp, out), done);
    ptq_calib_provenance pv;
    ptq_calib_set_provenance(acc, &pv);
    if (cli_get(opts, n_opts, "json")) {
        cli_json *o = cli_json_header("merge", NULL);
        cli_json_str(o, "archive", out);
        cli_json_num(o, "inputs", n_pos);
        cli_json_num(o, "samples", (double)pv.n_samples);
        cli_json_num(o, "tensors", (double)ptq_calib_set_n_tensors(acc));
        cli_json_str(o, "sample_ids_sha256", pv.sample_ids_sha256);
        char *text = cli_json_done(o);
        if (text)
            printf("%s\n", text);
        free(text);
    } else
        printf("merged %d archives into %s: %lld samples, %lld tensors\n", n_pos, cli_shown(out),
               (long long)pv.n_samples, (long long)ptq_calib_set_n_tensors(acc));
done:
    if (st != PTQ_OK)
        ptq_atomic_blame_output(&ctx, tmp, out); /* the archive is written to tmp by name */
    ptq_atomic_discard(tmp);
    ptq_calib_set_free(acc);
    ptq_calib_set_free(next);
    return cli_report("merge", &ctx, st);
}
