// The built-in backends, one line each. A new backend is src/backends/<name>.c, which defines
// `const mx_backend_t mx_backend_<name>`, plus its X(<name>) line here (the registry in
// src/session/backend.c and the declarations in session_internal.h expand this list). The order
// is the order error messages list the names in.
#ifndef MX_BACKENDS_BUILTIN_H
#define MX_BACKENDS_BUILTIN_H

#define MX_BUILTIN_BACKENDS(X) \
  X(interp)                    \
  X(cpu)                       \
  X(xla)

#endif  // MX_BACKENDS_BUILTIN_H
