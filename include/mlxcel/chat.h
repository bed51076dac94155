// mlxcel-xla chat templates: the Jinja `chat_template` of tokenizer_config.json, rendered by a
// small Jinja-subset engine written for the constructs real chat templates use.
//
// Supported: `{{ expr }}`, `{% if/elif/else %}`, `{% for x in xs [if cond] %}...{% else %}`
// (loop.index/index0/revindex/revindex0/first/last/length/previtem/nextitem, `break`,
// `continue`, tuple targets `for k, v in d.items()`), `{% set %}` (names, tuples, `ns.attr`,
// block form `{% set x %}..{% endset %}`), `namespace(...)`, `{% macro %}`, `{% generation %}`,
// comments, whitespace control (`{%-`, `-%}`, `+%}`, `{%+`) with Hugging Face's trim_blocks and
// lstrip_blocks, literals (strings with escapes, ints, floats, booleans, none, lists, dicts,
// tuples), attribute/item access, Python slicing on strings (by code point) and lists,
// operators + - * / // % ** ~ == != < > <= >= and or not in `not in` is `is not` and `x if c
// else y`, tests, filters, string/dict methods and `raise_exception`, `range`, `dict`,
// `strftime_now`. Values follow Python/Jinja semantics (`{{ none }}` prints "None", True/False,
// float repr); the `tojson` filter is transformers' (ensure_ascii=False, ", " and ": "
// separators, or "," and ": " with indent=N; sort_keys honoured).
//
// Limits (hostile templates): parser nesting 128, macro recursion 32, value nesting 256,
// 1,000,000 loop iterations and macro calls per render, a work budget of 2e9 scanned bytes/items
// (a loop repeating big string scans stops), 64 MiB of render memory, 16 MiB per output or
// string. Exceeding one is an MX_ERR_RUNTIME error naming the limit. Dict lookups are hashed,
// string search is linear and `s = s + piece` in a loop appends in place, so legitimate
// templates stay linear.
//
// Variables: messages, add_generation_prompt, bos/eos/pad/unk_token (when given), tools and
// documents (none unless extra_json sets them, as transformers passes them), then extra_json's
// keys. The source is read as Jinja does: CR LF / CR become LF and one trailing newline is
// dropped.
//
// Errors: compile errors are MX_ERR_PARSE with "chat template L:C: ..." (1-based line and
// column) saying what was expected; render errors (undefined attribute, wrong types,
// raise_exception("msg"), limits) are MX_ERR_RUNTIME with the position of the failing
// expression.
//
// Ownership: a compiled template owns its AST and is immutable (render may run concurrently
// on one template). Rendered text is a heap string the caller frees.
//
// Example:
//
//   mx_chat_template_t *t = NULL;
//   if (mx_chat_template_from_tokenizer(tok, &t) != MX_OK) { ... mx_error_message() ... }
//   mx_chat_message_t msgs[] = {{"system", "Be brief."}, {"user", "Hi"}};
//   mx_chat_render_opts_t o = {.add_generation_prompt = true};
//   mx_chat_opts_from_tokenizer(tok, &o);  // bos_token / eos_token / pad_token strings
//   char *text = NULL;
//   if (mx_chat_render(t, msgs, 2, &o, &text, NULL) == MX_OK) {
//     // encode `text` with parse_special = true and add_special = false
//     free(text);
//   }
//   mx_chat_template_destroy(t);
#ifndef MLXCEL_CHAT_H
#define MLXCEL_CHAT_H

#include "mlxcel/base.h"
#include "mlxcel/tokenizer.h"

struct mx_vision_config;  // model.h
struct mx_audio_config;   // model.h

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mx_chat_template mx_chat_template_t;

// Compiles `len` bytes of template source (need not be NUL-terminated; not retained). On
// failure *out is NULL and the message has the line:col and what was expected.
mx_status_t mx_chat_template_compile(const char *src, size_t len, mx_chat_template_t **out);
void mx_chat_template_destroy(mx_chat_template_t *t);  // accepts NULL

// Compiles the tokenizer's chat_template; MX_ERR_UNSUPPORTED ("tokenizer has no chat_template
// in tokenizer_config.json") when there is none.
mx_status_t mx_chat_template_from_tokenizer(const mx_tokenizer_t *tok, mx_chat_template_t **out);

typedef struct mx_chat_message {
  const char *role;     // "system", "user", "assistant", "tool", ...
  const char *content;  // UTF-8, NUL-terminated
} mx_chat_message_t;

typedef struct mx_chat_render_opts {
  bool add_generation_prompt;
  // Special-token strings passed as bos_token/eos_token/pad_token/unk_token; NULL leaves the
  // variable undefined (as transformers does for tokens the tokenizer lacks).
  const char *bos_token, *eos_token, *pad_token, *unk_token;
  // Extra template variables as a JSON object text, e.g. {"enable_thinking": false} or
  // {"tools": [...]}; NULL for none. Not retained.
  const char *extra_json;
} mx_chat_render_opts_t;

// Fills bos/eos/pad token strings from the tokenizer (pointers owned by the tokenizer).
void mx_chat_opts_from_tokenizer(const mx_tokenizer_t *tok, mx_chat_render_opts_t *opts);

// Renders with `messages` = [{role, content}, ...]. opts NULL means all defaults. *out is a
// NUL-terminated heap string the caller frees; *len (may be NULL) excludes the NUL.
mx_status_t mx_chat_render(const mx_chat_template_t *t, const mx_chat_message_t *messages,
                           int32_t n_messages, const mx_chat_render_opts_t *opts, char **out,
                           size_t *len);

// The same with more fields per message: fields_json[i] (NULL, or fields_json[i] may be NULL) is
// a JSON object text whose keys other than role become message i's keys in the template (an
// assistant's tool_calls, a tool result's tool_call_id and name, ...); a "content" key replaces
// the message's content (a list of parts such as [{"type": "image"}, {"type": "text", "text":
// "..."}] for templates that iterate them).
mx_status_t mx_chat_render_fields(const mx_chat_template_t *t, const mx_chat_message_t *messages,
                                  const char *const *fields_json, int32_t n_messages,
                                  const mx_chat_render_opts_t *opts, char **out, size_t *len);

// Special-token text in message content, rendered as text: a template's own markup yields
// special tokens, but a user who types `<|im_end|>` (or any special token's spelling) into a
// message must not close their turn and forge others. A guard indexes a tokenizer's special
// tokens once (it borrows the tokenizer, which must outlive it; immutable, so shared across
// threads); mx_chat_render_guarded renders like mx_chat_render and returns, in *plain, the byte
// ranges of the rendered text that came from such spellings in the contents: encode the text
// with parse_special = true, add_special = false and these ranges as mx_encode_opts_t.plain.
// Content holding U+FDD0 or U+FDD1 (the noncharacters that mark the spellings while rendering)
// is MX_ERR_INVALID_ARG naming the message. *out and *plain are heap arrays the caller frees
// (*plain NULL when there are none); *len may be NULL.
typedef struct mx_chat_guard mx_chat_guard_t;
mx_status_t mx_chat_guard_create(const mx_tokenizer_t *tok, mx_chat_guard_t **out);
void mx_chat_guard_destroy(mx_chat_guard_t *g);  // accepts NULL
mx_status_t mx_chat_render_guarded(const mx_chat_template_t *t, const mx_chat_guard_t *g,
                                   const mx_chat_message_t *messages, int32_t n_messages,
                                   const mx_chat_render_opts_t *opts, char **out, size_t *len,
                                   mx_text_range_t **plain, int32_t *n_plain);

// mx_chat_render_guarded with mx_chat_render_fields's fields (their strings are guarded too).
mx_status_t mx_chat_render_guarded_fields(const mx_chat_template_t *t, const mx_chat_guard_t *g,
                                          const mx_chat_message_t *messages,
                                          const char *const *fields_json, int32_t n_messages,
                                          const mx_chat_render_opts_t *opts, char **out,
                                          size_t *len, mx_text_range_t **plain, int32_t *n_plain);
// Same with `messages` given as a JSON array text (messages may carry any fields: tool_calls,
// reasoning_content, content as a list of parts, ...).
mx_status_t mx_chat_render_json(const mx_chat_template_t *t, const char *messages_json,
                                const mx_chat_render_opts_t *opts, char **out, size_t *len);

// Images in chat content (the server's image_url parts, chat's /image; ADR 0010). Content text
// holds MX_CHAT_IMAGE_MARK (U+FDD2, a noncharacter; not a special token, so the guard leaves
// it) where an image goes; a template that takes text then renders it where the message put
// it, and mx_chat_replace_marks turns each mark in the rendered text into `with` (the model's
// image token text and a line break, LLaVA 1.5's "<image>\n"), moving the plain ranges after it
// (*text is heap, replaced). A template that iterates content parts (llava-hf's: {% for c in
// message['content'] %}{% if c['type'] == 'image' %}...) gets the parts instead, as a "content"
// field ([{"type": "image"}, {"type": "text", "text": "..."}]) and writes the image token
// itself: mx_chat_template_takes_parts says which kind `t` is, by rendering a message of an image
// part and a text part (true when the output shows the text and the image token, and no part
// printed as data).
#define MX_CHAT_IMAGE_MARK "\xEF\xB7\x92"
// Where a recording goes (the server's input_audio parts; U+FDD3, ADR 0022): mx_chat_replace_
// audio_marks turns each mark outside the plain ranges into `with` (mx_chat_audio_sequence).
#define MX_CHAT_AUDIO_MARK "\xEF\xB7\x93"
mx_status_t mx_chat_replace_audio_marks(char **text, size_t *len, mx_text_range_t *plain,
                                        int32_t n_plain, const char *with, size_t with_len);
// Gemma 3n's expansion of one audio placeholder, as Gemma3nProcessor's full_audio_sequence:
// "\n\n" <start_of_audio>, audio_soft_tokens_per_image <audio_soft_token>, <end_of_audio> "\n\n"
// (the tokens' text from tok; *out heap). Errors: no audio tower, tokens without text.
mx_status_t mx_chat_audio_sequence(const mx_tokenizer_t *tok, const struct mx_audio_config *a,
                                   char **out, size_t *len);
bool mx_chat_template_takes_parts(const mx_chat_template_t *t, const char *image_text,
                                  size_t image_len);
// The parts of marked content for such a template: the text between marks as text parts, each
// mark an image part; *out a heap JSON list text.
mx_status_t mx_chat_parts_from_marks(const char *content, char **out);
mx_status_t mx_chat_replace_marks(char **text, size_t *len, mx_text_range_t *plain, int32_t n_plain,
                                  const char *with, size_t with_len);

// The processor's side of a vision model's prompt text (struct mx_vision_config: model.h).
// mx_chat_image_placeholder: the text that stands for one image in a prompt and that a template
// iterating parts writes for an image part: Gemma 3's "<start_of_image>" (its processor expands
// that), else the image token's ("<image>", "<|image_pad|>"); NULL (*len 0) when the tokenizer
// has no text for it; the pointer is the tokenizer's. mx_chat_image_with: what a template that
// takes text gets where an image was (*out heap): the placeholder, and for the families whose
// processor expands ids a line break after it (LLaVA 1.5's "<image>\n"), none for Gemma 3,
// whose templates write "<start_of_image>" straight before the text.
const char *mx_chat_image_placeholder(const mx_tokenizer_t *tok, const struct mx_vision_config *v,
                                      size_t *len);
mx_status_t mx_chat_image_with(const mx_tokenizer_t *tok, const struct mx_vision_config *v,
                               char **out, size_t *len);
// Gemma3Processor's expansion, on the text (the only one of our families whose processor
// expands images before tokenizing, mx_vision_blocks; the others' image tokens become runs on
// the ids, mx_vision_expand_prompt, and their text is left as it is): each "<start_of_image>"
// outside the plain ranges (a user's typed spelling stays text) becomes "\n\n<start_of_image>",
// tokens_per_image "<image_soft_token>" and "<end_of_image>\n\n", as the processor replaces
// them in the rendered template's text; the plain ranges after each move with the text (*text
// heap, replaced). A placeholder count other than n_images is MX_ERR_INVALID_ARG naming the
// placeholder, with the text unchanged. The CLI (generate, chat) and the server share it.
mx_status_t mx_chat_expand_images(const mx_tokenizer_t *tok, const struct mx_vision_config *v,
                                  int32_t n_images, char **text, size_t *len,
                                  mx_text_range_t *plain, int32_t n_plain);

#ifdef __cplusplus
}
#endif
#endif  // MLXCEL_CHAT_H
