#!/usr/bin/env bash
# ptq under mpirun on one machine: calibrate (every image of Fashion-MNIST's
# test split), sensitivity (--samples 2000) and validate (every image) in
# one plain process, then under `mpirun -np N` for each N of PTQ_NP
# (default "1 2"; every rank on the same GPU when there is one), checking
# that the outputs are byte-identical to the plain run's (the sensitivity
# report less its seconds and work counts), with the wall time of each and
# the time the ranks spent in reductions (PTQ_DIST_STATS). Writes
# bench/results/<date>-mpi-<machine>.md.
#   bench/mpi_scaling.sh                  from a repository with build/ptq, or
#   bundle/bench/mpi_scaling.sh           from scripts/gpu-bundle.sh's bundle
# Environment: PTQ_DEVICE (default cuda), PTQ_NP, PTQ_MACHINE (default the
# host name), PTQ_MODEL, PTQ_FMNIST_DIR, PTQ_BATCH (default 256), PTQ_IMAGES
# (calibrate and validate on that many, sensitivity on at most 2000 of them).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ -x "$here/setup.sh" ]; then # the bundle
    eval "$("$here/setup.sh")"
    ptq=${PTQ_BIN:-$here/bin/ptq}
else
    ptq=${PTQ_BIN:-$here/build/ptq}
fi
[ -x "$ptq" ] || { echo "mpi_scaling: no ptq at $ptq" >&2; exit 2; }
command -v mpirun >/dev/null || { echo "mpi_scaling: no mpirun on PATH (apt-get install openmpi-bin)" >&2; exit 2; }
"$ptq" version | grep -q '^mpi: not built in' && { echo "mpi_scaling: $ptq is built without MPI" >&2; exit 2; }
model=${PTQ_MODEL:-$here/models/fmnist_resnet.onnx}
fm=${PTQ_FMNIST_DIR:-$here/data/fashion-mnist}
[ -f "$fm/t10k-images-idx3-ubyte.gz" ] || fm=/usr/share/datasets/fashion-mnist
device=${PTQ_DEVICE:-cuda}
batch=${PTQ_BATCH:-256}
nps=${PTQ_NP:-"1 2"}
images=${PTQ_IMAGES:-10000}
sens_images=$((images < 2000 ? images : 2000))
machine=${PTQ_MACHINE:-$(hostname -s)}
root_flag=""
[ "$(id -u)" -ne 0 ] || root_flag=--allow-run-as-root
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$ptq" data convert --images "$fm/t10k-images-idx3-ubyte.gz" --labels "$fm/t10k-labels-idx1-ubyte.gz" \
    --out "$work/t10k.h5" >/dev/null

# stage LABEL NP: runs the stage (NP 0: no mpirun) into $work/LABEL-NP.*, prints "seconds wait_s reduce_s bytes"
stage() {
    local label=$1 np=$2 out=$work/$1-$2 t0 t1
    local -a args
    case $label in
        calibrate) args=(calibrate --model "$model" --data "$work/t10k.h5" --out "$out.h5" --samples "$images") ;;
        sensitivity) args=(sensitivity --model "$model" --calib "$work/calibrate-0.h5" --data "$work/t10k.h5"
                           --samples "$sens_images" --out "$out.json") ;;
        validate) args=(validate --model "$model" --plan "$work/plan.json" --data "$work/t10k.h5" --report "$out"
                        --limit "$images") ;;
    esac
    args+=(--device "$device" --batch "$batch")
    t0=$(date +%s.%N)
    if [ "$np" -eq 0 ]; then
        "$ptq" "${args[@]}" >"$out.log" 2>&1
    else
        PTQ_DIST_STATS=1 mpirun $root_flag --oversubscribe --bind-to none -x PTQ_DIST_STATS -np "$np" \
            "$ptq" "${args[@]}" >"$out.log" 2>&1
    fi
    t1=$(date +%s.%N)
    # the slowest rank's waiting and reducing (every rank prints its line at the end)
    awk -v t0="$t0" -v t1="$t1" '
        /^ptq: dist: rank/ { for (i = 1; i <= NF; i++) { if ($i == "waiting") w = $(i + 1) > w ? $(i + 1) : w;
                                                      if ($i == "reducing") r = $(i + 1) > r ? $(i + 1) : r;
                                                      if ($i == "bytes,") b = $(i - 1) > b ? $(i - 1) : b } }
        END { printf "%.2f %.4f %.4f %d\n", t1 - t0, w, r, b }' "$out.log"
}

same() { # same LABEL NP: whether the outputs equal the plain run's
    local a=$work/$1-0 b=$work/$1-$2
    case $1 in
        calibrate) cmp -s "$a.h5" "$b.h5" ;;
        validate) cmp -s "$a/validate.json" "$b/validate.json" && cmp -s "$a/validate.md" "$b/validate.md" &&
                  cmp -s "$a/report.html" "$b/report.html" ;;
        sensitivity) cmp -s "$a.md" "$b.md" && python3 - "$a.json" "$b.json" <<'EOF'
import json, sys
work = ("runs", "nodes_run", "nodes_if_every_run_were_whole")  # and every seconds* key: how long, how much
a, b = ({k: v for k, v in json.load(open(p)).items() if k not in work and not k.startswith("seconds")}
        for p in sys.argv[1:3])
sys.exit(0 if a == b else 1)
EOF
        ;;
    esac
}

results=$here/bench/results
mkdir -p "$results"
report=$results/$(date +%Y-%m-%d)-mpi-$machine.md
{
    echo "# ptq under mpirun on $machine ($(date +%Y-%m-%d))"
    echo
    echo "\`bench/mpi_scaling.sh\` (PTQ_NP=\"$nps\"), code $(cat "$here/COMMIT" 2>/dev/null || git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)."
    echo "Model $(basename "$model"), Fashion-MNIST t10k ($images images), --device $device, --batch $batch;"
    echo "sensitivity on $sens_images images. $(command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1 | sed 's/^/GPU: /'; true)"
    echo "$("$ptq" version | grep '^mpi:')"
    echo
    echo "Wall time of the whole command (start-up, model and data opening included); wait = the slowest"
    echo "rank's time waiting at collectives for the others (load imbalance), reduce = its time in the"
    echo "collectives themselves, bytes = what one rank reduced or broadcast."
    echo
    echo "| stage | ranks | seconds | wait s | reduce s | bytes | identical to one process |"
    echo "|---|---|---|---|---|---|---|"
} >"$report"
for label in calibrate sensitivity validate; do
    read -r secs _ _ _ < <(stage "$label" 0)
    if [ "$label" = calibrate ]; then
        "$ptq" plan "$work/calibrate-0.h5" --model "$model" --out "$work/plan.json" >/dev/null
    fi
    echo "| $label | plain | $secs | | | | (reference) |" >>"$report"
    for np in $nps; do
        read -r secs wait red bytes < <(stage "$label" "$np") || true
        if same "$label" "$np"; then ok=yes; else ok="**NO**"; fi
        echo "| $label | $np | $secs | $wait | $red | $bytes | $ok |" >>"$report"
        echo "mpi_scaling: $label -np $np: ${secs} s, identical: $ok" >&2
    done
done
echo >>"$report"
echo "mpi_scaling: wrote $report" >&2
cat "$report"
