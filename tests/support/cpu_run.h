// Running a TileLang source once on the CPU target through the real kiln-run
// binary, in a temporary folder, and reading back the float32 parameters it
// saved: the numeric check of the frontend's compatibility tests.
#ifndef KILN_TESTS_SUPPORT_CPU_RUN_H_
#define KILN_TESTS_SUPPORT_CPU_RUN_H_

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <stdlib.h>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "compiler/ir/dtype.h"
#include "compiler/tools/npy.h"
#include "gtest/gtest.h"
#include "tests/support/frontend_compile.h"
#include "util/subprocess.h"

namespace kiln::frontend::testing {

struct CpuRunOptions {
  std::string entry;                // --entry (empty: the file's only kernel)
  std::vector<std::string> dynamic; // --dynamic NAME; the value comes from the bindings
};

// One kiln-run: its exit, its stderr and the float32 arrays it saved.
struct CpuResult {
  bool success = false;
  std::string stderr_data;
  std::map<std::string, std::vector<float>> arrays;
};

class CpuRun {
 public:
  CpuRun() {
    std::string pattern = (std::filesystem::temp_directory_path() / "kiln-cpu-run-XXXXXX").string();
    EXPECT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  ~CpuRun() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  CpuRun(const CpuRun&) = delete;
  CpuRun& operator=(const CpuRun&) = delete;

  // Saves the parameters `save` (inputs as generated, outputs as the kernel
  // left them) when the run succeeds.
  CpuResult Run(const std::string& src, const Bindings& binds, const std::vector<std::string>& save,
                const CpuRunOptions& options = {}) {
    std::ofstream((dir_ / "k.py").string()) << src;
    std::vector<std::string> args = {std::string(KILN_BINARY_DIR) + "/kiln-run",
                                     (dir_ / "k.py").string(), "--target", "cpu", "--quiet"};
    if (!options.entry.empty()) {
      args.emplace_back("--entry");
      args.push_back(options.entry);
    }
    for (const std::string& name : options.dynamic) {
      args.emplace_back("--dynamic");
      args.push_back(name);
    }
    for (const auto& [k, v] : binds) {
      args.emplace_back("--bind");
      args.push_back(absl::StrCat(k, "=", v));
    }
    for (const std::string& name : save) {
      args.emplace_back("--save");
      args.push_back(absl::StrCat(name, "=", (dir_ / (name + ".npy")).string()));
    }
    util::SubprocessOptions run_options;
    run_options.timeout = std::chrono::seconds(300);
    absl::StatusOr<util::SubprocessResult> run = util::RunSubprocess(args, run_options);
    CpuResult out;
    EXPECT_TRUE(run.ok()) << run.status();
    if (!run.ok()) return out;
    out.success = run->success();
    out.stderr_data = run->stderr_data;
    if (!out.success) return out;
    for (const std::string& name : save) {
      absl::StatusOr<tools::NpyArray> a = tools::ReadNpyFile((dir_ / (name + ".npy")).string());
      EXPECT_TRUE(a.ok()) << a.status();
      if (!a.ok() || a->dtype != ir::DType::kFloat32) continue;
      std::vector<float>& v = out.arrays[name];
      v.resize(a->data.size() / sizeof(float));
      std::memcpy(v.data(), a->data.data(), v.size() * sizeof(float));
    }
    return out;
  }

  // Run() that must succeed: the saved arrays.
  std::map<std::string, std::vector<float>> MustRun(const std::string& src, const Bindings& binds,
                                                    const std::vector<std::string>& save,
                                                    const CpuRunOptions& options = {}) {
    CpuResult r = Run(src, binds, save, options);
    EXPECT_TRUE(r.success) << r.stderr_data;
    return r.arrays;
  }

 private:
  std::filesystem::path dir_;
};

} // namespace kiln::frontend::testing

#endif // KILN_TESTS_SUPPORT_CPU_RUN_H_
