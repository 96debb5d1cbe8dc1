#include "compiler/ir/intrinsics.h"

namespace kiln::ir {
namespace {

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
  t.push_back({"shfl_xor", {A::kAddress, A::kValue, A::kConstInt}, true});
  for (std::string_view n : {"atomic_add", "atomic_max", "atomic_min"}) {
    t.push_back({n, {A::kAddress, A::kValue}, false});
  }
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
