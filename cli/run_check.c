/* `ptq run`'s check of a data set before its first stage (cli/cmd_run.c): the model opened on it as the stages
 * that read it will open it (--input, --preprocess, --images-key, --labels-key, --layout, --labels, --classes,
 * --output and, for the labelled set, its labels), on the CPU, without hashing anything, so that a value a stage
 * would refuse costs no calibration. Covered by tests/cli_run_test.py. */
#include <string.h>

#include "cli.h"

ptq_status cli_run_check_data(ptq_ctx *ctx, const cli_session_opts *o, int labelled);

ptq_status cli_run_check_data(ptq_ctx *ctx, const cli_session_opts *o, int labelled)
{
    PTQ_TRY_RET(cli_session_opts_check(ctx, o)); /* each --input is NAME=DATASET: split at its first '=' below */
    ptq_input_map map[CLI_MAX_REPEAT];
    char names[CLI_MAX_REPEAT][256];
    const int n_inputs = o->n_inputs < CLI_MAX_REPEAT ? o->n_inputs : CLI_MAX_REPEAT;
    for (int i = 0; i < n_inputs; i++) {
        const char *eq = strchr(o->inputs[i], '=');
        snprintf(names[i], sizeof names[i], "%.*s", (int)(eq - o->inputs[i]), o->inputs[i]);
        map[i] = (ptq_input_map){names[i], eq + 1};
    }
    ptq_session_opts po;
    memset(&po, 0, sizeof po);
    po.model = o->model;
    po.data = o->data;
    po.device = PTQ_DEVICE_CPU; /* the device is the stages' to open (a missing GPU is their note or exit 8) */
    po.preprocess = o->preprocess;
    po.dataset = (ptq_dataset_opts){.images_key = o->images_key, .labels_key = o->labels_key, .layout = o->layout,
                                    .allow_external_data = o->allow_external_data, .labels_file = o->labels_file,
                                    .classes_file = o->classes_file};
    po.output = o->output;
    po.inputs = map;
    po.n_inputs = n_inputs;
    ptq_session *ps = NULL;
    ptq_status st = ptq_session_open(ctx, &po, &ps);
    if (st == PTQ_OK && labelled && !ptq_dataset_has_labels(ptq_session_dataset(ps)))
        st = ptq_fail(ctx, PTQ_ERR_DATA, "%s has no labels; sensitivity and validation compare predictions with them",
                      o->data);
    int logits = -1;
    if (st == PTQ_OK && labelled) /* several [N, classes] outputs and no --output: the stages' exit 5 */
        st = ptq_session_logits_output(ctx, ps, &logits);
    ptq_session_close(ps);
    return st;
}
