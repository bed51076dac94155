// The PJRT plugin loader (src/backends/pjrt.c): a path that does not exist, a library that is
// not a plugin, a plugin of an incompatible interface version, and the real XLA CPU plugin of
// the test environment (tests/requirements.txt), which must load and describe its devices.
#include <stdio.h>
#include <string.h>

#include "backends/pjrt.h"
#include "mx_pjrt_plugin.h"
#include "mx_test.h"

static void test_bad_paths(void) {
  mx_pjrt_t *p = (mx_pjrt_t *)1;
  CHECK(mx_pjrt_open(NULL, &p) == MX_ERR_INVALID_ARG && p == NULL);
  CHECK(mx_pjrt_open("", &p) == MX_ERR_INVALID_ARG);
  CHECK(strstr(mx_error_message(), "no PJRT plugin path") != NULL);

  CHECK(mx_pjrt_open("/nonexistent/libplugin.so", &p) == MX_ERR_IO && p == NULL);
  CHECK_MSG(strstr(mx_error_message(), "/nonexistent/libplugin.so") != NULL, "%s",
            mx_error_message());

  // A real shared library without the entry point.
  CHECK(mx_pjrt_open("libc.so.6", &p) == MX_ERR_UNSUPPORTED && p == NULL);
  CHECK_MSG(strstr(mx_error_message(), "not a PJRT plugin") != NULL &&
                strstr(mx_error_message(), "GetPjrtApi") != NULL,
            "%s", mx_error_message());
}

static void test_incompatible_version(void) {
  const char *fake = getenv("MX_FAKE_PJRT");
  CHECK_MSG(fake && fake[0], "MX_FAKE_PJRT (the impostor plugin's path) is not set");
  if (!fake || !fake[0]) return;
  mx_pjrt_t *p = NULL;
  CHECK(mx_pjrt_open(fake, &p) == MX_ERR_UNSUPPORTED && p == NULL);
  // Both versions: the plugin's (1.3) and the one mlxcel speaks.
  char want[64];
  snprintf(want, sizeof want, "needs 0.%d", 81);
  CHECK_MSG(
      strstr(mx_error_message(), "C API 1.3") != NULL && strstr(mx_error_message(), want) != NULL,
      "%s", mx_error_message());
}

// Compiles a small StableHLO module (the compile options pjrt.c writes must be accepted: empty
// ones abort the CPU client), and a module the plugin must reject with its diagnostic.
static void test_compile(mx_pjrt_t *p) {
  static const char ok[] =
      "func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {\n"
      "  %0 = stablehlo.add %a, %b : tensor<4xf32>\n"
      "  return %0 : tensor<4xf32>\n"
      "}\n";
  mx_pjrt_exec_t *x = NULL;
  CHECK_OK(mx_pjrt_compile(p, ok, sizeof ok - 1, &x));
  CHECK(x != NULL);
  mx_pjrt_exec_free(x);
  mx_pjrt_exec_free(NULL);

  // No @main: XLA refuses it; the message carries the plugin's words.
  static const char no_main[] =
      "func.func @decode(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
      "  return %a : tensor<4xf32>\n"
      "}\n";
  x = (mx_pjrt_exec_t *)1;
  CHECK(mx_pjrt_compile(p, no_main, sizeof no_main - 1, &x) == MX_ERR_RUNTIME && x == NULL);
  CHECK_MSG(strstr(mx_error_message(), "PJRT compile") && strstr(mx_error_message(), "main"), "%s",
            mx_error_message());
  static const char garbage[] = "this is not StableHLO";
  CHECK(mx_pjrt_compile(p, garbage, sizeof garbage - 1, &x) == MX_ERR_RUNTIME && x == NULL);
  printf("rejected module: %s\n", mx_error_message());
  CHECK(mx_pjrt_compile(p, ok, 0, &x) == MX_ERR_INVALID_ARG);
}

static void test_real_plugin(void) {
  char buf[4096];
  const char *path = mx_test_pjrt_plugin(buf, sizeof buf);
  if (!path) return;
  mx_pjrt_t *p = NULL;
  CHECK_OK(mx_pjrt_open(path, &p));
  if (!p) return;
  int major = -1, minor = -1;
  mx_pjrt_api_version(p, &major, &minor);
  printf("plugin %s: PJRT C API %d.%d, platform %s (%s), %d devices, device 0: %s id %d\n", path,
         major, minor, mx_pjrt_platform(p), mx_pjrt_platform_version(p), mx_pjrt_device_count(p),
         mx_pjrt_device_kind(p, 0), mx_pjrt_device_id(p, 0));
  CHECK(major == 0 && minor >= 81);
  CHECK(strcmp(mx_pjrt_platform(p), "cpu") == 0);
  CHECK(mx_pjrt_device_count(p) >= 1);
  CHECK(mx_pjrt_device_kind(p, 0) && strcmp(mx_pjrt_device_kind(p, 0), "cpu") == 0);
  CHECK(mx_pjrt_device_id(p, 0) >= 0);
  CHECK(mx_pjrt_device_kind(p, mx_pjrt_device_count(p)) == NULL);
  CHECK(mx_pjrt_device_id(p, -1) == -1);

  // A second client of the same plugin while the first lives (the plugin is initialized once),
  // then both closed, then one more: a session after a session.
  mx_pjrt_t *q = NULL;
  CHECK_OK(mx_pjrt_open(path, &q));
  mx_pjrt_close(q);
  mx_pjrt_close(p);
  p = NULL;
  CHECK_OK(mx_pjrt_open(path, &p));
  CHECK(p && strcmp(mx_pjrt_platform(p), "cpu") == 0);
  test_compile(p);
  mx_pjrt_close(p);
  mx_pjrt_close(NULL);
}

int main(void) {
  test_bad_paths();
  test_incompatible_version();
  test_real_plugin();
  return mx_test_finish();
}
