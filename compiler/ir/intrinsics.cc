#include "compiler/ir/intrinsics.h"

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"

namespace kiln::ir {
namespace {

// The wgmma shapes: N = 8, 16, ..., 256, and per N the names MakeTable
// generates: {f16, bf16} x {shared A, register A}, then {e4m3, e5m2}.
constexpr int kWgmmaNs = 256 / 8;
constexpr int kWgmmaNamesPerN = 2 * 2 + 2;

// Storage for the generated wgmma names (the table holds string_views);
// reserved up front for all of them, so that no push_back reallocates and
// invalidates a view.
std::vector<std::string>& wgmma_names() {
  static std::vector<std::string>* names = [] {
    auto* v = new std::vector<std::string>;
    v->reserve(kWgmmaNs * kWgmmaNamesPerN);
    return v;
  }();
  return *names;
}

std::vector<IntrinsicInfo> MakeTable() {
  using A = IntrinsicArg;
  std::vector<IntrinsicInfo> t;
  t.push_back({"sync_threads", {}, false});
  for (std::string_view n : {"ldmatrix_x1", "ldmatrix_x2", "ldmatrix_x4", "ldmatrix_x1_trans",
                             "ldmatrix_x2_trans", "ldmatrix_x4_trans"}) {
    t.push_back({n, {A::kAddress, A::kAddress}, true});
  }
  for (std::string_view n :
       {"mma_m16n8k16_f16", "mma_m16n8k16_bf16", "mma_m16n8k8_tf32", "mma_m16n8k32_s8"}) {
    t.push_back({n, {A::kAddress, A::kAddress, A::kAddress, A::kAddress}, true});
  }
  for (std::string_view n : {"cp_async_4", "cp_async_8", "cp_async_16"}) {
    t.push_back({n, {A::kAddress, A::kAddress, A::kValue}, false});
  }
  t.push_back({"cp_async_commit", {}, false});
  t.push_back({"cp_async_wait", {A::kConstInt}, false});
  for (std::string_view n : {"copy_2", "copy_4", "copy_8", "copy_16"}) {
    t.push_back({n, {A::kAddress, A::kAddress}, false});
  }
  // Hopper warpgroup MMA (sm_90a): D(64xN) += A(64xK) * B(KxN), K = 16 for
  // 16-bit and 32 for fp8 operands, both operands in shared memory;
  // constants: trans A, trans B (0 for fp8), then A's and B's leading byte
  // offset, stride byte offset and swizzle mode.
  t.push_back({"fence_proxy_async", {}, true});
  t.push_back({"wgmma_fence", {}, true});
  t.push_back({"wgmma_fence_tma", {}, true});
  t.push_back({"wgmma_commit", {}, true});
  t.push_back({"wgmma_wait", {A::kConstInt}, true});
  t.push_back({"wgmma_fence_regs", {A::kAddress, A::kConstInt}, true});
  const size_t reserved = wgmma_names().capacity();
  for (int n = 8; n <= 256; n += 8) {
    for (std::string_view ty : {"f16", "bf16"}) {
      wgmma_names().push_back(absl::StrCat("wgmma_m64n", n, "k16_", std::string(ty)));
      std::vector<A> args = {A::kAddress, A::kAddress, A::kAddress};
      args.insert(args.end(), 8, A::kConstInt);
      t.push_back({wgmma_names().back(), std::move(args), true});
      // The register form: A is 8 16-bit registers of the thread; the
      // constants are B's (trans B, leading/stride byte offsets, swizzle).
      wgmma_names().push_back(absl::StrCat("wgmma_m64n", n, "k16_rs_", std::string(ty)));
      std::vector<A> rs = {A::kAddress, A::kAddress, A::kAddress};
      rs.insert(rs.end(), 4, A::kConstInt);
      t.push_back({wgmma_names().back(), std::move(rs), true});
    }
    // fp8: the shared-memory form only (K-major operands, 32 elements of K).
    for (std::string_view ty : {"e4m3", "e5m2"}) {
      wgmma_names().push_back(absl::StrCat("wgmma_m64n", n, "k32_", std::string(ty)));
      std::vector<A> args = {A::kAddress, A::kAddress, A::kAddress};
      args.insert(args.end(), 8, A::kConstInt);
      t.push_back({wgmma_names().back(), std::move(args), true});
    }
  }
  // More names than kWgmmaNamesPerN counts would have moved the strings
  // that the views above point into.
  if (wgmma_names().capacity() != reserved) std::abort();
  // Hopper asynchronous data movement (kiln/{cuda,cpu}/tma.h).
  t.push_back({"mbarrier_init", {A::kAddress, A::kConstInt}, false});
  t.push_back({"fence_barrier_init", {}, false});
  t.push_back({"mbarrier_arrive", {A::kAddress}, false});
  t.push_back({"mbarrier_arrive_expect_tx", {A::kAddress, A::kConstInt}, false});
  t.push_back({"mbarrier_expect_tx", {A::kAddress, A::kValue}, false});
  t.push_back({"mbarrier_wait", {A::kAddress, A::kValue}, false});
  t.push_back({"prefetch_tma_desc", {A::kConstInt}, false});
  for (int rank = 1; rank <= 5; ++rank) {
    static constexpr std::string_view kTma[] = {"tma_load_1d", "tma_load_2d", "tma_load_3d",
                                                "tma_load_4d", "tma_load_5d"};
    std::vector<A> args = {A::kAddress, A::kAddress, A::kConstInt};
    args.insert(args.end(), static_cast<size_t>(rank), A::kValue);
    t.push_back({kTma[rank - 1], args, false});
    static constexpr std::string_view kTmaPair[] = {
        "tma_load_mc_1d", "tma_load_mc_2d", "tma_load_mc_3d", "tma_load_mc_4d", "tma_load_mc_5d"};
    t.push_back({kTmaPair[rank - 1], std::move(args), false});
  }
  for (int rank = 1; rank <= 5; ++rank) {
    static constexpr std::string_view kStore[] = {"tma_store_1d", "tma_store_2d", "tma_store_3d",
                                                  "tma_store_4d", "tma_store_5d"};
    std::vector<A> args = {A::kAddress, A::kConstInt};
    args.insert(args.end(), static_cast<size_t>(rank), A::kValue);
    t.push_back({kStore[rank - 1], std::move(args), false});
  }
  t.push_back({"tma_store_commit", {}, false});
  t.push_back({"tma_store_wait", {A::kConstInt}, false});
  t.push_back({"tma_store_wait_read", {A::kConstInt}, false});
  t.push_back({"mbarrier_arrive_peer", {A::kAddress}, false});
  t.push_back({"cluster_sync", {}, false});
  t.push_back({"named_barrier_sync", {A::kConstInt, A::kConstInt}, false});
  t.push_back({"named_barrier_arrive", {A::kConstInt, A::kConstInt}, false});
  t.push_back({"setmaxnreg_inc", {A::kConstInt}, true});
  t.push_back({"setmaxnreg_dec", {A::kConstInt}, true});
  t.push_back({"shfl_xor", {A::kAddress, A::kValue, A::kConstInt}, true});
  for (std::string_view n : {"atomic_add", "atomic_max", "atomic_min"}) {
    t.push_back({n, {A::kAddress, A::kValue}, false});
  }
  t.push_back({"threadfence", {}, false});
  t.push_back({"splitk_ticket", {A::kAddress, A::kAddress, A::kConstInt}, false});
  return t;
}

} // namespace

const std::vector<IntrinsicInfo>& AllIntrinsics() {
  static const std::vector<IntrinsicInfo>* table = new std::vector<IntrinsicInfo>(MakeTable());
  return *table;
}

const IntrinsicInfo* FindIntrinsic(std::string_view name) {
  for (const IntrinsicInfo& info : AllIntrinsics()) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

} // namespace kiln::ir
