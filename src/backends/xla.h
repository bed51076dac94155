// What the "xla" backend (xla.c) tells about its work, for tests and the CLI's statistics: how
// many entries it compiled and loaded from the disk cache, the time that took, and the bytes it
// moved between host and device. Private to src/backends/, src/session/ and their tests.
#ifndef MX_BACKENDS_XLA_H
#define MX_BACKENDS_XLA_H

#include <stdint.h>

#include "mlxcel/session.h"

typedef struct mx_xla_stats {
  int32_t compiled;        // entries compiled by the plugin in this state
  int32_t cache_loaded;    // entries loaded from the disk cache instead
  int32_t cache_failed;    // cache files that could not be read, loaded or written
  double compile_seconds;  // time in compiling and loading executables
  uint64_t to_device;      // bytes copied host -> device (weights, caches' zeros, ids, pos0)
  uint64_t to_host;        // bytes copied device -> host (logits)
  uint64_t weight_bytes;   // bytes of the weights resident on the device
} mx_xla_stats_t;

// Statistics of a session on the xla backend (false for a session of another backend).
bool mx_xla_session_stats(const mx_session_t *s, mx_xla_stats_t *out);

#endif  // MX_BACKENDS_XLA_H
