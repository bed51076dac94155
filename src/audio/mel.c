// Log-mel features on the host (mlxcel/audio.h), in double throughout, as transformers'
// Gemma3nAudioFeatureExtractor computes them in NumPy: its framing (frame_length + 1 samples
// per frame for the pre-emphasis), its periodic Hann window, its zero-padded real FFT and its
// HTK-mel filter matrix (create_fb_matrix, norm None).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/audio.h"

mx_mel_opts_t mx_mel_opts_gemma3n(void) {
  return (mx_mel_opts_t){.n_mels = 128,
                         .rate = 16000,
                         .frame_length = 512,
                         .hop = 160,
                         .fft_length = 1024,
                         .min_hz = 125.0,
                         .max_hz = 7600.0,
                         .preemphasis = 0.97,
                         .mel_floor = 1e-5,
                         .max_samples = 480000,
                         .pad_multiple = 128};
}

// In-place iterative radix-2 FFT of re/im [n], n a power of two.
static void fft(double *re, double *im, int32_t n) {
  for (int32_t i = 1, j = 0; i < n; i++) {
    int32_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j |= bit;
    if (i < j) {
      double t = re[i];
      re[i] = re[j];
      re[j] = t;
      t = im[i];
      im[i] = im[j];
      im[j] = t;
    }
  }
  for (int32_t len = 2; len <= n; len <<= 1) {
    double ang = -2.0 * M_PI / len;
    for (int32_t i = 0; i < n; i += len) {
      for (int32_t k = 0; k < len / 2; k++) {
        double wr = cos(ang * k), wi = sin(ang * k);
        double *ar = &re[i + k], *ai = &im[i + k], *br = &re[i + k + len / 2],
               *bi = &im[i + k + len / 2];
        double tr = *br * wr - *bi * wi, ti = *br * wi + *bi * wr;
        *br = *ar - tr;
        *bi = *ai - ti;
        *ar += tr;
        *ai += ti;
      }
    }
  }
}

static double hz_to_mel(double hz) { return 2595.0 * log10(1.0 + hz / 700.0); }

// fb [n_freqs, n_mels]: triangles between HTK-mel points spaced as numpy.linspace spaces them,
// over bin frequencies k rate / fft computed in f32 (transformers' np.arange(float32) x rate).
// f_pts: scratch of n_mels + 2.
static void mel_filters(const mx_mel_opts_t *o, double *f_pts, double *fb) {
  int32_t nf = o->fft_length / 2 + 1, nm = o->n_mels;
  double m_min = hz_to_mel(o->min_hz), m_max = hz_to_mel(o->max_hz);
  double step = (m_max - m_min) / (nm + 1);
  for (int32_t i = 0; i < nm + 2; i++) {
    double m = i == nm + 1 ? m_max : i * step + m_min;  // linspace sets the end point exactly
    f_pts[i] = 700.0 * (pow(10.0, m / 2595.0) - 1.0);
  }
  float bin = (float)((double)o->rate / o->fft_length);
  for (int32_t k = 0; k < nf; k++) {
    double freq = (float)((float)k * bin);
    for (int32_t j = 0; j < nm; j++) {
      double down = -(f_pts[j] - freq) / (f_pts[j + 1] - f_pts[j]);
      double up = (f_pts[j + 2] - freq) / (f_pts[j + 2] - f_pts[j + 1]);
      double v = down < up ? down : up;
      fb[(size_t)k * nm + j] = v > 0.0 ? v : 0.0;
    }
  }
}

static bool pow2(int32_t v) { return v > 0 && (v & (v - 1)) == 0; }

mx_status_t mx_audio_log_mel(const float *samples, int64_t n, const mx_mel_opts_t *o,
                             float **features, uint8_t **mask, int64_t *frames) {
  if (features != NULL) *features = NULL;
  if (mask != NULL) *mask = NULL;
  if (frames != NULL) *frames = 0;
  if (o == NULL || features == NULL || mask == NULL || frames == NULL || n < 0 ||
      (n > 0 && samples == NULL)) {
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_audio_log_mel: NULL or negative argument");
  }
  if (o->n_mels < 1 || o->n_mels > 4096 || o->rate < 1 || o->frame_length < 2 || o->hop < 1 ||
      !pow2(o->fft_length) || o->fft_length < o->frame_length || o->fft_length > (1 << 20) ||
      !(o->min_hz >= 0.0 && o->min_hz < o->max_hz && o->max_hz <= o->rate / 2.0) ||
      !(o->mel_floor > 0.0) || o->max_samples < 0 || o->pad_multiple < 0) {
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "audio: bad log-mel options (mels %d, rate %d, frame %d, hop %d, fft %d, "
                        "%g .. %g Hz, floor %g)",
                        o->n_mels, o->rate, o->frame_length, o->hop, o->fft_length, o->min_hz,
                        o->max_hz, o->mel_floor);
  }
  int64_t used = o->max_samples > 0 && n > o->max_samples ? o->max_samples : n;
  int64_t padded = used;
  if (o->pad_multiple > 0 && used % o->pad_multiple != 0) {
    padded = (used / o->pad_multiple + 1) * o->pad_multiple;
  }
  int32_t L = o->frame_length, N = o->fft_length, nf = N / 2 + 1, nm = o->n_mels;
  if (padded < L + 1) return MX_OK;
  int64_t nfr = (padded - (L + 1)) / o->hop + 1;
  float *feat = malloc(sizeof(float) * (size_t)nfr * (size_t)nm);
  uint8_t *mk = malloc((size_t)nfr);
  double *fb = malloc(sizeof(double) * (size_t)nf * (size_t)nm);
  double *win = malloc(sizeof(double) * (size_t)L);
  double *re = malloc(sizeof(double) * (size_t)N), *im = malloc(sizeof(double) * (size_t)N);
  double *mag = malloc(sizeof(double) * (size_t)(nf > nm + 2 ? nf : nm + 2));
  if (!feat || !mk || !fb || !win || !re || !im || !mag) {
    free(feat);
    free(mk);
    free(fb);
    free(win);
    free(re);
    free(im);
    free(mag);
    return mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  mel_filters(o, mag, fb);  // mag is free until the first frame
  // The window, pre-emphasis and windowing in f32 steps as NumPy takes them on f32 samples:
  // bins where a recording has little energy are cancellations, whose rounding shows in the log.
  for (int32_t j = 0; j < L; j++) {
    float t = (float)(2.0 * M_PI) * (float)j / (float)L;
    win[j] = 0.5f * (1.0f - cosf(t));
  }
  float p = (float)o->preemphasis, first = (float)(1.0 - o->preemphasis);
  for (int64_t f = 0; f < nfr; f++) {
    int64_t s0 = f * o->hop;
    // Sample i of the frame (zero in the padding).
#define X_(i) ((s0 + (i)) < used ? samples[s0 + (i)] : 0.0f)
    memset(im, 0, sizeof(double) * (size_t)N);
    memset(re, 0, sizeof(double) * (size_t)N);
    for (int32_t j = 0; j < L; j++) {
      float pj = p * (j > 0 ? X_(j - 1) : 0.0f);
      float v = p > 0.0f ? (j == 0 ? X_(0) * first : X_(j) - pj) : X_(j);
      re[j] = (float)(v * (float)win[j]);
    }
#undef X_
    fft(re, im, N);
    for (int32_t k = 0; k < nf; k++) mag[k] = sqrt(re[k] * re[k] + im[k] * im[k]);
    for (int32_t m = 0; m < nm; m++) {
      double acc = 0.0;
      for (int32_t k = 0; k < nf; k++) acc += mag[k] * fb[(size_t)k * nm + m];
      feat[f * nm + m] = (float)log(acc > o->mel_floor ? acc : o->mel_floor);
    }
    mk[f] = s0 < used;
  }
  free(fb);
  free(win);
  free(re);
  free(im);
  free(mag);
  *features = feat;
  *mask = mk;
  *frames = nfr;
  return MX_OK;
}
