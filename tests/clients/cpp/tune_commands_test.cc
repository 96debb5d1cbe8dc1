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
