// Human-readable, MLIR-like rendering of interpreter values, and JSON string escaping.
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

// Raw little-endian storage bits of element i (elements are at most 8 bytes; complex handled
// separately).
static uint64_t elem_bits(const uint8_t *p, size_t size) {
  switch (size) {
    case 1:
      return p[0];
    case 2: {
      uint16_t v;
      memcpy(&v, p, 2);
      return v;
    }
    case 4: {
      uint32_t v;
      memcpy(&v, p, 4);
      return v;
    }
    case 8: {
      uint64_t v;
      memcpy(&v, p, 8);
      return v;
    }
    default:
      return 0;
  }
}

static int64_t sign_extend(uint64_t bits, size_t size) {
  switch (size) {
    case 1:
      return (int8_t)bits;
    case 2:
      return (int16_t)bits;
    case 4:
      return (int32_t)bits;
    default:
      return (int64_t)bits;
  }
}

// MLIR float literals need a '.' in the mantissa ("1.0e+02", never "1e+02" or "1").
static void append_float_literal(mx_strbuf_t *sb, const char *txt) {
  const char *e = strpbrk(txt, "eE");
  size_t mant = e ? (size_t)(e - txt) : strlen(txt);
  mx_strbuf_append(sb, txt, mant);
  if (memchr(txt, '.', mant) == NULL) mx_strbuf_puts(sb, ".0");
  if (e) mx_strbuf_puts(sb, e);
}

// Shortest decimal that reads back to exactly the same bit pattern; NaN and infinities are
// written as hex bit patterns, as MLIR does inside dense<...>.
static void append_float(mx_strbuf_t *sb, mx_elem_type_t et, uint64_t bits) {
  double v;
  if (et == MX_ELEM_F32) {
    uint32_t b32 = (uint32_t)bits;
    float f;
    memcpy(&f, &b32, 4);
    v = f;
  } else if (et == MX_ELEM_F64) {
    memcpy(&v, &bits, 8);
  } else {
    v = mx_float_decode(et, bits);
  }
  if (!isfinite(v)) {
    int digits = (mx_elem_bits(et) + 3) / 4;
    mx_strbuf_printf(sb, "0x%0*" PRIX64, digits, bits);
    return;
  }
  char buf[64];
  for (int p = 1; p <= 17; p++) {
    snprintf(buf, sizeof buf, "%.*g", p, v);
    double back = strtod(buf, NULL);
    bool same;
    if (et == MX_ELEM_F32) {
      float fb = (float)back;
      uint32_t b32;
      memcpy(&b32, &fb, 4);
      same = b32 == (uint32_t)bits;
    } else if (et == MX_ELEM_F64) {
      uint64_t b64;
      memcpy(&b64, &back, 8);
      same = b64 == bits;
    } else {
      same = mx_float_encode(et, back) == bits;
    }
    if (same) break;
  }
  append_float_literal(sb, buf);
}

static void append_elem(mx_strbuf_t *sb, mx_elem_type_t et, const uint8_t *p) {
  size_t size = mx_elem_size(et);
  if (mx_elem_is_complex(et)) {
    mx_elem_type_t part = et == MX_ELEM_C64 ? MX_ELEM_F32 : MX_ELEM_F64;
    size_t half = size / 2;
    mx_strbuf_puts(sb, "(");
    append_float(sb, part, elem_bits(p, half));
    mx_strbuf_puts(sb, ", ");
    append_float(sb, part, elem_bits(p + half, half));
    mx_strbuf_puts(sb, ")");
  } else if (mx_elem_is_bool(et)) {
    mx_strbuf_puts(sb, p[0] ? "true" : "false");
  } else if (mx_elem_is_float(et)) {
    append_float(sb, et, elem_bits(p, size));
  } else if (mx_elem_is_signed(et)) {
    mx_strbuf_printf(sb, "%" PRId64, sign_extend(elem_bits(p, size), size));
  } else if (mx_elem_is_unsigned(et)) {
    mx_strbuf_printf(sb, "%" PRIu64, elem_bits(p, size));
  } else {
    mx_strbuf_puts(sb, "?");
  }
}

// Prints dims[axis..] of the elements starting at *index, as nested [...] lists.
static void append_nested(mx_strbuf_t *sb, const mx_tensor_t *t, int32_t axis, int64_t *index) {
  size_t size = mx_elem_size(t->type.elem);
  if (axis == t->type.rank) {
    append_elem(sb, t->type.elem, t->data + (size_t)*index * size);
    (*index)++;
    return;
  }
  mx_strbuf_puts(sb, "[");
  for (int64_t i = 0; i < t->type.dims[axis]; i++) {
    if (i) mx_strbuf_puts(sb, ", ");
    append_nested(sb, t, axis + 1, index);
  }
  mx_strbuf_puts(sb, "]");
}

static bool is_splat(const mx_tensor_t *t, int64_t numel) {
  size_t size = mx_elem_size(t->type.elem);
  for (int64_t i = 1; i < numel; i++) {
    if (memcmp(t->data, t->data + (size_t)i * size, size) != 0) return false;
  }
  return true;
}

void mx_cli_format_tensor(const mx_tensor_t *t, mx_strbuf_t *sb) {
  if (t->type.kind == MX_TYPE_TOKEN) {
    mx_strbuf_puts(sb, "!stablehlo.token");
    return;
  }
  if (t->type.kind == MX_TYPE_TUPLE) {
    mx_strbuf_puts(sb, "(");
    for (int32_t i = 0; i < t->n_tuple && t->tuple; i++) {
      if (i) mx_strbuf_puts(sb, ", ");
      mx_cli_format_tensor(&t->tuple[i], sb);
    }
    mx_strbuf_puts(sb, ")");
    return;
  }
  int64_t numel = mx_type_numel(&t->type);
  size_t need = (size_t)numel * mx_elem_size(t->type.elem);
  mx_strbuf_puts(sb, "dense<");
  if (t->type.elem == MX_ELEM_INVALID || t->type.rank < 0 || t->type.rank > MX_MAX_RANK ||
      (numel > 0 && (t->data == NULL || t->nbytes < need))) {
    mx_strbuf_puts(sb, "<invalid value>");
  } else if (numel == 0) {
    // MLIR spells an empty tensor `dense<>`.
  } else if (t->type.rank == 0 || is_splat(t, numel)) {
    append_elem(sb, t->type.elem, t->data);
  } else {
    int64_t index = 0;
    append_nested(sb, t, 0, &index);
  }
  mx_strbuf_puts(sb, "> : ");
  mx_type_print(&t->type, sb);
}

// Length of the well-formed UTF-8 sequence at p (1..4) within the `avail` bytes left, or 0 if
// it is not one.
static int utf8_seq_len(const unsigned char *p, size_t avail) {
  int n;
  unsigned cp;
  if (p[0] < 0xC2 || p[0] > 0xF4) return 0;
  if (p[0] < 0xE0) {
    n = 2;
    cp = p[0] & 0x1Fu;
  } else if (p[0] < 0xF0) {
    n = 3;
    cp = p[0] & 0x0Fu;
  } else {
    n = 4;
    cp = p[0] & 0x07u;
  }
  if ((size_t)n > avail) return 0;
  for (int i = 1; i < n; i++) {
    if ((p[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (p[i] & 0x3Fu);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF))) return 0;
  if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
  return n;
}

void mx_cli_json_string(mx_strbuf_t *sb, const char *s) {
  mx_cli_json_string_n(sb, s ? s : "", s ? strlen(s) : 0);
}

void mx_cli_json_string_n(mx_strbuf_t *sb, const char *s, size_t len) {
  mx_strbuf_puts(sb, "\"");
  const unsigned char *p = (const unsigned char *)s, *end = p + len;
  while (p < end) {
    unsigned char c = *p;
    if (c == '"') {
      mx_strbuf_puts(sb, "\\\"");
    } else if (c == '\\') {
      mx_strbuf_puts(sb, "\\\\");
    } else if (c == '\n') {
      mx_strbuf_puts(sb, "\\n");
    } else if (c == '\t') {
      mx_strbuf_puts(sb, "\\t");
    } else if (c < 0x20 || c == 0x7F) {
      mx_strbuf_printf(sb, "\\u%04x", c);
    } else if (c >= 0x80) {
      // Messages may quote bytes of a malformed input file, and a token may be a lone byte of
      // a UTF-8 character: keep the JSON valid UTF-8.
      int n = utf8_seq_len(p, (size_t)(end - p));
      if (n == 0) {
        mx_strbuf_puts(sb, "\\ufffd");
        n = 1;
      } else {
        mx_strbuf_append(sb, (const char *)p, (size_t)n);
      }
      p += n;
      continue;
    } else {
      mx_strbuf_append(sb, (const char *)p, 1);
    }
    p++;
  }
  mx_strbuf_puts(sb, "\"");
}
