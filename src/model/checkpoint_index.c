// model.safetensors.index.json: {"metadata": {...}, "weight_map": {"tensor": "shard file"}}.
#include <cjson/cJSON.h>
#include <string.h>

#include "base/json.h"
#include "model/checkpoint_internal.h"

static bool plain_file_name(const char *s) {
  return s[0] != '\0' && strchr(s, '/') == NULL && strchr(s, '\\') == NULL && strcmp(s, ".") != 0 &&
         strcmp(s, "..") != 0;
}

static mx_status_t fill_index(const cJSON *map, const char *source, mx_arena_t *arena,
                              mx_ckpt_index_t *out) {
  int32_t n = (int32_t)cJSON_GetArraySize(map);
  if (n == 0) return mx_error_set(MX_ERR_PARSE, "%s: weight_map is empty", source);
  out->names = mx_arena_alloc(arena, (size_t)n * sizeof *out->names);
  out->shard_of = mx_arena_alloc(arena, (size_t)n * sizeof *out->shard_of);
  out->shards = mx_arena_alloc(arena, (size_t)n * sizeof *out->shards);
  if (!out->names || !out->shard_of || !out->shards) {
    return mx_error_set(MX_ERR_NOMEM, "%s: out of memory", source);
  }
  int32_t i = 0;
  for (const cJSON *e = map->child; e; e = e->next, i++) {
    if (!cJSON_IsString(e)) {
      return mx_error_set(MX_ERR_PARSE, "%s: weight_map entry '%.200s' is not a string", source,
                          e->string);
    }
    if (!plain_file_name(e->valuestring)) {
      return mx_error_set(MX_ERR_PARSE,
                          "%s: weight_map entry '%.200s' names shard '%.200s', which is not a "
                          "plain file name",
                          source, e->string, e->valuestring);
    }
    // Shard counts are small (tens): a linear search keeps this simple.
    int32_t s = 0;
    while (s < out->n_shards && strcmp(out->shards[s], e->valuestring) != 0) s++;
    if (s == out->n_shards) {
      out->shards[s] = mx_arena_strdup(arena, e->valuestring);
      if (!out->shards[s]) return mx_error_set(MX_ERR_NOMEM, "%s: out of memory", source);
      out->n_shards++;
    }
    out->names[i] = mx_arena_strdup(arena, e->string);
    if (!out->names[i]) return mx_error_set(MX_ERR_NOMEM, "%s: out of memory", source);
    out->shard_of[i] = s;
  }
  out->n_entries = n;
  return MX_OK;
}

mx_status_t mx_ckpt_index_parse(const char *json, size_t len, const char *source, mx_arena_t *arena,
                                mx_ckpt_index_t *out) {
  memset(out, 0, sizeof *out);
  cJSON *root = NULL;
  mx_status_t st =
      mx_json_parse(json, len, MX_CONFIG_JSON_MAX_BYTES, MX_JSON_MAX_DEPTH, source, &root);
  if (st != MX_OK) return st;
  const cJSON *map = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
  if (!cJSON_IsObject(root)) {
    st = mx_error_set(MX_ERR_PARSE, "%s: not a JSON object", source);
  } else if (!map) {
    st = mx_error_set(MX_ERR_PARSE, "%s: missing \"weight_map\"", source);
  } else if (!cJSON_IsObject(map)) {
    st = mx_error_set(MX_ERR_PARSE, "%s: \"weight_map\" is not a JSON object", source);
  } else {
    st = fill_index(map, source, arena, out);
  }
  cJSON_Delete(root);
  return st;
}
