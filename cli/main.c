/* The ptq command: dispatches to one function per subcommand. Exit codes
 * are listed in cli/cli.h and README.md. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

int cmd_eval(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_data(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_sensitivity(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_smooth(int argc, char **argv);

static const char main_help[] =
    "usage: ptq <command> [options]    (ptq <command> --help or ptq help <command> for its options)\n"
    "\n"
    "ptq: post-training quantization and calibration for ONNX models.\n"
    "\n"
    "commands:\n"
    "  run           every stage into one folder, resuming what is done: calibrate, sensitivity, plan,\n"
    "                validate, exports\n"
    "  calibrate     observe every quantizable tensor over a data set -> calibration archive (HDF5)\n"
    "  export        ranges from an archive (minmax, entropy, percentile, mse) -> TensorRT cache,\n"
    "                ONNX Runtime tables or JSON; or a plan -> Q/DQ ONNX model (--format qdq)\n"
    "  merge         add archives of disjoint shards exactly\n"
    "  smooth        move activation outliers into the weights (SmoothQuant) before calibration\n"
    "  plan          the default precision plan (FP16 edges, INT8/FP8 core) from an archive\n"
    "  validate      FP32 against a plan's simulated quantization: accuracy, per-class deltas, confusion\n"
    "  sensitivity   per tensor: what quantizing only it costs, what keeping only it in FP16 recovers\n"
    "  eval          FP32 accuracy, per-class metrics and confusion matrix of a model on a data set\n"
    "  info          a model's inputs, outputs, ops, parameters and quantizable tensors\n"
    "  data convert  IDX files -> HDF5 image set (zstd) or PNG folder; PNG or JPEG folder -> HDF5 set\n"
    "  version       print the version and whether a GPU is usable\n"
    "\n"
    "every command also takes --max-memory SIZE (e.g. 4G): the memory ptq may plan to use\n"
    "  (default: what the system reports available); larger sizes exit 10 before allocating\n"
    "\n"
    "exit codes: 0 ok, 1 internal error, 2 usage (or an output that is an input),\n"
    "  3 file missing/unreadable/unwritable or not a regular file, 4 malformed file (or one\n"
    "  referring to data outside itself), 5 unsupported op/type/attribute, 6 data does not fit the model,\n"
    "  7 bad data (empty set, label out of range, undecodable image), 8 no GPU,\n"
    "  9 CUDA error, 10 out of memory (or over --max-memory), 11 no plan met the --budget (the best\n"
    "  one is written), 12 the quantized outputs collapsed (validate, run; the report is written)\n";

/* OpenBLAS picks its kernels when it loads; when it fell back to generic ones
 * on a CPU it does not know, start again with the right ones named. Set
 * OPENBLAS_CORETYPE yourself to choose; PTQ_BLAS_REEXEC=0 turns this off. */
static void pick_blas_kernels(char **argv)
{
    const char *off = getenv("PTQ_BLAS_REEXEC");
    const char *core = ptq_cpu_blas_core_suggested();
    if (!core || getenv("OPENBLAS_CORETYPE") || (off && strcmp(off, "0") == 0))
        return;
    if (setenv("OPENBLAS_CORETYPE", core, 1) == 0)
        execv("/proc/self/exe", argv);
    /* exec failed: carry on with the generic kernels */
}

/* The commands; distributed ones split their work over the ranks of an MPI
 * job, the others run on rank 0 while the rest wait for its exit code. */
static const struct {
    const char *name;
    int (*fn)(int argc, char **argv);
    int distributed;
} commands[] = {{"eval", cmd_eval, 0},          {"info", cmd_info, 0},
                {"data", cmd_data, 0},          {"calibrate", cmd_calibrate, 1},
                {"export", cmd_export, 0},      {"validate", cmd_validate, 1},
                {"run", cmd_run, 1},            {"sensitivity", cmd_sensitivity, 1},
                {"plan", cmd_plan, 0},          {"merge", cmd_merge, 0},
                {"smooth", cmd_smooth, 0}};

static const char version_help[] =
    "usage: ptq version\n"
    "\n"
    "Prints the version, whether a GPU is usable (and why not when none is), which OpenBLAS\n"
    "kernels the CPU path runs, and whether ptq has MPI.\n";

static int version(int argc, char **argv)
{
    cli_opt opts[] = {{"help", 0, NULL}};
    const char *pos[1];
    int n_pos = 0, rc = cli_parse("version", argc, argv, opts, 1, pos, &n_pos, 0);
    if (rc)
        return rc;
    if (cli_get(opts, 1, "help")) {
        fputs(version_help, stdout);
        return 0;
    }
    char mpi[300], why[256] = "";
    if (!ptq_dist_built())
        snprintf(mpi, sizeof mpi, "not built in (one process; see README \"Running across GPUs\")");
    else
        snprintf(mpi, sizeof mpi, "%s (%d rank%s)", ptq_dist_library(), ptq_dist_size(),
                 ptq_dist_size() > 1 ? "s" : "; not started by mpirun or srun");
    const int gpu = ptq_cuda_available(why, sizeof why);
    printf("ptq %s%s\n", ptq_version(), gpu ? " (cuda: gpu present)" : "");
    if (!gpu)
        printf("gpu: none usable (%s): commands run on the CPU\n", why[0] ? why : "no reason given");
    printf("openblas kernels: %s\nmpi: %s\n", ptq_cpu_blas_core(), mpi);
    return 0;
}

static int dispatch(int argc, char **argv);

/* `ptq help CMD` (and `ptq help data convert`) is `ptq CMD --help`; argv[1] is "help", argc >= 3 */
static int help_for(int argc, char **argv)
{
    const char *cmd = argv[2];
    const int is_help = strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0;
    int known = strcmp(cmd, "version") == 0 || is_help;
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        known |= strcmp(cmd, commands[i].name) == 0;
    if (!known) {
        if (cli_is_writer())
            fprintf(stderr, "ptq: unknown command '%s'\n\n%s", cli_shown(cmd), main_help);
        return EXIT_USAGE;
    }
    const int n_words = strcmp(cmd, "data") == 0 && argc >= 4 && strcmp(argv[3], "convert") == 0 ? 2 : 1;
    /* a --help (or -h) after the command asks for the same page: `ptq help eval --help`; an argument after it is
     * the one named */
    int extra = 2 + n_words;
    if (argc > extra && (strcmp(argv[extra], "--help") == 0 || strcmp(argv[extra], "-h") == 0))
        extra++;
    if (argc > extra) {
        if (cli_is_writer())
            fprintf(stderr, "ptq help: error: unexpected argument '%s' (usage: ptq help [COMMAND])\n",
                    cli_shown(argv[extra]));
        return EXIT_USAGE;
    }
    if (is_help) {
        if (cli_is_writer())
            fputs(main_help, stdout);
        return 0;
    }
    char help_flag[] = "--help";
    char *sub_argv[5] = {argv[0], argv[2], n_words == 2 ? argv[3] : help_flag, help_flag, NULL};
    return dispatch(2 + n_words, sub_argv);
}

static int dispatch(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "help") == 0)
        return help_for(argc, argv);
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        if (cli_is_writer())
            fputs(main_help, argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_USAGE : 0;
    }
    const char *cmd = argv[1];
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(cmd, commands[i].name) == 0)
            return commands[i].distributed ? commands[i].fn(argc - 2, argv + 2)
                                           : cli_on_rank0(commands[i].fn, argc - 2, argv + 2);
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0)
        return version(argc - 2, argv + 2);
    if (cli_is_writer())
        fprintf(stderr, "ptq: unknown command '%s'\n\n%s", cli_shown(cmd), main_help);
    return EXIT_USAGE;
}

int main(int argc, char **argv)
{
    ptq_hdf5_check_main(argc, argv); /* the HDF5 check's fresh process ends here; else it is one from now on */
    cli_mark("start"); /* --profile's timeline starts here */
    pick_blas_kernels(argv);
    ptq_atomic_cleanup_on_signals(); /* no temporary file outlives Ctrl-C or a kill */
    int rc = cli_dist_start(&argc, &argv);
    if (rc == 0)
        rc = dispatch(argc, argv);
    cli_hash_forget(NULL); /* no hashing thread outlives the command */
    /* out before MPI_Finalize, which no rank leaves before all have entered it: mpirun kills the job when the
     * first rank exits non-zero, and rank 0's buffered stdout (run --json's summary) would die with it */
    fflush(stdout);
    cli_dist_stop();
    return rc;
}
