#!/usr/bin/env bash
# Builds every libFuzzer target (clang, -DMX_FUZZ=ON; one per fuzz/fuzz_*.c) and runs each for
# SECONDS (default 60) with its seed corpus. New inputs go to build-fuzz/corpus-<target>/ (never
# into the seeds); a crash, leak, timeout (> 10 s per input) or out-of-memory (> 2 GiB) leaves
# build-fuzz/findings-<target>/ and fails the script once every target has run.
#
# Usage: bench/fuzz.sh [-j JOBS] [SECONDS] [TARGET...]
#   -j JOBS  targets run at once (default 1; each target is one process)
# Seeds come from the checkout (tests/, examples/, models/) and from the shared suite at
# $MX_SHARED (default ../shared, beside the checkout); seeds the shared suite lacks are skipped.
# Results in $MX_FUZZ_BUILD (default build-fuzz): log-<target>.txt (libFuzzer output) and
# fuzz-summary.tsv (target, seconds, executions, edges covered (cov), features (ft), corpus size,
# peak RSS, result).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=1
if [ "${1:-}" = "-j" ]; then
  jobs=$2
  shift 2
fi
seconds=${1:-60}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in fuzz/fuzz_*.c; do targets+=("$(basename "$f" .c)"); done
fi
shared=$(cd "${MX_SHARED:-../shared}" 2>/dev/null && pwd || echo /nonexistent)
export MX_SHARED=$shared
build=${MX_FUZZ_BUILD:-build-fuzz}

CC=clang cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMX_FUZZ=ON >/dev/null
cmake --build "$build" -j2 --target "${targets[@]}"

# seed DIR NAME_PATTERN SEARCH_DIRS...: copies of matching files (< 1 MiB), flattened.
seed() {
  local dir=$1 pattern=$2
  shift 2
  local d
  for d in "$@"; do
    [ -d "$d" ] || continue
    find -L "$d" -type f -name "$pattern" -size -1024k | while read -r f; do
      cp "$f" "$dir/$(echo "$f" | tr '/.' '__')"
    done
  done
}

# config.json + NUL + generation_config.json for every model folder that has both (fuzz_config
# reads the bytes after the first NUL as generation_config.json).
seed_config_pairs() {
  local dir=$1 d
  shift
  for d in "$@"; do
    [ -d "$d" ] || continue
    find -L "$d" -name generation_config.json | while read -r g; do
      local c
      c=$(dirname "$g")/config.json
      [ -f "$c" ] || continue
      { cat "$c"; printf '\0'; cat "$g"; } >"$dir/pair_$(echo "$g" | tr '/.' '__')"
    done
  done
}

# Seeds for one target in $build/seeds-<target>; prints the libFuzzer options of the target.
prepare() {
  local t=$1 seeds=$build/seeds-$1
  rm -rf "$seeds" && mkdir -p "$seeds"
  case $t in
    fuzz_mlir | fuzz_roundtrip)
      seed "$seeds" '*.mlir' tests examples "$shared/stablehlo-interpret"
      echo "-dict=fuzz/mlir.dict -max_len=65536" ;;
    fuzz_interp)
      # One seed per case (the files hold many, split by `// -----` lines): small inputs run
      # faster, and the target runs only the first few cases of an input.
      seed "$seeds" '*.mlir' tests examples "$shared/stablehlo-interpret"
      local f
      for f in "$seeds"/*; do
        awk -v out="$f" '/^\/\/ -----/ { close(out "_" n); n++; next } { print > (out "_" n) }' \
          "$f" && rm "$f"
      done
      echo "-dict=fuzz/mlir.dict -max_len=16384" ;;
    fuzz_safetensors)
      seed "$seeds" '*.safetensors' tests/data models "$shared/fixtures"
      echo "-max_len=1048576" ;;
    fuzz_gguf)
      seed "$seeds" '*.gguf' tests/data/gguf
      echo "-max_len=65536" ;;
    fuzz_config)
      seed "$seeds" '*config.json' models "$shared/fixtures"
      seed_config_pairs "$seeds" models "$shared/fixtures"
      echo "-max_len=65536" ;;
    fuzz_tokenizer)
      seed "$seeds" 'tokenizer*.json' tests/data/tokenizer models
      echo "-dict=fuzz/tokenizer.dict -max_len=1048576" ;;
    fuzz_tokenize)
      # One seed per test string of llama.cpp's vocab tests (separated by __ggml_vocab_test__
      # lines), behind an option byte that varies over the tokenizers and options.
      local f
      for f in "$shared"/tokenizers/hf-reference/*.inp; do
        [ -f "$f" ] || continue
        awk -v dir="$seeds" -v base="$(basename "$f" .inp)" '
          /^__ggml_vocab_test__$/ { close(sprintf("%s/%s_%03d", dir, base, n)); n++; next }
          { out = sprintf("%s/%s_%03d", dir, base, n);
            if (!(out in seen)) { seen[out] = 1; printf "%c", 64 + (n % 32) > out }
            else printf "\n" > out
            printf "%s", $0 > out }' "$f"
      done
      echo "-max_len=4096" ;;
    fuzz_chat_template)
      seed "$seeds" '*.jinja' tests/data/chat
      echo "-dict=fuzz/chat.dict -max_len=16384" ;;
    fuzz_image)
      seed "$seeds" '*.png' tests/data/image
      seed "$seeds" '*.jpg' tests/data/image
      seed "$seeds" '*.gif' tests/data/image
      seed "$seeds" '*.txt' tests/data/image/hostile
      echo "-max_len=262144" ;;
    fuzz_wav)
      seed "$seeds" '*.wav' tests/data/audio
      echo "-max_len=65536" ;;
    fuzz_json_schema)
      seed "$seeds" '*.json' tests/data/grammar
      echo "-max_len=16384" ;;
    fuzz_http_request)
      seed "$seeds" '*.bin' tests/data/server
      echo "-dict=fuzz/http_request.dict -max_len=65536" ;;
    *) echo "" ;;
  esac
}

# run TARGET: fuzzes it for $seconds and appends its line to the summary.
run() {
  local t=$1 opts
  opts=$(prepare "$t")
  local corpus=$build/corpus-$t findings=$build/findings-$t log=$build/log-$t.txt
  mkdir -p "$corpus"
  rm -rf "$findings" && mkdir -p "$findings"
  printf '== %s: %s s, %s seed files (%s)\n' "$t" "$seconds" "$(ls "$build/seeds-$t" | wc -l)" \
    "$(date -u +%H:%M:%S)"
  local rc=0
  # shellcheck disable=SC2086  # opts is a list of flags
  "$build/fuzz/$t" $opts -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$findings/" -print_final_stats=1 "$corpus" "$build/seeds-$t" \
    >"$log" 2>&1 || rc=$?
  local execs cov ft corp rss result=ok
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -1)
  local last
  last=$(grep -E '^#[0-9]+[[:space:]].*cov: ' "$log" | tail -1 || true)
  cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
  ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
  corp=$(echo "$last" | sed -n 's/.* corp: \([0-9]*\).*/\1/p')
  if [ "$rc" -ne 0 ] || [ -n "$(ls -A "$findings")" ]; then
    result="FINDING (exit $rc, see $log and $findings/)"
    grep -E '^(==[0-9]+==|SUMMARY|roundtrip failure|.*failure:)' "$log" | head -5 || true
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$seconds" "${execs:-?}" "${cov:-?}" "${ft:-?}" \
    "${corp:-?}" "${rss:-?}" "$result" >>"$build/fuzz-summary.tsv"
  printf '== %s: %s executions, cov %s, ft %s, corpus %s, peak %s MB: %s\n' "$t" "${execs:-?}" \
    "${cov:-?}" "${ft:-?}" "${corp:-?}" "${rss:-?}" "$result"
}

printf 'target\tseconds\texecutions\tcov\tft\tcorpus\tpeak_rss_mb\tresult\n' \
  >"$build/fuzz-summary.tsv"
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  run "$t" &
  running=$((running + 1))
done
wait
column -t -s $'\t' "$build/fuzz-summary.tsv"
if grep -q FINDING "$build/fuzz-summary.tsv"; then
  echo "fuzzing found problems"
  exit 1
fi
echo "fuzzing passed: ${targets[*]}"
