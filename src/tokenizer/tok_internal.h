// Tokenizer internals shared by the loader, the encoder and the decoder.
#ifndef MX_TOK_INTERNAL_H
#define MX_TOK_INTERNAL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "mlxcel/tokenizer.h"

// Largest id accepted in a tokenizer.json: the id table is dense, so this bounds its memory.
// Real vocabularies are below 300K.
#define MX_TOK_MAX_ID (1 << 22)

// ---- string -> int32 open-addressing map (keys point into the tokenizer's arena) ----
typedef struct mx_tok_strmap_slot {
  const char *key;  // NULL = empty
  uint32_t len;
  int32_t value;
  uint64_t hash;
} mx_tok_strmap_slot_t;

typedef struct mx_tok_strmap {
  mx_tok_strmap_slot_t *slots;
  uint32_t cap;  // power of two
  uint32_t count;
} mx_tok_strmap_t;

uint64_t mx_tok_hash(const char *s, size_t n);
// Inserts key (pointer kept, not copied). Returns false on OOM; *existing = previous value or -1
// (the old value is kept when the key exists).
bool mx_tok_strmap_put(mx_tok_strmap_t *m, const char *key, size_t len, int32_t value,
                       int32_t *existing);
int32_t mx_tok_strmap_get(const mx_tok_strmap_t *m, const char *key, size_t len);  // -1 if none
void mx_tok_strmap_free(mx_tok_strmap_t *m);
// Pre-sizes for n keys (avoids rehashing while loading). False on OOM.
bool mx_tok_strmap_reserve(mx_tok_strmap_t *m, uint32_t n);

// ---- (left id, right id) -> (rank, merged id) map for BPE merges ----
typedef struct mx_tok_merge_slot {
  uint64_t key;  // (left << 32 | right) + 1; 0 = empty
  int32_t rank;
  int32_t id;
} mx_tok_merge_slot_t;

typedef struct mx_tok_mergemap {
  mx_tok_merge_slot_t *slots;
  uint32_t cap;
  uint32_t count;
} mx_tok_mergemap_t;

bool mx_tok_mergemap_put(mx_tok_mergemap_t *m, int32_t a, int32_t b, int32_t rank, int32_t id);
const mx_tok_merge_slot_t *mx_tok_mergemap_get(const mx_tok_mergemap_t *m, int32_t a, int32_t b);
void mx_tok_mergemap_free(mx_tok_mergemap_t *m);
bool mx_tok_mergemap_reserve(mx_tok_mergemap_t *m, uint32_t n);

// ---- UTF-8 helpers ----
// Length of the valid UTF-8 character at s[0..n), or 0 if invalid/incomplete. *cp = code point.
int mx_utf8_decode(const uint8_t *s, size_t n, uint32_t *cp);
int mx_utf8_encode(uint32_t cp, char out[4]);
bool mx_utf8_valid(const char *s, size_t n);
// Length of the longest prefix of s[0..n) that could still start a valid character (1..3) when
// it is an incomplete sequence at the end of the buffer; 0 if s[0..n) is invalid at once.
int mx_utf8_incomplete_len(const uint8_t *s, size_t n);
// Length (>= 1) of the maximal prefix of non-empty s that starts a valid character: the whole
// character when complete, else the "maximal subpart" a decoder replaces with one U+FFFD.
int mx_utf8_subpart(const uint8_t *s, size_t n);
// Appends s with each maximal invalid subpart replaced by U+FFFD (Rust from_utf8_lossy).
void mx_utf8_append_lossy(mx_strbuf_t *sb, const uint8_t *s, size_t n);
bool mx_unicode_is_whitespace(uint32_t cp);  // Unicode White_Space property
bool mx_unicode_is_word(uint32_t cp);        // alphanumeric or '_'

// ---- GPT-2 byte <-> unicode mapping ----
// Writes the UTF-8 of the char standing for byte b (1 or 2 bytes); returns its length.
int mx_tok_byte_utf8(int b, char out[4]);
// Byte that code point cp stands for, or -1 if cp is not in the mapping.
int mx_tok_char_byte(uint32_t cp);

// ---- Pipeline components ----
typedef enum mx_tok_norm_kind {
  MX_NORM_NFC,
  MX_NORM_NFD,
  MX_NORM_NFKC,
  MX_NORM_NFKD,
  MX_NORM_LOWERCASE,
  MX_NORM_PREPEND,
  MX_NORM_REPLACE,
  MX_NORM_STRIP,
} mx_tok_norm_kind_t;

typedef struct mx_tok_norm {
  mx_tok_norm_kind_t kind;
  const char *a;  // Prepend text / Replace string pattern (NULL when `re`)
  size_t a_len;
  const char *b;  // Replace content
  size_t b_len;
  pcre2_code *re;    // Replace regex pattern
  bool left, right;  // Strip
} mx_tok_norm_t;

typedef enum mx_tok_split_behavior {
  MX_SPLIT_REMOVED,
  MX_SPLIT_ISOLATED,
  MX_SPLIT_MERGED_PREV,
  MX_SPLIT_MERGED_NEXT,
  MX_SPLIT_CONTIGUOUS,
} mx_tok_split_behavior_t;

typedef enum mx_tok_pretok_kind {
  MX_PRETOK_SPLIT,      // regex or string pattern
  MX_PRETOK_BYTELEVEL,  // optional GPT-2 regex split, then bytes -> unicode chars
  MX_PRETOK_METASPACE,
} mx_tok_pretok_kind_t;

typedef enum mx_tok_prepend {
  MX_PREPEND_ALWAYS,
  MX_PREPEND_FIRST,
  MX_PREPEND_NEVER
} mx_tok_prepend_t;

typedef struct mx_tok_pretok {
  mx_tok_pretok_kind_t kind;
  pcre2_code *re;   // Split regex / ByteLevel regex (NULL: string pattern or no regex)
  const char *str;  // Split string pattern
  size_t str_len;
  mx_tok_split_behavior_t behavior;
  bool invert;
  bool add_prefix_space;     // ByteLevel
  mx_tok_prepend_t prepend;  // Metaspace
  bool split;                // Metaspace
  char repl[5];              // Metaspace replacement char (UTF-8)
  int repl_len;
} mx_tok_pretok_t;

typedef enum mx_tok_dec_kind {
  MX_DEC_BYTELEVEL,
  MX_DEC_METASPACE,
  MX_DEC_REPLACE,
  MX_DEC_BYTEFALLBACK,
  MX_DEC_FUSE,
  MX_DEC_STRIP,
} mx_tok_dec_kind_t;

typedef struct mx_tok_dec {
  mx_tok_dec_kind_t kind;
  const char *a;  // Replace pattern (string) / Strip content char / Metaspace replacement
  size_t a_len;
  const char *b;  // Replace content
  size_t b_len;
  pcre2_code *re;            // Replace regex pattern
  int32_t start, stop;       // Strip
  mx_tok_prepend_t prepend;  // Metaspace
} mx_tok_dec_t;

typedef struct mx_tok_added {
  const char *content;
  uint32_t len;
  int32_t id;
  bool special, lstrip, rstrip, single_word, normalized;
} mx_tok_added_t;

// Per-id table entry.
typedef struct mx_tok_entry {
  const char *piece;  // NULL: no token with this id
  uint32_t len;
  int16_t byte;  // <0xNN> byte-fallback token: NN; else -1
  uint8_t special;
  uint8_t added;
} mx_tok_entry_t;

struct mx_tokenizer {
  mx_arena_t *arena;
  mx_tok_entry_t *entries;    // [n_ids], heap
  int32_t n_ids;              // max id + 1
  mx_tok_strmap_t vocab;      // model vocabulary
  mx_tok_strmap_t added_map;  // added token content -> id
  mx_tok_mergemap_t merges;
  bool ignore_merges, byte_fallback, fuse_unk;
  int32_t unk_id;         // -1: none
  int32_t byte_ids[256];  // id of <0xNN>, -1 if absent

  mx_tok_added_t *added;  // sorted by first byte, then content length, longest first
  int32_t n_added;
  int32_t added_first[257];  // added[added_first[b] .. added_first[b + 1]) start with byte b
  bool any_normalized_added;

  mx_tok_norm_t *norms;
  int32_t n_norms;
  mx_tok_pretok_t *pretoks;
  int32_t n_pretoks;
  mx_tok_dec_t *decs;
  int32_t n_decs;
  bool has_decoder;
  int32_t *post_prefix, n_post_prefix;  // ids the post-processor adds before / after a text
  int32_t *post_suffix, n_post_suffix;

  int32_t bos_id, eos_id, pad_id;
  bool add_bos_token, clean_up_spaces;
  const char *chat_template;
};

// Loader helpers (tok_load_pipeline.c).
typedef struct cJSON cJSON;
mx_status_t mx_tok_compile_regex(const char *pattern, size_t len, const char *where,
                                 pcre2_code **out);
mx_status_t mx_tok_load_normalizer(mx_tokenizer_t *t, const cJSON *j);
mx_status_t mx_tok_load_pretokenizer(mx_tokenizer_t *t, const cJSON *j);
mx_status_t mx_tok_load_decoder(mx_tokenizer_t *t, const cJSON *j);
mx_status_t mx_tok_load_post_processor(mx_tokenizer_t *t, const cJSON *j);
void mx_tok_free_pipeline(mx_tokenizer_t *t);

// BPE of one pre-tokenized word; appends ids to *ids (heap array, *cap grows). Returns false on
// OOM.
bool mx_tok_bpe_word(const mx_tokenizer_t *t, const char *w, size_t n, int32_t **ids,
                     int32_t *n_ids, int32_t *cap);

// Appends s with every non-empty match of re replaced by rep.
mx_status_t mx_tok_replace_regex(const pcre2_code *re, const char *s, size_t n, const char *rep,
                                 size_t rn, mx_strbuf_t *out);

// Normalizes s into sb (reset first). MX_ERR_NOMEM on failure.
mx_status_t mx_tok_normalize(const mx_tokenizer_t *t, const char *s, size_t n, mx_strbuf_t *sb);

#endif  // MX_TOK_INTERNAL_H
