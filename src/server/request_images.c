// image_url content parts (request.h, mx_server_image_part): the server takes images inline as
// data URLs and never fetches a URL (a request must not make the server reach other hosts or
// read its files), so every other scheme is refused here, before anything is decoded. Also
// input_audio parts (mx_server_audio_part): base64 WAV data, decoded the same way.
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/request.h"

#define BAD(...) \
  mx_server_error_set(err, 400, "invalid_request_error", "messages", NULL, __VA_ARGS__)

// The value of one base64 character (RFC 4648 alphabet), -1 otherwise.
static int b64_value(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// Strict base64 (padding optional, no whitespace): *out holds at most 3 / 4 of n bytes.
static bool b64_decode(const char *s, size_t n, uint8_t *out, size_t *len, size_t *bad_at) {
  while (n > 0 && s[n - 1] == '=' && n % 4 != 1) n--;
  size_t w = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n; i++) {
    int v = b64_value((unsigned char)s[i]);
    if (v < 0) {
      *bad_at = i;
      return false;
    }
    acc = (acc << 6) | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[w++] = (uint8_t)(acc >> bits);
    }
  }
  *bad_at = n;
  *len = w;
  return n % 4 != 1;
}

mx_status_t mx_server_image_part(const void *part_, int32_t i, int32_t j, uint8_t **data,
                                 size_t *len, mx_server_error_t *err) {
  *data = NULL;
  *len = 0;
  const cJSON *part = part_;
  const cJSON *iu = cJSON_GetObjectItemCaseSensitive(part, "image_url");
  const cJSON *url = cJSON_IsObject(iu) ? cJSON_GetObjectItemCaseSensitive(iu, "url") : iu;
  if (!cJSON_IsString(url))
    return BAD(
        "message %d: content part %d needs 'image_url': {\"url\": \"data:image/png;base64,"
        "...\"}",
        i, j);
  const char *u = url->valuestring;
  if (strncasecmp(u, "data:", 5) != 0)
    return BAD(
        "message %d: content part %d: the image URL '%.48s%s' is not a data URL; this "
        "server never fetches URLs: send the image inline as data:image/png;base64,... "
        "or data:image/jpeg;base64,...",
        i, j, u, strlen(u) > 48 ? "..." : "");
  const char *comma = strchr(u, ',');
  const char *meta = u + 5;
  size_t meta_len = comma ? (size_t)(comma - meta) : 0;
  static const char *const kTypes[] = {"image/png;base64", "image/jpeg;base64", "image/jpg;base64"};
  bool known = false;
  for (size_t t = 0; comma && t < sizeof kTypes / sizeof *kTypes; t++)
    known |= meta_len == strlen(kTypes[t]) && strncasecmp(meta, kTypes[t], meta_len) == 0;
  if (!comma)
    return BAD("message %d: content part %d: the data URL has no ',' before its data", i, j);
  if (!known)
    return BAD(
        "message %d: content part %d: the data URL's type is '%.*s'; expected "
        "image/png;base64 or image/jpeg;base64",
        i, j, (int)(meta_len < 48 ? meta_len : 48), meta);
  const char *b64 = comma + 1;
  size_t n = strlen(b64), bad_at = 0;
  uint8_t *out = malloc(n / 4 * 3 + 3);
  if (!out) return mx_server_error_set(err, 500, "server_error", NULL, NULL, "out of memory");
  if (!b64_decode(b64, n, out, len, &bad_at)) {
    free(out);
    return BAD("message %d: content part %d: the image's base64 is not valid (at character %zu)", i,
               j, bad_at);
  }
  if (*len == 0) {
    free(out);
    return BAD("message %d: content part %d: the image's data URL holds no bytes", i, j);
  }
  *data = out;
  return MX_OK;
}

mx_status_t mx_server_audio_part(const void *part_, int32_t i, int32_t j, uint8_t **data,
                                 size_t *len, mx_server_error_t *err) {
  *data = NULL;
  *len = 0;
  const cJSON *ia = cJSON_GetObjectItemCaseSensitive((const cJSON *)part_, "input_audio");
  const cJSON *d = cJSON_IsObject(ia) ? cJSON_GetObjectItemCaseSensitive(ia, "data") : NULL;
  const cJSON *f = cJSON_IsObject(ia) ? cJSON_GetObjectItemCaseSensitive(ia, "format") : NULL;
  if (!cJSON_IsString(d) || !cJSON_IsString(f))
    return BAD(
        "message %d: content part %d needs 'input_audio': {\"data\": \"<base64 WAV>\", "
        "\"format\": \"wav\"}",
        i, j);
  if (strcasecmp(f->valuestring, "wav") != 0)
    return BAD("message %d: content part %d: the audio format is '%.32s'; this server takes 'wav'",
               i, j, f->valuestring);
  size_t n = strlen(d->valuestring), bad_at = 0;
  uint8_t *out = malloc(n / 4 * 3 + 3);
  if (!out) return mx_server_error_set(err, 500, "server_error", NULL, NULL, "out of memory");
  if (!b64_decode(d->valuestring, n, out, len, &bad_at)) {
    free(out);
    return BAD("message %d: content part %d: the audio's base64 is not valid (at character %zu)", i,
               j, bad_at);
  }
  if (*len == 0) {
    free(out);
    return BAD("message %d: content part %d: the audio data holds no bytes", i, j);
  }
  *data = out;
  return MX_OK;
}
