// One model family = one file (src/model/<family>.c) and one registration: the family's
// config.json parser (defaults of its transformers *Config class) and its graph description
// (the flags it sets on the shared transformer core, graph_core.c). The registry (family.c)
// lists every family once; config.c and graph_arch.c find a family there by model_type.
//
// Adding a family: write src/model/<family>.c defining `const mx_family_t mx_family_<name>`,
// and add <name> to MX_FAMILIES in family.c.
#ifndef MLXCEL_MODEL_FAMILY_H
#define MLXCEL_MODEL_FAMILY_H

#include <stddef.h>

#include "model/config_internal.h"
#include "model/graph_internal.h"

typedef struct mx_family {
  const char *model_type;  // config.json "model_type"
  // Fills cfg from the root object of config.json (o->src names the file in messages).
  mx_status_t (*parse_config)(const mx_cfg_obj_t *o, mx_model_config_t *cfg);
  // Fills *a from a parsed config: mx_arch_base, then what the family changes.
  mx_status_t (*arch)(const mx_model_config_t *cfg, mx_arch_t *a);
} mx_family_t;

// The family registered for model_type, NULL when none is (static storage).
const mx_family_t *mx_family_find(const char *model_type);
// The registered model types, ", "-separated in registration order, into buf[cap] (truncated
// to fit); returns buf.
const char *mx_family_list(char *buf, size_t cap);

#endif  // MLXCEL_MODEL_FAMILY_H
