// mx_checkpoint_release: after packing, the cpu backend drops the mmapped pages of packed
// tensors from RSS. Checks: the released bytes are whole pages inside the tensor, the data
// reads back unchanged, the resident set shrinks by about the tensor's size, pointers outside
// the mappings release nothing.
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mlxcel/model.h"
#include "mlxcel/writer.h"
#include "mx_test.h"
#include "mx_test_rss.h"

int main(void) {
  char dir[] = "/tmp/mx_release_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char path[256];
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  enum { N = 1024, K = 4096 };  // 16 MiB
  float *w = malloc(sizeof(float) * N * K), *small = malloc(sizeof(float) * 7);
  for (size_t i = 0; i < (size_t)N * K; i++) w[i] = (float)(i % 1000) * 0.001f;
  for (int i = 0; i < 7; i++) small[i] = (float)i;
  mx_st_desc_t d[2] = {{.name = "big", .dtype = MX_ELEM_F32, .rank = 2, .dims = {N, K}},
                       {.name = "small", .dtype = MX_ELEM_F32, .rank = 1, .dims = {7}}};
  const void *data[2] = {w, small};
  CHECK_OK(mx_st_write_file(path, d, data, 2));
  mx_checkpoint_t *ck = NULL;
  CHECK_OK(mx_checkpoint_open(dir, &ck));
  const mx_weight_t *big = mx_checkpoint_find(ck, "big"), *sm = mx_checkpoint_find(ck, "small");
  CHECK(big && sm);
  if (big && sm) {
    volatile float sum = 0;
    const float *b = big->data;
    for (size_t i = 0; i < (size_t)N * K; i += 256) sum += b[i];  // fault every page in
    (void)sum;
    size_t before = mx_test_rss_bytes();
    size_t rel = mx_checkpoint_release(ck, big->data, big->nbytes);
    size_t after = mx_test_rss_bytes();
    long pg = sysconf(_SC_PAGESIZE);
    CHECK_MSG(rel > big->nbytes - 2 * (size_t)pg && rel <= big->nbytes && rel % (size_t)pg == 0,
              "released %zu of %zu bytes", rel, big->nbytes);
    CHECK_MSG(before == 0 || before - after > big->nbytes / 2,
              "RSS %zu -> %zu bytes after releasing %zu", before, after, rel);
    CHECK(memcmp(big->data, w, sizeof(float) * N * K) == 0);  // read back from the file
    // A tensor smaller than a page has no whole page to release.
    CHECK(mx_checkpoint_release(ck, sm->data, sm->nbytes) == 0);
    CHECK(((const float *)sm->data)[6] == 6.0f);
    // Outside the mappings: nothing, never an error.
    CHECK(mx_checkpoint_release(ck, w, sizeof(float) * N * K) == 0);
    CHECK(mx_checkpoint_release(NULL, big->data, big->nbytes) == 0);
    CHECK(mx_checkpoint_release(ck, big->data, 0) == 0);
    CHECK(w[12345] == (float)(12345 % 1000) * 0.001f);  // the heap copy was not touched
  }
  mx_checkpoint_close(ck);
  unlink(path);
  rmdir(dir);
  free(w);
  free(small);
  return mx_test_finish();
}
