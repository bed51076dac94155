// An impostor PJRT plugin for test_pjrt: exports GetPjrtApi, but reports an interface major the
// loader does not speak. The loader must refuse it from the version alone, before calling any
// entry of the table (all of them are NULL here, so a call would crash the test).
#include "backends/pjrt_api.h"

static mx_pj_api_t g_api = {
    .size = sizeof(mx_pj_api_t),
    .version = {.size = MX_PJ_SIZE(mx_pj_version_t, minor), .major = MX_PJ_MAJOR + 1, .minor = 3},
};

__attribute__((visibility("default"))) const mx_pj_api_t *GetPjrtApi(void);
const mx_pj_api_t *GetPjrtApi(void) { return &g_api; }
