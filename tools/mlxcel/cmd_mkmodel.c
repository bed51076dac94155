// `mlxcel mkmodel`: writes a random-weight checkpoint of a known model shape (config.json,
// generation_config.json, model.safetensors, a byte-level BPE tokenizer.json,
// tokenizer_config.json) for benchmarks and tests: speed does not depend on the weight values.
// The families and presets are data in mkmodel_presets.c.
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "mkmodel.h"
#include "mlxcel/base.h"
#include "mlxcel/model.h"

static void mkmodel_usage(FILE *out) {
  fprintf(out,
          "Usage: mlxcel mkmodel [--arch NAME] --preset NAME -o DIR [--dtype f32|f16|bf16]\n"
          "                      [--seed S] [--force] [-q]\n"
          "\n"
          "Writes a checkpoint with random weights (seeded, N(0, 0.02); norm weights 1) of a\n"
          "known model shape into DIR: config.json (the keys transformers' save_pretrained\n"
          "writes for the family), generation_config.json, model.safetensors (every tensor the\n"
          "family's graph reads, with Hugging Face names), a byte-level BPE tokenizer.json\n"
          "sized to the vocabulary with the family's special tokens, and tokenizer_config.json\n"
          "(with a chat template in the family's format, except for Llama 3 base shapes).\n"
          "Vision-language presets (qwen2_vl, qwen2_5_vl, qwen3_vl, gemma3, llava, molmo2)\n"
          "also write the vision tower's tensors, its vision_config, the image token ids of the\n"
          "tokenizer and preprocessor_config.json: `mlxcel bench --image PATH` runs them.\n"
          "Gemma 3n's (--arch gemma3n) write its audio tower, audio_config and audio token ids:\n"
          "`mlxcel bench --audio PATH` runs them.\n"
          "Speed does not depend on weight values: these models are for benchmarks and tests.\n"
          "\n"
          "Options:\n"
          "  --arch NAME        architecture (model_type), needed only for `tiny` (a preset\n"
          "                     of every one): %s\n"
          "  --preset NAME      model shape (below; every architecture has `tiny`)\n"
          "  -o, --output DIR   directory to write (created; must be empty unless --force)\n"
          "  --dtype T          weight dtype: f32 (default), f16, bf16\n"
          "  --seed S           random seed (default 0); same seed, same bytes\n"
          "  --force            overwrite the files in a non-empty DIR\n"
          "  -q, --quiet        no progress on stderr\n"
          "  -h, --help         show this help\n"
          "\n"
          "Presets (shape: hidden, intermediate, layers, query/kv heads, head_dim, vocab;\n"
          "mixtures of experts: experts, selected per token, an expert's intermediate size):\n",
          mk_arch_list());
  for (int32_t i = 0; i < mk_preset_count(); i++) {
    const mk_preset_t *p = mk_preset_at(i);
    fprintf(out, "  %-11s %-15s h%d i%d L%d q%d/kv%d d%d v%d%s: %s\n", p->family->arch, p->name,
            (int)p->hidden, (int)p->inter, (int)p->layers, (int)p->heads, (int)p->kv_heads,
            (int)p->head_dim, (int)p->vocab, p->untied ? "" : " tied", p->desc);
    if (p->experts) {
      fprintf(out, "%30sexperts %d, top %d, expert i%d%s\n", "", (int)p->experts, (int)p->top_k,
              (int)(p->moe_inter ? p->moe_inter : p->inter),
              p->shared_inter ? ", shared expert" : "");
    }
    if (p->note) fprintf(out, "%30s(%s)\n", "", p->note);
  }
  fprintf(out, "\nExit status: 0 success, 1 failure, 2 bad command line, 3 unwritable DIR.\n");
  mx_cli_env_usage(out, "mkmodel");
}

// ---- Files ----

static mx_status_t write_text(const char *dir, const char *file, const mx_strbuf_t *sb) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  if (sb->oom) return mx_error_set(MX_ERR_NOMEM, "mkmodel: out of memory");
  FILE *f = fopen(path, "wb");
  if (!f) return mx_error_set(MX_ERR_IO, "cannot create %s: %s", path, strerror(errno));
  size_t len = sb->len;
  bool ok = fwrite(sb->data, 1, len, f) == len;
  ok = (fclose(f) == 0) && ok;
  return ok ? MX_OK : mx_error_set(MX_ERR_IO, "%s: write failed", path);
}

// Writes every file of the checkpoint, then reads it back as the engine will.
static mx_status_t write_model(const char *dir, const mk_preset_t *p, mx_elem_type_t dt,
                               uint64_t seed, bool quiet) {
  mx_model_config_t cfg;
  mx_strbuf_t sb;
  mx_strbuf_init(&sb);
  mx_status_t st = mk_config_json(p, dt, &sb, &cfg);
  if (st == MX_OK) st = write_text(dir, "config.json", &sb);
  mx_strbuf_free(&sb);
  void (*const gens[])(const mk_preset_t *, mx_strbuf_t *) = {
      mk_generation_config_json, mk_tokenizer_json, mk_tokenizer_config_json,
      mk_preprocessor_config_json};
  const char *files[] = {"generation_config.json", "tokenizer.json", "tokenizer_config.json",
                         "preprocessor_config.json"};
  const bool pre = p->vision && p->vision->preprocessor;  // a tower's processor file
  for (int i = 0; i < (pre ? 4 : 3) && st == MX_OK; i++) {
    mx_strbuf_init(&sb);
    gens[i](p, &sb);
    st = write_text(dir, files[i], &sb);
    mx_strbuf_free(&sb);
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  if (st == MX_OK) st = mk_write_weights(path, p, &cfg, dt, seed, quiet);
  if (st == MX_OK) {
    // Read back what was written: config, header validation, tensor names and shapes.
    mx_checkpoint_t *ck = NULL;
    st = mx_config_load(dir, &cfg);
    if (st == MX_OK) st = mx_checkpoint_open(dir, &ck);
    if (st == MX_OK) st = mx_moe_unstack(&cfg, ck);  // stacked experts (MXFP4) as the loader does
    if (st == MX_OK) st = mx_model_check_weights(&cfg, ck);
    mx_checkpoint_close(ck);
    if (st != MX_OK) mx_error_prefix(st, "the written checkpoint does not load");
  }
  return st;
}

// ---- Directory handling ----

// 1: created or empty, 0: non-empty, -1: error (message printed).
static int prepare_dir(const char *dir) {
  struct stat sb;
  if (stat(dir, &sb) != 0) {
    if (errno != ENOENT) {
      fprintf(stderr, "mlxcel mkmodel: cannot access %s: %s\n", dir, strerror(errno));
      return -1;
    }
    // mkdir -p
    char path[4096];
    snprintf(path, sizeof path, "%s", dir);
    for (char *s = path + 1; *s; s++) {
      if (*s != '/') continue;
      *s = 0;
      if (mkdir(path, 0777) != 0 && errno != EEXIST) break;
      *s = '/';
    }
    if (mkdir(path, 0777) != 0 && errno != EEXIST) {
      fprintf(stderr, "mlxcel mkmodel: cannot create %s: %s\n", dir, strerror(errno));
      return -1;
    }
    return 1;
  }
  if (!S_ISDIR(sb.st_mode)) {
    fprintf(stderr, "mlxcel mkmodel: %s exists and is not a directory\n", dir);
    return -1;
  }
  DIR *d = opendir(dir);
  if (!d) {
    fprintf(stderr, "mlxcel mkmodel: cannot read %s: %s\n", dir, strerror(errno));
    return -1;
  }
  int empty = 1;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) empty = 0;
  }
  closedir(d);
  return empty;
}

int mx_cli_cmd_mkmodel(int argc, char **argv) {
  const char *cmd = "mkmodel", *arch = NULL, *preset = NULL, *dir = NULL, *dtype = "f32";
  int64_t seed = 0;
  bool force = false, quiet = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = NULL;
    int r;
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      mkmodel_usage(stdout);
      return MX_EXIT_OK;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--arch", NULL, &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      arch = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--preset", NULL, &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      preset = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--output", "-o", &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      dir = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--dtype", NULL, &v)) != 0) {
      if (r < 0) return MX_EXIT_USAGE;
      dtype = v;
    } else if ((r = mx_cli_opt(argc, argv, &i, cmd, "--seed", NULL, &v)) != 0) {
      if (r < 0 || !mx_cli_parse_int(cmd, "--seed", v, 0, INT64_MAX, &seed)) return MX_EXIT_USAGE;
    } else if (strcmp(a, "--force") == 0) {
      force = true;
    } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
      quiet = true;
    } else if (a[0] == '-') {
      return mx_cli_usage_error(cmd, mkmodel_usage, "unknown option '%s'", a);
    } else {
      return mx_cli_usage_error(cmd, mkmodel_usage, "unexpected argument '%s'", a);
    }
  }
  if (arch && !mk_family_find(arch)) {
    return mx_cli_usage_error(cmd, mkmodel_usage, "--arch '%s' is not supported (supported: %s)",
                              arch, mk_arch_list());
  }
  if (!preset) return mx_cli_usage_error(cmd, mkmodel_usage, "missing --preset NAME");
  int32_t n_found = 0;
  const mk_preset_t *p = mk_preset_find(arch, preset, &n_found);
  if (!p && arch) {
    return mx_cli_usage_error(cmd, mkmodel_usage, "unknown --preset '%s' for --arch %s", preset,
                              arch);
  }
  if (!p) return mx_cli_usage_error(cmd, mkmodel_usage, "unknown --preset '%s'", preset);
  if (n_found > 1) {
    return mx_cli_usage_error(cmd, mkmodel_usage,
                              "missing --arch: every architecture has a preset '%s' (%s)", preset,
                              mk_arch_list());
  }
  arch = p->family->arch;
  if (!dir) return mx_cli_usage_error(cmd, mkmodel_usage, "missing -o DIR");
  mx_elem_type_t dt = strcmp(dtype, "f32") == 0    ? MX_ELEM_F32
                      : strcmp(dtype, "f16") == 0  ? MX_ELEM_F16
                      : strcmp(dtype, "bf16") == 0 ? MX_ELEM_BF16
                                                   : MX_ELEM_INVALID;
  if (dt == MX_ELEM_INVALID) {
    return mx_cli_usage_error(cmd, mkmodel_usage, "--dtype '%s' is not f32, f16 or bf16", dtype);
  }
  int pd = prepare_dir(dir);
  if (pd < 0) return MX_EXIT_IO;
  if (pd == 0 && !force) {
    fprintf(stderr, "mlxcel mkmodel: error: %s is not empty (use --force to overwrite its files)\n",
            dir);
    return MX_EXIT_FAILED;
  }
  mx_status_t st = write_model(dir, p, dt, (uint64_t)seed, quiet);
  if (st != MX_OK) return mx_cli_fail(cmd, st);
  if (!quiet) {
    fprintf(stderr, "mlxcel mkmodel: wrote %s (%s %s, %s, seed %lld)\n", dir, arch, p->name, dtype,
            (long long)seed);
  }
  return MX_EXIT_OK;
}
