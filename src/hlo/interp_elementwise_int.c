// Reference interpreter: elementwise ops on booleans (i1) and integers of every width.
// Arithmetic is done on raw bit patterns in uint64_t and wrapped to the type's width, which
// gives two's-complement wrap-around for sub-byte types (i2/i4) as well.
#include "hlo/interp_elementwise_internal.h"

static int ew_clz(uint64_t v, int bits) {
  int n = 0;
  for (int k = bits - 1; k >= 0 && !((v >> k) & 1); k--) n++;
  return n;
}

static int ew_popcount(uint64_t v) {
  int n = 0;
  for (; v; v &= v - 1) n++;
  return n;
}

static mx_status_t ew_bool_unary(const mx_op_t *op, const mx_tensor_t *x, mx_tensor_t *out) {
  if (op->code != MX_OP_NOT || out->type.elem != MX_ELEM_I1) return mx_ew_unsupported(op, &x->type);
  int64_t n = mx_type_numel(&out->type);
  for (int64_t i = 0; i < n; i++) out->data[i] = x->data[i] ? 0 : 1;
  return MX_OK;
}

mx_status_t mx_ew_int_unary(const mx_op_t *op, const mx_tensor_t *x, mx_tensor_t *out) {
  mx_elem_type_t et = x->type.elem;
  if (et == MX_ELEM_I1) return ew_bool_unary(op, x, out);
  if (!mx_elem_is_int(et) || out->type.elem != et) return mx_ew_unsupported(op, &x->type);
  int bits = mx_elem_bits(et);
  bool sgn = mx_elem_is_signed(et);
  switch (op->code) {
    case MX_OP_ABS:
    case MX_OP_NEGATE:
    case MX_OP_NOT:
    case MX_OP_POPCNT:
    case MX_OP_COUNT_LEADING_ZEROS:
    case MX_OP_SIGN:
      break;
    default:
      return mx_ew_unsupported(op, &x->type);
  }
  int64_t n = mx_type_numel(&out->type);
  for (int64_t i = 0; i < n; i++) {
    uint64_t v = mx_ew_load_bits(et, x->data, i), r = 0;
    bool neg = sgn && mx_ew_sext(v, bits) < 0;
    switch (op->code) {
      case MX_OP_ABS:
        r = neg ? 0 - v : v;
        break;  // abs(INT_MIN) wraps to INT_MIN
      case MX_OP_NEGATE:
        r = 0 - v;
        break;
      case MX_OP_NOT:
        r = ~v;
        break;
      case MX_OP_POPCNT:
        r = (uint64_t)ew_popcount(v);
        break;
      case MX_OP_COUNT_LEADING_ZEROS:
        r = (uint64_t)ew_clz(v, bits);
        break;
      default:
        r = neg ? ~0ull : (v != 0);
        break;  // SIGN
    }
    mx_ew_store_bits(et, out->data, i, r);
  }
  return MX_OK;
}

static mx_status_t ew_bool_binary(const mx_op_t *op, const mx_tensor_t *a, const mx_tensor_t *b,
                                  mx_tensor_t *out) {
  if (out->type.elem != MX_ELEM_I1) return mx_ew_unsupported(op, &a->type);
  int kind;  // 0 and, 1 or, 2 xor
  switch (op->code) {
    case MX_OP_AND:
    case MX_OP_MULTIPLY:
    case MX_OP_MINIMUM:
      kind = 0;
      break;
    case MX_OP_OR:
    case MX_OP_ADD:
    case MX_OP_MAXIMUM:
      kind = 1;
      break;
    case MX_OP_XOR:
      kind = 2;
      break;
    default:
      return mx_ew_unsupported(op, &a->type);
  }
  int64_t n = mx_type_numel(&out->type);
  for (int64_t i = 0; i < n; i++) {
    bool x = a->data[i] != 0, y = b->data[i] != 0;
    bool r = kind == 0 ? (x && y) : kind == 1 ? (x || y) : (x != y);
    out->data[i] = r ? 1 : 0;
  }
  return MX_OK;
}

// Integer power by squaring with the reference interpreter's rule for negative exponents:
// base^-k is 0 unless |base| == 1, in which case the exponent's magnitude is used.
static uint64_t ew_ipow(uint64_t base, uint64_t e, int bits, bool sgn) {
  uint64_t mask = mx_ew_mask(bits);
  if (sgn && mx_ew_sext(e, bits) < 0) {
    int64_t sb = mx_ew_sext(base, bits);
    if (sb != 1 && sb != -1) return 0;
    e = (0 - e) & mask;
  }
  uint64_t r = 1;
  while (e) {
    if (e & 1) r = (r * base) & mask;
    base = (base * base) & mask;
    e >>= 1;
  }
  return r & mask;
}

mx_status_t mx_ew_int_binary(const mx_op_t *op, const mx_tensor_t *a, const mx_tensor_t *b,
                             mx_tensor_t *out) {
  mx_elem_type_t et = a->type.elem;
  if (et == MX_ELEM_I1) return ew_bool_binary(op, a, b, out);
  if (!mx_elem_is_int(et) || out->type.elem != et) return mx_ew_unsupported(op, &a->type);
  switch (op->code) {
    case MX_OP_ADD:
    case MX_OP_SUBTRACT:
    case MX_OP_MULTIPLY:
    case MX_OP_DIVIDE:
    case MX_OP_REMAINDER:
    case MX_OP_MAXIMUM:
    case MX_OP_MINIMUM:
    case MX_OP_AND:
    case MX_OP_OR:
    case MX_OP_XOR:
    case MX_OP_POWER:
    case MX_OP_SHIFT_LEFT:
    case MX_OP_SHIFT_RIGHT_ARITHMETIC:
    case MX_OP_SHIFT_RIGHT_LOGICAL:
      break;
    default:
      return mx_ew_unsupported(op, &a->type);
  }
  int bits = mx_elem_bits(et);
  uint64_t mask = mx_ew_mask(bits);
  bool sgn = mx_elem_is_signed(et);
  uint64_t smin = 1ull << (bits - 1);  // raw pattern of the most negative signed value
  int64_t n = mx_type_numel(&out->type);
  for (int64_t i = 0; i < n; i++) {
    uint64_t x = mx_ew_load_bits(et, a->data, i), y = mx_ew_load_bits(et, b->data, i), r;
    switch (op->code) {
      case MX_OP_ADD:
        r = x + y;
        break;
      case MX_OP_SUBTRACT:
        r = x - y;
        break;
      case MX_OP_MULTIPLY:
        r = x * y;
        break;
      case MX_OP_DIVIDE:
        // x / 0 = all ones (-1 signed, max unsigned); INT_MIN / -1 = INT_MIN.
        if (y == 0) {
          r = mask;
        } else if (sgn) {
          if (x == smin && y == mask) {
            r = x;
          } else {
            r = (uint64_t)(mx_ew_sext(x, bits) / mx_ew_sext(y, bits));
          }
        } else {
          r = x / y;
        }
        break;
      case MX_OP_REMAINDER:
        // x % 0 = x; INT_MIN % -1 = 0; the sign follows the dividend (C semantics).
        if (y == 0) {
          r = x;
        } else if (sgn) {
          if (x == smin && y == mask) {
            r = 0;
          } else {
            r = (uint64_t)(mx_ew_sext(x, bits) % mx_ew_sext(y, bits));
          }
        } else {
          r = x % y;
        }
        break;
      case MX_OP_MAXIMUM:
        r = mx_ew_int_less(et, x, y) ? y : x;
        break;
      case MX_OP_MINIMUM:
        r = mx_ew_int_less(et, y, x) ? y : x;
        break;
      case MX_OP_AND:
        r = x & y;
        break;
      case MX_OP_OR:
        r = x | y;
        break;
      case MX_OP_XOR:
        r = x ^ y;
        break;
      case MX_OP_POWER:
        r = ew_ipow(x, y, bits, sgn);
        break;
      // Shift amounts are read as unsigned; amounts >= width shift every bit out (arithmetic
      // right shifts then fill with the sign).
      case MX_OP_SHIFT_LEFT:
        r = y >= (uint64_t)bits ? 0 : x << y;
        break;
      case MX_OP_SHIFT_RIGHT_LOGICAL:
        r = y >= (uint64_t)bits ? 0 : x >> y;
        break;
      default: {  // SHIFT_RIGHT_ARITHMETIC
        bool neg = sgn ? mx_ew_sext(x, bits) < 0 : ((x >> (bits - 1)) & 1) != 0;
        if (y >= (uint64_t)bits) {
          r = neg ? mask : 0;
        } else {
          r = x >> y;
          if (neg && y > 0) r |= mask & ~(mask >> y);
        }
        break;
      }
    }
    mx_ew_store_bits(et, out->data, i, r & mask);
  }
  return MX_OK;
}
