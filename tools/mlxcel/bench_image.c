// `mlxcel bench --image PATH`: one rep of a vision-language model's one-image prompt, timed the
// way a user waits for it (issue 23 item 7): the image decoded and preprocessed, the vision
// tower, the prompt with the image's features at its tokens (M-RoPE positions for the Qwen
// towers), the first token; then the decode steps after it. cmd_bench.c holds the reps up to
// the machine's limits as it does for text.
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mlxcel/image.h"
#include "mlxcel/tokenizer.h"

// The words after the image (the prompt the acceptance uses).
static const char kText[] = "Describe the image.";

int mx_cli_bench_image_prompt(const char *cmd, const mx_model_t *m, const char *path,
                              mx_bench_image_t *out) {
  memset(out, 0, sizeof *out);
  out->path = path;
  const mx_vision_config_t *v = &m->config.vision;
  if (!v->present) {
    fprintf(stderr, "mlxcel %s: error: --image: model_type '%s' takes no images\n", cmd,
            m->config.model_type);
    return MX_EXIT_FAILED;
  }
  if (!m->tokenizer) {
    fprintf(stderr, "mlxcel %s: error: --image needs the model's tokenizer (tokenizer.json)\n",
            cmd);
    return MX_EXIT_FAILED;
  }
  // The image's size and token count before any session exists: the context is sized by them.
  mx_image_proc_t proc;
  mx_image_t img = {0};
  mx_pixels_t px = {0};
  mx_error_clear();
  mx_status_t st = mx_image_proc_load(m->dir, &proc);
  if (!st) st = mx_image_load(path, NULL, &img, NULL);
  if (!st) st = mx_image_preprocess(&proc, &img, &px);
  out->width = img.width;
  out->height = img.height;
  mx_image_free(&img);
  if (st) {
    mx_pixels_free(&px);
    return mx_cli_fail(cmd, mx_error_prefix(st, "--image %s", path));
  }
  bool molmo2 = v->kind == MX_VISION_MOLMO2;
  int32_t mm = v->spatial_merge_size * v->spatial_merge_size;
  out->image_tokens = molmo2                    ? 0
                      : mx_vision_fixed_size(v) ? v->tokens_per_image
                                                : (int32_t)(px.grid_thw[1] * px.grid_thw[2] / mm);
  out->grid[0] = (int32_t)px.grid_thw[1];
  out->grid[1] = (int32_t)px.grid_thw[2];
  out->crops = molmo2 ? (int32_t)px.shape[0] : 0;
  char *with = NULL;  // Gemma 3: the image expanded in the text, as its processor does
  if (mx_vision_blocks(v) && !molmo2) {
    int rc = mx_cli_image_text(cmd, m, 1, kText, &with);
    if (rc != MX_EXIT_OK) {
      mx_pixels_free(&px);
      return rc;
    }
  }
  const char *text = with ? with : kText;
  mx_encode_opts_t eo = {.add_special = true, .parse_special = true};
  st = mx_tokenizer_encode(m->tokenizer, text, strlen(text), &eo, &out->text_ids, &out->n_text);
  free(with);
  int rc = st ? mx_cli_fail(cmd, st) : MX_EXIT_OK;
  if (rc == MX_EXIT_OK && molmo2) {
    // Its prompt is the processor's expansion of the image's views: the context is sized by it.
    int32_t n = out->n_text, *ids = malloc(sizeof *ids * (size_t)(n > 0 ? n : 1));
    if (!ids) {
      rc = mx_cli_fail(cmd, mx_error_set(MX_ERR_NOMEM, "out of memory"));
    } else {
      memcpy(ids, out->text_ids, sizeof *ids * (size_t)n);
      rc = mx_cli_molmo2_prompt(cmd, m, &px, 1, &ids, &n);
      out->n_prompt = n;
      out->image_tokens = n - out->n_text;
      free(ids);
    }
  }
  mx_pixels_free(&px);
  return rc;
}

void mx_cli_bench_image_free(mx_bench_image_t *b) {
  free(b->text_ids);
  b->text_ids = NULL;
}

int mx_cli_bench_image_rep(const char *cmd, const mx_model_t *m, mx_session_t *s,
                           mx_bench_image_t *b, int64_t gen, mx_bench_image_rep_t *r) {
  memset(r, 0, sizeof *r);
  mx_session_reset(s);
  int32_t n = b->n_text, V = mx_session_vocab(s);
  int32_t *ids = malloc(sizeof *ids * (size_t)(n > 0 ? n : 1));
  if (!ids) {
    fprintf(stderr, "mlxcel %s: error: out of memory\n", cmd);
    return MX_EXIT_FAILED;
  }
  memcpy(ids, b->text_ids, sizeof *ids * (size_t)n);
  float *media = NULL;
  int32_t *positions = NULL;
  const char *paths[1] = {b->path};
  double t0 = mx_cli_now();
  int rc = mx_cli_prompt_images(cmd, m, s, paths, 1, &ids, &n, &media, &positions, &r->tower_s);
  double t1 = mx_cli_now();
  mx_status_t st = MX_OK;
  if (rc == MX_EXIT_OK) {
    mx_error_clear();
    st = positions ? mx_session_prefill_mrope(s, ids, media, positions, n)
                   : mx_session_prefill_media(s, ids, media, n);
  }
  int32_t next = st == MX_OK && rc == MX_EXIT_OK ? mx_cli_argmax(mx_session_logits(s), V) : 0;
  double t2 = mx_cli_now();
  for (int64_t g = 0; g < gen && st == MX_OK && rc == MX_EXIT_OK; g++) {
    st = mx_session_decode(s, next);
    if (st == MX_OK) next = mx_cli_argmax(mx_session_logits(s), V);
  }
  double t3 = mx_cli_now();
  free(ids);
  free(media);
  free(positions);
  if (rc != MX_EXIT_OK) return rc;
  if (st != MX_OK) return mx_cli_fail(cmd, st);
  r->prompt_tokens = n;
  r->ttft_s = t2 - t0;
  r->prefill_s = t2 - t1;
  r->decode_tok_s = (double)gen / (t3 - t2);
  return MX_EXIT_OK;
}
