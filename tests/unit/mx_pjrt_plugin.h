// The real PJRT CPU plugin of the test environment, for the tests of the PJRT loader and of the
// xla backend: its path is asked of the test environment's Python ($MX_PYTHON), which has
// lammps-jax-pjrt-cpu installed (tests/requirements.txt, ADR 0007).
#ifndef MX_TEST_PJRT_PLUGIN_H
#define MX_TEST_PJRT_PLUGIN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mx_test.h"

// The plugin's path in buf, or NULL and a failed check saying what to install: a missing
// plugin fails the test, never skips it.
static inline const char *mx_test_pjrt_plugin(char *buf, size_t n) {
  const char *py = getenv("MX_PYTHON");
  char cmd[4200];
  snprintf(cmd, sizeof cmd,
           "'%s' -c 'import lammps_jax_pjrt_cpu as p; print(p.PLUGIN_PATH)' 2>/dev/null",
           py ? py : "python3");
  FILE *f = popen(cmd, "r");
  bool ok = f && fgets(buf, (int)n, f) != NULL;
  if (f) ok = pclose(f) == 0 && ok;
  if (ok) buf[strcspn(buf, "\n")] = '\0';
  CHECK_MSG(ok && buf[0],
            "the PJRT CPU plugin (lammps-jax-pjrt-cpu in tests/requirements.txt) is not in the "
            "test environment %s: run scripts/venv.sh",
            py ? py : "(MX_PYTHON unset)");
  return ok && buf[0] ? buf : NULL;
}

#endif  // MX_TEST_PJRT_PLUGIN_H
