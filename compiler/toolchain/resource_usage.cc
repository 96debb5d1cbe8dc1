#include "compiler/toolchain/resource_usage.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace kiln::toolchain {
namespace {

absl::string_view ToAbsl(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// The text between the first pair of single quotes after `prefix`.
bool QuotedAfter(absl::string_view line, absl::string_view prefix, std::string* out,
                 absl::string_view* rest) {
  size_t at = line.find(prefix);
  if (at == absl::string_view::npos) return false;
  absl::string_view tail = line.substr(at + prefix.size());
  size_t open = tail.find('\'');
  if (open == absl::string_view::npos) return false;
  size_t close = tail.find('\'', open + 1);
  if (close == absl::string_view::npos) return false;
  out->assign(tail.data() + open + 1, close - open - 1);
  if (rest != nullptr) *rest = tail.substr(close + 1);
  return true;
}

// Applies one "N <what>" item of a comma-separated ptxas list.
void ApplyItem(absl::string_view item, ResourceUsage& usage) {
  item = absl::StripAsciiWhitespace(item);
  absl::ConsumePrefix(&item, "Used ");
  absl::ConsumePrefix(&item, "used ");
  size_t space = item.find(' ');
  if (space == absl::string_view::npos) return;
  int64_t n = 0;
  if (!absl::SimpleAtoi(item.substr(0, space), &n)) return;
  absl::string_view what = absl::StripAsciiWhitespace(item.substr(space + 1));
  if (what == "registers" || what == "register") {
    usage.registers = static_cast<int>(n);
  } else if (what == "barriers" || what == "barrier") {
    usage.barriers = static_cast<int>(n);
  } else if (what == "bytes smem") {
    usage.shared_bytes = n;
  } else if (what == "bytes cmem[0]") {
    usage.constant_bytes = n;
  } else if (what == "bytes lmem" || what == "bytes stack frame") {
    usage.stack_frame_bytes = n;
  } else if (what == "bytes cumulative stack size") {
    usage.cumulative_stack_bytes = n;
  } else if (what == "bytes spill stores") {
    usage.spill_store_bytes = n;
  } else if (what == "bytes spill loads") {
    usage.spill_load_bytes = n;
  }
}

void ApplyList(absl::string_view list, ResourceUsage& usage) {
  for (absl::string_view item : absl::StrSplit(list, ',')) ApplyItem(item, usage);
}

} // namespace

std::vector<ResourceUsage> ParsePtxasVerbose(std::string_view log) {
  std::vector<ResourceUsage> kernels;
  // Index of the entry whose "Function properties" block is open, or -1 when
  // the open block belongs to a device function (whose numbers are folded
  // into the callers' cumulative stack size by ptxas already).
  int properties_of = -1;
  for (absl::string_view line : absl::StrSplit(ToAbsl(log), '\n')) {
    line = absl::StripAsciiWhitespace(line);
    // nvcc prints "ptxas info    : <message>" and the stack-frame line
    // bare; NVRTC's log prefixes that line with "ptxas         .".
    if (absl::ConsumePrefix(&line, "ptxas")) {
      line = absl::StripLeadingAsciiWhitespace(line);
      absl::ConsumePrefix(&line, "info");
      line = absl::StripLeadingAsciiWhitespace(line);
      if (!absl::ConsumePrefix(&line, ":") && !absl::ConsumePrefix(&line, ".")) continue;
      line = absl::StripAsciiWhitespace(line);
    }
    std::string name;
    absl::string_view rest;
    if (QuotedAfter(line, "Compiling entry function", &name, &rest)) {
      ResourceUsage usage;
      usage.kernel = name;
      std::string arch;
      if (QuotedAfter(rest, "for", &arch, nullptr)) usage.arch = arch;
      kernels.push_back(std::move(usage));
      properties_of = -1;
    } else if (QuotedAfter(line, "Function properties for", &name, nullptr) ||
               absl::StartsWith(line, "Function properties for ")) {
      if (name.empty()) name = std::string(absl::StripPrefix(line, "Function properties for "));
      properties_of = -1;
      if (!kernels.empty() && kernels.back().kernel == name) {
        properties_of = static_cast<int>(kernels.size()) - 1;
      }
    } else if (absl::StartsWith(line, "Used ")) {
      if (!kernels.empty()) ApplyList(line, kernels.back());
    } else if (absl::StrContains(line, "bytes stack frame") ||
               absl::StrContains(line, "bytes spill stores")) {
      if (properties_of >= 0) ApplyList(line, kernels[static_cast<size_t>(properties_of)]);
    }
  }
  return kernels;
}

const ResourceUsage* FindKernel(const std::vector<ResourceUsage>& usage, std::string_view kernel) {
  for (const ResourceUsage& u : usage) {
    if (u.kernel == kernel) return &u;
  }
  return nullptr;
}

} // namespace kiln::toolchain
