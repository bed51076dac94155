// Images in chat completions (server_internal.h, "Images"): the prompt side of a vision model as
// the CLI's generate --image has it (ADR 0010), for requests with image_url parts.
//
// Placeholders: a chat template that iterates content parts (llava-hf's: {% for c in
// message['content'] %}{% if c['type'] == 'image' %}<image>...) gets a message's parts as the
// list, and writes the image token itself; a template that concatenates content strings gets
// the text with the image token's text and a line break where each image was (LLaVA 1.5's
// "<image>\n" convention, which generate --chat writes too; Gemma 3's "<start_of_image>", which
// its processor then expands in the text, mx_chat_expand_images). Which kind a template is, is
// found once by rendering a probe message with parts. Either way the image tokens are the
// template's or ours, never the client's: special-token text in the client's text stays text (the
// guard), so a client cannot forge image tokens that no image backs.
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/image.h"
#include "mlxcel/tokenizer.h"
#include "server/server_internal.h"

mx_status_t mx_server_images_init(mx_server_t *srv) {
  const mx_vision_config_t *v = &srv->model->config.vision;
  if (!v->present) return MX_OK;
  size_t len = 0;
  const char *it = mx_chat_image_placeholder(srv->tok, v, &len);
  mx_status_t st = mx_chat_image_with(srv->tok, v, &srv->image_with, &srv->image_with_len);
  if (st) return mx_error_prefix(st, "serve");
  mx_error_clear();
  if (mx_image_proc_load(srv->model->dir, &srv->proc)) {
    // Text requests still work; image requests report this.
    mx_strbuf_t sb;
    mx_strbuf_init(&sb);
    mx_strbuf_printf(&sb, "the model's image processor cannot be used: %s", mx_error_message());
    srv->proc_error = mx_strbuf_take(&sb, NULL);
    if (!srv->proc_error) return mx_error_set(MX_ERR_NOMEM, "serve: out of memory");
  }
  srv->tmpl_parts = srv->tmpl && mx_chat_template_takes_parts(srv->tmpl, it, len);
  return MX_OK;
}

// fields_json[i] for a message rendered with its parts: its other fields plus "content".
static char *fields_with_parts(const char *fields, const char *content) {
  char *parts = NULL;
  if (mx_chat_parts_from_marks(content, &parts)) return NULL;
  cJSON *o = fields ? cJSON_Parse(fields) : cJSON_CreateObject();
  cJSON *p = cJSON_Parse(parts);
  free(parts);
  char *out = NULL;
  if (cJSON_IsObject(o) && p && cJSON_AddItemToObject(o, "content", p)) {
    p = NULL;
    char *t = cJSON_PrintUnformatted(o);
    out = t ? strdup(t) : NULL;
    cJSON_free(t);
  }
  cJSON_Delete(p);
  cJSON_Delete(o);
  return out;
}

mx_status_t mx_server_images_fields(const mx_server_t *srv, const mx_server_request_t *r,
                                    char ***out) {
  *out = NULL;
  if (r->n_images == 0 || !srv->tmpl_parts) return MX_OK;
  char **f = calloc((size_t)r->n_messages + 1, sizeof *f);
  if (!f) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  for (int32_t i = 0; i < r->n_messages; i++) {
    const char *own = r->fields ? r->fields[i] : NULL;
    bool images = strstr(r->contents[i], MX_SERVER_IMAGE_MARK) != NULL;
    f[i] = images ? fields_with_parts(own, r->contents[i]) : own ? strdup(own) : NULL;
    if ((images || own) && !f[i]) {
      mx_server_images_fields_free(f, r->n_messages);
      return mx_error_set(MX_ERR_NOMEM, "out of memory");
    }
  }
  *out = f;
  return MX_OK;
}

void mx_server_images_fields_free(char **fields, int32_t n) {
  for (int32_t i = 0; fields && i < n; i++) free(fields[i]);
  free(fields);
}

// Image i's pixels as the tower takes them: [C, S, S] (the fixed-size towers), or the rows of
// one image's patch grid (the Qwen towers; a temporal grid other than 1 would be video). A
// mismatch is the model's files disagreeing: 500.
static mx_status_t check_pixels(const mx_model_config_t *cfg, const mx_pixels_t *px, int32_t i,
                                mx_server_error_t *err) {
  const mx_vision_config_t *v = &cfg->vision;
  mx_error_clear();
  if (v->kind == MX_VISION_MOLMO2) {  // crops [C, N, P*P*3] with their pooling indices
    int64_t side = v->image_size / v->patch_size;
    int64_t P = (int64_t)v->patch_size * v->patch_size * v->num_channels;
    if (px->rank == 3 && px->pooling && px->shape[1] == side * side && px->shape[2] == P)
      return MX_OK;
    mx_error_set(MX_ERR_INVALID_ARG,
                 "the processor gives crops of %lld patches of %lld values, the vision tower "
                 "takes %lld of %lld (preprocessor_config.json and config.json disagree)",
                 (long long)px->shape[1], (long long)px->shape[2], (long long)(side * side),
                 (long long)P);
    return mx_server_error_set(err, 500, "server_error", NULL, NULL, "image %d: %.400s", i,
                               mx_error_message());
  }
  if (mx_vision_fixed_size(v) && mx_vision_check_pixels(cfg, px->rank, px->shape) == MX_OK)
    return MX_OK;
  int64_t K = (int64_t)v->num_channels * v->temporal_patch_size * v->patch_size * v->patch_size;
  if (!mx_vision_fixed_size(v) && px->rank == 2 && px->shape[1] == K && px->grid_thw[0] == 1)
    return MX_OK;
  if (!mx_vision_fixed_size(v))
    mx_error_set(MX_ERR_INVALID_ARG,
                 "the processor gives pixel rows of %lld values (temporal grid %lld), the vision "
                 "tower takes rows of %lld of one image (preprocessor_config.json and config.json "
                 "disagree)",
                 (long long)(px->rank == 2 ? px->shape[1] : 0), (long long)px->grid_thw[0],
                 (long long)K);
  return mx_server_error_set(err, 500, "server_error", NULL, NULL, "image %d: %.400s", i,
                             mx_error_message());
}

mx_status_t mx_server_images_pixels(const mx_server_t *srv, const mx_server_request_t *r,
                                    float **out, int32_t **grids, mx_server_error_t *err) {
  *out = NULL;
  *grids = NULL;
  memset(err, 0, sizeof *err);
  const mx_model_config_t *cfg = &srv->model->config;
  const mx_vision_config_t *v = &cfg->vision;
  if (!v->present)
    return mx_server_error_set(err, 400, "invalid_request_error", "messages", "model_not_vision",
                               "the request has %d image%s but the served model '%.200s' "
                               "(model_type '%s') takes no images: it has no vision tower",
                               r->n_images, r->n_images == 1 ? "" : "s", srv->model_id,
                               cfg->model_type);
  if (srv->proc_error)
    return mx_server_error_set(err, 500, "server_error", NULL, NULL, "%.400s", srv->proc_error);
  bool molmo = v->kind == MX_VISION_MOLMO2;
  bool grid = !mx_vision_fixed_size(v);
  size_t per_image = molmo ? MX_SERVER_MOLMO2_GRID : 2, n_g = (size_t)r->n_images * per_image;
  int32_t *g = grid ? calloc(n_g, sizeof *g) : NULL;
  float *px_all = NULL;
  size_t n_all = 0;
  mx_status_t st = grid && !g ? MX_ERR_NOMEM : MX_OK;
  mx_image_limits_t lim = {.max_pixels = srv->lim.max_image_pixels};
  for (int32_t i = 0; i < r->n_images && !st; i++) {
    mx_image_t img = {0};
    mx_pixels_t px = {0};
    mx_error_clear();
    st = mx_image_decode(r->images[i], r->image_lens[i], &lim, &img, NULL);
    if (st == MX_ERR_RUNTIME) {  // over the pixel limit, known from the header
      mx_server_error_set(err, 413, "invalid_request_error", "messages", "image_too_large",
                          "image %d: %.400s", i, mx_error_message());
    } else if (st) {
      mx_server_error_set(err, st == MX_ERR_NOMEM ? 500 : 400,
                          st == MX_ERR_NOMEM ? "server_error" : "invalid_request_error", "messages",
                          NULL, "image %d: %.400s", i, mx_error_message());
    }
    if (!st) st = mx_image_preprocess(&srv->proc, &img, &px);
    mx_image_free(&img);
    if (!st) st = check_pixels(cfg, &px, i, err);
    size_t n = 1;
    for (int32_t d = 0; !st && d < px.rank; d++) n *= (size_t)px.shape[d];
    float *grown = st ? NULL : realloc(px_all, (n_all + n) * sizeof *px_all);
    if (!st && !grown) st = MX_ERR_NOMEM;
    if (grown) {
      px_all = grown;
      memcpy(px_all + n_all, px.data, n * sizeof *px_all);
      n_all += n;
    }
    if (!st && grid && !molmo) {
      g[2 * i] = (int32_t)px.grid_thw[1];
      g[2 * i + 1] = (int32_t)px.grid_thw[2];
    }
    if (!st && molmo) {  // the geometry, the image_grids row, then the pooling indices
      int32_t *row = g + (size_t)i * per_image;
      row[0] = (int32_t)px.shape[0];
      row[1] = (int32_t)px.pooling_shape[0];
      row[2] = (int32_t)px.pooling_shape[1];
      for (int k = 0; k < 4; k++) row[3 + k] = (int32_t)px.image_grid[k];
      size_t np = (size_t)row[1] * (size_t)row[2];
      int32_t *gg = realloc(g, (n_g + np) * sizeof *g);
      if (!gg) {
        st = MX_ERR_NOMEM;
      } else {
        g = gg;
        memcpy(g + n_g, px.pooling, np * sizeof *g);
        n_g += np;
      }
    }
    mx_pixels_free(&px);
    if (st && !err->http_status)
      mx_server_error_set(err, st == MX_ERR_NOMEM ? 500 : 400,
                          st == MX_ERR_NOMEM ? "server_error" : "invalid_request_error", "messages",
                          NULL, "image %d: %.400s", i,
                          st == MX_ERR_NOMEM ? "out of memory" : mx_error_message());
  }
  if (st && !err->http_status)
    mx_server_error_set(err, 500, "server_error", NULL, NULL, "out of memory");
  if (st) {
    free(px_all);
    free(g);
    return st;
  }
  *out = px_all;
  *grids = g;
  return MX_OK;
}
