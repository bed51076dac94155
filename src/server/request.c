// OpenAI request bodies -> mx_server_request_t (request.h). No HTTP here: the fuzz target and
// the unit test call this directly.
#include "server/request.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mx_server_limits_default(mx_server_limits_t *lim) {
  lim->max_body = 1u << 20;
  lim->max_depth = 32;
  lim->max_tokens = 1 << 20;
  lim->max_stop = 16;
  lim->max_stop_len = 256;
  lim->max_messages = 1024;
  lim->max_prompt_ids = 1 << 20;
  lim->vocab = 0;
  lim->max_images = 8;
  lim->max_image_pixels = (int64_t)4096 * 4096;
  lim->max_audio = 8;
}

mx_status_t mx_server_error_set(mx_server_error_t *err, int http_status, const char *type,
                                const char *param, const char *code, const char *fmt, ...) {
  err->http_status = http_status;
  err->type = type;
  err->param = param;
  err->code = code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->message, sizeof err->message, fmt, ap);
  va_end(ap);
  return MX_ERR_INVALID_ARG;
}

#define BAD(param, ...) \
  mx_server_error_set(err, 400, "invalid_request_error", param, NULL, __VA_ARGS__)

void mx_server_request_free(mx_server_request_t *r) {
  if (!r) return;
  free(r->model);
  free(r->prompt);
  free(r->prompt_ids);
  for (int32_t i = 0; i < r->n_messages; i++) {
    if (r->roles) free(r->roles[i]);
    if (r->contents) free(r->contents[i]);
    if (r->fields) free(r->fields[i]);
  }
  for (int32_t i = 0; r->images && i < r->n_images; i++) free(r->images[i]);
  free(r->images);
  free(r->image_lens);
  for (int32_t i = 0; r->audio && i < r->n_audio; i++) free(r->audio[i]);
  free(r->audio);
  free(r->audio_lens);
  free(r->roles);
  free(r->contents);
  free(r->fields);
  free(r->format_schema);
  free(r->tools_json);
  for (int32_t i = 0; i < r->n_tools; i++) {
    free(r->tool_names[i]);
    free(r->tool_params[i]);
  }
  free(r->tool_names);
  free(r->tool_params);
  free(r->tool_choice_name);
  for (int32_t i = 0; i < r->n_stop; i++) free(r->stop[i]);
  free(r->stop);
  memset(r, 0, sizeof *r);
}

// Deepest [ / { nesting outside strings, stopping early past `limit` (cJSON recurses per level,
// so this runs before it). *nul_at is the offset of the first \u0000 escape in a string (cJSON
// would decode it into a C string that ends there, silently cutting a model name or a prompt),
// or SIZE_MAX.
static int32_t json_depth(const char *s, size_t n, int32_t limit, size_t *nul_at) {
  int32_t depth = 0, max = 0;
  bool in_str = false, esc = false;
  *nul_at = SIZE_MAX;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (in_str) {
      if (esc) {
        esc = false;
        if (c == 'u' && *nul_at == SIZE_MAX && n - i > 4 && memcmp(s + i + 1, "0000", 4) == 0)
          *nul_at = i - 1;
      } else if (c == '\\') {
        esc = true;
      } else if (c == '"') {
        in_str = false;
      }
    } else if (c == '"') {
      in_str = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max) max = depth;
      if (max > limit) return max;
    } else if (c == ']' || c == '}') {
      depth--;
    }
  }
  return max;
}

// Strict UTF-8 (no overlongs, no surrogates, at most U+10FFFF).
static bool utf8_valid(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i];
    size_t k;
    unsigned min;
    if (c < 0x80) {
      i++;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      k = 1, min = 0x80, c &= 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      k = 2, min = 0x800, c &= 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      k = 3, min = 0x10000, c &= 0x07;
    } else {
      return false;
    }
    if (n - i <= k) return false;
    for (size_t j = 1; j <= k; j++) {
      if ((s[i + j] & 0xC0) != 0x80) return false;
      c = (c << 6) | (s[i + j] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return false;
    i += k + 1;
  }
  return true;
}

// A field that is absent or JSON null counts as not given.
static const cJSON *field(const cJSON *obj, const char *name) {
  const cJSON *f = cJSON_GetObjectItemCaseSensitive(obj, name);
  return f && !cJSON_IsNull(f) ? f : NULL;
}

static mx_status_t get_number(const cJSON *obj, const char *name, double lo, double hi, bool *given,
                              double *out, mx_server_error_t *err) {
  const cJSON *f = field(obj, name);
  if (given) *given = f != NULL;
  if (!f) return MX_OK;
  if (!cJSON_IsNumber(f)) return BAD(name, "'%s' must be a number", name);
  double v = f->valuedouble;
  if (!isfinite(v) || v < lo || v > hi)
    return BAD(name, "'%s' must be between %g and %g, got %g", name, lo, hi, v);
  *out = v;
  return MX_OK;
}

// An integral double as a decimal integer (%.0f is exact for every integral double; %g would
// print 2^63 as "9.22337e+18").
static const char *int_text(double v, char buf[32]) {
  snprintf(buf, 32, "%.0f", v);
  return buf;
}

// An integer field in [lo, hi] (bounds exact in a double); the message names the bounds as
// integers, or the one value allowed when lo == hi.
static mx_status_t get_int(const cJSON *obj, const char *name, double lo, double hi, bool *given,
                           double *out, mx_server_error_t *err) {
  const cJSON *f = field(obj, name);
  if (given) *given = f != NULL;
  if (!f) return MX_OK;
  if (!cJSON_IsNumber(f) || !isfinite(f->valuedouble) || f->valuedouble != floor(f->valuedouble))
    return BAD(name, "'%s' must be an integer", name);
  double v = f->valuedouble;
  if (v < lo || v > hi) {
    char a[32], b[32], got[32];
    if (lo == hi)
      return BAD(name, "'%s' must be %s, got %s", name, int_text(lo, a), int_text(v, got));
    return BAD(name, "'%s' must be an integer between %s and %s, got %s", name, int_text(lo, a),
               int_text(hi, b), int_text(v, got));
  }
  *out = v;
  return MX_OK;
}

static mx_status_t get_bool(const cJSON *obj, const char *name, bool *out, mx_server_error_t *err) {
  const cJSON *f = field(obj, name);
  if (!f) return MX_OK;
  if (!cJSON_IsBool(f)) return BAD(name, "'%s' must be true or false", name);
  *out = cJSON_IsTrue(f);
  return MX_OK;
}

static char *dup_n(const char *s, size_t n) {
  char *d = malloc(n + 1);
  if (d) {
    memcpy(d, s, n);
    d[n] = '\0';
  }
  return d;
}

static mx_status_t oom(mx_server_error_t *err) {
  return mx_server_error_set(err, 500, "server_error", NULL, NULL, "out of memory");
}

static mx_status_t parse_stop(const cJSON *root, const mx_server_limits_t *lim,
                              mx_server_request_t *r, mx_server_error_t *err) {
  const cJSON *f = field(root, "stop");
  if (!f) return MX_OK;
  int32_t n = 1;
  if (cJSON_IsArray(f)) {
    n = cJSON_GetArraySize(f);
  } else if (!cJSON_IsString(f)) {
    return BAD("stop", "'stop' must be a string or a list of strings");
  }
  if (n > lim->max_stop)
    return BAD("stop", "'stop' has %d strings; at most %d are allowed", n, lim->max_stop);
  if (n == 0) return MX_OK;
  r->stop = calloc((size_t)n, sizeof *r->stop);
  if (!r->stop) return oom(err);
  const cJSON *it = cJSON_IsArray(f) ? f->child : f;
  for (int32_t i = 0; i < n && it; i++, it = it->next) {
    if (!cJSON_IsString(it)) return BAD("stop", "'stop' item %d must be a string", i);
    size_t len = strlen(it->valuestring);
    if (len == 0) continue;  // an empty stop string would match everywhere: ignored
    if (len > lim->max_stop_len)
      return BAD("stop", "'stop' item %d is %zu bytes; at most %zu are allowed", i, len,
                 lim->max_stop_len);
    if (!utf8_valid((const unsigned char *)it->valuestring, len))
      return BAD("stop", "'stop' item %d is not valid UTF-8", i);
    r->stop[r->n_stop] = dup_n(it->valuestring, len);
    if (!r->stop[r->n_stop]) return oom(err);
    r->n_stop++;
  }
  return MX_OK;
}

// A positive integer field of the "speculative" object, 1..MX_SPEC_MAX_TOKENS.
static mx_status_t spec_int(const cJSON *o, const char *name, int32_t *out,
                            mx_server_error_t *err) {
  const cJSON *f = field(o, name);
  if (!f) return MX_OK;
  double v = cJSON_IsNumber(f) ? f->valuedouble : 0;
  if (!cJSON_IsNumber(f) || v != floor(v) || v < 1 || v > MX_SPEC_MAX_TOKENS)
    return BAD("speculative", "'speculative.%s' must be an integer in 1..%d", name,
               MX_SPEC_MAX_TOKENS);
  *out = (int32_t)v;
  return MX_OK;
}

// "speculative" (request.h): a mode name, a boolean, or an object with the method and limits.
static mx_status_t parse_speculative(const cJSON *root, mx_server_request_t *r,
                                     mx_server_error_t *err) {
  const cJSON *f = field(root, "speculative");
  if (!f) return MX_OK;
  r->has_spec = true;
  if (cJSON_IsBool(f)) {
    r->spec_on = cJSON_IsTrue(f);
    return MX_OK;
  }
  const cJSON *method = f;
  if (cJSON_IsObject(f)) {
    for (const cJSON *c = f->child; c; c = c->next)
      if (strcmp(c->string, "method") != 0 && strcmp(c->string, "num_speculative_tokens") != 0 &&
          strcmp(c->string, "prompt_lookup_max") != 0)
        return BAD("speculative",
                   "'speculative' has no field '%.64s' (method, num_speculative_tokens, "
                   "prompt_lookup_max)",
                   c->string);
    method = field(f, "method");
    mx_status_t st = spec_int(f, "num_speculative_tokens", &r->spec_tokens, err);
    if (!st) st = spec_int(f, "prompt_lookup_max", &r->spec_ngram, err);
    if (st) return st;
    if (!method) {
      r->spec_on = true;
      return MX_OK;
    }
  }
  if (!cJSON_IsString(method))
    return BAD("speculative",
               "'speculative' must be \"ngram\", \"draft_model\", \"off\", a boolean or an "
               "object with a \"method\"");
  if (strcmp(method->valuestring, "ngram") == 0) {
    r->spec_on = true;
    r->spec_method = MX_SPEC_NGRAM;
  } else if (strcmp(method->valuestring, "draft_model") == 0) {
    r->spec_on = true;
    r->spec_method = MX_SPEC_DRAFT;
  } else if (strcmp(method->valuestring, "off") == 0) {
    r->spec_on = false;
  } else {
    return BAD("speculative",
               "speculative method '%.64s' is not supported: the server drafts by prompt lookup "
               "(\"ngram\"), with its draft model (\"draft_model\") or not at all (\"off\")",
               method->valuestring);
  }
  return MX_OK;
}

// Sampling fields and the generation limits common to both endpoints.
static mx_status_t parse_common(const cJSON *root, const mx_server_limits_t *lim,
                                mx_server_request_t *r, mx_server_error_t *err) {
  mx_sampler_params_default(&r->sampling);
  mx_sampler_params_t *p = &r->sampling;
  mx_status_t st;
  double v;
  bool given;
  const cJSON *m = field(root, "model");
  if (m) {
    if (!cJSON_IsString(m)) return BAD("model", "'model' must be a string");
    r->model = dup_n(m->valuestring, strlen(m->valuestring));
    if (!r->model) return oom(err);
  }
  // max_completion_tokens is the chat API's newer name for max_tokens.
  const char *mt_name = "max_tokens";
  if (r->kind == MX_SERVER_CHAT && field(root, "max_completion_tokens"))
    mt_name = "max_completion_tokens";
  if ((st = get_int(root, mt_name, 1, lim->max_tokens, &given, &v, err))) return st;
  if (given) r->max_tokens = (int32_t)v;
  if ((st = get_number(root, "temperature", 0, 2, &given, &v, err))) return st;
  if (given) p->temperature = (float)v;
  if ((st = get_number(root, "top_p", 0, 1, &given, &v, err))) return st;
  if (given) {
    if (v <= 0) return BAD("top_p", "'top_p' must be in (0, 1], got %g", v);
    p->top_p = (float)v;
  }
  if ((st = get_int(root, "top_k", 0, INT32_MAX, &given, &v, err))) return st;  // 0 = off
  if (given) p->top_k = (int32_t)v;
  if ((st = get_number(root, "min_p", 0, 1, &given, &v, err))) return st;
  if (given) p->min_p = (float)v;
  if ((st = get_number(root, "presence_penalty", -2, 2, &given, &v, err))) return st;
  if (given) p->presence_penalty = (float)v;
  if ((st = get_number(root, "frequency_penalty", -2, 2, &given, &v, err))) return st;
  if (given) p->frequency_penalty = (float)v;
  if ((st = get_number(root, "repetition_penalty", 0, 10, &given, &v, err))) return st;
  if (given) {
    if (v <= 0) return BAD("repetition_penalty", "'repetition_penalty' must be > 0, got %g", v);
    p->repetition_penalty = (float)v;
  }
  // Seeds: any JSON integer a double holds exactly; negative ones wrap like a uint64 cast.
  if ((st = get_int(root, "seed", -9007199254740992.0, 9007199254740992.0, &r->has_seed, &v, err)))
    return st;
  if (r->has_seed) p->seed = (uint64_t)(int64_t)v;
  if ((st = get_int(root, "n", 1, 1, &given, &v, err))) return st;  // one choice per request
  if ((st = get_bool(root, "stream", &r->stream, err))) return st;
  if ((st = get_bool(root, "ignore_eos", &r->ignore_eos, err))) return st;
  if ((st = parse_speculative(root, r, err))) return st;
  const cJSON *so = field(root, "stream_options");
  if (so) {
    if (!cJSON_IsObject(so)) return BAD("stream_options", "'stream_options' must be an object");
    if ((st = get_bool(so, "include_usage", &r->include_usage, err))) return st;
  }
  // Features this server does not implement: refused rather than silently ignored.
  const cJSON *lp = field(root, "logprobs");
  if (lp && !cJSON_IsFalse(lp))
    return mx_server_error_set(err, 400, "invalid_request_error", "logprobs", "unsupported",
                               "'logprobs' is not supported by this server");
  const cJSON *lb = field(root, "logit_bias");
  if (lb && !(cJSON_IsObject(lb) && !lb->child))
    return mx_server_error_set(err, 400, "invalid_request_error", "logit_bias", "unsupported",
                               "'logit_bias' is not supported by this server");
  return parse_stop(root, lim, r, err);
}

static mx_status_t parse_prompt(const cJSON *root, const mx_server_limits_t *lim,
                                mx_server_request_t *r, mx_server_error_t *err) {
  const cJSON *f = field(root, "prompt");
  if (!f) return BAD("prompt", "'prompt' is required");
  if (cJSON_IsArray(f) && cJSON_GetArraySize(f) == 1 && cJSON_IsString(f->child))
    f = f->child;  // ["text"]: one prompt in a list
  if (cJSON_IsString(f)) {
    size_t len = strlen(f->valuestring);
    if (!utf8_valid((const unsigned char *)f->valuestring, len))
      return BAD("prompt", "'prompt' is not valid UTF-8");
    r->prompt = dup_n(f->valuestring, len);
    if (!r->prompt) return oom(err);
    r->prompt_len = len;
    return MX_OK;
  }
  if (!cJSON_IsArray(f)) return BAD("prompt", "'prompt' must be a string or a list of token ids");
  int32_t n = cJSON_GetArraySize(f);
  if (n == 0) return BAD("prompt", "'prompt' is an empty list");
  if (cJSON_IsString(f->child) || cJSON_IsArray(f->child))
    return BAD("prompt", "several prompts in one request are not supported: send one per request");
  if (n > lim->max_prompt_ids)
    return BAD("prompt", "'prompt' has %d token ids; at most %d are allowed", n,
               lim->max_prompt_ids);
  r->prompt_ids = malloc((size_t)n * sizeof *r->prompt_ids);
  if (!r->prompt_ids) return oom(err);
  int32_t i = 0;
  int32_t top = lim->vocab > 0 ? lim->vocab - 1 : INT32_MAX;  // the largest token id
  for (const cJSON *it = f->child; it; it = it->next, i++) {
    double v = it->valuedouble;
    if (!cJSON_IsNumber(it) || !isfinite(v) || v != floor(v))
      return BAD("prompt", "'prompt' item %d must be a token id (an integer)", i);
    if (v < 0 || v > top) {
      char got[32];
      return BAD("prompt", "'prompt' item %d is %s; token ids are integers from 0 to %d", i,
                 int_text(v, got), (int)top);
    }
    r->prompt_ids[i] = (int32_t)v;
  }
  r->n_prompt_ids = n;
  return MX_OK;
}

// An image part of message i: its bytes appended to r->images (at most lim->max_images).
static mx_status_t add_image(const cJSON *part, int32_t i, int32_t j, const mx_server_limits_t *lim,
                             mx_server_request_t *r, mx_server_error_t *err) {
  if (r->n_images >= lim->max_images)
    return mx_server_error_set(err, 400, "invalid_request_error", "messages", "too_many_images",
                               "message %d: content part %d is image %d; this server takes at "
                               "most %d images per request",
                               i, j, r->n_images + 1, lim->max_images);
  if (!r->images) {
    r->images = calloc((size_t)lim->max_images, sizeof *r->images);
    r->image_lens = calloc((size_t)lim->max_images, sizeof *r->image_lens);
    if (!r->images || !r->image_lens) return oom(err);
  }
  mx_status_t st =
      mx_server_image_part(part, i, j, &r->images[r->n_images], &r->image_lens[r->n_images], err);
  if (!st) r->n_images++;
  return st;
}

// An input_audio part of message i: its bytes appended to r->audio (at most lim->max_audio).
static mx_status_t add_audio(const cJSON *part, int32_t i, int32_t j, const mx_server_limits_t *lim,
                             mx_server_request_t *r, mx_server_error_t *err) {
  if (r->n_audio >= lim->max_audio)
    return mx_server_error_set(err, 400, "invalid_request_error", "messages", "too_many_audio",
                               "message %d: content part %d is recording %d; this server takes "
                               "at most %d recordings per request",
                               i, j, r->n_audio + 1, lim->max_audio);
  if (!r->audio) {
    r->audio = calloc((size_t)lim->max_audio, sizeof *r->audio);
    r->audio_lens = calloc((size_t)lim->max_audio, sizeof *r->audio_lens);
    if (!r->audio || !r->audio_lens) return oom(err);
  }
  mx_status_t st =
      mx_server_audio_part(part, i, j, &r->audio[r->n_audio], &r->audio_lens[r->n_audio], err);
  if (!st) r->n_audio++;
  return st;
}

// content: a string, null, or a list of {"type": "text", "text": "..."} and {"type":
// "image_url", ...} parts (the text joined, MX_SERVER_IMAGE_MARK where an image was).
static mx_status_t message_content(const cJSON *c, int32_t i, const mx_server_limits_t *lim,
                                   mx_server_request_t *r, char **out, mx_server_error_t *err) {
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  mx_strbuf_puts(&sb, "");
  mx_status_t st = MX_OK;
  if (cJSON_IsString(c)) {
    mx_strbuf_puts(&sb, c->valuestring);
  } else if (cJSON_IsArray(c)) {
    int32_t j = 0;
    for (const cJSON *part = c->child; part && !st; part = part->next, j++) {
      const cJSON *type = cJSON_GetObjectItemCaseSensitive(part, "type");
      const cJSON *text = cJSON_GetObjectItemCaseSensitive(part, "text");
      if (!cJSON_IsObject(part) || !cJSON_IsString(type)) {
        st = BAD("messages", "message %d: content part %d must be an object with a 'type'", i, j);
      } else if (strcmp(type->valuestring, "image_url") == 0) {
        st = add_image(part, i, j, lim, r, err);
        mx_strbuf_puts(&sb, MX_SERVER_IMAGE_MARK);
      } else if (strcmp(type->valuestring, "input_audio") == 0) {
        st = add_audio(part, i, j, lim, r, err);
        mx_strbuf_puts(&sb, MX_SERVER_AUDIO_MARK);
      } else if (strcmp(type->valuestring, "text") != 0) {
        st = BAD("messages",
                 "message %d: content part %d has type '%.64s'; only 'text', 'image_url' and "
                 "'input_audio' are supported",
                 i, j, type->valuestring);
      } else if (!cJSON_IsString(text)) {
        st = BAD("messages", "message %d: content part %d needs a string 'text'", i, j);
      } else {
        mx_strbuf_puts(&sb, text->valuestring);
      }
    }
  } else if (c && !cJSON_IsNull(c)) {
    st = BAD("messages", "message %d: 'content' must be a string, a list of parts or null", i);
  }
  if (!st && sb.oom) st = oom(err);
  if (st) {
    mx_strbuf_free(&sb);
    return st;
  }
  size_t len = 0;
  *out = mx_strbuf_take(&sb, &len);
  if (!*out) return oom(err);
  if (!utf8_valid((const unsigned char *)*out, len))
    return BAD("messages", "message %d: content is not valid UTF-8", i);
  return MX_OK;
}

// In a request with images, MX_SERVER_IMAGE_MARK stands for them only: text holding it is
// refused rather than read as an image.
static mx_status_t check_marks(const mx_server_request_t *r, mx_server_error_t *err) {
  int32_t marks = 0;
  for (int32_t i = 0; i < r->n_messages; i++)
    for (const char *p = r->contents[i]; (p = strstr(p, MX_SERVER_IMAGE_MARK)); p += 3) marks++;
  if (r->n_images > 0 && marks != r->n_images)
    return BAD("messages",
               "the messages' text holds U+FDD2, a noncharacter this server reserves for marking "
               "images");
  marks = 0;
  for (int32_t i = 0; i < r->n_messages; i++)
    for (const char *p = r->contents[i]; (p = strstr(p, MX_SERVER_AUDIO_MARK)); p += 3) marks++;
  if (r->n_audio > 0 && marks != r->n_audio)
    return BAD("messages",
               "the messages' text holds U+FDD3, a noncharacter this server reserves for marking "
               "recordings");
  return MX_OK;
}

static mx_status_t parse_messages(const cJSON *root, const mx_server_limits_t *lim,
                                  mx_server_request_t *r, mx_server_error_t *err) {
  const cJSON *f = field(root, "messages");
  if (!f) return BAD("messages", "'messages' is required");
  if (!cJSON_IsArray(f)) return BAD("messages", "'messages' must be a list of messages");
  int32_t n = cJSON_GetArraySize(f);
  if (n == 0) return BAD("messages", "'messages' is empty");
  if (n > lim->max_messages)
    return BAD("messages", "'messages' has %d messages; at most %d are allowed", n,
               lim->max_messages);
  if (field(root, "functions"))
    return mx_server_error_set(err, 400, "invalid_request_error", "functions", "unsupported",
                               "the legacy 'functions' is not supported by this server: use "
                               "'tools'");
  r->roles = calloc((size_t)n, sizeof *r->roles);
  r->contents = calloc((size_t)n, sizeof *r->contents);
  if (!r->roles || !r->contents) return oom(err);
  int32_t i = 0;
  for (const cJSON *m = f->child; m; m = m->next, i++) {
    if (!cJSON_IsObject(m)) return BAD("messages", "message %d must be an object", i);
    r->n_messages = i + 1;
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
    if (!cJSON_IsString(role) || !role->valuestring[0])
      return BAD("messages", "message %d needs a string 'role'", i);
    size_t rl = strlen(role->valuestring);
    if (rl > 64 || !utf8_valid((const unsigned char *)role->valuestring, rl))
      return BAD("messages", "message %d: 'role' must be valid UTF-8 of at most 64 bytes", i);
    r->roles[i] = dup_n(role->valuestring, rl);
    if (!r->roles[i]) return oom(err);
    mx_status_t st = message_content(cJSON_GetObjectItemCaseSensitive(m, "content"), i, lim, r,
                                     &r->contents[i], err);
    if (st) return st;
  }
  return check_marks(r, err);
}

mx_status_t mx_server_request_parse(const char *body, size_t len, mx_server_kind_t kind,
                                    const mx_server_limits_t *lim, mx_server_request_t *out,
                                    mx_server_error_t *err) {
  memset(out, 0, sizeof *out);
  memset(err, 0, sizeof *err);
  mx_server_limits_t dl;
  if (!lim) {
    mx_server_limits_default(&dl);
    lim = &dl;
  }
  out->kind = kind;
  if (len > lim->max_body)
    return mx_server_error_set(err, 413, "invalid_request_error", NULL, "request_too_large",
                               "request body is %zu bytes; the limit is %zu", len, lim->max_body);
  if (!body || len == 0) return BAD(NULL, "request body is empty; expected a JSON object");
  size_t nul_at;
  int32_t depth = json_depth(body, len, lim->max_depth, &nul_at);
  if (depth > lim->max_depth)
    return BAD(NULL, "request JSON nests deeper than %d levels", lim->max_depth);
  if (nul_at != SIZE_MAX)
    return BAD(NULL,
               "request JSON has a string with U+0000 (\\u0000, byte %zu): strings here cannot "
               "hold NUL characters",
               nul_at);
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(body, len, &end, false);
  if (!root) {
    size_t at = end && end >= body && end <= body + len ? (size_t)(end - body) : 0;
    return BAD(NULL, "request body is not valid JSON (error near byte %zu)", at);
  }
  // Only whitespace may follow the value.
  for (const char *p = end; p && p < body + len; p++)
    if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
      cJSON_Delete(root);
      return BAD(NULL, "request body has data after the JSON value (byte %zu)", (size_t)(p - body));
    }
  mx_status_t st;
  if (!cJSON_IsObject(root)) {
    st = BAD(NULL, "request body must be a JSON object");
  } else {
    st = parse_common(root, lim, out, err);
    if (!st) {
      st = kind == MX_SERVER_CHAT ? parse_messages(root, lim, out, err)
                                  : parse_prompt(root, lim, out, err);
    }
    if (!st && kind == MX_SERVER_CHAT) st = mx_server_request_parse_tools(root, out, err);
    if (!st && kind == MX_SERVER_COMPLETION) {
      bool echo = false, given = false;
      double v = 1;
      st = get_bool(root, "echo", &echo, err);
      if (!st && echo)
        st = mx_server_error_set(err, 400, "invalid_request_error", "echo", "unsupported",
                                 "'echo' is not supported by this server");
      if (!st) st = get_int(root, "best_of", 1, 1, &given, &v, err);
      if (!st && field(root, "split_special_tokens")) {
        out->has_split_special = true;
        st = get_bool(root, "split_special_tokens", &out->split_special, err);
      }
      if (!st && field(root, "suffix"))
        st = mx_server_error_set(err, 400, "invalid_request_error", "suffix", "unsupported",
                                 "'suffix' is not supported by this server");
    }
  }
  cJSON_Delete(root);
  if (st) mx_server_request_free(out);
  if (st) out->kind = kind;
  return st;
}
