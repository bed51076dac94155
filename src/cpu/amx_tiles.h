// The AMX tile configuration as LDTILECFG reads it (64 bytes, palette 1): per tile its rows and
// its bytes per row. Shared by the AMX kernels (kernels_lowp_amx.c, kernels_q_amx.c).
#ifndef MX_CPU_AMX_TILES_H
#define MX_CPU_AMX_TILES_H

#include <stdint.h>

typedef struct mx_amx_cfg {
  uint8_t palette, start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
} mx_amx_cfg_t;

#endif  // MX_CPU_AMX_TILES_H
