// Audio in chat completions (server_internal.h, "Audio"; ADR 0022): the recordings of
// input_audio parts decoded with the WAV reader's limits, resampled to the model's rate and
// turned into log-mel features on the host, as the CLI's generate --audio does; the scheduler
// runs @audio on them when the job's prefill starts. The prompt side: each part's mark becomes
// Gemma3nProcessor's full audio sequence (endpoints.c), never text the client wrote.
#include "mlxcel/audio.h"

#include <stdlib.h>
#include <string.h>

#include "server/server_internal.h"

static mx_status_t fail(mx_server_error_t *err, mx_status_t st, int32_t i) {
  if (st == MX_ERR_RUNTIME)  // more samples than the reader's limit, known from the header
    return mx_server_error_set(err, 413, "invalid_request_error", "messages", "audio_too_large",
                               "audio %d: %.400s", i, mx_error_message());
  if (st == MX_ERR_NOMEM)
    return mx_server_error_set(err, 500, "server_error", NULL, NULL, "out of memory");
  return mx_server_error_set(err, 400, "invalid_request_error", "messages", NULL,
                             "audio %d: %.400s", i, mx_error_message());
}

mx_status_t mx_server_audio_features(const mx_server_t *srv, const mx_server_request_t *r,
                                     mx_server_audio_t *out, mx_server_error_t *err) {
  memset(out, 0, sizeof *out);
  memset(err, 0, sizeof *err);
  const mx_model_config_t *cfg = &srv->model->config;
  if (!cfg->audio.present)
    return mx_server_error_set(err, 400, "invalid_request_error", "messages", "model_not_audio",
                               "the request has %d recording%s but the served model '%.200s' "
                               "(model_type '%s') takes no audio: it has no audio tower",
                               r->n_audio, r->n_audio == 1 ? "" : "s", srv->model_id,
                               cfg->model_type);
  const mx_mel_opts_t o = mx_mel_opts_gemma3n();
  out->frames = calloc((size_t)r->n_audio, sizeof *out->frames);
  mx_status_t st = out->frames ? MX_OK : MX_ERR_NOMEM;
  int64_t total = 0, M = o.n_mels;
  for (int32_t i = 0; i < r->n_audio && !st; i++) {
    mx_audio_t wav = {0}, x = {0};
    float *f = NULL;
    uint8_t *m = NULL;
    int64_t n = 0;
    mx_error_clear();
    mx_audio_limits_t lim = {.max_samples = srv->lim.max_audio_samples};
    st = mx_wav_decode(r->audio[i], r->audio_lens[i], &lim, &wav);
    if (!st) st = mx_audio_resample(&wav, o.rate, &x);
    if (!st) st = mx_audio_log_mel(x.samples, x.n, &o, &f, &m, &n);
    if (!st && n == 0) st = mx_error_set(MX_ERR_INVALID_ARG, "too short for one log-mel frame");
    float *gf = st ? NULL : realloc(out->features, sizeof *gf * (size_t)((total + n) * M));
    if (gf) out->features = gf;
    uint8_t *gm = st || !gf ? NULL : realloc(out->mask, (size_t)(total + n));
    if (gm) out->mask = gm;
    if (!st && (!gf || !gm)) st = MX_ERR_NOMEM;
    if (!st) {
      memcpy(out->features + total * M, f, sizeof *f * (size_t)(n * M));
      memcpy(out->mask + total, m, (size_t)n);
      out->frames[i] = n;
      total += n;
    }
    free(f);
    free(m);
    mx_audio_free(&wav);
    mx_audio_free(&x);
    if (st) fail(err, st, i);
  }
  if (st && !err->http_status) fail(err, MX_ERR_NOMEM, 0);
  if (st) {
    mx_server_audio_free(out);
    return st;
  }
  out->n = r->n_audio;
  return MX_OK;
}

void mx_server_audio_free(mx_server_audio_t *a) {
  free(a->features);
  free(a->mask);
  free(a->frames);
  memset(a, 0, sizeof *a);
}
