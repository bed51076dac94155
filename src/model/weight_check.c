// Load-time check that no floating-point weight holds NaN or +-Inf. A checkpoint with such
// values (a diverged training run, a broken conversion, bit rot) can only produce garbage or
// NaN logits much later; refusing it at load names the tensor instead. The scan reads every
// floating weight once: blocks are OR/AND-reduced without branches (vectorizable), and only a
// block that holds a non-finite value is searched element by element.
#include <math.h>
#include <string.h>

#include "model/checkpoint_internal.h"

enum { kBlock = 4096 };

// Index of the first element whose exponent bits (mask) are all set, or -1. bits: element
// width (8, 16, 32, 64); for F8E4M3FN the only non-finite pattern is S.1111.111 (mask 0x7F).
static int64_t find_all_ones(const uint8_t *p, int64_t n, int bits, uint64_t mask) {
  for (int64_t b = 0; b < n; b += kBlock) {
    int64_t e = b + kBlock < n ? b + kBlock : n;
    int hit = 0;
    switch (bits) {
      case 8:
        for (int64_t i = b; i < e; i++) hit |= (p[i] & mask) == mask;
        break;
      case 16:
        for (int64_t i = b; i < e; i++) {
          uint16_t v;
          memcpy(&v, p + 2 * i, 2);
          hit |= (v & mask) == mask;
        }
        break;
      case 32:
        for (int64_t i = b; i < e; i++) {
          uint32_t v;
          memcpy(&v, p + 4 * i, 4);
          hit |= (v & mask) == mask;
        }
        break;
      default:
        for (int64_t i = b; i < e; i++) {
          uint64_t v;
          memcpy(&v, p + 8 * i, 8);
          hit |= (v & mask) == mask;
        }
        break;
    }
    if (!hit) continue;
    for (int64_t i = b; i < e; i++) {
      uint64_t v = 0;
      memcpy(&v, p + (size_t)i * (size_t)(bits / 8), (size_t)(bits / 8));  // little-endian
      if ((v & mask) == mask) return i;
    }
  }
  return -1;
}

mx_status_t mx_ckpt_check_finite(const mx_checkpoint_t *ck) {
  for (int32_t k = 0; k < mx_checkpoint_count(ck); k++) {
    const mx_weight_t *w = mx_checkpoint_weight(ck, k);
    int bits;
    uint64_t mask;
    switch (w->dtype) {
      case MX_ELEM_F64:
        bits = 64, mask = 0x7FF0000000000000ULL;
        break;
      case MX_ELEM_F32:
        bits = 32, mask = 0x7F800000u;
        break;
      case MX_ELEM_F16:
        bits = 16, mask = 0x7C00u;
        break;
      case MX_ELEM_BF16:
        bits = 16, mask = 0x7F80u;
        break;
      case MX_ELEM_F8E5M2:
        bits = 8, mask = 0x7Cu;
        break;
      case MX_ELEM_F8E4M3FN:
        bits = 8, mask = 0x7Fu;
        break;
      default:
        continue;  // integer tensors have no non-finite values
    }
    int64_t n = (int64_t)(w->nbytes / (size_t)(bits / 8));
    int64_t i = find_all_ones((const uint8_t *)w->data, n, bits, mask);
    if (i < 0) continue;
    mx_tensor_t t = {.type = mx_type_tensor(w->dtype, 0, NULL),
                     .data = (uint8_t *)w->data + (size_t)i * (size_t)(bits / 8),
                     .nbytes = (size_t)(bits / 8)};
    double v = mx_tensor_get_f64(&t, 0);
    return mx_error_set(MX_ERR_PARSE,
                        "%s: tensor '%.200s' has a non-finite value (%s at element %lld)", w->file,
                        w->name,
                        isnan(v) ? "NaN"
                        : v > 0  ? "+Inf"
                                 : "-Inf",
                        (long long)i);
  }
  return MX_OK;
}
