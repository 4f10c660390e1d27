/* Shared pieces of the ptq command: option parsing, exit codes, error
 * printing, progress lines, and the model + data set-up every command
 * that runs a model uses. Uses only include/ptq. */
#ifndef PTQ_CLI_H
#define PTQ_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "ptq/calib.h"
#include "ptq/dataset.h"
#include "ptq/dist.h"
#include "ptq/fileio.h"
#include "ptq/graph.h"
#include "ptq/onnx_edit.h"
#include "ptq/plan.h"
#include "ptq/runner.h"
#include "ptq/runtime.h"
#include "ptq/sensitivity.h"
#include "ptq/status.h"
#include "ptq/version.h"

/* Exit codes (documented in README.md). */
enum {
    EXIT_OK_ = 0,
    EXIT_INTERNAL = 1,
    EXIT_USAGE = 2,
    EXIT_IO = 3,
    EXIT_FORMAT = 4,
    EXIT_UNSUPPORTED = 5,
    EXIT_SHAPE = 6,
    EXIT_DATA = 7,
    EXIT_NO_DEVICE = 8,
    EXIT_CUDA = 9,
    EXIT_NOMEM = 10,
    EXIT_BUDGET = 11, /* no plan met the accuracy budget (the best one found is written) */
    EXIT_COLLAPSED = 12 /* validate: the quantized outputs collapsed (the report is written) */
};

int cli_exit_code(ptq_status st);
/* Prints "ptq <cmd>: error: <msg>" (plus the source location with PTQ_DEBUG set); returns the exit code. */
int cli_report(const char *cmd, const ptq_ctx *ctx, ptq_status st);
int cli_usage_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The model at model_path loaded (shapes inferred at batch 1) into *g and
 * the plan at plan_path read into *plan and checked against it; a failure
 * names plan_path. The caller frees both, set or not. */
ptq_status cli_load_plan(ptq_ctx *ctx, const char *plan_path, const char *model_path, ptq_graph **g,
                         ptq_plan **plan);
/* The same for a model already loaded into g (shapes inferred). */
ptq_status cli_plan_for(ptq_ctx *ctx, const char *plan_path, const char *model_path, const ptq_graph *g,
                        ptq_plan **plan);

/* --method M[=P] (NULL: percentile at its default) into cp's method and percentile. */
ptq_status cli_method_parse(ptq_ctx *ctx, const char *method, ptq_calib_params *cp);
/* A default plan's settings: --method, --core, --placement and --target (NULL: the defaults; target ort-cpu makes
 * the ort placement the default one) and --reduce-range parsed and checked together
 * (ptq_plan_settings_check), before any file is read. */
typedef struct cli_plan_settings {
    ptq_calib_params cp;
    ptq_prec core;
    ptq_placement placement;
    ptq_target target;
    int reduce_range;
} cli_plan_settings;
ptq_status cli_plan_settings_parse(ptq_ctx *ctx, const char *method, const char *core_name, const char *placement_name,
                                   const char *target_name, int reduce_range, cli_plan_settings *out);
/* The default plan for model (loaded into g, shapes inferred) from the
 * archive at archive_path (read into *archive), by method, core, placement
 * and target target_name (NULL: the defaults; target ort-cpu makes the ort
 * placement the default one), checked against the model; reduce_range 1
 * puts the INT8 weights on onnxruntime's reduce_range grid
 * (ptq_plan_reduce_range). The caller frees both. */
ptq_status cli_default_plan_target(ptq_ctx *ctx, const char *model, const ptq_graph *g, const char *archive_path,
                                   const char *method, const char *core_name, const char *placement_name,
                                   const char *target_name, int reduce_range, ptq_calib_set **archive,
                                   ptq_plan **plan);

/* Writes the .npy header of a float32 C-order [rows, cols] array; 0 or -1. */
int cli_npy_header(FILE *f, int64_t rows, int64_t cols);
/* Reads a float32 C-order .npy [rows, cols] (as cli_npy_header writes, or
 * numpy's np.save): the shape is checked against the file's size before
 * anything is allocated. *data is malloc'd. */
ptq_status cli_npy_read(ptq_ctx *ctx, const char *path, int64_t *rows, int64_t *cols, float **data);

/* The whole of a text file (at most 1 GiB) as a malloc'd NUL-terminated string; one holding a NUL byte is
 * PTQ_ERR_FORMAT (its text would end there, the rest unread). */
ptq_status cli_read_text(ptq_ctx *ctx, const char *path, char **out);

/* Output files appear whole or not at all: cli_tmp_open opens a temporary
 * next to path (ptq_atomic_fopen; its name into tmp, PTQ_TMP_NAME_BYTES);
 * cli_tmp_commit closes it (*f = NULL) and renames it to path, removing it
 * on failure. Both fail with PTQ_ERR_IO and the reason. */
ptq_status cli_tmp_open(ptq_ctx *ctx, const char *path, char *tmp, size_t n_tmp, FILE **f);
ptq_status cli_tmp_commit(ptq_ctx *ctx, FILE **f, const char *tmp, const char *path);
/* Closes the temporary *f (*f = NULL) for ptq_atomic_commit_all to rename; on a failed close discards it (tmp becomes
 * "") and fails with PTQ_ERR_IO naming path. */
ptq_status cli_tmp_close(ptq_ctx *ctx, FILE **f, char *tmp, const char *path);
/* text and a final newline to path, whole or not at all (through cli_tmp_open/commit). */
ptq_status cli_write_text(ptq_ctx *ctx, const char *path, const char *text);

/* A report's files (cli/report_files.c). cli_report_dir makes the folder
 * dir when missing (*made 1) and checks that it is a writable folder, before
 * any work; cli_output_dir_check checks that the folder of the output path
 * exists and is writable. cli_write_files writes all n files to temporaries
 * and renames them only when every one is complete: on failure none changed (ptq_atomic_commit_all). */
typedef struct cli_out_file {
    const char *path;
    const void *data;
    size_t n_bytes;
    int newline; /* a final '\n' after data (text from the formatters) */
} cli_out_file;
ptq_status cli_report_dir(ptq_ctx *ctx, const char *dir, int *made);
ptq_status cli_output_dir_check(ptq_ctx *ctx, const char *path);
/* cli_output_dir_check for a command before any work: 0, or the exit code after its message. */
int cli_output_dir_ok(const char *cmd, const char *path);
ptq_status cli_write_files(ptq_ctx *ctx, const cli_out_file *f, int n);
/* The same, committing with them n_done complete temporaries done_tmp[i] (closed; cli_tmp_close) onto
 * done_paths[i], all or none: a report and the --logits written beside it. */
ptq_status cli_write_files_with(ptq_ctx *ctx, const cli_out_file *f, int n, char *const *done_tmp,
                                const char *const *done_paths, int n_done);

/* The files of validate's report folder, in the order it writes them (cli_report_names): validate.json,
 * validate.md, report.html and the three confusion PNGs, which a report of more than PTQ_HTML_MAX_CLASSES classes
 * leaves out; cli_report_n_files: how many of them a report of n_classes has. */
enum { CLI_REPORT_FILES = 6 };
extern const char *const cli_report_names[CLI_REPORT_FILES];
int cli_report_n_files(int64_t n_classes);
/* The files of `ptq export --format ort`'s folder (cli/cmd_export.c). */
enum { CLI_ORT_FILES = 3 };
extern const char *const cli_ort_names[CLI_ORT_FILES];

/* JSON objects for --json lines and report headers, through cJSON (every
 * string escaped; cli_json_str's made valid UTF-8 as ptq_utf8_dup does, since
 * a path may hold any bytes). cli_json_header starts {"command", "ptq_version",
 * "device" (when not NULL)}; cli_json_done prints it compact and frees it
 * (NULL when out of memory). */
typedef struct cJSON cli_json;
/* s (a path, any bytes; NULL as "") as the terminal summaries print it:
 * control characters and bytes that start no UTF-8 character as \xNN
 * (ptq_escape), as error messages print them, so a name cannot drive the
 * terminal or break a line. In one of 8 static buffers used in turn: up to 8
 * in one printf, main thread only. */
const char *cli_shown(const char *s);
/* s escaped as cli_shown escapes it, then spaces to width terminal columns (ptq_utf8_width: a table's name
 * column, which printf's %-40s would pad by bytes), in buf[n_buf] (cut to fit). Returns buf. */
const char *cli_padded(const char *s, int width, char *buf, size_t n_buf);
cli_json *cli_json_header(const char *command, const char *device);
void cli_json_str(cli_json *o, const char *key, const char *value);
void cli_json_num(cli_json *o, const char *key, double value);
char *cli_json_done(cli_json *o);
/* The batch to run over n_ids samples: `batch` when --batch was given
 * (given != 0) or when the batch the runner makes (at most n_ids) fits the
 * memory limit, else the largest power of two below it that fits
 * (ptq_batch_default), with a note on stderr. n_kept: copies of a whole
 * run's activations the command keeps besides (ptq_batch_bytes_keeping):
 * 0 for eval, calibrate and validate, 2 for sensitivity and the planners
 * that measure. */
int64_t cli_default_batch(const char *cmd, const ptq_session *ps, int64_t batch, int64_t n_ids, int given,
                          int n_kept);
/* What a report was made from: "model" (path as given), "model_sha256",
 * "data" (path as given), "data_kind", "data_sha256"
 * (ptq_dataset_content_sha256: reads the set once more) and "preprocess"
 * (spec: ptq_session_data_spec, the images' preprocessing with every key,
 * or the named inputs' datasets). */
ptq_status cli_json_provenance(ptq_ctx *ctx, cli_json *o, const char *model, const char *data,
                               const ptq_dataset *ds, const char *spec);
/* ds's first k class names as the reports take them: each valid UTF-8
 * (ptq_utf8_dup: a byte that starts no character becomes U+FFFD), NULL where
 * ds has none; [k + 1], the last NULL, in one block that free() releases.
 * NULL when out of memory. */
const char **cli_class_names(const ptq_dataset *ds, int64_t k);

/* The model's and the data set's SHA-256 (what reports, archives and plans
 * record), hashed on worker threads from cli_session_open on
 * (cli/hash_ahead.c) and kept until cli_session_close: cli_model_sha256 and
 * cli_dataset_sha256 wait for them, or compute them there for anything not
 * started. A model's is its file's, or for ONNX external data, the file's
 * and its data files' together (README "model_sha256"). */
void cli_hash_ahead(const char *model, const ptq_dataset *ds);
ptq_status cli_model_sha256(ptq_ctx *ctx, const char *path, char hex[65]);
ptq_status cli_dataset_sha256(ptq_ctx *ctx, const ptq_dataset *ds, char hex[65]);
/* The files the ONNX model at path reads its external data from: *e (ptq_onnx_edit_external_files; free it with
 * ptq_onnx_edit_free), NULL when the model refers to none (its bytes never hold "location", so an inline model is
 * read, not parsed). */
ptq_status cli_model_external_files(ptq_ctx *ctx, const char *path, ptq_onnx_edit **e);
/* Waits for and forgets ds's digest (NULL: every one). */
void cli_hash_forget(const ptq_dataset *ds);

/* Writes each batch's logits (what the consumers before it left) as rows of
 * a float32 .npy [rows, classes]: a runner consumer. */
typedef struct cli_npy_writer {
    FILE *f;
    const char *path; /* for messages */
    int64_t rows;     /* samples the run covers */
} cli_npy_writer;
ptq_consumer cli_npy_consumer(cli_npy_writer *w);

/* A file beside a JSON output: path without its ".json", then suffix
 * ("sens.json" + ".md" -> "sens.md"). */
void cli_sibling_path(const char *path, const char *suffix, char *out, size_t n_out);
/* Refuses (prints, returns EXIT_USAGE) an output that is the same file as an
 * input or as another output (ptq_file_same), and (EXIT_IO) one that is a
 * device, FIFO or socket (ptq_file_check_output), before any work; 0 when
 * none is. NULL entries are skipped. The files the data set of the last
 * cli_parse's --data reads are inputs too: its --labels and --classes
 * files, with --allow-external-data the files an HDF5 set refers to
 * (ptq_dataset_external_files), and an image folder's every file, so an
 * output anywhere inside one is refused; and the files the last cli_parse's
 * --model reads its ONNX external data from (cli_model_external_files). */
int cli_check_outputs(const char *cmd, const char *const *inputs, int n_inputs, const char *const *outputs,
                      int n_outputs);
/* Sets the data set cli_check_outputs takes as the last cli_parse's: `ptq
 * run` checks its outputs against --calib-data's files this way too. */
void cli_data_inputs_set(const char *data, const char *labels, const char *classes, int allow_external_data);

/* Under an MPI launcher (cli/ranks.c): cli_dist_start joins the job (and
 * sends other ranks' stdout to /dev/null); returns 0 or an exit code.
 * cli_is_writer: 1 on rank 0 (and in a plain run), the only rank that
 * writes files and prints. cli_on_rank0 runs a command on rank 0 alone and
 * returns its exit code on every rank. cli_rank_ids keeps this rank's
 * share of the picked ids[*n_ids]. Every rank passes each stage's status through
 * ptq_dist_agree before the next collective. */
int cli_dist_start(int *argc, char ***argv);
/* Leaves the job (ptq_dist_finalize), first printing this rank's collectives on stderr when PTQ_DIST_STATS is set
 * in a job of several ranks. */
void cli_dist_stop(void);
int cli_is_writer(void);
int cli_on_rank0(int (*fn)(int argc, char **argv), int argc, char **argv);
/* 1 when the command runs on every rank of a job (its work split over them); 0 in one process and in a command
 * that cli_on_rank0 runs on rank 0 alone. */
int cli_ranks_split(void);
/* rank 0's rc (an exit code or a flag) on every rank: a collective */
int cli_rank0_rc(int rc);
/* head > 0: rank 0's share holds at least the first head ids (validate --reference checks the job's first batch
 * there). A rank may get no ids when there are fewer than ranks (the reductions are sums). */
ptq_status cli_rank_ids(ptq_ctx *ctx, int64_t **ids, int64_t *n_ids, int64_t head);

/* What a rank read, as the ranks compare it with rank 0's: a file (for the message; NULL: nothing to compare)
 * and what identifies its content ("SHA-256 <hex>", "300 samples"). */
enum { CLI_RANK_READS = 4 };
typedef struct cli_rank_read {
    const char *path;
    char what[80];
} cli_rank_read;
/* The agreement (ptq_dist_agree) of a stage whose ranks read reads[n] (n <= CLI_RANK_READS, the same n on every
 * rank): a rank whose status is PTQ_OK but whose read differs from rank 0's fails with PTQ_ERR_INVALID_ARG naming
 * the file. One process: st. A collective. */
ptq_status cli_ranks_agree_read(ptq_ctx *ctx, ptq_status st, const cli_rank_read *reads, int n);
/* Fills r with path and its file's SHA-256 (with the model's hashing when model is set). */
ptq_status cli_rank_read_file(ptq_ctx *ctx, const char *path, int model, cli_rank_read *r);
/* Fills r with path and data set ds's content SHA-256 (cli_dataset_sha256). */
ptq_status cli_rank_read_data(ptq_ctx *ctx, const char *path, const ptq_dataset *ds, cli_rank_read *r);
/* Fills r with path and "N samples". */
void cli_rank_read_count(const char *path, int64_t n, cli_rank_read *r);
/* The progress line's stage under mpirun says whose share it counts ("calibrate, rank 0's share"). */
const char *cli_rank_stage(const char *stage, char *buf, size_t n_buf);

/* Options: "--name value", "--name=value" and bare flags; the rest are positionals. */
typedef struct cli_opt {
    const char *name;  /* without the dashes */
    int takes_value;   /* 0: a flag; 1: a value; CLI_REPEAT: a value, any number of times */
    const char *value; /* set by cli_parse; "1" for a flag seen; the last of a repeated option */
} cli_opt;
/* A repeatable option (--input A=x --input B=y): cli_get_all gives every
 * value in order, until the next cli_parse; at most CLI_MAX_REPEAT. */
#define CLI_REPEAT 2
#define CLI_MAX_REPEAT 16
/* The values of repeatable option name from the last cli_parse into
 * values[CLI_MAX_REPEAT]; returns how many. */
int cli_get_all(const char *name, const char **values);

/* The options that say how --data is read, in the option table of every
 * command that takes --data (cli_session_opts_from reads them), and their
 * help lines. */
#define CLI_DATA_OPTS                                                                                         \
    {"images-key", 1, NULL}, {"labels-key", 1, NULL}, {"layout", 1, NULL}, {"allow-external-data", 0, NULL}, \
        {"labels", 1, NULL}, {"classes", 1, NULL}, {"output", 1, NULL}, {"input", CLI_REPEAT, NULL}
#define CLI_DATA_HELP                                                                                          \
    "  --images-key KEY     HDF5 dataset holding the images (default: images, x, data, X)\n"                   \
    "  --labels-key KEY     HDF5 dataset holding the labels (default: labels, y, Y, targets)\n"                \
    "  --layout L           stored HDF5 image layout NHW, NHWC or NCHW (default: guessed)\n"                   \
    "  --allow-external-data  read an HDF5 set that refers to other files (external links or storage)\n"       \
    "                       (these four are an HDF5 set's: with an image folder they are refused)\n"          \
    "  --labels FILE        image folders: the samples and labels are FILE's \"PATH LABEL\" lines (PATH\n"     \
    "                       relative to --data, LABEL an integer), as ImageNet validation lists come\n"       \
    "                       (e.g. ILSVRC2012_val_00000001.JPEG 65); class folders are not scanned\n"            \
    "  --classes FILE       image folders: the model output index of each class folder name, one\n"         \
    "                       \"NAME\" per line in index order or \"NAME INDEX\" lines (e.g. n01440764 0);\n"    \
    "                       a folder it does not name is refused\n"                                            \
    "  --output NAME        the model output holding the logits (default: the only output, else the\n"      \
    "                       only float32 [N, classes] one)\n"                                                 \
    "  --input NAME=DATASET  (repeatable) feed model input NAME from HDF5 dataset DATASET; by default an\n"  \
    "                       input reads the dataset of its own name (e.g. input_ids, attention_mask),\n"     \
    "                       as stored, no preprocessing; an image model's input names its images\n"
/* The names of CLI_DATA_OPTS but --input (which help lines add on their next line), for "as for `ptq
 * eval`" help lines. */
#define CLI_DATA_NAMES "--images-key, --labels-key, --layout, --allow-external-data, --labels, --classes, --output"


/* Returns 0, or an exit code after printing the problem. */
int cli_parse(const char *cmd, int argc, char **argv, cli_opt *opts, int n_opts, const char **pos, int *n_pos,
              int max_pos);
const char *cli_get(const cli_opt *opts, int n_opts, const char *name);
/* Refuses (prints, returns EXIT_USAGE) the options among names (NULL-terminated) that were given, naming every
 * one: "--a, --b are <why>", why saying which mode or format uses them ("used only with --budget"): a flag the
 * command would otherwise ignore silently, as `ptq plan --class-budget` without --budget. 0 when none was given. */
int cli_refuse_unused(const char *cmd, const cli_opt *opts, int n_opts, const char *const *names, const char *why);
/* cli_refuse_unused's why for --output (in CLI_DATA_OPTS) in a command that reads no logits (calibrate, smooth). */
#define CLI_OUTPUT_UNUSED                                                                                      \
    "used only by the commands that read logits (eval, sensitivity, validate, plan --budget or --method auto, " \
    "run), not by this one"
/* 1 when v is written as a plain decimal number (digits, '.', an exponent; a '%' left for the caller's check),
 * as the number flags want it: strtod alone also reads " 8", "+8", hex floats (0x10 = 16), inf and nan. */
int cli_plain_number(const char *v);
/* Parses a non-negative integer option; returns 0 or prints and returns EXIT_USAGE. */
int cli_get_int(const char *cmd, const cli_opt *opts, int n_opts, const char *name, int64_t dflt, int64_t lo,
                int64_t *out);

/* The largest --batch of every command (cli_get_int refuses more, in the range its message gives). */
enum { CLI_MAX_BATCH = 1 << 16 };
/* --budget and --class-budget's value: points >= 0 ("0.3", "0.3%"); 0, or prints and returns EXIT_USAGE. */
int cli_points_parse(const char *cmd, const char *flag, const char *value, double *out);
/* `ptq smooth --alpha`'s value (`ptq run --smooth`'s): a number in [0, 1]; 0, or prints and returns EXIT_USAGE. */
int cli_alpha_parse(const char *cmd, const char *flag, const char *value, double *alpha);
/* The sensitivity report at path (`ptq plan --budget` and `ptq validate --sensitivity` read it) read by
 * ptq_sens_read and checked against model g, whose SHA-256 is model_sha256 (ptq_sens_check); a failure names path.
 * sens (NULL: not kept) and text (NULL: not kept) are the caller's to free (ptq_sens_summary_free, free). */
ptq_status cli_sens_load(ptq_ctx *ctx, const char *path, const ptq_graph *g, const char *model_sha256,
                         ptq_sens_summary *sens, char **text);
/* The report at path (read by cli_sens_load) was measured for a plan of this target, core and weight grid:
 * PTQ_ERR_INVALID_ARG naming path and the first that differs (the target first: it sets the others). */
ptq_status cli_sens_fits(ptq_ctx *ctx, const char *path, const ptq_sens_summary *sens, ptq_target target,
                         ptq_prec core, int reduce_range);
/* The report at path (its JSON text, read by cli_sens_load) was measured with the plan's calibrator, method (the
 * plan's "method", as sensitivity records it; NULL: not checked), else its gains are of other scales, and with its
 * placement, when it records one (its "all but" runs leave tensors out of the default plan of that placement).
 * A report without "method" (hand-made) is taken as the plan's, with a note on stderr from cmd unless quiet. */
ptq_status cli_sens_method_fits(ptq_ctx *ctx, const char *cmd, const char *path, const char *text, const char *method,
                                const char *placement, int quiet);
/* `ptq plan ... --sensitivity S --budget PTS`: the budgeted planner over
 * --data (cli/plan_budget.c); opts are plan's. Returns the exit code. */
int cli_plan_budgeted(const cli_opt *opts, int n_opts, const char *archive_path);
/* `ptq plan ... --method auto --data V`: the calibrator chosen per
 * activation by measurement (cli/plan_auto.c). Returns the exit code. */
int cli_plan_auto(const cli_opt *opts, int n_opts, const char *archive_path);

/* Progress on stderr when it is a terminal (or forced), at most 5 lines a second. */
typedef struct cli_progress {
    const char *stage;
    const char *unit;
    int64_t total;
    double t_start, t_last;
    int enabled;
    int64_t first_done; /* the images of the first batch, once it ran */
} cli_progress;

void cli_progress_start(cli_progress *p, const char *stage, const char *unit, int64_t total, int force);
void cli_progress_update(cli_progress *p, int64_t done);
void cli_progress_end(cli_progress *p, int64_t done);
/* A runner progress callback; user is a cli_progress. */
void cli_progress_cb(void *user, int64_t done, int64_t total);
double cli_now_s(void);
/* --profile's timeline: cli_mark notes when a phase of the command ended (what: a
 * static string); the first mark (main's "start") is the origin. At most 16 marks. */
void cli_mark(const char *what);
void cli_marks_print(void); /* on stderr: the time between marks, and since the last */
/* This process's peak resident memory in MiB (VmHWM of /proc/self/status:
 * the current image only, unlike getrusage, which keeps the peak of the
 * process that exec'd ptq); 0 where it cannot be read. */
double cli_peak_rss_mib(void);

/* A model ready to run on a data set: the graph, the executor on the
 * requested device (CPU with a notice when no GPU), the preprocessing and
 * the input geometry, checked against the data. */
typedef struct cli_session {
    ptq_session *ps;  /* owns what follows */
    char data_spec[1024]; /* ptq_session_data_spec: what reports and archives record as the preprocessing */
    ptq_graph *graph;
    ptq_exec *exec;
    ptq_dataset *data;
    ptq_preprocess pre;
    int64_t channels, height, width; /* the model input's sample shape */
    int64_t n_samples;
    char cmd[32]; /* the command, for the notes cli_session_close prints */
} cli_session;

typedef struct cli_session_opts {
    const char *model;
    const char *data;
    const char *device;      /* "cpu", "cuda", "cuda:N", "ref" or NULL (cpu) */
    const char *preprocess;  /* overrides on top of the model's ptq.preprocess metadata */
    const char *images_key, *labels_key, *layout;
    int profile;             /* time each node exactly (synchronises the GPU after each) */
    int allow_external_data; /* read HDF5 sets that refer to other files */
    const char *math;        /* "fp32" (NULL), "tf32" */
    const char *labels_file, *classes_file; /* image folders: --labels, --classes */
    const char *output;      /* --output: the logits output's name, or NULL */
    const char *inputs[CLI_MAX_REPEAT]; /* --input NAME=DATASET, each as given */
    int n_inputs;
} cli_session_opts;

/* --profile: prints on stderr the time the executor spent per op type, most
 * first, with the plan's rounding and the observers, for n_images through
 * a loop of loop_s seconds; loop_s < 0 for validate, whose table sums each
 * batch's FP32 and quantized run. Then the command's timeline (cli_mark). */
void cli_profile_print(const cli_session *s, int64_t n_images, double loop_s);

/* Opens the session and prints its notes on stderr ("ptq CMD: note: ..."), except in a command split over the
 * ranks of a job (cli_ranks_split), where cli_session_notes_agree prints them. */
ptq_status cli_session_open(ptq_ctx *ctx, const char *cmd, const cli_session_opts *o, cli_session *s);
/* The notes of a split command's sessions, printed once for the job: a note every rank has comes from rank 0 as
 * from one process; one that only some ranks have comes from each of them with its rank named ("rank 1 of 2: no
 * usable GPU ..."). A collective that every rank calls once after cli_session_open, whatever its status (s->ps NULL
 * when the session did not open: that rank has no note, and a note all the others have still prints once). A no-op
 * unless cli_ranks_split. */
void cli_session_notes_agree(const char *cmd, const cli_session *s);
/* What cli_session_open checks in o before it reads any file: --input NAME=DATASET, --device, --math. */
ptq_status cli_session_opts_check(ptq_ctx *ctx, const cli_session_opts *o);
/* `ptq run`'s check of a data set before its first stage: the model opened on it as the stages that read it
 * open it (every file and flag of o), on the CPU, without hashing anything, so that a value a stage would
 * refuse costs no calibration; labelled: it must have labels and one logits output. *named (NULL: not asked):
 * 1 when the model's inputs are fed from named datasets (ptq_session_named_inputs), 0 for images. */
ptq_status cli_session_check_data(ptq_ctx *ctx, const cli_session_opts *o, int labelled, int *named);
/* The session options from a command's --model, --data, --device, --preprocess
 * and CLI_DATA_OPTS (any may be absent). */
cli_session_opts cli_session_opts_from(const cli_opt *opts, int n_opts);
/* cli_session_open for a run that compares predictions with labels:
 * unlabelled data fails (PTQ_ERR_DATA, "<data> has no labels; <why>") and
 * the graph's shapes must be known (ptq_session_shapes). */
ptq_status cli_session_open_labelled(ptq_ctx *ctx, const char *cmd, const cli_session_opts *o, const char *why,
                                     cli_session *s);
void cli_session_close(cli_session *s);

#endif
