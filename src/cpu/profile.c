// Step profiling of a plan (cpu_plan.h, mx_cpu_plan_set_profile): per-step wall times are
// collected by the executor (exec.c); this file switches them on and off and renders the report.
#include <stdlib.h>
#include <string.h>

#include "cpu/plan_internal.h"

mx_status_t mx_cpu_plan_set_profile(mx_cpu_plan_t *p, bool on) {
  if (!p) return mx_error_set(MX_ERR_INVALID_ARG, "mx_cpu_plan_set_profile: plan is NULL");
  free(p->prof_s);
  p->prof_s = NULL;
  p->prof_runs = 0;
  if (!on) return MX_OK;
  p->prof_s = calloc((size_t)(p->n_steps ? p->n_steps : 1), sizeof *p->prof_s);
  if (!p->prof_s) return mx_error_set(MX_ERR_NOMEM, "out of memory (profile)");
  return MX_OK;
}

// One row per distinct step label.
typedef struct prof_row {
  const char *op, *what;
  double s;
  int32_t n;
} prof_row_t;

static const char *step_op_name(const mx_step_t *s) {
  if (!s->op) return "";
  const mx_attr_t *na = s->op->code == MX_OP_COMPOSITE ? mx_op_attr(s->op, "name") : NULL;
  return na && na->s ? na->s : mx_opcode_name(s->op->code);
}

static int cmp_rows(const void *a, const void *b) {
  double x = ((const prof_row_t *)a)->s, y = ((const prof_row_t *)b)->s;
  return x < y ? 1 : x > y ? -1 : 0;
}

void mx_cpu_plan_profile_report(const mx_cpu_plan_t *p, mx_strbuf_t *sb) {
  if (!p || !p->prof_s) {
    mx_strbuf_puts(sb, "(profiling is off)\n");
    return;
  }
  if (p->prof_runs == 0) return;  // nothing measured: nothing to say
  prof_row_t *rows = calloc((size_t)(p->n_steps ? p->n_steps : 1), sizeof *rows);
  if (!rows) return;
  int32_t n = 0;
  double total = 0;
  for (int32_t i = 0; i < p->n_steps; i++) {
    const mx_step_t *s = &p->steps[i];
    const char *op = step_op_name(s), *what = s->what ? s->what : "";
    int32_t r = 0;
    while (r < n && (strcmp(rows[r].op, op) || strcmp(rows[r].what, what))) r++;
    if (r == n) rows[n++] = (prof_row_t){op, what, 0, 0};
    rows[r].s += p->prof_s[i];
    rows[r].n++;
    total += p->prof_s[i];
  }
  qsort(rows, (size_t)n, sizeof *rows, cmp_rows);
  // Barriers: those of an unprofiled run (the profiled one waits after every step to time it).
  int32_t serial = 0;
  for (int32_t i = 0; i < p->n_steps; i++) serial += !p->steps[i].parallel;
  mx_strbuf_printf(sb,
                   "@%s: %lld runs, %.3f s in %d steps (%d barriers, %d serial steps per run)\n",
                   p->f->name, (long long)p->prof_runs, total, p->n_steps, p->n_barriers, serial);
  for (int32_t r = 0; r < n; r++)
    mx_strbuf_printf(sb, "  %9.4f s %5.1f%% %5d x %s (%s)\n", rows[r].s,
                     total > 0 ? 100.0 * rows[r].s / total : 0.0, rows[r].n, rows[r].op,
                     rows[r].what);
  free(rows);
}
