// End-to-end: the `kiln` binary's front door against the real kilnd on a
// loopback port (issue 26): --version with and without a daemon, did-you-mean
// for commands and flags, --server checked before any call, the hint for an
// unreachable daemon, `kiln stats` (and `kiln cache stats --server`) after
// compiles, --zero, the note for shape symbols left dynamic, --test-bind.
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/e2e/daemon_process.h"
#include "tests/e2e/test_dir.h"
#include "util/subprocess.h"

namespace kiln {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::string kKilnd = std::string(KILN_BINARY_DIR) + "/kilnd";
const std::string kKiln = std::string(KILN_BINARY_DIR) + "/kiln";
const std::string kAdd = std::string(KILN_SOURCE_DIR) + "/examples/elementwise/add.py";
const std::string kSiluMul = std::string(KILN_SOURCE_DIR) + "/examples/elementwise/silu_mul.py";

// `kiln args...` with no KILN_* settings of the caller's environment.
util::SubprocessResult Kiln(std::vector<std::string> args) {
  args.insert(args.begin(), kKiln);
  util::SubprocessOptions o;
  o.timeout = std::chrono::seconds(120);
  o.extra_env = {{"KILN_SERVER", ""}, {"KILN_CLIENT_CACHE", ""}, {"KILN_TOKEN", ""}};
  absl::StatusOr<util::SubprocessResult> r = util::RunSubprocess(args, o);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : util::SubprocessResult{};
}

nlohmann::json ParseJson(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << text;
  return j;
}

class CliFrontDoorTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::FreshTestDir("cli_front_door_"); }
  void TearDown() override {
    daemon_.Stop();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  void Start() {
    ASSERT_TRUE(daemon_.Start(kKilnd, {"--listen=127.0.0.1:0", "--cache-dir=" + dir_ + "/cache"}))
        << daemon_.output();
  }
  // An address where nothing listens: a daemon's port after it stopped.
  std::string DeadAddress() {
    Start();
    const std::string address = daemon_.address();
    EXPECT_EQ(daemon_.Stop(), 0) << daemon_.output();
    return address;
  }

  std::string dir_;
  testing::DaemonProcess daemon_;
};

TEST_F(CliFrontDoorTest, VersionNamesTheClientAndTheDaemon) {
  Start();
  const std::string version = KILN_VERSION_STRING;
  for (const char* spelling : {"--version", "version", "-V"}) {
    SCOPED_TRACE(spelling);
    util::SubprocessResult r = Kiln({spelling, "--server", daemon_.address()});
    EXPECT_EQ(r.exit_code, 0) << r.stderr_data;
    EXPECT_THAT(r.stdout_data, ::testing::StartsWith("kiln " + version + "\n"));
    EXPECT_THAT(r.stdout_data,
                HasSubstr("server: kilnd " + version + " at " + daemon_.address() + "\n"));
    EXPECT_THAT(r.stdout_data, HasSubstr("targets: cpu"));
  }
  util::SubprocessResult json = Kiln({"--version", "--json", "--server=" + daemon_.address()});
  EXPECT_EQ(json.exit_code, 0) << json.stderr_data;
  nlohmann::json j = ParseJson(json.stdout_data);
  EXPECT_EQ(j["client"]["version"], version);
  EXPECT_EQ(j["server"]["reachable"], true);
  EXPECT_EQ(j["server"]["version"], version);
  EXPECT_EQ(j["server"]["address"], daemon_.address());
}

TEST_F(CliFrontDoorTest, VersionWithoutADaemonStillSucceeds) {
  const std::string dead = DeadAddress();
  util::SubprocessResult r = Kiln({"--version", "--server", dead});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_data;
  EXPECT_EQ(r.stdout_data, "kiln " + std::string(KILN_VERSION_STRING) +
                               "\nserver: not reachable at " + dead + "\n");
  util::SubprocessResult json = Kiln({"version", "--json", "--server", dead});
  EXPECT_EQ(json.exit_code, 0) << json.stderr_data;
  nlohmann::json j = ParseJson(json.stdout_data);
  EXPECT_EQ(j["server"]["reachable"], false);
  EXPECT_TRUE(j["server"].contains("error"));
}

TEST_F(CliFrontDoorTest, AnUnreachableDaemonGetsAHintAndExitFive) {
  const std::string dead = DeadAddress();
  const std::string hint =
      "hint: is kilnd running at " + dead +
      "? start it with scripts/serve.sh, or point KILN_SERVER / --server at it";
  util::SubprocessResult jobs = Kiln({"jobs", "--server", dead, "--retries", "1"});
  EXPECT_EQ(jobs.exit_code, 5) << jobs.stderr_data;
  EXPECT_THAT(jobs.stderr_data, HasSubstr("cannot get an answer from kilnd at " + dead));
  EXPECT_THAT(jobs.stderr_data, HasSubstr(hint));
  util::SubprocessResult compile =
      Kiln({"compile", kAdd, "--test-bind", "--server", dead, "--retries", "0"});
  EXPECT_EQ(compile.exit_code, 5) << compile.stderr_data;
  EXPECT_THAT(compile.stderr_data, HasSubstr(hint));
  util::SubprocessResult health = Kiln({"health", "--server", dead, "--timeout", "2"});
  EXPECT_EQ(health.exit_code, 5) << health.stderr_data;
  EXPECT_THAT(health.stderr_data, HasSubstr(hint));
}

TEST_F(CliFrontDoorTest, ABadServerAddressIsAUsageErrorBeforeAnyCall) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {{"compile", kAdd, "--test-bind", "--server", "localhost"},
            "kiln compile: --server: server address 'localhost' has no port"},
           {{"jobs", "--server", "http://127.0.0.1:7070"},
            "kiln jobs: --server: server address 'http://127.0.0.1:7070' has a URL scheme "
            "('http://'); kiln speaks gRPC to the address itself, e.g. --server 127.0.0.1:7070"},
           {{"stats", "--server=grpc://kiln:7070"}, "has a URL scheme ('grpc://')"},
           {{"devices", "--server", ":7070"}, "server address ':7070' has no host"},
           {{"tune", kAdd, "--server", "localhost:99999"}, "the port is not in 0..65535"},
           {{"health", "--server", "localhost"}, "server address 'localhost' has no port"},
           {{"version", "--server", "localhost"}, "server address 'localhost' has no port"}}) {
    SCOPED_TRACE(c.args[0]);
    util::SubprocessResult r = Kiln(c.args);
    EXPECT_EQ(r.exit_code, 2) << r.stderr_data;
    EXPECT_THAT(r.stderr_data, HasSubstr(c.message));
    EXPECT_THAT(r.stderr_data, HasSubstr("expected HOST:PORT"));
    EXPECT_THAT(r.stderr_data, Not(HasSubstr("cannot get an answer")));
  }
}

TEST_F(CliFrontDoorTest, MistypedCommandsAndFlagsGetASuggestion) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {{"compil", kAdd}, "kiln: unknown command 'compil'; did you mean 'compile'?"},
           {{"stast"}, "did you mean 'stats'?"},
           {{"--server", "127.0.0.1:7070", "jobs"},
            "kiln: '--server' is not a command; options go after the command"},
           {{"regress", "hist", "gemm"}, "unknown subcommand 'hist'; did you mean 'history'?"},
           {{"regress", "run", "suite.yaml", "--lable", "x"},
            "kiln regress run: unknown flag '--lable'; did you mean '--label'?"},
           {{"regress", "history", "gemm", "--limt", "3"}, "did you mean '--limit'?"},
           {{"compile", kAdd, "--bnd", "M=1"},
            "kiln compile: unknown flag '--bnd'; did you mean '--bind'?"},
           {{"compile", kAdd, "--trget=cpu"},
            "unknown flag '--trget=cpu'; did you mean '--target'?"},
           {{"compile", kAdd, "--test-bnd"}, "did you mean '--test-bind'?"},
           {{"bench", kAdd, "--trails", "3"}, "did you mean '--trials'?"},
           {{"best", kAdd, "--device-modl", "H100"}, "did you mean '--device-model'?"},
           {{"jobs", "--wach"}, "did you mean '--watch'?"},
           {{"devices", "--jsn"}, "did you mean '--json'?"},
           {{"stats", "--zeor"}, "did you mean '--zero'?"},
           {{"tune", kAdd, "--strategey", "grid"}, "did you mean '--strategy'?"},
           {{"cache", "stat"}, "unknown subcommand 'stat'; did you mean 'stats'?"},
           {{"cache", "ls", "--cache-dri", "x"}, "did you mean '--cache-dir'?"},
           {{"health", "--servr", "x:1"}, "did you mean '--server'?"},
           {{"compile", kAdd, "--sever", "127.0.0.1:1"}, "did you mean '--server'?"}}) {
    SCOPED_TRACE(c.args[0] + " " + c.args.back());
    util::SubprocessResult r = Kiln(c.args);
    EXPECT_EQ(r.exit_code, 2) << r.stderr_data;
    EXPECT_THAT(r.stderr_data, HasSubstr(c.message));
  }
}

TEST_F(CliFrontDoorTest, StatsCountAMissThenAHitAndZero) {
  Start();
  const std::string server = "--server=" + daemon_.address();
  for (const char* cache : {"miss", "hit"}) {
    util::SubprocessResult r = Kiln({"compile", kAdd, "--test-bind", server});
    ASSERT_EQ(r.exit_code, 0) << r.stderr_data;
    EXPECT_THAT(r.stdout_data, HasSubstr(std::string(" ") + cache + " ")) << r.stdout_data;
  }
  util::SubprocessResult json = Kiln({"stats", server, "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.stderr_data;
  nlohmann::json s = ParseJson(json.stdout_data);
  EXPECT_GE(s["entries"].get<int64_t>(), 1);
  EXPECT_GT(s["blob_bytes"].get<int64_t>(), 0);
  EXPECT_GT(s["overhead_bytes"].get<int64_t>(), 0); // the index and the reserve
  EXPECT_EQ(s["corrupt_artifacts_evicted"], 0);
  EXPECT_EQ(s["compile_requests"], 2);
  EXPECT_EQ(s["compile_misses"], 1);
  EXPECT_EQ(s["compile_hits"], 1);
  EXPECT_EQ(s["builds"], 1);
  EXPECT_EQ(s["build_failures"], 0);
  EXPECT_EQ(s["tunes"], 0);
  EXPECT_DOUBLE_EQ(s["hit_rate"].get<double>(), 0.5);
  EXPECT_EQ(s["cache_dir"], dir_ + "/cache");
  EXPECT_EQ(s["zeroed"], false);

  // Text like sccache -s: aligned label/value lines; the same through
  // `kiln cache stats --server`.
  util::SubprocessResult text = Kiln({"stats", server});
  ASSERT_EQ(text.exit_code, 0) << text.stderr_data;
  EXPECT_THAT(text.stdout_data, HasSubstr("Compile requests hit                             1\n"));
  EXPECT_THAT(text.stdout_data, HasSubstr("Compile requests missed                          1\n"));
  EXPECT_THAT(text.stdout_data, HasSubstr("Cache hit rate                             50.00 %\n"));
  EXPECT_THAT(text.stdout_data, HasSubstr("Cache entries                                    1\n"));
  util::SubprocessResult alias = Kiln({"cache", "stats", server});
  ASSERT_EQ(alias.exit_code, 0) << alias.stderr_data;
  EXPECT_EQ(alias.stdout_data, text.stdout_data);

  // --zero prints the counters, then starts them again; the cache keeps its entries.
  util::SubprocessResult zero = Kiln({"stats", server, "--zero"});
  ASSERT_EQ(zero.exit_code, 0) << zero.stderr_data;
  EXPECT_THAT(zero.stdout_data, HasSubstr("Compile requests hit                             1\n"));
  EXPECT_THAT(zero.stdout_data, HasSubstr("Statistics zeroed."));
  nlohmann::json after = ParseJson(Kiln({"stats", server, "--json"}).stdout_data);
  EXPECT_EQ(after["compile_requests"], 0);
  EXPECT_EQ(after["builds"], 0);
  EXPECT_TRUE(after["hit_rate"].is_null());
  EXPECT_GE(after["entries"].get<int64_t>(), 1);
  EXPECT_GE(after["since_unix_ms"].get<int64_t>(), s["since_unix_ms"].get<int64_t>());
  ASSERT_EQ(Kiln({"compile", kAdd, "--test-bind", server}).exit_code, 0);
  nlohmann::json again = ParseJson(Kiln({"stats", server, "--json"}).stdout_data);
  EXPECT_EQ(again["compile_hits"], 1);
  EXPECT_EQ(again["compile_misses"], 0);
}

TEST_F(CliFrontDoorTest, StatsAndZeroNeedATokenWhenTheDaemonHasTokens) {
  const std::string tokens = dir_ + "/tokens";
  ASSERT_EQ(std::system(("printf 'kiln-stats-token-0123456789 ops\\n' > " + tokens).c_str()), 0);
  ASSERT_TRUE(daemon_.Start(kKilnd, {"--listen=127.0.0.1:0", "--cache-dir=" + dir_ + "/cache",
                                     "--auth-tokens-file=" + tokens}))
      << daemon_.output();
  const std::string server = "--server=" + daemon_.address();
  util::SubprocessResult anonymous = Kiln({"stats", server, "--zero"});
  EXPECT_EQ(anonymous.exit_code, 1) << anonymous.stderr_data;
  EXPECT_THAT(anonymous.stdout_data, Not(HasSubstr("Statistics zeroed")));
  util::SubprocessResult wrong =
      Kiln({"stats", server, "--zero", "--token", "not-the-token-0000000"});
  EXPECT_EQ(wrong.exit_code, 1) << wrong.stderr_data;
  util::SubprocessResult ok =
      Kiln({"stats", server, "--zero", "--token=kiln-stats-token-0123456789"});
  EXPECT_EQ(ok.exit_code, 0) << ok.stderr_data;
  EXPECT_THAT(ok.stdout_data, HasSubstr("Statistics zeroed."));
}

TEST_F(CliFrontDoorTest, CompileNotesShapeSymbolsLeftDynamic) {
  Start();
  const std::string server = "--server=" + daemon_.address();
  util::SubprocessResult r =
      Kiln({"compile", kSiluMul, "--bind", "block_M=8", "--bind", "block_N=128", server});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_data;
  EXPECT_THAT(r.stderr_data,
              HasSubstr("kiln compile: note: shape symbols 'M', 'N' were left unbound and are "
                        "dynamic: the kernel takes their values at launch (--bind NAME=VALUE "
                        "specializes them)"));
  util::SubprocessResult json = Kiln({"compile", kSiluMul, "--bind", "block_M=8", "--bind",
                                      "block_N=128", "--bind", "N=300", server, "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.stderr_data;
  EXPECT_THAT(json.stderr_data,
              HasSubstr("note: shape symbol 'M' was left unbound and is dynamic"));
  EXPECT_EQ(ParseJson(json.stdout_data)["dynamic_symbols"], nlohmann::json::array({"M"}));
  // Every symbol bound: no note, an empty list.
  util::SubprocessResult bound = Kiln({"compile", kSiluMul, "--test-bind", server, "--json"});
  ASSERT_EQ(bound.exit_code, 0) << bound.stderr_data;
  EXPECT_THAT(bound.stderr_data, Not(HasSubstr("note:")));
  EXPECT_EQ(ParseJson(bound.stdout_data)["dynamic_symbols"], nlohmann::json::array());
}

TEST_F(CliFrontDoorTest, CompileErrorsQuoteTheSourceLineAndDynamicNamesSymbols) {
  Start();
  const std::string server = "--server=" + daemon_.address();
  // --dynamic compiles a parameter as a shape symbol; bound as well, it is a
  // located error whose source line the CLI quotes under the message.
  util::SubprocessResult dynamic =
      Kiln({"compile", kAdd, "--bind", "N=130", "--bind", "block_M=16", "--bind", "block_N=64",
            "--dynamic", "M", server, "--json"});
  ASSERT_EQ(dynamic.exit_code, 0) << dynamic.stderr_data;
  EXPECT_EQ(ParseJson(dynamic.stdout_data)["dynamic_symbols"], nlohmann::json::array({"M"}));
  util::SubprocessResult both = Kiln({"compile", kAdd, "--test-bind", "--dynamic", "M", server});
  EXPECT_EQ(both.exit_code, 1) << both.stderr_data;
  EXPECT_THAT(both.stderr_data, HasSubstr("parameter 'M' is both bound and named dynamic"));
  EXPECT_THAT(both.stderr_data, ::testing::ContainsRegex("\n +[0-9]+ \\| def add\\(M, N"));
  // A misspelt tile op: the message, then the line and a caret under it.
  const std::string bad = dir_ + "/bad.py";
  std::filesystem::copy_file(kAdd, bad);
  ASSERT_EQ(std::system(("sed -i 's/T.Parallel(/T.Paralel(/' " + bad).c_str()), 0);
  util::SubprocessResult r = Kiln({"compile", bad, "--test-bind", server});
  EXPECT_EQ(r.exit_code, 1) << r.stderr_data;
  EXPECT_THAT(r.stderr_data, ::testing::ContainsRegex(bad + ":[0-9]+:[0-9]+: "));
  EXPECT_THAT(r.stderr_data, ::testing::ContainsRegex("\n +[0-9]+ \\| .*T\\.Paralel\\("));
  EXPECT_THAT(r.stderr_data, ::testing::ContainsRegex("\n +\\| +\\^"));
}

TEST_F(CliFrontDoorTest, TestBindTakesTheFilesLineAndBindWins) {
  Start();
  const std::string server = "--server=" + daemon_.address();
  auto key = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"compile", kAdd, server, "--json"});
    util::SubprocessResult r = Kiln(args);
    EXPECT_EQ(r.exit_code, 0) << r.stderr_data;
    return r.exit_code == 0 ? ParseJson(r.stdout_data)["key"].get<std::string>() : "";
  };
  // add.py: # kiln: test-bind M=77 N=130 block_M=16 block_N=64
  const std::string test_bind = key({"--test-bind"});
  EXPECT_EQ(test_bind.size(), 64u);
  EXPECT_EQ(test_bind, key({"--bind", "M=77", "--bind", "N=130", "--bind", "block_M=16", "--bind",
                            "block_N=64"}));
  const std::string m100 = key({"--test-bind", "--bind", "M=100"});
  EXPECT_NE(m100, test_bind);
  EXPECT_EQ(m100, key({"--bind", "M=100", "--bind", "N=130", "--bind", "block_M=16", "--bind",
                       "block_N=64"}));
  // A file without the line.
  const std::string bare = dir_ + "/bare.py";
  std::filesystem::copy_file(kAdd, bare);
  ASSERT_EQ(std::system(("sed -i '/# kiln: test-bind/d' " + bare).c_str()), 0);
  util::SubprocessResult none = Kiln({"compile", bare, "--test-bind", server});
  EXPECT_EQ(none.exit_code, 2) << none.stderr_data;
  EXPECT_THAT(none.stderr_data,
              HasSubstr("kiln compile: --test-bind: " + bare + " has no '# kiln: test-bind' line"));
}

} // namespace
} // namespace kiln
