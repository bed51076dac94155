// The load progress line (issue 29): while a model loads and a backend packs its weights, one
// line on stderr, rewritten in place ("packing weights: 412 / 692 MB (180 MB/s)"), then erased.
// Only on a terminal: a log or a pipe gets nothing, and so do -q and the --json modes (the
// commands ask for it with `wanted`). The library only calls the hook (base.h's mx_progress_t).
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

// At most this many redraws a second: a line per tensor would flood a slow terminal.
enum { REDRAWS_PER_S = 10 };

typedef struct progress_line {
  const char *stage;  // the stage being shown (a static string of the library)
  double t0;          // when it began
  double drawn_at;    // when the line was last drawn (0: not yet in this stage)
  bool on_screen;     // a line is there to erase
} progress_line_t;

static progress_line_t g_line;

// "692 MB", "2.41 GB" (decimal units, as disk sizes are given).
static void format_bytes(char *buf, size_t cap, double b) {
  if (b >= 1e9)
    snprintf(buf, cap, "%.2f GB", b / 1e9);
  else if (b >= 1e6)
    snprintf(buf, cap, "%.0f MB", b / 1e6);
  else
    snprintf(buf, cap, "%.0f kB", b / 1e3);
}

static void draw(void *user, const char *stage, uint64_t done, uint64_t total) {
  progress_line_t *p = user;
  double t = mx_cli_now();
  if (!p->stage || strcmp(p->stage, stage) != 0) *p = (progress_line_t){stage, t, 0, p->on_screen};
  if (done < total && p->drawn_at > 0 && t - p->drawn_at < 1.0 / REDRAWS_PER_S) return;
  p->drawn_at = t;
  char d[32], n[32], r[32];
  format_bytes(d, sizeof d, (double)done);
  format_bytes(n, sizeof n, (double)total);
  format_bytes(r, sizeof r, t > p->t0 ? (double)done / (t - p->t0) : 0.0);
  // \r and "erase to the end of the line" (ECMA-48 EL): the line is rewritten in place.
  fprintf(stderr, "\r\033[K%s weights: %s / %s (%s/s)", stage, d, n, r);
  fflush(stderr);
  p->on_screen = true;
}

mx_progress_t mx_cli_progress(bool wanted) {
  if (!wanted || !isatty(STDERR_FILENO)) return (mx_progress_t){0};
  return (mx_progress_t){draw, &g_line};
}

void mx_cli_progress_end(void) {
  if (g_line.on_screen) {
    fputs("\r\033[K", stderr);
    fflush(stderr);
  }
  g_line = (progress_line_t){0};
}
