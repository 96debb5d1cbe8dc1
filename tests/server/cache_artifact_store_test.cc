// CacheArtifactStore (server/cache_artifact_store.h) over a real cache
// directory: what it returns is the requested key's. An index row that
// points at another artifact's metadata or binary (every byte sound, so
// the cache's SHA-256 alone cannot object) is a miss, evicted and counted,
// and the other artifact is untouched.
#include <memory>
#include <string>

#include <sqlite3.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kiln/v1/service.pb.h"
#include "server/artifact_metadata.h"
#include "server/cache_artifact_store.h"
#include "util/sha256.h"
#include "util/temp_dir.h"

namespace kiln::server {
namespace {

using ::testing::HasSubstr;

class CacheArtifactStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<util::TempDir> dir = util::TempDir::Create("kiln-store-test");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = std::make_unique<util::TempDir>(*std::move(dir));
    cache::CacheOptions o;
    o.background = false;
    o.sync = false;
    o.memo_ttl = std::chrono::milliseconds(0); // the tests edit the index behind the cache
    o.on_warning = [this](const std::string& w) { warnings_.push_back(w); };
    absl::StatusOr<std::unique_ptr<cache::Cache>> c = cache::Cache::Open(dir_->path(), o);
    ASSERT_TRUE(c.ok()) << c.status();
    cache_ = *std::move(c);
    store_ = std::make_unique<CacheArtifactStore>(cache_.get());
  }

  // An artifact as kilnd stores it: a shared object and its metadata.
  void PutArtifact(const std::string& key) {
    const std::string so = "shared object of " + key;
    kiln::v1::ArtifactMetadata m;
    m.set_key(key);
    m.set_target("cpu");
    kiln::v1::ArtifactFile* f = m.add_files();
    f->set_kind(ArtifactKindOf("so"));
    f->set_blob_digest(util::Sha256Hex(so));
    f->set_size_bytes(static_cast<int64_t>(so.size()));
    cache::Artifact a;
    a.target = "cpu";
    a.files.push_back({"so", so, "", 0});
    a.files.push_back({kMetadataKind, m.SerializeAsString(), "", 0});
    ASSERT_TRUE(store_->Put(key, a).ok());
  }

  std::string Digest(const std::string& key, const std::string& kind) {
    absl::StatusOr<cache::Artifact> a = cache_->GetArtifact(key, {kind});
    EXPECT_TRUE(a.ok()) << a.status();
    return a.ok() && !a->files.empty() ? a->files[0].digest : "";
  }

  // Points `key`'s row for `kind` at `digest`, as a damaged or hand-edited
  // index might.
  void PointRowAt(const std::string& key, const std::string& kind, const std::string& digest) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir_->path() + "/index.sqlite").c_str(), &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    const std::string sql = "UPDATE artifact_files SET digest = '" + digest + "' WHERE key = '" +
                            key + "' AND kind = '" + kind + "'";
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    EXPECT_EQ(sqlite3_changes(db), 1);
    sqlite3_close(db);
  }

  std::unique_ptr<util::TempDir> dir_;
  std::unique_ptr<cache::Cache> cache_;
  std::unique_ptr<CacheArtifactStore> store_;
  std::vector<std::string> warnings_;
};

TEST_F(CacheArtifactStoreTest, ReturnsTheKindsAskedForAfterCheckingTheMetadata) {
  PutArtifact("ka");
  absl::StatusOr<cache::Artifact> so = store_->Get("ka", {"so"});
  ASSERT_TRUE(so.ok()) << so.status();
  ASSERT_EQ(so->files.size(), 1u) << "the metadata read for the check is not returned";
  EXPECT_EQ(so->files[0].bytes, "shared object of ka");
  absl::StatusOr<cache::Artifact> all = store_->Get("ka", {});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->files.size(), 2u);
  EXPECT_EQ(store_->Get("absent", {}).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(CacheArtifactStoreTest, AnotherArtifactsMetadataOrBinaryUnderAKeyIsAMissAndEvicted) {
  struct Case {
    const char* name;
    const char* kind;
    std::vector<std::string> kinds; // what the reader asks for
    const char* message;
  };
  const Case cases[] = {
      {"metadata key swapped, a Compile hit's read",
       kMetadataKind,
       {kMetadataKind},
       "names the key"},
      {"metadata key swapped, a fetch", kMetadataKind, {}, "names the key"},
      {"binary swapped, a fetch", "so", {}, "its metadata lists"},
      {"binary swapped, a read of the binary only", "so", {"so"}, "its metadata lists"},
  };
  int64_t expected_count = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    PutArtifact("victim");
    PutArtifact("other");
    PointRowAt("victim", c.kind, Digest("other", c.kind));
    const uint64_t generation = store_->Generation();
    absl::StatusOr<cache::Artifact> got = store_->Get("victim", c.kinds);
    EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound) << "another artifact was served";
    EXPECT_THAT(got.status().message(), HasSubstr(c.message));
    EXPECT_THAT(got.status().message(), HasSubstr("evicted"));
    EXPECT_FALSE(*cache_->ContainsArtifact("victim"));
    EXPECT_NE(store_->Generation(), generation);
    EXPECT_EQ(cache_->Stats()->corrupt_artifacts, ++expected_count);
    ASSERT_FALSE(warnings_.empty());
    EXPECT_THAT(warnings_.back(), HasSubstr("victim"));
    // Nothing valid lost: the other artifact reads back whole.
    absl::StatusOr<cache::Artifact> other = store_->Get("other", {});
    ASSERT_TRUE(other.ok()) << other.status();
    EXPECT_EQ(other->files.size(), 2u);
    EXPECT_TRUE(cache_->Verify()->ok());
  }
}

} // namespace
} // namespace kiln::server
