#!/usr/bin/env bash
# The recorded GPU run of the whole torchvision zoo (issue 18 item 1): bench/zoo_run.py with every model at
# 224x224 and ZOO_IMAGES random images (default 256), ptq on --device cuda, calibration on the first
# ZOO_CALIB (64), the Q/DQ model in onnxruntime on the first ZOO_QDQ (32), ZOO_JOBS models side by side (4,
# each with the CPU count / 4 onnxruntime, torch and ptq threads; regnet_y_128gf alone with all), starting no
# model that would likely end after ZOO_DEADLINE seconds (540), and killing what still runs at ZOO_HARD (585),
# under a device tool's 600 s per command; ZOO_PTQ_ARGS: more arguments of ptq eval, calibrate and validate
# (e.g. "--math fp64"). Writes OUT/zoo-gpu.md (the record, rewritten after every model)
# and OUT/zoo-gpu.log (zoo_run's output); prints the failures and the summary.
#
#     bench/zoo_gpu.sh PTQ OUT [PREVIOUS_RECORD]
#     bench/zoo_gpu.sh bundle/bin/ptq "$OUT"                                # the first call
#     bench/zoo_gpu.sh bundle/bin/ptq "$OUT" bench/results/zoo-gpu-part.md  # the next: the first call's record
#
# PREVIOUS_RECORD (a record this script wrote, brought back into the tree) is copied to OUT/zoo-gpu.md and
# resumed: only its missing models and opsets run, and the header lists both calls. Repeat until the record's
# "Not run" line is gone. Needs python3 with torch, torchvision, onnxruntime, h5py and numpy (onnx is optional:
# without it regnet_y_128gf keeps torch's external data layout, a file per tensor).
set -u
if [ $# -lt 2 ]; then
    sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 2
fi
PTQ=$(realpath -m "$1")
OUT=$(realpath -m "$2")
PREV=${3:+$(realpath -m "$3")}
cd "$(dirname "$0")/.."
mkdir -p "$OUT"
rec=$OUT/zoo-gpu.md
log=$OUT/zoo-gpu.log
if [ -n "$PREV" ]; then
    cp "$PREV" "$rec" || exit 2
fi
setsid "${PYTHON:-python3}" bench/zoo_run.py --ptq "$PTQ" --device cuda --out "$rec" --work /tmp/ptq-zoo-gpu \
    --resume --images "${ZOO_IMAGES:-256}" --calib "${ZOO_CALIB:-64}" --qdq-images "${ZOO_QDQ:-32}" \
    --jobs "${ZOO_JOBS:-4}" --deadline "${ZOO_DEADLINE:-540}" ${ZOO_ONLY:+--only "$ZOO_ONLY"} \
    ${ZOO_PTQ_ARGS:+--ptq-args "$ZOO_PTQ_ARGS"} >"$log" 2>&1 &
pid=$!
# the whole process group (workers, their ptq and onnxruntime) if it runs past ZOO_HARD
(sleep "${ZOO_HARD:-585}" && kill -TERM -- "-$pid" && sleep 5 && kill -KILL -- "-$pid") >/dev/null 2>&1 &
watchdog=$!
wait "$pid"
rc=$?
kill "$watchdog" 2>/dev/null
echo "zoo_run exit $rc; record $rec, log $log"
grep -E '^\| [a-z].* \| FAIL \|' "$rec"
grep -E '^(Passed|Not run):' "$rec"
tail -n 5 "$log" | grep -v '^{' | cut -c1-400
exit "$rc"
