/* `ptq plan`: the default precision plan from a calibration archive (FP16
 * at the edges, INT8 or FP8 in the core), or the check of a hand-edited
 * plan against its model. Covered by tests/cli_plan_test.py. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ptq/calib.h"
#include "ptq/hash.h"
#include "ptq/plan.h"

static const char plan_help[] =
    "usage: ptq plan calib.h5 --model M.onnx --out plan.json [options]\n"
    "       ptq plan --check plan.json --model M.onnx\n"
    "\n"
    "Writes the default precision plan: the first and last compute layers (Conv,\n"
    "Gemm, MatMul), the activations feeding them and their outputs in FP16;\n"
    "every other weight, and the activations the placement quantizes, in the\n"
    "core precision (the other activations stay float, as the deployment runtime\n"
    "keeps them). Activation scales come from the calibrator; weight scales are\n"
    "per output channel: INT8 max|w| / 127, FP8 max|w| over the format's largest\n"
    "value times the 2^(k/16), k in 0..15, that rounds the channel least wrong.\n"
    "The plan is JSON (see README.md) and may be edited by hand; --check reads\n"
    "one back and checks it against the model, naming any tensor it does not know.\n"
    "\n"
    "  --model FILE         the model the archive was made from (its SHA-256 must match)\n"
    "  --out FILE           the plan to write (whole or not at all)\n"
    "  --core P             int8 (default), fp8 (= fp8-e4m3) or fp8-e5m2\n"
    "  --method M           calibrator for activation ranges: percentile[=P] (default, P 99.99;\n"
    "                       the plan's method records P), minmax, mse, entropy (on the demo\n"
    "                       model it clips a ReLU hard and loses 7 points of top-1; percentile\n"
    "                       and mse lose under 0.1), or auto: for each activation the one\n"
    "                       that, quantizing only it, kept clearly more top-1 (over 3 images;\n"
    "                       else 1 dB more SQNR) on --data (--samples N, default 1000),\n"
    "                       percentile otherwise; a Softmax output takes its min-max range\n"
    "                       with every method (its largest values are the attention a\n"
    "                       percentile would clip)\n"
    "  --placement P        where activations are quantized: trt (default: the inputs of\n"
    "                       Conv/Gemm/MatMul and the residual input of an Add fused into a Conv,\n"
    "                       nothing inside Conv+BatchNorm+activation), ort (as onnxruntime's\n"
    "                       quantize_static), all (every activation the archive observed)\n"
    "  --target T           what runs the exported model: trt (default: symmetric int8/fp8\n"
    "                       activations, zero point 0, FP16 edges) or ort-cpu (onnxruntime on\n"
    "                       the CPU: asymmetric uint8 activations with a zero point from the\n"
    "                       calibrated range clipped to the observed [min, max], int8 per-channel\n"
    "                       weights, int32 biases, FP32 edges; --core int8, placement ort by default;\n"
    "                       --budget moves tensors to FP32, --method auto measures uint8 ranges)\n"
    "  --reduce-range       INT8 weights on onnxruntime's reduce_range grid [-64, 64] (scale\n"
    "                       max|w| / 64; activations unchanged), as quantize_static(...,\n"
    "                       reduce_range=True) makes them: use it for onnxruntime on CPUs without\n"
    "                       VNNI (AVX2 only), whose uint8 x int8 kernels saturate the int16 sum of\n"
    "                       two full-range products, which the simulation does not model; the plan\n"
    "                       records it (--core int8; with --budget and --method auto every plan they\n"
    "                       measure has it, and the --sensitivity report must be made with it too)\n"
    "  --explain            print every entry: tensor, precision, the rule that placed it, why\n"
    "  --check FILE         check a plan instead of writing one\n"
    "  --quiet              print nothing but errors\n"
    "\n"
    "A plan within an accuracy budget (from a `ptq sensitivity` report of the same\n"
    "model, archive, --core, --method, --placement, --target and --reduce-range):\n"
    "starting from the default plan, tensors move to FP16 (FP32 with --target ort-cpu)\n"
    "one at a time in order of top-1 bought per byte kept in float (an activation's\n"
    "elements per sample, a weight's elements), each plan validated against FP32 on\n"
    "--data, until the top-1 drop is within --budget and no class loses more than\n"
    "--class-budget points of recall. Writes the plan and PLAN.trace.json (top-1 and\n"
    "worst class after each move); exit 11 when no plan met the budget (the best one\n"
    "found is written).\n"
    "  --sensitivity FILE   the report of `ptq sensitivity`\n"
    "  --budget PTS         top-1 points the plan may lose against FP32 (e.g. 0.3)\n"
    "  --class-budget PTS   recall points any one class may lose (default: no limit)\n"
    "  --max-moves N        move at most N tensors to float (default: as many as it takes)\n"
    "  --data PATH          labelled data to validate on; --samples N (default 1000, 0: all), --seed S,\n"
    "                       --batch, --device, --math, --threads, --preprocess and\n"
    "                       " CLI_DATA_NAMES ",\n"
    "                       --input NAME=DATASET (repeatable) as for `ptq eval`\n";

/* One line per precision: how many activations and weights run in it. */
static void print_counts(const ptq_plan *p, const char *what)
{
    /* method is free text from the plan file: escaped as its names are */
    printf("%s: %lld tensors, core %s, activation ranges by %s, placement %s, target %s%s\n", cli_shown(what),
           (long long)p->n, ptq_prec_name(p->core), cli_shown(p->method && p->method[0] ? p->method : "-"),
           cli_shown(p->placement && p->placement[0] ? p->placement : "-"), ptq_target_name(p->target),
           p->reduce_range ? ", weights reduce_range [-64, 64]" : "");
    for (int k = 0; k < PTQ_FMT_COUNT; k++) {
        int64_t act = 0, wt = 0;
        for (int64_t i = 0; i < p->n; i++)
            if ((int)p->e[i].prec == k) {
                if (p->e[i].is_weight)
                    wt++;
                else
                    act++;
            }
        if (act + wt)
            printf("  %-9s %4lld activations  %4lld weights\n", ptq_prec_name((ptq_prec)k), (long long)act,
                   (long long)wt);
    }
}

/* The table of --explain: each entry's tensor, precision, rule and the rule's reason. */
static void print_explain(const ptq_plan *p)
{
    char esc[1024], esc_why[1024], esc_rule[256]; /* names from the plan file, control characters escaped */
    int w = 6;
    for (int64_t i = 0; i < p->n; i++)
        if (ptq_utf8_width(ptq_escape(p->e[i].name, esc, sizeof esc)) > w)
            w = ptq_utf8_width(esc);
    printf("%-*s  %-9s %-6s  %-18s  %s\n", w, "tensor", "precision", "kind", "rule", "why");
    for (int64_t i = 0; i < p->n; i++) {
        const ptq_plan_entry *e = &p->e[i];
        const char *rule = e->rule && e->rule[0] ? e->rule : "-";
        const char *why = ptq_placement_rule_why(rule);
        printf("%s  %-9s %-6s  %-18s  %s\n", cli_padded(e->name, w, esc, sizeof esc), ptq_prec_name(e->prec),
               e->is_weight ? "weight" : "act", ptq_escape(rule, esc_rule, sizeof esc_rule),
               ptq_escape(why ? why : e->source ? e->source : "", esc_why, sizeof esc_why));
    }
}

/* The plan's quantized activations whose scale rounds most of what the
 * archive saw (its nonzero values) to the zero code: an amax set far above
 * the tensor's bulk, such as by one outlier. */
static void warn_zero_codes(const ptq_plan *plan, const ptq_calib_set *set)
{
    for (int64_t i = 0; i < plan->n; i++) {
        const ptq_plan_entry *e = &plan->e[i];
        const int64_t k = e->is_weight || e->n_scales != 1 ? -1 : ptq_calib_set_find(set, e->name);
        if (k < 0 || !ptq_prec_is_quantized(e->prec))
            continue;
        const double zero = ptq_calib_zero_fraction(ptq_calib_set_observer(set, k), e->scales[0], e->prec);
        if (zero > PTQ_CALIB_ZERO_WARN)
            fprintf(stderr, "ptq plan: warning: tensor '%s': scale %g (%s) rounds %.1f%% of the nonzero values the "
                            "archive saw to 0: its range sits far above the bulk of the tensor (an outlier?)\n",
                    e->name, (double)e->scales[0], ptq_prec_name(e->prec), 100.0 * zero);
    }
}

/* The plan's FP16 activations whose values the archive saw past FP16's largest finite value: they become Inf there,
 * and the logits downstream NaN, with nothing in the plan saying why. */
static void warn_fp16_range(const ptq_plan *plan, const ptq_calib_set *set)
{
    for (int64_t i = 0; i < plan->n; i++) {
        const ptq_plan_entry *e = &plan->e[i];
        const int64_t k = e->is_weight || e->prec != PTQ_PREC_FP16 ? -1 : ptq_calib_set_find(set, e->name);
        if (k < 0)
            continue;
        ptq_observer_stats os;
        ptq_observer_get_stats(ptq_calib_set_observer(set, k), &os);
        const double lo = -(double)os.min, hi = (double)os.max, big = os.n_binned > 0 ? (lo > hi ? lo : hi) : 0.0;
        if (big > 65504.0)
            fprintf(stderr, "ptq plan: warning: tensor '%s' is planned fp16 (rule %s) but the archive saw |x| up to "
                            "%g, past fp16's largest 65504: those values become Inf; set its precision to fp32 in "
                            "the plan\n",
                    e->name, e->rule && e->rule[0] ? e->rule : "-", big);
    }
}

int cmd_plan(int argc, char **argv)
{
    cli_opt opts[] = {{"model", 1, NULL},  {"out", 1, NULL},   {"core", 1, NULL}, {"method", 1, NULL},
                      {"check", 1, NULL},  {"quiet", 0, NULL}, {"help", 0, NULL},
                      /* the budgeted plan (cli/plan_budget.c) */
                      {"sensitivity", 1, NULL}, {"budget", 1, NULL}, {"class-budget", 1, NULL}, {"data", 1, NULL},
                      {"samples", 1, NULL}, {"seed", 1, NULL}, {"batch", 1, NULL}, {"device", 1, NULL},
                      {"math", 1, NULL},    {"threads", 1, NULL}, {"preprocess", 1, NULL}, CLI_DATA_OPTS,
                      {"max-moves", 1, NULL}, {"placement", 1, NULL}, {"explain", 0, NULL}, {"target", 1, NULL},
                      {"reduce-range", 0, NULL}};
    const int n_opts = (int)(sizeof opts / sizeof opts[0]);
    const char *pos[1];
    int n_pos = 0, rc = cli_parse("plan", argc, argv, opts, n_opts, pos, &n_pos, 1);
    if (rc)
        return rc;
    if (cli_get(opts, n_opts, "help")) {
        fputs(plan_help, stdout);
        return 0;
    }
    const char *model = cli_get(opts, n_opts, "model"), *out = cli_get(opts, n_opts, "out");
    const char *check = cli_get(opts, n_opts, "check");
    const int quiet = cli_get(opts, n_opts, "quiet") != NULL, explain = cli_get(opts, n_opts, "explain") != NULL;
    if (!model || (check ? n_pos != 0 || out : n_pos != 1 || !out))
        return cli_usage_error("plan", "give an archive, --model and --out, or --check PLAN and --model");
    const char *method_arg = cli_get(opts, n_opts, "method"), *target = cli_get(opts, n_opts, "target");
    const int reduce_range = cli_get(opts, n_opts, "reduce-range") != NULL;
    if (reduce_range && check)
        return cli_usage_error("plan", "--reduce-range makes a plan; --check reads one, which records reduce_range");
    /* each mode refuses the flags it would ignore: a forgotten --budget is not a silent default plan */
    static const char *const making[] = {"core", "method", "placement", "target", "sensitivity", "budget",
                                         "class-budget", "max-moves", "data", "samples", "seed", "batch", "device",
                                         "math", "threads", "preprocess", "images-key", "labels-key", "layout",
                                         "allow-external-data", "labels", "classes", "output", "input", NULL};
    static const char *const budget_only[] = {"class-budget", "max-moves", NULL};
    static const char *const measuring[] = {"data", "samples", "seed", "batch", "device", "math", "threads",
                                            "preprocess", "images-key", "labels-key", "layout", "allow-external-data",
                                            "labels", "classes", "output", "input", NULL};
    static const char *const explaining[] = {"explain", NULL};
    const int budgeted = cli_get(opts, n_opts, "sensitivity") || cli_get(opts, n_opts, "budget");
    const int is_auto = method_arg && strcmp(method_arg, "auto") == 0;
    if (check)
        rc = cli_refuse_unused("plan", opts, n_opts, making, "used only to make a plan (--check reads one)");
    else if (!budgeted && !(rc = cli_refuse_unused("plan", opts, n_opts, budget_only,
                                                   "used only with --budget (and --sensitivity, --data)")) && !is_auto)
        rc = cli_refuse_unused("plan", opts, n_opts, measuring,
                               "used only with --budget or --method auto, which measure on --data");
    if (!rc && !check && (budgeted || is_auto))
        rc = cli_refuse_unused("plan", opts, n_opts, explaining,
                               "used only with the default plan: run `ptq plan --check PLAN --model M --explain` on "
                               "the plan written");
    if (rc)
        return rc;
    if (!check && is_auto) {
        if (budgeted)
            return cli_usage_error("plan", "--method auto and --budget are separate runs: choose the methods first");
        int64_t threads;
        if ((rc = cli_get_int("plan", opts, n_opts, "threads", 0, 1, &threads)))
            return rc;
        if (threads > 0)
            ptq_cpu_set_threads((int)threads);
        return cli_plan_auto(opts, n_opts, pos[0]);
    }
    if (!check && budgeted) {
        int64_t threads;
        if ((rc = cli_get_int("plan", opts, n_opts, "threads", 0, 1, &threads)))
            return rc;
        if (threads > 0)
            ptq_cpu_set_threads((int)threads);
        return cli_plan_budgeted(opts, n_opts, pos[0]);
    }
    const char *plan_inputs[] = {model, check ? check : pos[0]};
    if ((rc = cli_check_outputs("plan", plan_inputs, 2, &out, 1)))
        return rc;

    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_status st = PTQ_OK;
    ptq_graph *g = NULL;
    ptq_calib_set *set = NULL;
    ptq_plan *plan = NULL;
    char *text = NULL;
    if (check) {
        PTQ_TRY(st, cli_load_plan(&ctx, check, model, &g, &plan), done);
        if (!quiet)
            print_counts(plan, check);
        if (explain)
            print_explain(plan);
        goto done;
    }
    PTQ_TRY(st, ptq_model_load(&ctx, model, &g), done);
    PTQ_TRY(st, ptq_graph_check_unquantized(&ctx, g, "plan"), done);
    PTQ_TRY(st, ptq_graph_infer_types(&ctx, g), done);
    PTQ_TRY(st, cli_default_plan_target(&ctx, model, g, pos[0], method_arg, cli_get(opts, n_opts, "core"),
                                        cli_get(opts, n_opts, "placement"), target, reduce_range, &set, &plan),
            done);
    PTQ_TRY(st, ptq_plan_to_json(&ctx, plan, &text), done);
    PTQ_TRY(st, cli_write_text(&ctx, out, text), done);
    warn_zero_codes(plan, set);
    warn_fp16_range(plan, set);
    if (!quiet) {
        print_counts(plan, out);
        printf("wrote %s\n", cli_shown(out));
        if (plan->target == PTQ_TARGET_ORT_CPU && !plan->reduce_range && ptq_cpu_has_vnni() == 0)
            fprintf(stderr, "plan: note: this CPU has no VNNI: onnxruntime's uint8 x int8 kernels on such a CPU "
                            "saturate sums of full-range weights; plan with --reduce-range if the model runs on "
                            "one (README, --target ort-cpu)\n");
    }
    if (explain)
        print_explain(plan);
done:
    free(text);
    ptq_plan_free(plan);
    ptq_calib_set_free(set);
    ptq_graph_free(g);
    return cli_report("plan", &ctx, st);
}
