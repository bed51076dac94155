#!/usr/bin/env bash
# Builds every libFuzzer target (clang, -DMX_FUZZ=ON) and runs each for SECONDS (default 60)
# with its seed corpus. New inputs go to build-fuzz/corpus-<target>/ (never into the seeds);
# a crash leaves build-fuzz/crash-* and fails the script.
# Usage: bench/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_mlir fuzz_roundtrip fuzz_safetensors fuzz_config fuzz_tokenizer fuzz_chat_template
  fuzz_http_request)
shared=${MX_SHARED:-../shared}
build=build-fuzz

CC=clang cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMX_FUZZ=ON >/dev/null
cmake --build "$build" -j2 --target "${targets[@]}"

# Seeds per target: copies of the project's inputs (+ ../shared's when present), flattened.
seed() {  # seed DIR PATTERN SEARCH_DIRS...
  local dir=$1 pattern=$2
  shift 2
  rm -rf "$dir" && mkdir -p "$dir"
  local d
  for d in "$@"; do
    [ -d "$d" ] || continue
    find "$d" -type f -name "$pattern" -size -1024k | while read -r f; do
      cp "$f" "$dir/$(echo "$f" | tr '/.' '__')"
    done
  done
}

for t in "${targets[@]}"; do
  seeds=$build/seeds-$t
  dict=()
  case $t in
    fuzz_mlir | fuzz_roundtrip)
      seed "$seeds" '*.mlir' tests examples "$shared/stablehlo-interpret"
      dict=(-dict=fuzz/mlir.dict) ;;
    fuzz_safetensors) seed "$seeds" '*.safetensors' tests/data "$shared/fixtures" ;;
    fuzz_config) seed "$seeds" 'config.json' models "$shared/fixtures" ;;
    fuzz_tokenizer)
      seed "$seeds" 'tokenizer.json' tests/data/tokenizer models
      dict=(-dict=fuzz/tokenizer.dict) ;;
    fuzz_chat_template)
      seed "$seeds" '*' tests/data/chat
      dict=(-dict=fuzz/chat.dict) ;;
    fuzz_http_request)
      seed "$seeds" '*.bin' tests/data/server
      dict=(-dict=fuzz/http_request.dict) ;;
  esac
  corpus=$build/corpus-$t
  mkdir -p "$corpus"
  printf '\n== %s: %s s, %s seed files\n' "$t" "$seconds" "$(ls "$seeds" | wc -l)"
  "$build/fuzz/$t" "${dict[@]}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -max_len=1048576 -artifact_prefix="$build/" -print_final_stats=1 "$corpus" "$seeds" 2>&1 |
    grep -E '^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb|cov:|==[0-9]+==|SUMMARY)' |
    tail -5 || true
  if ls "$build"/crash-* "$build"/leak-* "$build"/timeout-* >/dev/null 2>&1; then
    echo "$t: finding(s) in $build/"
    exit 1
  fi
done
echo "fuzzing passed: ${targets[*]}"
