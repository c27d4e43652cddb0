#!/usr/bin/env bash
# Runs `logitscope bench` over the matrix of issue 5 (synthetic Qwen2.5-0.5B and -1.5B shapes;
# each weight type this build can load; 1 and 2 threads) and prints one table. Models are
# synthesized once into $LS_BENCH_MODELS (default: bench-models/ in the repository).
# Usage: bash bench/run_matrix.sh [build/app/logitscope]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/app/logitscope}
models=${LS_BENCH_MODELS:-bench-models}
shapes=${LS_BENCH_SHAPES:-"qwen2.5-0.5b qwen2.5-1.5b"}
dtypes=${LS_BENCH_DTYPES:-"bf16"}
mkdir -p "$models"
printf '| shape | weights | threads | prefill tok/s | decode tok/s | roofline tok/s | decode %% of roofline | GB/s | peak RSS MiB | weights MiB |\n'
printf '|---|---|---|---|---|---|---|---|---|---|\n'
for shape in $shapes; do
  for dtype in $dtypes; do
    dir="$models/$shape-$dtype"
    [ -f "$dir/model.safetensors" ] || "$bin" synth --shape "$shape" --dtype "$dtype" --seed 1 --out "$dir" --no-tokenizer > /dev/null
    for threads in 1 2; do
      "$bin" bench --model "$dir" --threads "$threads" --json |
        /usr/bin/python3 -c '
import json, sys
j = json.load(sys.stdin)
print("| {} | {} | {} | {:.1f} | {:.2f} | {:.2f} | {:.1f} | {:.1f} | {:.0f} | {:.0f} |".format(
    sys.argv[1], j["weights"], j["threads"], j["prefill_tokens_per_s"], j["decode_tokens_per_s"],
    j["decode_roofline_tokens_per_s"], 100 * j["decode_fraction_of_roofline"],
    j["read_bandwidth_gb_per_s"], j["peak_rss_mib"], j["weights_mib"]))' "$shape"
    done
  done
done
