// A user's file: widedeep.h's declarations alone (no WIDEDEEP_IMPLEMENTATION). It declares names of the
// header's tier 3 (internal: section 17's device contract, the update rules, wd_error_hold) as its own, so
// it compiles only while that block stays out of a user's translation unit. tests/run.sh (compile_check)
// compiles it with every compiler, -DWD_HAVE_CUDA -DWD_TESTING (the names those switches declare too) and
// -Wconversion, then again with -DWIDEDEEP_INTERNAL: tier 3's declarations under the same warnings.
#include "widedeep.h"
#ifndef WIDEDEEP_INTERNAL
typedef int wd_error_hold, wd_opt, wd_opt_at_step, wd_opt_adagrad, wd_opt_adam, wd_opt_ftrl, wd_opt_deep,
    wd_opt_states, wd_bf16_bits, wd_model_view, wd_model_view_get, wd_cross_bucket, wd_backend, wd_backend_desc,
    wd_step_result, wd_backend_ops, wd_device_ops, wd_backend_cpu, wd_backend_cuda, wd_devices_cuda,
    wd_comm_cuda_local_create, wd_comm_cuda_local_destroy, wd_buf, WD_BUF_COUNT, wd_buf_name, wd_plan_entry,
    wd_plan, wd_plan_make, wd_plan_from_desc, wd_plan_find, wd_xcap, wd_xcap_init, wd_xcap_step,
    wd_cuda_desc_resolve, wd_comm_timeout, wd_test_fail_parse, wd_rank_failure;
#if defined(WD_STEP_TAIL) || defined(WD_PLAN_MAX) || defined(WD_PLAN_MULTI_HOT_IDS) || defined(WD_COMM_TIMEOUT_DEFAULT)
#error "widedeep.h: a macro of tier 3 (internal) reached a user's file"
#endif
#endif
// public calls of the tiers a user sees: the cross rule (ONNX inputs), a hash, the CUDA device count
int main(void) {
    return wd_cross_hash(1, 2, 0, 7) > 6 || wd_hash_bucket("a", 1, 0, 7) > 6 || wd_cuda_device_count(0) > 1;
}
