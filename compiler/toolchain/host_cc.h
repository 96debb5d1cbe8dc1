// Host C++ -> shared object with the host compiler (the CPU target), run as a
// sandboxed subprocess (util::RunSubprocess: own process group, timeout,
// address-space limit), and loading of the result into this process.
//
// The compiler is HostCompileOptions::compiler, else $KILN_HOST_CXX, else
// "c++" in PATH (g++ or clang++ both work). Each compile writes the source,
// the embedded CPU runtime headers (runtime::CpuRuntimeHeaders(), so
// `#include "kiln/cpu/runtime.h"` resolves) and any extra headers into a
// fresh directory under $TMPDIR (or /tmp), runs
//   <cxx> -std=c++17 -O<n> -fPIC -shared -Iinclude -o kernel.so kernel.cc
// there, reads the .so back and removes the directory.
//
// A LoadedCpuKernel writes the .so bytes to a temporary file, dlopen()s it
// (RTLD_NOW | RTLD_LOCAL, so kernels never see each other's symbols) and
// unlinks the file at once; the mapping lives until the object is destroyed.
//
// Thread-safety: concurrent compiles are independent (separate directories
// and processes). A LoadedCpuKernel may be called from several threads if the
// kernel itself is reentrant (Kiln's generated kernels keep no globals).
//
// Errors: NotFound when the compiler is missing; InvalidArgument for a bad
// request (unsafe header names) and when the compiler fails (the message
// carries the first kHostCompilerErrorLines lines of its stderr, "kernel.cc:3:5:
// error: ..."); DeadlineExceeded when it runs past the timeout;
// ResourceExhausted when it is killed or runs out of memory (typically the
// memory limit); Internal for I/O failures. Load: InvalidArgument when the
// bytes are not a loadable shared object (dlerror's text) or lack the symbol.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace kiln::toolchain {

inline constexpr int kHostCompilerErrorLines = 40;

struct HostCompileInput {
  std::string source;
  // File name the diagnostics use ("kernel.cc:12:3: error: ...").
  std::string program_name = "kernel.cc";
  // Include name -> content, on the include path beside the CPU runtime.
  // Relative paths with '/' are allowed; ".." and absolute paths are not.
  std::map<std::string, std::string> headers;
  // Whether to put the embedded CPU runtime headers on the include path.
  bool include_cpu_runtime = true;
  // 0..3. -O1 compiles a small kernel about as fast as -O0 and runs several
  // times faster; see docs/tools.md for the measurement behind the default.
  int opt_level = 1;
  // Appended after Kiln's own flags; each must start with '-'.
  std::vector<std::string> extra_flags;
};

struct HostCompileOptions {
  // Empty: $KILN_HOST_CXX, else "c++" in PATH.
  std::string compiler;
  std::chrono::milliseconds timeout{120'000};
  // RLIMIT_AS for the compiler driver and the tools it runs (cc1plus, as, ld).
  int64_t memory_limit_bytes = int64_t{4} << 30;
};

struct HostCompileOutput {
  std::string shared_object; // ELF bytes
  std::string log;           // the compiler's stderr (warnings)
  std::string command;       // the command line, for reports
  std::chrono::nanoseconds elapsed{0};
};

// The compiler HostCompile runs for `options`, as described above.
std::string HostCompiler(const HostCompileOptions& options = {});

absl::StatusOr<HostCompileOutput> HostCompile(const HostCompileInput& in,
                                              const HostCompileOptions& options = {});

// The first line of `<compiler> --version` ("g++ (Debian 12.2.0-14) 12.2.0"),
// for the CPU target's toolchain fingerprint. NotFound when the compiler is
// missing; Internal when it fails or prints nothing.
absl::StatusOr<std::string> HostCompilerVersion(const HostCompileOptions& options = {});

// A shared object loaded into this process; unloaded (dlclose) when
// destroyed. Move-only.
class LoadedCpuKernel {
 public:
  // The CPU entry point of compiler/codegen/kernel_spec.h.
  using EntryFn = int (*)(void** args, const int64_t* grid3, char* error, int error_len);

  // Loads `shared_object` (the bytes of a .so) and resolves `symbol`.
  static absl::StatusOr<LoadedCpuKernel> Load(std::string_view shared_object,
                                              const std::string& symbol);

  LoadedCpuKernel(LoadedCpuKernel&& other) noexcept;
  LoadedCpuKernel& operator=(LoadedCpuKernel&& other) noexcept;
  LoadedCpuKernel(const LoadedCpuKernel&) = delete;
  LoadedCpuKernel& operator=(const LoadedCpuKernel&) = delete;
  ~LoadedCpuKernel();

  EntryFn entry() const { return entry_; }
  // Any other symbol of the object, or nullptr.
  void* FindSymbol(const std::string& name) const;

  // Calls the entry point; a non-zero return becomes an Internal error
  // carrying the kernel's message ("kernel reported: ...").
  absl::Status Run(void** args, const int64_t grid3[3]) const;

 private:
  LoadedCpuKernel(void* handle, EntryFn entry) : handle_(handle), entry_(entry) {}
  void* handle_ = nullptr;
  EntryFn entry_ = nullptr;
};

} // namespace kiln::toolchain
