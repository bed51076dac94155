// libFuzzer target: arbitrary bytes as the body of POST /v1/completions (first byte even) or
// /v1/chat/completions (odd), parsed by the server's request parser with small limits, then the
// parsed strings written back as reply JSON. No HTTP involved. Any crash, leak or sanitizer report
// is a bug: malformed input must give an error with an HTTP status of 400 or 413.
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/request.h"
#include "server/response.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  mx_server_kind_t kind = (data[0] & 1) ? MX_SERVER_CHAT : MX_SERVER_COMPLETION;
  mx_server_limits_t lim;
  mx_server_limits_default(&lim);
  lim.max_body = 64 * 1024;
  lim.max_depth = 16;
  lim.max_tokens = 4096;
  mx_server_request_t r;
  mx_server_error_t e;
  mx_status_t st = mx_server_request_parse((const char *)data + 1, size - 1, kind, &lim, &r, &e);
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  if (st != MX_OK) {
    if (e.http_status != 400 && e.http_status != 413) abort();
    mx_server_error_json(&sb, &e);
  } else {
    if (r.max_tokens < 0 || r.max_tokens > lim.max_tokens || r.n_stop > lim.max_stop) abort();
    mx_server_reply_head_t h = {kind, "cmpl-fuzz", 0, r.model ? r.model : "m"};
    if (r.prompt)
      mx_server_completion_json(&sb, &h, r.prompt, r.prompt_len, MX_FINISH_STOP,
                                &(mx_server_usage_t){.prompt = 1, .completion = 1});
    for (int32_t i = 0; i < r.n_messages; i++)
      mx_server_chunk_sse(&sb, &h, r.roles[i], r.contents[i], strlen(r.contents[i]), NULL);
    for (int32_t i = 0; i < r.n_stop; i++)
      if (!r.stop[i][0] || strlen(r.stop[i]) > lim.max_stop_len) abort();
    mx_server_request_free(&r);
  }
  mx_strbuf_free(&sb);
  return 0;
}
