// Image placeholders in chat templates (chat.h): which way a template takes images, the image
// token's text put where content marked an image, and Gemma 3's text-level expansion of it.
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/chat.h"
#include "mlxcel/model.h"

static const char kProbeText[] = "mlxcel-parts-probe";

static bool contains(const char *s, size_t n, const char *what, size_t wn) {
  for (size_t i = 0; wn <= n && i <= n - wn; i++)
    if (memcmp(s + i, what, wn) == 0) return true;
  return false;
}

bool mx_chat_template_takes_parts(const mx_chat_template_t *t, const char *image_text,
                                  size_t image_len) {
  mx_chat_message_t m = {"user", ""};
  char fields[128];
  snprintf(fields, sizeof fields,
           "{\"content\":[{\"type\":\"image\"},{\"type\":\"text\",\"text\":\"%s\"}]}", kProbeText);
  const char *fj[1] = {fields};
  mx_chat_render_opts_t ro = {.add_generation_prompt = true};
  char *text = NULL;
  size_t len = 0;
  if (mx_chat_render_fields(t, &m, fj, 1, &ro, &text, &len)) {
    mx_error_clear();
    return false;
  }
  // The text part's text and the image token printed, and no part printed as data.
  bool ok = contains(text, len, kProbeText, sizeof kProbeText - 1) &&
            contains(text, len, image_text, image_len) && !strstr(text, "'type'") &&
            !strstr(text, "\"type\"");
  free(text);
  return ok;
}

// One pass of replace_outside: the length of text with each `what` that lies outside the plain
// ranges replaced by `with`, and their *count; with `out`, also writes that text there and moves
// the plain ranges to it. Ranges are in order and do not overlap; a match never covers a range's
// start, so each range starts at a position the pass visits.
static size_t replace_pass(const char *text, size_t len, mx_text_range_t *plain, int32_t n_plain,
                           const char *what, size_t wl, const char *with, size_t with_len,
                           char *out, int32_t *count) {
  size_t w = 0, plain_end = 0;  // plain_end: the end (in text) of the last range reached
  int32_t k = 0;
  *count = 0;
  for (size_t r = 0; r <= len;) {
    for (; k < n_plain && plain[k].start <= r; k++) {
      plain_end = plain[k].end;
      if (out) {
        plain[k].end = w + (plain[k].end - plain[k].start);
        plain[k].start = w;
      }
    }
    if (r == len) break;
    bool outside = r >= plain_end && (k == n_plain || r + wl <= plain[k].start);
    if (outside && len - r >= wl && memcmp(text + r, what, wl) == 0) {
      if (out) memcpy(out + w, with, with_len);
      w += with_len;
      r += wl;
      (*count)++;
    } else {
      if (out) out[w] = text[r];
      w++;
      r++;
    }
  }
  return w;
}

// Every `what` outside the plain ranges of *text becomes `with` (*text replaced when any does).
static mx_status_t replace_outside(char **text, size_t *len, mx_text_range_t *plain,
                                   int32_t n_plain, const char *what, size_t wl, const char *with,
                                   size_t with_len) {
  int32_t count = 0;
  size_t n = replace_pass(*text, *len, plain, n_plain, what, wl, with, with_len, NULL, &count);
  if (count == 0) return MX_OK;
  char *out = malloc(n + 1);
  if (!out) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  replace_pass(*text, *len, plain, n_plain, what, wl, with, with_len, out, &count);
  out[n] = '\0';
  free(*text);
  *text = out;
  *len = n;
  return MX_OK;
}

mx_status_t mx_chat_replace_marks(char **text, size_t *len, mx_text_range_t *plain, int32_t n_plain,
                                  const char *with, size_t with_len) {
  return replace_outside(text, len, plain, n_plain, MX_CHAT_IMAGE_MARK,
                         sizeof MX_CHAT_IMAGE_MARK - 1, with, with_len);
}

mx_status_t mx_chat_replace_audio_marks(char **text, size_t *len, mx_text_range_t *plain,
                                        int32_t n_plain, const char *with, size_t with_len) {
  return replace_outside(text, len, plain, n_plain, MX_CHAT_AUDIO_MARK,
                         sizeof MX_CHAT_AUDIO_MARK - 1, with, with_len);
}

// The text of token id, or NULL (*len 0).
static const char *piece(const mx_tokenizer_t *tok, int32_t id, size_t *len) {
  *len = 0;
  const char *p = tok ? mx_tokenizer_id_to_piece(tok, id, len) : NULL;
  return p && *len > 0 ? p : NULL;
}

mx_status_t mx_chat_audio_sequence(const mx_tokenizer_t *tok, const struct mx_audio_config *a,
                                   char **out, size_t *len) {
  *out = NULL;
  *len = 0;
  if (!a->present) return mx_error_set(MX_ERR_INVALID_ARG, "the model has no audio tower");
  size_t bl, sl, el;
  const char *boa = piece(tok, a->boa_token_id, &bl), *soft = piece(tok, a->audio_token_id, &sl);
  const char *eoa = piece(tok, a->eoa_token_id, &el);
  if (!boa || !soft || !eoa)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "the audio tokens (ids %d, %d, %d) have no text in the tokenizer",
                        a->boa_token_id, a->audio_token_id, a->eoa_token_id);
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  mx_strbuf_puts(&sb, "\n\n");
  mx_strbuf_append(&sb, boa, bl);
  for (int32_t k = 0; k < a->soft_tokens; k++) mx_strbuf_append(&sb, soft, sl);
  mx_strbuf_append(&sb, eoa, el);
  mx_strbuf_puts(&sb, "\n\n");
  *out = mx_strbuf_take(&sb, len);
  return *out ? MX_OK : mx_error_set(MX_ERR_NOMEM, "out of memory");
}

const char *mx_chat_image_placeholder(const mx_tokenizer_t *tok, const mx_vision_config_t *v,
                                      size_t *len) {
  *len = 0;
  if (!v->present) return NULL;
  if (v->kind == MX_VISION_MOLMO2) {  // Molmo2Processor's <|image|>, not a config id
    int32_t id = tok ? mx_tokenizer_token_to_id(tok, "<|image|>", 9) : -1;
    return id >= 0 ? piece(tok, id, len) : NULL;
  }
  return piece(tok, mx_vision_text_expanded(v) ? v->vision_start_token_id : v->image_token_id, len);
}

mx_status_t mx_chat_image_with(const mx_tokenizer_t *tok, const mx_vision_config_t *v, char **out,
                               size_t *len) {
  *out = NULL;
  *len = 0;
  size_t pl = 0;
  const char *p = mx_chat_image_placeholder(tok, v, &pl);
  if (!p)
    return mx_error_set(MX_ERR_INVALID_ARG, "the image token %d has no text in the tokenizer",
                        mx_vision_text_expanded(v) ? v->vision_start_token_id : v->image_token_id);
  bool line = !mx_vision_text_expanded(v);
  char *w = malloc(pl + 2);
  if (!w) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  memcpy(w, p, pl);
  memcpy(w + pl, "\n", 2);
  if (!line) w[pl] = '\0';
  *out = w;
  *len = pl + (line ? 1 : 0);
  return MX_OK;
}

mx_status_t mx_chat_expand_images(const mx_tokenizer_t *tok, const mx_vision_config_t *v,
                                  int32_t n_images, char **text, size_t *len,
                                  mx_text_range_t *plain, int32_t n_plain) {
  if (!v->present || !mx_vision_text_expanded(v)) return MX_OK;
  size_t bl, sl, el;
  const char *boi = piece(tok, v->vision_start_token_id, &bl);
  const char *soft = piece(tok, v->image_token_id, &sl);
  const char *eoi = piece(tok, v->vision_end_token_id, &el);
  if (!boi || !soft || !eoi)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "the tokenizer has no text for the image tokens (%d, %d, %d)",
                        v->vision_start_token_id, v->image_token_id, v->vision_end_token_id);
  int32_t k = 0;
  replace_pass(*text, *len, plain, n_plain, boi, bl, "", 0, NULL, &k);
  if (k != n_images)
    return mx_error_set(MX_ERR_INVALID_ARG,
                        "the prompt has %d image placeholder%s (%.*s) for %d image%s: give one "
                        "placeholder per image, in order",
                        k, k == 1 ? "" : "s", (int)bl, boi, n_images, n_images == 1 ? "" : "s");
  if (k == 0) return MX_OK;
  mx_strbuf_t sb;  // Gemma3Processor's full_image_sequence
  mx_strbuf_init(&sb);
  mx_strbuf_puts(&sb, "\n\n");
  mx_strbuf_append(&sb, boi, bl);
  for (int32_t t = 0; t < v->tokens_per_image; t++) mx_strbuf_append(&sb, soft, sl);
  mx_strbuf_append(&sb, eoi, el);
  mx_strbuf_puts(&sb, "\n\n");
  mx_status_t st = sb.oom ? mx_error_set(MX_ERR_NOMEM, "out of memory")
                          : replace_outside(text, len, plain, n_plain, boi, bl, sb.data, sb.len);
  mx_strbuf_free(&sb);
  return st;
}

mx_status_t mx_chat_parts_from_marks(const char *content, char **out) {
  *out = NULL;
  static const size_t kMark = sizeof MX_CHAT_IMAGE_MARK - 1;
  cJSON *list = cJSON_CreateArray();
  bool ok = list != NULL;
  const char *p = content;
  while (ok && *p) {
    const char *m = strstr(p, MX_CHAT_IMAGE_MARK);
    size_t n = m ? (size_t)(m - p) : strlen(p);
    if (n > 0) {
      cJSON *part = cJSON_CreateObject();
      char *text = malloc(n + 1);
      ok = part && text && cJSON_AddItemToArray(list, part);
      if (!ok) cJSON_Delete(part);
      if (ok) {
        memcpy(text, p, n);
        text[n] = '\0';
        ok = cJSON_AddStringToObject(part, "type", "text") &&
             cJSON_AddStringToObject(part, "text", text);
      }
      free(text);
    }
    if (ok && m) {
      cJSON *part = cJSON_CreateObject();
      ok = part && cJSON_AddItemToArray(list, part);
      if (!ok) cJSON_Delete(part);
      if (ok) ok = cJSON_AddStringToObject(part, "type", "image") != NULL;
    }
    p = m ? m + kMark : p + n;
  }
  char *t = ok ? cJSON_PrintUnformatted(list) : NULL;
  *out = t ? strdup(t) : NULL;
  cJSON_free(t);
  cJSON_Delete(list);
  return *out ? MX_OK : mx_error_set(MX_ERR_NOMEM, "out of memory");
}
