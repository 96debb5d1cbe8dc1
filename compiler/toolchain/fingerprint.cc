#include "compiler/toolchain/fingerprint.h"

#include <mutex>

#include "absl/strings/str_cat.h"
#include "compiler/toolchain/host_cc.h"
#include "compiler/toolchain/nvcc.h"
#include "compiler/toolchain/nvrtc.h"

namespace kiln::toolchain {
namespace {

constexpr char kUnavailable[] = "unavailable";

const char* KindName(ToolchainKind kind) {
  switch (kind) {
  case ToolchainKind::kNvrtc:
    return "nvrtc";
  case ToolchainKind::kNvcc:
    return "nvcc";
  case ToolchainKind::kHostCc:
    return "cc";
  }
  return "unknown";
}

std::string ProbeVersion(ToolchainKind kind) {
  switch (kind) {
  case ToolchainKind::kNvrtc: {
    absl::StatusOr<const NvrtcLibrary*> nvrtc = DefaultNvrtc();
    return nvrtc.ok() ? (*nvrtc)->Version() : kUnavailable;
  }
  case ToolchainKind::kNvcc: {
    absl::StatusOr<std::string> version = NvccVersion();
    return version.ok() ? *version : kUnavailable;
  }
  case ToolchainKind::kHostCc: {
    absl::StatusOr<std::string> version = HostCompilerVersion();
    return version.ok() ? *version : kUnavailable;
  }
  }
  return kUnavailable;
}

} // namespace

std::string FormatFingerprint(ToolchainKind kind, const std::string& version) {
  return absl::StrCat("kiln-codegen=", kKilnCodegenVersion, ";", KindName(kind), "=", version);
}

std::string ToolchainFingerprint(ToolchainKind kind) {
  struct Cached {
    std::once_flag once;
    std::string fingerprint;
  };
  static Cached cache[3];
  Cached& entry = cache[static_cast<int>(kind)];
  std::call_once(entry.once,
                 [&] { entry.fingerprint = FormatFingerprint(kind, ProbeVersion(kind)); });
  return entry.fingerprint;
}

} // namespace kiln::toolchain
