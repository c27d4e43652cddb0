#!/usr/bin/env bash
# libFuzzer run of the targets in fuzz/ (issue 14, item 6): configures and builds them in their
# own build directory (clang-14, LS_FUZZ=ON: AddressSanitizer + UBSan + coverage in every
# library), then runs each from a fresh copy of its seed corpus (fuzz/corpus/<target>/, with
# fuzz/dict/<target>.dict) for SECONDS, and prints a table: executions, findings (crash-,
# leak-, timeout- and oom- files written), the corpus it grew to. Exits 1 on any finding.
#   bash scripts/fuzz.sh SECONDS [TARGET[=SECONDS]...]     e.g. bash scripts/fuzz.sh 120 request=600
#   targets: safetensors gguf tokenizer_json tokenize template request messages responses native grammar (all when none is named;
#   a TARGET=SECONDS alone changes that target's time and still runs all)
#   env: LS_FUZZ_DIR (default build-fuzz), LS_JOBS (default nproc), CXX (default clang++-14),
#        LS_FUZZ_WERROR (default OFF)
# A finding's input is in LS_FUZZ_DIR/fuzz-run/<target>/artifacts/; reproduce it with
#   LS_FUZZ_DIR/fuzz/fuzz_<target> FILE
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:?usage: scripts/fuzz.sh SECONDS [TARGET[=SECONDS]...]}
shift
all=(safetensors gguf tokenizer_json tokenize template request messages responses native grammar)
declare -A secs
targets=()
for a in "$@"; do
  t=${a%%=*}
  [[ " ${all[*]} " == *" $t "* ]] || { echo "fuzz.sh: unknown target '$t' (known: ${all[*]})" >&2; exit 2; }
  [[ $a == *=* ]] && secs[$t]=${a#*=} || targets+=("$t")
done
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
dir=${LS_FUZZ_DIR:-build-fuzz}
jobs=${LS_JOBS:-$(nproc)}

# -Werror is off for this build only: the project's warnings are enforced by its GCC build, and
# clang has warnings GCC lacks (-Wunused-lambda-capture, ...) that must not stop a fuzz run;
# they are still printed. LS_FUZZ_WERROR=ON turns it back on.
cmake -S . -B "$dir" -DCMAKE_CXX_COMPILER="${CXX:-clang++-14}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DLS_FUZZ=ON -DLS_BUILD_TESTS=OFF -DLS_WEB=OFF -DLS_WERROR="${LS_FUZZ_WERROR:-OFF}" > /dev/null
cmake --build "$dir" -j"$jobs" --target $(printf 'fuzz_%s ' "${targets[@]}")

run="$dir/fuzz-run"
status=0
rows=()
for t in "${targets[@]}"; do
  work="$run/$t"
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/artifacts"
  cp fuzz/corpus/"$t"/* "$work/corpus/"
  args=(-max_total_time="${secs[$t]:-$seconds}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
        -artifact_prefix="$work/artifacts/")
  [ -f "fuzz/dict/$t.dict" ] && args+=(-dict="fuzz/dict/$t.dict")
  echo "fuzz.sh: $t for ${secs[$t]:-$seconds} s (log: $work/log)"
  rc=0
  "$dir/fuzz/fuzz_$t" "${args[@]}" "$work/corpus" > "$work/log" 2>&1 || rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$work/log" | tail -1 | awk '{print $2}')
  cov=$(grep -oE '^#[0-9]+.*cov: [0-9]+' "$work/log" | tail -1 | grep -oE '[0-9]+$' || true)
  findings=$(find "$work/artifacts" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
             -o -name 'oom-*' \) | wc -l)
  corpus=$(find "$work/corpus" -type f | wc -l)
  kib=$(du -sk "$work/corpus" | cut -f1)
  note=""
  if [ "$findings" -gt 0 ]; then
    note="see $work/artifacts"
    status=1
  elif [ "$rc" -ne 0 ]; then
    note="exit $rc without an artifact: see $work/log"
    findings=1
    status=1
  fi
  rows+=("$(printf '%-15s %8s %12s %6s %9s %9s  %s' "$t" "${secs[$t]:-$seconds}" "${execs:-?}" \
           "${cov:-?}" "$findings" "$corpus (${kib} KiB)" "$note")")
done

echo
printf '%-15s %8s %12s %6s %9s %9s\n' target seconds executions cov findings corpus
for r in "${rows[@]}"; do echo "$r"; done
exit "$status"
