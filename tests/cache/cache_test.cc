#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache/cache.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cache/cache_test_util.h"
#include "util/sha256.h"
#include "util/temp_dir.h"

namespace kiln::cache {
namespace {

using ::testing::HasSubstr;
using testing::MakeArtifact;
using testing::MatchesKey;

class CacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<util::TempDir> dir = util::TempDir::Create("kiln-cache-test");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(*std::move(dir));
    root_ = dir_->path() + "/cache";
  }
  CacheOptions Options() {
    CacheOptions o;
    o.background = false;
    o.sync = false;
    o.on_warning = [this](const std::string& w) { warnings_.push_back(w); };
    return o;
  }
  std::unique_ptr<Cache> OpenCache() { return OpenCache(Options()); }
  std::unique_ptr<Cache> OpenCache(CacheOptions o) {
    absl::StatusOr<std::unique_ptr<Cache>> c = Cache::Open(root_, std::move(o));
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *std::move(c) : nullptr;
  }
  std::string BlobPath(const std::string& digest) const {
    return root_ + "/blobs/" + digest.substr(0, 2) + "/" + digest;
  }
  std::string DigestOf(Cache& c, const std::string& key, const std::string& kind) {
    absl::StatusOr<Artifact> a = c.GetArtifact(key);
    EXPECT_TRUE(a.ok());
    for (const ArtifactFile& f : a->files) {
      if (f.kind == kind) return f.digest;
    }
    return "";
  }

  std::optional<util::TempDir> dir_;
  std::string root_;
  std::vector<std::string> warnings_;
};

TEST_F(CacheTest, StoresAndReturnsArtifactsOfEveryShape) {
  struct Case {
    std::string key;
    size_t cubin;
    size_t ptx;
  };
  const Case cases[] = {
      {"small", 10, 0}, {"k64", 64 << 10, 4096}, {"k1m", 1 << 20, 200000}, {"empty-cubin", 0, 10}};
  std::unique_ptr<Cache> c = OpenCache();
  for (const Case& t : cases) {
    SCOPED_TRACE(t.key);
    ASSERT_TRUE(c->PutArtifact(t.key, MakeArtifact(t.key, t.cubin, t.ptx)).ok());
    absl::StatusOr<Artifact> got = c->GetArtifact(t.key);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(MatchesKey(*got, t.key, t.cubin, t.ptx));
    EXPECT_EQ(got->timings.at("nvrtc"), 0.25);
    EXPECT_EQ(got->toolchain_fingerprint, "kiln-test nvrtc-13.0");
    EXPECT_GT(got->created_unix_ms, 0);
    EXPECT_TRUE(*c->ContainsArtifact(t.key));
  }
  // A second process sees the same.
  std::unique_ptr<Cache> other = OpenCache();
  for (const Case& t : cases)
    EXPECT_TRUE(MatchesKey(*other->GetArtifact(t.key), t.key, t.cubin, t.ptx));
}

TEST_F(CacheTest, GetWithKindsReadsOnlyThoseFiles) {
  std::unique_ptr<Cache> c = OpenCache();
  ASSERT_TRUE(c->PutArtifact("two", MakeArtifact("two", 1 << 20, 100)).ok());
  absl::StatusOr<Artifact> ptx = c->GetArtifact("two", {"ptx"});
  ASSERT_TRUE(ptx.ok()) << ptx.status();
  ASSERT_EQ(ptx->files.size(), 1u);
  EXPECT_EQ(ptx->files[0].kind, "ptx");
  EXPECT_EQ(ptx->files[0].bytes, MakeArtifact("two", 1 << 20, 100).files[1].bytes);
  EXPECT_EQ(ptx->launch_json, MakeArtifact("two").launch_json);
  // A kind the artifact lacks gives no files (the artifact itself is a hit).
  absl::StatusOr<Artifact> none = c->GetArtifact("two", {"so"});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->files.empty());
  EXPECT_EQ(c->GetArtifact("absent", {"ptx"}).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(CacheTest, ArtifactWithoutFilesRoundTrips) {
  std::unique_ptr<Cache> c = OpenCache();
  Artifact a;
  a.target = "cpu";
  a.launch_json = "{}";
  ASSERT_TRUE(c->PutArtifact("nofiles", a).ok());
  absl::StatusOr<Artifact> got = c->GetArtifact("nofiles");
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->files.empty());
  EXPECT_EQ(got->target, "cpu");
}

TEST_F(CacheTest, MissIsNotFoundAndCounted) {
  std::unique_ptr<Cache> c = OpenCache();
  EXPECT_EQ(c->GetArtifact("absent").status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(c->PutArtifact("present", MakeArtifact("present")).ok());
  ASSERT_TRUE(c->GetArtifact("present").ok());
  absl::StatusOr<CacheStats> s = c->Stats();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->misses, 1);
  EXPECT_EQ(s->hits, 1);
  EXPECT_EQ(s->artifacts, 1);
  EXPECT_EQ(s->blobs, 3); // cubin, ptx, manifest
  EXPECT_GT(s->blob_bytes, 4096U + 32 * 3);
}

TEST_F(CacheTest, RejectsBadKeysAndArtifacts) {
  std::unique_ptr<Cache> c = OpenCache();
  for (const std::string& key : {std::string(), std::string("../etc"), std::string("a b"),
                                 std::string(300, 'k'), std::string("semi;colon")}) {
    SCOPED_TRACE(key);
    EXPECT_EQ(c->PutArtifact(key, MakeArtifact("x")).code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(c->GetArtifact(key).status().code(), absl::StatusCode::kInvalidArgument);
  }
  Artifact twice = MakeArtifact("x");
  twice.files.push_back(twice.files[0]);
  EXPECT_EQ(c->PutArtifact("twice", twice).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(CacheTest, ReplacingAnArtifactRemovesBlobsOnlyItUsed) {
  std::unique_ptr<Cache> c = OpenCache();
  ASSERT_TRUE(c->PutArtifact("a", MakeArtifact("a")).ok());
  // "b" shares a's cubin bytes.
  Artifact b = MakeArtifact("b");
  b.files[0].bytes = MakeArtifact("a").files[0].bytes;
  ASSERT_TRUE(c->PutArtifact("b", b).ok());
  const std::string a_ptx = DigestOf(*c, "a", "ptx");
  const std::string shared = DigestOf(*c, "a", "cubin");
  ASSERT_TRUE(c->PutArtifact("a", MakeArtifact("a2")).ok()); // new bytes for key a
  EXPECT_NE(access(BlobPath(a_ptx).c_str(), F_OK), 0);
  EXPECT_EQ(access(BlobPath(shared).c_str(), F_OK), 0); // still used by b
  ASSERT_TRUE(c->RemoveArtifact("b").ok());
  EXPECT_NE(access(BlobPath(shared).c_str(), F_OK), 0);
  EXPECT_EQ(c->RemoveArtifact("b").code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(MatchesKey(*c->GetArtifact("a"), "a2"));
}

TEST_F(CacheTest, TextFilesAreCompressedAndBinariesAreNot) {
  std::unique_ptr<Cache> c = OpenCache();
  ASSERT_TRUE(c->PutArtifact("z", MakeArtifact("z", 4096, 100000)).ok());
  struct stat ptx {
  }, cubin{};
  ASSERT_EQ(stat(BlobPath(DigestOf(*c, "z", "ptx")).c_str(), &ptx), 0);
  ASSERT_EQ(stat(BlobPath(DigestOf(*c, "z", "cubin")).c_str(), &cubin), 0);
  EXPECT_LT(ptx.st_size, 100000 / 4);
  EXPECT_EQ(cubin.st_size, 4096 + 32);
}

TEST_F(CacheTest, FlippedByteIsAMissEvictedAndCounted) {
  std::unique_ptr<Cache> c = OpenCache();
  ASSERT_TRUE(c->PutArtifact("victim", MakeArtifact("victim")).ok());
  ASSERT_TRUE(c->PutArtifact("bystander", MakeArtifact("bystander")).ok());
  const std::string cubin = DigestOf(*c, "victim", "cubin");
  ASSERT_TRUE(testing::FlipByte(BlobPath(cubin), 1000));
  absl::StatusOr<Artifact> got = c->GetArtifact("victim");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(got.status().message(), HasSubstr("checksum"));
  EXPECT_FALSE(*c->ContainsArtifact("victim"));
  EXPECT_NE(access(BlobPath(cubin).c_str(), F_OK), 0);
  ASSERT_FALSE(warnings_.empty());
  EXPECT_THAT(warnings_.back(), HasSubstr(cubin));
  absl::StatusOr<CacheStats> s = c->Stats();
  EXPECT_EQ(s->corrupt_blobs, 1);
  EXPECT_EQ(s->artifacts, 1);
  EXPECT_TRUE(MatchesKey(*c->GetArtifact("bystander"), "bystander"));
  // It can be stored again.
  ASSERT_TRUE(c->PutArtifact("victim", MakeArtifact("victim")).ok());
  EXPECT_TRUE(MatchesKey(*c->GetArtifact("victim"), "victim"));
}

TEST_F(CacheTest, DeletedBlobFileIsAMiss) {
  std::unique_ptr<Cache> c = OpenCache();
  ASSERT_TRUE(c->PutArtifact("k", MakeArtifact("k")).ok());
  ASSERT_EQ(unlink(BlobPath(DigestOf(*c, "k", "ptx")).c_str()), 0);
  EXPECT_EQ(c->GetArtifact("k").status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(*c->ContainsArtifact("k"));
}

TEST_F(CacheTest, FullHashReadsCatchWhatChecksumsCannot) {
  CacheOptions o = Options();
  o.read_verify = ReadVerify::kFullHash;
  std::unique_ptr<Cache> c = OpenCache(o);
  ASSERT_TRUE(c->PutArtifact("a", MakeArtifact("a")).ok());
  ASSERT_TRUE(c->PutArtifact("b", MakeArtifact("b")).ok());
  // A valid blob file under another blob's name.
  ASSERT_EQ(rename(BlobPath(DigestOf(*c, "b", "cubin")).c_str(),
                   BlobPath(DigestOf(*c, "a", "cubin")).c_str()),
            0);
  EXPECT_EQ(c->GetArtifact("a").status().code(), absl::StatusCode::kNotFound);
}

// Each way a blob file can stop being the blob its name says, met by a read
// in the default mode: the victim is a miss (evicted, counted, warned), the
// other artifact is intact, and the victim can be stored again.
TEST_F(CacheTest, EveryReadProvesTheBytesAreTheBlobOfItsName) {
  struct Case {
    const char* name;
    const char* kind; // the victim's file that is damaged
    // Damages `victim` (a blob file); `other` is a valid blob file of the
    // same kind and size under another name.
    std::function<bool(const std::string& victim, const std::string& other)> damage;
    const char* message;
  };
  auto copy_over = [](const std::string& victim, const std::string& other) {
    return std::filesystem::copy_file(other, victim,
                                      std::filesystem::copy_options::overwrite_existing);
  };
  auto truncate_half = [](const std::string& victim, const std::string&) {
    return truncate(victim.c_str(), static_cast<off_t>(std::filesystem::file_size(victim) / 2)) ==
           0;
  };
  auto flip = [](const std::string& victim, const std::string&) {
    return testing::FlipByte(victim, 100);
  };
  const Case cases[] = {
      {"same-size binary copied over another", "cubin", copy_over, "SHA-256"},
      {"same-size compressed text copied over another", "ptx", copy_over, "SHA-256"},
      {"truncated binary", "cubin", truncate_half, "truncated"},
      {"truncated compressed text", "ptx", truncate_half, "truncated"},
      {"flipped bit in a binary", "cubin", flip, "checksum"},
      {"flipped bit in compressed text", "ptx", flip, "checksum"},
  };
  const std::string base = root_;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    root_ = base + "/" + std::to_string(&c - cases);
    warnings_.clear();
    std::unique_ptr<Cache> cache = OpenCache();
    ASSERT_TRUE(cache->PutArtifact("victim", MakeArtifact("victim")).ok());
    ASSERT_TRUE(cache->PutArtifact("other", MakeArtifact("other")).ok());
    const std::string victim = BlobPath(DigestOf(*cache, "victim", c.kind));
    const std::string other = BlobPath(DigestOf(*cache, "other", c.kind));
    if (std::string(c.kind) == "cubin") { // raw: the same size on disk
      ASSERT_EQ(std::filesystem::file_size(victim), std::filesystem::file_size(other));
    }
    ASSERT_TRUE(c.damage(victim, other));
    // Metadata-like reads of one kind and whole reads alike.
    absl::StatusOr<Artifact> got = cache->GetArtifact("victim", {c.kind});
    EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound) << "damage was served";
    EXPECT_THAT(got.status().message(), HasSubstr(c.message));
    EXPECT_THAT(got.status().message(), HasSubstr("damaged"));
    EXPECT_FALSE(*cache->ContainsArtifact("victim"));
    EXPECT_EQ(cache->GetArtifact("victim").status().code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(cache->Stats()->corrupt_blobs, 1);
    ASSERT_FALSE(warnings_.empty());
    EXPECT_TRUE(MatchesKey(*cache->GetArtifact("other"), "other"));
    ASSERT_TRUE(cache->PutArtifact("victim", MakeArtifact("victim")).ok());
    EXPECT_TRUE(MatchesKey(*cache->GetArtifact("victim"), "victim"));
    EXPECT_TRUE(cache->Verify()->ok());
  }
}

TEST_F(CacheTest, ChecksumOnlyReadsServeACopiedBlobFileWhichIsWhyTheyAreNotTheDefault) {
  CacheOptions o = Options();
  EXPECT_EQ(o.read_verify, ReadVerify::kFullHash);
  o.read_verify = ReadVerify::kChecksum;
  std::unique_ptr<Cache> c = OpenCache(o);
  ASSERT_TRUE(c->PutArtifact("a", MakeArtifact("a")).ok());
  ASSERT_TRUE(c->PutArtifact("b", MakeArtifact("b")).ok());
  ASSERT_TRUE(std::filesystem::copy_file(BlobPath(DigestOf(*c, "b", "cubin")),
                                         BlobPath(DigestOf(*c, "a", "cubin")),
                                         std::filesystem::copy_options::overwrite_existing));
  absl::StatusOr<Artifact> a = c->GetArtifact("a");
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(MatchesKey(*a, "a")) << "XXH3 alone cannot tell whose bytes these are";
}

TEST_F(CacheTest, PutOverABlobFileCopiedUnderItsNameWritesTheRightBytes) {
  // A put whose bytes' file already exists keeps it only when it holds
  // those bytes: a valid file of other bytes under that name is replaced.
  std::unique_ptr<Cache> c = OpenCache();
  ASSERT_TRUE(c->PutArtifact("a", MakeArtifact("a")).ok());
  ASSERT_TRUE(c->PutArtifact("b", MakeArtifact("b")).ok());
  ASSERT_TRUE(std::filesystem::copy_file(BlobPath(DigestOf(*c, "b", "cubin")),
                                         BlobPath(DigestOf(*c, "a", "cubin")),
                                         std::filesystem::copy_options::overwrite_existing));
  ASSERT_TRUE(c->PutArtifact("a-again", MakeArtifact("a")).ok());
  absl::StatusOr<Artifact> again = c->GetArtifact("a-again");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(MatchesKey(*again, "a"));
  EXPECT_TRUE(MatchesKey(*c->GetArtifact("a"), "a")) << "the put repaired the shared blob";
}

// Sets `key`'s file of `kind` in the index to `digest` (an index row that
// points at another artifact's blob: what only the manifest can contradict).
void PointRowAt(const std::string& root, const std::string& key, const std::string& kind,
                const std::string& digest) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((root + "/index.sqlite").c_str(), &db), SQLITE_OK);
  sqlite3_busy_timeout(db, 5000);
  const std::string sql = "UPDATE artifact_files SET digest = '" + digest + "' WHERE key = '" +
                          key + "' AND kind = '" + kind + "'";
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK) << error;
  EXPECT_EQ(sqlite3_changes(db), 1);
  sqlite3_free(error);
  sqlite3_close(db);
}

TEST_F(CacheTest, VerifyEvictsARowThatNamesAnotherArtifactsBlobAndKeepsThatArtifact) {
  CacheOptions o = Options();
  o.memo_ttl = std::chrono::milliseconds(0); // the test edits the index behind the cache
  std::unique_ptr<Cache> c = OpenCache(o);
  ASSERT_TRUE(c->PutArtifact("a", MakeArtifact("a")).ok());
  ASSERT_TRUE(c->PutArtifact("b", MakeArtifact("b")).ok());
  const std::string b_cubin = DigestOf(*c, "b", "cubin");
  PointRowAt(root_, "a", "cubin", b_cubin);
  // Every byte is sound, so a read alone cannot object (the daemon's store
  // compares the artifact's metadata file; see CacheArtifactStore).
  ASSERT_TRUE(c->GetArtifact("a").ok());
  const uint64_t generation = c->generation();
  absl::StatusOr<VerifyReport> v = c->Verify();
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_FALSE(v->ok());
  EXPECT_EQ(v->mismatched_artifacts, 1);
  EXPECT_EQ(v->corrupt_blobs, 0);
  EXPECT_FALSE(*c->ContainsArtifact("a"));
  EXPECT_NE(c->generation(), generation);
  EXPECT_TRUE(MatchesKey(*c->GetArtifact("b"), "b"));
  EXPECT_EQ(c->Stats()->corrupt_artifacts, 1);
  ASSERT_FALSE(warnings_.empty());
  EXPECT_THAT(warnings_.back(), HasSubstr("not this artifact's"));
  EXPECT_TRUE(c->Verify()->ok());
}

TEST_F(CacheTest, EvictMismatchedLeavesAReplacedRowAlone) {
  std::unique_ptr<Cache> c = OpenCache();
  ASSERT_TRUE(c->PutArtifact("a", MakeArtifact("a")).ok());
  ASSERT_TRUE(c->PutArtifact("b", MakeArtifact("b")).ok());
  const std::string b_cubin = DigestOf(*c, "b", "cubin");
  // "a" does not name b's cubin (it was replaced since the reader looked).
  ASSERT_TRUE(c->EvictMismatched("a", b_cubin, "test").ok());
  EXPECT_TRUE(MatchesKey(*c->GetArtifact("a"), "a"));
  ASSERT_TRUE(c->EvictMismatched("a", DigestOf(*c, "a", "cubin"), "test").ok());
  EXPECT_FALSE(*c->ContainsArtifact("a"));
  EXPECT_TRUE(MatchesKey(*c->GetArtifact("b"), "b"));
  EXPECT_EQ(c->Stats()->corrupt_artifacts, 1);
}

TEST_F(CacheTest, GenerationChangesOnEveryRemovalOrReplacement) {
  std::unique_ptr<Cache> c = OpenCache();
  ASSERT_TRUE(c->PutArtifact("a", MakeArtifact("a")).ok());
  ASSERT_TRUE(c->PutArtifact("b", MakeArtifact("b")).ok());
  uint64_t g = c->generation();
  ASSERT_TRUE(c->GetArtifact("a").ok());
  EXPECT_EQ(c->generation(), g) << "a read changes nothing";
  ASSERT_TRUE(c->PutArtifact("a", MakeArtifact("a2")).ok());
  EXPECT_NE(c->generation(), g);
  g = c->generation();
  ASSERT_TRUE(c->RemoveArtifact("a").ok());
  EXPECT_NE(c->generation(), g);
  g = c->generation();
  ASSERT_TRUE(testing::FlipByte(BlobPath(DigestOf(*c, "b", "cubin")), 10));
  g = c->generation();
  EXPECT_EQ(c->GetArtifact("b").status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(c->generation(), g) << "damage found";
  ASSERT_TRUE(c->PutArtifact("c", MakeArtifact("c")).ok());
  g = c->generation();
  ASSERT_EQ(*c->EvictTo(0), 1);
  EXPECT_NE(c->generation(), g) << "eviction";
}

void BreakIndex(const std::string& root, bool remove) {
  const std::string index = root + "/index.sqlite";
  unlink((index + "-wal").c_str());
  unlink((index + "-shm").c_str());
  if (remove) {
    ASSERT_EQ(unlink(index.c_str()), 0);
  } else {
    std::ofstream(index, std::ios::trunc) << std::string(4096, '\x5a');
  }
}

TEST_F(CacheTest, LostOrCorruptIndexIsAClearErrorAndRebuildRestoresIt) {
  for (bool remove : {true, false}) {
    SCOPED_TRACE(remove ? "deleted index" : "corrupt index");
    root_ = dir_->path() + (remove ? "/deleted" : "/corrupt");
    {
      std::unique_ptr<Cache> c = OpenCache();
      for (int i = 0; i < 5; ++i) {
        const std::string k = "key" + std::to_string(i);
        ASSERT_TRUE(c->PutArtifact(k, MakeArtifact(k)).ok());
      }
      ASSERT_TRUE(c->PutArtifact("key0", MakeArtifact("key0-new")).ok()); // superseded manifest
      BestConfig best;
      best.config_json = R"({"block_M": 64})";
      best.latency.median_us = 12;
      best.artifact_key = "key1";
      ASSERT_TRUE(c->PutBest({"prog", "M=1", "cuda:sm_90", "H200"}, best).ok());
      best.config_json = R"({"block_M": 128})";
      best.latency.median_us = 10;
      best.updated_unix_ms = 0;
      ASSERT_TRUE(c->PutBest({"prog", "M=1", "cuda:sm_90", "H200"}, best).ok());
    }
    BreakIndex(root_, remove);
    absl::StatusOr<std::unique_ptr<Cache>> broken = Cache::Open(root_, Options());
    ASSERT_FALSE(broken.ok());
    EXPECT_EQ(broken.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(broken.status().message(), HasSubstr("kiln cache rebuild"));

    absl::StatusOr<RebuildReport> r = Cache::Rebuild(root_, Options());
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->artifacts, 5) << r->blobs << " blobs, " << r->incomplete_manifests
                               << " incomplete, " << r->corrupt_blobs << " corrupt";
    EXPECT_EQ(r->best_configs, 1);
    EXPECT_EQ(r->moved_aside.empty(), remove);
    std::unique_ptr<Cache> c = OpenCache();
    EXPECT_TRUE(MatchesKey(*c->GetArtifact("key0"), "key0-new"));
    for (int i = 1; i < 5; ++i) {
      const std::string k = "key" + std::to_string(i);
      EXPECT_TRUE(MatchesKey(*c->GetArtifact(k), k)) << k;
    }
    absl::StatusOr<BestConfig> best = c->GetBest({"prog", "M=1", "cuda:sm_90", "H200"});
    ASSERT_TRUE(best.ok());
    EXPECT_EQ(best->config_json, R"({"block_M": 128})");
    EXPECT_EQ(best->artifact_key, "key1");
    absl::StatusOr<VerifyReport> v = c->Verify();
    ASSERT_TRUE(v.ok());
    EXPECT_TRUE(v->ok());
    EXPECT_EQ(v->orphan_files, 0); // superseded records were swept
  }
}

TEST_F(CacheTest, RebuildDropsCorruptBlobsAndIncompleteArtifacts) {
  std::string damaged;
  {
    std::unique_ptr<Cache> c = OpenCache();
    ASSERT_TRUE(c->PutArtifact("good", MakeArtifact("good")).ok());
    ASSERT_TRUE(c->PutArtifact("bad", MakeArtifact("bad")).ok());
    damaged = DigestOf(*c, "bad", "cubin");
  }
  ASSERT_TRUE(testing::FlipByte(BlobPath(damaged), 40));
  BreakIndex(root_, true);
  absl::StatusOr<RebuildReport> r = Cache::Rebuild(root_, Options());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->corrupt_blobs, 1);
  EXPECT_EQ(r->incomplete_manifests, 1);
  EXPECT_EQ(r->artifacts, 1);
  std::unique_ptr<Cache> c = OpenCache();
  EXPECT_TRUE(MatchesKey(*c->GetArtifact("good"), "good"));
  EXPECT_EQ(c->GetArtifact("bad").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(CacheTest, VerifyFindsRemovesAndReportsDamage) {
  std::unique_ptr<Cache> c = OpenCache();
  ASSERT_TRUE(c->PutArtifact("a", MakeArtifact("a")).ok());
  ASSERT_TRUE(c->PutArtifact("b", MakeArtifact("b")).ok());
  absl::StatusOr<VerifyReport> clean = c->Verify();
  ASSERT_TRUE(clean.ok());
  EXPECT_TRUE(clean->ok());
  EXPECT_EQ(clean->checked_blobs, 6);
  ASSERT_TRUE(testing::FlipByte(BlobPath(DigestOf(*c, "a", "ptx")), -1));
  ASSERT_EQ(unlink(BlobPath(DigestOf(*c, "b", "cubin")).c_str()), 0);
  absl::StatusOr<VerifyReport> v = c->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->ok());
  EXPECT_EQ(v->corrupt_blobs, 1);
  EXPECT_EQ(v->missing_blobs, 1);
  EXPECT_EQ(v->evicted_artifacts, 2);
  EXPECT_EQ(c->Stats()->artifacts, 0);
  EXPECT_TRUE(c->Verify()->ok());
}

TEST_F(CacheTest, DamagedBestConfigRecordIsRewrittenFromItsRow) {
  std::unique_ptr<Cache> c = OpenCache();
  const BestConfigKey key{"prog", "N=4", "cpu", "EPYC"};
  BestConfig b;
  b.config_json = "{}";
  ASSERT_TRUE(c->PutBest(key, b).ok());
  std::string record;
  ASSERT_TRUE(c->Verify().ok());
  // Find the record blob: the only blob.
  std::vector<std::string> files;
  ASSERT_TRUE(BlobStore(root_ + "/blobs", {})
                  .ForEach([&](const std::string& d) { files.push_back(d); })
                  .ok());
  ASSERT_EQ(files.size(), 1U);
  ASSERT_TRUE(testing::FlipByte(BlobPath(files[0]), 50));
  absl::StatusOr<VerifyReport> v = c->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->corrupt_blobs, 1);
  EXPECT_TRUE(c->GetBest(key).ok());
  EXPECT_TRUE(c->Verify()->ok()); // the record is whole again
}

TEST_F(CacheTest, BestConfigsPerDeviceModelAndIfFaster) {
  std::unique_ptr<Cache> c = OpenCache();
  const BestConfigKey h200{"prog", "M=4096", "cuda:sm_90", "NVIDIA H200"};
  const BestConfigKey a100{"prog", "M=4096", "cuda:sm_80", "NVIDIA A100"};
  BestConfig slow;
  slow.config_json = R"({"block_M": 64})";
  slow.latency = {9, 10, 10.5, 11, 0.4, 50};
  slow.tuning_record_id = "t1";
  BestConfig fast = slow;
  fast.config_json = R"({"block_M": 128})";
  fast.latency.median_us = 7;
  ASSERT_TRUE(*c->PutBest(h200, slow));
  ASSERT_TRUE(*c->PutBest(a100, fast));
  EXPECT_FALSE(*c->PutBest(h200, slow, Cache::BestUpdate::kIfFaster)); // not faster
  EXPECT_EQ(c->GetBest(h200)->config_json, slow.config_json);
  EXPECT_TRUE(*c->PutBest(h200, fast, Cache::BestUpdate::kIfFaster));
  EXPECT_EQ(c->GetBest(h200)->config_json, fast.config_json);
  EXPECT_EQ(c->GetBest(h200)->latency.samples, 50);
  EXPECT_EQ(c->GetBest(a100)->config_json, fast.config_json);
  EXPECT_EQ(c->ListBest("prog")->size(), 2U);
  EXPECT_TRUE(c->ListBest("other")->empty());
  EXPECT_EQ(c->GetBest({"prog", "M=1", "cuda:sm_90", "NVIDIA H200"}).status().code(),
            absl::StatusCode::kNotFound);
  ASSERT_TRUE(c->RemoveBest(a100).ok());
  EXPECT_EQ(c->GetBest(a100).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(c->RemoveBest(a100).code(), absl::StatusCode::kNotFound);
  // Superseded and removed records leave no blobs behind.
  EXPECT_EQ(c->Stats()->blobs, 1);
  EXPECT_FALSE(c->PutBest({"", "", "", ""}, slow).ok());
}

TEST_F(CacheTest, MeasurementHistoryQueries) {
  std::unique_ptr<Cache> c = OpenCache();
  struct Row {
    std::string key, label, device, failure;
    int64_t time;
  };
  const Row rows[] = {{"k1", "sha1", "H200", "", 100},
                      {"k1", "sha2", "H200", "", 200},
                      {"k1", "sha2", "A100", "", 210},
                      {"k1", "sha3", "H200", "timeout", 300},
                      {"k2", "sha2", "H200", "", 220}};
  for (const Row& r : rows) {
    Measurement m;
    m.key = r.key;
    m.label = r.label;
    m.device_model = r.device;
    m.device_id = "cuda:0";
    m.driver = "550.54";
    m.sm_clock_mhz = 1980;
    m.failure = r.failure;
    m.latency = {1, 2, 3, 4, 0.1, 100};
    m.time_unix_ms = r.time;
    m.config_json = R"({"block_M": 128})";
    absl::StatusOr<int64_t> id = c->RecordMeasurement(m);
    ASSERT_TRUE(id.ok());
    EXPECT_GT(*id, 0);
  }
  auto Q = [](const std::function<void(MeasurementQuery&)>& f) {
    MeasurementQuery q;
    f(q);
    return q;
  };
  struct Query {
    std::string name;
    MeasurementQuery q;
    std::vector<int64_t> times;
  };
  std::vector<Query> queries = {
      {"by key", Q([](MeasurementQuery& q) { q.key = "k1"; }), {300, 210, 200, 100}},
      {"by label", Q([](MeasurementQuery& q) { q.label = "sha2"; }), {220, 210, 200}},
      {"key and label",
       Q([](MeasurementQuery& q) {
         q.key = "k1";
         q.label = "sha2";
       }),
       {210, 200}},
      {"key and device",
       Q([](MeasurementQuery& q) {
         q.key = "k1";
         q.device_model = "H200";
       }),
       {300, 200, 100}},
      {"time window",
       Q([](MeasurementQuery& q) {
         q.since_unix_ms = 200;
         q.until_unix_ms = 300;
       }),
       {220, 210, 200}},
      {"failures", Q([](MeasurementQuery& q) { q.failures_only = true; }), {300}},
      {"successes of k1",
       Q([](MeasurementQuery& q) {
         q.key = "k1";
         q.successes_only = true;
       }),
       {210, 200, 100}},
      {"limit",
       Q([](MeasurementQuery& q) {
         q.key = "k1";
         q.limit = 2;
       }),
       {300, 210}},
  };
  for (const Query& q : queries) {
    SCOPED_TRACE(q.name);
    absl::StatusOr<std::vector<Measurement>> got = c->QueryMeasurements(q.q);
    ASSERT_TRUE(got.ok()) << got.status();
    std::vector<int64_t> times;
    for (const Measurement& m : *got) times.push_back(m.time_unix_ms);
    EXPECT_EQ(times, q.times);
  }
  absl::StatusOr<std::vector<Measurement>> one =
      c->QueryMeasurements(Q([](MeasurementQuery& q) { q.label = "sha3"; }));
  ASSERT_EQ(one->size(), 1U);
  EXPECT_EQ((*one)[0].failure, "timeout");
  EXPECT_EQ((*one)[0].sm_clock_mhz, 1980);
  EXPECT_EQ((*one)[0].latency.p90_us, 4);
  EXPECT_EQ(*c->MeasurementLabels("k1"), (std::vector<std::string>{"sha3", "sha2", "sha1"}));
  EXPECT_EQ(c->Stats()->measurements, 5);
}

TEST_F(CacheTest, GcRemovesOldOrphansAndTempsButNotYoungOnes) {
  std::unique_ptr<Cache> c = OpenCache();
  ASSERT_TRUE(c->PutArtifact("kept", MakeArtifact("kept")).ok());
  // An orphan: a complete blob that no row names (a put that died before
  // committing), and a crashed writer's temp file.
  BlobStore store(root_ + "/blobs", {});
  ASSERT_TRUE(store.Put("orphan bytes", Compression::kNone).ok());
  { std::ofstream(root_ + "/blobs/tmp/x.tmp") << "partial"; }
  absl::StatusOr<GcReport> young = c->Gc();
  ASSERT_TRUE(young.ok());
  EXPECT_EQ(young->removed_orphans, 0);
  EXPECT_EQ(young->removed_temps, 0);
  absl::StatusOr<GcReport> all = c->Gc(GcOptions{std::nullopt, true});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->removed_orphans, 1);
  EXPECT_EQ(all->removed_temps, 1);
  EXPECT_TRUE(MatchesKey(*c->GetArtifact("kept"), "kept"));
  EXPECT_EQ(c->Verify()->orphan_files, 0);
}

TEST_F(CacheTest, HitMemoSeesOwnChangesAndNeverServesVanishedBlobs) {
  CacheOptions o = Options();
  o.memo_ttl = std::chrono::hours(1);
  std::unique_ptr<Cache> c = OpenCache(o);
  std::unique_ptr<Cache> other = OpenCache();
  ASSERT_TRUE(c->PutArtifact("k", MakeArtifact("v1")).ok());
  ASSERT_TRUE(MatchesKey(*c->GetArtifact("k"), "v1")); // now memoized
  ASSERT_TRUE(c->PutArtifact("k", MakeArtifact("v2")).ok());
  EXPECT_TRUE(MatchesKey(*c->GetArtifact("k"), "v2")) << "own replacement seen at once";
  // Another process replaces it and its old blobs go: the memo's blobs are
  // gone, so the read goes back to the index and returns the new version.
  ASSERT_TRUE(other->PutArtifact("k", MakeArtifact("v3")).ok());
  EXPECT_TRUE(MatchesKey(*c->GetArtifact("k"), "v3"));
  // Another process removes it: a miss, not an error.
  ASSERT_TRUE(other->RemoveArtifact("k").ok());
  EXPECT_EQ(c->GetArtifact("k").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(c->Stats()->corrupt_blobs, 0) << "a vanished blob behind a memo is not corruption";
}

TEST_F(CacheTest, OpenWithoutCreateOnAMissingCacheIsNotFound) {
  CacheOptions o = Options();
  o.create = false;
  absl::StatusOr<std::unique_ptr<Cache>> c = Cache::Open(root_, o);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound);
}

} // namespace
} // namespace kiln::cache
