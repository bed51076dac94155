// Load-time check that no floating-point weight holds NaN or +-Inf. A checkpoint with such
// values (a diverged training run, a broken conversion, bit rot) can only produce garbage or
// NaN logits much later; refusing it at load names the tensor instead. The scan reads every
// floating weight once, 64-bit words at a time without branches, and searches element by
// element only in a block that holds a non-finite value.
// The scan is the first touch of the mmapped file: each slice's pages are given back once read,
// or every weight would stay resident beside the copies made later (packed, converted), and the
// tables only gathered from (embeddings, Gemma 3n's per-layer inputs) would stay resident whole
// though a step reads a few rows of them.
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "model/checkpoint_internal.h"

enum { kBlock = 4096 };
enum { kSlice = 16 << 20 };  // bytes scanned, then released (a multiple of every element size)

// Whether any `bits`-wide lane of the 64-bit word v has all the bits of `mask` set (mask
// replicated per lane in mrep, lane low bits in ones, lane high bits in highs): lanes of
// x = (v & mrep) ^ mrep are zero exactly there, and (x - ones) & ~x & highs is non-zero exactly
// when some lane of x is zero (the classic SWAR zero-lane test).
static inline bool any_lane(uint64_t v, uint64_t mrep, uint64_t ones, uint64_t highs) {
  uint64_t x = (v & mrep) ^ mrep;
  return ((x - ones) & ~x & highs) != 0;
}

// Index of the first element whose exponent bits (mask) are all set, or -1. bits: element
// width (8, 16, 32, 64); for F8E4M3FN the only non-finite pattern is S.1111.111 (mask 0x7F).
static int64_t find_all_ones(const uint8_t *p, int64_t n, int bits, uint64_t mask) {
  uint64_t mrep = 0, ones = 0, highs = 0;
  for (int l = 0; l < 64; l += bits) {
    mrep |= mask << l;
    ones |= (uint64_t)1 << l;
    highs |= (uint64_t)1 << (l + bits - 1);
  }
  size_t es = (size_t)bits / 8, nbytes = (size_t)n * es;
  for (size_t b = 0; b < nbytes; b += (size_t)kBlock * 8) {
    size_t e = b + (size_t)kBlock * 8 < nbytes ? b + (size_t)kBlock * 8 : nbytes;
    bool hit = false;
    size_t i = b;
    for (; i + 8 <= e; i += 8) {  // whole words, branch-free: the compiler vectorizes this
      uint64_t v;
      memcpy(&v, p + i, 8);
      hit |= any_lane(v, mrep, ones, highs);
    }
    if (i < e) hit = true;  // a partial last word: look at its elements below
    if (!hit) continue;
    for (size_t j = b; j < e; j += es) {
      uint64_t v = 0;
      memcpy(&v, p + j, es);  // little-endian
      if ((v & mask) == mask) return (int64_t)(j / es);
    }
  }
  return -1;
}

// The element width of a floating-point dtype and the mask of its exponent bits (all ones: NaN
// or Inf); 0 for the other types, which have no non-finite values.
static int float_bits(mx_elem_type_t dt, uint64_t *mask) {
  switch (dt) {
    case MX_ELEM_F64:
      *mask = 0x7FF0000000000000ULL;
      return 64;
    case MX_ELEM_F32:
      *mask = 0x7F800000u;
      return 32;
    case MX_ELEM_F16:
      *mask = 0x7C00u;
      return 16;
    case MX_ELEM_BF16:
      *mask = 0x7F80u;
      return 16;
    case MX_ELEM_F8E5M2:
      *mask = 0x7Cu;
      return 8;
    case MX_ELEM_F8E4M3FN:
      *mask = 0x7Fu;
      return 8;
    default:
      return 0;
  }
}

mx_status_t mx_ckpt_check_finite(const mx_checkpoint_t *ck, const mx_progress_t *progress) {
  uint64_t total = 0, done = 0, mask;
  for (int32_t k = 0; k < mx_checkpoint_count(ck); k++) {
    const mx_weight_t *w = mx_checkpoint_weight(ck, k);
    if (float_bits(w->dtype, &mask)) total += w->nbytes;
  }
  mx_progress_report(progress, "mapping", 0, total);
  for (int32_t k = 0; k < mx_checkpoint_count(ck); k++) {
    const mx_weight_t *w = mx_checkpoint_weight(ck, k);
    int bits = float_bits(w->dtype, &mask);
    if (!bits) continue;
    size_t es = (size_t)(bits / 8);
    int64_t i = -1;
    for (size_t off = 0; off < w->nbytes && i < 0; off += kSlice) {
      size_t len = w->nbytes - off < kSlice ? w->nbytes - off : kSlice;
      const uint8_t *p = (const uint8_t *)w->data + off;
      i = find_all_ones(p, (int64_t)(len / es), bits, mask);
      if (i >= 0) i += (int64_t)(off / es);
      mx_checkpoint_release(ck, p, len);  // a no-op for tensors the loader already copied
    }
    done += w->nbytes;
    mx_progress_report(progress, "mapping", done, total);
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
