// Band-limited resampling of a mono recording (mlxcel/audio.h): a Hann-windowed sinc evaluated
// at each output time. Direct evaluation (no phase table), so any pair of rates is exact to the
// kernel's definition; a file's samples are resampled once, outside any decode loop.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/audio.h"

enum { kZeroCrossings = 16, kMaxRate = 384000 };
static const int64_t kMaxOut = 1LL << 30;  // output samples (4 GiB of floats)

static double sinc(double x) { return x == 0.0 ? 1.0 : sin(M_PI * x) / (M_PI * x); }

mx_status_t mx_audio_resample(const mx_audio_t *in, int32_t rate, mx_audio_t *out) {
  if (out != NULL) memset(out, 0, sizeof *out);
  if (in == NULL || out == NULL) {
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_audio_resample: NULL argument");
  }
  if (in->rate < 1 || in->rate > kMaxRate || rate < 1 || rate > kMaxRate || in->n < 0 ||
      (in->n > 0 && in->samples == NULL)) {
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "audio: cannot resample %lld samples from %d Hz to %d Hz (rates 1 .. %d)",
                        (long long)in->n, in->rate, rate, kMaxRate);
  }
  int64_t n = in->n * rate / in->rate;
  if (n > kMaxOut) {
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "audio: %lld samples at %d Hz make %lld at %d Hz (at most %lld)",
                        (long long)in->n, in->rate, (long long)n, rate, (long long)kMaxOut);
  }
  float *y = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
  if (y == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  if (rate == in->rate) {
    if (n > 0) memcpy(y, in->samples, sizeof(float) * (size_t)n);
  } else {
    // Cutoff at the lower Nyquist frequency, as a fraction c of the input's; the kernel spans
    // kZeroCrossings zeros of sinc(c u) on each side.
    double c = fmin(1.0, (double)rate / in->rate), half = kZeroCrossings / c;
    for (int64_t m = 0; m < n; m++) {
      double t = (double)m * in->rate / rate, acc = 0.0;
      int64_t lo = (int64_t)ceil(t - half), hi = (int64_t)floor(t + half);
      if (lo < 0) lo = 0;
      if (hi > in->n - 1) hi = in->n - 1;
      for (int64_t k = lo; k <= hi; k++) {
        double u = t - (double)k;
        acc += in->samples[k] * c * sinc(c * u) * 0.5 * (1.0 + cos(M_PI * u / half));
      }
      y[m] = (float)acc;
    }
  }
  out->samples = y;
  out->n = n;
  out->rate = rate;
  return MX_OK;
}
