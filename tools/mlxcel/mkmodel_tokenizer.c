// tokenizer.json (a byte-level BPE sized to the preset's vocabulary, with its layout's special
// tokens) and tokenizer_config.json (special token strings, chat template) of a preset.
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "mkmodel.h"

// GPT-2 bytes-to-unicode: printable Latin-1 bytes map to themselves, the others to U+0100 on.
static void byte_chars(char out[256][4]) {
  int next = 256;
  for (int b = 0; b < 256; b++) {
    bool keep = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    int cp = keep ? b : next++;
    if (cp < 0x80) {
      out[b][0] = (char)cp;
      out[b][1] = 0;
    } else {
      out[b][0] = (char)(0xC0 | (cp >> 6));
      out[b][1] = (char)(0x80 | (cp & 0x3F));
      out[b][2] = 0;
    }
  }
}

// Merge m: pairs of byte characters in diagonal order of (rank a + rank b), frequent pairs
// first (m < 65536), then pair (m - 65536) / 256 followed by character (m - 65536) % 256.
static void merge_halves(int32_t m, const int *order, char bc[256][4], char l[16], char r[16]) {
  int32_t pi = m < 65536 ? m : (m - 65536) / 256;
  int32_t s = 0, cnt = 0;
  while (cnt + (s < 256 ? s + 1 : 511 - s) <= pi) {
    cnt += s < 256 ? s + 1 : 511 - s;
    s++;
  }
  int32_t a = (s < 256 ? 0 : s - 255) + (pi - cnt), b = s - a;
  if (m < 65536) {
    snprintf(l, 16, "%s", bc[order[a]]);
    snprintf(r, 16, "%s", bc[order[b]]);
  } else {
    snprintf(l, 16, "%s%s", bc[order[a]], bc[order[b]]);
    snprintf(r, 16, "%s", bc[order[(m - 65536) % 256]]);
  }
}

static int32_t n_bottom(const mk_preset_t *p) {
  int32_t n = 0;
  while (n < 8 && p->layout->bottom[n]) n++;
  return n;
}

static void added_tokens(const mk_preset_t *p, mx_strbuf_t *sb) {
  int32_t n_special = mk_special_count(p), nb = n_bottom(p);
  mx_strbuf_puts(sb, "  \"added_tokens\": [");
  for (int32_t k = 0; k < n_special; k++) {
    char name[64];
    mk_special_name(p, k, name, sizeof name);
    int32_t id = k < nb ? k : p->vocab - n_special + k;
    mx_strbuf_printf(sb,
                     "%s\n    {\"id\": %d, \"content\": \"%s\", \"single_word\": false, "
                     "\"lstrip\": false, \"rstrip\": false, \"normalized\": false, "
                     "\"special\": true}",
                     k ? "," : "", (int)id, name);
  }
  for (int32_t k = 0; k < 12 && p->layout->additional[k]; k++) {
    mx_strbuf_printf(sb,
                     ",\n    {\"id\": %d, \"content\": \"%s\", \"single_word\": false, "
                     "\"lstrip\": false, \"rstrip\": false, \"normalized\": false, "
                     "\"special\": true}",
                     (int)(p->vocab + k), p->layout->additional[k]);
  }
  mx_strbuf_puts(sb, "\n  ],\n");
}

static void post_processor(const mk_preset_t *p, mx_strbuf_t *sb) {
  const char *bos = p->layout->bos;
  if (p->layout->add_bos) {
    mx_strbuf_printf(sb,
                     "  \"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": "
                     "[{\"SpecialToken\": {\"id\": \"%s\", \"type_id\": 0}}, {\"Sequence\": "
                     "{\"id\": \"A\", \"type_id\": 0}}], \"pair\": [], \"special_tokens\": "
                     "{\"%s\": {\"id\": \"%s\", \"ids\": [%d], \"tokens\": [\"%s\"]}}},\n",
                     bos, bos, bos, (int)mk_special_id(p, bos), bos);
  } else {
    mx_strbuf_puts(sb,
                   "  \"post_processor\": {\"type\": \"ByteLevel\", \"add_prefix_space\": true, "
                   "\"trim_offsets\": false, \"use_regex\": true},\n");
  }
}

// Vocabulary: the 256 byte tokens, then merge tokens (pairs of byte characters in order of
// English frequency, then byte triples) up to vocab - n_special regular tokens.
void mk_tokenizer_json(const mk_preset_t *p, mx_strbuf_t *sb) {
  char bc[256][4];
  byte_chars(bc);
  // Character order for merges: space, lowercase by frequency, uppercase, digits, the rest.
  int order[256], n_order = 0;
  bool used[256] = {false};
  const char *pref =
      " etaoinshrdlcumwfgypbvkjxqzETAOINSHRDLCUMWFGYPBVKJXQZ0123456789.,'\"-!?:;()\n";
  for (const char *c = pref; *c; c++) {
    order[n_order++] = (uint8_t)*c;
    used[(uint8_t)*c] = true;
  }
  for (int b = 0; b < 256; b++) {
    if (!used[b]) order[n_order++] = b;
  }
  int32_t n_regular = p->vocab - mk_special_count(p);
  int32_t n_merges = n_regular - 256;
  if (n_merges < 0) n_merges = 0;

  mx_strbuf_puts(sb, "{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n");
  added_tokens(p, sb);
  mx_strbuf_puts(sb,
                 "  \"normalizer\": null,\n"
                 "  \"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, "
                 "\"trim_offsets\": true, \"use_regex\": true},\n");
  post_processor(p, sb);
  mx_strbuf_puts(sb,
                 "  \"decoder\": {\"type\": \"ByteLevel\", \"add_prefix_space\": true, "
                 "\"trim_offsets\": true, \"use_regex\": true},\n"
                 "  \"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": null, "
                 "\"continuing_subword_prefix\": null, \"end_of_word_suffix\": null, "
                 "\"fuse_unk\": false, \"byte_fallback\": false, \"ignore_merges\": false,\n"
                 "    \"vocab\": {");
  int32_t id = n_bottom(p);
  char l[16], r[16], tok[32];
  for (int32_t i = 0; i < n_regular; i++) {
    if (i < 256) {
      memcpy(tok, bc[i & 255], 4);
    } else {
      merge_halves(i - 256, order, bc, l, r);
      snprintf(tok, sizeof tok, "%s%s", l, r);
    }
    mx_strbuf_puts(sb, i ? ", " : "");
    if (i % 8 == 0) mx_strbuf_puts(sb, "\n      ");
    mx_cli_json_string(sb, tok);
    mx_strbuf_printf(sb, ": %d", (int)id++);
  }
  mx_strbuf_puts(sb, "\n    },\n    \"merges\": [");
  for (int32_t m = 0; m < n_merges; m++) {
    merge_halves(m, order, bc, l, r);
    mx_strbuf_puts(sb, m ? ", " : "");
    if (m % 8 == 0) mx_strbuf_puts(sb, "\n      ");
    mx_strbuf_puts(sb, "[");
    mx_cli_json_string(sb, l);
    mx_strbuf_puts(sb, ", ");
    mx_cli_json_string(sb, r);
    mx_strbuf_puts(sb, "]");
  }
  mx_strbuf_puts(sb, "\n    ]\n  }\n}\n");
}

void mk_tokenizer_config_json(const mk_preset_t *p, mx_strbuf_t *sb) {
  const mk_layout_t *t = p->layout;
  mx_strbuf_printf(sb, "{\n  \"bos_token\": \"%s\",\n", t->bos);
  if (t->chat_template) {
    mx_strbuf_puts(sb, "  \"chat_template\": ");
    mx_cli_json_string(sb, t->chat_template);
    mx_strbuf_puts(sb, ",\n");
  }
  mx_strbuf_printf(sb,
                   "  \"clean_up_tokenization_spaces\": false,\n  \"eos_token\": \"%s\",\n"
                   "  \"model_max_length\": %lld,\n",
                   t->eot ? t->eot : t->eos, (long long)p->max_pos);
  if (t->pad) mx_strbuf_printf(sb, "  \"pad_token\": \"%s\",\n", t->pad);
  mx_strbuf_puts(sb, "  \"tokenizer_class\": \"PreTrainedTokenizerFast\"\n}\n");
}
