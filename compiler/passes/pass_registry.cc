#include "compiler/passes/pass_registry.h"

#include <map>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/ir/ir_util.h"

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

namespace {

// A program of several kernels (or with workspaces) runs the passes on each
// kernel as a one-kernel program (ir_util.h: SplitKernels) and is put back
// together: passes are written for one kernel, and each kernel of a
// sequence is lowered on its own.
absl::Status RunPassesPerKernel(ir::Program& program, const std::vector<std::string>& names,
                                const PassContext& ctx) {
  std::vector<ir::Program> kernels = ir::SplitKernels(program);
  for (ir::Program& k : kernels) {
    absl::Status status = RunPasses(k, names, ctx);
    if (!status.ok()) return status;
  }
  for (size_t i = 1; i < kernels.size(); ++i) {
    if (kernels[i].attrs != kernels[0].attrs || kernels[i].params != kernels[0].params) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the passes left kernel ", i + 1, " of '", program.name,
          "' with other attributes or parameters than the first; a program of several kernels "
          "is lowered and emitted in one step (kiln-opt --emit without --pass)"));
    }
  }
  const size_t n_params = program.params.size();
  ir::Program out = kernels[0];
  out.params.resize(n_params);
  out.workspaces.clear();
  for (size_t i = n_params; i < kernels[0].params.size(); ++i) {
    out.workspaces.push_back(kernels[0].params[i].buffer);
  }
  for (size_t i = 1; i < kernels.size(); ++i) out.next_kernels.push_back(kernels[i].kernel);
  program = std::move(out);
  return absl::OkStatus();
}

} // namespace

absl::Status RunPasses(ir::Program& program, const std::vector<std::string>& names,
                       const PassContext& ctx) {
  if (!program.next_kernels.empty() || !program.workspaces.empty()) {
    return RunPassesPerKernel(program, names, ctx);
  }
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

std::optional<Epilogue> ParseEpilogue(std::string_view text) {
  if (text == "auto") return Epilogue::kAuto;
  if (text == "tma") return Epilogue::kTma;
  if (text == "direct") return Epilogue::kDirect;
  return std::nullopt;
}

std::string_view EpilogueName(Epilogue e) {
  switch (e) {
  case Epilogue::kTma:
    return "tma";
  case Epilogue::kDirect:
    return "direct";
  case Epilogue::kAuto:
    break;
  }
  return "auto";
}

} // namespace kiln::passes
