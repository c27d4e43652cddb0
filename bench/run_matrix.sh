#!/usr/bin/env bash
# Runs `logitscope bench` over the matrix of issue 5 (synthetic Qwen2.5-0.5B and -1.5B shapes;
# BF16 safetensors and Q8_0 / Q4_0 GGUF files quantized from it; 1 and 2 threads) and prints
# one table. Models are synthesized once into $LS_BENCH_MODELS (default: bench-models/).
# Usage: bash bench/run_matrix.sh [build/app/logitscope]
# Environment: LS_BENCH_SHAPES, LS_BENCH_TYPES (bf16 q8_0 q4_0), LS_BENCH_THREADS (1 2),
# LS_BENCH_ARGS (extra bench flags, e.g. "--kv-type f16").
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/app/logitscope}
models=${LS_BENCH_MODELS:-bench-models}
shapes=${LS_BENCH_SHAPES:-"qwen2.5-0.5b qwen2.5-1.5b"}
types=${LS_BENCH_TYPES:-"bf16 q8_0 q4_0"}
threads_list=${LS_BENCH_THREADS:-"1 2"}
mkdir -p "$models"
printf '| shape | weights | threads | prefill tok/s | decode tok/s | roofline tok/s | decode %% of roofline | GB/s | peak RSS MiB | weights + KV MiB |\n'
printf '|---|---|---|---|---|---|---|---|---|---|\n'
for shape in $shapes; do
  src="$models/$shape-bf16"
  [ -f "$src/model.safetensors" ] || "$bin" synth --shape "$shape" --dtype bf16 --seed 1 --out "$src" > /dev/null
  for type in $types; do
    model="$src"
    if [ "$type" != bf16 ]; then
      model="$models/$shape-$type.gguf"
      [ -f "$model" ] || "$bin" quantize --model "$src" --type "$type" --out "$model" > /dev/null
    fi
    for threads in $threads_list; do
      # shellcheck disable=SC2086
      "$bin" bench --model "$model" --threads "$threads" --json ${LS_BENCH_ARGS:-} |
        /usr/bin/python3 -c '
import json, sys
j = json.load(sys.stdin)
print("| {} | {} | {} | {:.1f} | {:.2f} | {:.2f} | {:.1f} | {:.1f} | {:.0f} | {:.0f} |".format(
    sys.argv[1], j["weights"], j["threads"], j["prefill_tokens_per_s"], j["decode_tokens_per_s"],
    j["decode_roofline_tokens_per_s"], 100 * j["decode_fraction_of_roofline"],
    j["read_bandwidth_gb_per_s"], j["peak_rss_mib"], j["weights_mib"] + j["kv_cache_mib"]))' "$shape"
    done
  done
done
