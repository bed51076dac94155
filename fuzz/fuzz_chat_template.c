// libFuzzer target: compile arbitrary bytes as a chat template; when it compiles, render it with
// a fixed conversation (system/user/assistant with tool calls and reasoning, a tool reply) and
// extra variables, with and without add_generation_prompt. Bytes after the first NUL, if any,
// are a messages JSON array rendered as well. Any crash, hang, leak or sanitizer report is a
// bug: malformed templates must give MX_ERR_PARSE, failing renders MX_ERR_RUNTIME, and the
// engine's limits bound time and memory.
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/chat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char kMessages[] =
    "[{\"role\": \"system\", \"content\": \"You are helpful.\"},"
    " {\"role\": \"user\", \"content\": \"  Hi \\u00fc\\u65e5 \"},"
    " {\"role\": \"assistant\", \"content\": \"<think>\\nhm\\n</think>\\n\\nHello\","
    "  \"tool_calls\": [{\"type\": \"function\", \"function\": {\"name\": \"f\","
    "  \"arguments\": {\"x\": 1, \"y\": [true, null, 2.5]}}}]},"
    " {\"role\": \"tool\", \"content\": \"42\"},"
    " {\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"more\"}]}]";
static const char kExtra[] =
    "{\"enable_thinking\": false, \"tools\": [{\"type\": \"function\", \"function\": "
    "{\"name\": \"f\", \"parameters\": {\"type\": \"object\"}}}]}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *src = (const char *)data;
  const char *nul = memchr(data, 0, size);
  size_t tlen = nul ? (size_t)(nul - src) : size;
  mx_chat_template_t *t = NULL;
  if (mx_chat_template_compile(src, tlen, &t) != MX_OK) return 0;
  for (int agp = 0; agp < 2; agp++) {
    mx_chat_render_opts_t o = {.add_generation_prompt = agp == 1,
                               .bos_token = "<s>",
                               .eos_token = "</s>",
                               .extra_json = agp ? kExtra : NULL};
    char *out = NULL;
    if (mx_chat_render_json(t, kMessages, &o, &out, NULL) == MX_OK) free(out);
  }
  if (nul) {
    size_t mlen = size - tlen - 1;
    char *msgs = malloc(mlen + 1);
    if (msgs) {
      memcpy(msgs, nul + 1, mlen);
      msgs[mlen] = 0;
      char *out = NULL;
      if (mx_chat_render_json(t, msgs, NULL, &out, NULL) == MX_OK) free(out);
      free(msgs);
    }
  }
  mx_chat_message_t m[2] = {{"user", "q"}, {"assistant", "a"}};
  char *out = NULL;
  if (mx_chat_render(t, m, 2, NULL, &out, NULL) == MX_OK) free(out);
  mx_chat_template_destroy(t);
  return 0;
}
