// `mlxcel bench --audio PATH`: one rep of Gemma 3n's one-recording prompt, timed as a user waits
// for it (issue 24): the WAV decoded, resampled and turned into log-mel features on the host,
// the audio tower, the prompt with the tower's rows at its audio tokens, the first token; then
// the decode steps after it. cmd_bench.c holds the reps up to the machine's limits as it does
// for text and images.
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mlxcel/audio.h"
#include "mlxcel/tokenizer.h"

// The words after the recording (Gemma3nProcessor puts the audio sequence where the placeholder
// is; the prompt has none, so it goes first, as generate --audio does).
static const char kText[] = "Describe the audio.";

// The recording decoded, resampled to the feature extractor's rate and featurized: *feat [frames
// x mels] and *mask [frames] (heap). *seconds: its length.
static mx_status_t features(const char *path, float **feat, uint8_t **mask, int64_t *frames,
                            double *seconds) {
  const mx_mel_opts_t o = mx_mel_opts_gemma3n();
  mx_audio_t wav = {0}, x = {0};
  *feat = NULL;
  *mask = NULL;
  *frames = 0;
  mx_status_t st = mx_wav_read(path, NULL, &wav);
  if (!st) st = mx_audio_resample(&wav, o.rate, &x);
  if (!st) st = mx_audio_log_mel(x.samples, x.n, &o, feat, mask, frames);
  if (!st && *frames == 0)
    st = mx_error_set(MX_ERR_INVALID_ARG, "%s: too short for one log-mel frame", path);
  if (seconds) *seconds = x.rate > 0 ? (double)x.n / x.rate : 0;
  mx_audio_free(&wav);
  mx_audio_free(&x);
  if (st) {
    free(*feat);
    free(*mask);
    *feat = NULL;
    *mask = NULL;
  }
  return st;
}

int mx_cli_bench_audio_prompt(const char *cmd, const mx_model_t *m, const char *path,
                              mx_bench_audio_t *out) {
  memset(out, 0, sizeof *out);
  out->path = path;
  const mx_audio_config_t *a = &m->config.audio;
  int rc = mx_cli_audio_check(cmd, m, 1);
  if (rc != MX_EXIT_OK) return rc;
  if (!m->tokenizer) {
    fprintf(stderr, "mlxcel %s: error: --audio needs the model's tokenizer (tokenizer.json)\n",
            cmd);
    return MX_EXIT_FAILED;
  }
  // The recording's length and frames before any session exists (a bad file fails here).
  float *feat = NULL;
  uint8_t *mask = NULL;
  mx_error_clear();
  mx_status_t st = features(path, &feat, &mask, &out->frames, &out->seconds);
  free(feat);
  free(mask);
  if (st) return mx_cli_fail(cmd, mx_error_prefix(st, "--audio %s", path));
  out->audio_tokens = a->soft_tokens;
  char *text = NULL;
  rc = mx_cli_audio_text(cmd, m, 1, kText, &text);
  if (rc != MX_EXIT_OK) return rc;
  mx_encode_opts_t eo = {.add_special = true, .parse_special = true};
  st = mx_tokenizer_encode(m->tokenizer, text, strlen(text), &eo, &out->ids, &out->n);
  free(text);
  if (st) return mx_cli_fail(cmd, st);
  for (out->start = 0; out->start < out->n && out->ids[out->start] != a->audio_token_id;)
    out->start++;
  int32_t len = 0;
  while (out->start + len < out->n && out->ids[out->start + len] == a->audio_token_id) len++;
  if (len != a->soft_tokens) {
    fprintf(stderr,
            "mlxcel %s: error: --audio: the prompt holds %d audio tokens (id %d), not one run of "
            "%d\n",
            cmd, len, a->audio_token_id, a->soft_tokens);
    return MX_EXIT_FAILED;
  }
  return MX_EXIT_OK;
}

void mx_cli_bench_audio_free(mx_bench_audio_t *b) {
  free(b->ids);
  b->ids = NULL;
}

int mx_cli_bench_audio_rep(const char *cmd, const mx_model_t *m, mx_session_t *s,
                           const mx_bench_audio_t *b, int64_t gen, mx_bench_audio_rep_t *r) {
  memset(r, 0, sizeof *r);
  mx_session_reset(s);
  const int64_t H = m->config.hidden_size, N = m->config.audio.soft_tokens;
  const int32_t V = mx_session_vocab(s);
  float *media = calloc((size_t)b->n * (size_t)H, sizeof *media);  // zero but the audio rows
  if (!media) {
    fprintf(stderr, "mlxcel %s: error: out of memory (media rows)\n", cmd);
    return MX_EXIT_FAILED;
  }
  float *feat = NULL;
  uint8_t *mask = NULL;
  int64_t frames = 0;
  mx_error_clear();
  double t0 = mx_cli_now();
  mx_status_t st = features(b->path, &feat, &mask, &frames, NULL);
  double t1 = mx_cli_now();
  if (!st) st = mx_session_audio(s, feat, mask, frames, media + (size_t)b->start * H, N * H);
  double t2 = mx_cli_now();
  if (!st) st = mx_session_prefill_media(s, b->ids, media, b->n);
  int32_t next = st == MX_OK ? mx_cli_argmax(mx_session_logits(s), V) : 0;
  double t3 = mx_cli_now();
  for (int64_t g = 0; g < gen && st == MX_OK; g++) {
    st = mx_session_decode(s, next);
    if (st == MX_OK) next = mx_cli_argmax(mx_session_logits(s), V);
  }
  double t4 = mx_cli_now();
  free(feat);
  free(mask);
  free(media);
  if (st != MX_OK) return mx_cli_fail(cmd, mx_error_prefix(st, "--audio %s", b->path));
  r->mel_s = t1 - t0;
  r->tower_s = t2 - t1;
  r->ttft_s = t3 - t0;
  r->prefill_s = t3 - t2;
  r->decode_tok_s = (double)gen / (t4 - t3);
  return MX_EXIT_OK;
}
