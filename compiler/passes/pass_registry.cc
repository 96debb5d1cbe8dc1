#include "compiler/passes/pass_registry.h"

#include <map>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kiln::passes {
namespace {

std::map<std::string, PassInfo>& Registry() {
  static auto* registry = new std::map<std::string, PassInfo>();
  return *registry;
}

void EnsureRegistered() {
  static std::once_flag once;
  std::call_once(once, [] { RegisterBuiltinPasses(); });
}

} // namespace

void RegisterPass(PassInfo info) {
  std::string name = info.name;
  Registry().insert_or_assign(std::move(name), std::move(info));
}

std::vector<const PassInfo*> AllPasses() {
  EnsureRegistered();
  std::vector<const PassInfo*> out;
  for (const auto& [name, info] : Registry()) out.push_back(&info);
  return out;
}

absl::Status RunPasses(ir::Program& program, const std::vector<std::string>& names,
                       const PassContext& ctx) {
  EnsureRegistered();
  for (const std::string& name : names) {
    auto it = Registry().find(name);
    if (it == Registry().end()) {
      std::vector<std::string> known;
      for (const auto& [n, info] : Registry()) known.push_back(n);
      return absl::InvalidArgumentError(
          absl::StrCat("unknown pass '", name, "'; known passes: ", absl::StrJoin(known, ", ")));
    }
    absl::Status status = it->second.run(program, ctx);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

} // namespace kiln::passes
