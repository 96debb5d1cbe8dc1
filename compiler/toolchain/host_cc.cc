#include "compiler/toolchain/host_cc.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <dlfcn.h>
#include <unistd.h>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "compiler/runtime/runtime_headers.h"
#include "util/subprocess.h"
#include "util/temp_dir.h"

namespace kiln::toolchain {
namespace {

namespace fs = std::filesystem;

std::string TempBase() {
  const char* base = getenv("TMPDIR");
  return base != nullptr && base[0] != '\0' ? base : "/tmp";
}

// A relative path of [A-Za-z0-9_.-] components, none of them "." or "..".
bool IsSafeRelativeName(const std::string& name) {
  if (name.empty() || name.size() > 200) return false;
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

absl::Status Validate(const HostCompileInput& in) {
  if (!IsSafeRelativeName(in.program_name) || absl::StrContains(in.program_name, '/')) {
    return absl::InvalidArgumentError(
        absl::StrCat("host compile: unsafe program name '", in.program_name, "'"));
  }
  for (const auto& [name, content] : in.headers) {
    if (!IsSafeRelativeName(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("host compile: unsafe header name '", name, "'"));
    }
  }
  if (in.opt_level < 0 || in.opt_level > 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("host compile: opt level ", in.opt_level, " is not in 0..3"));
  }
  for (const std::string& flag : in.extra_flags) {
    if (flag.empty() || flag[0] != '-') {
      return absl::InvalidArgumentError(
          absl::StrCat("host compile: extra flag '", flag, "' does not start with '-'"));
    }
  }
  return absl::OkStatus();
}

absl::Status WriteFile(const fs::path& path, std::string_view content) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create ", path.parent_path().string()));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path.string()));
  return absl::OkStatus();
}

// The first kHostCompilerErrorLines lines of `text`, each cut to
// kMaxLineChars: generated code has long lines, and g++ echoes each one with
// a caret line under it.
std::string ErrorExcerpt(const std::string& text) {
  constexpr size_t kMaxLineChars = 300;
  std::string out;
  int lines = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    if (lines == kHostCompilerErrorLines) {
      const int rest = static_cast<int>(std::count(text.begin() + pos, text.end(), '\n')) +
                       (text.back() == '\n' ? 0 : 1);
      absl::StrAppend(&out, "... (", rest, " more lines)\n");
      break;
    }
    std::string line = text.substr(pos, end - pos);
    if (line.size() > kMaxLineChars) line = line.substr(0, kMaxLineChars) + " [...]";
    absl::StrAppend(&out, line, "\n");
    ++lines;
    pos = end + 1;
  }
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// Maps a finished (or killed) compiler run to a status.
absl::Status RunStatus(const util::SubprocessResult& run, const std::string& what) {
  if (run.success()) return absl::OkStatus();
  if (run.timed_out) {
    return absl::DeadlineExceededError(absl::StrCat(what, " ", run.DescribeTermination()));
  }
  const std::string detail =
      ErrorExcerpt(run.stderr_data.empty() ? run.stdout_data : run.stderr_data);
  // Under RLIMIT_AS, cc1plus reports an allocation failure rather than dying
  // of a signal; the limit, not the source, is then at fault.
  static constexpr const char* kOutOfMemory[] = {"out of memory", "Out of memory", "bad_alloc",
                                                 "Cannot allocate memory",
                                                 "virtual memory exhausted"};
  bool out_of_memory = run.signaled;
  for (const char* marker : kOutOfMemory) {
    out_of_memory = out_of_memory || absl::StrContains(run.stderr_data, marker);
  }
  if (out_of_memory) {
    return absl::ResourceExhaustedError(
        absl::StrCat(what, " ", run.DescribeTermination(), ":\n", detail));
  }
  return absl::InvalidArgumentError(
      absl::StrCat(what, " failed (", run.DescribeTermination(), "):\n", detail));
}

} // namespace

std::string HostCompiler(const HostCompileOptions& options) {
  if (!options.compiler.empty()) return options.compiler;
  if (const char* env = getenv("KILN_HOST_CXX"); env != nullptr && env[0] != '\0') return env;
  return "c++";
}

absl::StatusOr<std::string> HostCompilerVersion(const HostCompileOptions& options) {
  util::SubprocessOptions run_options;
  run_options.timeout = options.timeout;
  run_options.memory_limit_bytes = options.memory_limit_bytes;
  const std::string cxx = HostCompiler(options);
  absl::StatusOr<util::SubprocessResult> run = util::RunSubprocess({cxx, "--version"}, run_options);
  if (!run.ok()) return run.status();
  if (!run->success()) {
    return absl::InternalError(
        absl::StrCat("`", cxx, " --version` failed: ", run->DescribeTermination()));
  }
  std::string line = run->stdout_data.substr(0, run->stdout_data.find('\n'));
  if (line.empty())
    return absl::InternalError(absl::StrCat("`", cxx, " --version` printed nothing"));
  return line;
}

absl::StatusOr<HostCompileOutput> HostCompile(const HostCompileInput& in,
                                              const HostCompileOptions& options) {
  if (absl::Status s = Validate(in); !s.ok()) return s;
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<kiln::util::TempDir> dir = kiln::util::TempDir::Create("kiln-hostcc");
  if (!dir.ok()) return dir.status();
  const fs::path root(dir->path());
  if (absl::Status s = WriteFile(root / in.program_name, in.source); !s.ok()) return s;
  if (in.include_cpu_runtime) {
    for (const runtime::EmbeddedHeader& h : runtime::CpuRuntimeHeaders()) {
      if (absl::Status s = WriteFile(root / "include" / h.name, h.content); !s.ok()) return s;
    }
  }
  for (const auto& [name, content] : in.headers) {
    if (absl::Status s = WriteFile(root / "include" / name, content); !s.ok()) return s;
  }

  const std::string compiler = HostCompiler(options);
  std::vector<std::string> argv = {compiler,   "-std=c++17", absl::StrCat("-O", in.opt_level),
                                   "-fPIC",    "-shared",    "-pipe",
                                   "-Iinclude"};
  argv.insert(argv.end(), in.extra_flags.begin(), in.extra_flags.end());
  argv.insert(argv.end(), {"-o", "kernel.so", in.program_name});

  util::SubprocessOptions run_options;
  run_options.working_dir = dir->path();
  run_options.timeout = options.timeout;
  run_options.memory_limit_bytes = options.memory_limit_bytes;
  run_options.extra_env = {{"TMPDIR", dir->path()}, {"LC_ALL", "C"}};
  absl::StatusOr<util::SubprocessResult> run = util::RunSubprocess(argv, run_options);
  if (!run.ok()) {
    if (absl::IsNotFound(run.status())) {
      return absl::NotFoundError(
          absl::StrCat("host C++ compiler not found: ", run.status().message(),
                       " (set KILN_HOST_CXX to g++ or clang++)"));
    }
    return run.status();
  }
  if (absl::Status s = RunStatus(*run, absl::StrCat(compiler, " for '", in.program_name, "'"));
      !s.ok()) {
    return s;
  }

  HostCompileOutput out;
  std::ifstream so(root / "kernel.so", std::ios::binary);
  if (!so) return absl::InternalError(absl::StrCat(compiler, " produced no kernel.so"));
  out.shared_object.assign(std::istreambuf_iterator<char>(so), std::istreambuf_iterator<char>());
  out.log = run->stderr_data;
  out.command = absl::StrJoin(argv, " ");
  out.elapsed = std::chrono::steady_clock::now() - start;
  return out;
}

absl::StatusOr<LoadedCpuKernel> LoadedCpuKernel::Load(std::string_view shared_object,
                                                      const std::string& symbol) {
  std::string path = TempBase() + "/kiln-kernel-XXXXXX.so";
  const int fd = mkstemps(path.data(), 3);
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat("cannot create a temporary file ", path, ": ", std::strerror(errno)));
  }
  size_t written = 0;
  while (written < shared_object.size()) {
    ssize_t n = write(fd, shared_object.data() + written, shared_object.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      close(fd);
      unlink(path.c_str());
      return absl::InternalError(absl::StrCat("cannot write ", path, ": ", std::strerror(err)));
    }
    written += static_cast<size_t>(n);
  }
  close(fd);
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  // The mapping keeps the code; the name is no longer needed.
  unlink(path.c_str());
  if (handle == nullptr) {
    const char* err = dlerror();
    return absl::InvalidArgumentError(
        absl::StrCat("cannot load the kernel's shared object: ", err != nullptr ? err : "?"));
  }
  dlerror();
  void* entry = dlsym(handle, symbol.c_str());
  if (entry == nullptr) {
    dlclose(handle);
    return absl::InvalidArgumentError(
        absl::StrCat("the kernel's shared object has no symbol '", symbol, "'"));
  }
  return LoadedCpuKernel(handle, reinterpret_cast<EntryFn>(entry));
}

LoadedCpuKernel::LoadedCpuKernel(LoadedCpuKernel&& other) noexcept
    : handle_(other.handle_), entry_(other.entry_) {
  other.handle_ = nullptr;
  other.entry_ = nullptr;
}

LoadedCpuKernel& LoadedCpuKernel::operator=(LoadedCpuKernel&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) dlclose(handle_);
    handle_ = other.handle_;
    entry_ = other.entry_;
    other.handle_ = nullptr;
    other.entry_ = nullptr;
  }
  return *this;
}

LoadedCpuKernel::~LoadedCpuKernel() {
  if (handle_ != nullptr) dlclose(handle_);
}

void* LoadedCpuKernel::FindSymbol(const std::string& name) const {
  if (handle_ == nullptr) return nullptr;
  return dlsym(handle_, name.c_str());
}

absl::Status LoadedCpuKernel::Run(void** args, const int64_t grid3[3]) const {
  if (entry_ == nullptr) return absl::FailedPreconditionError("no kernel loaded");
  char error[1024] = {0};
  const int rc = entry_(args, grid3, error, static_cast<int>(sizeof(error)));
  if (rc == 0) return absl::OkStatus();
  error[sizeof(error) - 1] = '\0';
  return absl::InternalError(absl::StrCat("kernel reported an error (code ", rc,
                                          "): ", error[0] != '\0' ? error : "(no message)"));
}

} // namespace kiln::toolchain
