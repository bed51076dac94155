// An embedding example: loads a model folder with libmlxcel and streams a greedy completion of a
// prompt (or, with --chat, the reply to a user message through the model's chat template).
// Built against an installed mlxcel (docs/api.md):
//
//   cc complete.c $(pkg-config --cflags --libs mlxcel) -o complete
//   ./complete models/stories260K "Once upon a time" 64
//
// or with CMake (find_package(mlxcel), examples/embed/CMakeLists.txt).
#include <mlxcel/mlxcel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool print_text(void *user, const char *text, size_t len) {
  (void)user;
  fwrite(text, 1, len, stdout);
  fflush(stdout);
  return true;
}

int main(int argc, char **argv) {
  bool chat = argc > 1 && strcmp(argv[1], "--chat") == 0;
  if (chat) argc--, argv++;
  if (argc < 3 || argc > 4) {
    fprintf(stderr, "usage: complete [--chat] MODEL_DIR PROMPT [MAX_TOKENS]\n");
    return 2;
  }
  if (mx_engine_api_version() / 10000 != MX_ENGINE_API_VERSION_MAJOR) {
    fprintf(stderr, "complete: built for API %d, the library is %d\n", MX_ENGINE_API_VERSION,
            mx_engine_api_version());
    return 1;
  }
  mx_engine_t *engine = NULL;
  if (mx_engine_open(argv[1], NULL, &engine) != MX_ENGINE_OK) {
    fprintf(stderr, "complete: %s\n", mx_engine_last_error());
    return 1;
  }
  mx_engine_gen_opts_t g;
  mx_engine_gen_opts_init(engine, &g);
  g.temperature = 0.0f;  // greedy: the same text every run
  if (argc == 4) g.max_tokens = atoi(argv[3]);
  mx_engine_result_t r;
  mx_engine_status_t st;
  if (chat) {
    mx_engine_message_t msg = {"user", argv[2]};
    st = mx_engine_chat(engine, &msg, 1, &g, print_text, NULL, &r);
  } else {
    fputs(argv[2], stdout);
    st = mx_engine_complete(engine, argv[2], &g, print_text, NULL, &r);
  }
  putchar('\n');
  if (st != MX_ENGINE_OK) {
    fprintf(stderr, "complete: %s\n", mx_engine_last_error());
    mx_engine_close(engine);
    return 1;
  }
  fprintf(stderr, "complete: %d prompt tokens, %d generated (%.1f tok/s), finish %d\n",
          r.prompt_tokens, r.completion_tokens,
          r.decode_seconds > 0 ? (r.completion_tokens - 1) / r.decode_seconds : 0.0, (int)r.finish);
  mx_engine_close(engine);
  return 0;
}
