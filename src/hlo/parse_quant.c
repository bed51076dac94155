// StableHLO text parser: quantized element types
//   !quant.uniform<STORAGE[<min:max>]:EXPRESSED[:axis], scale[:zp] | {scale[:zp], ...}>
// attached to a tensor type as mx_quant_t (the tensor's `elem` is the storage type).
#include <math.h>
#include <string.h>

#include "hlo/parse_internal.h"

// Quantized storage may be at most 32 bits wide (as in MLIR's quant dialect).
#define MX_QUANT_MAX_STORAGE_BITS 32
// Per-axis lists longer than this are rejected (a dimension size is the real bound).
#define MX_QUANT_MAX_PARAMS (1 << 24)

bool mx_p_at_quant(const mx_parser_t *p) {
  const mx_tok_t *t = mx_p_tok(p);
  return t->kind == MX_TK_BANG && t->len == 14 && memcmp(t->text, "!quant.uniform", 14) == 0;
}

static void mx_q_full_range(mx_elem_type_t et, int64_t *lo, int64_t *hi) {
  int bits = mx_elem_bits(et);
  if (mx_elem_is_unsigned(et)) {
    *lo = 0;
    *hi = (int64_t)((UINT64_C(1) << bits) - 1);
  } else {
    *lo = -(INT64_C(1) << (bits - 1));
    *hi = (INT64_C(1) << (bits - 1)) - 1;
  }
}

// MLIR spells unsigned storage `u8`; `ui8` (our element spelling) is accepted too.
static mx_status_t mx_q_storage(mx_parser_t *p, mx_elem_type_t *out) {
  const mx_tok_t *t = mx_p_tok(p);
  if (t->kind != MX_TK_IDENT) return mx_p_expected(p, "quantized storage type (i8, u8, ...)");
  mx_elem_type_t et = MX_ELEM_INVALID;
  if (t->len >= 2 && t->len < 8 && t->text[0] == 'u' && t->text[1] >= '0' && t->text[1] <= '9') {
    char buf[10] = "ui";
    memcpy(buf + 2, t->text + 1, t->len - 1);
    et = mx_elem_from_name(buf, t->len + 1);
  } else {
    et = mx_elem_from_name(t->text, t->len);
  }
  if (!mx_elem_is_int(et) || mx_elem_bits(et) > MX_QUANT_MAX_STORAGE_BITS)
    return mx_p_error_at(p, t,
                         "invalid quantized storage type '%.*s' (expected i2..i32 or u2..u32)",
                         (int)t->len, t->text);
  mx_p_next(p);
  *out = et;
  return MX_OK;
}

static mx_status_t mx_q_expressed(mx_parser_t *p, mx_elem_type_t *out) {
  const mx_tok_t *t = mx_p_tok(p);
  mx_elem_type_t et = t->kind == MX_TK_IDENT ? mx_elem_from_name(t->text, t->len) : MX_ELEM_INVALID;
  if (et != MX_ELEM_F32 && et != MX_ELEM_F16 && et != MX_ELEM_BF16 && et != MX_ELEM_F64)
    return mx_p_expected(p, "quantized expressed type (f16, bf16, f32 or f64)");
  mx_p_next(p);
  *out = et;
  return MX_OK;
}

static mx_status_t mx_q_scale(mx_parser_t *p, double *out) {
  mx_tok_t st = *mx_p_tok(p);
  bool neg = mx_p_accept(p, MX_TK_MINUS);
  const mx_tok_t *t = mx_p_tok(p);
  double v;
  if (t->kind == MX_TK_FLOAT) {
    MX_TRY(mx_p_float_text(p, t->text, t->len, &v, NULL));
  } else if (t->kind == MX_TK_INT && !t->is_hex) {
    uint64_t u;
    if (!mx_p_tok_u64(t, &u)) return mx_p_error_at(p, t, "scale too large");
    v = (double)u;
  } else {
    return mx_p_expected(p, "quantization scale");
  }
  if (neg) v = -v;
  if (!(v > 0) || !isfinite(v))
    return mx_p_error_at(p, &st, "quantization scale must be positive and finite, got %g", v);
  mx_p_next(p);
  *out = v;
  return MX_OK;
}

// scale[:zero_point], appended to the growing arrays.
static mx_status_t mx_q_param(mx_parser_t *p, mx_quant_t *q, double **scales, int64_t **zps,
                              int32_t *cap, mx_tok_t *zp_tok) {
  if (q->n == *cap) {
    int32_t nc = *cap ? *cap * 2 : 4;
    if (nc > MX_QUANT_MAX_PARAMS) return mx_p_error_at(p, mx_p_tok(p), "too many scales");
    *scales = mx_arena_grow(p->arena, *scales, (size_t)q->n, (size_t)nc, sizeof(double));
    *zps = mx_arena_grow(p->arena, *zps, (size_t)q->n, (size_t)nc, sizeof(int64_t));
    if (!*scales || !*zps) return mx_p_oom();
    *cap = nc;
  }
  MX_TRY(mx_q_scale(p, &(*scales)[q->n]));
  int64_t zp = 0;
  *zp_tok = *mx_p_tok(p);
  if (mx_p_accept(p, MX_TK_COLON)) {
    *zp_tok = *mx_p_tok(p);
    MX_TRY(mx_p_int(p, &zp));
  }
  if (zp < q->storage_min || zp > q->storage_max)
    return mx_p_error_at(p, zp_tok, "zero point %lld is outside the storage range [%lld, %lld]",
                         (long long)zp, (long long)q->storage_min, (long long)q->storage_max);
  (*zps)[q->n++] = zp;
  return MX_OK;
}

mx_status_t mx_p_quant(mx_parser_t *p, mx_elem_type_t *storage, const mx_quant_t **out) {
  mx_p_next(p);  // !quant.uniform
  MX_TRY(mx_p_expect(p, MX_TK_LESS, "'<' after '!quant.uniform'"));
  mx_quant_t *q = mx_arena_alloc(p->arena, sizeof *q);
  if (!q) return mx_p_oom();
  memset(q, 0, sizeof *q);
  MX_TRY(mx_q_storage(p, storage));
  int64_t lo, hi;
  mx_q_full_range(*storage, &lo, &hi);
  q->storage_min = lo;
  q->storage_max = hi;
  if (mx_p_kind(p) == MX_TK_LESS) {
    mx_tok_t rt = *mx_p_tok(p);
    mx_p_next(p);
    MX_TRY(mx_p_int(p, &q->storage_min));
    MX_TRY(mx_p_expect(p, MX_TK_COLON, "':' in storage range"));
    MX_TRY(mx_p_int(p, &q->storage_max));
    MX_TRY(mx_p_expect(p, MX_TK_GREATER, "'>' closing storage range"));
    if (q->storage_min < lo || q->storage_max > hi || q->storage_min >= q->storage_max)
      return mx_p_error_at(p, &rt,
                           "storage range <%lld:%lld> invalid for %s (full range %lld:%lld)",
                           (long long)q->storage_min, (long long)q->storage_max,
                           mx_elem_name(*storage), (long long)lo, (long long)hi);
  }
  MX_TRY(mx_p_expect(p, MX_TK_COLON, "':' before the expressed type"));
  MX_TRY(mx_q_expressed(p, &q->expressed));
  q->axis = -1;
  if (mx_p_accept(p, MX_TK_COLON)) {
    mx_tok_t at = *mx_p_tok(p);
    int64_t axis;
    MX_TRY(mx_p_int(p, &axis));
    if (axis < 0 || axis >= MX_MAX_RANK)
      return mx_p_error_at(p, &at, "invalid quantization axis %lld", (long long)axis);
    q->axis = (int32_t)axis;
  }
  MX_TRY(mx_p_expect(p, MX_TK_COMMA, "',' before the quantization scale"));
  double *scales = NULL;
  int64_t *zps = NULL;
  int32_t cap = 0;
  mx_tok_t zt;
  if (mx_p_kind(p) == MX_TK_LBRACE) {
    if (q->axis < 0)
      return mx_p_error_at(p, mx_p_tok(p),
                           "a list of scales needs a quantization axis (STORAGE:EXPRESSED:AXIS)");
    mx_p_next(p);
    for (;;) {
      MX_TRY(mx_q_param(p, q, &scales, &zps, &cap, &zt));
      if (mx_p_accept(p, MX_TK_RBRACE)) break;
      MX_TRY(mx_p_expect(p, MX_TK_COMMA, "',' or '}' in the scale list"));
    }
  } else {
    if (q->axis >= 0) return mx_p_expected(p, "'{' to begin per-axis scales");
    MX_TRY(mx_q_param(p, q, &scales, &zps, &cap, &zt));
  }
  MX_TRY(mx_p_expect(p, MX_TK_GREATER, "'>' closing the quantized type"));
  q->scales = scales;
  q->zero_points = zps;
  *out = q;
  return MX_OK;
}

mx_status_t mx_p_quant_check(mx_parser_t *p, const mx_tok_t *at, const mx_type_t *t) {
  const mx_quant_t *q = t->quant;
  if (!q) return MX_OK;
  if (q->axis < 0) return MX_OK;  // n == 1 by construction
  if (q->axis >= t->rank)
    return mx_p_error_at(p, at, "quantization axis %d out of range for a rank-%d tensor",
                         (int)q->axis, (int)t->rank);
  if ((int64_t)q->n != t->dims[q->axis])
    return mx_p_error_at(p, at,
                         "%d scales given for quantization axis %d of size %lld (need one per "
                         "slice)",
                         (int)q->n, (int)q->axis, (long long)t->dims[q->axis]);
  return MX_OK;
}
