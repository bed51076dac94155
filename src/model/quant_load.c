// The load-time quantization pass (mx_quant_apply): resolves the mode, checks an MLX checkpoint
// against its config, and rewrites the resident weights of the checkpoint for the mode:
//   MLX / stored: nothing (the packed tensors are bound as they are in the file), but routers and
//          shared-expert gates, which the graph reads in float, are dequantized to f32;
//   NONE:  every stored-quantized weight is dequantized to f32 ("<x>.weight" [N, K]);
//   INT8 / INT4: every linear weight (and the embedding when it is the tied head) whose K is a
//          multiple of the group size, and every expert weight when the hidden and expert sizes
//          both are, is quantized from its float (or dequantized MLX) values (routers stay float);
//          stored-quantized weights that are not requantized are dequantized to f32.
// New tensors are owned by the checkpoint (mx_checkpoint_put); the mmapped originals stay mapped
// but are no longer found.
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/graph_internal.h"
#include "model/quant_internal.h"

static const char *const kModeNames[] = {"auto", "none", "int8", "int4", "mlx"};

const char *mx_quant_mode_name(mx_quant_mode_t m) {
  return (unsigned)m < sizeof kModeNames / sizeof kModeNames[0] ? kModeNames[m] : "?";
}

const char *mx_model_quant_name(const mx_model_t *m) {
  return m->quant == MX_QUANT_MLX && m->quant_mxfp4 ? "mxfp4" : mx_quant_mode_name(m->quant);
}

mx_status_t mx_quant_mode_parse(const char *s, const char *what, mx_quant_mode_t *out) {
  for (size_t i = 0; s && i < sizeof kModeNames / sizeof kModeNames[0]; i++) {
    if (strcmp(s, kModeNames[i]) == 0) {
      *out = (mx_quant_mode_t)i;
      return MX_OK;
    }
  }
  return mx_error_set(MX_ERR_INVALID_ARG,
                      "%s: '%s' is not a quantization mode (auto, none, int8, "
                      "int4, mlx)",
                      what ? what : "quantization", s ? s : "(null)");
}

// "<x>" of "<x>.weight" (false when the name has another form).
static bool base_name(const char *name, char *base, size_t cap) {
  size_t n = strlen(name);
  if (n <= 7 || n - 7 >= cap || strcmp(name + n - 7, ".weight") != 0) return false;
  memcpy(base, name, n - 7);
  base[n - 7] = '\0';
  return true;
}

// Per-layer overrides of config.json's quantization dictionary against the stored tensors.
static mx_status_t check_config(const mx_model_t *m, const mx_wlist_t *wl) {
  const mx_model_config_t *cfg = &m->config;
  if (cfg->quant_bits == 0) return MX_OK;  // no quantization dictionary: shapes are the truth
  char path[4096];
  size_t n = strlen(m->dir);
  snprintf(path, sizeof path, "%s%sconfig.json", m->dir, n && m->dir[n - 1] == '/' ? "" : "/");
  char *text = NULL;
  size_t len = 0;
  mx_status_t st = mx_read_file(path, &text, &len);
  if (st != MX_OK) return st;
  cJSON *root = cJSON_ParseWithLength(text, len);
  free(text);
  if (!root) return mx_error_set(MX_ERR_PARSE, "%s: not valid JSON", path);
  for (int32_t i = 0; st == MX_OK && i < wl->n; i++) {
    const mx_wspec_t *s = &wl->w[i];
    char base[300];
    if ((s->kind != MX_WK_LINEAR && s->kind != MX_WK_EMBED) || !base_name(s->name, base, 300)) {
      continue;
    }
    int32_t bits, group;
    st = mx_quant_config_layer(root, path, base, cfg->quant_bits, cfg->quant_group_size, &bits,
                               &group);
    if (st != MX_OK) break;
    if (s->qmode == MX_Q_AFFINE && bits == 0) {
      st = mx_error_set(MX_ERR_INVALID_ARG,
                        "%s: quantization.%s is false but the checkpoint holds '%s' quantized",
                        path, base, s->name);
    } else if (s->qmode == MX_Q_AFFINE && (bits != s->qbits || group != s->qgroup)) {
      st = mx_error_set(MX_ERR_INVALID_ARG,
                        "%s: the config gives %s %d bits in groups of %d, the checkpoint holds "
                        "%d bits in groups of %d",
                        path, base, bits, group, s->qbits, s->qgroup);
    }
  }
  cJSON_Delete(root);
  return st;
}

// Float values of row r of spec s (stored float or stored quantized) into w[K].
static void load_row(const mx_checkpoint_t *ck, const mx_wspec_t *s, const mx_wlist_t *wl,
                     int64_t r, float *w) {
  const mx_weight_t *t = mx_checkpoint_find(ck, s->name);
  if (!s->qmode) {
    int64_t k = t->dims[1];
    if (t->dtype == MX_ELEM_F32) {
      memcpy(w, (const float *)t->data + r * k, (size_t)k * sizeof *w);
    } else {
      for (int64_t i = 0; i < k; i++) w[i] = mx_q_load_float(t->dtype, t->data, r * k + i);
    }
    return;
  }
  const mx_weight_t *sc = mx_checkpoint_find(ck, wl->w[s->qscales].name);
  const mx_weight_t *bi = s->qbiases >= 0 ? mx_checkpoint_find(ck, wl->w[s->qbiases].name) : NULL;
  mx_q_dequant_row((mx_q_mode_t)s->qmode, s->qbits, s->qk, s->qgroup, t->data, sc->dtype, sc->data,
                   bi ? bi->data : NULL, r, w);
}

// Removes the scales / biases of a stored-quantized spec.
static mx_status_t drop_params(mx_checkpoint_t *ck, const mx_wspec_t *s, const mx_wlist_t *wl) {
  if (s->qscales >= 0) MX_TRY(mx_checkpoint_remove(ck, wl->w[s->qscales].name));
  if (s->qbiases >= 0) MX_TRY(mx_checkpoint_remove(ck, wl->w[s->qbiases].name));
  return MX_OK;
}

// Replaces spec s by its f32 values [N, K].
static mx_status_t to_f32(mx_checkpoint_t *ck, const mx_wspec_t *s, const mx_wlist_t *wl) {
  int64_t N = s->qn, K = s->qk;
  float *w = malloc((size_t)(N * K) * sizeof *w + 1);
  if (!w) return mx_error_set(MX_ERR_NOMEM, "out of memory dequantizing %s", s->name);
  for (int64_t r = 0; r < N; r++) load_row(ck, s, wl, r, w + r * K);
  int64_t dims[2] = {N, K};
  MX_TRY(drop_params(ck, s, wl));
  return mx_checkpoint_put(ck, s->name, MX_ELEM_F32, 2, dims, w);
}

// Rows [r0, r1) of one requantization, run on several threads (each row is independent).
typedef struct qrows {
  const mx_checkpoint_t *ck;
  const mx_wspec_t *s;
  const mx_wlist_t *wl;
  mx_quant_mode_t mode;
  int64_t g;
  mx_elem_type_t sdt;
  int64_t N, K, G;
  size_t row_bytes, ss;
  uint8_t *q, *sc;
  int nth;
} qrows_t;

typedef struct qrows_part {
  const qrows_t *j;
  int ith;
  bool failed;
} qrows_part_t;

static void *qrows_run(void *arg) {
  qrows_part_t *pt = arg;
  const qrows_t *j = pt->j;
  float *row = malloc((size_t)j->K * sizeof *row + 1);
  if (!row) {
    pt->failed = true;
    return NULL;
  }
  int64_t r0 = j->N * pt->ith / j->nth, r1 = j->N * (pt->ith + 1) / j->nth;
  for (int64_t r = r0; r < r1; r++) {
    load_row(j->ck, j->s, j->wl, r, row);
    uint8_t *sc = j->sc + (size_t)(r * j->G) * j->ss;
    if (j->mode == MX_QUANT_INT8) {
      mx_q_int8_row(row, j->K, j->g, j->sdt, (int8_t *)j->q + r * j->K, sc);
    } else {
      mx_q_int4_row(row, j->K, j->g, j->sdt, (uint32_t *)(void *)(j->q + (size_t)r * j->row_bytes),
                    sc);
    }
  }
  free(row);
  return NULL;
}

// Quantizes every row, on up to 16 threads (the online CPUs) for matrices worth it.
static mx_status_t run_rows(qrows_t *j) {
  enum { MAX_T = 16 };
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int nth = cpus < 1 ? 1 : cpus > MAX_T ? MAX_T : (int)cpus;
  if (j->N * j->K < (1 << 20)) nth = 1;
  j->nth = nth;
  pthread_t th[MAX_T];
  qrows_part_t parts[MAX_T];
  int started = 0;
  for (int t = 0; t < nth; t++) parts[t] = (qrows_part_t){j, t, false};
  for (int t = 1; t < nth; t++) {
    if (pthread_create(&th[t], NULL, qrows_run, &parts[t]) != 0) break;
    started = t;
  }
  // Rows of threads that could not start are done here.
  for (int t = started + 1; t < nth; t++) qrows_run(&parts[t]);
  qrows_run(&parts[0]);
  for (int t = 1; t <= started; t++) pthread_join(th[t], NULL);
  for (int t = 0; t < nth; t++)
    if (parts[t].failed)
      return mx_error_set(MX_ERR_NOMEM, "out of memory quantizing %s", j->s->name);
  return MX_OK;
}

// Quantizes spec s to INT8 / INT4 with group g and scales of type sdt.
static mx_status_t requantize(mx_checkpoint_t *ck, const mx_wspec_t *s, const mx_wlist_t *wl,
                              mx_quant_mode_t mode, int64_t g, mx_elem_type_t sdt) {
  int64_t N = s->qmode ? s->qn : s->dims[0], K = s->qmode ? s->qk : s->dims[1], G = K / g;
  size_t row_bytes = mode == MX_QUANT_INT8 ? (size_t)K : (size_t)K / 2;
  size_t ss = mx_elem_size(sdt);
  uint8_t *q = malloc((size_t)N * row_bytes + 1);
  uint8_t *sc = malloc((size_t)(N * G) * ss + 1);
  if (!q || !sc) {
    free(q);
    free(sc);
    return mx_error_set(MX_ERR_NOMEM, "out of memory quantizing %s", s->name);
  }
  qrows_t job = {ck, s, wl, mode, g, sdt, N, K, G, row_bytes, ss, q, sc, 0};
  mx_status_t st0 = run_rows(&job);
  if (st0 != MX_OK) {
    free(q);
    free(sc);
    return st0;
  }
  char base[300], sn[320];
  base_name(s->name, base, sizeof base);
  snprintf(sn, sizeof sn, "%.280s.scales", base);
  mx_status_t st = drop_params(ck, s, wl);
  if (st != MX_OK) {
    free(q);
    free(sc);
    return st;
  }
  int64_t wd[2] = {N, mode == MX_QUANT_INT8 ? K : K / 8}, sd[2] = {N, G};
  st = mx_checkpoint_put(ck, s->name, mode == MX_QUANT_INT8 ? MX_ELEM_I8 : MX_ELEM_UI32, 2, wd, q);
  if (st != MX_OK) {
    free(sc);
    return st;
  }
  return mx_checkpoint_put(ck, sn, sdt, 2, sd, sc);
}

static mx_status_t resolve_mode(const mx_model_load_opts_t *opts, bool stored,
                                mx_quant_mode_t *mode) {
  *mode = opts ? opts->quant : MX_QUANT_AUTO;
  if (*mode == MX_QUANT_AUTO) *mode = stored ? MX_QUANT_MLX : MX_QUANT_NONE;
  if ((unsigned)*mode > MX_QUANT_MLX) {
    return mx_error_set(MX_ERR_INVALID_ARG, "quantization mode %d is not valid", (int)*mode);
  }
  if (*mode == MX_QUANT_MLX && !stored) {
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "--quant mlx needs an MLX-quantized checkpoint (this one has float "
                        "weights; `mlxcel quantize` writes one, or use --quant int8 / int4)");
  }
  return MX_OK;
}

mx_status_t mx_quant_apply(mx_model_t *m, const mx_model_load_opts_t *opts) {
  mx_arch_t a;
  mx_wlist_t wl;
  memset(&wl, 0, sizeof wl);
  mx_status_t st = mx_arch_from_config(&m->config, &a);
  if (st != MX_OK) return st;
  mx_arch_resolve_names(&a, m->ckpt);
  st = mx_arch_weights(&a, &wl);
  if (st == MX_OK) st = mx_wlist_resolve_quant(&wl, m->ckpt);
  int32_t n_stored = 0, n_mxfp4 = 0, first = -1;
  for (int32_t i = 0; st == MX_OK && i < wl.n; i++) {
    if (wl.w[i].qmode) {
      n_stored++;
      n_mxfp4 += wl.w[i].qmode == MX_Q_MXFP4;
      if (first < 0) first = i;
    }
  }
  if (st == MX_OK) st = check_config(m, &wl);
  mx_quant_mode_t mode = MX_QUANT_NONE;
  if (st == MX_OK) st = resolve_mode(opts, n_stored > 0, &mode);
  int32_t g = opts ? opts->group_size : 0;
  mx_elem_type_t sdt = opts && opts->quant_scale_dtype ? opts->quant_scale_dtype : MX_ELEM_F16;
  if (st == MX_OK && (mode == MX_QUANT_INT8 || mode == MX_QUANT_INT4)) {
    if (g == 0) g = 64;
    if (g != 32 && g != 64 && g != 128) {
      st = mx_error_set(MX_ERR_INVALID_ARG, "group size %d is not supported (32, 64 or 128)", g);
    } else if (sdt != MX_ELEM_F16 && sdt != MX_ELEM_F32) {
      st = mx_error_set(MX_ERR_INVALID_ARG, "quantization scales must be f16 or f32, not %s",
                        mx_elem_name(sdt));
    }
  } else if (st == MX_OK && g != 0) {
    st = mx_error_set(MX_ERR_INVALID_ARG,
                      "a group size (%d) applies to --quant int8 / int4 only (mode is %s)", g,
                      mx_quant_mode_name(mode));
  }
  // Two passes: the bytes each rewritten weight reads first (for the progress reports), then the
  // rewriting. MLX: everything stays as stored; NONE only dequantizes an MLX checkpoint.
  const mx_progress_t *pg = opts ? &opts->progress : NULL;
  const char *stage = mode == MX_QUANT_NONE ? "dequantizing" : "quantizing";
  uint64_t total = 0, done = 0;
  int32_t n_q = 0;
  for (int pass = 0; pass < 2 && st == MX_OK; pass++) {
    if (pass == 1 && total) mx_progress_report(pg, stage, 0, total);
    for (int32_t i = 0; st == MX_OK && i < wl.n; i++) {
      const mx_wspec_t *s = &wl.w[i];
      if (s->kind != MX_WK_LINEAR && s->kind != MX_WK_EMBED && s->kind != MX_WK_EXPERT &&
          s->kind != MX_WK_GATE)
        continue;
      if (mode == MX_QUANT_MLX && s->kind != MX_WK_GATE) {
        n_q += pass == 1 && s->qmode != 0;
        continue;
      }
      int64_t K = s->qmode ? s->qk : s->dims[1];
      // Experts only when all three projections of every expert divide into groups (mx.moe
      // takes one format per layer).
      bool requant = mode == MX_QUANT_INT8 || mode == MX_QUANT_INT4;
      bool group_ok =
          requant && (s->kind == MX_WK_EXPERT ? a.hidden % g == 0 && a.expert_ffn % g == 0
                                              : (s->kind == MX_WK_LINEAR || a.tied) && K % g == 0);
      bool target = group_ok && s->rank == 2 && s->kind != MX_WK_GATE;
      if (!target && !s->qmode) continue;
      const mx_weight_t *w = mx_checkpoint_find(m->ckpt, s->name);
      uint64_t bytes = w ? w->nbytes : 0;
      if (pass == 0) {
        total += bytes;
        continue;
      }
      if (target) {
        st = requantize(m->ckpt, s, &wl, mode, g, sdt);
        n_q++;
      } else {
        st = to_f32(m->ckpt, s, &wl);
      }
      done += bytes;
      if (st == MX_OK) mx_progress_report(pg, stage, done, total);
    }
  }
  if (st == MX_OK) {
    m->quant = mode;
    m->n_quantized = n_q;
    if (mode == MX_QUANT_INT8 || mode == MX_QUANT_INT4) {
      m->quant_group_size = g;
      m->quant_bits = mode == MX_QUANT_INT8 ? 8 : 4;
    } else if (mode == MX_QUANT_MLX) {
      m->quant_mxfp4 = n_mxfp4 == n_stored;
      m->quant_bits = m->config.quant_bits ? m->config.quant_bits : wl.w[first].qbits;
      m->quant_group_size =
          m->config.quant_group_size ? m->config.quant_group_size : wl.w[first].qgroup;
    }
  }
  mx_wlist_free(&wl);
  mx_arch_free(&a);
  return st;
}
