#!/usr/bin/env bash
# `mlxcel mkmodel` for every model family: the tiny preset of each loads, carries the family's
# tensors and config keys, runs on the cpu and interp backends with the same greedy ids and
# logits within 1e-4, and `mlxcel bench` runs on it.
# Usage: tests/cli_mkmodel.sh MLXCEL SOURCE_DIR TEST_NAME   ("all" runs every test)
set -u
MLXCEL=$1
SRC=$2
NAME=$3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
unset MLXCEL_BACKEND MLXCEL_XLA_CONTEXT_CAPACITY
export MLXCEL_THREADS=2

. "$SRC/tests/cli_lib.sh"

# The float32 values of a .npy file written by `mlxcel logits`, one a line.
npy_values() {
  local hlen
  hlen=$(od -A n -t u2 -j 8 -N 2 "$1" | tr -d ' ')
  od -A n -v -t f4 -w4 -j $((10 + hlen)) "$1"
}

# ARCH "KEY..." "TENSOR..." "ABSENT...": the tiny preset of ARCH (or $PRESET), checked end to
# end.
family() {
  local arch=$1 keys=$2 tensors=$3 absent=$4 m=$TMP/$1
  run "$MLXCEL" mkmodel --arch "$arch" --preset "${PRESET:-tiny}" -o "$m" -q
  expect_rc 0
  grep -q "\"model_type\": \"$arch\"" "$m/config.json" || fail "$arch: model_type"
  for k in $keys; do grep -q "\"$k\": " "$m/config.json" || fail "$arch: config.json lacks $k"; done
  # Tensor names live in the safetensors header (the first bytes of the file).
  local header
  header=$(head -c 65536 "$m/model.safetensors" | tr -d '\0')
  for t in $tensors; do
    case $header in *"\"$t\""*) ;; *) fail "$arch: no tensor $t" ;; esac
  done
  for t in $absent; do
    case $header in *"$t"*) fail "$arch: unexpected tensor $t" ;; esac
  done

  # Greedy generation: the same 16 ids on both backends.
  for b in cpu interp; do
    run "$MLXCEL" generate -m "$m" -p "Hello world, the cat sat on the mat" -n 16 --ignore-eos \
      --json --backend "$b"
    expect_rc 0; expect_out '"generated_tokens": 16'
    grep -o '"id": [0-9]*' "$TMP/out" >"$TMP/ids.$b"
  done
  [ "$(wc -l <"$TMP/ids.cpu")" -eq 16 ] && cmp -s "$TMP/ids.cpu" "$TMP/ids.interp" ||
    fail "$arch: greedy ids differ: cpu $(tr -d '\n"id:' <"$TMP/ids.cpu"), interp" \
      "$(tr -d '\n"id:' <"$TMP/ids.interp")"
  # Logits of 24 positions (past every tiny window of 8) on both backends.
  local ids=2,17,200,33,4,99,150,301,77,12,45,260,8,19,230,66,71,140,5,280,9,120,61,250
  for b in cpu interp; do
    run "$MLXCEL" logits -m "$m" --ids "$ids" -o "$TMP/$b.npy" --backend "$b"
    expect_rc 0
  done
  paste <(npy_values "$TMP/cpu.npy") <(npy_values "$TMP/interp.npy") >"$TMP/pairs"
  read -r n diff spread < <(awk '{d = $1 - $2; if (d < 0) d = -d; if (d > m) m = d;
    if (NR == 1 || $1 < lo) lo = $1; if (NR == 1 || $1 > hi) hi = $1}
    END {printf "%d %.3g %.3g\n", NR, m, hi - lo}' "$TMP/pairs")
  [ "$n" -eq $((24 * 320)) ] || fail "$arch: $n logits, expected $((24 * 320))"
  awk -v d="$diff" -v s="$spread" 'BEGIN {exit !(d <= 1e-4 && s > 0.1)}' ||
    fail "$arch: cpu vs interp logits: max |diff| $diff (<= 1e-4 needed), spread $spread"

  # The benchmark runs on it, at f32 and bf16, and every composite of the family's graph runs
  # as a fused kernel: a decomposition left to the interpreter is correct but orders of
  # magnitude slower at real sizes (the profile names each step's kernel).
  local prec
  for prec in f32 bf16; do
    export MLXCEL_CPU_PROFILE=1
    run "$MLXCEL" bench -m "$m" --backend cpu --prompt 16 --gen 4 --reps 1 --bw-mib 16 --json \
      --precision "$prec"
    unset MLXCEL_CPU_PROFILE
    expect_rc 0; expect_out "\"model_type\": \"$arch\""; expect_out '"decode_tok_s": [0-9]'
    grep -q 'mlxcel cpu profile' "$TMP/err" || fail "$arch $prec: no profile printed"
    ! grep 'composite decomposition' "$TMP/err" ||
      fail "$arch $prec: a composite ran as its decomposition on the interpreter"
  done
}

t_llama() {
  family llama "attention_bias mlp_bias head_dim rope_scaling tie_word_embeddings" \
    "model.embed_tokens.weight model.layers.1.mlp.gate_proj.weight" "lm_head bias"
}
t_mistral() {
  family mistral "sliding_window head_dim tie_word_embeddings" \
    "lm_head.weight model.layers.1.self_attn.k_proj.weight" "bias"
  grep -q '"sliding_window": 8' "$TMP/mistral/config.json" || fail "mistral: window"
}
t_qwen2() {
  family qwen2 "layer_types max_window_layers use_sliding_window" \
    "model.layers.0.self_attn.q_proj.bias model.layers.1.self_attn.v_proj.bias" \
    "o_proj.bias lm_head q_norm"
}
t_qwen3() {
  family qwen3 "head_dim layer_types attention_bias" \
    "model.layers.0.self_attn.q_norm.weight model.layers.1.self_attn.k_norm.weight" \
    "bias lm_head"
  grep -q '"head_dim": 32' "$TMP/qwen3/config.json" || fail "qwen3: head_dim"
}
t_gemma() {
  family gemma "hidden_act hidden_activation head_dim pad_token_id" \
    "model.layers.1.post_attention_layernorm.weight" "pre_feedforward lm_head q_norm"
}
t_gemma2() {
  family gemma2 "attn_logit_softcapping final_logit_softcapping query_pre_attn_scalar \
sliding_window layer_types hidden_activation" \
    "model.layers.1.pre_feedforward_layernorm.weight model.layers.0.post_feedforward_layernorm.weight" \
    "q_norm lm_head"
  grep -A3 '"layer_types"' "$TMP/gemma2/config.json" | tr -d ' \n' |
    grep -q '\["sliding_attention","full_attention"\]' || fail "gemma2: layer_types"
}
t_gemma3_text() {
  family gemma3_text "rope_local_base_freq sliding_window_pattern query_pre_attn_scalar \
rope_scaling layer_types" \
    "model.layers.5.self_attn.q_norm.weight model.layers.5.post_feedforward_layernorm.weight" \
    "lm_head bias"
  [ "$(grep -c '"sliding_attention"' "$TMP/gemma3_text/config.json")" -eq 5 ] ||
    fail "gemma3_text: 5 sliding layers of 6 expected"
}
t_phi3() {
  family phi3 "partial_rotary_factor sliding_window original_max_position_embeddings" \
    "model.layers.0.self_attn.qkv_proj.weight model.layers.1.mlp.gate_up_proj.weight lm_head.weight" \
    "q_proj k_proj mlp.gate_proj mlp.up_proj"
}
t_mixtral() {
  family mixtral "num_local_experts num_experts_per_tok router_jitter_noise sliding_window" \
    "model.layers.1.block_sparse_moe.gate.weight model.layers.0.block_sparse_moe.experts.3.w2.weight" \
    "mlp. bias"
}
t_qwen2_moe() {
  family qwen2_moe "num_experts moe_intermediate_size shared_expert_intermediate_size \
norm_topk_prob mlp_only_layers" \
    "model.layers.0.mlp.experts.3.down_proj.weight model.layers.1.mlp.shared_expert_gate.weight \
model.layers.1.mlp.shared_expert.up_proj.weight model.layers.0.self_attn.q_proj.bias" \
    "block_sparse_moe o_proj.bias"
}
t_qwen3_moe() {
  family qwen3_moe "num_experts moe_intermediate_size norm_topk_prob head_dim" \
    "model.layers.1.mlp.gate.weight model.layers.1.mlp.experts.0.gate_proj.weight \
model.layers.0.self_attn.q_norm.weight" \
    "shared_expert bias"
}
t_olmoe() {
  family olmoe "num_experts num_experts_per_tok norm_topk_prob pad_token_id" \
    "model.layers.1.mlp.experts.2.up_proj.weight model.layers.0.self_attn.k_norm.weight" \
    "shared_expert bias"
}
t_deepseek_v2() {
  family deepseek_v2 "kv_lora_rank q_lora_rank qk_rope_head_dim n_routed_experts n_group \
topk_method first_k_dense_replace routed_scaling_factor" \
    "model.layers.0.self_attn.q_a_layernorm.weight model.layers.1.self_attn.kv_b_proj.weight \
model.layers.0.mlp.gate_proj.weight model.layers.2.mlp.experts.7.down_proj.weight \
model.layers.1.mlp.shared_experts.up_proj.weight" \
    "q_proj e_score_correction_bias shared_expert_gate bias"
}
t_deepseek_v3() {
  family deepseek_v3 "kv_lora_rank q_lora_rank n_group topk_group norm_topk_prob" \
    "model.layers.1.self_attn.q_proj.weight model.layers.2.mlp.gate.e_score_correction_bias \
model.layers.2.mlp.experts.0.gate_proj.weight model.layers.2.mlp.shared_experts.down_proj.weight" \
    "q_a_proj shared_expert_gate"
}
t_youtu() {
  family youtu "kv_lora_rank q_lora_rank qk_nope_head_dim tie_word_embeddings" \
    "model.layers.1.self_attn.q_a_layernorm.weight model.layers.0.self_attn.kv_b_proj.weight \
model.layers.1.mlp.gate_proj.weight" \
    "lm_head experts q_proj bias"
}
t_granite() {
  family granite "embedding_multiplier residual_multiplier attention_multiplier logits_scaling \
attention_bias mlp_bias" "model.layers.1.mlp.down_proj.weight" "lm_head bias"
}
t_minicpm() {
  family minicpm "scale_emb scale_depth dim_model_base tie_word_embeddings" \
    "model.layers.0.self_attn.o_proj.weight" "lm_head bias"
}
t_smollm3() {
  family smollm3 "no_rope_layer_interval rope_scaling" "model.layers.1.self_attn.k_proj.weight" \
    "lm_head bias"
}
t_mimo() {
  family mimo "num_nextn_predict_layers max_window_layers" \
    "lm_head.weight model.layers.0.self_attn.q_proj.bias" "mtp_layers o_proj.bias"
}
t_olmo2() {
  family olmo2 "attention_bias pad_token_id rope_scaling" \
    "model.layers.0.self_attn.q_norm.weight model.layers.1.post_feedforward_layernorm.weight \
lm_head.weight" "input_layernorm bias"
}
t_internlm3() {
  family internlm3 "qkv_bias bias head_dim rope_scaling" \
    "model.layers.0.self_attn.o_proj.bias model.layers.1.mlp.down_proj.bias lm_head.weight" \
    "q_norm"
  grep -q '"rope_type": "dynamic"' "$TMP/internlm3/config.json" || fail "internlm3: dynamic RoPE"
}
t_gemma3n_text() {
  family gemma3n_text "hidden_size_per_layer_input vocab_size_per_layer_input laurel_rank \
num_kv_shared_layers sliding_window" \
    "model.embed_tokens_per_layer.weight model.altup_projections.2.weight \
model.layers.0.altup.prediction_coefs.weight model.layers.9.laurel.linear_left.weight \
model.layers.5.self_attn.k_proj.weight model.layers.9.self_attn.q_proj.weight" \
    "model.layers.6.self_attn.k_proj model.layers.9.self_attn.v_proj lm_head.weight"
}

t_olmo3() {
  family olmo3 "sliding_window layer_types pad_token_id rope_scaling" \
    "model.layers.3.self_attn.q_norm.weight model.layers.0.post_feedforward_layernorm.weight \
lm_head.weight" "input_layernorm bias"
  [ "$(grep -c '"sliding_attention"' "$TMP/olmo3/config.json")" -eq 3 ] ||
    fail "olmo3: 3 sliding layers of 4 expected"
}
t_seed_oss() {
  family seed_oss "attention_bias attention_out_bias mlp_bias head_dim" \
    "model.layers.1.self_attn.q_proj.bias model.layers.0.self_attn.v_proj.bias lm_head.weight" \
    "o_proj.bias q_norm"
}
t_exaone() {
  family exaone "attention_bias head_dim pad_token_id" \
    "model.layers.1.post_attention_layernorm.weight model.layers.0.mlp.gate_proj.weight" \
    "bias q_norm"
}
t_exaone4() {
  family exaone4 "sliding_window sliding_window_pattern layer_types head_dim" \
    "model.layers.1.self_attn.k_norm.weight model.layers.0.post_feedforward_layernorm.weight" \
    "input_layernorm bias"
  grep -A3 '"layer_types"' "$TMP/exaone4/config.json" | tr -d ' \n' |
    grep -q '\["sliding_attention","full_attention"\]' || fail "exaone4: layer_types"
}
t_cohere() {
  family cohere "layer_norm_eps logit_scale use_qk_norm" \
    "model.layers.1.input_layernorm.weight model.layers.0.mlp.up_proj.weight" \
    "post_attention_layernorm rms_norm_eps lm_head bias"
}
t_cohere2() {
  family cohere2 "layer_norm_eps logit_scale sliding_window sliding_window_pattern layer_types" \
    "model.layers.1.input_layernorm.weight model.layers.0.self_attn.o_proj.weight" \
    "post_attention_layernorm rms_norm_eps lm_head bias"
}
t_stablelm() {
  family stablelm "layer_norm_eps partial_rotary_factor use_qkv_bias use_parallel_residual" \
    "model.layers.1.input_layernorm.bias model.layers.0.self_attn.k_proj.bias lm_head.weight" \
    "o_proj.bias rms_norm_eps"
}
t_starcoder2() {
  family starcoder2 "norm_epsilon use_bias sliding_window" \
    "model.layers.1.mlp.c_fc.bias model.layers.0.self_attn.o_proj.bias \
model.layers.1.post_attention_layernorm.bias" "gate_proj lm_head rms_norm_eps"
}
t_phi4mm() {
  family phi4mm "partial_rotary_factor original_max_position_embeddings" \
    "model.layers.0.self_attn.qkv_proj.weight model.layers.1.mlp.gate_up_proj.weight lm_head.weight" \
    "q_proj mlp.gate_proj"
}
t_gpt_oss() {
  family gpt_oss "num_local_experts swiglu_limit sliding_window layer_types rope_scaling" \
    "model.layers.1.self_attn.sinks model.layers.0.mlp.router.bias \
model.layers.1.mlp.experts.3.down_proj.bias model.layers.0.self_attn.o_proj.bias" \
    "shared_expert q_norm"
  grep -q '"rope_type": "yarn"' "$TMP/gpt_oss/config.json" || fail "gpt_oss: YaRN"
}
# The released layout: each layer's experts stacked, packed in MXFP4, run packed.
t_gpt_oss_mxfp4() {
  PRESET=tiny-mxfp4 family gpt_oss "quantization_config num_local_experts" \
    "model.layers.0.mlp.experts.gate_up_proj_blocks model.layers.0.mlp.experts.gate_up_proj_scales \
model.layers.1.mlp.experts.gate_up_proj_bias model.layers.1.mlp.experts.down_proj_blocks \
model.layers.1.mlp.experts.down_proj_scales model.layers.0.mlp.experts.down_proj_bias" \
    "experts.0. gate_up_proj\" down_proj\""
  grep -q '"quant_method": "mxfp4"' "$TMP/gpt_oss/config.json" || fail "gpt_oss: quant_method"
  expect_out '"quant": "mxfp4"'
}

# ARCH "TENSOR..." KEY TOKEN: the tiny preset of a vision-language family: its tower's tensors,
# preprocessor_config.json, config KEY holding the tokenizer's id of TOKEN (the image token),
# the same greedy ids after an image prompt on cpu and interp, and bench --image.
vlm() {
  local arch=$1 tensors=$2 key=$3 token=$4 m=$TMP/$1
  local img=$SRC/tests/data/image/inputs/chelsea.png
  run "$MLXCEL" mkmodel --arch "$arch" --preset tiny -o "$m" -q
  expect_rc 0
  grep -q "\"model_type\": \"$arch\"" "$m/config.json" || fail "$arch: model_type"
  [ -s "$m/preprocessor_config.json" ] || fail "$arch: no preprocessor_config.json"
  local header
  header=$(head -c 65536 "$m/model.safetensors" | tr -d '\0')
  for t in $tensors; do
    case $header in *"\"$t\""*) ;; *) fail "$arch: no tensor $t" ;; esac
  done
  "${MX_PYTHON:-python3}" - "$m" "$key" "$token" <<'PY' || fail "$arch: $key is not the id of $token"
import json, sys
d, key, token = sys.argv[1:]
cfg = json.load(open(d + "/config.json"))
ids = {t["content"]: t["id"] for t in json.load(open(d + "/tokenizer.json"))["added_tokens"]}
sys.exit(0 if cfg[key] == ids[token] else 1)
PY
  for b in cpu interp; do
    run "$MLXCEL" generate -m "$m" --image "$img" -p "Describe the image." -n 8 --ignore-eos \
      --json --backend "$b"
    expect_rc 0; expect_out '"generated_tokens": 8'; expect_out '"images": 1'
    grep -o '"id": [0-9]*' "$TMP/out" >"$TMP/ids.$b"
  done
  [ "$(wc -l <"$TMP/ids.cpu")" -eq 8 ] && cmp -s "$TMP/ids.cpu" "$TMP/ids.interp" ||
    fail "$arch: image prompt's greedy ids differ between cpu and interp"
  run "$MLXCEL" bench -m "$m" --image "$img" --gen 2 --reps 1 --bw-mib 16
  expect_rc 0; expect_out '^image 451x300 .*vision tower [0-9.]+ ms/image'
  # Written at bf16, the tower's norms still run fused (the loader makes its rank-1 tensors
  # f32), not as their decompositions on the interpreter.
  run "$MLXCEL" mkmodel --arch "$arch" --preset tiny --dtype bf16 -o "$m-bf16" -q
  expect_rc 0
  export MLXCEL_CPU_PROFILE=1
  run "$MLXCEL" bench -m "$m-bf16" --image "$img" --gen 2 --reps 1 --bw-mib 16
  unset MLXCEL_CPU_PROFILE
  expect_rc 0; grep -q '@vision' "$TMP/err" || fail "$arch bf16: no @vision profile"
  ! grep 'composite decomposition' "$TMP/err" ||
    fail "$arch bf16: a composite ran as its decomposition on the interpreter"
}
t_qwen2_vl() {
  vlm qwen2_vl "visual.patch_embed.proj.weight visual.merger.mlp.2.weight \
    model.layers.1.self_attn.q_proj.bias" image_token_id "<|image_pad|>"
}
t_qwen2_5_vl() {
  vlm qwen2_5_vl "visual.blocks.1.mlp.gate_proj.weight visual.merger.ln_q.weight" \
    image_token_id "<|image_pad|>"
}
t_qwen3_vl() {
  vlm qwen3_vl "visual.pos_embed.weight visual.deepstack_merger_list.1.linear_fc2.weight \
    model.language_model.layers.0.self_attn.q_norm.weight" image_token_id "<|image_pad|>"
  grep -q '"text_config": {' "$TMP/qwen3_vl/config.json" || fail "qwen3_vl: no text_config"
}
t_gemma3() {
  vlm gemma3 "vision_tower.vision_model.post_layernorm.weight \
    multi_modal_projector.mm_input_projection_weight" image_token_index "<image_soft_token>"
}
t_llava() {
  vlm llava "vision_tower.vision_model.embeddings.class_embedding \
    multi_modal_projector.linear_2.weight" image_token_index "<image>"
}
t_youtu_vl() {
  vlm youtu_vl "siglip2.vision_model.embeddings.patch_embedding.weight \
    siglip2.vision_model.post_layernorm.bias merger.ln_q.weight model.layers.1.self_attn.kv_a_proj_with_mqa.weight" \
    image_token_id "<|image_pad|>"
}
t_molmo2() {
  vlm molmo2 "model.transformer.wte.new_embedding model.vision_backbone.image_pooling_2d.wq.weight \
    model.transformer.blocks.1.self_attn.q_norm.weight" image_patch_id "<im_patch>"
  # The image tokens are past the LM head's vocabulary, in the additional vocabulary.
  "${MX_PYTHON:-python3}" - "$TMP/molmo2" <<'PY' || fail "molmo2: image tokens not past the vocabulary"
import json, sys
cfg = json.load(open(sys.argv[1] + "/config.json"))
ids = {t["content"]: t["id"] for t in json.load(open(sys.argv[1] + "/tokenizer.json"))["added_tokens"]}
v = cfg["text_config"]["vocab_size"]
sys.exit(0 if ids["<im_start>"] == v and ids["<frame_end>"] == v + 8 and
         cfg["text_config"]["additional_vocab_size"] == 9 else 1)
PY
}
# Gemma 3n with its audio tower: the tower's and embedders' tensors, the audio token ids where
# the embedders read them, the same greedy ids on cpu and interp with a recording, bench --audio;
# at bf16 the tower's norms run fused (the loader makes its rank-1 tensors f32), not as their
# decompositions on the interpreter.
t_gemma3n() {
  local m=$TMP/gemma3n wav=$SRC/tests/data/audio/pluck-pcm16.wav header
  run "$MLXCEL" mkmodel --arch gemma3n --preset tiny -o "$m" -q
  expect_rc 0
  header=$(head -c 65536 "$m/model.safetensors" | tr -d '\0')
  for t in model.audio_tower.conformer.1.lconv1d.depthwise_conv1d.weight \
    model.audio_tower.subsample_conv_projection.conv_1.norm.weight \
    model.embed_audio.embedding_projection.weight model.embed_vision.embedding.weight \
    model.language_model.layers.9.altup.router_norm.weight; do
    case $header in *"\"$t\""*) ;; *) fail "gemma3n: no tensor $t" ;; esac
  done
  "${MX_PYTHON:-python3}" - "$m" <<'PY' || fail "gemma3n: audio token ids"
import json, sys
d = sys.argv[1]
cfg = json.load(open(d + "/config.json"))
ids = {t["content"]: t["id"] for t in json.load(open(d + "/tokenizer.json"))["added_tokens"]}
a, v = cfg["audio_config"], cfg["text_config"]["vocab_size"]
ok = all(cfg[k] == ids[t] for k, t in [("audio_token_id", "<audio_soft_token>"),
         ("boa_token_id", "<start_of_audio>"), ("eoa_token_id", "<end_of_audio>"),
         ("image_token_id", "<image_soft_token>")])
ok = ok and a["vocab_offset"] == cfg["eoa_token_id"] and a["vocab_offset"] + a["vocab_size"] == v
sys.exit(0 if ok and cfg["boa_token_id"] < cfg["vision_config"]["vocab_offset"] else 1)
PY
  for b in cpu interp; do
    run "$MLXCEL" generate -m "$m" --audio "$wav" -p "Describe the audio." -n 8 --ignore-eos \
      --json --backend "$b"
    expect_rc 0; expect_out '"generated_tokens": 8'; expect_out '"audio": 1'
    grep -o '"id": [0-9]*' "$TMP/out" >"$TMP/ids.$b"
  done
  [ "$(wc -l <"$TMP/ids.cpu")" -eq 8 ] && cmp -s "$TMP/ids.cpu" "$TMP/ids.interp" ||
    fail "gemma3n: the audio prompt's greedy ids differ between cpu and interp"
  run "$MLXCEL" bench -m "$m" --audio "$wav" --gen 2 --reps 1 --bw-mib 16
  expect_rc 0; expect_out '^audio 0\.30 s \(28 log-mel frames, 16 tokens\): .*audio tower [0-9.]+ ms/clip'
  run "$MLXCEL" mkmodel --arch gemma3n --preset tiny --dtype bf16 -o "$m-bf16" -q
  expect_rc 0
  export MLXCEL_CPU_PROFILE=1
  run "$MLXCEL" bench -m "$m-bf16" --audio "$wav" --gen 2 --reps 1 --bw-mib 16
  unset MLXCEL_CPU_PROFILE
  expect_rc 0; grep -q '@audio' "$TMP/err" || fail "gemma3n bf16: no @audio profile"
  ! grep 'composite decomposition' "$TMP/err" ||
    fail "gemma3n bf16: a composite ran as its decomposition on the interpreter"
}
t_help() {
  run "$MLXCEL" mkmodel --help
  expect_rc 0
  for p in qwen2.5-0.5b qwen3-0.6b mistral-7b-v0.1 gemma-2b gemma-2-2b gemma-3-1b phi-3-mini-4k \
    granite-3.1-2b minicpm-2b smollm3-3b mimo-7b olmo-2-1b internlm3-8b olmo-3-7b seed-oss-36b \
    exaone-3.5-2.4b exaone-4.0-1.2b aya-23-8b command-r7b stablelm-2-1.6b starcoder2-3b \
    phi-4-multimodal gpt-oss-20b gpt-oss-20b-4l youtu-llm-2b; do
    expect_out " $p "
  done
  expect_out 'llama, qwen2, qwen3, mistral, gemma, gemma2, gemma3_text, phi3'
  for p in qwen2-vl-2b qwen2.5-vl-3b qwen3-vl-2b gemma-3-4b llava-1.5-7b molmo2-4b \
    gemma-3n-E2B-audio; do
    expect_out " $p "
  done
  run "$MLXCEL" mkmodel --arch qwen3 --preset smollm2-135m -o "$TMP/x"
  expect_rc 2; expect_err "unknown --preset 'smollm2-135m' for --arch qwen3"
  run "$MLXCEL" mkmodel --arch idefics3 --preset tiny -o "$TMP/x"
  expect_rc 2; expect_err "--arch 'idefics3' is not supported"
  # A preset name of one family implies --arch (the directory check fails after that: 3).
  run "$MLXCEL" mkmodel --preset qwen3-0.6b -o /dev/null/x
  expect_rc 3; expect_err 'cannot access /dev/null/x'
  run "$MLXCEL" mkmodel --preset tiny -o "$TMP/x"
  expect_rc 2; expect_err "missing --arch: every architecture has a preset 'tiny'"
}

# A chat template in the family's format, usable by generate --chat.
t_chat_template() {
  for arch in qwen3 gemma phi3 mistral; do
    run "$MLXCEL" mkmodel --arch "$arch" --preset tiny -o "$TMP/c$arch" -q
    expect_rc 0
    grep -q '"chat_template": ' "$TMP/c$arch/tokenizer_config.json" || fail "$arch: no template"
    run "$MLXCEL" generate -m "$TMP/c$arch" --chat -p "Hi" -n 2 --ignore-eos --json
    expect_rc 0; expect_out '"generated_tokens": 2'
  done
}

run_tests "$NAME" "help chat_template llama mistral qwen2 qwen3 gemma gemma2 gemma3_text phi3 \
mixtral qwen2_moe qwen3_moe olmoe deepseek_v2 deepseek_v3 youtu granite minicpm smollm3 mimo olmo2 \
internlm3 olmo3 seed_oss exaone exaone4 cohere cohere2 stablelm starcoder2 phi4mm gpt_oss \
gpt_oss_mxfp4 gemma3n_text qwen2_vl qwen2_5_vl qwen3_vl gemma3 llava molmo2 gemma3n"
