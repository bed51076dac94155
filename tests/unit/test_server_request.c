// OpenAI request parsing (src/server/request.c) and the JSON texts of replies
// (src/server/response.c): accepted shapes, every rejection with its status and parameter,
// limits, and escaping.
#include <stdlib.h>
#include <string.h>

#include "mx_test.h"
#include "server/request.h"
#include "server/response.h"

static mx_status_t parse(const char *body, mx_server_kind_t kind, mx_server_request_t *r,
                         mx_server_error_t *e) {
  return mx_server_request_parse(body, strlen(body), kind, NULL, r, e);
}

// Expects a rejection with this status and parameter (NULL: none) whose message holds `frag`.
static void reject(const char *body, mx_server_kind_t kind, int status, const char *param,
                   const char *frag) {
  mx_server_request_t r;
  mx_server_error_t e;
  mx_status_t st = parse(body, kind, &r, &e);
  CHECK_MSG(st != MX_OK, "accepted: %s", body);
  if (st == MX_OK) {
    mx_server_request_free(&r);
    return;
  }
  CHECK_MSG(e.http_status == status, "%s: status %d, want %d (%s)", body, e.http_status, status,
            e.message);
  CHECK_MSG((param == NULL && e.param == NULL) || (param && e.param && strcmp(param, e.param) == 0),
            "%s: param %s, want %s", body, e.param ? e.param : "null", param ? param : "null");
  CHECK_MSG(strstr(e.message, frag) != NULL, "%s: message '%s' lacks '%s'", body, e.message, frag);
  CHECK(r.prompt == NULL && r.stop == NULL && r.roles == NULL);
}

static void test_completion_fields(void) {
  mx_server_request_t r;
  mx_server_error_t e;
  CHECK_OK(
      parse("{\"model\":\"m\",\"prompt\":\"Once upon\",\"max_tokens\":12,\"temperature\":0,"
            "\"top_p\":0.5,\"top_k\":40,\"min_p\":0.1,\"seed\":-1,\"stop\":[\"a\",\"\",\"bc\"],"
            "\"presence_penalty\":0.5,\"frequency_penalty\":-0.5,\"repetition_penalty\":1.1,"
            "\"n\":1,\"stream\":true,\"stream_options\":{\"include_usage\":true},"
            "\"user\":\"x\",\"unknown\":[1,{}],\"ignore_eos\":true}",
            MX_SERVER_COMPLETION, &r, &e));
  CHECK(r.model && strcmp(r.model, "m") == 0);
  CHECK(r.prompt && strcmp(r.prompt, "Once upon") == 0 && r.prompt_len == 9);
  CHECK(r.max_tokens == 12 && r.sampling.temperature == 0.0f && r.sampling.top_p == 0.5f);
  CHECK(r.sampling.top_k == 40 && r.sampling.min_p == 0.1f);
  CHECK(r.has_seed && r.sampling.seed == UINT64_MAX);
  CHECK(r.n_stop == 2 && strcmp(r.stop[0], "a") == 0 && strcmp(r.stop[1], "bc") == 0);
  CHECK(r.sampling.presence_penalty == 0.5f && r.sampling.frequency_penalty == -0.5f);
  CHECK(r.sampling.repetition_penalty == 1.1f && r.stream && r.include_usage && r.ignore_eos);
  mx_server_request_free(&r);

  // Defaults (OpenAI's): temperature 1, nothing else set; null means absent.
  CHECK_OK(parse("{\"prompt\":\"x\",\"max_tokens\":null,\"stop\":null,\"model\":null}",
                 MX_SERVER_COMPLETION, &r, &e));
  CHECK(!r.model && r.max_tokens == 0 && r.n_stop == 0 && !r.stream && !r.has_seed);
  CHECK(r.sampling.temperature == 1.0f && r.sampling.top_k == 0 && r.sampling.top_p == 1.0f);
  mx_server_request_free(&r);

  // A stop string alone; a prompt as token ids; a prompt as a one-string list.
  CHECK_OK(parse("{\"prompt\":[1, 403, 407],\"stop\":\"\\n\"}", MX_SERVER_COMPLETION, &r, &e));
  CHECK(!r.prompt && r.n_prompt_ids == 3 && r.prompt_ids[2] == 407);
  CHECK(r.n_stop == 1 && strcmp(r.stop[0], "\n") == 0);
  mx_server_request_free(&r);
  CHECK_OK(parse("{\"prompt\":[\"hi\"]}", MX_SERVER_COMPLETION, &r, &e));
  CHECK(r.prompt && strcmp(r.prompt, "hi") == 0);
  mx_server_request_free(&r);
  // Unicode escapes decode to UTF-8.
  CHECK_OK(parse("{\"prompt\":\"caf\\u00e9 \\ud83d\\ude00\"}", MX_SERVER_COMPLETION, &r, &e));
  CHECK(r.prompt && strcmp(r.prompt, "caf\xc3\xa9 \xf0\x9f\x98\x80") == 0);
  mx_server_request_free(&r);
}

static void test_chat_fields(void) {
  mx_server_request_t r;
  mx_server_error_t e;
  CHECK_OK(
      parse("{\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},"
            "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Hel\"},"
            "{\"type\":\"text\",\"text\":\"lo\"}]},{\"role\":\"assistant\",\"content\":null}],"
            "\"max_completion_tokens\":7}",
            MX_SERVER_CHAT, &r, &e));
  CHECK(r.n_messages == 3 && r.max_tokens == 7);
  CHECK(strcmp(r.roles[0], "system") == 0 && strcmp(r.contents[0], "Be brief.") == 0);
  CHECK(strcmp(r.roles[1], "user") == 0 && strcmp(r.contents[1], "Hello") == 0);
  CHECK(strcmp(r.roles[2], "assistant") == 0 && strcmp(r.contents[2], "") == 0);
  mx_server_request_free(&r);
}

// image_url parts: data URLs decoded to their bytes, the marks the prompt builder reads, and
// every refusal.
static void test_image_parts(void) {
  const mx_server_kind_t H = MX_SERVER_CHAT;
  mx_server_request_t r;
  mx_server_error_t e;
  // "iVBORw0KGgo=" is the PNG signature's first 8 bytes; "/9j/" a JPEG's first 3.
  CHECK_OK(
      parse("{\"messages\":[{\"role\":\"system\",\"content\":\"S\"},{\"role\":\"user\","
            "\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"image_url\","
            "\"image_url\":{\"url\":\"data:image/png;base64,iVBORw0KGgo=\",\"detail\":"
            "\"low\"}},{\"type\":\"text\",\"text\":\"b\"},{\"type\":\"image_url\","
            "\"image_url\":{\"url\":\"DATA:IMAGE/JPEG;BASE64,/9j/\"}}]}]}",
            MX_SERVER_CHAT, &r, &e));
  CHECK(r.n_images == 2 && r.image_lens[0] == 8 && r.image_lens[1] == 3);
  CHECK(memcmp(r.images[0], "\x89PNG\r\n\x1a\n", 8) == 0);
  CHECK(memcmp(r.images[1], "\xff\xd8\xff", 3) == 0);
  CHECK(strcmp(r.contents[0], "S") == 0);
  CHECK(strcmp(r.contents[1], "a" MX_SERVER_IMAGE_MARK "b" MX_SERVER_IMAGE_MARK) == 0);
  mx_server_request_free(&r);
  // Without images nothing changes: text parts are joined, no parts lists.
  CHECK_OK(
      parse("{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":"
            "\"x\\ufdd2\"}]}]}",
            MX_SERVER_CHAT, &r, &e));
  CHECK(r.n_images == 0 && !r.images);
  mx_server_request_free(&r);
#define IMG(url)                                                                              \
  "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":" url \
  "}]}]}"
  reject(IMG("{\"url\":\"http://x/y.png\"}"), H, 400, "messages", "never fetches");
  reject(IMG("{\"url\":\"file:///etc/passwd\"}"), H, 400, "messages", "never fetches");
  reject(IMG("\"https://x/y.png\""), H, 400, "messages", "never fetches");
  reject(IMG("{}"), H, 400, "messages", "needs 'image_url'");
  reject(IMG("{\"url\":7}"), H, 400, "messages", "needs 'image_url'");
  reject(IMG("{\"url\":\"data:image/gif;base64,R0lG\"}"), H, 400, "messages", "'image/gif;base64'");
  reject(IMG("{\"url\":\"data:image/png\"}"), H, 400, "messages", "no ','");
  reject(IMG("{\"url\":\"data:image/png;base64,iVB*\"}"), H, 400, "messages", "at character 3");
  reject(IMG("{\"url\":\"data:image/png;base64,iVBOR\"}"), H, 400, "messages", "not valid");
  reject(IMG("{\"url\":\"data:image/png;base64,\"}"), H, 400, "messages", "no bytes");
#undef IMG
  // A noncharacter that would read as an image where there is none.
  reject(
      "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":"
      "\"\\ufdd2\"},{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,"
      "iVBORw0KGgo=\"}}]}]}",
      H, 400, "messages", "U+FDD2");
  // At most max_images per request, counted over every message.
  mx_server_limits_t lim;
  mx_server_limits_default(&lim);
  lim.max_images = 1;
  const char *two =
      "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":"
      "{\"url\":\"data:image/png;base64,iVBORw0KGgo=\"}}]},{\"role\":\"user\",\"content\":[{"
      "\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,iVBORw0KGgo=\"}}]}]}";
  CHECK(mx_server_request_parse(two, strlen(two), H, &lim, &r, &e) != MX_OK);
  CHECK(e.http_status == 400 && e.code && strcmp(e.code, "too_many_images") == 0);
  CHECK(strstr(e.message, "at most 1 images") != NULL && r.images == NULL);
  lim.max_images = 2;
  CHECK_OK(mx_server_request_parse(two, strlen(two), H, &lim, &r, &e));
  CHECK(r.n_images == 2 && strcmp(r.contents[1], MX_SERVER_IMAGE_MARK) == 0);
  mx_server_request_free(&r);
}

static void test_rejections(void) {
  const mx_server_kind_t C = MX_SERVER_COMPLETION, H = MX_SERVER_CHAT;
  reject("", C, 400, NULL, "empty");
  reject("{\"prompt\":", C, 400, NULL, "not valid JSON");
  reject("{\"prompt\":\"x\"} x", C, 400, NULL, "after the JSON value");
  reject("[1,2]", C, 400, NULL, "must be a JSON object");
  reject("{}", C, 400, "prompt", "'prompt' is required");
  reject("{\"prompt\":5}", C, 400, "prompt", "string or a list of token ids");
  reject("{\"prompt\":[]}", C, 400, "prompt", "empty list");
  reject("{\"prompt\":[\"a\",\"b\"]}", C, 400, "prompt", "several prompts");
  reject("{\"prompt\":[1,-2]}", C, 400, "prompt", "item 1");
  reject("{\"prompt\":[1,2.5]}", C, 400, "prompt", "item 1");
  reject("{\"prompt\":\"x\",\"max_tokens\":\"5\"}", C, 400, "max_tokens", "integer");
  reject("{\"prompt\":\"x\",\"max_tokens\":0}", C, 400, "max_tokens", "between 1 and");
  reject("{\"prompt\":\"x\",\"max_tokens\":1.5}", C, 400, "max_tokens", "integer");
  reject("{\"prompt\":\"x\",\"temperature\":\"hot\"}", C, 400, "temperature", "number");
  reject("{\"prompt\":\"x\",\"temperature\":3}", C, 400, "temperature", "between 0 and 2");
  reject("{\"prompt\":\"x\",\"top_p\":0}", C, 400, "top_p", "(0, 1]");
  reject("{\"prompt\":\"x\",\"top_k\":-1}", C, 400, "top_k", "between");
  reject("{\"prompt\":\"x\",\"min_p\":2}", C, 400, "min_p", "between");
  reject("{\"prompt\":\"x\",\"presence_penalty\":3}", C, 400, "presence_penalty", "between");
  reject("{\"prompt\":\"x\",\"repetition_penalty\":0}", C, 400, "repetition_penalty", "> 0");
  reject("{\"prompt\":\"x\",\"seed\":\"1\"}", C, 400, "seed", "integer");
  reject("{\"prompt\":\"x\",\"n\":2}", C, 400, "n", "must be 1");
  reject("{\"prompt\":\"x\",\"stream\":1}", C, 400, "stream", "true or false");
  reject("{\"prompt\":\"x\",\"ignore_eos\":\"yes\"}", C, 400, "ignore_eos", "true or false");
  reject("{\"prompt\":\"x\",\"stream_options\":[]}", C, 400, "stream_options", "object");
  reject("{\"prompt\":\"x\",\"stop\":5}", C, 400, "stop", "string or a list");
  reject("{\"prompt\":\"x\",\"stop\":[\"a\",1]}", C, 400, "stop", "item 1");
  reject("{\"prompt\":\"x\",\"logprobs\":3}", C, 400, "logprobs", "not supported");
  reject("{\"prompt\":\"x\",\"echo\":true}", C, 400, "echo", "not supported");
  reject("{\"prompt\":\"x\",\"best_of\":2}", C, 400, "best_of", "must be 1");
  reject("{\"prompt\":\"x\",\"model\":7}", C, 400, "model", "string");
  reject("{\"prompt\":\"\xff\"}", C, 400, "prompt", "UTF-8");
  reject("{\"prompt\":\"x\",\"logit_bias\":{\"1\":5}}", C, 400, "logit_bias", "not supported");
  reject("{}", H, 400, "messages", "'messages' is required");
  reject("{\"messages\":{}}", H, 400, "messages", "list");
  reject("{\"messages\":[]}", H, 400, "messages", "empty");
  reject("{\"messages\":[1]}", H, 400, "messages", "message 0 must be an object");
  reject("{\"messages\":[{\"content\":\"x\"}]}", H, 400, "messages", "'role'");
  reject("{\"messages\":[{\"role\":\"user\",\"content\":5}]}", H, 400, "messages", "'content'");
  reject("{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"audio\"}]}]}", H, 400,
         "messages", "only 'text', 'image_url' and 'input_audio'");
  reject("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"functions\":[]}", H, 400,
         "functions", "use 'tools'");
}

static void test_limits(void) {
  mx_server_limits_t lim;
  mx_server_limits_default(&lim);
  lim.max_body = 64;
  lim.max_depth = 4;
  lim.max_tokens = 100;
  lim.max_stop = 2;
  lim.max_stop_len = 3;
  lim.max_messages = 1;
  lim.max_prompt_ids = 2;
  struct {
    const char *body;
    mx_server_kind_t kind;
    int status;
    const char *frag;
  } cases[] = {
      {"{\"prompt\":\"0123456789012345678901234567890123456789012345678901234567\"}",
       MX_SERVER_COMPLETION, 413, "limit is 64"},
      {"{\"prompt\":[[[[1]]]]}", MX_SERVER_COMPLETION, 400, "deeper than 4"},
      {"{\"prompt\":\"x\",\"max_tokens\":101}", MX_SERVER_COMPLETION, 400, "between 1 and 100"},
      {"{\"prompt\":\"x\",\"stop\":[\"a\",\"b\",\"c\"]}", MX_SERVER_COMPLETION, 400, "at most 2"},
      {"{\"prompt\":\"x\",\"stop\":\"abcd\"}", MX_SERVER_COMPLETION, 400, "at most 3"},
      {"{\"prompt\":[1,2,3]}", MX_SERVER_COMPLETION, 400, "at most 2"},
      {"{\"messages\":[{\"role\":\"a\"},{\"role\":\"b\"}]}", MX_SERVER_CHAT, 400, "at most 1"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    mx_server_request_t r;
    mx_server_error_t e;
    mx_status_t st =
        mx_server_request_parse(cases[i].body, strlen(cases[i].body), cases[i].kind, &lim, &r, &e);
    CHECK_MSG(st != MX_OK && e.http_status == cases[i].status && strstr(e.message, cases[i].frag),
              "case %zu: status %d '%s'", i, e.http_status, e.message);
    if (st == MX_OK) mx_server_request_free(&r);
  }
  // Brackets inside strings do not count as nesting.
  mx_server_request_t r;
  mx_server_error_t e;
  const char *b = "{\"prompt\":\"[[[[[[\\\"[[[\"}";
  CHECK_OK(mx_server_request_parse(b, strlen(b), MX_SERVER_COMPLETION, &lim, &r, &e));
  mx_server_request_free(&r);
  // A deeply nested body is refused before cJSON recurses into it.
  size_t n = 200000;
  char *deep = malloc(n + 1);
  if (deep) {
    memset(deep, '[', n);
    deep[n] = '\0';
    mx_server_limits_default(&lim);
    lim.max_body = n;
    CHECK(mx_server_request_parse(deep, n, MX_SERVER_COMPLETION, &lim, &r, &e) != MX_OK &&
          strstr(e.message, "deeper"));
    free(deep);
  }
}

// The "speculative" extension (ADR 0024): its forms, defaults and refusals, and its usage.
static void test_speculative(void) {
  const mx_server_kind_t C = MX_SERVER_COMPLETION;
  mx_server_request_t r;
  mx_server_error_t e;
  CHECK_OK(parse("{\"prompt\":\"x\"}", C, &r, &e));
  CHECK(!r.has_spec && !r.spec_on && r.spec_tokens == 0 && r.spec_ngram == 0);
  mx_server_request_free(&r);
  const char *on[] = {"\"ngram\"", "true", "{}", "{\"method\":\"ngram\"}",
                      "{\"num_speculative_tokens\":32,\"prompt_lookup_max\":1}"};
  for (int i = 0; i < 5; i++) {
    char body[160];
    snprintf(body, sizeof body, "{\"prompt\":\"x\",\"speculative\":%s}", on[i]);
    CHECK_OK(parse(body, C, &r, &e));
    CHECK_MSG(r.has_spec && r.spec_on, "%s", body);
    mx_server_request_free(&r);
  }
  CHECK(r.spec_tokens == 0);  // freed requests are zeroed
  CHECK_OK(
      parse("{\"prompt\":\"x\",\"speculative\":{\"num_speculative_tokens\":5,"
            "\"prompt_lookup_max\":2}}",
            C, &r, &e));
  CHECK(r.spec_on && r.spec_tokens == 5 && r.spec_ngram == 2);
  mx_server_request_free(&r);
  const char *off[] = {"\"off\"", "false", "{\"method\":\"off\",\"num_speculative_tokens\":3}"};
  for (int i = 0; i < 3; i++) {
    char body[160];
    snprintf(body, sizeof body, "{\"prompt\":\"x\",\"speculative\":%s}", off[i]);
    CHECK_OK(parse(body, C, &r, &e));
    CHECK_MSG(r.has_spec && !r.spec_on, "%s", body);
    mx_server_request_free(&r);
  }
  CHECK_OK(parse("{\"prompt\":\"x\",\"speculative\":null}", C, &r, &e));
  CHECK(!r.has_spec);
  mx_server_request_free(&r);
  reject("{\"prompt\":\"x\",\"speculative\":\"draft\"}", C, 400, "speculative", "prompt lookup");
  reject("{\"prompt\":\"x\",\"speculative\":{\"method\":\"eagle\"}}", C, 400, "speculative",
         "'eagle' is not supported");
  reject("{\"prompt\":\"x\",\"speculative\":{\"method\":1}}", C, 400, "speculative", "must be");
  reject("{\"prompt\":\"x\",\"speculative\":3}", C, 400, "speculative", "must be");
  reject("{\"prompt\":\"x\",\"speculative\":{\"num_speculative_tokens\":0}}", C, 400, "speculative",
         "num_speculative_tokens' must be an integer in 1..32");
  reject("{\"prompt\":\"x\",\"speculative\":{\"num_speculative_tokens\":33}}", C, 400,
         "speculative", "1..32");
  reject("{\"prompt\":\"x\",\"speculative\":{\"prompt_lookup_max\":1.5}}", C, 400, "speculative",
         "prompt_lookup_max");
  reject("{\"prompt\":\"x\",\"speculative\":{\"k\":4}}", C, 400, "speculative", "no field 'k'");
  // usage.speculative is written for speculative requests only.
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  mx_server_reply_head_t h = {MX_SERVER_COMPLETION, "cmpl-1", 5, "m"};
  mx_server_usage_t u = {.prompt = 3,
                         .completion = 9,
                         .spec = true,
                         .spec_steps = 4,
                         .spec_drafted = 10,
                         .spec_accepted = 5};
  mx_server_completion_json(&sb, &h, "hi", 2, MX_FINISH_LENGTH, &u);
  CHECK_MSG(sb.data && strstr(sb.data,
                              "\"prompt_tokens_details\":{\"cached_tokens\":0},\"speculative\":{"
                              "\"steps\":4,\"drafted_tokens\":10,\"accepted_tokens\":5,"
                              "\"accepted_tokens_per_step\":1.2500}}"),
            "%s", sb.data);
  mx_strbuf_free(&sb);
}

static void test_responses(void) {
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  // NUL, control characters, quotes, valid and invalid UTF-8.
  mx_server_json_string(&sb, "a\0\"\\\n\x01\xc3\xa9\xff\xe2\x98", 11);
  CHECK_MSG(sb.data &&
                strcmp(sb.data, "\"a\\u0000\\\"\\\\\\n\\u0001\xc3\xa9\\ufffd\\ufffd\\ufffd\"") == 0,
            "%s", sb.data);
  mx_strbuf_free(&sb);
  mx_server_reply_head_t h = {MX_SERVER_CHAT, "chatcmpl-1", 5, "m"};
  mx_server_completion_json(&sb, &h, "hi", 2, MX_FINISH_EOS,
                            &(mx_server_usage_t){.prompt = 3, .cached = 2, .completion = 4});
  CHECK_MSG(sb.data && strstr(sb.data, "\"object\":\"chat.completion\"") &&
                strstr(sb.data, "\"message\":{\"role\":\"assistant\",\"content\":\"hi\"}") &&
                strstr(sb.data, "\"finish_reason\":\"stop\"") &&
                strstr(sb.data,
                       "\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4,"
                       "\"total_tokens\":7,\"prompt_tokens_details\":{\"cached_tokens\":2}}"),
            "%s", sb.data);
  mx_strbuf_free(&sb);
  h.kind = MX_SERVER_COMPLETION;
  mx_server_chunk_sse(&sb, &h, NULL, "x", 1, "length");
  CHECK_MSG(sb.data && strncmp(sb.data, "data: {", 7) == 0 && strstr(sb.data, "\"text\":\"x\"") &&
                strstr(sb.data, "\"finish_reason\":\"length\"") && sb.len >= 3 &&
                strcmp(sb.data + sb.len - 3, "}\n\n") == 0,
            "%s", sb.data);
  mx_strbuf_free(&sb);
  mx_server_error_t e;
  mx_server_error_set(&e, 404, "invalid_request_error", "model", "model_not_found", "no '%s'", "q");
  mx_server_error_json(&sb, &e);
  CHECK_MSG(
      sb.data && strcmp(sb.data,
                        "{\"error\":{\"message\":\"no 'q'\",\"type\":\"invalid_request_error\","
                        "\"param\":\"model\",\"code\":\"model_not_found\"}}") == 0,
      "%s", sb.data);
  mx_strbuf_free(&sb);
}

int main(void) {
  test_completion_fields();
  test_chat_fields();
  test_rejections();
  test_speculative();
  test_image_parts();
  test_limits();
  test_responses();
  return mx_test_finish();
}
