#include "compiler/ir/dtype.h"

#include <array>
#include <utility>
#include <vector>

namespace kiln::ir {
namespace {

struct DTypeInfo {
  DType type;
  std::string_view name;
  int bits;
};

constexpr std::array<DTypeInfo, 15> kDTypes = {{
    {DType::kBool, "bool", 8},
    {DType::kInt8, "int8", 8},
    {DType::kInt16, "int16", 16},
    {DType::kInt32, "int32", 32},
    {DType::kInt64, "int64", 64},
    {DType::kUInt8, "uint8", 8},
    {DType::kUInt16, "uint16", 16},
    {DType::kUInt32, "uint32", 32},
    {DType::kUInt64, "uint64", 64},
    {DType::kFloat16, "float16", 16},
    {DType::kBFloat16, "bfloat16", 16},
    {DType::kFloat32, "float32", 32},
    {DType::kFloat64, "float64", 64},
    {DType::kFloat8E4M3, "float8_e4m3", 8},
    {DType::kFloat8E5M2, "float8_e5m2", 8},
}};

constexpr std::array<std::pair<Scope, std::string_view>, 7> kScopes = {{
    {Scope::kGlobal, "global"},
    {Scope::kShared, "shared"},
    {Scope::kSharedDyn, "shared.dyn"},
    {Scope::kFragment, "fragment"},
    {Scope::kLocal, "local"},
    {Scope::kVar, "var"},
    {Scope::kBarrier, "barrier"},
}};

const DTypeInfo& Info(DType t) { return kDTypes[static_cast<size_t>(t)]; }

} // namespace

std::string_view DTypeName(DType t) { return Info(t).name; }

std::optional<DType> ParseDType(std::string_view name) {
  for (const DTypeInfo& info : kDTypes) {
    if (info.name == name) return info.type;
  }
  return std::nullopt;
}

int DTypeBits(DType t) { return Info(t).bits; }

bool IsFloat(DType t) { return t >= DType::kFloat16; }

bool IsInteger(DType t) { return t >= DType::kInt8 && t <= DType::kUInt64; }

bool IsUnsigned(DType t) { return t >= DType::kUInt8 && t <= DType::kUInt64; }

bool IsBool(DType t) { return t == DType::kBool; }

const std::vector<DType>& AllDTypes() {
  static const std::vector<DType> all = [] {
    std::vector<DType> v;
    for (const DTypeInfo& info : kDTypes) v.push_back(info.type);
    return v;
  }();
  return all;
}

std::string_view ScopeName(Scope s) { return kScopes[static_cast<size_t>(s)].second; }

std::optional<Scope> ParseScope(std::string_view name) {
  for (const auto& [scope, scope_name] : kScopes) {
    if (scope_name == name) return scope;
  }
  return std::nullopt;
}

} // namespace kiln::ir
