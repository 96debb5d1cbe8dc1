// Build-time device queries (issue 30): TileLang programs size persistent
// grids and pick code paths from the device while the kernel is built
// (`torch.cuda.get_device_properties(0).multi_processor_count`,
// `torch.cuda.get_device_capability()`, carver's `driver.get_num_sms()`).
// Kiln answers them from the compile target's DeviceModel, never from the
// machine it runs on: the same source and target always give the same
// program, so the cache key (which covers the target) stays sound.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "compiler/frontend/args.h"
#include "compiler/frontend/evaluator.h"
#include "compiler/frontend/frontend.h"
#include "util/status_macros.h"

namespace kiln::frontend {
namespace {

// The object torch.cuda.get_device_properties() returns: a builtin value
// whose attributes DevicePropertyAttr answers.
constexpr std::string_view kDeviceProperties = "torch.cuda._CudaDeviceProperties";

constexpr std::array<std::string_view, 6> kTorchCudaFunctions = {
    "get_device_properties", "get_device_capability", "get_device_name",
    "current_device",        "device_count",          "is_available"};

// tilelang.carver.arch.driver's queries of the current device.
constexpr std::array<std::string_view, 5> kCarverDriverFunctions = {
    "get_num_sms", "get_device_name", "get_shared_memory_per_block",
    "get_max_dynamic_shared_size_bytes", "get_registers_per_block"};

constexpr std::string_view kCarverDriver = "tilelang.carver.arch.driver";

template <size_t N>
bool In(const std::array<std::string_view, N>& names, std::string_view name) {
  for (std::string_view n : names) {
    if (n == name) return true;
  }
  return false;
}

struct Preset {
  std::string_view arch;
  DeviceModel model;
};

DeviceModel Model(std::string_view name, int sms, int major, int minor, int64_t optin,
                  int64_t per_sm, int threads_per_sm, int64_t l2, int64_t memory) {
  DeviceModel m;
  m.known = true;
  m.name = std::string(name);
  m.sm_count = sms;
  m.cc_major = major;
  m.cc_minor = minor;
  m.shared_memory_per_block = 48 * 1024;
  m.shared_memory_per_block_optin = optin;
  m.shared_memory_per_sm = per_sm;
  m.registers_per_block = 65536;
  m.registers_per_sm = 65536;
  m.max_threads_per_sm = threads_per_sm;
  m.l2_cache_bytes = l2;
  m.total_memory_bytes = memory;
  return m;
}

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = kKiB * kKiB;
constexpr int64_t kGiB = kMiB * kKiB;

} // namespace

DeviceModel DeviceModelForTarget(std::string_view target) {
  // Shared-memory limits agree with compiler/passes/target.cc; SM counts,
  // L2 and memory are the named parts' data sheets.
  static const auto* const kPresets = new std::vector<Preset>{
      {"sm_80",
       Model("NVIDIA A100-SXM4-80GB", 108, 8, 0, 166912, 164 * kKiB, 2048, 40 * kMiB, 80 * kGiB)},
      {"sm_86", Model("NVIDIA A40", 84, 8, 6, 101376, 100 * kKiB, 1536, 6 * kMiB, 48 * kGiB)},
      {"sm_89", Model("NVIDIA L40S", 142, 8, 9, 101376, 100 * kKiB, 1536, 96 * kMiB, 48 * kGiB)},
      {"sm_90",
       Model("NVIDIA H100 80GB HBM3", 132, 9, 0, 232448, 228 * kKiB, 2048, 50 * kMiB, 80 * kGiB)},
      {"sm_90a",
       Model("NVIDIA H100 80GB HBM3", 132, 9, 0, 232448, 228 * kKiB, 2048, 50 * kMiB, 80 * kGiB)},
  };
  DeviceModel out;
  constexpr std::string_view kCuda = "cuda:";
  if (target.substr(0, kCuda.size()) == kCuda) {
    std::string_view arch = target.substr(kCuda.size());
    for (const Preset& p : *kPresets) {
      if (p.arch == arch) out = p.model;
    }
  }
  out.target = std::string(target);
  return out;
}

std::optional<Value> Evaluator::ResolveDeviceQueryName(const std::string& path) {
  if (path == "torch.cuda" || path == "tilelang.carver" || path == "tilelang.carver.arch" ||
      path == kCarverDriver) {
    return Value::Module(path);
  }
  if (path == "torch.device" || path == kDeviceProperties) return Value::Builtin(path);
  size_t dot = path.rfind('.');
  if (dot == std::string::npos) return std::nullopt;
  const std::string_view whole = path;
  std::string_view module = whole.substr(0, dot);
  std::string_view fn = whole.substr(dot + 1);
  if ((module == "torch.cuda" && In(kTorchCudaFunctions, fn)) ||
      (module == kCarverDriver && In(kCarverDriverFunctions, fn))) {
    return Value::Builtin(path);
  }
  return std::nullopt;
}

bool Evaluator::IsDeviceQuery(const std::string& builtin) {
  return builtin == "torch.device" || builtin.rfind("torch.cuda.", 0) == 0 ||
         builtin.rfind(kCarverDriver, 0) == 0;
}

absl::StatusOr<Value> Evaluator::CallDeviceQuery(const std::string& name, std::vector<Arg>& args,
                                                 Loc loc) {
  const std::string& file = options_.file_name;
  const DeviceModel& dev = options_.device;
  // A device argument: an index, "cuda" / "cuda:N", or torch.device(...)
  // (a string here). Every device of the target is the same model.
  auto check_device = [&](const std::optional<Value>& v, Loc at) -> absl::Status {
    if (!v.has_value() || v->is_none()) return absl::OkStatus();
    if (v->is_int() && v->i >= 0) return absl::OkStatus();
    if (v->kind == ValueKind::kString) {
      std::string_view s = v->s;
      int64_t index = 0;
      if (s == "cuda" || (s.rfind("cuda:", 0) == 0 &&
                          absl::SimpleAtoi(std::string(s.substr(5)), &index) && index >= 0)) {
        return absl::OkStatus();
      }
    }
    return Error(at, absl::StrCat(name,
                                  "() needs a CUDA device (an index >= 0, 'cuda' or 'cuda:N'), "
                                  "got ",
                                  v->kind == ValueKind::kString ? absl::StrCat("'", v->s, "'")
                                                                : TypeName(*v)));
  };
  if (name == "torch.device") {
    // torch.device("cuda"), torch.device("cuda:0"), torch.device("cuda", 0).
    ASSIGN_OR_RETURN(auto m, MatchArgs(file, loc, "torch.device", args, {"type", "index"}, 1));
    const std::vector<std::string_view> names = {"type", "index"};
    if (m[0]->kind != ValueKind::kString) {
      return Error(ArgLoc(args, names, 0, loc), "torch.device() needs a string such as 'cuda:0'");
    }
    Value device = *m[0];
    if (m[1].has_value()) {
      if (!m[1]->is_int() || device.s != "cuda") {
        return Error(ArgLoc(args, names, 1, loc),
                     "torch.device(type, index) needs type 'cuda' and an integer index");
      }
      device = Value::Str(absl::StrCat("cuda:", m[1]->i));
    }
    RETURN_IF_ERROR(check_device(device, ArgLoc(args, names, 0, loc)));
    return device;
  }
  const bool carver = name.rfind(kCarverDriver, 0) == 0;
  std::string fn = name.substr(name.rfind('.') + 1);
  std::vector<std::string_view> names;
  if (!carver && fn != "current_device" && fn != "device_count" && fn != "is_available") {
    names.emplace_back("device");
  }
  ASSIGN_OR_RETURN(auto m, MatchArgs(file, loc, name, args, names, 0));
  if (!m.empty()) RETURN_IF_ERROR(check_device(m[0], ArgLoc(args, names, 0, loc)));
  // The one query with a truthful answer on every target: a CPU compile has
  // no CUDA device, so programs that branch on it take their CPU path.
  if (fn == "is_available") return Value::Bool(dev.known);
  if (!dev.known) {
    return Error(loc, absl::StrCat(name, "() asks for the device the kernel is built for, but ",
                                   dev.target.empty()
                                       ? std::string("this compile names no target")
                                       : absl::StrCat("target '", dev.target, "' has no device"),
                                   "; compile for a CUDA target (e.g. --target cuda:sm_90)"));
  }
  if (fn == "current_device") return Value::Int(0);
  if (fn == "device_count") return Value::Int(1);
  if (fn == "get_device_properties") return Value::Builtin(std::string(kDeviceProperties));
  if (fn == "get_device_capability") {
    return Value::Tuple({Value::Int(dev.cc_major), Value::Int(dev.cc_minor)});
  }
  if (fn == "get_device_name") return Value::Str(dev.name);
  if (fn == "get_num_sms") return Value::Int(dev.sm_count);
  if (fn == "get_shared_memory_per_block") return Value::Int(dev.shared_memory_per_block);
  if (fn == "get_max_dynamic_shared_size_bytes") {
    return Value::Int(dev.shared_memory_per_block_optin);
  }
  if (fn == "get_registers_per_block") return Value::Int(dev.registers_per_block);
  return Error(loc, absl::StrCat(name, "() is not supported"));
}

absl::StatusOr<Value> Evaluator::DevicePropertyAttr(const std::string& attr, Loc loc) {
  const DeviceModel& d = options_.device;
  if (attr == "multi_processor_count") return Value::Int(d.sm_count);
  if (attr == "major") return Value::Int(d.cc_major);
  if (attr == "minor") return Value::Int(d.cc_minor);
  if (attr == "name") return Value::Str(d.name);
  if (attr == "total_memory") return Value::Int(d.total_memory_bytes);
  if (attr == "shared_memory_per_block") return Value::Int(d.shared_memory_per_block);
  if (attr == "shared_memory_per_block_optin") {
    return Value::Int(d.shared_memory_per_block_optin);
  }
  if (attr == "shared_memory_per_multiprocessor") return Value::Int(d.shared_memory_per_sm);
  if (attr == "regs_per_multiprocessor") return Value::Int(d.registers_per_sm);
  if (attr == "max_threads_per_multi_processor") return Value::Int(d.max_threads_per_sm);
  if (attr == "warp_size") return Value::Int(d.warp_size);
  if (attr == "L2_cache_size") return Value::Int(d.l2_cache_bytes);
  return Error(loc, absl::StrCat("device properties have no attribute '", attr,
                                 "' in Kiln's device model (it has multi_processor_count, major, "
                                 "minor, name, total_memory, shared_memory_per_block, "
                                 "shared_memory_per_block_optin, shared_memory_per_multiprocessor, "
                                 "regs_per_multiprocessor, max_threads_per_multi_processor, "
                                 "warp_size, L2_cache_size)"));
}

} // namespace kiln::frontend
