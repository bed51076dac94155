// Audio input (src/audio/): WAV files decoded to mono float samples, resampled to a model's
// rate, and the log-mel features an audio encoder reads, computed on the host as the model's
// feature extractor computes them (Gemma 3n: transformers' Gemma3nAudioFeatureExtractor).
#ifndef MLXCEL_AUDIO_H
#define MLXCEL_AUDIO_H

#include <stddef.h>
#include <stdint.h>

#include "mlxcel/base.h"

#ifdef __cplusplus
extern "C" {
#endif

// A recording: n mono samples (nominally in [-1, 1]) at `rate` Hz. samples is heap memory the
// struct owns (mx_audio_free).
typedef struct mx_audio {
  float *samples;
  int64_t n;
  int32_t rate;
} mx_audio_t;

void mx_audio_free(mx_audio_t *a);  // frees the samples and zeroes *a; accepts a zeroed struct

// Limits a decoder enforces from the header, before allocating (0: the default).
typedef struct mx_audio_limits {
  int64_t max_samples;  // per channel after decoding; default 16000 * 600 (10 min at 16 kHz)
} mx_audio_limits_t;

// Decodes a RIFF/WAVE file held in data[0..len): PCM of 16, 24 or 32 bits or IEEE float of 32
// bits (format tag 1 or 3, or WAVE_FORMAT_EXTENSIBLE with one of those sub-formats), any number
// of channels (averaged to mono), rates 1 Hz .. 384 kHz. Chunks other than fmt and data are
// skipped. A truncated, inconsistent or unsupported file (8-bit PCM, A-law, ...) is refused
// with MX_ERR_PARSE / MX_ERR_UNSUPPORTED naming what is wrong, more samples than lim allows with
// MX_ERR_RUNTIME (as mx_image_decode's pixel limit); nothing is allocated then.
// lim may be NULL (defaults). On success *out owns its samples.
mx_status_t mx_wav_decode(const uint8_t *data, size_t len, const mx_audio_limits_t *lim,
                          mx_audio_t *out);
// Reads and decodes the file at path (messages name it).
mx_status_t mx_wav_read(const char *path, const mx_audio_limits_t *lim, mx_audio_t *out);

// in resampled to `rate` Hz (a copy when the rates are equal): output sample m is the input
// band-limited to the lower of the two Nyquist frequencies and evaluated at time m / rate, with
// a Hann-windowed sinc kernel of 16 zero crossings on each side (inputs outside the recording
// are 0); floor(in->n * rate / in->rate) samples. *out owns its samples.
mx_status_t mx_audio_resample(const mx_audio_t *in, int32_t rate, mx_audio_t *out);

// Log-mel features as Gemma3nAudioFeatureExtractor computes them (its defaults below): the
// samples truncated to max_samples and zero-padded to a multiple of pad_multiple; frames of
// frame_length + 1 samples every hop samples; HTK pre-emphasis (x[0] (1 - p), x[i] - p x[i-1]);
// a periodic Hann window of frame_length; |rfft| of fft_length (the next power of two of the
// frame, doubled: "FFT overdrive"); triangular HTK-mel filters between min_hz and max_hz, not
// area-normalized; log(max(mel, mel_floor)).
typedef struct mx_mel_opts {
  int32_t n_mels;         // 128
  int32_t rate;           // 16000 (the samples' rate, which the filters assume)
  int32_t frame_length;   // 512 (32 ms)
  int32_t hop;            // 160 (10 ms)
  int32_t fft_length;     // 1024
  double min_hz, max_hz;  // 125, 7600
  double preemphasis;     // 0.97
  double mel_floor;       // 1e-5
  int64_t max_samples;    // 480000 (30 s)
  int32_t pad_multiple;   // 128
} mx_mel_opts_t;

// Gemma3nAudioFeatureExtractor's defaults.
mx_mel_opts_t mx_mel_opts_gemma3n(void);

// Features of the samples: *frames rows of o->n_mels floats in *features (heap, caller frees)
// and (*frames) mask bytes in *mask (heap, caller frees; 1: the frame starts at a real sample,
// 0: in the padding, as the extractor's input_features_mask). No samples, or fewer than one
// frame after padding, gives 0 frames (features and mask NULL). Bad options: MX_ERR_INVALID_ARG.
mx_status_t mx_audio_log_mel(const float *samples, int64_t n, const mx_mel_opts_t *o,
                             float **features, uint8_t **mask, int64_t *frames);

#ifdef __cplusplus
}
#endif

#endif  // MLXCEL_AUDIO_H
