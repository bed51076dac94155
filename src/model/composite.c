// Composite call sites and the dedupe table of their decomposition functions.
//
// Every call site of a composite with the same operand types and attributes shares one private
// decomposition function (so @prefill's layers share one `mx_attention_0`, while @decode, whose
// T is 1, gets its own). The decompositions themselves live in composite_*.c.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/composite_internal.h"

struct mx_comp_entry {
  char *key;         // heap: "name|operand types|attribute key"
  const char *func;  // decomposition function name (module arena)
  const char *comp;  // composite name (static string)
};

void mx_comp_ctx_init(mx_comp_ctx_t *c, mx_module_t *m) {
  memset(c, 0, sizeof *c);
  c->m = m;
}

void mx_comp_ctx_free(mx_comp_ctx_t *c) {
  if (c == NULL) return;
  for (int32_t i = 0; i < c->n; i++) free(c->e[i].key);
  free(c->e);
  memset(c, 0, sizeof *c);
}

// Finds or builds the decomposition function for (name, operand types, attr_key).
static mx_status_t decomposition(mx_comp_ctx_t *c, mx_builder_t *b, const char *name,
                                 const int32_t *operands, int32_t n, const char *attr_key,
                                 mx_decomp_fn build, const void *params, const char **func) {
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  mx_strbuf_puts(&sb, name);
  for (int32_t i = 0; i < n; i++) {
    const mx_type_t *t = mx_build_type(b, operands[i]);
    if (t == NULL) {
      mx_strbuf_free(&sb);
      return mx_error_set(MX_ERR_INVALID_ARG, "%s: bad operand id %d", name, operands[i]);
    }
    mx_strbuf_puts(&sb, "|");
    mx_type_print(t, &sb);
  }
  mx_strbuf_puts(&sb, "|");
  mx_strbuf_puts(&sb, attr_key);
  if (sb.oom) {
    mx_strbuf_free(&sb);
    return mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  int32_t same_name = 0;
  for (int32_t i = 0; i < c->n; i++) {
    if (strcmp(c->e[i].key, sb.data) == 0) {
      mx_strbuf_free(&sb);
      *func = c->e[i].func;
      return MX_OK;
    }
    if (strcmp(c->e[i].comp, name) == 0) same_name++;
  }
  // "mx.rms_norm" -> "mx_rms_norm_<k>"
  char fname[96];
  snprintf(fname, sizeof fname, "%s_%d", name, same_name);
  for (char *p = fname; *p; p++)
    if (*p == '.') *p = '_';
  // Heap arrays: mx.moe has three to nine weight operands per expert.
  mx_type_t *types = malloc(sizeof *types * (size_t)(n > 0 ? n : 1));
  int32_t *args = malloc(sizeof *args * (size_t)(n > 0 ? n : 1));
  mx_status_t st = MX_OK;
  if (types == NULL || args == NULL) st = mx_error_set(MX_ERR_NOMEM, "out of memory");
  for (int32_t i = 0; st == MX_OK && i < n; i++) types[i] = *mx_build_type(b, operands[i]);
  mx_func_t *f = NULL;
  mx_builder_t fb;
  int32_t result = -1;
  if (st == MX_OK) st = mx_build_func(c->m, fname, true, types, n, &f, &fb, args);
  if (st == MX_OK) st = build(&fb, args, params, &result);
  if (st == MX_OK) st = mx_build_return(&fb, &result, 1);
  free(types);
  free(args);
  if (st != MX_OK) {
    mx_strbuf_free(&sb);
    return mx_error_prefix(st, "decomposition of %s", name);
  }
  if (c->n == c->cap) {
    int32_t cap = c->cap ? 2 * c->cap : 16;
    mx_comp_entry_t *e = realloc(c->e, sizeof *e * (size_t)cap);
    if (e == NULL) {
      mx_strbuf_free(&sb);
      return mx_error_set(MX_ERR_NOMEM, "out of memory");
    }
    c->e = e;
    c->cap = cap;
  }
  c->e[c->n].key = mx_strbuf_take(&sb, NULL);
  c->e[c->n].func = f->name;
  c->e[c->n].comp = name;
  c->n++;
  *func = f->name;
  return MX_OK;
}

mx_status_t mx_comp_call(mx_comp_ctx_t *c, mx_builder_t *b, const char *name,
                         const int32_t *operands, int32_t n, const mx_named_attr_t *attrs,
                         int32_t n_attrs, const char *attr_key, mx_decomp_fn build,
                         const void *params, int32_t *out) {
  const char *func = NULL;
  MX_TRY(decomposition(c, b, name, operands, n, attr_key, build, params, &func));
  for (int32_t i = 0; i < n_attrs; i++) {
    if (mx_attr_is_oom(&attrs[i].value)) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  }
  return mx_build_composite(b, name, operands, n, attrs, n_attrs, func, MX_COMPOSITE_VERSION, out);
}
