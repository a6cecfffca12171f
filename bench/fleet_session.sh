#!/usr/bin/env bash
# A two-host fleet on one machine: one agent per GPU (CUDA_VISIBLE_DEVICES=0 and =1, named fleet-a and fleet-b),
# torchrun with a c10d rendezvous on 127.0.0.1, NCCL between them; then again with a second process doing bf16
# matmuls on fleet-b's GPU, which the fleet should name. Without GPUs it runs on the CPU (gloo), the rival being
# CPU burners. Usage: bench/fleet_session.sh OUTDIR [STAGES...]   (default stages: probe matmul)
set -uo pipefail
OUT=${1:?an output folder}; shift
STAGES=${*:-probe matmul}
mkdir -p "$OUT"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
python3 -c "import rigcheck.fleet" 2>/dev/null || source "$ROOT/bench/devpath.sh"
GPUS=$(python3 -c "import torch; print(torch.cuda.device_count())")
export NCCL_NVLS_ENABLE=0

fleet() {  # $1 = tag
    local port=$((29600 + RANDOM % 300)) tag=$1
    local tr=(python3 -m torch.distributed.run --nnodes=2 --nproc-per-node=1 --rdzv-backend=c10d
              --rdzv-endpoint=127.0.0.1:$port --rdzv-id=bench-$tag)
    local args=($STAGES --profile quick --lost-after 60)
    CUDA_VISIBLE_DEVICES=0 RIGCHECK_NODE_NAME=fleet-a RIGCHECK_STORE="$OUT/$tag-a.db" \
        timeout 540 "${tr[@]}" -m rigcheck.fleet "${args[@]}" > "$OUT/$tag-a.out" 2> "$OUT/$tag-a.err" &
    local a=$!
    sleep 2
    CUDA_VISIBLE_DEVICES=1 RIGCHECK_NODE_NAME=fleet-b RIGCHECK_STORE="$OUT/$tag-b.db" \
        timeout 540 "${tr[@]}" --rdzv-conf=is_host=0 -m rigcheck.fleet "${args[@]}" > "$OUT/$tag-b.out" 2> "$OUT/$tag-b.err" &
    wait $a
    wait
    echo "== $tag: fleet summary (rank 0)"; cat "$OUT/$tag-a.out"
}

date -u; nvidia-smi -L 2>/dev/null; python3 -c "import torch; print('torch', torch.__version__, 'GPUs', torch.cuda.device_count())"
fleet clean
if [ "$GPUS" -ge 2 ]; then
    CUDA_VISIBLE_DEVICES=1 python3 -c "
import torch, time
a = torch.randn(8192, 8192, device='cuda', dtype=torch.bfloat16)
end = time.time() + 600
while time.time() < end:
    for _ in range(20): a @ a
    torch.cuda.synchronize()" > /dev/null 2>&1 &
else
    for _ in 1 2 3; do python3 -c "while True: pass" > /dev/null 2>&1 & done
fi
RIVAL=$!
sleep 3
fleet rival
kill $(jobs -p) 2>/dev/null
date -u
