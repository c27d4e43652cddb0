#!/usr/bin/env bash
# The speed matrix of issue 17: synthetic Qwen2.5 shapes (0.5B and 1.5B by default) quantized
# into GGUF files of every type `quantize` writes, each run by `logitscope bench` at 1 and 2
# threads for pp128 + tg64 and pp1024, in one table that names the CPU. Given a llama-bench
# binary you built yourself outside this repository (LS_LLAMA_BENCH=/path/to/llama-bench), it
# runs llama-bench on the same files with the same thread counts in the same run and adds
# llama.cpp's figures and the ratios (ours / theirs). tg64 decodes from an empty context, as
# llama-bench's does; "tg64 d1024" decodes 64 tokens after the 1,024-token prompt (ours only:
# llama-bench 4748 has no depth), its roofline counting the KV cache read beside the weights; a
# starred % had stretches of decode faster than the bandwidth read beside them (not reliable).
# pp1024 runs in chunks of 512 tokens, as llama-bench's default n_ubatch does (the commands' own
# default chunk is 128). Models are made once in $LS_BENCH_MODELS (default bench-models/,
# git-ignored).
# Usage: bash bench/run_matrix.sh [build/app/logitscope]
# Environment: LS_BENCH_SHAPES ("qwen2.5-0.5b qwen2.5-1.5b"), LS_BENCH_TYPES
# ("bf16 f16 q8_0 q6_k q5_k q5_k_m q4_k q4_k_m q4_0 q5_0 q3_k_m q2_k"), LS_BENCH_THREADS ("1 2"),
# LS_LLAMA_BENCH (unset: ours only), LS_BENCH_REPEAT (1: on a shared machine, 3 or more; ours and
# llama-bench alternate and each figure is the best of its runs).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/app/logitscope}
models=${LS_BENCH_MODELS:-bench-models}
shapes=${LS_BENCH_SHAPES:-"qwen2.5-0.5b qwen2.5-1.5b"}
types=${LS_BENCH_TYPES:-"bf16 bf16-act f16 q8_0 q6_k q5_k q5_k_m q4_k q4_k_m q4_0 q5_0 q3_k_m q2_k"}
threads_list=${LS_BENCH_THREADS:-"1 2"}
repeat=${LS_BENCH_REPEAT:-1}
llama=${LS_LLAMA_BENCH:-}
py=/usr/bin/python3
mkdir -p "$models"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
echo "logitscope: $("$bin" --version)${llama:+; llama-bench: $llama}"
echo
printf '| shape | weights | threads | pp128 tok/s | pp1024 tok/s | tg64 tok/s | tg %% of roofline | tg64 d1024 tok/s | d1024 %% of roofline | peak RSS / (weights + KV) |'
[ -n "$llama" ] && printf ' llama.cpp pp128 | pp1024 | tg64 | ratio pp128 | pp1024 | tg64 |'
printf '\n|---|---|---|---|---|---|---|---|---|---|'
[ -n "$llama" ] && printf -- '---|---|---|---|---|---|'
printf '\n'
for shape in $shapes; do
  src="$models/$shape-bf16"
  [ -f "$src/model.safetensors" ] || "$bin" synth --shape "$shape" --dtype bf16 --seed 1 --out "$src" > /dev/null
  for type in $types; do
    file_type=$type flags=()
    if [ "$type" = bf16-act ]; then file_type=bf16 flags=(--bf16-activations); fi
    model="$models/$shape-$file_type.gguf"
    [ -f "$model" ] || "$bin" quantize --model "$src" --type "$file_type" --out "$model" > /dev/null
    for threads in $threads_list; do
      short="" long="" theirs=""
      for _ in $(seq "$repeat"); do  # ours and theirs alternate, so both see the same machine
        short+=$("$bin" bench --model "$model" --threads "$threads" --prompt-tokens 128 --gen-tokens 64 --depth 0 --json "${flags[@]}")$'\n'
        long+=$("$bin" bench --model "$model" --threads "$threads" --prompt-tokens 1024 --gen-tokens 64 --depth 1024 --chunk-tokens 512 --json "${flags[@]}")$'\n'
        if [ -n "$llama" ]; then
          theirs+=$("$llama" -m "$model" -t "$threads" -p 128,1024 -n 64 -r 1 -o jsonl 2> /dev/null)$'\n'
        fi
      done
      SHORT="$short" LONG="$long" THEIRS="$theirs" "$py" bench/matrix_row.py "$shape" "$type"
    done
  done
done
