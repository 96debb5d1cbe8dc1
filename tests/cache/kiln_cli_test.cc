// `kiln cache ...` run as the real binary: output, --json, exit codes.
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>
#include <sqlite3.h>
#include <unistd.h>

#include "cache/cache.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cache/cache_test_util.h"
#include "util/subprocess.h"
#include "util/temp_dir.h"

namespace kiln::cache {
namespace {

using ::testing::HasSubstr;

class KilnCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<util::TempDir> dir = util::TempDir::Create("kiln-cli-test");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(*std::move(dir));
    root_ = dir_->path() + "/cache";
    CacheOptions o;
    o.background = false;
    o.sync = false;
    absl::StatusOr<std::unique_ptr<Cache>> c = Cache::Open(root_, o);
    ASSERT_TRUE(c.ok());
    for (const char* k : {"alpha", "beta", "gamma"}) {
      ASSERT_TRUE((*c)->PutArtifact(k, testing::MakeArtifact(k)).ok());
    }
    BestConfig best;
    best.config_json = "{}";
    best.artifact_key = "gamma";
    ASSERT_TRUE((*c)->PutBest({"p", "s", "cpu", "m"}, best).ok());
    // Access times have millisecond resolution: without the pause the get
    // can share gamma's put millisecond, and "most recently used" ties.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_TRUE((*c)->GetArtifact("alpha").ok());
  }

  util::SubprocessResult Kiln(std::vector<std::string> args,
                              std::vector<std::pair<std::string, std::string>> env = {}) {
    args.insert(args.begin(), std::string(KILN_BINARY_DIR) + "/kiln");
    util::SubprocessOptions o;
    o.timeout = std::chrono::seconds(60);
    o.extra_env = std::move(env);
    absl::StatusOr<util::SubprocessResult> r = util::RunSubprocess(args, o);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *std::move(r) : util::SubprocessResult{};
  }
  nlohmann::json Json(const util::SubprocessResult& r) {
    nlohmann::json j = nlohmann::json::parse(r.stdout_data, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.stdout_data;
    return j;
  }

  std::optional<util::TempDir> dir_;
  std::string root_;
};

TEST_F(KilnCliTest, StatsAndLs) {
  util::SubprocessResult stats = Kiln({"cache", "stats", "--cache-dir", root_, "--json"});
  ASSERT_EQ(stats.exit_code, 0) << stats.stderr_data;
  nlohmann::json j = Json(stats);
  EXPECT_EQ(j["artifacts"], 3);
  EXPECT_EQ(j["pinned_artifacts"], 1);
  EXPECT_EQ(j["best_configs"], 1);
  EXPECT_EQ(j["hits"], 1);
  EXPECT_EQ(j["cache_dir"], root_);
  EXPECT_GT(j["blob_bytes"].get<int64_t>(), 0);

  util::SubprocessResult text = Kiln({"cache", "stats", "--cache-dir=" + root_});
  ASSERT_EQ(text.exit_code, 0);
  EXPECT_THAT(text.stdout_data, HasSubstr("artifacts        3 (1 pinned)"));

  util::SubprocessResult ls = Kiln({"cache", "ls", "--cache-dir", root_, "--json"});
  ASSERT_EQ(ls.exit_code, 0) << ls.stderr_data;
  nlohmann::json list = Json(ls);
  ASSERT_EQ(list.size(), 3U);
  EXPECT_EQ(list[0]["key"], "alpha"); // most recently used first
  int pinned = 0;
  for (const auto& a : list) pinned += a["pinned"].get<bool>() ? 1 : 0;
  EXPECT_EQ(pinned, 1);
  EXPECT_EQ(list[0]["kinds"], nlohmann::json::array({"cubin", "ptx"}));

  util::SubprocessResult limited = Kiln({"cache", "ls", "--cache-dir", root_, "--limit", "1"});
  ASSERT_EQ(limited.exit_code, 0);
  EXPECT_THAT(limited.stdout_data, HasSubstr("alpha"));
  EXPECT_THAT(limited.stdout_data, ::testing::Not(HasSubstr("beta")));
}

TEST_F(KilnCliTest, CacheDirDefaultsToTheEnvironment) {
  util::SubprocessResult r = Kiln({"cache", "stats", "--json"}, {{"KILN_CACHE_DIR", root_}});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_data;
  EXPECT_EQ(Json(r)["cache_dir"], root_);
}

TEST_F(KilnCliTest, GcKeepsPinnedArtifacts) {
  util::SubprocessResult gc =
      Kiln({"cache", "gc", "--cache-dir", root_, "--max-size", "0", "--json"});
  ASSERT_EQ(gc.exit_code, 0) << gc.stderr_data;
  EXPECT_EQ(Json(gc)["evicted_artifacts"], 2);
  nlohmann::json ls = Json(Kiln({"cache", "ls", "--cache-dir", root_, "--json"}));
  ASSERT_EQ(ls.size(), 1U);
  EXPECT_EQ(ls[0]["key"], "gamma");
  util::SubprocessResult human = Kiln({"cache", "gc", "--cache-dir", root_, "--max-size", "1M"});
  EXPECT_EQ(human.exit_code, 0);
  EXPECT_THAT(human.stdout_data, HasSubstr("evicted 0 artifact(s)"));
}

TEST_F(KilnCliTest, VerifyReportsDamageWithExitCode3) {
  util::SubprocessResult clean = Kiln({"cache", "verify", "--cache-dir", root_});
  EXPECT_EQ(clean.exit_code, 0) << clean.stdout_data << clean.stderr_data;
  // Damage one blob file.
  std::vector<std::string> files;
  ASSERT_TRUE(BlobStore(root_ + "/blobs", {})
                  .ForEach([&](const std::string& d) { files.push_back(d); })
                  .ok());
  ASSERT_FALSE(files.empty());
  ASSERT_TRUE(testing::FlipByte(root_ + "/blobs/" + files[0].substr(0, 2) + "/" + files[0], -1));
  util::SubprocessResult damaged = Kiln({"cache", "verify", "--cache-dir", root_, "--json"});
  EXPECT_EQ(damaged.exit_code, 3) << damaged.stdout_data << damaged.stderr_data;
  nlohmann::json j = Json(damaged);
  EXPECT_EQ(j["ok"], false);
  EXPECT_EQ(j["corrupt_blobs"], 1);
  // The damage was removed: the next verify is clean.
  EXPECT_EQ(Kiln({"cache", "verify", "--cache-dir", root_}).exit_code, 0);
}

TEST_F(KilnCliTest, VerifyReportsARowNamingAnotherArtifactsBlob) {
  // alpha's row points at beta's cubin: every blob is sound, only the
  // manifest says whose it is.
  std::string beta_cubin;
  {
    absl::StatusOr<std::unique_ptr<Cache>> c = Cache::Open(root_);
    ASSERT_TRUE(c.ok());
    absl::StatusOr<Artifact> beta = (*c)->GetArtifact("beta", {"cubin"});
    ASSERT_TRUE(beta.ok());
    beta_cubin = beta->files[0].digest;
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((root_ + "/index.sqlite").c_str(), &db), SQLITE_OK);
  const std::string sql = "UPDATE artifact_files SET digest = '" + beta_cubin +
                          "' WHERE key = 'alpha' AND kind = 'cubin'";
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  util::SubprocessResult verify = Kiln({"cache", "verify", "--cache-dir", root_, "--json"});
  EXPECT_EQ(verify.exit_code, 3) << verify.stdout_data << verify.stderr_data;
  nlohmann::json j = Json(verify);
  EXPECT_EQ(j["mismatched_artifacts"], 1);
  EXPECT_EQ(j["corrupt_blobs"], 0);
  nlohmann::json stats = Json(Kiln({"cache", "stats", "--cache-dir", root_, "--json"}));
  EXPECT_EQ(stats["corrupt_artifacts"], 1);
  EXPECT_EQ(stats["artifacts"], 2) << "only alpha's row went";
  EXPECT_EQ(Kiln({"cache", "verify", "--cache-dir", root_}).exit_code, 0);
}

TEST_F(KilnCliTest, LostIndexIsExitCode4AndRebuildRestoresIt) {
  ASSERT_EQ(unlink((root_ + "/index.sqlite").c_str()), 0);
  util::SubprocessResult broken = Kiln({"cache", "stats", "--cache-dir", root_});
  EXPECT_EQ(broken.exit_code, 4);
  EXPECT_THAT(broken.stderr_data, HasSubstr("kiln cache rebuild"));
  util::SubprocessResult rebuild = Kiln({"cache", "rebuild", "--cache-dir", root_, "--json"});
  ASSERT_EQ(rebuild.exit_code, 0) << rebuild.stderr_data;
  EXPECT_EQ(Json(rebuild)["artifacts"], 3);
  EXPECT_EQ(Json(rebuild)["best_configs"], 1);
  nlohmann::json stats = Json(Kiln({"cache", "stats", "--cache-dir", root_, "--json"}));
  EXPECT_EQ(stats["artifacts"], 3);
  EXPECT_EQ(stats["pinned_artifacts"], 1);
}

TEST_F(KilnCliTest, CacheDirTakesTildeForHome) {
  // `--cache-dir=~/cache`: the shell leaves a ~ after '=' alone; kiln expands
  // it (so does KILN_CACHE_DIR="~/cache", quoted).
  for (const auto& [args, env] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"cache", "stats", "--cache-dir=~/cache", "--json"}, ""},
           {{"cache", "stats", "--json"}, "~/cache"}}) {
    SCOPED_TRACE(::testing::PrintToString(args));
    std::vector<std::pair<std::string, std::string>> vars = {{"HOME", dir_->path()}};
    if (!env.empty()) vars.emplace_back("KILN_CACHE_DIR", env);
    util::SubprocessResult r = Kiln(args, vars);
    ASSERT_EQ(r.exit_code, 0) << r.stderr_data;
    EXPECT_EQ(Json(r)["cache_dir"], root_);
    EXPECT_EQ(Json(r)["artifacts"], 3);
  }
}

TEST_F(KilnCliTest, UsageErrorsAreExitCode2AndAMissingCacheIs1) {
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string stderr_has;
  };
  const std::vector<Case> cases = {
      {{}, 2, "usage: kiln"},
      {{"bogus"}, 2, "unknown command 'bogus'"},
      {{"cache"}, 2, "missing subcommand"},
      {{"cache", "frobnicate"}, 2, "unknown subcommand"},
      {{"cache", "stats", "--colour"}, 2, "unknown flag '--colour'"},
      {{"cache", "stats", "--cache-dri", "x"}, 2, "did you mean '--cache-dir'?"},
      {{"cache", "gc", "--max-size", "lots"}, 2, "not a size"},
      {{"cache", "stats", "--max-size", "1G"}, 2, "--max-size is for gc"},
      {{"cache", "ls", "--limit"}, 2, "--limit needs a number"},
      {{"cache", "stats", "--cache-dir", "/nonexistent/kiln-cache"}, 1, "no cache directory"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.args));
    util::SubprocessResult r = Kiln(c.args);
    EXPECT_EQ(r.exit_code, c.exit_code) << r.stderr_data;
    EXPECT_THAT(r.stderr_data, HasSubstr(c.stderr_has));
  }
  util::SubprocessResult help = Kiln({"cache", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.stdout_data, HasSubstr("Exit codes"));
}

} // namespace
} // namespace kiln::cache
