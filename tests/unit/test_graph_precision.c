// Structure of the emitted StableHLO at each precision: the model is loaded at precision P
// (bf16 / f16, KV caches K = P or f32), its graphs are printed and parsed back (what `mlxcel
// emit` writes), and every op of every function is checked:
//   - each dot_general of a linear layer (in @prefill / @decode and in the mx.gated_mlp
//     decompositions) multiplies a `convert` (f32 -> P) of its activation by a P weight (a
//     function argument or a slice of one) and returns f32: P inputs, f32 accumulation;
//   - the attention decompositions' dot_generals are f32 (the caches are converted to f32);
//   - nothing else is demoted: a P / K value is only a weight argument, a gather or slice of
//     one, a convert feeding a linear layer's dot_general (or, K, a cache write), a cache
//     argument or its dynamic_update_slice; norm weights and biases are f32 arguments, every
//     composite returns f32, the logits are f32.
// At precision f32 (KV f32) the graphs hold no 16-bit float at all.
#include <stdlib.h>
#include <string.h>

#include "mlxcel/model.h"
#include "mx_test.h"

typedef struct ctx {
  const mx_func_t *f;
  mx_elem_type_t P, K;
  const char *label;
  int32_t *n_uses;  // per value
  const mx_op_t ***users;
  int32_t n_lowp_dots, n_f32_dots, bad;
} ctx_t;

static bool is_half(mx_elem_type_t et) { return et == MX_ELEM_BF16 || et == MX_ELEM_F16; }
static const mx_type_t *vt(const ctx_t *c, int32_t v) { return &c->f->values[v].type; }
static const mx_op_t *def(const ctx_t *c, int32_t v) { return c->f->values[v].def; }

#define BAD(...)                                         \
  do {                                                   \
    c->bad++;                                            \
    if (c->bad <= 5) {                                   \
      fprintf(stderr, "%s @%s: ", c->label, c->f->name); \
      fprintf(stderr, __VA_ARGS__);                      \
      fprintf(stderr, "\n");                             \
    }                                                    \
  } while (0)

static void count_uses(ctx_t *c, const mx_block_t *b, bool fill) {
  for (int32_t i = 0; i < b->n_ops; i++) {
    const mx_op_t *op = b->ops[i];
    for (int32_t j = 0; j < op->n_operands; j++) {
      int32_t v = op->operands[j];
      if (fill) c->users[v][c->n_uses[v]] = op;
      c->n_uses[v]++;
    }
    for (int32_t r = 0; r < op->n_regions; r++) count_uses(c, op->regions[r], fill);
  }
}

// A value that is a function argument of this function, or a slice of one (Phi-3's fused
// gate_up is sliced in the graph).
static bool weight_like(const ctx_t *c, int32_t v) {
  const mx_op_t *d = def(c, v);
  if (!d) return true;
  return d->code == MX_OP_SLICE && def(c, d->operands[0]) == NULL;
}

static bool only_users(const ctx_t *c, int32_t v, mx_opcode_t code, int32_t operand_index) {
  for (int32_t u = 0; u < c->n_uses[v]; u++) {
    const mx_op_t *op = c->users[v][u];
    if (op->code != code) return false;
    if (operand_index >= 0 && op->operands[operand_index] != v) return false;
  }
  return c->n_uses[v] > 0;
}

static void check_op(ctx_t *c, const mx_op_t *op, bool attention_fn) {
  switch (op->code) {
    case MX_OP_DOT_GENERAL: {
      const mx_type_t *l = vt(c, op->operands[0]), *r = vt(c, op->operands[1]),
                      *o = vt(c, op->results[0]);
      if (is_half(l->elem) || is_half(r->elem)) {
        c->n_lowp_dots++;
        const mx_op_t *ld = def(c, op->operands[0]);
        if (l->elem != c->P || r->elem != c->P || o->elem != MX_ELEM_F32)
          BAD("dot_general %s x %s -> %s", mx_elem_name(l->elem), mx_elem_name(r->elem),
              mx_elem_name(o->elem));
        if (!ld || ld->code != MX_OP_CONVERT || vt(c, ld->operands[0])->elem != MX_ELEM_F32)
          BAD("dot_general's lhs is not a convert of an f32 activation");
        if (!weight_like(c, op->operands[1])) BAD("dot_general's rhs is not a weight");
        if (attention_fn) BAD("attention dot_general in %s", mx_elem_name(l->elem));
      } else {
        c->n_f32_dots++;
        if (!attention_fn && is_half(c->P)) BAD("linear layer dot_general in f32");
      }
      return;
    }
    case MX_OP_CONVERT: {
      mx_elem_type_t from = vt(c, op->operands[0])->elem, to = vt(c, op->results[0])->elem;
      int32_t v = op->results[0];
      if (from == MX_ELEM_F32 && is_half(to)) {
        bool ok = (to == c->P && only_users(c, v, MX_OP_DOT_GENERAL, 0)) ||
                  (to == c->K && (only_users(c, v, MX_OP_DYNAMIC_UPDATE_SLICE, 1) ||
                                  only_users(c, v, MX_OP_SLICE, 0)));
        if (!ok)
          BAD("convert f32 -> %s feeding something else than a linear / cache write",
              mx_elem_name(to));
      } else if (is_half(from) && to == MX_ELEM_F32) {
        const mx_op_t *d = def(c, op->operands[0]);
        if (!(weight_like(c, op->operands[0]) || (d && d->code == MX_OP_GATHER)))
          BAD("convert %s -> f32 of a computed value", mx_elem_name(from));
      } else if (is_half(to)) {
        BAD("convert %s -> %s", mx_elem_name(from), mx_elem_name(to));
      }
      return;
    }
    default:
      break;
  }
  for (int32_t r = 0; r < op->n_results; r++) {
    const mx_type_t *t = vt(c, op->results[r]);
    if (t->kind != MX_TYPE_TENSOR || !is_half(t->elem)) continue;
    bool ok = false;
    if (op->code == MX_OP_GATHER || op->code == MX_OP_SLICE) {
      const mx_op_t *d = def(c, op->operands[0]);
      ok = d == NULL || (d->code == MX_OP_CONVERT && t->elem == c->K);
    } else if (op->code == MX_OP_DYNAMIC_UPDATE_SLICE) {
      ok = t->elem == c->K;
    }
    if (!ok) BAD("%s returns %s", mx_opcode_name(op->code), mx_elem_name(t->elem));
  }
  if (op->code == MX_OP_COMPOSITE && vt(c, op->results[0])->elem != MX_ELEM_F32)
    BAD("a composite returns %s", mx_elem_name(vt(c, op->results[0])->elem));
}

static void walk(ctx_t *c, const mx_block_t *b, bool attention_fn) {
  for (int32_t i = 0; i < b->n_ops; i++) {
    check_op(c, b->ops[i], attention_fn);
    for (int32_t r = 0; r < b->ops[i]->n_regions; r++) walk(c, b->ops[i]->regions[r], attention_fn);
  }
}

// Returns the number of violations; adds the function's dot counts to *lowp / *f32.
static int32_t check_func(const mx_func_t *f, mx_elem_type_t P, mx_elem_type_t K, const char *label,
                          int32_t *lowp, int32_t *f32) {
  ctx_t cc = {.f = f, .P = P, .K = K, .label = label}, *c = &cc;
  c->n_uses = calloc((size_t)f->n_values, sizeof *c->n_uses);
  c->users = calloc((size_t)f->n_values, sizeof *c->users);
  count_uses(c, f->body, false);
  for (int32_t v = 0; v < f->n_values; v++) {
    c->users[v] = calloc((size_t)(c->n_uses[v] + 1), sizeof **c->users);
    c->n_uses[v] = 0;
  }
  count_uses(c, f->body, true);
  bool attention_fn = strncmp(f->name, "mx_attention", 12) == 0;
  // Arguments: in the public functions, 1-D weights (norms, biases) are f32.
  for (int32_t i = 0; !f->is_private && i < f->body->n_args; i++) {
    mx_graph_arg_t info;
    const mx_type_t *t = vt(c, f->body->args[i]);
    if (mx_graph_arg_info(f, i, &info) != MX_OK) {
      BAD("argument %d has no role", i);
    } else if (info.role == MX_ARG_WEIGHT && t->rank == 1 && t->elem != MX_ELEM_F32) {
      BAD("1-D weight %s is %s", info.name, mx_elem_name(t->elem));
    } else if ((info.role == MX_ARG_K_CACHE || info.role == MX_ARG_V_CACHE) && t->elem != K) {
      BAD("cache %s is %s", info.name, mx_elem_name(t->elem));
    }
  }
  if (!f->is_private && f->result_types[0].elem != MX_ELEM_F32) BAD("logits are not f32");
  walk(c, f->body, attention_fn);
  for (int32_t v = 0; v < f->n_values; v++) free(c->users[v]);
  free(c->users);
  free(c->n_uses);
  *lowp += c->n_lowp_dots;
  *f32 += c->n_f32_dots;
  return c->bad;
}

static void check_model(const char *dir, const char *name, mx_elem_type_t P, mx_elem_type_t K) {
  mx_model_load_opts_t lo = {.tokenizer_optional = true, .precision = P, .kv_dtype = K};
  mx_model_t *model = NULL;
  mx_status_t st = mx_model_load_ex(dir, &lo, &model);
  CHECK_MSG(st == MX_OK, "%s: %s", dir, mx_error_message());
  if (st != MX_OK) return;
  mx_graph_opts_t go = {.batch = 1, .ctx = 32, .prefill_len = 8, .kv_dtype = model->kv_dtype};
  mx_module_t *m = NULL, *back = NULL;
  CHECK_OK(mx_model_build_graph(&model->config, model->ckpt, &go, &m));
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  if (m) CHECK_OK(mx_hlo_print(m, NULL, &sb));
  if (sb.data) CHECK_OK(mx_hlo_parse(sb.data, sb.len, NULL, &back));
  if (back) CHECK_OK(mx_hlo_verify_module(back));
  char label[128];
  snprintf(label, sizeof label, "%s precision %s kv %s", name, mx_elem_name(P), mx_elem_name(K));
  int32_t bad = 0, lowp = 0, f32 = 0, attn = 0;
  for (int32_t i = 0; back && i < back->n_funcs; i++) {
    const mx_func_t *f = back->funcs[i];
    int32_t l0 = lowp, f0 = f32;
    bad += check_func(f, P, K, label, &lowp, &f32);
    if (strncmp(f->name, "mx_attention", 12) == 0) attn += f32 - f0;
    (void)l0;
  }
  bool text_half = sb.data && (strstr(sb.data, "xbf16>") || strstr(sb.data, "xf16>"));
  if (is_half(P)) {
    CHECK_MSG(bad == 0, "%s: %d violations", label, bad);
    CHECK_MSG(lowp > 0 && f32 == attn,
              "%s: %d low-precision dot_generals, %d f32 ones (%d in "
              "attention)",
              label, lowp, f32, attn);
  } else {
    CHECK_MSG(bad == 0 && lowp == 0, "%s: %d violations, %d low-precision dots", label, bad, lowp);
    CHECK_MSG(is_half(K) == text_half, "%s: 16-bit types %s in the text", label,
              text_half ? "present" : "absent");
  }
  printf(
      "%s: %d functions; dot_generals: %d with %s inputs and f32 results, %d f32 (%d in "
      "attention)\n",
      label, back ? back->n_funcs : 0, lowp, mx_elem_name(P), f32, attn);
  mx_strbuf_free(&sb);
  mx_module_destroy(back);
  mx_module_destroy(m);
  mx_model_free(model);
}

// The checker itself finds each kind of demotion (a checker that cannot fail proves nothing).
static void test_negative(void) {
  static const char *cases[] = {
      // an elementwise op in bf16
      "func.func @main(%w: tensor<4x8xbf16>, %x: tensor<2x8xf32>) -> tensor<2x8xf32> {\n"
      "  %a = stablehlo.convert %x : (tensor<2x8xf32>) -> tensor<2x8xbf16>\n"
      "  %b = stablehlo.add %a, %a : tensor<2x8xbf16>\n"
      "  %c = stablehlo.convert %b : (tensor<2x8xbf16>) -> tensor<2x8xf32>\n"
      "  return %c : tensor<2x8xf32>\n}\n",
      // a dot_general with a bf16 result
      "func.func @main(%w: tensor<4x8xbf16>, %x: tensor<2x8xf32>) -> tensor<2x4xbf16> {\n"
      "  %a = stablehlo.convert %x : (tensor<2x8xf32>) -> tensor<2x8xbf16>\n"
      "  %y = stablehlo.dot_general %a, %w, contracting_dims = [1] x [1] : (tensor<2x8xbf16>, "
      "tensor<4x8xbf16>) -> tensor<2x4xbf16>\n"
      "  return %y : tensor<2x4xbf16>\n}\n",
      // a linear layer left in f32 (the weight converted up instead of the input down)
      "func.func @main(%w: tensor<4x8xbf16>, %x: tensor<2x8xf32>) -> tensor<2x4xf32> {\n"
      "  %wf = stablehlo.convert %w : (tensor<4x8xbf16>) -> tensor<4x8xf32>\n"
      "  %y = stablehlo.dot_general %x, %wf, contracting_dims = [1] x [1] : (tensor<2x8xf32>, "
      "tensor<4x8xf32>) -> tensor<2x4xf32>\n"
      "  return %y : tensor<2x4xf32>\n}\n",
      // a dot_general whose bf16 lhs is not a convert of an f32 activation (a bf16 weight)
      "func.func @main(%w: tensor<4x8xbf16>, %v: tensor<2x8xbf16>) -> tensor<2x4xf32> {\n"
      "  %y = stablehlo.dot_general %v, %w, contracting_dims = [1] x [1] : (tensor<2x8xbf16>, "
      "tensor<4x8xbf16>) -> tensor<2x4xf32>\n"
      "  return %y : tensor<2x4xf32>\n}\n",
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    mx_module_t *m = NULL;
    CHECK_OK(mx_hlo_parse(cases[i], strlen(cases[i]), NULL, &m));
    if (!m) continue;
    mx_func_t *f = mx_module_find_func(m, "main");
    f->is_private = true;  // no argument roles to check in a hand-written function
    int32_t lowp = 0, f32 = 0;
    char label[32];
    snprintf(label, sizeof label, "(expected violation %zu)", i);
    CHECK_MSG(check_func(f, MX_ELEM_BF16, MX_ELEM_BF16, label, &lowp, &f32) > 0,
              "case %zu: the demotion was not found", i);
    mx_module_destroy(m);
  }
}

int main(void) {
  test_negative();
  const char *data = getenv("MX_TEST_DATA");
  char dir[4096];
  if (data) {
    snprintf(dir, sizeof dir, "%s/../../models/stories260K", data);
    check_model(dir, "stories260K", MX_ELEM_BF16, MX_ELEM_BF16);
    check_model(dir, "stories260K", MX_ELEM_F16, MX_ELEM_F16);
    check_model(dir, "stories260K", MX_ELEM_BF16, MX_ELEM_F32);
    check_model(dir, "stories260K", MX_ELEM_F32, MX_ELEM_F32);
    check_model(dir, "stories260K", MX_ELEM_F32, MX_ELEM_BF16);
  } else {
    mx_test_skip("stories260K: MX_TEST_DATA is not set");
  }
  const char *shared = mx_test_shared("fixtures");
  static const char *archs[] = {"llama", "mistral", "qwen2",  "qwen3",
                                "gemma", "gemma2",  "gemma3", "phi3"};
  for (size_t i = 0; shared && i < sizeof archs / sizeof archs[0]; i++) {
    snprintf(dir, sizeof dir, "%s/fixtures/%s", shared, archs[i]);
    check_model(dir, archs[i], MX_ELEM_BF16, MX_ELEM_BF16);
    check_model(dir, archs[i], MX_ELEM_F16, MX_ELEM_F32);
  }
  return mx_test_finish();
}
