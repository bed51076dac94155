// Weight quantization on the model side: the f16 / bf16 conversions against the IR's float codec,
// the row quantizers' documented error bounds, config.json `quantization` parsing, the
// checkpoint overlay, loading MLX checkpoints in every mode (and refusing broken ones with a
// message naming the problem), --quant int8 / int4 requantization, mx_model_matmul_bytes, and
// `mx_model_quantize`, whose output must hold exactly the tensors of the independent MLX
// emulation in ../shared/models/stories260K/mlx-q8 and mlx-q4 (tools/fixtures/mlx_quant.py).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mlxcel/model.h"
#include "mlxcel/writer.h"
#include "model/quant_internal.h"
#include "mx_test.h"

static uint64_t g_rng = 0x853C49E6748FEA9Bull;
static uint32_t rnd(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return (uint32_t)(g_rng >> 16);
}

// ---- conversions ----

static void test_conversions(void) {
  int bad = 0;
  for (uint32_t h = 0; h < 65536; h++) {  // every f16 value decodes as the IR's codec says
    double want = mx_float_decode(MX_ELEM_F16, h);
    float got = mx_q_f16_to_f32((uint16_t)h);
    if (!(got == want || (isnan(got) && isnan(want)))) bad++;
    double wb = mx_float_decode(MX_ELEM_BF16, h);
    float gb = mx_q_bf16_to_f32((uint16_t)h);
    if (!(gb == wb || (isnan(gb) && isnan(wb)))) bad++;
  }
  CHECK_MSG(bad == 0, "%d f16/bf16 decodes differ", bad);
  bad = 0;
  for (int i = 0; i < 200000; i++) {  // rounding: random bit patterns, all exponents
    uint32_t x = (uint32_t)rnd() << 16 ^ rnd();
    float f;
    memcpy(&f, &x, sizeof f);
    if (isnan(f)) continue;
    if (mx_q_f32_to_f16(f) != (uint16_t)mx_float_encode(MX_ELEM_F16, f)) bad++;
    if (mx_q_f32_to_bf16(f) != (uint16_t)mx_float_encode(MX_ELEM_BF16, f)) bad++;
  }
  const float edges[] = {65504.0f,       65519.99f,      65520.0f, 6.1035156e-05f, 5.9604645e-08f,
                         2.9802322e-08f, 2.9802326e-08f, -0.0f,    1e-10f,         INFINITY};
  for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
    if (mx_q_f32_to_f16(edges[i]) != (uint16_t)mx_float_encode(MX_ELEM_F16, edges[i])) bad++;
  CHECK_MSG(bad == 0, "%d f16/bf16 encodes differ", bad);
}

// ---- row quantizers ----

static void test_quantizers(void) {
  enum { K = 256 };
  float w[K], deq[K];
  for (int trial = 0; trial < 50; trial++) {
    for (int i = 0; i < K; i++) w[i] = ((float)(rnd() % 20001) - 10000.0f) * 1e-5f * (1 + trial);
    if (trial == 1) memset(w, 0, sizeof w);  // all-zero groups: scale 0, values 0
    for (int g = 32; g <= 128; g *= 2) {
      int8_t q8[K];
      uint32_t q4[K / 8];
      uint16_t s16[K / 32];
      float s32[K / 32];
      for (int sd = 0; sd < 2; sd++) {
        mx_elem_type_t sdt = sd ? MX_ELEM_F32 : MX_ELEM_F16;
        void *sc = sd ? (void *)s32 : (void *)s16;
        mx_q_int8_row(w, K, g, sdt, q8, sc);
        mx_q_dequant_row(MX_Q_INT8, 8, K, g, q8, sdt, sc, NULL, 0, deq);
        double worst = 0;
        for (int i = 0; i < K; i++) {
          double s = fabs(mx_q_load_float(sdt, sc, i / g));
          double e = fabs(deq[i] - w[i]);
          worst = fmax(worst, s > 0 ? e / (s * 0.5000001 + 1e-30) : e * 1e30);
        }
        CHECK_MSG(worst <= 1.0, "int8 g%d error %.3g of s/2", g, worst);
        mx_q_int4_row(w, K, g, sdt, q4, sc);
        mx_q_dequant_row(MX_Q_INT4, 4, K, g, q4, sdt, sc, NULL, 0, deq);
        worst = 0;
        // |err| <= |s| / 2, except on the clamped side (w / s near +8): there |w| - 7 |s| <=
        // |s| (1 + 8 x the scale's relative rounding, 2^-11 for f16).
        for (int i = 0; i < K; i++) {
          double s = fabs(mx_q_load_float(sdt, sc, i / g));
          double e = fabs(deq[i] - w[i]);
          worst = fmax(worst, s > 0 ? e / (s * (1 + 8.0 / 2048) + 1e-30) : e * 1e30);
        }
        CHECK_MSG(worst <= 1.0, "int4 g%d error %.3g of s", g, worst);
      }
    }
  }
}

// ---- config ----

static mx_status_t parse_cfg(const char *quant_json, mx_model_config_t *cfg) {
  char text[2048];
  snprintf(text, sizeof text,
           "{\"model_type\": \"llama\", \"vocab_size\": 32, \"hidden_size\": 64, "
           "\"intermediate_size\": 128, \"num_hidden_layers\": 1, \"num_attention_heads\": 4%s%s}",
           quant_json ? ", " : "", quant_json ? quant_json : "");
  return mx_config_parse(text, strlen(text), NULL, 0, "config.json", cfg);
}

// MXFP4's e8m0 scales: 2^(s - 127), 2^-127 at s = 0 (a subnormal) and NaN at 255 (the format's
// NaN; its exponent bits alone would read +inf), through a dequantized row too.
static void test_e8m0(void) {
  CHECK(mx_q_e8m0(127) == 1.0f && mx_q_e8m0(130) == 8.0f && mx_q_e8m0(1) == 0x1p-126f);
  CHECK(mx_q_e8m0(0) == 0x1p-127f && mx_q_e8m0(254) == 0x1p127f);
  CHECK_MSG(isnan(mx_q_e8m0(255)), "e8m0 255 gives %g, not NaN", mx_q_e8m0(255));
  uint8_t blocks[32], scales[2] = {128, 255};     // group 0 scaled by 2, group 1 by NaN
  for (int i = 0; i < 32; i++) blocks[i] = 0x21;  // codes 1 (0.5) and 2 (1.0)
  float w[64];
  mx_q_dequant_row(MX_Q_MXFP4, 4, 64, 32, blocks, MX_ELEM_UI8, scales, NULL, 0, w);
  CHECK(w[0] == 1.0f && w[1] == 2.0f && w[31] == 2.0f);
  CHECK_MSG(isnan(w[32]) && isnan(w[63]), "a NaN-scaled group gives %g, %g", w[32], w[63]);
}

static void test_config(void) {
  mx_model_config_t cfg;
  CHECK_OK(parse_cfg(NULL, &cfg));
  CHECK(cfg.quant_bits == 0 && cfg.quant_group_size == 0);
  CHECK_OK(parse_cfg("\"quantization\": {\"group_size\": 64, \"bits\": 4}", &cfg));
  CHECK(cfg.quant_bits == 4 && cfg.quant_group_size == 64);
  CHECK_OK(
      parse_cfg("\"quantization_config\": {\"group_size\": 32, \"bits\": 8, \"mode\": "
                "\"affine\", \"model.layers.0.mlp.down_proj\": false}",
                &cfg));
  CHECK(cfg.quant_bits == 8 && cfg.quant_group_size == 32);
  EXPECT_ERR(
      parse_cfg("\"quantization\": {\"group_size\": 32, \"bits\": 4, \"mode\": \"mxfp4\"}", &cfg),
      "quantization.mode 'mxfp4' is not supported");
  EXPECT_ERR(parse_cfg("\"quantization\": {\"group_size\": 64, \"bits\": 3}", &cfg),
             "quantization.bits 3 is not supported");
  EXPECT_ERR(parse_cfg("\"quantization\": {\"group_size\": 16, \"bits\": 4}", &cfg),
             "quantization.group_size 16 is not supported");
  EXPECT_ERR(parse_cfg("\"quantization\": {\"bits\": 4}", &cfg), "needs bits and group_size");
  EXPECT_ERR(parse_cfg("\"quantization_config\": {\"quant_method\": \"gptq\", \"bits\": 4}", &cfg),
             "quant_method 'gptq' is not supported");
  EXPECT_ERR(parse_cfg("\"quantization\": 4", &cfg), "quantization must be an object");

  cJSON *root = cJSON_Parse(
      "{\"quantization\": {\"group_size\": 64, \"bits\": 4, \"a.b\": {\"bits\": 8}, \"c\": false, "
      "\"d\": 3}}");
  int32_t bits = -1, group = -1;
  CHECK_OK(mx_quant_config_layer(root, "x", "a.b", 4, 64, &bits, &group));
  CHECK(bits == 8 && group == 64);
  CHECK_OK(mx_quant_config_layer(root, "x", "c", 4, 64, &bits, &group));
  CHECK(bits == 0 && group == 0);
  CHECK_OK(mx_quant_config_layer(root, "x", "e", 4, 64, &bits, &group));
  CHECK(bits == 4 && group == 64);
  EXPECT_ERR(mx_quant_config_layer(root, "x", "d", 4, 64, &bits, &group),
             "quantization.d must be an object or false");
  cJSON_Delete(root);

  mx_quant_mode_t m;
  CHECK_OK(mx_quant_mode_parse("int4", "x", &m));
  CHECK(m == MX_QUANT_INT4 && !strcmp(mx_quant_mode_name(m), "int4"));
  EXPECT_ERR(mx_quant_mode_parse("q4", "--quant", &m), "--quant: 'q4' is not a quantization mode");
}

// ---- checkpoint overlay ----

static void test_overlay(const char *shared) {
  char dir[512];
  snprintf(dir, sizeof dir, "%s/fixtures/llama", shared);
  mx_checkpoint_t *ck = NULL;
  CHECK_OK(mx_checkpoint_open(dir, &ck));
  if (!ck) return;
  int32_t n = mx_checkpoint_count(ck);
  const char *name = "model.norm.weight";
  float *v = malloc(3 * sizeof *v);
  v[0] = 1, v[1] = 2, v[2] = 3;
  int64_t d3 = 3;
  CHECK_OK(mx_checkpoint_put(ck, name, MX_ELEM_F32, 1, &d3, v));  // replaces
  const mx_weight_t *w = mx_checkpoint_find(ck, name);
  CHECK(w && w->data == v && w->nbytes == 12 && w->dims[0] == 3 && mx_checkpoint_count(ck) == n);
  for (int i = 0; i < 40; i++) {  // adds (and grows the table)
    char nm[32];
    snprintf(nm, sizeof nm, "extra.%d", i);
    CHECK_OK(mx_checkpoint_put(ck, nm, MX_ELEM_I8, 1, &d3, calloc(3, 1)));
  }
  CHECK(mx_checkpoint_count(ck) == n + 40 && mx_checkpoint_find(ck, "extra.39"));
  CHECK(mx_checkpoint_find(ck, "model.layers.2.mlp.up_proj.weight") != NULL);
  CHECK_OK(mx_checkpoint_remove(ck, "extra.7"));
  CHECK(mx_checkpoint_find(ck, "extra.7") == NULL && mx_checkpoint_find(ck, "extra.8") != NULL);
  EXPECT_ERR(mx_checkpoint_remove(ck, "extra.7"), "no tensor 'extra.7'");
  EXPECT_ERR(mx_checkpoint_put(ck, "bad", MX_ELEM_F32, -1, &d3, malloc(4)), "bad arguments");
  mx_checkpoint_close(ck);
}

// ---- loading ----

static mx_status_t load(const char *dir, mx_quant_mode_t q, int32_t g, mx_model_t **m) {
  mx_model_load_opts_t lo = {.tokenizer_optional = true, .quant = q, .group_size = g};
  return mx_model_load_ex(dir, &lo, m);
}

static void test_load(const char *shared) {
  char q8[512], q4[512], hf[512];
  snprintf(q8, sizeof q8, "%s/models/stories260K/mlx-q8", shared);
  snprintf(q4, sizeof q4, "%s/models/stories260K/mlx-q4", shared);
  snprintf(hf, sizeof hf, "%s/models/stories260K/hf", shared);
  mx_model_t *m = NULL;
  unsetenv("MLXCEL_XLA_QUANT");
  // As stored (auto = mlx): 31 quantized tensors (down_proj's 172 inputs are not a multiple of
  // 32), 8 bits, group 32; the graph reads packed values + f16 scales and biases.
  CHECK_OK(load(q8, MX_QUANT_AUTO, 0, &m));
  if (m) {
    CHECK(m->quant == MX_QUANT_MLX && m->quant_bits == 8 && m->quant_group_size == 32 &&
          m->n_quantized == 31);
    double bytes = 0, params = 0;
    int32_t nq = 0;
    CHECK_OK(mx_model_matmul_bytes(m, 4, &bytes, &params, &nq));
    // Quantized: q, k, v, o, gate, up of the 5 layers and the tied head (the embedding), each
    // 8-bit weight 1 byte plus an f16 scale and bias per 32; down_proj (64 x 172, f16) at 4
    // bytes per weight.
    double per_layer_q = 2 * 64 * 64 + 2 * 32 * 64 + 2 * 172 * 64, head = 512 * 64;
    double want = 5 * (per_layer_q * (1 + 4.0 / 32) + 64 * 172 * 4) + head * (1 + 4.0 / 32);
    CHECK_MSG(fabs(bytes - want) < 0.5 && nq == 31 &&
                  fabs(params - (5 * (per_layer_q + 64 * 172) + head)) < 0.5,
              "matmul bytes %.0f (want %.0f), params %.0f, quantized %d", bytes, want, params, nq);
    mx_model_free(m);
  }
  // none: dequantized to f32, the scales / biases gone.
  CHECK_OK(load(q4, MX_QUANT_NONE, 0, &m));
  if (m) {
    const mx_weight_t *w = mx_checkpoint_find(m->ckpt, "model.layers.3.mlp.up_proj.weight");
    CHECK(m->quant == MX_QUANT_NONE && m->n_quantized == 0 && w && w->dtype == MX_ELEM_F32 &&
          w->dims[0] == 172 && w->dims[1] == 64);
    CHECK(!mx_checkpoint_find(m->ckpt, "model.layers.3.mlp.up_proj.scales") &&
          !mx_checkpoint_find(m->ckpt, "model.embed_tokens.biases"));
    mx_model_free(m);
  }
  // int8 from the MLX 4-bit checkpoint (requantized, group 64: down_proj and nothing else stays).
  CHECK_OK(load(q4, MX_QUANT_INT8, 64, &m));
  if (m) {
    const mx_weight_t *w = mx_checkpoint_find(m->ckpt, "model.embed_tokens.weight");
    const mx_weight_t *s = mx_checkpoint_find(m->ckpt, "model.embed_tokens.scales");
    CHECK(m->quant == MX_QUANT_INT8 && m->quant_group_size == 64 && m->n_quantized == 31 && w &&
          w->dtype == MX_ELEM_I8 && s && s->dtype == MX_ELEM_F16 && s->dims[1] == 1 &&
          !mx_checkpoint_find(m->ckpt, "model.embed_tokens.biases"));
    mx_model_free(m);
  }
  // int4 from f32 (the hf folder), group 32, f32 scales.
  mx_model_load_opts_t lo = {.tokenizer_optional = true,
                             .quant = MX_QUANT_INT4,
                             .group_size = 32,
                             .quant_scale_dtype = MX_ELEM_F32};
  CHECK_OK(mx_model_load_ex(hf, &lo, &m));
  if (m) {
    const mx_weight_t *w = mx_checkpoint_find(m->ckpt, "model.layers.0.self_attn.k_proj.weight");
    const mx_weight_t *s = mx_checkpoint_find(m->ckpt, "model.layers.0.self_attn.k_proj.scales");
    CHECK(m->quant == MX_QUANT_INT4 && w && w->dtype == MX_ELEM_UI32 && w->dims[0] == 32 &&
          w->dims[1] == 8 && s && s->dtype == MX_ELEM_F32 && s->dims[1] == 2);
    mx_model_free(m);
  }
  // The library never reads the environment (the CLI maps $MLXCEL_XLA_QUANT onto opts.quant):
  // with it set, auto is still none for float weights and mlx for an MLX checkpoint.
  setenv("MLXCEL_XLA_QUANT", "int8", 1);
  CHECK_OK(load(hf, MX_QUANT_AUTO, 0, &m));
  CHECK(m && m->quant == MX_QUANT_NONE && m->n_quantized == 0);
  mx_model_free(m);
  setenv("MLXCEL_XLA_QUANT", "fp8", 1);
  CHECK_OK(load(q4, MX_QUANT_AUTO, 0, &m));
  CHECK(m && m->quant == MX_QUANT_MLX);
  mx_model_free(m);
  unsetenv("MLXCEL_XLA_QUANT");
  mx_quant_mode_t qm = MX_QUANT_AUTO;
  EXPECT_ERR(mx_quant_mode_parse("fp8", "MLXCEL_XLA_QUANT", &qm),
             "MLXCEL_XLA_QUANT: 'fp8' is not a quantization mode");
  EXPECT_ERR(load(hf, MX_QUANT_MLX, 0, &m), "--quant mlx needs an MLX-quantized checkpoint");
  EXPECT_ERR(load(hf, MX_QUANT_INT8, 48, &m), "group size 48 is not supported");
  EXPECT_ERR(load(hf, MX_QUANT_NONE, 64, &m), "applies to --quant int8 / int4 only");
  CHECK(m == NULL);
}

// ---- broken MLX checkpoints ----

static char g_tmp[256];

// Writes g_tmp/{config.json, model.safetensors} from the mlx-q8 fixture: its config with the
// text `config_extra` spliced into the quantization dictionary, and its tensors with `edit`
// applied to the tensor called `target` (dims / dtype replaced, data truncated or padded).
static void write_variant(const char *q8, const char *config_extra, const char *target,
                          mx_elem_type_t dt, int64_t d1) {
  char path[512], *text = NULL;
  size_t len = 0;
  snprintf(path, sizeof path, "%s/config.json", q8);
  if (mx_read_file(path, &text, &len) != MX_OK) return;
  mx_strbuf_t cfg;
  mx_strbuf_init(&cfg);
  const char *at = strstr(text, "\"quantization\": {");
  size_t cut = at ? (size_t)(at - text) + strlen("\"quantization\": {") : len;
  mx_strbuf_printf(&cfg, "%.*s%s%s", (int)cut, text, config_extra ? config_extra : "", text + cut);
  free(text);
  snprintf(path, sizeof path, "%s/config.json", g_tmp);
  FILE *f = fopen(path, "w");
  fputs(cfg.data, f);
  fclose(f);
  mx_strbuf_free(&cfg);
  mx_checkpoint_t *ck = NULL;
  if (mx_checkpoint_open(q8, &ck) != MX_OK) return;
  int32_t n = mx_checkpoint_count(ck);
  mx_st_desc_t *d = calloc((size_t)n, sizeof *d);
  const void **data = calloc((size_t)n, sizeof *data);
  void *big = calloc(1, 1 << 20);
  for (int32_t i = 0; i < n; i++) {
    const mx_weight_t *w = mx_checkpoint_weight(ck, i);
    d[i].name = w->name;
    d[i].dtype = w->dtype;
    d[i].rank = w->rank;
    memcpy(d[i].dims, w->dims, sizeof d[i].dims);
    data[i] = w->data;
    if (target && !strcmp(w->name, target)) {
      d[i].dtype = dt;
      d[i].dims[1] = d1;
      data[i] = big;
    }
  }
  snprintf(path, sizeof path, "%s/model.safetensors", g_tmp);
  CHECK_OK(mx_st_write_file(path, d, data, n));
  free(big);
  free(d);
  free(data);
  mx_checkpoint_close(ck);
}

static void test_broken(const char *shared) {
  char q8[512];
  snprintf(q8, sizeof q8, "%s/models/stories260K/mlx-q8", shared);
  snprintf(g_tmp, sizeof g_tmp, "/tmp/mx_quant_model_XXXXXX");
  if (!mkdtemp(g_tmp)) return;
  mx_model_t *m = NULL;
  write_variant(q8, NULL, NULL, MX_ELEM_INVALID, 0);
  CHECK_OK(load(g_tmp, MX_QUANT_AUTO, 0, &m));  // the unedited copy loads
  mx_model_free(m);
  m = NULL;
  write_variant(q8, "\"model.layers.1.self_attn.q_proj\": {\"bits\": 4, \"group_size\": 32}, ",
                NULL, MX_ELEM_INVALID, 0);
  EXPECT_ERR(load(g_tmp, MX_QUANT_AUTO, 0, &m),
             "gives model.layers.1.self_attn.q_proj 4 bits in groups of 32, the checkpoint holds "
             "8 bits in groups of 32");
  write_variant(q8, "\"model.layers.0.mlp.up_proj\": false, ", NULL, MX_ELEM_INVALID, 0);
  EXPECT_ERR(load(g_tmp, MX_QUANT_AUTO, 0, &m), "quantization.model.layers.0.mlp.up_proj is false");
  write_variant(q8, NULL, "model.layers.2.self_attn.o_proj.scales", MX_ELEM_F16, 3);
  EXPECT_ERR(load(g_tmp, MX_QUANT_AUTO, 0, &m),
             "quantized tensor \"model.layers.2.self_attn.o_proj.weight\": "
             "model.layers.2.self_attn.o_proj.scales must be");
  write_variant(q8, NULL, "model.layers.2.self_attn.o_proj.weight", MX_ELEM_UI32, 6);
  EXPECT_ERR(load(g_tmp, MX_QUANT_AUTO, 0, &m), "packed width 6 for K = 64 is not 4-bit");
  write_variant(q8, NULL, "model.layers.2.self_attn.o_proj.weight", MX_ELEM_I16, 16);
  EXPECT_ERR(load(g_tmp, MX_QUANT_AUTO, 0, &m),
             "dtype i16 (quantized weights are i8 or packed u32)");
  write_variant(q8, NULL, "model.layers.4.mlp.gate_proj.biases", MX_ELEM_F32, 2);
  EXPECT_ERR(load(g_tmp, MX_QUANT_AUTO, 0, &m),
             "biases must have the type and shape of the scales");
  CHECK(m == NULL);
  char path[512];
  const char *files[] = {"config.json", "model.safetensors"};
  for (int i = 0; i < 2; i++) {
    snprintf(path, sizeof path, "%s/%s", g_tmp, files[i]);
    unlink(path);
  }
  rmdir(g_tmp);
}

// ---- mlxcel quantize ----

// Every tensor of a and b: same names, dtypes, shapes and bytes.
static void same_tensors(const char *a_dir, const char *b_dir, const char *label) {
  mx_checkpoint_t *a = NULL, *b = NULL;
  CHECK_OK(mx_checkpoint_open(a_dir, &a));
  CHECK_OK(mx_checkpoint_open(b_dir, &b));
  if (a && b) {
    CHECK_MSG(mx_checkpoint_count(a) == mx_checkpoint_count(b), "%s: %d vs %d tensors", label,
              mx_checkpoint_count(a), mx_checkpoint_count(b));
    int bad = 0;
    for (int32_t i = 0; i < mx_checkpoint_count(a); i++) {
      const mx_weight_t *x = mx_checkpoint_weight(a, i), *y = mx_checkpoint_find(b, x->name);
      bool same = y && x->dtype == y->dtype && x->rank == y->rank && x->nbytes == y->nbytes &&
                  !memcmp(x->dims, y->dims, sizeof x->dims[0] * (size_t)x->rank) &&
                  !memcmp(x->data, y->data, x->nbytes);
      if (!same && bad++ < 5) fprintf(stderr, "%s: tensor %s differs\n", label, x->name);
    }
    CHECK_MSG(bad == 0, "%s: %d tensors differ", label, bad);
  }
  mx_checkpoint_close(a);
  mx_checkpoint_close(b);
}

static void test_quantize(const char *shared) {
  char hf[512], ref[512], out[256];
  snprintf(hf, sizeof hf, "%s/models/stories260K/hf", shared);
  snprintf(out, sizeof out, "/tmp/mx_quantize_XXXXXX");
  if (!mkdtemp(out)) return;
  for (int bits = 4; bits <= 8; bits += 4) {
    snprintf(ref, sizeof ref, "%s/models/stories260K/mlx-q%d", shared, bits);
    mx_quantize_opts_t o = {.bits = bits, .group_size = 32};
    CHECK_OK(mx_model_quantize(hf, out, &o));
    same_tensors(out, ref, bits == 4 ? "quantize q4" : "quantize q8");
    mx_model_config_t cfg;
    CHECK_OK(mx_config_load(out, &cfg));
    CHECK(cfg.quant_bits == bits && cfg.quant_group_size == 32 && cfg.dtype == MX_ELEM_F16);
    mx_model_t *m = NULL;
    CHECK_OK(load(out, MX_QUANT_AUTO, 0, &m));  // and it loads as an MLX checkpoint
    CHECK(m && m->quant == MX_QUANT_MLX && m->n_quantized == 31 && m->tokenizer != NULL);
    mx_model_free(m);
  }
  mx_quantize_opts_t bad = {.bits = 3};
  EXPECT_ERR(mx_model_quantize(hf, out, &bad), "--bits 3");
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", out);
  CHECK(system(cmd) == 0);
}

int main(void) {
  test_conversions();
  test_quantizers();
  test_e8m0();
  test_config();
  const char *shared = mx_test_shared("models/stories260K");
  if (!shared || !mx_test_shared("fixtures/llama")) return mx_test_finish();
  test_overlay(shared);
  test_load(shared);
  test_broken(shared);
  test_quantize(shared);
  return mx_test_finish();
}
