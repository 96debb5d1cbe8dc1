#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "clients/cpp/tune_commands.h"
#include "gtest/gtest.h"

namespace kiln::cli {
namespace {

struct Result {
  int code = 0;
  std::string out;
  std::string err;
};

Result RunTune(std::vector<std::string> args, TuneRemoteFn remote = nullptr) {
  std::ostringstream out, err;
  Command c = TuneCommand(remote);
  Result r;
  r.code = c.run(args, {out, err});
  r.out = out.str();
  r.err = err.str();
  return r;
}

std::string Example(const std::string& rel) { return std::string(KILN_SOURCE_DIR) + "/" + rel; }

TEST(TuneCommand, DryRunJsonHasTheRankedCandidates) {
  Result r = RunTune({Example("examples/gemm/gemm.py"), "--bind", "M=4096", "--bind", "N=4096",
                      "--bind", "K=4096", "--strategy", "roller", "--top-k", "4", "--arch", "h200",
                      "--dry-run", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("strategy"), "roller");
  EXPECT_EQ(j.at("entry"), "gemm");
  EXPECT_EQ(j.at("bind").at("M"), 4096);
  EXPECT_EQ(j.at("arch").at("name"), "h200");
  EXPECT_EQ(j.at("arch").at("sm_count"), 132);
  EXPECT_EQ(j.at("verify_target"), "cuda:sm_90");
  std::set<std::string> roles;
  for (const auto& t : j.at("tunables")) {
    roles.insert(t.at("name").get<std::string>() + ":" + t.at("role").get<std::string>());
  }
  EXPECT_TRUE(roles.count("block_M:block_tile"));
  EXPECT_TRUE(roles.count("block_K:reduction_step"));
  EXPECT_TRUE(roles.count("num_stages:pipeline_depth"));
  const auto& cands = j.at("candidates");
  ASSERT_EQ(cands.size(), 4u);
  double last = 0;
  for (size_t i = 0; i < cands.size(); ++i) {
    const auto& c = cands[i];
    EXPECT_EQ(c.at("rank"), static_cast<int>(i) + 1);
    for (const char* k : {"block_M", "block_N", "block_K", "num_stages", "threads"}) {
      EXPECT_TRUE(c.at("config").contains(k)) << k;
    }
    const double us = c.at("predicted_us").get<double>();
    EXPECT_GT(us, 0);
    EXPECT_GE(us, last);
    last = us;
    EXPECT_FALSE(c.at("rationale").get<std::string>().empty());
    EXPECT_EQ(c.at("key").get<std::string>().size(), 64u);
    EXPECT_TRUE(c.at("terms_us").contains("dram"));
    EXPECT_GT(c.at("smem_bytes").get<int64_t>(), 0);
  }
  EXPECT_GT(j.at("considered").get<int>(), 4);
}

TEST(TuneCommand, GridOverADeclaredSpace) {
  Result r = RunTune({Example("examples/gemm/gemm.py"), "--bind=M=1024", "--bind=N=1024",
                      "--bind=K=1024", "--strategy", "grid", "--space", "block_M=64,128", "--space",
                      "block_N=64,128", "--space", "block_K=32", "--space", "num_stages=3",
                      "--space", "threads=128", "--dry-run", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("candidates").size(), 4u);
  EXPECT_EQ(j.at("considered"), 4);
}

TEST(TuneCommand, TextOutputNamesRolesAndRanks) {
  Result r = RunTune({Example("examples/softmax/softmax.py"), "--bind", "M=4096", "--bind",
                      "N=4096", "--dry-run", "--top-k", "2"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("block_M: block_tile"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  1 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("us"), std::string::npos);
}

TEST(TuneCommand, WithoutDryRunTheDaemonPathIsNotThereYet) {
  Result r = RunTune({Example("examples/gemm/gemm.py"), "--bind", "M=64"});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_NE(r.err.find("--dry-run"), std::string::npos) << r.err;
  // The hook for the daemon's path receives the parsed arguments.
  TuneArgs seen;
  r = RunTune({Example("examples/gemm/gemm.py"), "--bind", "M=64", "--strategy", "grid", "--space",
               "block_M=16,32"},
              [&](const TuneArgs& a, CommandIo) {
                seen = a;
                return 0;
              });
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(seen.strategy, "grid");
  ASSERT_EQ(seen.bindings.size(), 1u);
  EXPECT_EQ(seen.bindings[0].first, "M");
  ASSERT_EQ(seen.space.size(), 1u);
  EXPECT_EQ(seen.space[0].second, (std::vector<int64_t>{16, 32}));
  EXPECT_FALSE(seen.remeasure);
  r = RunTune({Example("examples/gemm/gemm.py"), "--bind", "M=64", "--remeasure"},
              [&](const TuneArgs& a, CommandIo) {
                seen = a;
                return 0;
              });
  EXPECT_EQ(r.code, 0);
  EXPECT_TRUE(seen.remeasure);
}

TEST(TuneCommand, PassOptionsReachThePlanAndTheDaemonRequest) {
  Result r = RunTune({Example("examples/gemm/gemm.py"), "--bind", "M=4096", "--bind", "N=4096",
                      "--bind", "K=4096", "--top-k", "3", "--target", "cuda:sm_90a", "--pass",
                      "gemm=wgmma", "--dry-run", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("verify_target"), "cuda:sm_90a");
  EXPECT_EQ(j.at("pass_options"), nlohmann::json::array({"gemm=wgmma"}));
  EXPECT_GT(j.at("arch").at("wgmma_tflops").get<double>(), 0);
  ASSERT_EQ(j.at("candidates").size(), 3u);
  EXPECT_TRUE(j.at("candidates")[0].at("wgmma").get<bool>()) << r.out;
  EXPECT_NE(j.at("candidates")[0].at("rationale").get<std::string>().find("wgmma"),
            std::string::npos);

  TuneArgs seen;
  r = RunTune({Example("examples/gemm/gemm.py"), "--bind", "M=64", "--pass=gemm=wgmma"},
              [&](const TuneArgs& a, CommandIo) {
                seen = a;
                return 0;
              });
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(seen.pass_options, (std::vector<std::string>{"gemm=wgmma"}));
  // Unknown options are the compiler's to refuse: a failure naming it.
  r = RunTune({Example("examples/gemm/gemm.py"), "--bind", "M=64", "--bind", "N=64", "--bind",
               "K=64", "--pass", "gemm=magic", "--dry-run"});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_NE(r.err.find("gemm=magic"), std::string::npos) << r.err;
  EXPECT_EQ(RunTune({"f.py", "--pass", "wgmma", "--dry-run"}).code, kExitUsage);
}

TEST(TuneCommand, DryRunForTheCpuTargetModelsTheCpu) {
  Result r = RunTune({Example("examples/elementwise/add.py"), "--bind", "M=1024", "--bind",
                      "N=1024", "--target", "cpu", "--top-k", "2", "--dry-run", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("arch").at("name"), "cpu");
  EXPECT_EQ(j.at("arch").at("target"), "cpu");
  EXPECT_EQ(j.at("arch_from"), "target");
  EXPECT_EQ(j.at("verify_target"), "cpu");
  const std::string model = j.at("arch").at("model");
  EXPECT_EQ(model.find("H200"), std::string::npos) << model;
  // It says which model it assumed.
  EXPECT_NE(r.err.find("models " + model + " (preset cpu, from --target cpu)"), std::string::npos)
      << r.err;

  r = RunTune({Example("examples/elementwise/add.py"), "--bind", "M=1024", "--bind", "N=1024",
               "--target", "cpu", "--top-k", "2", "--dry-run"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("(preset cpu, from --target cpu)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("H200"), std::string::npos) << r.out;
}

TEST(TuneCommand, ArchFollowsTheTarget) {
  const std::pair<std::string, std::string> cases[] = {{"", "h200"},
                                                       {"cpu", "cpu"},
                                                       {"cuda:sm_90", "h200"},
                                                       {"cuda:sm_90a", "h200"},
                                                       {"cuda:sm_80", "a100"},
                                                       {"cuda:sm_89", "a100"},
                                                       {"hip:gfx942", "mi300x"},
                                                       {"hip:gfx90a", "mi250x"}};
  for (const auto& [target, preset] : cases) {
    SCOPED_TRACE(target);
    absl::StatusOr<std::string> got = ArchForTarget(target);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, preset);
  }
  absl::StatusOr<std::string> none = ArchForTarget("cuda:sm_70");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("--arch"), std::string::npos) << none.status();
  // An explicit --arch wins over the target.
  Result r =
      RunTune({Example("examples/elementwise/add.py"), "--bind", "M=1024", "--bind", "N=1024",
               "--target", "cpu", "--arch", "h100", "--top-k", "1", "--dry-run", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out).at("arch").at("name"), "h100");
  EXPECT_EQ(nlohmann::json::parse(r.out).at("arch_from"), "flag");
}

TEST(TuneCommand, IgnoredFlagsSaySo) {
  auto remote = [](const TuneArgs&, CommandIo) { return 0; };
  // --arch on a real tune: the daemon measures its own device.
  Result r =
      RunTune({Example("examples/gemm/gemm.py"), "--bind", "M=64", "--arch", "h100"}, remote);
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.err.find("kiln tune: note: --arch is ignored without --dry-run"), std::string::npos)
      << r.err;
  r = RunTune({Example("examples/gemm/gemm.py"), "--strategy", "grid", "--top-k", "3", "--measured",
               "dram_gbs=100", "--no-verify"},
              remote);
  EXPECT_NE(r.err.find("--top-k is ignored with --strategy grid"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--measured is ignored without --dry-run"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--no-verify is ignored without --dry-run"), std::string::npos) << r.err;
  // Daemon flags on a dry run, --budget with the roller, --seed without random.
  r = RunTune({Example("examples/elementwise/add.py"), "--bind", "M=256", "--bind", "N=256",
               "--target", "cpu", "--top-k", "1", "--budget", "4", "--seed", "7", "--server",
               "127.0.0.1:1", "--device=cpu", "--dry-run"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("--server, --device are ignored with --dry-run"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("--budget is ignored with --strategy roller"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--seed is ignored by a --dry-run with --strategy roller"),
            std::string::npos)
      << r.err;
  // A flag in use gets no note.
  r = RunTune({Example("examples/gemm/gemm.py"), "--strategy", "random", "--top-k", "3"}, remote);
  EXPECT_EQ(r.err.find("note"), std::string::npos) << r.err;
}

TEST(TuneCommand, JsonFailuresPrintTheErrorObject) {
  Result r = RunTune({Example("examples/gemm/gemm.py"), "--dry-run", "--json"}); // M, N, K unbound
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_NE(r.err.find("bind the shape symbols"), std::string::npos) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("error").at("code"), "INVALID_ARGUMENT") << r.out;
  EXPECT_NE(j.at("error").at("message").get<std::string>().find("bind the shape symbols"),
            std::string::npos);
  EXPECT_TRUE(j.at("error").at("diagnostics").is_array());

  r = RunTune({"/nonexistent.py", "--dry-run", "--json"});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_EQ(nlohmann::json::parse(r.out).at("error").at("code"), "NOT_FOUND") << r.out;

  r = RunTune({"f.py", "--top-k", "0", "--dry-run", "--json"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_EQ(nlohmann::json::parse(r.out).at("error").at("code"), "INVALID_ARGUMENT") << r.out;

  // A bad program: its location is a diagnostic.
  const std::string bad = ::testing::TempDir() + "tune_bad.py";
  {
    std::ofstream f(bad);
    f << "import tilelang.language as T\n\ndef k(M):\n    @T.prim_func\n"
         "    def main(A: T.Tensor((M,), T.float32)):\n"
         "        with T.Kernel(1, threads=32) as bx:\n            A[0] = undefined_name\n"
         "    return main\n";
  }
  r = RunTune({bad, "--bind", "M=4", "--target", "cpu", "--dry-run", "--json"});
  EXPECT_EQ(r.code, kExitFailure);
  const nlohmann::json e = nlohmann::json::parse(r.out).at("error");
  ASSERT_FALSE(e.at("diagnostics").empty()) << r.out;
  EXPECT_EQ(e.at("diagnostics")[0].at("file"), bad);
  EXPECT_EQ(e.at("diagnostics")[0].at("line"), 7);
}

TEST(TuneCommand, UsageErrors) {
  EXPECT_EQ(RunTune({}).code, kExitUsage);
  EXPECT_EQ(RunTune({"f.py", "--bind", "nonsense", "--dry-run"}).code, kExitUsage);
  EXPECT_EQ(RunTune({"f.py", "--space", "block_M=a,b", "--dry-run"}).code, kExitUsage);
  EXPECT_EQ(RunTune({"f.py", "--top-k", "0", "--dry-run"}).code, kExitUsage);
  EXPECT_EQ(RunTune({Example("examples/gemm/gemm.py"), "--arch", "v100", "--dry-run"}).code,
            kExitUsage);
  EXPECT_EQ(RunTune({Example("examples/gemm/gemm.py"), "--strategy", "anneal", "--dry-run"}).code,
            kExitUsage);
  Result r = RunTune({Example("examples/gemm/gemm.py"), "--dry-run"}); // M, N, K unbound
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_NE(r.err.find("bind the shape symbols"), std::string::npos) << r.err;
  EXPECT_EQ(RunTune({"/nonexistent.py", "--dry-run"}).code, kExitFailure);
  EXPECT_EQ(RunTune({"--help"}).code, kExitOk);
}

} // namespace
} // namespace kiln::cli
