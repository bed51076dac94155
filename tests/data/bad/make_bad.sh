#!/usr/bin/env bash
# Writes the corpus of broken checkpoints into OUT_DIR, one folder per case, each a copy of the
# bundled stories260K model (BASE_DIR) with one defect. tests/data/bad/expected.txt gives the
# exact error each case must produce; tests/bad_checkpoints.sh runs them. Nothing binary is
# committed: every case is made here, with coreutils only (the biggest is ~1 MB).
# Usage: make_bad.sh BASE_DIR OUT_DIR
set -euo pipefail
base=$1
out=$2
mkdir -p "$out"
st=model.safetensors

mk() {  # mk NAME: a fresh copy of the base model
  rm -rf "${out:?}/$1"
  mkdir -p "$out/$1"
  cp "$base"/config.json "$base"/generation_config.json "$base"/tokenizer.json \
    "$base"/tokenizer_config.json "$base/$st" "$out/$1/"
}

le64() {  # le64 N: N as 8 little-endian bytes
  local n=$1 i s=""
  for i in 0 1 2 3 4 5 6 7; do
    s+=$(printf '\\x%02x' $(((n >> (8 * i)) & 255)))
  done
  printf "$s"
}

hlen() { od -An -t u8 -N8 "$1" | tr -d ' '; }  # the safetensors header length of FILE

offset_of() {  # offset_of FILE TEXT: byte offset of the first occurrence of TEXT
  grep -obUaF -- "$2" "$1" | head -1 | cut -d: -f1
}

poke() {  # poke FILE OFFSET BYTES (printf format): overwrite in place
  printf "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

poke_le64() {  # poke_le64 FILE OFFSET N
  le64 "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

replace_first() {  # replace_first FILE OLD NEW (same length): in the header
  local at
  at=$(offset_of "$1" "$2")
  [ -n "$at" ] || { echo "make_bad.sh: '$2' not found in $1" >&2; exit 1; }
  poke "$1" "$at" "$3"
}

st_file() {  # st_file FILE HEADER DATA_BYTES: a hand-made safetensors file of zero data
  { le64 ${#2}; printf '%s' "$2"; head -c "$3" /dev/zero; } >"$1"
}

# ---- missing files ----
mk missing_config && rm "$out/missing_config/config.json"
mk missing_weights && rm "$out/missing_weights/$st"
mk missing_tokenizer && rm "$out/missing_tokenizer/tokenizer.json"
mk missing_shard
mv "$out/missing_shard/$st" "$out/missing_shard/model-00001-of-00002.safetensors"
printf '{"metadata": {}, "weight_map": {"model.embed_tokens.weight": "%s", "model.norm.weight": "%s"}}\n' \
  model-00001-of-00002.safetensors model-00002-of-00002.safetensors \
  >"$out/missing_shard/model.safetensors.index.json"

# ---- truncated and corrupt safetensors ----
mk empty_weights && : >"$out/empty_weights/$st"
mk short_weights && head -c 5 "$base/$st" >"$out/short_weights/$st"
mk truncated_header && head -c 100 "$base/$st" >"$out/truncated_header/$st"
mk truncated_data && head -c 600000 "$base/$st" >"$out/truncated_data/$st"
mk header_length_past_eof && poke_le64 "$out/header_length_past_eof/$st" 0 1048576
mk header_length_huge && poke_le64 "$out/header_length_huge/$st" 0 1099511627776
mk header_not_json && poke "$out/header_not_json/$st" 8 'x'
mk weights_is_directory && rm "$out/weights_is_directory/$st" && mkdir "$out/weights_is_directory/$st"

# ---- wrong dtypes, shapes and spans ----
mk dtype_unknown && replace_first "$out/dtype_unknown/$st" '"F32"' '"F31"'
mk dtype_size_mismatch && replace_first "$out/dtype_size_mismatch/$st" '"F32"' '"F16"'
mk dtype_integer && sed -i 's/"F32"/"I32"/g' "$out/dtype_integer/$st"  # every tensor, same size
mk overlapping_spans
replace_first "$out/overlapping_spans/$st" '[131072,131328]' '[131071,131327]'
mk span_past_data
st_file "$out/span_past_data/$st" '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}' 4
mk duplicate_tensor
st_file "$out/duplicate_tensor/$st" \
  '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}' 8
mk shape_wrong
replace_first "$out/shape_wrong/$st" '"shape":[512,64]' '"shape":[64,512]'

# ---- non-finite weights (refused at load: see tests/data/bad/README.md) ----
mk nan_weight
f=$out/nan_weight/$st
# model.norm.weight is the last tensor: its element 5 at data offset begin + 20.
begin=$(grep -oaE '"model.norm.weight":\{[^}]*\}' "$f" | sed -E 's/.*"data_offsets":\[([0-9]+),.*/\1/')
poke "$f" $((8 + $(hlen "$f") + begin + 20)) '\x00\x00\xc0\x7f'
mk inf_weight
f=$out/inf_weight/$st
poke "$f" $((8 + $(hlen "$f"))) '\x00\x00\x80\xff'  # element 0 of the first tensor: -Inf

# ---- symlinks ----
mk symlink_loop_weights && rm "$out/symlink_loop_weights/$st"
ln -s "$st" "$out/symlink_loop_weights/$st"
mk symlink_loop_config && rm "$out/symlink_loop_config/config.json"
ln -s config.json "$out/symlink_loop_config/config.json"
rm -rf "$out/symlink_loop_dir" "$out/symlink_loop_dir2"
ln -s symlink_loop_dir2 "$out/symlink_loop_dir"
ln -s symlink_loop_dir "$out/symlink_loop_dir2"
mk config_endless && rm "$out/config_endless/config.json"
ln -s /dev/zero "$out/config_endless/config.json"

# ---- config.json / tokenizer.json content ----
mk config_wrong_type && sed -i 's/"hidden_size": 64/"hidden_size": "64"/' "$out/config_wrong_type/config.json"
mk config_negative && sed -i 's/"num_hidden_layers": 5/"num_hidden_layers": -5/' "$out/config_negative/config.json"
mk config_not_json && printf '{"model_type": "llama",\n "hidden_size": 64,,\n}\n' >"$out/config_not_json/config.json"
mk config_too_deep
{ printf '{"model_type": "llama", "x": '; for _ in $(seq 100); do printf '['; done
  for _ in $(seq 100); do printf ']'; done; printf '}\n'; } >"$out/config_too_deep/config.json"
mk tokenizer_not_object && printf '[]\n' >"$out/tokenizer_not_object/tokenizer.json"
mk generation_config_wrong_type
printf '{"eos_token_id": "two"}\n' >"$out/generation_config_wrong_type/generation_config.json"
