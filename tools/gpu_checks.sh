#!/usr/bin/env bash
# The GPU checks of hirfuzz in one go, on a machine whose TVM sees an NVIDIA GPU:
#   OUT=DIR CAMPAIGN_S=300 bash tools/gpu_checks.sh
# Runs, side by side: the `gpu` tests; `conformance --target cuda` over every op (writing the
# cuda-only failures the specs do not record yet as op-spec entries); and two 20-operator
# `--target llvm,cuda` campaigns of CAMPAIGN_S seconds, one with the default executors and one
# adding the fusing pipeline on llvm (`--executors vm,fused`: cuda's own build fuses already).
# Results land in OUT as they come, in few files (a device call brings back at most 8):
# env.txt (the GPU, TVM's handshake), gpu-tests.log, conformance.log, cuda-targets.yaml, and
# campaign-NAME.tgz per campaign (its log, summary.json, report.md and finding folders).
set -u
OUT=${OUT:-/tmp/hirfuzz-gpu-checks}
CAMPAIGN_S=${CAMPAIGN_S:-300}
JOBS=${JOBS:-4}
export PYTHONUNBUFFERED=1
mkdir -p "$OUT"
{ nvidia-smi -L; nvcc --version | tail -1; python3 --version; nproc
  python3 -c "from hirfuzz.dialects.relax.dialect import RelaxDialect; print(RelaxDialect().describe_installation())"
} > "$OUT/env.txt" 2>&1
# first the gate: a worker under the default memory bound sees the GPU and runs one op on it;
# without that nothing below means anything (and a short failure leaves time to fix and rerun)
if ! timeout 180 python3 -m pytest -q -m gpu -p no:cacheprovider -x \
    "tests/relax/test_sandbox.py::test_a_worker_under_the_default_bound_sees_the_gpu_and_runs_a_case_on_it" \
    >> "$OUT/env.txt" 2>&1; then
  echo "the gate failed: see env.txt"; tail -40 "$OUT/env.txt"; exit 1
fi

campaign() {  # NAME SEED ARGS...: one llvm,cuda campaign, bundled into campaign-NAME.tgz
  local name=$1 seed=$2; shift 2
  local dir=/tmp/hirfuzz-gpu-$name
  rm -rf "$dir"
  timeout $((CAMPAIGN_S + 150)) python3 -m hirfuzz --mode strict --target llvm,cuda --ops 20 --time "$CAMPAIGN_S" \
      --jobs "$JOBS" --seed "$seed" --no-progress --out "$dir" "$@" > "$dir.log" 2>&1
  echo "exit status $?" >> "$dir.log"
  cp "$dir.log" "$dir/campaign.log" 2>/dev/null || cp "$dir.log" "$dir-campaign.log"
  tar czf "$OUT/campaign-$name.tgz" -C "$dir" --exclude='*/worker*.log' --exclude='workers' . 2>/dev/null \
    || tar czf "$OUT/campaign-$name.tgz" -C /tmp "hirfuzz-gpu-$name-campaign.log"
}
campaign default 1 &
campaign fused 2 --executors vm,fused &
( timeout $((CAMPAIGN_S + 240)) python3 -m pytest -q -m gpu -n 2 -p no:cacheprovider > "$OUT/gpu-tests.log" 2>&1
  echo "exit status $?" >> "$OUT/gpu-tests.log" ) &
( timeout $((CAMPAIGN_S + 120)) python3 -m hirfuzz conformance --target cuda --samples 1 --jobs "$JOBS" \
    --write-targets "$OUT/cuda-targets.yaml" > "$OUT/conformance.log" 2>&1
  echo "exit status $?" >> "$OUT/conformance.log" ) &
wait
ls -la "$OUT"
for name in default fused; do echo "== $name"; tail -8 /tmp/hirfuzz-gpu-$name.log; done
tail -15 "$OUT/gpu-tests.log"; tail -5 "$OUT/conformance.log"
