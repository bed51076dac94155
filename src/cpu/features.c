// CPU feature detection (cpuid + XCR0 on x86-64) and core counting, done once per process.
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mlxcel/cpu.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

// XGETBV without needing the xsave target: reads XCR0 (which register states the OS saves).
static uint64_t read_xcr0(void) {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((uint64_t)hi << 32) | lo;
}

static void detect_x86(mx_cpu_features_t *f) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return;
  bool osxsave = (c >> 27) & 1, avx = (c >> 28) & 1;
  bool fma = (c >> 12) & 1, f16c = (c >> 29) & 1;
  if (!osxsave || !avx) return;
  uint64_t xcr0 = read_xcr0();
  bool ymm_ok = (xcr0 & 0x6) == 0x6;    // SSE + AVX state
  bool zmm_ok = (xcr0 & 0xe6) == 0xe6;  // + opmask, ZMM_Hi256, Hi16_ZMM
  if (!ymm_ok) return;
  f->fma = fma;
  f->f16c = f16c;
  unsigned max_leaf = __get_cpuid_max(0, NULL);
  if (max_leaf < 7) return;
  __cpuid_count(7, 0, a, b, c, d);
  unsigned max_sub = a;
  f->avx2 = (b >> 5) & 1;
  if (zmm_ok) {
    f->avx512f = (b >> 16) & 1;
    f->avx512dq = (b >> 17) & 1;
    f->avx512bw = (b >> 30) & 1;
    f->avx512vl = (b >> 31) & 1;
    f->avx512vnni = (c >> 11) & 1;
    if (max_sub >= 1) {
      unsigned a1, b1, c1, d1;
      __cpuid_count(7, 1, a1, b1, c1, d1);
      f->avx512bf16 = (a1 >> 5) & 1;
    }
  }
  // AMX: tile and bf16 units (leaf 7 EDX bits 24, 22), XCR0 bits 17-18 (XTILECFG, XTILEDATA),
  // and on Linux the per-process permission for the tile data (without it the first tile
  // instruction faults).
  bool amx = ((d >> 24) & 1) && ((d >> 22) & 1) && (xcr0 & 0x60000) == 0x60000;
#if defined(__linux__)
  if (amx) amx = syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18) == 0;
#else
  amx = false;
#endif
  f->amx_bf16 = amx && f->avx512f && f->avx512bf16;
  f->amx_int8 = amx && ((d >> 25) & 1) && f->avx512f && f->avx512vnni;
}
#endif

// SMT siblings of cpu0 from sysfs ("0-1", "0,8", "3"); 1 when unknown.
static int smt_siblings(void) {
  FILE *fp = fopen("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list", "r");
  if (!fp) return 1;
  char buf[128] = {0};
  size_t len = fread(buf, 1, sizeof buf - 1, fp);
  fclose(fp);
  buf[len] = '\0';
  int count = 0;
  const char *s = buf;
  while (*s && *s != '\n') {
    int lo = 0, hi = 0, used = 0;
    if (sscanf(s, "%d-%d%n", &lo, &hi, &used) == 2 && used > 0) {
      count += hi >= lo ? hi - lo + 1 : 1;
    } else if (sscanf(s, "%d%n", &lo, &used) == 1 && used > 0) {
      count += 1;
    } else {
      break;
    }
    s += used;
    if (*s == ',') s++;
  }
  return count > 0 ? count : 1;
}

static mx_cpu_features_t g_features;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void detect(void) {
  mx_cpu_features_t f;
  memset(&f, 0, sizeof f);
#if defined(__x86_64__) || defined(__i386__)
  detect_x86(&f);
#endif
  int logical = 0;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) logical = CPU_COUNT(&set);
  if (logical <= 0) logical = (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (logical <= 0) logical = 1;
  int smt = smt_siblings();
  f.logical_cpus = logical;
  f.physical_cores = logical / smt > 0 ? logical / smt : 1;
  g_features = f;
}

const mx_cpu_features_t *mx_cpu_features(void) {
  pthread_once(&g_once, detect);
  return &g_features;
}
