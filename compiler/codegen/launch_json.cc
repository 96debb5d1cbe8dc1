#include "compiler/codegen/launch_json.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "compiler/ir/dtype.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/simplify.h"

namespace kiln::codegen {
namespace {

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      absl::StrAppend(&out, "\\u00", c < 16 ? "0" : "", absl::Hex(static_cast<int>(c)));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string Extent(const ir::Expr& e) {
  std::optional<int64_t> v = ir::ConstInt(ir::Simplify(e));
  return v ? std::to_string(*v) : Quote(ir::PrintExpr(e));
}

// `, "tensor_maps": [...]` for a kernel that takes tensor maps, else "".
std::string TensorMaps(const LaunchSpec& l, const std::vector<TensorMapSpec>& maps) {
  if (maps.empty()) return "";
  std::string out = ", \"tensor_maps\": [";
  for (size_t i = 0; i < maps.size(); ++i) {
    const TensorMapSpec& m = maps[i];
    const auto arg = static_cast<size_t>(m.arg);
    const std::string& name =
        arg < l.args.size() ? l.args[arg].name : l.workspaces[arg - l.args.size()].name;
    absl::StrAppend(&out, i ? ", " : "", "{\"arg\": ", m.arg, ", \"name\": ", Quote(name),
                    ", \"box\": [");
    for (size_t d = 0; d < m.box.size(); ++d) absl::StrAppend(&out, d ? ", " : "", m.box[d]);
    absl::StrAppend(&out, "], \"swizzle_bytes\": ", m.swizzle_bytes, "}");
  }
  return out + "]";
}

} // namespace

std::string LaunchJson(const EmittedKernel& kernel) {
  const LaunchSpec& l = kernel.launch;
  std::string out =
      absl::StrCat("{\"symbol\": ", Quote(l.symbol),
                   ", \"target\": ", Quote(kernel.target == EmitTarget::kCuda ? "cuda" : "cpu"),
                   ", \"arch\": ", Quote(kernel.arch), ", \"grid\": [");
  for (size_t d = 0; d < l.grid.size(); ++d)
    absl::StrAppend(&out, d ? ", " : "", Extent(l.grid[d]));
  absl::StrAppend(&out, "], \"block\": [", l.block[0], ", ", l.block[1], ", ", l.block[2],
                  "], \"dynamic_smem_bytes\": ", l.dynamic_smem_bytes, ", \"args\": [");
  for (size_t i = 0; i < l.args.size(); ++i) {
    const KernelArg& a = l.args[i];
    absl::StrAppend(&out, i ? ", " : "", "{\"name\": ", Quote(a.name),
                    ", \"dtype\": ", Quote(std::string(ir::DTypeName(a.dtype))), ", \"shape\": [");
    for (size_t d = 0; d < a.shape.size(); ++d)
      absl::StrAppend(&out, d ? ", " : "", Extent(a.shape[d]));
    absl::StrAppend(&out, "], \"scalar\": ", a.is_scalar ? "true" : "false",
                    ", \"symbol\": ", a.is_symbol ? "true" : "false",
                    ", \"output\": ", a.is_output ? "true" : "false", "}");
  }
  absl::StrAppend(&out, "]");
  absl::StrAppend(&out, TensorMaps(l, l.tensor_maps));
  // Only for programs that have them, so one-kernel metadata stays as it was.
  if (!l.workspaces.empty()) {
    absl::StrAppend(&out, ", \"workspaces\": [");
    for (size_t i = 0; i < l.workspaces.size(); ++i) {
      const WorkspaceSpec& w = l.workspaces[i];
      absl::StrAppend(&out, i ? ", " : "", "{\"name\": ", Quote(w.name),
                      ", \"dtype\": ", Quote(std::string(ir::DTypeName(w.dtype))),
                      ", \"shape\": [");
      for (size_t d = 0; d < w.shape.size(); ++d)
        absl::StrAppend(&out, d ? ", " : "", Extent(w.shape[d]));
      absl::StrAppend(&out, "]}");
    }
    absl::StrAppend(&out, "]");
  }
  if (!l.next_kernels.empty()) {
    absl::StrAppend(&out, ", \"next_kernels\": [");
    for (size_t i = 0; i < l.next_kernels.size(); ++i) {
      const KernelLaunch& k = l.next_kernels[i];
      absl::StrAppend(&out, i ? ", " : "", "{\"symbol\": ", Quote(k.symbol), ", \"grid\": [");
      for (size_t d = 0; d < k.grid.size(); ++d)
        absl::StrAppend(&out, d ? ", " : "", Extent(k.grid[d]));
      absl::StrAppend(&out, "], \"block\": [", k.block[0], ", ", k.block[1], ", ", k.block[2],
                      "], \"dynamic_smem_bytes\": ", k.dynamic_smem_bytes,
                      TensorMaps(l, k.tensor_maps), "}");
    }
    absl::StrAppend(&out, "]");
  }
  return out + "}\n";
}

} // namespace kiln::codegen
