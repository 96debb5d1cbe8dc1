#include "compiler/toolchain/cuda_compile.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace kiln::toolchain {
namespace {

constexpr size_t kMaxNameLength = 200;

// A relative path of [A-Za-z0-9_.-] components, none of them "." or "..".
bool IsSafeRelativeName(const std::string& name) {
  if (name.empty() || name.size() > kMaxNameLength) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-' || c == '/';
    if (!ok) return false;
  }
  for (absl::string_view part : absl::StrSplit(name, '/')) {
    if (part.empty() || part == "." || part == "..") return false;
  }
  return true;
}

} // namespace

const std::vector<std::string>& SupportedCudaArchs() {
  static const auto* archs =
      new std::vector<std::string>{"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"};
  return *archs;
}

std::string VirtualArch(std::string_view arch) {
  std::string out(arch);
  if (out.rfind("sm_", 0) == 0) out.replace(0, 3, "compute_");
  return out;
}

absl::Status ValidateCudaCompileInput(const CudaCompileInput& in) {
  const auto& archs = SupportedCudaArchs();
  if (std::find(archs.begin(), archs.end(), in.arch) == archs.end()) {
    return absl::InvalidArgumentError(absl::StrCat("unsupported CUDA architecture '", in.arch,
                                                   "'; supported: ", absl::StrJoin(archs, ", ")));
  }
  if (!in.want_cubin && !in.want_ptx) {
    return absl::InvalidArgumentError("CUDA compile requests neither cubin nor PTX");
  }
  if (in.opt_level < 0 || in.opt_level > 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("optimisation level ", in.opt_level, " is outside 0..3"));
  }
  if (!IsSafeRelativeName(in.program_name)) {
    return absl::InvalidArgumentError(absl::StrCat("invalid program name '", in.program_name, "'"));
  }
  if (in.source.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError("CUDA source contains a NUL byte");
  }
  for (const auto& [name, content] : in.headers) {
    if (!IsSafeRelativeName(name)) {
      return absl::InvalidArgumentError(absl::StrCat("invalid header name '", name, "'"));
    }
    if (name == in.program_name) {
      return absl::InvalidArgumentError(
          absl::StrCat("header '", name, "' has the program's own name"));
    }
    if (content.find('\0') != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("header '", name, "' contains a NUL byte"));
    }
  }
  for (const std::string& option : in.extra_options) {
    if (option.empty() || option[0] != '-' || option.find('\0') != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("invalid compiler option '", option, "'"));
    }
  }
  return absl::OkStatus();
}

std::string FirstLines(std::string_view text, int max_lines) {
  std::vector<absl::string_view> lines =
      absl::StrSplit(absl::string_view(text.data(), text.size()), '\n');
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  if (static_cast<int>(lines.size()) <= max_lines) return absl::StrJoin(lines, "\n");
  size_t more = lines.size() - static_cast<size_t>(max_lines);
  lines.resize(static_cast<size_t>(max_lines));
  return absl::StrCat(absl::StrJoin(lines, "\n"), "\n... (", more, " more lines)");
}

} // namespace kiln::toolchain
