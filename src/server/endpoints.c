// POST /v1/completions and /v1/chat/completions: request -> prompt ids -> scheduler job ->
// one JSON reply, or a Server-Sent Events stream of chunks ending with `data: [DONE]`.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mlxcel/tokenizer.h"
#include "server/server_internal.h"
#include "server/tools.h"

// How long a waiting handler sleeps before it checks whether its client is still there.
enum { WAIT_SLICE_MS = 50 };

static enum MHD_Result bad(struct MHD_Connection *c, mx_server_conn_t *cc, int status,
                           const char *param, const char *code, const char *msg) {
  mx_server_error_t e;
  mx_server_error_set(&e, status, status >= 500 ? "server_error" : "invalid_request_error", param,
                      code, "%s", msg);
  return mx_server_reply_error(c, cc, &e);
}

// A prompt of `bytes` bytes has at least bytes / (4 * max_piece_bytes) tokens: a token covers
// at most its longest vocabulary piece's bytes of normalized text (byte-level and SentencePiece
// pieces are never shorter than the input they cover), and normalization shrinks text at most
// 4 times (a 4-byte character becoming one byte). A prompt over the context by that bound is
// refused before tokenizing: tokenizing 1 MB costs ~27 MB and a second of CPU for an answer
// known in advance.
static bool fits_context(const mx_server_t *srv, size_t bytes) {
  uint64_t ctx = (uint64_t)mx_server_sched_ctx(srv->sched);
  return bytes / 4 / (uint64_t)srv->max_piece_bytes < ctx;
}

static mx_status_t too_long(const mx_server_t *srv, size_t bytes, bool *over) {
  *over = true;
  return mx_error_set(
      MX_ERR_INVALID_ARG,
      "the prompt is %zu bytes, more than this model's context of %lld tokens can hold "
      "(a token covers at most %d bytes here): shorten the prompt",
      bytes, (long long)mx_server_sched_ctx(srv->sched), 4 * srv->max_piece_bytes);
}

// Molmo2's prompt (ADR 0023): the BOS Molmo2Processor puts first where the template wrote
// none, and each <|image|> of the template's output expanded by its image's image_grids row
// (grids: MX_SERVER_MOLMO2_GRID ints per image, mx_server_images_pixels).
static mx_status_t molmo2_ids(mx_server_t *srv, int32_t n_images, const int32_t *grids,
                              int32_t **ids, int32_t *n) {
  mx_molmo2_prompt_t mp;
  mx_status_t st = mx_molmo2_prompt_load(srv->model, &mp);
  int32_t bos = srv->model->config.bos_token_id;
  bool add = !st && bos >= 0 && (*n == 0 || (*ids)[0] != bos);
  int64_t(*g)[4] = st ? NULL : malloc(sizeof *g * (size_t)n_images);
  int32_t *with = st ? NULL : malloc(sizeof *with * (size_t)(*n + 1));
  if (!st && (!g || !with)) st = mx_error_set(MX_ERR_NOMEM, "out of memory");
  int32_t *out = NULL, n_out = 0;
  if (!st) {
    for (int32_t i = 0; i < n_images; i++)
      for (int k = 0; k < 4; k++) g[i][k] = grids[(size_t)i * MX_SERVER_MOLMO2_GRID + 3 + k];
    if (add) with[0] = bos;
    memcpy(with + (add ? 1 : 0), *ids, sizeof *with * (size_t)*n);
    st = mx_molmo2_expand_prompt(&mp, with, *n + (add ? 1 : 0), (const int64_t(*)[4])g, n_images,
                                 &out, &n_out);
    if (st == MX_ERR_INVALID_ARG) st = mx_error_prefix(st, "the chat template's output");
  }
  free(g);
  free(with);
  if (st) return st;
  free(*ids);
  *ids = out;
  *n = n_out;
  return MX_OK;
}

// Chat messages through the model's template (generation prompt on), encoded as
// apply_chat_template(tokenize=True) does (no post-processor, special tokens matched), except
// that special-token text from the messages is plain text.
// grids: the images' patch grids (the Qwen towers, whose runs follow them), else NULL.
static mx_status_t chat_ids(mx_server_t *srv, const mx_server_request_t *r, const int32_t *grids,
                            int32_t **ids, int32_t *n, bool *over) {
  mx_chat_message_t *msgs = calloc((size_t)r->n_messages + 1, sizeof *msgs);
  if (!msgs) return mx_error_set(MX_ERR_NOMEM, "out of memory");
  for (int32_t i = 0; i < r->n_messages; i++)
    msgs[i] = (mx_chat_message_t){r->roles[i], r->contents[i]};
  mx_chat_render_opts_t ro = {.add_generation_prompt = true};
  mx_chat_opts_from_tokenizer(srv->tok, &ro);
  // The template's `tools`: the list as the client sent it (transformers passes the same).
  mx_strbuf_t extra;
  mx_strbuf_init(&extra);
  if (r->tools_json) {
    mx_strbuf_printf(&extra, "{\"tools\":%s}", r->tools_json);
    ro.extra_json = extra.data;
  }
  char *text = NULL;
  size_t len = 0;
  mx_text_range_t *plain = NULL;
  int32_t n_plain = 0;
  char **with_parts = NULL;  // images for a template that iterates parts (images.c)
  mx_status_t st = extra.oom ? mx_error_set(MX_ERR_NOMEM, "out of memory") : MX_OK;
  if (!st) st = mx_server_images_fields(srv, r, &with_parts);
  if (!st)
    st = mx_chat_render_guarded_fields(srv->tmpl, srv->guard, msgs,
                                       (const char *const *)(with_parts ? with_parts : r->fields),
                                       r->n_messages, &ro, &text, &len, &plain, &n_plain);
  mx_server_images_fields_free(with_parts, r->n_messages);
  mx_strbuf_free(&extra);
  free(msgs);
  if (st == MX_ERR_RUNTIME || st == MX_ERR_PARSE) st = mx_error_prefix(st, "chat template");
  // A template that takes text: the image token's text and a line break where each image was.
  if (!st && r->n_images > 0 && !srv->tmpl_parts)
    st = mx_chat_replace_marks(&text, &len, plain, n_plain, srv->image_with, srv->image_with_len);
  if (!st && r->n_audio > 0) {  // Gemma 3n: each recording's mark becomes its processor's sequence
    char *seq = NULL;
    size_t sl = 0;
    st = mx_chat_audio_sequence(srv->tok, &srv->model->config.audio, &seq, &sl);
    if (!st) st = mx_chat_replace_audio_marks(&text, &len, plain, n_plain, seq, sl);
    free(seq);
  }
  if (!st && r->n_images > 0) {  // Gemma 3's processor expands its placeholders in the text
    st = mx_chat_expand_images(srv->tok, &srv->model->config.vision, r->n_images, &text, &len,
                               plain, n_plain);
    if (st == MX_ERR_INVALID_ARG) st = mx_error_prefix(st, "the chat template's output");
  }
  if (!st && !fits_context(srv, len)) st = too_long(srv, len, over);
  if (!st) {
    mx_encode_opts_t eo = {
        .add_special = false, .parse_special = true, .plain = plain, .n_plain = n_plain};
    st = mx_tokenizer_encode(srv->tok, text, len, &eo, ids, n);
  }
  free(plain);
  free(text);
  // Molmo2: Molmo2Processor's BOS, then each <|image|> expanded to its image's views.
  if (!st && r->n_images > 0 && srv->model->config.vision.kind == MX_VISION_MOLMO2)
    return molmo2_ids(srv, r->n_images, grids, ids, n);
  // Each image token becomes the model's tokens per image (Gemma 3's were, in the text).
  const mx_vision_config_t *v = &srv->model->config.vision;
  int32_t *counts = NULL;  // each Qwen image's merged units
  if (!st && grids && !(counts = malloc(sizeof *counts * (size_t)r->n_images)))
    st = mx_error_set(MX_ERR_NOMEM, "out of memory");
  int32_t mm = v->spatial_merge_size * v->spatial_merge_size;
  for (int32_t i = 0; counts && i < r->n_images; i++)
    counts[i] = grids[2 * i] * grids[2 * i + 1] / mm;
  if (!st && r->n_images > 0 && !mx_vision_text_expanded(v)) {
    int32_t *e = NULL, ne = 0;
    st = mx_vision_expand_prompt(&srv->model->config, *ids, *n, r->n_images, counts, &e, &ne);
    if (st == MX_ERR_INVALID_ARG) st = mx_error_prefix(st, "the chat template's output");
    free(*ids);
    *ids = e;
    *n = ne;
  }
  free(counts);
  return st;
}

// *over is set when the prompt cannot fit the context (known before tokenizing).
static mx_status_t prompt_ids(mx_server_t *srv, const mx_server_request_t *r, const int32_t *grids,
                              int32_t **ids, int32_t *n, bool *over) {
  *ids = NULL;
  *n = 0;
  *over = false;
  if (r->kind == MX_SERVER_CHAT) return chat_ids(srv, r, grids, ids, n, over);
  if (r->prompt_ids) {
    *ids = malloc((size_t)r->n_prompt_ids * sizeof **ids);
    if (!*ids) return mx_error_set(MX_ERR_NOMEM, "out of memory");
    memcpy(*ids, r->prompt_ids, (size_t)r->n_prompt_ids * sizeof **ids);
    *n = r->n_prompt_ids;
    return MX_OK;
  }
  if (!fits_context(srv, r->prompt_len)) return too_long(srv, r->prompt_len, over);
  // Completions keep transformers' default (special-token text in the prompt is parsed) unless
  // the request or the server (--split-special-tokens) says to encode it as text.
  bool split = r->has_split_special ? r->split_special : srv->split_special;
  mx_encode_opts_t eo = {.add_special = true, .parse_special = !split};
  return mx_tokenizer_encode(srv->tok, r->prompt, r->prompt_len, &eo, ids, n);
}

// A fresh seed for requests that give none.
static uint64_t fresh_seed(mx_server_t *srv) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t x = (uint64_t)ts.tv_sec * 1000000007ull ^ (uint64_t)ts.tv_nsec ^
               (atomic_fetch_add(&srv->next_id, 1) * 0x9E3779B97F4A7C15ull) ^
               ((uint64_t)getpid() << 32);
  return x;
}

// Whether the text ended by itself (EOS, a stop string, a finished document), so that calls in
// it are whole; a cut by max_tokens or the context is not parsed for calls.
static mx_server_usage_t usage_of(const mx_server_job_state_t *st) {
  return (mx_server_usage_t){.prompt = st->n_prompt,
                             .cached = st->n_cached,
                             .completion = st->n_generated,
                             .spec = st->speculative,
                             .spec_steps = st->spec_steps,
                             .spec_drafted = st->spec_drafted,
                             .spec_accepted = st->spec_accepted};
}

static bool finished_whole(mx_finish_reason_t f) {
  return f == MX_FINISH_EOS || f == MX_FINISH_STOP;
}

// The vocabulary index for constrained decoding, built on first use.
static mx_status_t server_gvocab(mx_server_t *srv, const mx_gvocab_t **out) {
  pthread_mutex_lock(&srv->gvocab_mu);
  mx_status_t st = srv->gvocab ? MX_OK : mx_gvocab_create(srv->tok, &srv->gvocab);
  *out = srv->gvocab;
  pthread_mutex_unlock(&srv->gvocab_mu);
  return st;
}

// The grammar a chat request's output is constrained to (NULL for free text): one call in the
// tool-call format when tool_choice is required or names a function, else response_format's.
// *param is the request field an error is about.
static mx_status_t request_grammar(const mx_server_request_t *r, mx_grammar_t **out,
                                   const char **param) {
  *out = NULL;
  if (r->n_tools > 0 &&
      (r->tool_choice == MX_SERVER_TOOLS_REQUIRED || r->tool_choice == MX_SERVER_TOOLS_NAMED)) {
    *param = "tools";
    char *schema = NULL;
    mx_status_t st = mx_server_tool_schema(r, &schema);
    if (!st)
      st = mx_grammar_from_schema_wrapped(schema, strlen(schema), MX_TOOL_CALL_PREFIX,
                                          MX_TOOL_CALL_SUFFIX, out);
    free(schema);
    if (st && st != MX_ERR_NOMEM) st = mx_error_prefix(st, "a tool's parameters");
    return st;
  }
  *param = "response_format";
  if (r->format == MX_SERVER_FORMAT_JSON_OBJECT) return mx_grammar_json_object(out);
  if (r->format == MX_SERVER_FORMAT_JSON_SCHEMA) {
    mx_status_t st = mx_grammar_from_schema(r->format_schema, strlen(r->format_schema), out);
    if (st && st != MX_ERR_NOMEM) st = mx_error_prefix(st, "response_format.json_schema");
    return st;
  }
  return MX_OK;
}

// ---- Streaming ----

typedef struct sse {
  mx_server_t *srv;
  struct MHD_Connection *c;
  mx_server_conn_t *cc;
  mx_server_job_t *job;
  mx_server_reply_head_t head;
  char id[48];
  bool include_usage;
  bool started, finished;
  // Tools in effect (owned; NULL otherwise): the text is held until the end, then sent as
  // tool-call deltas when it holds calls, else as one content delta.
  mx_server_request_t *tools;
  mx_strbuf_t held;
  mx_strbuf_t text;  // new text taken from the job
  mx_strbuf_t pend;  // event bytes not yet handed to MHD
  size_t off;
} sse_t;

static void sse_free(void *cls) {
  sse_t *s = cls;
  mx_server_job_release(s->srv->sched, s->job);  // cancels it if the client left early
  mx_server_request_free(s->tools);
  free(s->tools);
  mx_strbuf_free(&s->held);
  mx_strbuf_free(&s->text);
  mx_strbuf_free(&s->pend);
  free(s);
}

// MHD pulls the stream through this (in the connection's own thread, so it may wait).
static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max) {
  sse_t *s = cls;
  for (;;) {
    if (s->off < s->pend.len) {
      size_t n = s->pend.len - s->off;
      if (n > max) n = max;
      memcpy(buf, s->pend.data + s->off, n);
      s->off += n;
      return (ssize_t)n;
    }
    s->pend.len = 0;
    s->off = 0;
    if (s->finished) return MHD_CONTENT_READER_END_OF_STREAM;
    if (atomic_load(&s->srv->stopping)) return MHD_CONTENT_READER_END_WITH_ERROR;
    if (!s->started) {  // chat streams open with the assistant role
      s->started = true;
      if (s->head.kind == MX_SERVER_CHAT)
        mx_server_chunk_sse(&s->pend, &s->head, "assistant", "", 0, NULL);
      continue;
    }
    mx_server_job_state_t st;
    s->text.len = 0;
    if (!mx_server_job_wait(s->srv->sched, s->job, WAIT_SLICE_MS, &s->text, &st)) {
      if (mx_server_client_gone(s->c)) return MHD_CONTENT_READER_END_WITH_ERROR;
      continue;
    }
    s->cc->n_generated = st.n_generated;
    s->cc->n_cached = st.n_cached;
    if (s->text.len > 0 && s->tools) {
      mx_strbuf_append(&s->held, s->text.data, s->text.len);
    } else if (s->text.len > 0) {
      mx_server_chunk_sse(&s->pend, &s->head, NULL, s->text.data, s->text.len, NULL);
    }
    const char *fin = mx_server_finish_name(st.finish);
    if (st.done && !st.failed && s->tools) {
      mx_server_tool_calls_t calls = {0};
      if (finished_whole(st.finish) &&
          mx_server_tool_calls_parse(s->tools, s->held.data, s->held.len, &calls))
        return MHD_CONTENT_READER_END_WITH_ERROR;  // out of memory
      if (calls.n > 0) {
        mx_server_tool_chunk_sse(&s->pend, &s->head, &calls);
        fin = "tool_calls";
      } else if (s->held.len > 0) {
        mx_server_chunk_sse(&s->pend, &s->head, NULL, s->held.data, s->held.len, NULL);
      }
      mx_server_tool_calls_free(&calls);
    }
    if (st.done) {
      if (st.failed) {
        mx_server_error_t e;
        mx_server_error_set(&e, 500, "server_error", NULL, NULL, "%s", st.error);
        mx_strbuf_puts(&s->pend, "data: ");
        mx_server_error_json(&s->pend, &e);
        mx_strbuf_puts(&s->pend, "\n\n");
      } else {
        mx_server_chunk_sse(&s->pend, &s->head, NULL, s->head.kind == MX_SERVER_CHAT ? NULL : "", 0,
                            fin);
        mx_server_usage_t u = usage_of(&st);
        if (s->include_usage) mx_server_usage_sse(&s->pend, &s->head, &u);
      }
      mx_strbuf_puts(&s->pend, "data: [DONE]\n\n");
      s->finished = true;
    }
    if (s->pend.oom) return MHD_CONTENT_READER_END_WITH_ERROR;
  }
}

// tools: the request, moved into the stream when its tools are in effect (else NULL).
static enum MHD_Result start_stream(mx_server_t *srv, struct MHD_Connection *c,
                                    mx_server_conn_t *cc, mx_server_job_t *job,
                                    const mx_server_reply_head_t *h, bool include_usage,
                                    mx_server_request_t *tools) {
  sse_t *s = calloc(1, sizeof *s);
  if (!s) {
    mx_server_job_release(srv->sched, job);
    mx_server_request_free(tools);
    free(tools);
    return MHD_NO;
  }
  s->tools = tools;
  mx_strbuf_init(&s->held);
  s->srv = srv;
  s->c = c;
  s->cc = cc;
  s->job = job;
  s->head = *h;
  snprintf(s->id, sizeof s->id, "%s", h->id);
  s->head.id = s->id;
  s->include_usage = include_usage;
  mx_strbuf_init(&s->text);
  mx_strbuf_init(&s->pend);
  struct MHD_Response *r =
      MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, sse_read, s, sse_free);
  if (!r) {
    sse_free(s);
    return MHD_NO;
  }
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
  MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
  enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_OK, r);
  MHD_destroy_response(r);
  cc->answered = true;
  cc->status = 200;
  return ok;
}

// ---- Whole replies ----

// tools: the request when its tools are in effect (the text is parsed for calls), else NULL.
static enum MHD_Result wait_reply(mx_server_t *srv, struct MHD_Connection *c, mx_server_conn_t *cc,
                                  mx_server_job_t *job, const mx_server_reply_head_t *h,
                                  const mx_server_request_t *tools) {
  mx_strbuf_t text;
  mx_strbuf_init(&text);
  mx_server_job_state_t st;
  for (;;) {
    if (mx_server_job_wait(srv->sched, job, WAIT_SLICE_MS, &text, &st) && st.done) break;
    if (atomic_load(&srv->stopping) || mx_server_client_gone(c)) {
      mx_server_job_release(srv->sched, job);  // frees the slot now
      mx_strbuf_free(&text);
      return MHD_NO;
    }
  }
  mx_server_job_release(srv->sched, job);
  cc->n_generated = st.n_generated;
  cc->n_cached = st.n_cached;
  mx_server_usage_t u = usage_of(&st);
  enum MHD_Result ok;
  if (st.failed) {
    ok = bad(c, cc, 500, NULL, NULL, st.error);
  } else if (text.oom) {
    ok = bad(c, cc, 500, NULL, NULL, "out of memory");
  } else {
    mx_strbuf_t sb;
    mx_strbuf_init(&sb);
    mx_server_tool_calls_t calls = {0};
    if (tools && finished_whole(st.finish) &&
        mx_server_tool_calls_parse(tools, text.data, text.len, &calls))
      sb.oom = true;
    if (calls.n > 0) {
      mx_server_tool_reply_json(&sb, h, &calls, &u);
    } else {
      mx_server_completion_json(&sb, h, text.data ? text.data : "", text.len, st.finish, &u);
    }
    mx_server_tool_calls_free(&calls);
    ok = sb.oom ? bad(c, cc, 500, NULL, NULL, "out of memory")
                : mx_server_reply(c, cc, 200, "application/json", &sb);
    mx_strbuf_free(&sb);
  }
  mx_strbuf_free(&text);
  return ok;
}

enum MHD_Result mx_server_generate(mx_server_t *srv, struct MHD_Connection *c,
                                   mx_server_conn_t *cc) {
  mx_server_kind_t kind = cc->ep == EP_CHAT ? MX_SERVER_CHAT : MX_SERVER_COMPLETION;
  mx_server_request_t r;
  mx_server_error_t e;
  if (mx_server_request_parse(cc->body.data, cc->body.len, kind, &srv->lim, &r, &e))
    return mx_server_reply_error(c, cc, &e);
  enum MHD_Result ok = MHD_NO;
  int32_t *ids = NULL, n = 0;
  mx_grammar_t *grammar = NULL;   // until a job owns it
  float *pixels = NULL;           // the images' pixel values, until a job owns them
  int32_t *grids = NULL;          // their patch grids (the Qwen towers), until a job owns them
  mx_server_audio_t audio = {0};  // the recordings' features (Gemma 3n), until a job owns them
  char msg[512];
  if (r.model && strcmp(r.model, srv->model_id) != 0) {
    mx_server_error_set(&e, 404, "invalid_request_error", "model", "model_not_found",
                        "the model '%.200s' does not exist; this server serves '%.200s'", r.model,
                        srv->model_id);
    ok = mx_server_reply_error(c, cc, &e);
    goto done;
  }
  if (kind == MX_SERVER_CHAT && !srv->tmpl) {
    ok = bad(c, cc, 400, "messages", "no_chat_template", srv->tmpl_error);
    goto done;
  }
  const mx_gvocab_t *gvocab = NULL;
  const char *gparam = NULL;
  mx_error_clear();
  mx_status_t st = request_grammar(&r, &grammar, &gparam);
  if (!st && grammar) st = server_gvocab(srv, &gvocab);
  if (st) {
    ok = bad(c, cc, st == MX_ERR_NOMEM ? 500 : 400, gparam, NULL, mx_error_message());
    goto done;
  }
  if (r.n_images > 0 && mx_server_images_pixels(srv, &r, &pixels, &grids, &e)) {
    ok = mx_server_reply_error(c, cc, &e);
    goto done;
  }
  if (r.n_audio > 0 && mx_server_audio_features(srv, &r, &audio, &e)) {
    ok = mx_server_reply_error(c, cc, &e);
    goto done;
  }
  mx_error_clear();
  bool over = false;
  st = prompt_ids(srv, &r, grids, &ids, &n, &over);
  if (st) {
    ok = bad(c, cc, st == MX_ERR_NOMEM ? 500 : 400, kind == MX_SERVER_CHAT ? "messages" : "prompt",
             over ? "context_length_exceeded" : NULL, mx_error_message());
    goto done;
  }
  cc->n_prompt = n;
  if (n == 0) {
    ok = bad(c, cc, 400, "prompt", NULL,
             "the prompt is empty (and the tokenizer adds no BOS token): nothing to continue");
    goto done;
  }
  int64_t ctx = mx_server_sched_ctx(srv->sched);
  if (n >= ctx) {
    snprintf(msg, sizeof msg,
             "the prompt is %d tokens but this model's context holds %lld, leaving no room for "
             "a completion (start the server with a larger --ctx, or shorten the prompt)",
             (int)n, (long long)ctx);
    ok = bad(c, cc, 400, kind == MX_SERVER_CHAT ? "messages" : "prompt", "context_length_exceeded",
             msg);
    goto done;
  }
  int32_t max_tokens = r.max_tokens > 0 ? r.max_tokens : (int32_t)(ctx - n);
  if ((int64_t)n + max_tokens > ctx) {
    snprintf(msg, sizeof msg,
             "this model's context holds %lld tokens, but %lld were requested (%d in the prompt, "
             "%d for max_tokens): lower max_tokens or shorten the prompt",
             (long long)ctx, (long long)n + max_tokens, (int)n, (int)max_tokens);
    ok = bad(c, cc, 400, "max_tokens", "context_length_exceeded", msg);
    goto done;
  }
  // Speculative decoding (ADR 0024): the request's word, else the server's. Where it cannot
  // run (constrained output, an M-RoPE model's images) the server's default leaves it off; a
  // request that asks for it is refused by the job (a 400 naming the reason).
  mx_spec_mode_t spec = !r.has_spec     ? srv->speculative
                        : !r.spec_on    ? MX_SPEC_OFF
                        : r.spec_method ? r.spec_method
                                        : srv->spec_method;
  if (spec && !r.has_spec && (grammar || grids)) spec = MX_SPEC_OFF;
  mx_server_job_opts_t jo = {.grammar = grammar,
                             .gvocab = gvocab,
                             .prompt = ids,
                             .n_prompt = n,
                             .max_tokens = max_tokens,
                             .sampling = r.sampling,
                             .stop = (const char *const *)r.stop,
                             .n_stop = r.n_stop,
                             .ignore_eos = r.ignore_eos,
                             .tok = srv->tok,
                             .pixels = pixels,
                             .grids = grids,
                             .n_images = r.n_images,
                             .audio = audio,
                             .speculative = spec,
                             .draft_tokens = r.spec_tokens ? r.spec_tokens : srv->spec_tokens,
                             .ngram_max = r.spec_ngram ? r.spec_ngram : srv->spec_ngram};
  if (!r.has_seed) jo.sampling.seed = fresh_seed(srv);
  mx_server_job_t *job = NULL;
  mx_error_clear();
  st = mx_server_job_create(srv->sched, &jo, &job);
  if (st) {
    ok = bad(c, cc, st == MX_ERR_NOMEM ? 500 : 400,
             st == MX_ERR_UNSUPPORTED && spec ? "speculative" : NULL, NULL, mx_error_message());
    goto done;
  }
  grammar = NULL;  // the job's now
  pixels = NULL;
  grids = NULL;
  memset(&audio, 0, sizeof audio);
  st = mx_server_job_submit(srv->sched, job);
  if (st) {
    mx_server_job_release(srv->sched, job);
    ok = bad(c, cc, 503, NULL, "overloaded", mx_error_message());
    goto done;
  }
  // The idle timeout is for clients that stall; a request waiting for a slot or generating is
  // not idle. No timeout until the request completes (on_completed restores it).
  MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
  char id[48];
  snprintf(id, sizeof id, "%s-%016llx", kind == MX_SERVER_CHAT ? "chatcmpl" : "cmpl",
           (unsigned long long)(atomic_fetch_add(&srv->next_id, 1) ^ (uint64_t)srv->created << 20));
  mx_server_reply_head_t h = {
      .kind = kind, .id = id, .created = (long long)time(NULL), .model = srv->model_id};
  bool tools_on = r.n_tools > 0 && r.tool_choice != MX_SERVER_TOOLS_NONE;
  if (r.stream) {
    mx_server_request_t *moved = NULL;
    if (tools_on) {  // the stream outlives this call: it takes the request
      moved = malloc(sizeof *moved);
      if (!moved) {
        mx_server_job_release(srv->sched, job);
        ok = bad(c, cc, 500, NULL, NULL, "out of memory");
        goto done;
      }
      *moved = r;
      memset(&r, 0, sizeof r);
    }
    ok = start_stream(srv, c, cc, job, &h, r.include_usage || (moved && moved->include_usage),
                      moved);
  } else {
    ok = wait_reply(srv, c, cc, job, &h, tools_on ? &r : NULL);
  }
done:
  mx_grammar_destroy(grammar);
  mx_server_audio_free(&audio);
  free(pixels);
  free(grids);
  free(ids);
  mx_server_request_free(&r);
  return ok;
}
