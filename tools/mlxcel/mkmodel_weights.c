// model.safetensors of a random-weight checkpoint: the tensors the library says the
// architecture reads (mx_model_list_weights), seeded N(0, 0.02) values (norm weights 1), written
// in chunks so that any size needs O(chunk) memory.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mkmodel.h"
#include "mlxcel/writer.h"

// ---- Random numbers: splitmix64, one stream per tensor (seed ^ hash of its name) ----

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

// f32 -> bf16, rounding to nearest even: the bit-level form of mx_float_encode(BF16, f) for the
// finite values drawn here, about 10x faster (a 7B checkpoint is 7e9 conversions).
static uint16_t bf16_of(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  u += 0x7FFF + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}

// ---- The tensor list ----

typedef struct tlist {
  int32_t n, cap;
  mx_st_desc_t *d;  // names heap-owned
  mx_elem_type_t dt;
} tlist_t;

static mx_status_t add_typed(tlist_t *l, const char *name, mx_elem_type_t dt, int32_t rank,
                             const int64_t *dims) {
  if (l->n == l->cap) {
    int32_t cap = l->cap ? 2 * l->cap : 64;
    mx_st_desc_t *d = realloc(l->d, (size_t)cap * sizeof *d);
    if (!d) return mx_error_set(MX_ERR_NOMEM, "mkmodel: out of memory");
    l->d = d;
    l->cap = cap;
  }
  mx_st_desc_t *d = &l->d[l->n];
  memset(d, 0, sizeof *d);
  d->name = strdup(name);
  if (!d->name) return mx_error_set(MX_ERR_NOMEM, "mkmodel: out of memory");
  d->dtype = dt;
  d->rank = rank;
  for (int32_t i = 0; i < rank; i++) d->dims[i] = dims[i];
  l->n++;
  return MX_OK;
}

// A tensor two lists name (Gemma 3n's embed_audio: the text model's and the audio tower's) is
// written once; the lists must agree on its shape.
static mx_status_t add_spec(void *user, const char *name, int32_t rank, const int64_t *dims) {
  tlist_t *l = user;
  for (int32_t i = 0; i < l->n; i++) {
    if (strcmp(l->d[i].name, name) != 0) continue;
    bool same = l->d[i].rank == rank;
    for (int32_t k = 0; same && k < rank; k++) same = l->d[i].dims[k] == dims[k];
    return same ? MX_OK : mx_error_set(MX_ERR_RUNTIME, "mkmodel: %s listed with two shapes", name);
  }
  return add_typed(l, name, l->dt, rank, dims);
}

static void tlist_free(tlist_t *l) {
  for (int32_t i = 0; i < l->n; i++) free((char *)l->d[i].name);
  free(l->d);
}

// The expert index and projection of "<lp>experts.<e>.<proj>.<part>" (lp: up to "experts.");
// false for other names.
static bool expert_name(const char *name, size_t *lp_len, int32_t *e, const char **proj) {
  const char *x = strstr(name, "experts.");
  if (!x || x[8] < '0' || x[8] > '9') return false;
  char *end;
  *e = (int32_t)strtol(x + 8, &end, 10);
  if (*end != '.') return false;
  *lp_len = (size_t)(x - name) + 8;
  *proj = end + 1;
  return true;
}

// gpt-oss's released layout (moe_stacked.c reads it): the per-expert float tensors the library
// lists become, per sparse layer, "<lp>gate_up_proj_blocks" u8 [E, 2F, H / 32, 16] and
// "_scales" u8 [E, 2F, H / 32], "gate_up_proj_bias" [E, 2F], "down_proj_blocks" [E, H, F / 32,
// 16], "down_proj_scales" [E, H, F / 32] and "down_proj_bias" [E, H] (lp ends in "experts.").
static mx_status_t stack_mxfp4(tlist_t *l) {
  tlist_t out = {.dt = l->dt};
  mx_status_t st = MX_OK;
  for (int32_t i = 0; st == MX_OK && i < l->n; i++) {
    size_t lp_len;
    int32_t e;
    const char *proj;
    if (!expert_name(l->d[i].name, &lp_len, &e, &proj)) {
      st = add_typed(&out, l->d[i].name, l->d[i].dtype, l->d[i].rank, l->d[i].dims);
      continue;
    }
    if (e != 0 || strcmp(proj, "down_proj.weight") != 0) continue;  // once per layer
    int64_t H = l->d[i].dims[0], F = l->d[i].dims[1], E = 0;        // down_proj [H, F]
    for (int32_t j = 0; j < l->n; j++) {  // the layer's experts: the largest index + 1
      size_t len;
      int32_t ej;
      const char *pj;
      if (expert_name(l->d[j].name, &len, &ej, &pj) && len == lp_len &&
          memcmp(l->d[j].name, l->d[i].name, len) == 0 && ej + 1 > E) {
        E = ej + 1;
      }
    }
    if (H % 32 || F % 32) {
      st = mx_error_set(MX_ERR_INVALID_ARG,
                        "mkmodel: MXFP4 experts need sizes that are multiples of 32 (hidden "
                        "%lld, expert %lld)",
                        (long long)H, (long long)F);
      break;
    }
    const struct {
      const char *suffix;
      bool packed;
      int32_t rank;
      int64_t dims[4];
    } t[6] = {{"gate_up_proj_blocks", true, 4, {E, 2 * F, H / 32, 16}},
              {"gate_up_proj_scales", true, 3, {E, 2 * F, H / 32}},
              {"gate_up_proj_bias", false, 2, {E, 2 * F}},
              {"down_proj_blocks", true, 4, {E, H, F / 32, 16}},
              {"down_proj_scales", true, 3, {E, H, F / 32}},
              {"down_proj_bias", false, 2, {E, H}}};
    for (int k = 0; st == MX_OK && k < 6; k++) {
      char name[400];
      snprintf(name, sizeof name, "%.*s%s", (int)lp_len, l->d[i].name, t[k].suffix);
      st = add_typed(&out, name, t[k].packed ? MX_ELEM_UI8 : l->dt, t[k].rank, t[k].dims);
    }
  }
  if (st != MX_OK) {
    tlist_free(&out);
    return st;
  }
  tlist_free(l);
  *l = out;
  return MX_OK;
}

// Streams every tensor's values in file order.
static mx_status_t write_values(mx_st_writer_t *w, uint64_t seed, bool progress) {
  enum { CHUNK = 1 << 20 };
  float *buf = malloc(CHUNK * sizeof(float));
  uint16_t *half = malloc(CHUNK * sizeof(uint16_t));
  mx_status_t st = buf && half ? MX_OK : mx_error_set(MX_ERR_NOMEM, "mkmodel: out of memory");
  uint64_t total = 0, done = 0;
  for (int32_t i = 0; i < mx_st_writer_count(w); i++)
    total += mx_st_desc_bytes(mx_st_writer_desc(w, i));
  double t0 = mx_cli_now(), last = t0;
  for (int32_t i = 0; st == MX_OK && i < mx_st_writer_count(w); i++) {
    const mx_st_desc_t *di = mx_st_writer_desc(w, i);
    bool norm = strstr(di->name, "norm.weight") != NULL;
    // MXFP4: any e2m1 pair is a value; scales 2^-8 to 2^-6 keep |w| near N(0, 0.02)'s.
    bool blocks = di->dtype == MX_ELEM_UI8 && !strstr(di->name, "_scales");
    bool scales = di->dtype == MX_ELEM_UI8 && !blocks;
    const mx_elem_type_t dt = di->dtype;
    uint64_t numel = 1;
    for (int32_t r = 0; r < di->rank; r++) numel *= (uint64_t)di->dims[r];
    uint64_t state = seed ^ fnv1a(di->name);
    for (uint64_t off = 0; st == MX_OK && off < numel; off += CHUNK) {
      size_t k = numel - off < CHUNK ? (size_t)(numel - off) : CHUNK;
      if (blocks || scales) {
        uint8_t *bytes = (uint8_t *)buf;
        for (size_t j = 0; j < k; j++) {
          uint64_t r = splitmix64(&state);
          bytes[j] = blocks ? (uint8_t)r : (uint8_t)(119 + r % 3);
        }
        st = mx_st_writer_append(w, bytes, k);
        done += k;
        continue;
      }
      if (norm) {
        for (size_t j = 0; j < k; j++) buf[j] = 1.0f;
      } else {
        fill_normal(&state, buf, k, 0.02f);
      }
      if (dt == MX_ELEM_F32) {
        st = mx_st_writer_append(w, buf, k * sizeof(float));
      } else {
        for (size_t j = 0; j < k; j++) {
          half[j] = dt == MX_ELEM_BF16 ? bf16_of(buf[j]) : (uint16_t)mx_float_encode(dt, buf[j]);
        }
        st = mx_st_writer_append(w, half, k * sizeof(uint16_t));
      }
      done += k * mx_elem_size(dt);
      double now = mx_cli_now();
      if (progress && now - last > 1.0) {
        last = now;
        fprintf(stderr, "\rmkmodel: %llu / %llu MiB (%.0f MiB/s)", (unsigned long long)(done >> 20),
                (unsigned long long)(total >> 20), (double)done / (now - t0) / 1048576.0);
      }
    }
  }
  if (progress && st == MX_OK) {
    fprintf(stderr, "\rmkmodel: %llu MiB written in %.1f s%20s\n",
            (unsigned long long)(total >> 20), mx_cli_now() - t0, "");
  }
  free(buf), free(half);
  return st;
}

mx_status_t mk_write_weights(const char *path, const mk_preset_t *p, const mx_model_config_t *cfg,
                             mx_elem_type_t dt, uint64_t seed, bool quiet) {
  tlist_t l = {.dt = dt};
  mx_status_t st = mx_model_list_weights(cfg, add_spec, &l);
  if (st == MX_OK) st = mx_vision_list_weights(cfg, add_spec, &l);  // a VLM's tower
  if (st == MX_OK) st = mx_audio_list_weights(cfg, add_spec, &l);   // Gemma 3n's audio tower
  if (st == MX_OK && p->mxfp4_experts) st = stack_mxfp4(&l);
  const char *meta[2] = {"format", "pt"};
  mx_st_writer_t *w = NULL;
  if (st == MX_OK) st = mx_st_writer_open(path, l.d, l.n, meta, 1, &w);
  if (st == MX_OK) {
    uint64_t total = 0;
    for (int32_t i = 0; i < l.n; i++) total += mx_st_desc_bytes(&l.d[i]);
    st = write_values(w, seed, !quiet && total > ((uint64_t)256 << 20));
    if (st == MX_OK) {
      st = mx_st_writer_close(w);
    } else {
      mx_st_writer_abort(w);
    }
  }
  tlist_free(&l);
  return st;
}
