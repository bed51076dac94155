// --audio PATH (ADR 0022): Gemma 3n's audio placeholders expanded as Gemma3nProcessor expands
// them, each recording decoded, resampled and featurized on the host, and its rows from the
// session's @audio placed at its run of audio tokens.
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mlxcel/audio.h"

static int fail_msg(int rc, const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail_msg(int rc, const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "mlxcel %s: error: ", cmd);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return rc;
}

int mx_cli_audio_check(const char *cmd, const mx_model_t *m, int32_t n_audio) {
  if (n_audio > 0 && !m->config.audio.present)
    return fail_msg(MX_EXIT_USAGE, cmd,
                    "--audio: model_type '%s' has no audio tower (audio input is Gemma 3n's, "
                    "with its audio_config)",
                    m->config.model_type);
  return MX_EXIT_OK;
}

// The text of token id (a special token's piece), or NULL.
static const char *piece(const mx_model_t *m, int32_t id, size_t *len) {
  return m->tokenizer ? mx_tokenizer_id_to_piece(m->tokenizer, id, len) : NULL;
}

int mx_cli_audio_text(const char *cmd, const mx_model_t *m, int32_t n_audio, const char *text,
                      char **out) {
  *out = NULL;
  const mx_audio_config_t *a = &m->config.audio;
  size_t pl = 0, sl = 0;
  const char *ph = piece(m, a->audio_token_id, &pl);
  char *seq = NULL;  // Gemma3nProcessor's full audio sequence (the library's, as the server's)
  mx_error_clear();
  mx_status_t st = ph && pl > 0 ? mx_chat_audio_sequence(m->tokenizer, a, &seq, &sl)
                                : mx_error_set(MX_ERR_INVALID_ARG,
                                               "the audio token %d has no text in the tokenizer",
                                               a->audio_token_id);
  if (st) return mx_cli_fail(cmd, mx_error_prefix(st, "--audio"));
  int32_t found = 0;
  for (const char *p = strstr(text, ph); p; p = strstr(p + pl, ph)) found++;
  if (found != 0 && found != n_audio) {
    free(seq);
    return fail_msg(MX_EXIT_USAGE, cmd,
                    "--audio: the prompt has %d audio placeholders (%.*s) for %d recordings", found,
                    (int)pl, ph, n_audio);
  }
  // Each placeholder becomes the sequence; a prompt without any gets one per recording first.
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  const char *p = text;
  for (int32_t i = 0; i < n_audio; i++) {
    const char *at = found ? strstr(p, ph) : p;
    mx_strbuf_append(&sb, p, (size_t)(at - p));
    mx_strbuf_append(&sb, seq, sl);
    p = found ? at + pl : p;
  }
  mx_strbuf_puts(&sb, p);
  free(seq);
  *out = mx_strbuf_take(&sb, NULL);
  return *out ? MX_EXIT_OK : fail_msg(MX_EXIT_FAILED, cmd, "out of memory (the prompt)");
}

// One recording's rows [soft_tokens][H] into rows.
static mx_status_t recording_rows(mx_session_t *s, const char *path, float *rows, int64_t n_rows) {
  const mx_mel_opts_t o = mx_mel_opts_gemma3n();
  mx_audio_t wav = {0}, x = {0};
  float *feat = NULL;
  uint8_t *mask = NULL;
  int64_t frames = 0;
  mx_status_t st = mx_wav_read(path, NULL, &wav);
  if (!st) st = mx_audio_resample(&wav, o.rate, &x);
  if (!st) st = mx_audio_log_mel(x.samples, x.n, &o, &feat, &mask, &frames);
  if (!st && frames == 0)
    st = mx_error_set(MX_ERR_INVALID_ARG, "%s: too short for one log-mel frame", path);
  if (!st) st = mx_session_audio(s, feat, mask, frames, rows, n_rows);
  free(feat);
  free(mask);
  mx_audio_free(&wav);
  mx_audio_free(&x);
  return st;
}

int mx_cli_audio_rows(const char *cmd, mx_session_t *s, const char *path, float **rows,
                      double *tower_s) {
  const mx_model_t *m = mx_session_model(s);
  const int64_t n = (int64_t)m->config.audio.soft_tokens * m->config.hidden_size;
  *rows = malloc(sizeof **rows * (size_t)n);
  if (!*rows) return fail_msg(MX_EXIT_FAILED, cmd, "out of memory (audio rows)");
  double t0 = mx_cli_now();
  mx_error_clear();
  mx_status_t st = recording_rows(s, path, *rows, n);
  *tower_s = mx_cli_now() - t0;
  if (st) {
    free(*rows);
    *rows = NULL;
    return mx_cli_fail(cmd, mx_error_prefix(st, "%s", path));
  }
  return MX_EXIT_OK;
}

int mx_cli_prompt_audio(const char *cmd, const mx_model_t *m, mx_session_t *s,
                        const char *const *paths, int32_t n_audio, const int32_t *ids, int32_t n,
                        float **media, double *tower_s) {
  *media = NULL;
  const mx_audio_config_t *a = &m->config.audio;
  const int32_t H = m->config.hidden_size, N = a->soft_tokens;
  // The runs of audio tokens, one per recording, each soft_tokens long (the processor's layout).
  int32_t *starts = calloc((size_t)n_audio, sizeof *starts), runs = 0;
  if (!starts) return fail_msg(MX_EXIT_FAILED, cmd, "out of memory");
  for (int32_t i = 0; i < n;) {
    int32_t len = 0;
    while (i + len < n && ids[i + len] == a->audio_token_id) len++;
    if (len == 0) {
      i++;
      continue;
    }
    if (len != N || runs == n_audio) {
      free(starts);
      return fail_msg(MX_EXIT_USAGE, cmd,
                      "--audio: the prompt's audio tokens (id %d) must form one run of %d "
                      "(audio_soft_tokens_per_image) per recording (%d given)",
                      a->audio_token_id, N, n_audio);
    }
    starts[runs++] = i;
    i += len;
  }
  if (runs != n_audio) {
    free(starts);
    return fail_msg(MX_EXIT_USAGE, cmd, "--audio: %d runs of audio tokens for %d recordings", runs,
                    n_audio);
  }
  float *m_rows = calloc((size_t)n * (size_t)H, sizeof *m_rows);
  float *rows = malloc(sizeof *rows * (size_t)N * (size_t)H);
  mx_status_t st = m_rows && rows ? MX_OK : mx_error_set(MX_ERR_NOMEM, "out of memory");
  double t0 = mx_cli_now();
  for (int32_t k = 0; !st && k < n_audio; k++) {
    mx_error_clear();
    st = recording_rows(s, paths[k], rows, (int64_t)N * H);
    if (st) st = mx_error_prefix(st, "--audio %s", paths[k]);
    if (!st) memcpy(m_rows + (size_t)starts[k] * H, rows, sizeof *rows * (size_t)N * (size_t)H);
  }
  *tower_s = mx_cli_now() - t0;
  free(rows);
  free(starts);
  if (st) {
    free(m_rows);
    return mx_cli_fail(cmd, st);
  }
  *media = m_rows;
  return MX_EXIT_OK;
}
