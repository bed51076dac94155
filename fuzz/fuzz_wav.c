// libFuzzer target: arbitrary bytes as a WAV file, decoded under a 1M-sample limit (larger claims
// must be refused from the header, before allocation); when decoding succeeds, the samples are
// resampled to 16 kHz and turned into Gemma 3n's log-mel features. Any crash, leak, sanitizer
// report or out-of-memory is a bug: malformed input must give MX_ERR_*.
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "mlxcel/audio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mx_audio_limits_t lim = {.max_samples = 1 << 20};
  mx_audio_t a, r;
  if (mx_wav_decode(data, size, &lim, &a) != MX_OK) return 0;
  if (a.n < 0 || a.n > lim.max_samples || a.rate < 1) __builtin_trap();
  // Resampling costs its output's length times the kernel's: keep the fuzzer's outputs short.
  if (a.n <= 2048 && a.n * 16000 / a.rate <= 8192 && mx_audio_resample(&a, 16000, &r) == MX_OK) {
    mx_mel_opts_t o = mx_mel_opts_gemma3n();
    float *feat = NULL;
    uint8_t *mask = NULL;
    int64_t frames = 0;
    if (mx_audio_log_mel(r.samples, r.n, &o, &feat, &mask, &frames) != MX_OK) __builtin_trap();
    free(feat);
    free(mask);
    mx_audio_free(&r);
  }
  mx_audio_free(&a);
  return 0;
}
