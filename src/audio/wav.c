// RIFF/WAVE decoding to mono float samples (mlxcel/audio.h). Every size the header claims is
// checked against the bytes present and the limits before anything is allocated.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/try.h"
#include "mlxcel/audio.h"

enum {
  kTagPcm = 1,
  kTagFloat = 3,
  kTagExtensible = 0xFFFE,
  kMaxChannels = 64,
  kMaxRate = 384000,
};

static uint32_t le16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t le32(const uint8_t *p) { return le16(p) | le16(p + 2) << 16; }

void mx_audio_free(mx_audio_t *a) {
  if (a == NULL) return;
  free(a->samples);
  memset(a, 0, sizeof *a);
}

typedef struct fmt {
  uint32_t tag, channels, rate, block, bits;
} fmt_t;

static mx_status_t parse_fmt(const uint8_t *p, uint32_t size, fmt_t *f) {
  if (size < 16) return mx_error_set(MX_ERR_PARSE, "wav: fmt chunk of %u bytes (16 needed)", size);
  f->tag = le16(p);
  f->channels = le16(p + 2);
  f->rate = le32(p + 4);
  f->block = le16(p + 12);
  f->bits = le16(p + 14);
  if (f->tag == kTagExtensible) {  // the real format is the sub-format GUID's first two bytes
    if (size < 40) {
      return mx_error_set(MX_ERR_PARSE,
                          "wav: WAVE_FORMAT_EXTENSIBLE fmt chunk of %u bytes (40 "
                          "needed)",
                          size);
    }
    f->tag = le16(p + 24);
  }
  if (f->tag != kTagPcm && f->tag != kTagFloat) {
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "wav: format tag %u is not supported (PCM or IEEE float only)", f->tag);
  }
  bool pcm_ok = f->tag == kTagPcm && (f->bits == 16 || f->bits == 24 || f->bits == 32);
  if (!pcm_ok && !(f->tag == kTagFloat && f->bits == 32)) {
    return mx_error_set(MX_ERR_UNSUPPORTED,
                        "wav: %u-bit %s samples are not supported (PCM 16, 24 or 32 bits, float "
                        "32 bits)",
                        f->bits, f->tag == kTagPcm ? "PCM" : "float");
  }
  if (f->channels < 1 || f->channels > kMaxChannels) {
    return mx_error_set(MX_ERR_UNSUPPORTED, "wav: %u channels (1 .. %d supported)", f->channels,
                        kMaxChannels);
  }
  if (f->rate < 1 || f->rate > kMaxRate) {
    return mx_error_set(MX_ERR_UNSUPPORTED, "wav: sample rate %u Hz (1 .. %d supported)", f->rate,
                        kMaxRate);
  }
  if (f->block != f->channels * (f->bits / 8)) {
    return mx_error_set(MX_ERR_PARSE, "wav: block align %u for %u channels of %u bits", f->block,
                        f->channels, f->bits);
  }
  return MX_OK;
}

// One sample of `bits` at p as a float in [-1, 1).
static double sample_at(const uint8_t *p, const fmt_t *f) {
  if (f->tag == kTagFloat) {
    uint32_t u = le32(p);
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
  }
  if (f->bits == 16) return (double)(int16_t)le16(p) / 32768.0;
  if (f->bits == 24) {
    int32_t v = (int32_t)(le16(p) | (uint32_t)p[2] << 16);
    if (v & 0x800000) v -= 0x1000000;
    return (double)v / 8388608.0;
  }
  return (double)(int32_t)le32(p) / 2147483648.0;
}

mx_status_t mx_wav_decode(const uint8_t *data, size_t len, const mx_audio_limits_t *lim,
                          mx_audio_t *out) {
  if (out != NULL) memset(out, 0, sizeof *out);
  if (data == NULL || out == NULL) {
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_wav_decode: NULL argument");
  }
  if (len < 12 || memcmp(data, "RIFF", 4) != 0 || memcmp(data + 8, "WAVE", 4) != 0) {
    return mx_error_set(MX_ERR_PARSE, "wav: not a RIFF/WAVE file");
  }
  int64_t max_n = lim != NULL && lim->max_samples > 0 ? lim->max_samples : 16000LL * 600;
  fmt_t f = {0};
  bool have_fmt = false;
  size_t pos = 12;
  while (pos + 8 <= len) {
    uint32_t size = le32(data + pos + 4);
    const uint8_t *body = data + pos + 8;
    size_t avail = len - pos - 8;
    if (memcmp(data + pos, "fmt ", 4) == 0) {
      if (size > avail) return mx_error_set(MX_ERR_PARSE, "wav: fmt chunk runs past the file");
      MX_TRY(parse_fmt(body, size, &f));
      have_fmt = true;
    } else if (memcmp(data + pos, "data", 4) == 0) {
      if (!have_fmt) return mx_error_set(MX_ERR_PARSE, "wav: data chunk before the fmt chunk");
      if (size > avail) {
        return mx_error_set(MX_ERR_PARSE, "wav: data chunk of %u bytes, the file holds %zu", size,
                            avail);
      }
      if (size % f.block != 0) {
        return mx_error_set(MX_ERR_PARSE, "wav: data chunk of %u bytes is not whole frames of %u",
                            size, f.block);
      }
      int64_t n = size / f.block;
      if (n > max_n) {
        return mx_error_set(MX_ERR_RUNTIME, "wav: %lld samples exceed the limit of %lld",
                            (long long)n, (long long)max_n);
      }
      float *s = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
      if (s == NULL) return mx_error_set(MX_ERR_NOMEM, "out of memory");
      uint32_t bytes = f.bits / 8;
      for (int64_t i = 0; i < n; i++) {
        double acc = 0.0;
        for (uint32_t c = 0; c < f.channels; c++)
          acc += sample_at(body + (size_t)i * f.block + c * bytes, &f);
        if (!isfinite(acc)) {  // a float file's NaN or infinity would poison every feature
          free(s);
          return mx_error_set(MX_ERR_PARSE, "wav: sample %lld is not a finite number",
                              (long long)i);
        }
        s[i] = (float)(acc / f.channels);
      }
      out->samples = s;
      out->n = n;
      out->rate = (int32_t)f.rate;
      return MX_OK;
    }
    // Chunks are padded to an even size.
    size_t step = 8 + (size_t)size + (size & 1);
    if (step > len - pos) break;
    pos += step;
  }
  return mx_error_set(MX_ERR_PARSE, have_fmt ? "wav: no data chunk" : "wav: no fmt chunk");
}

mx_status_t mx_wav_read(const char *path, const mx_audio_limits_t *lim, mx_audio_t *out) {
  if (out != NULL) memset(out, 0, sizeof *out);
  if (path == NULL || out == NULL) {
    return mx_error_set(MX_ERR_INVALID_ARG, "mx_wav_read: NULL argument");
  }
  // No file larger than the sample limit allows at 32 bits x 64 channels (plus other chunks).
  int64_t max_n = lim != NULL && lim->max_samples > 0 ? lim->max_samples : 16000LL * 600;
  char *buf = NULL;
  size_t len = 0;
  MX_TRY(mx_read_file_max(path, (size_t)max_n * 4 * kMaxChannels + (1 << 20), &buf, &len));
  mx_status_t st = mx_wav_decode((const uint8_t *)buf, len, lim, out);
  free(buf);
  if (st != MX_OK) return mx_error_prefix(st, "%s", path);
  return MX_OK;
}
