// Internal: JSON parsing with limits, for every JSON file the engine reads (config.json,
// generation_config.json, tokenizer.json, tokenizer_config.json, the safetensors index and
// headers). cJSON alone reports neither why nor where beyond a byte offset, and its nesting limit
// (1000) gives a bare parse failure; these give messages naming the input, the line and column,
// and the limit.
#ifndef MX_BASE_JSON_H
#define MX_BASE_JSON_H

#include <cjson/cJSON.h>

#include "mlxcel/base.h"

// Nesting the loaders accept: real files use at most 6 levels (tokenizer.json).
enum { MX_JSON_MAX_DEPTH = 64 };

// Size limits of the files read whole (bytes). Real files are far smaller: config.json a few KB,
// tokenizer.json up to ~35 MB (Gemma 3), tokenizer_config.json ~1 MB.
#define MX_CONFIG_JSON_MAX_BYTES ((size_t)16 << 20)       // config / generation_config / index
#define MX_TOKENIZER_JSON_MAX_BYTES ((size_t)256 << 20)   // tokenizer.json
#define MX_TOKENIZER_CONFIG_MAX_BYTES ((size_t)64 << 20)  // tokenizer_config.json

// Parses `len` bytes (no NUL terminator needed) as one JSON value, optionally followed by
// whitespace. Refused with MX_ERR_PARSE and a message starting "<what>: ": more than max_bytes
// bytes, nesting deeper than max_depth, invalid JSON (with line and column), trailing bytes.
// On success *out is the tree (cJSON_Delete it); on failure NULL.
mx_status_t mx_json_parse(const char *text, size_t len, size_t max_bytes, int max_depth,
                          const char *what, cJSON **out);

#endif  // MX_BASE_JSON_H
