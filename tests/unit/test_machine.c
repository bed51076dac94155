// Machine limits library: the measurements run on small sizes, give positive finite numbers
// with median <= best, and bad arguments are refused.
#include <math.h>
#include <string.h>

#include "mlxcel/machine.h"
#include "mx_test.h"

static void test_measure(void) {
  mx_cpu_pool_t *pool = NULL;
  CHECK_OK(mx_cpu_pool_create(2, &pool));
  if (!pool) return;
  double med = 0, best = 0;
  CHECK_OK(mx_machine_bandwidth(pool, (size_t)8 << 20, 3, &med, &best));
  CHECK(med > 0 && isfinite(med) && med <= best);
  // Sizes that do not divide evenly among threads.
  CHECK_OK(mx_machine_bandwidth(pool, 4096 + 4 * 77, 1, &med, &best));
  CHECK(med > 0 && med == best);
  CHECK_OK(mx_machine_peak(pool, 0.01, 3, &med, &best));
  CHECK(med > 0 && isfinite(med) && med <= best);
  CHECK(mx_machine_bandwidth(pool, 100, 1, &med, &best) == MX_ERR_INVALID_ARG);
  CHECK(mx_machine_bandwidth(pool, 1 << 20, 0, &med, &best) == MX_ERR_INVALID_ARG);
  CHECK(mx_machine_peak(pool, 0, 1, &med, &best) == MX_ERR_INVALID_ARG);
  CHECK(mx_machine_peak(NULL, 0.01, 1, &med, &best) == MX_ERR_INVALID_ARG);
  mx_cpu_pool_destroy(pool);

  mx_machine_opts_t o;
  memset(&o, 0, sizeof o);
  o.threads = 1;
  o.bw_bytes = (size_t)4 << 20;
  o.reps = 1;
  o.peak_seconds = 0.01;
  mx_machine_info_t m;
  CHECK_OK(mx_machine_measure(&o, &m));
  CHECK(m.threads == 1 && m.bandwidth_gbs > 0 && m.peak_gflops > 0 && m.reps == 1);
  CHECK(m.bw_bytes == o.bw_bytes);
  CHECK(strcmp(m.loop_isa, mx_machine_loop_isa()) == 0);
  const char *isa = mx_machine_loop_isa();
  CHECK(!strcmp(isa, "avx512") || !strcmp(isa, "avx2") || !strcmp(isa, "scalar"));
}

int main(void) {
  test_measure();
  return mx_test_finish();
}
