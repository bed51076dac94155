// `mlxcel mkmodel`: writes a random-weight checkpoint of a known model shape (config.json,
// generation_config.json, model.safetensors, a byte-level BPE tokenizer.json) for benchmarks and
// tests: speed does not depend on the weight values.
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "mlxcel/base.h"
#include "mlxcel/model.h"
#include "mlxcel/writer.h"

typedef struct mk_preset {
  const char *name, *desc;
  int32_t vocab, hidden, inter, layers, heads, kv_heads, head_dim;
  int64_t max_pos;
  double theta;
  const char *eps;    // rms_norm_eps as transformers prints it
  bool llama3_rope;   // rope_scaling llama3, factor 32, original 8192
  bool specials_top;  // Llama 3: <|begin_of_text|>... at the top ids, BOS added by the template
  int32_t n_special;  // special tokens (named ones first, then reserved)
} mk_preset_t;

static const mk_preset_t kPresets[] = {
    {"tiny", "tiny test model (2 layers, hidden 64, vocab 320)", 320, 64, 128, 2, 4, 2, 16, 256,
     10000.0, "1e-05", false, true, 2},
    {"smollm2-135m", "SmolLM2-135M shapes", 49152, 576, 1536, 30, 9, 3, 64, 8192, 100000.0, "1e-05",
     false, false, 3},
    {"smollm2-360m", "SmolLM2-360M shapes", 49152, 960, 2560, 32, 15, 5, 64, 8192, 100000.0,
     "1e-05", false, false, 3},
    {"llama-3.2-1b", "Llama-3.2-1B shapes", 128256, 2048, 8192, 16, 32, 8, 64, 131072, 500000.0,
     "1e-05", true, true, 256},
};
enum { NPRESETS = sizeof kPresets / sizeof kPresets[0] };

static void mkmodel_usage(FILE *out) {
  fprintf(
      out,
      "Usage: mlxcel mkmodel --arch llama --preset NAME -o DIR [--dtype f32|f16|bf16]\n"
      "                      [--seed S] [--force] [-q]\n"
      "\n"
      "Writes a checkpoint with random weights (seeded, N(0, 0.02); norm weights 1) of a known\n"
      "model shape into DIR: config.json (as transformers' save_pretrained writes\n"
      "LlamaConfig), generation_config.json, model.safetensors and a byte-level BPE\n"
      "tokenizer.json sized to the vocabulary (256 byte tokens, merges, special tokens).\n"
      "Speed does not depend on weight values: these models are for benchmarks and tests.\n"
      "\n"
      "Options:\n"
      "  --arch NAME        architecture (only: llama)\n"
      "  --preset NAME      model shape (below)\n"
      "  -o, --output DIR   directory to write (created; must be empty unless --force)\n"
      "  --dtype T          weight dtype: f32 (default), f16, bf16\n"
      "  --seed S           random seed (default 0); same seed, same bytes\n"
      "  --force            overwrite the files in a non-empty DIR\n"
      "  -q, --quiet        no progress on stderr\n"
      "  -h, --help         show this help\n"
      "\n"
      "Presets:\n");
  for (int i = 0; i < NPRESETS; i++) {
    const mk_preset_t *p = &kPresets[i];
    fprintf(out, "  %-13s %s: hidden %d, intermediate %d, %d layers, %d/%d heads, vocab %d%s\n",
            p->name, p->desc, p->hidden, p->inter, p->layers, p->heads, p->kv_heads, p->vocab,
            ", tied");
  }
  fprintf(out, "\nExit status: 0 success, 1 failure, 2 bad command line, 3 unwritable DIR.\n");
}

// ---- Random numbers: splitmix64, per-tensor streams ----

static uint64_t splitmix64(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static uint64_t fnv1a(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
  return h;
}

// Approximately N(0, std^2): the sum of four 16-bit uniforms (Irwin-Hall), centred and scaled.
static void fill_normal(uint64_t *state, float *out, size_t n, float std) {
  const float scale = std * sqrtf(3.0f) / 65536.0f;  // var of the sum of 4 U[0,1) is 1/3
  for (size_t i = 0; i < n; i++) {
    uint64_t r = splitmix64(state);
    uint32_t s = (uint32_t)(r & 0xFFFF) + (uint32_t)((r >> 16) & 0xFFFF) +
                 (uint32_t)((r >> 32) & 0xFFFF) + (uint32_t)(r >> 48);
    out[i] = ((float)s - 131070.0f) * scale;
  }
}

static uint16_t f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7FFFFFFF) > 0x7F800000) return (uint16_t)((u >> 16) | 0x40);  // NaN
  u += 0x7FFF + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}

static uint16_t f32_to_f16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  uint32_t sign = (u >> 16) & 0x8000;
  float a = fabsf(f);
  if (a != a) return (uint16_t)(sign | 0x7E00);
  if (a >= 65520.0f) return (uint16_t)(sign | 0x7C00);
  if (a < 6.103515625e-05f) {  // subnormal half: multiples of 2^-24, round to nearest even
    float q = a * 16777216.0f;
    return (uint16_t)(sign | (uint32_t)nearbyintf(q));
  }
  uint32_t m = u & 0x7FFFFFFF;
  uint32_t e = (m >> 23) - 127 + 15;
  uint32_t mant = m & 0x7FFFFF;
  uint32_t h = (e << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1FFF;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++;  // may carry into the exponent: fine
  return (uint16_t)(sign | h);
}

// ---- Checkpoint layout ----

typedef struct mk_tensor {
  char name[96];
  int32_t rank;
  int64_t dims[2];
} mk_tensor_t;

static void add_tensor(mk_tensor_t *t, int32_t *n, const char *name, int64_t d0, int64_t d1) {
  if (t) {
    snprintf(t[*n].name, sizeof t[*n].name, "%s", name);
    t[*n].rank = d1 > 0 ? 2 : 1;
    t[*n].dims[0] = d0;
    t[*n].dims[1] = d1;
  }
  (*n)++;
}

// The tensors of a tied Llama checkpoint (Hugging Face names); t == NULL only counts them.
static int32_t list_tensors(const mk_preset_t *p, mk_tensor_t *t) {
  int32_t n = 0;
  int64_t h = p->hidden, q = (int64_t)p->heads * p->head_dim;
  int64_t kv = (int64_t)p->kv_heads * p->head_dim, inter = p->inter;
  static const struct {
    const char *suffix;
    int rows, cols;  // 0 = hidden, 1 = q width, 2 = kv width, 3 = intermediate, -1 = none
  } kLayer[] = {
      {"input_layernorm.weight", 0, -1}, {"post_attention_layernorm.weight", 0, -1},
      {"self_attn.q_proj.weight", 1, 0}, {"self_attn.k_proj.weight", 2, 0},
      {"self_attn.v_proj.weight", 2, 0}, {"self_attn.o_proj.weight", 0, 1},
      {"mlp.gate_proj.weight", 3, 0},    {"mlp.up_proj.weight", 3, 0},
      {"mlp.down_proj.weight", 0, 3},
  };
  const int64_t width[4] = {h, q, kv, inter};
  add_tensor(t, &n, "model.embed_tokens.weight", p->vocab, h);
  add_tensor(t, &n, "model.norm.weight", h, 0);
  for (int32_t l = 0; l < p->layers; l++) {
    for (size_t k = 0; k < sizeof kLayer / sizeof kLayer[0]; k++) {
      char name[96];
      snprintf(name, sizeof name, "model.layers.%d.%s", (int)l, kLayer[k].suffix);
      add_tensor(t, &n, name, width[kLayer[k].rows],
                 kLayer[k].cols < 0 ? 0 : width[kLayer[k].cols]);
    }
  }
  return n;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static mx_status_t write_weights(const char *path, const mk_preset_t *p, mx_elem_type_t dt,
                                 uint64_t seed, bool quiet) {
  int32_t n = list_tensors(p, NULL);
  mk_tensor_t *t = calloc((size_t)n, sizeof *t);
  mx_st_desc_t *d = calloc((size_t)n, sizeof *d);
  enum { CHUNK = 1 << 20 };
  float *buf = malloc(CHUNK * sizeof(float));
  uint16_t *half = malloc(CHUNK * sizeof(uint16_t));
  if (!t || !d || !buf || !half) {
    free(t), free(d), free(buf), free(half);
    return mx_error_set(MX_ERR_NOMEM, "mkmodel: out of memory");
  }
  list_tensors(p, t);
  for (int32_t i = 0; i < n; i++) {
    d[i].name = t[i].name;
    d[i].dtype = dt;
    d[i].rank = t[i].rank;
    d[i].dims[0] = t[i].dims[0];
    d[i].dims[1] = t[i].dims[1];
  }
  const char *meta[2] = {"format", "pt"};
  mx_st_writer_t *w = NULL;
  mx_status_t st = mx_st_writer_open(path, d, n, meta, 1, &w);
  uint64_t total = 0, done = 0;
  for (int32_t i = 0; i < n; i++) total += mx_st_desc_bytes(&d[i]);
  bool progress = !quiet && total > ((uint64_t)256 << 20);
  double t0 = now_s(), last = t0;
  for (int32_t i = 0; st == MX_OK && i < mx_st_writer_count(w); i++) {
    const mx_st_desc_t *di = mx_st_writer_desc(w, i);
    bool norm = strstr(di->name, "norm.weight") != NULL;
    uint64_t numel = (uint64_t)di->dims[0] * (uint64_t)(di->rank == 2 ? di->dims[1] : 1);
    uint64_t state = seed ^ fnv1a(di->name);
    for (uint64_t off = 0; st == MX_OK && off < numel; off += CHUNK) {
      size_t k = numel - off < CHUNK ? (size_t)(numel - off) : CHUNK;
      if (norm) {
        for (size_t j = 0; j < k; j++) buf[j] = 1.0f;
      } else {
        fill_normal(&state, buf, k, 0.02f);
      }
      if (dt == MX_ELEM_F32) {
        st = mx_st_writer_append(w, buf, k * sizeof(float));
      } else {
        for (size_t j = 0; j < k; j++) {
          half[j] = dt == MX_ELEM_BF16 ? f32_to_bf16(buf[j]) : f32_to_f16(buf[j]);
        }
        st = mx_st_writer_append(w, half, k * sizeof(uint16_t));
      }
      done += k * mx_elem_size(dt);
      double now = now_s();
      if (progress && now - last > 1.0) {
        last = now;
        fprintf(stderr, "\rmkmodel: %llu / %llu MiB (%.0f MiB/s)", (unsigned long long)(done >> 20),
                (unsigned long long)(total >> 20), (double)done / (now - t0) / 1048576.0);
      }
    }
  }
  if (st == MX_OK) {
    st = mx_st_writer_close(w);
  } else {
    mx_st_writer_abort(w);
  }
  if (progress) {
    fprintf(stderr, "\rmkmodel: %llu MiB written in %.1f s%20s\n",
            (unsigned long long)(total >> 20), now_s() - t0, "");
  }
  free(t), free(d), free(buf), free(half);
  return st;
}

// ---- JSON files ----

static mx_status_t write_text(const char *dir, const char *file, const mx_strbuf_t *sb) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  if (sb->oom) return mx_error_set(MX_ERR_NOMEM, "mkmodel: out of memory");
  FILE *f = fopen(path, "wb");
  if (!f) return mx_error_set(MX_ERR_IO, "cannot create %s: %s", path, strerror(errno));
  size_t len = sb->len;
  bool ok = fwrite(sb->data, 1, len, f) == len;
  ok = (fclose(f) == 0) && ok;
  return ok ? MX_OK : mx_error_set(MX_ERR_IO, "%s: write failed", path);
}

static int32_t bos_id(const mk_preset_t *p) {
  return p->specials_top ? p->vocab - p->n_special : 0;
}
static int32_t eos_id(const mk_preset_t *p) {
  return p->specials_top ? p->vocab - p->n_special + 1 : 0;
}

static const char *torch_dtype(mx_elem_type_t dt) {
  return dt == MX_ELEM_F16 ? "float16" : dt == MX_ELEM_BF16 ? "bfloat16" : "float32";
}

static void config_json(const mk_preset_t *p, mx_elem_type_t dt, mx_strbuf_t *sb) {
  // Keys sorted, indent 2: what save_pretrained writes.
  mx_strbuf_printf(sb,
                   "{\n"
                   "  \"architectures\": [\n"
                   "    \"LlamaForCausalLM\"\n"
                   "  ],\n"
                   "  \"attention_bias\": false,\n"
                   "  \"attention_dropout\": 0.0,\n"
                   "  \"bos_token_id\": %d,\n"
                   "  \"eos_token_id\": %d,\n"
                   "  \"head_dim\": %d,\n"
                   "  \"hidden_act\": \"silu\",\n"
                   "  \"hidden_size\": %d,\n"
                   "  \"initializer_range\": 0.02,\n"
                   "  \"intermediate_size\": %d,\n"
                   "  \"max_position_embeddings\": %lld,\n"
                   "  \"mlp_bias\": false,\n"
                   "  \"model_type\": \"llama\",\n"
                   "  \"num_attention_heads\": %d,\n"
                   "  \"num_hidden_layers\": %d,\n"
                   "  \"num_key_value_heads\": %d,\n"
                   "  \"pretraining_tp\": 1,\n"
                   "  \"rms_norm_eps\": %s,\n",
                   (int)bos_id(p), (int)eos_id(p), (int)p->head_dim, (int)p->hidden, (int)p->inter,
                   (long long)p->max_pos, (int)p->heads, (int)p->layers, (int)p->kv_heads, p->eps);
  if (p->llama3_rope) {
    mx_strbuf_puts(sb,
                   "  \"rope_scaling\": {\n"
                   "    \"factor\": 32.0,\n"
                   "    \"high_freq_factor\": 4.0,\n"
                   "    \"low_freq_factor\": 1.0,\n"
                   "    \"original_max_position_embeddings\": 8192,\n"
                   "    \"rope_type\": \"llama3\"\n"
                   "  },\n");
  } else {
    mx_strbuf_puts(sb, "  \"rope_scaling\": null,\n");
  }
  mx_strbuf_printf(sb,
                   "  \"rope_theta\": %.1f,\n"
                   "  \"tie_word_embeddings\": true,\n"
                   "  \"torch_dtype\": \"%s\",\n"
                   "  \"transformers_version\": \"4.55.4\",\n"
                   "  \"use_cache\": true,\n"
                   "  \"vocab_size\": %d\n"
                   "}\n",
                   p->theta, torch_dtype(dt), (int)p->vocab);
}

static void generation_config_json(const mk_preset_t *p, mx_strbuf_t *sb) {
  mx_strbuf_printf(sb,
                   "{\n"
                   "  \"_from_model_config\": true,\n"
                   "  \"bos_token_id\": %d,\n"
                   "  \"eos_token_id\": %d,\n"
                   "  \"transformers_version\": \"4.55.4\"\n"
                   "}\n",
                   (int)bos_id(p), (int)eos_id(p));
}

// GPT-2 bytes-to-unicode: printable Latin-1 bytes map to themselves, the others to U+0100 on.
static void byte_chars(char out[256][4]) {
  int next = 256;
  for (int b = 0; b < 256; b++) {
    bool keep = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    int cp = keep ? b : next++;
    if (cp < 0x80) {
      out[b][0] = (char)cp;
      out[b][1] = 0;
    } else {
      out[b][0] = (char)(0xC0 | (cp >> 6));
      out[b][1] = (char)(0x80 | (cp & 0x3F));
      out[b][2] = 0;
    }
  }
}

static void special_name(const mk_preset_t *p, int32_t k, char *buf, size_t cap) {
  static const char *const top[] = {"<|begin_of_text|>", "<|end_of_text|>"};
  static const char *const bottom[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
  if (p->specials_top && k < 2) {
    snprintf(buf, cap, "%s", top[k]);
  } else if (!p->specials_top && k < 3) {
    snprintf(buf, cap, "%s", bottom[k]);
  } else {
    snprintf(buf, cap, "<|reserved_special_token_%d|>", (int)(k - (p->specials_top ? 2 : 3)));
  }
}

// Merge m: pairs of byte characters in diagonal order of (rank a + rank b), frequent pairs
// first (m < 65536), then pair (m - 65536) / 256 followed by character (m - 65536) % 256.
static void merge_halves(int32_t m, const int *order, char bc[256][4], char l[16], char r[16]) {
  int32_t pi = m < 65536 ? m : (m - 65536) / 256;
  int32_t s = 0, cnt = 0;
  while (cnt + (s < 256 ? s + 1 : 511 - s) <= pi) {
    cnt += s < 256 ? s + 1 : 511 - s;
    s++;
  }
  int32_t a = (s < 256 ? 0 : s - 255) + (pi - cnt), b = s - a;
  if (m < 65536) {
    snprintf(l, 16, "%s", bc[order[a]]);
    snprintf(r, 16, "%s", bc[order[b]]);
  } else {
    snprintf(l, 16, "%s%s", bc[order[a]], bc[order[b]]);
    snprintf(r, 16, "%s", bc[order[(m - 65536) % 256]]);
  }
}

// Vocabulary: the 256 byte tokens, then merge tokens (pairs of byte characters in order of
// English frequency, then byte triples) up to vocab - n_special regular tokens.
static void tokenizer_json(const mk_preset_t *p, mx_strbuf_t *sb) {
  char bc[256][4];
  byte_chars(bc);
  // Character order for merges: space, lowercase by frequency, uppercase, digits, the rest.
  int order[256], n_order = 0;
  bool used[256] = {false};
  const char *pref =
      " etaoinshrdlcumwfgypbvkjxqzETAOINSHRDLCUMWFGYPBVKJXQZ0123456789.,'\"-!?:;()\n";
  for (const char *c = pref; *c; c++) {
    order[n_order++] = (uint8_t)*c;
    used[(uint8_t)*c] = true;
  }
  for (int b = 0; b < 256; b++) {
    if (!used[b]) order[n_order++] = b;
  }
  int32_t n_regular = p->vocab - p->n_special;
  int32_t first_regular = p->specials_top ? 0 : p->n_special;
  int32_t n_merges = n_regular - 256;
  if (n_merges < 0) n_merges = 0;

  mx_strbuf_puts(sb, "{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n");
  mx_strbuf_puts(sb, "  \"added_tokens\": [");
  for (int32_t k = 0; k < p->n_special; k++) {
    char name[64];
    special_name(p, k, name, sizeof name);
    int32_t id = p->specials_top ? n_regular + k : k;
    mx_strbuf_printf(sb,
                     "%s\n    {\"id\": %d, \"content\": \"%s\", \"single_word\": false, "
                     "\"lstrip\": false, \"rstrip\": false, \"normalized\": false, "
                     "\"special\": true}",
                     k ? "," : "", (int)id, name);
  }
  mx_strbuf_puts(sb,
                 "\n  ],\n  \"normalizer\": null,\n"
                 "  \"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, "
                 "\"trim_offsets\": true, \"use_regex\": true},\n");
  if (p->specials_top) {
    char bos[64];
    special_name(p, 0, bos, sizeof bos);
    mx_strbuf_printf(sb,
                     "  \"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": "
                     "[{\"SpecialToken\": {\"id\": \"%s\", \"type_id\": 0}}, {\"Sequence\": "
                     "{\"id\": \"A\", \"type_id\": 0}}], \"pair\": [], \"special_tokens\": "
                     "{\"%s\": {\"id\": \"%s\", \"ids\": [%d], \"tokens\": [\"%s\"]}}},\n",
                     bos, bos, bos, (int)bos_id(p), bos);
  } else {
    mx_strbuf_puts(sb,
                   "  \"post_processor\": {\"type\": \"ByteLevel\", \"add_prefix_space\": true, "
                   "\"trim_offsets\": false, \"use_regex\": true},\n");
  }
  mx_strbuf_puts(sb,
                 "  \"decoder\": {\"type\": \"ByteLevel\", \"add_prefix_space\": true, "
                 "\"trim_offsets\": true, \"use_regex\": true},\n"
                 "  \"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": null, "
                 "\"continuing_subword_prefix\": null, \"end_of_word_suffix\": null, "
                 "\"fuse_unk\": false, \"byte_fallback\": false, \"ignore_merges\": false,\n"
                 "    \"vocab\": {");
  int32_t id = first_regular;
  char l[16], r[16], tok[32];
  for (int32_t i = 0; i < n_regular; i++) {
    if (i < 256) {
      memcpy(tok, bc[i & 255], 4);
    } else {
      merge_halves(i - 256, order, bc, l, r);
      snprintf(tok, sizeof tok, "%s%s", l, r);
    }
    mx_strbuf_puts(sb, i ? ", " : "");
    if (i % 8 == 0) mx_strbuf_puts(sb, "\n      ");
    mx_cli_json_string(sb, tok);
    mx_strbuf_printf(sb, ": %d", (int)id++);
  }
  mx_strbuf_puts(sb, "\n    },\n    \"merges\": [");
  for (int32_t m = 0; m < n_merges; m++) {
    merge_halves(m, order, bc, l, r);
    mx_strbuf_puts(sb, m ? ", " : "");
    if (m % 8 == 0) mx_strbuf_puts(sb, "\n      ");
    mx_strbuf_puts(sb, "[");
    mx_cli_json_string(sb, l);
    mx_strbuf_puts(sb, ", ");
    mx_cli_json_string(sb, r);
    mx_strbuf_puts(sb, "]");
  }
  mx_strbuf_puts(sb, "\n    ]\n  }\n}\n");
}

static void tokenizer_config_json(const mk_preset_t *p, mx_strbuf_t *sb) {
  char bos[64], eos[64];
  special_name(p, p->specials_top ? 0 : 0, bos, sizeof bos);
  special_name(p, p->specials_top ? 1 : 0, eos, sizeof eos);
  mx_strbuf_printf(sb,
                   "{\n  \"bos_token\": \"%s\",\n  \"clean_up_tokenization_spaces\": false,\n"
                   "  \"eos_token\": \"%s\",\n  \"model_max_length\": %lld,\n"
                   "  \"tokenizer_class\": \"PreTrainedTokenizerFast\"\n}\n",
                   bos, eos, (long long)p->max_pos);
}

// ---- Directory handling ----

// 1: created or empty, 0: non-empty, -1: error (message printed).
static int prepare_dir(const char *dir) {
  struct stat sb;
  if (stat(dir, &sb) != 0) {
    if (errno != ENOENT) {
      fprintf(stderr, "mlxcel mkmodel: cannot access %s: %s\n", dir, strerror(errno));
      return -1;
    }
    // mkdir -p
    char path[4096];
    snprintf(path, sizeof path, "%s", dir);
    for (char *s = path + 1; *s; s++) {
      if (*s != '/') continue;
      *s = 0;
      if (mkdir(path, 0777) != 0 && errno != EEXIST) break;
      *s = '/';
    }
    if (mkdir(path, 0777) != 0 && errno != EEXIST) {
      fprintf(stderr, "mlxcel mkmodel: cannot create %s: %s\n", dir, strerror(errno));
      return -1;
    }
    return 1;
  }
  if (!S_ISDIR(sb.st_mode)) {
    fprintf(stderr, "mlxcel mkmodel: %s exists and is not a directory\n", dir);
    return -1;
  }
  DIR *d = opendir(dir);
  if (!d) {
    fprintf(stderr, "mlxcel mkmodel: cannot read %s: %s\n", dir, strerror(errno));
    return -1;
  }
  int empty = 1;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) empty = 0;
  }
  closedir(d);
  return empty;
}

int mx_cli_cmd_mkmodel(int argc, char **argv) {
  const char *cmd = "mkmodel", *arch = NULL, *preset = NULL, *dir = NULL, *dtype = "f32";
  int64_t seed = 0;
  bool force = false, quiet = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = NULL;
    int r;
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      mkmodel_usage(stdout);
      return MX_EXIT_OK;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--arch", NULL, &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      arch = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--preset", NULL, &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      preset = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--output", "-o", &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      dir = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--dtype", NULL, &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      dtype = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--seed", NULL, &v)) != 0) {
      if (r < 0 || !mx_cli_parse_int(cmd, "--seed", v, 0, INT64_MAX, &seed)) return MX_EXIT_USAGE;
    } else if (strcmp(a, "--force") == 0) {
      force = true;
    } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
      quiet = true;
    } else if (a[0] == '-') {
      return mx_cli_usage_error(cmd, mkmodel_usage, "unknown option '%s'", a);
    } else {
      return mx_cli_usage_error(cmd, mkmodel_usage, "unexpected argument '%s'", a);
    }
  }
  if (!arch) return mx_cli_usage_error(cmd, mkmodel_usage, "missing --arch (only: llama)");
  if (strcmp(arch, "llama") != 0) {
    return mx_cli_usage_error(cmd, mkmodel_usage, "--arch '%s' is not supported (only: llama)",
                              arch);
  }
  if (!preset) return mx_cli_usage_error(cmd, mkmodel_usage, "missing --preset NAME");
  const mk_preset_t *p = NULL;
  for (int i = 0; i < NPRESETS; i++) {
    if (strcmp(preset, kPresets[i].name) == 0) p = &kPresets[i];
  }
  if (!p) return mx_cli_usage_error(cmd, mkmodel_usage, "unknown --preset '%s'", preset);
  if (!dir) return mx_cli_usage_error(cmd, mkmodel_usage, "missing -o DIR");
  mx_elem_type_t dt = strcmp(dtype, "f32") == 0    ? MX_ELEM_F32
                      : strcmp(dtype, "f16") == 0  ? MX_ELEM_F16
                      : strcmp(dtype, "bf16") == 0 ? MX_ELEM_BF16
                                                   : MX_ELEM_INVALID;
  if (dt == MX_ELEM_INVALID) {
    return mx_cli_usage_error(cmd, mkmodel_usage, "--dtype '%s' is not f32, f16 or bf16", dtype);
  }
  int pd = prepare_dir(dir);
  if (pd < 0) return MX_EXIT_IO;
  if (pd == 0 && !force) {
    fprintf(stderr, "mlxcel mkmodel: error: %s is not empty (use --force to overwrite its files)\n",
            dir);
    return MX_EXIT_FAILED;
  }
  mx_strbuf_t sb;
  mx_status_t st = MX_OK;
  void (*const gens[])(const mk_preset_t *, mx_strbuf_t *) = {
      generation_config_json, tokenizer_json, tokenizer_config_json};
  const char *files[] = {"generation_config.json", "tokenizer.json", "tokenizer_config.json"};
  mx_strbuf_init(&sb);
  config_json(p, dt, &sb);
  st = write_text(dir, "config.json", &sb);
  mx_strbuf_free(&sb);
  for (int i = 0; i < 3 && st == MX_OK; i++) {
    mx_strbuf_init(&sb);
    gens[i](p, &sb);
    st = write_text(dir, files[i], &sb);
    mx_strbuf_free(&sb);
  }
  if (st == MX_OK) {
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    st = write_weights(path, p, dt, (uint64_t)seed, quiet);
  }
  if (st == MX_OK) {
    // Read back what was written: config, header validation, tensor names and shapes.
    mx_model_config_t cfg;
    mx_checkpoint_t *ck = NULL;
    st = mx_config_load(dir, &cfg);
    if (st == MX_OK) st = mx_checkpoint_open(dir, &ck);
    if (st == MX_OK) st = mx_model_check_weights(&cfg, ck);
    mx_checkpoint_close(ck);
    if (st != MX_OK) mx_error_prefix(st, "the written checkpoint does not load");
  }
  if (st != MX_OK) return mx_cli_fail(cmd, st);
  if (!quiet) {
    fprintf(stderr, "mlxcel mkmodel: wrote %s (%s, %s, seed %lld)\n", dir, p->name, dtype,
            (long long)seed);
  }
  return MX_EXIT_OK;
}
