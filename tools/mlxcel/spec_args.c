// Speculative decoding's flags, shared by generate and chat (ADR 0020): parsing, help, making
// the draft model's session, and the statistics line.
#include <string.h>

#include "cli.h"

int mx_cli_spec_opt(int argc, char **argv, int *i, const char *cmd, mx_cli_spec_t *s) {
  const char *v = NULL;
  int r;
  bool ok = true;
  if ((r = mx_cli_opt(argc, argv, i, cmd, "--speculative", NULL, &v)) != 0) {
    if (r > 0) s->mode = v;
  } else if ((r = mx_cli_opt(argc, argv, i, cmd, "--draft-tokens", NULL, &v)) != 0) {
    ok = r > 0 &&
         mx_cli_parse_int(cmd, "--draft-tokens", v, 1, MX_SPEC_MAX_TOKENS, &s->draft_tokens);
  } else if ((r = mx_cli_opt(argc, argv, i, cmd, "--draft-model", NULL, &v)) != 0) {
    if (r > 0) s->draft_dir = v;
  } else {
    return 0;
  }
  return ok && r > 0 ? 1 : -1;
}

void mx_cli_spec_help(FILE *out) {
  fputs(
      "  --speculative MODE     speculative decoding (off by default): ngram drafts the tokens\n"
      "                         that followed the latest earlier occurrence of the text's last\n"
      "                         1-3 tokens (prompt lookup: helps when the output repeats the\n"
      "                         prompt), draft a smaller model's greedy tokens (--draft-model);\n"
      "                         the model checks the drafts in one call and keeps what it would\n"
      "                         have produced itself (same greedy text, same distribution)\n"
      "  --draft-tokens K       most tokens drafted per step, 1..32 (default 7)\n"
      "  --draft-model DIR      the draft model (same tokenizer; loaded like the model)\n",
      out);
}

int mx_cli_spec_setup(const char *cmd, const mx_cli_spec_t *s, const mx_model_t *target,
                      const mx_model_load_opts_t *lo, const mx_session_opts_t *so,
                      mx_spec_opts_t *o, mx_model_t **draft, mx_session_t **ds) {
  memset(o, 0, sizeof *o);
  *draft = NULL;
  *ds = NULL;
  const char *mode = s->mode ? s->mode : s->draft_dir ? "draft" : NULL;
  if (!mode) {
    if (s->draft_tokens == 0) return MX_EXIT_OK;
    fprintf(stderr, "mlxcel %s: --draft-tokens needs --speculative ngram|draft\n", cmd);
    return MX_EXIT_USAGE;
  }
  if (strcmp(mode, "ngram") == 0) {
    o->mode = MX_SPEC_NGRAM;
  } else if (strcmp(mode, "draft") == 0) {
    o->mode = MX_SPEC_DRAFT;
  } else {
    fprintf(stderr, "mlxcel %s: --speculative: unknown mode '%s' (ngram or draft)\n", cmd, mode);
    return MX_EXIT_USAGE;
  }
  o->draft_tokens = (int32_t)s->draft_tokens;
  if (o->mode == MX_SPEC_NGRAM && s->draft_dir) {
    fprintf(stderr, "mlxcel %s: --draft-model goes with --speculative draft, not ngram\n", cmd);
    return MX_EXIT_USAGE;
  }
  if (o->mode == MX_SPEC_NGRAM) return MX_EXIT_OK;
  if (!s->draft_dir) {
    fprintf(stderr, "mlxcel %s: --speculative draft needs --draft-model DIR\n", cmd);
    return MX_EXIT_USAGE;
  }
  if (!mx_cli_check_model_dir(cmd, s->draft_dir, "config.json")) return MX_EXIT_IO;
  mx_error_clear();
  mx_status_t st = mx_cli_model_load(s->draft_dir, lo, false, draft);
  if (!st) st = mx_spec_check_draft(target, *draft);
  if (!st) st = mx_session_create(*draft, so, ds);
  if (st) {
    st = mx_error_prefix(st, "--draft-model %s", s->draft_dir);
    mx_session_destroy(*ds);
    mx_model_free(*draft);
    *ds = NULL;
    *draft = NULL;
    return mx_cli_fail(cmd, st);
  }
  o->draft = *ds;
  return MX_EXIT_OK;
}

void mx_cli_spec_stats(const mx_spec_opts_t *o, const mx_generate_stats_t *st, char *buf,
                       size_t n) {
  buf[0] = '\0';
  if (o->mode == MX_SPEC_OFF || st->spec_steps == 0) return;
  snprintf(buf, n, "; speculative %s: %.2f tokens/step, %d of %d drafts accepted",
           o->mode == MX_SPEC_NGRAM ? "ngram" : "draft",
           (double)(st->spec_accepted + st->spec_steps) / st->spec_steps, st->spec_accepted,
           st->spec_drafted);
}
