#include "compiler/toolchain/nvrtc.h"

#include <chrono>
#include <cstdlib>
#include <mutex>
#include <utility>
#include <vector>

#include <dlfcn.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kiln::toolchain {

// Declared here rather than taken from nvrtc.h so that Kiln builds where the
// CUDA headers are absent; these signatures are NVRTC's stable C ABI.
using NvrtcResult = int;
using NvrtcProgram = struct NvrtcProgramOpaque*;
constexpr NvrtcResult kNvrtcSuccess = 0;
constexpr NvrtcResult kNvrtcInvalidOption = 5;
constexpr NvrtcResult kNvrtcCompilation = 6;

struct NvrtcApi {
  const char* (*GetErrorString)(NvrtcResult);
  NvrtcResult (*Version)(int*, int*);
  NvrtcResult (*CreateProgram)(NvrtcProgram*, const char*, const char*, int, const char* const*,
                               const char* const*);
  NvrtcResult (*DestroyProgram)(NvrtcProgram*);
  NvrtcResult (*CompileProgram)(NvrtcProgram, int, const char* const*);
  NvrtcResult (*GetPTXSize)(NvrtcProgram, size_t*);
  NvrtcResult (*GetPTX)(NvrtcProgram, char*);
  NvrtcResult (*GetCUBINSize)(NvrtcProgram, size_t*);
  NvrtcResult (*GetCUBIN)(NvrtcProgram, char*);
  NvrtcResult (*GetProgramLogSize)(NvrtcProgram, size_t*);
  NvrtcResult (*GetProgramLog)(NvrtcProgram, char*);
};

namespace {

// Lines of NVRTC's log carried in an error message.
constexpr int kLogLinesInError = 30;

template <typename Fn>
bool Resolve(void* handle, const char* name, Fn*& out) {
  out = reinterpret_cast<Fn*>(dlsym(handle, name));
  return out != nullptr;
}

// Destroys the program on every path out of Compile.
class ProgramGuard {
 public:
  explicit ProgramGuard(const NvrtcApi& api) : api_(api) {}
  ~ProgramGuard() {
    if (program_ != nullptr) api_.DestroyProgram(&program_);
  }
  NvrtcProgram* out() { return &program_; }
  NvrtcProgram get() const { return program_; }

 private:
  const NvrtcApi& api_;
  NvrtcProgram program_ = nullptr;
};

std::vector<std::string> BuildOptions(const CudaCompileInput& in) {
  std::vector<std::string> options;
  // A virtual target skips ptxas entirely when only PTX is wanted.
  options.push_back(
      absl::StrCat("--gpu-architecture=", in.want_cubin ? in.arch : VirtualArch(in.arch)));
  options.emplace_back("--std=c++17");
  options.emplace_back("-default-device");
  if (in.want_cubin) {
    options.emplace_back("--ptxas-options=-v");
    options.push_back(absl::StrCat("--ptxas-options=-O", in.opt_level));
  }
  if (in.fast_math) options.emplace_back("--use_fast_math");
  if (in.line_info) options.emplace_back("--generate-line-info");
  options.insert(options.end(), in.extra_options.begin(), in.extra_options.end());
  return options;
}

} // namespace

absl::StatusOr<std::unique_ptr<NvrtcLibrary>>
NvrtcLibrary::Load(const std::vector<std::string>& candidates) {
  std::vector<std::string> errors;
  for (const std::string& candidate : candidates) {
    void* handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* err = dlerror();
      errors.push_back(err != nullptr ? err : candidate);
      continue;
    }
    auto api = std::make_unique<NvrtcApi>();
    bool ok = Resolve(handle, "nvrtcGetErrorString", api->GetErrorString) &&
              Resolve(handle, "nvrtcVersion", api->Version) &&
              Resolve(handle, "nvrtcCreateProgram", api->CreateProgram) &&
              Resolve(handle, "nvrtcDestroyProgram", api->DestroyProgram) &&
              Resolve(handle, "nvrtcCompileProgram", api->CompileProgram) &&
              Resolve(handle, "nvrtcGetPTXSize", api->GetPTXSize) &&
              Resolve(handle, "nvrtcGetPTX", api->GetPTX) &&
              Resolve(handle, "nvrtcGetCUBINSize", api->GetCUBINSize) &&
              Resolve(handle, "nvrtcGetCUBIN", api->GetCUBIN) &&
              Resolve(handle, "nvrtcGetProgramLogSize", api->GetProgramLogSize) &&
              Resolve(handle, "nvrtcGetProgramLog", api->GetProgramLog);
    if (!ok) {
      errors.push_back(absl::StrCat(candidate, ": missing NVRTC symbols (NVRTC older than 11.1?)"));
      dlclose(handle);
      continue;
    }
    std::unique_ptr<NvrtcLibrary> library(new NvrtcLibrary());
    library->handle_ = handle;
    library->api_ = std::move(api);
    library->loaded_from_ = candidate;
    return library;
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "NVRTC not found; searched ", absl::StrJoin(candidates, ", "),
      " (set KILN_NVRTC_LIBRARY or CUDA_HOME). Errors: ", absl::StrJoin(errors, "; ")));
}

NvrtcLibrary::~NvrtcLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

std::string NvrtcLibrary::Version() const {
  int major = 0, minor = 0;
  if (api_->Version(&major, &minor) != kNvrtcSuccess) return "unknown";
  return absl::StrCat(major, ".", minor);
}

absl::StatusOr<CompileOutput> NvrtcLibrary::Compile(const CudaCompileInput& in) const {
  if (absl::Status s = ValidateCudaCompileInput(in); !s.ok()) return s;
  const auto start = std::chrono::steady_clock::now();
  const NvrtcApi& api = *api_;
  auto nvrtc_error = [&](const char* what, NvrtcResult r) {
    return absl::InternalError(
        absl::StrCat(what, " failed for '", in.program_name, "': ", api.GetErrorString(r)));
  };

  std::vector<const char*> header_contents, header_names;
  for (const auto& [name, content] : in.headers) {
    header_names.push_back(name.c_str());
    header_contents.push_back(content.c_str());
  }
  ProgramGuard program(api);
  NvrtcResult r = api.CreateProgram(program.out(), in.source.c_str(), in.program_name.c_str(),
                                    static_cast<int>(header_names.size()), header_contents.data(),
                                    header_names.data());
  if (r != kNvrtcSuccess) return nvrtc_error("nvrtcCreateProgram", r);

  std::vector<std::string> options = BuildOptions(in);
  std::vector<const char*> c_options;
  for (const std::string& o : options) c_options.push_back(o.c_str());
  NvrtcResult compiled =
      api.CompileProgram(program.get(), static_cast<int>(c_options.size()), c_options.data());

  CompileOutput out;
  size_t log_size = 0;
  if (api.GetProgramLogSize(program.get(), &log_size) == kNvrtcSuccess && log_size > 1) {
    out.log.resize(log_size);
    if (api.GetProgramLog(program.get(), out.log.data()) != kNvrtcSuccess) out.log.clear();
    while (!out.log.empty() && out.log.back() == '\0') out.log.pop_back();
  }
  if (compiled == kNvrtcCompilation) {
    return absl::InvalidArgumentError(absl::StrCat("NVRTC could not compile '", in.program_name,
                                                   "' for ", in.arch, ":\n",
                                                   FirstLines(out.log, kLogLinesInError)));
  }
  if (compiled == kNvrtcInvalidOption) {
    return absl::InvalidArgumentError(absl::StrCat("NVRTC rejected the options [",
                                                   absl::StrJoin(options, " "),
                                                   "]: ", FirstLines(out.log, kLogLinesInError)));
  }
  if (compiled != kNvrtcSuccess) return nvrtc_error("nvrtcCompileProgram", compiled);

  if (in.want_cubin) {
    size_t size = 0;
    if ((r = api.GetCUBINSize(program.get(), &size)) != kNvrtcSuccess) {
      return nvrtc_error("nvrtcGetCUBINSize", r);
    }
    out.cubin.resize(size);
    if ((r = api.GetCUBIN(program.get(), out.cubin.data())) != kNvrtcSuccess) {
      return nvrtc_error("nvrtcGetCUBIN", r);
    }
    out.kernels = ParsePtxasVerbose(out.log);
  }
  if (in.want_ptx) {
    size_t size = 0;
    if ((r = api.GetPTXSize(program.get(), &size)) != kNvrtcSuccess) {
      return nvrtc_error("nvrtcGetPTXSize", r);
    }
    out.ptx.resize(size);
    if ((r = api.GetPTX(program.get(), out.ptx.data())) != kNvrtcSuccess) {
      return nvrtc_error("nvrtcGetPTX", r);
    }
    while (!out.ptx.empty() && out.ptx.back() == '\0') out.ptx.pop_back();
  }
  out.elapsed = std::chrono::steady_clock::now() - start;
  return out;
}

std::vector<std::string> DefaultNvrtcCandidates() {
  const char* explicit_path = getenv("KILN_NVRTC_LIBRARY");
  if (explicit_path != nullptr && explicit_path[0] != '\0') return {explicit_path};
  static constexpr const char* kNames[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
  std::vector<std::string> candidates(std::begin(kNames), std::end(kNames));
  std::vector<std::string> dirs;
  const char* cuda_home = getenv("CUDA_HOME");
  if (cuda_home != nullptr && cuda_home[0] != '\0')
    dirs.push_back(absl::StrCat(cuda_home, "/lib64"));
  dirs.emplace_back("/usr/local/cuda/lib64");
  for (const std::string& dir : dirs) {
    for (const char* name : kNames) candidates.push_back(absl::StrCat(dir, "/", name));
  }
  return candidates;
}

absl::StatusOr<const NvrtcLibrary*> DefaultNvrtc() {
  static std::once_flag once;
  // Leaked on purpose: compiles may run on other threads during exit.
  static absl::StatusOr<std::unique_ptr<NvrtcLibrary>>* library = nullptr;
  std::call_once(once, [] {
    library = new absl::StatusOr<std::unique_ptr<NvrtcLibrary>>(
        NvrtcLibrary::Load(DefaultNvrtcCandidates()));
  });
  if (!library->ok()) return library->status();
  return library->value().get();
}

namespace {

struct Runners {
  std::mutex mu;
  uint64_t next_handle = 1;
  // Shared so that a build keeps the runner it started with while another
  // thread removes it.
  std::vector<std::pair<uint64_t, std::shared_ptr<const NvrtcRunner>>> stack;
};

Runners& TheRunners() {
  static auto* runners = new Runners; // leaked: builds may run during exit
  return *runners;
}

} // namespace

uint64_t InstallNvrtcRunner(NvrtcRunner runner) {
  Runners& r = TheRunners();
  std::lock_guard<std::mutex> lock(r.mu);
  const uint64_t handle = r.next_handle++;
  r.stack.emplace_back(handle, std::make_shared<const NvrtcRunner>(std::move(runner)));
  return handle;
}

void RemoveNvrtcRunner(uint64_t handle) {
  Runners& r = TheRunners();
  std::lock_guard<std::mutex> lock(r.mu);
  std::erase_if(r.stack, [handle](const auto& entry) { return entry.first == handle; });
}

absl::StatusOr<CompileOutput> NvrtcCompile(const CudaCompileInput& in) {
  if (absl::Status s = ValidateCudaCompileInput(in); !s.ok()) return s;
  std::shared_ptr<const NvrtcRunner> runner;
  {
    Runners& r = TheRunners();
    std::lock_guard<std::mutex> lock(r.mu);
    if (!r.stack.empty()) runner = r.stack.back().second;
  }
  if (runner != nullptr) return (*runner)(in);
  absl::StatusOr<const NvrtcLibrary*> library = DefaultNvrtc();
  if (!library.ok()) return library.status();
  return (*library)->Compile(in);
}

} // namespace kiln::toolchain
