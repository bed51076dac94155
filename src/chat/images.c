// Image placeholders in chat templates (chat.h): which way a template takes images, and the
// image token's text put where content marked an image.
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/chat.h"

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

mx_status_t mx_chat_replace_marks(char **text, size_t *len, mx_text_range_t *plain, int32_t n_plain,
                                  const char *with, size_t with_len) {
  static const size_t kMark = sizeof MX_CHAT_IMAGE_MARK - 1;
  size_t marks = 0;
  for (const char *p = *text; (p = strstr(p, MX_CHAT_IMAGE_MARK)); p += kMark) marks++;
  if (marks == 0) return MX_OK;
  char *out = malloc(*len + marks * with_len + 1);
  if (!out) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  size_t w = 0, shift = 0;
  int32_t k = 0;  // plain ranges are in order and never hold a mark (it is no special token)
  for (size_t r = 0; r <= *len; r++) {
    for (; k < n_plain && plain[k].start <= r; k++) {
      plain[k].start += shift;
      plain[k].end += shift;
    }
    if (r == *len) break;
    if (*len - r >= kMark && memcmp(*text + r, MX_CHAT_IMAGE_MARK, kMark) == 0) {
      memcpy(out + w, with, with_len);
      w += with_len;
      r += kMark - 1;
      shift += with_len - kMark;
    } else {
      out[w++] = (*text)[r];
    }
  }
  out[w] = '\0';
  free(*text);
  *text = out;
  *len = w;
  return MX_OK;
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
