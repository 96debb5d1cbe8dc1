#include "compiler/toolchain/nvcc.h"

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <unistd.h>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "util/subprocess.h"
#include "util/temp_dir.h"

namespace kiln::toolchain {
namespace {

namespace fs = std::filesystem;

constexpr int kStderrLinesInError = 30;

absl::Status WriteFile(const fs::path& path, const std::string& content) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create ", path.parent_path().string()));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path.string()));
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InternalError(absl::StrCat("nvcc produced no ", path.filename().string()));
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

bool IsExecutable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

absl::StatusOr<std::string> ResolveNvcc(const NvccOptions& options) {
  if (!options.nvcc_path.empty()) return options.nvcc_path;
  return FindNvcc();
}

// Maps a finished (or killed) nvcc run to a status.
absl::Status RunStatus(const util::SubprocessResult& run, const std::string& what) {
  if (run.success()) return absl::OkStatus();
  if (run.timed_out) {
    return absl::DeadlineExceededError(absl::StrCat(what, " ", run.DescribeTermination()));
  }
  std::string detail =
      FirstLines(run.stderr_data.empty() ? run.stdout_data : run.stderr_data, kStderrLinesInError);
  // Under RLIMIT_AS an allocation failure surfaces as one of these rather
  // than as a signal; it is the limit, not the source, that is at fault.
  static constexpr const char* kOutOfMemory[] = {"out of memory", "Out of memory", "bad_alloc",
                                                 "Cannot allocate memory", "failed to map segment"};
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

absl::StatusOr<std::string> FindNvcc() {
  std::vector<std::string> searched;
  if (const char* env = getenv("KILN_NVCC"); env != nullptr && env[0] != '\0') {
    // Explicit configuration is not second-guessed by a fallback.
    if (IsExecutable(env)) return std::string(env);
    return absl::NotFoundError(
        absl::StrCat("nvcc not found: KILN_NVCC=", env, " is not an executable"));
  }
  if (const char* home = getenv("CUDA_HOME"); home != nullptr && home[0] != '\0') {
    searched.push_back(absl::StrCat(home, "/bin/nvcc"));
  }
  searched.emplace_back("/usr/local/cuda/bin/nvcc");
  for (const std::string& path : searched) {
    if (IsExecutable(path)) return path;
  }
  if (const char* path_env = getenv("PATH"); path_env != nullptr) {
    std::string_view rest(path_env);
    while (true) {
      size_t colon = rest.find(':');
      std::string dir(rest.substr(0, colon));
      if (!dir.empty() && IsExecutable(dir + "/nvcc")) return dir + "/nvcc";
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  searched.emplace_back("PATH");
  return absl::NotFoundError(absl::StrCat(
      "nvcc not found; searched ", absl::StrJoin(searched, ", "), " (set KILN_NVCC or CUDA_HOME)"));
}

absl::StatusOr<CompileOutput> NvccCompile(const CudaCompileInput& in, const NvccOptions& options) {
  if (absl::Status s = ValidateCudaCompileInput(in); !s.ok()) return s;
  absl::StatusOr<std::string> nvcc = ResolveNvcc(options);
  if (!nvcc.ok()) return nvcc.status();
  const auto start = std::chrono::steady_clock::now();

  absl::StatusOr<kiln::util::TempDir> dir = kiln::util::TempDir::Create("kiln-nvcc");
  if (!dir.ok()) return dir.status();
  const fs::path root(dir->path());
  if (absl::Status s = WriteFile(root / in.program_name, in.source); !s.ok()) return s;
  for (const auto& [name, content] : in.headers) {
    if (absl::Status s = WriteFile(root / "include" / name, content); !s.ok()) return s;
  }
  const fs::path keep = root / "keep";
  std::error_code ec;
  fs::create_directory(keep, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create ", keep.string()));

  // Headers live in their own folder on the include path, as NVRTC resolves
  // in-memory headers for both #include "..." and <...>.
  std::vector<std::string> argv = {*nvcc,
                                   in.want_cubin ? "-cubin" : "-ptx",
                                   absl::StrCat("-arch=", in.arch),
                                   "--std=c++17",
                                   "-Iinclude",
                                   "-Xptxas",
                                   absl::StrCat("-O", in.opt_level)};
  if (in.want_cubin) argv.insert(argv.end(), {"-Xptxas", "-v"});
  // With both outputs, the PTX is kept from the same run instead of
  // compiling twice.
  if (in.want_cubin && in.want_ptx) {
    argv.insert(argv.end(), {"--keep", "--keep-dir", "keep"});
  }
  if (in.fast_math) argv.emplace_back("--use_fast_math");
  if (in.line_info) argv.emplace_back("-lineinfo");
  argv.insert(argv.end(), in.extra_options.begin(), in.extra_options.end());
  const std::string output = in.want_cubin ? "out.cubin" : "out.ptx";
  argv.insert(argv.end(), {"-o", output, in.program_name});

  util::SubprocessOptions run_options;
  run_options.working_dir = dir->path();
  run_options.timeout = options.timeout;
  run_options.memory_limit_bytes = options.memory_limit_bytes;
  run_options.extra_env = {{"TMPDIR", dir->path()}};
  absl::StatusOr<util::SubprocessResult> run = util::RunSubprocess(argv, run_options);
  if (!run.ok()) return run.status();
  if (absl::Status s =
          RunStatus(*run, absl::StrCat("nvcc for '", in.program_name, "' (", in.arch, ")"));
      !s.ok()) {
    return s;
  }

  CompileOutput out;
  out.log = run->stderr_data;
  if (in.want_cubin) {
    absl::StatusOr<std::string> cubin = ReadFile(root / output);
    if (!cubin.ok()) return cubin.status();
    out.cubin = *std::move(cubin);
    out.kernels = ParsePtxasVerbose(out.log);
  }
  if (in.want_ptx) {
    fs::path ptx_path = root / output;
    if (in.want_cubin) {
      ptx_path = keep / fs::path(in.program_name).filename().replace_extension(".ptx");
    }
    absl::StatusOr<std::string> ptx = ReadFile(ptx_path);
    if (!ptx.ok()) return ptx.status();
    out.ptx = *std::move(ptx);
  }
  out.elapsed = std::chrono::steady_clock::now() - start;
  return out;
}

std::string ParseNvccVersion(std::string_view version_output) {
  size_t at = version_output.find(", V");
  if (at == std::string_view::npos) return "";
  size_t begin = at + 3;
  size_t end = begin;
  while (end < version_output.size() &&
         (std::isdigit(static_cast<unsigned char>(version_output[end])) ||
          version_output[end] == '.')) {
    ++end;
  }
  return std::string(version_output.substr(begin, end - begin));
}

absl::StatusOr<std::string> NvccVersion(const NvccOptions& options) {
  absl::StatusOr<std::string> nvcc = ResolveNvcc(options);
  if (!nvcc.ok()) return nvcc.status();
  util::SubprocessOptions run_options;
  run_options.timeout = options.timeout;
  run_options.memory_limit_bytes = options.memory_limit_bytes;
  absl::StatusOr<util::SubprocessResult> run =
      util::RunSubprocess({*nvcc, "--version"}, run_options);
  if (!run.ok()) return run.status();
  if (absl::Status s = RunStatus(*run, "nvcc --version"); !s.ok()) return s;
  std::string version = ParseNvccVersion(run->stdout_data);
  if (version.empty()) {
    return absl::InternalError(
        absl::StrCat("cannot parse `nvcc --version` output: ", FirstLines(run->stdout_data, 5)));
  }
  return version;
}

} // namespace kiln::toolchain
