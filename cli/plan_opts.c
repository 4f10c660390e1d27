/* What the commands that build a default plan share: --method M[=P] and
 * --core parsed (and --target, --reduce-range), and the plan made from an archive for a loaded model.
 * Covered by tests/cli_plan_test.py and tests/cli_sensitivity_test.py. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ptq/hash.h"

ptq_status cli_method_parse(ptq_ctx *ctx, const char *method, ptq_calib_params *cp)
{
    cp->method = PTQ_CALIB_PERCENTILE;
    cp->percentile = 0.0;
    return method ? ptq_calib_spec_parse(ctx, method, &cp->method, &cp->percentile) : PTQ_OK;
}

ptq_status cli_plan_settings_parse(ptq_ctx *ctx, const char *method, const char *core_name, const char *placement_name,
                                   const char *target_name, int reduce_range, cli_plan_settings *out)
{
    *out = (cli_plan_settings){{PTQ_CALIB_PERCENTILE, PTQ_QFORMAT_INT8, 0.0}, PTQ_PREC_INT8, PTQ_PLACEMENT_TRT,
                               PTQ_TARGET_TRT, reduce_range};
    PTQ_TRY_RET(cli_method_parse(ctx, method, &out->cp));
    if (core_name && ptq_prec_parse(ctx, core_name, &out->core) != PTQ_OK)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "unknown --core '%s' (choices: int8, fp8 = fp8-e4m3, fp8-e5m2)",
                        core_name);
    if (target_name)
        PTQ_TRY_RET(ptq_target_parse(ctx, target_name, &out->target));
    if (out->target == PTQ_TARGET_ORT_CPU) /* onnxruntime fuses Q/DQ into its integer kernels where quantize_static
                                              puts them */
        out->placement = PTQ_PLACEMENT_ORT;
    if (placement_name)
        PTQ_TRY_RET(ptq_placement_parse(ctx, placement_name, &out->placement));
    return ptq_plan_settings_check(ctx, out->core, out->placement, out->target, reduce_range);
}

ptq_status cli_default_plan_target(ptq_ctx *ctx, const char *model, const ptq_graph *g, const char *archive_path,
                                   const char *method, const char *core_name, const char *placement_name,
                                   const char *target_name, int reduce_range, ptq_calib_set **archive,
                                   ptq_plan **plan)
{
    char sha[65];
    cli_plan_settings ps;
    *archive = NULL;
    *plan = NULL;
    PTQ_TRY_RET(cli_plan_settings_parse(ctx, method, core_name, placement_name, target_name, reduce_range, &ps));
    PTQ_TRY_RET(cli_model_sha256(ctx, model, sha));
    PTQ_TRY_RET(ptq_calib_set_read(ctx, archive_path, archive));
    const char *base = strrchr(model, '/');
    PTQ_TRY_RET(ptq_plan_make_target(ctx, g, sha, base ? base + 1 : model, *archive, archive_path, &ps.cp, ps.core,
                                     ps.placement, ps.target, plan));
    if (reduce_range)
        PTQ_TRY_RET(ptq_plan_reduce_range(ctx, g, *plan));
    return ptq_plan_check(ctx, *plan, g, sha);
}
