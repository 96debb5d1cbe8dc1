// The client's local cache (clients/cpp/client/local_cache.h): verified
// reads, corrupt files removed, atomic writes, the Compile memo's TTL.
#include <filesystem>
#include <fstream>
#include <string>

#include "clients/cpp/client/local_cache.h"
#include "gtest/gtest.h"
#include "util/file_path.h"
#include "util/sha256.h"

namespace kiln::client {
namespace {

namespace fs = std::filesystem;

class LocalCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "local_cache_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    metadata_.set_key(std::string(64, 'a'));
    metadata_.set_target("cpu");
    kiln::v1::ArtifactFile* f = metadata_.add_files();
    f->set_kind(kiln::v1::ARTIFACT_KIND_SHARED_OBJECT);
    f->set_blob_digest(util::Sha256Hex(bytes_));
    f->set_size_bytes(static_cast<int64_t>(bytes_.size()));
  }
  std::string dir_;
  kiln::v1::ArtifactMetadata metadata_;
  const std::string bytes_ = "\x7f"
                             "ELF payload of a shared object";
};

TEST_F(LocalCacheTest, StoresAndVerifiesAnArtifact) {
  LocalCache cache(dir_);
  kiln::v1::ArtifactMetadata m;
  EXPECT_EQ(cache.GetMetadata(metadata_.key(), &m), LocalCache::Read::kMissing);
  ASSERT_TRUE(cache.PutMetadata(metadata_).ok());
  ASSERT_TRUE(cache.PutFile(metadata_, kiln::v1::ARTIFACT_KIND_SHARED_OBJECT, bytes_).ok());
  ASSERT_EQ(cache.GetMetadata(metadata_.key(), &m), LocalCache::Read::kOk);
  EXPECT_EQ(m.target(), "cpu");
  std::string got;
  ASSERT_EQ(cache.GetFile(m, kiln::v1::ARTIFACT_KIND_SHARED_OBJECT, &got), LocalCache::Read::kOk);
  EXPECT_EQ(got, bytes_);
  // A kind the metadata does not list is missing, not an error.
  EXPECT_EQ(cache.GetFile(m, kiln::v1::ARTIFACT_KIND_PTX, &got), LocalCache::Read::kMissing);
  // No temporary files are left behind.
  for (const auto& e : fs::recursive_directory_iterator(dir_)) {
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << e.path();
  }
}

TEST_F(LocalCacheTest, RefusesBytesThatDoNotMatchTheirDigest) {
  LocalCache cache(dir_);
  absl::Status s = cache.PutFile(metadata_, kiln::v1::ARTIFACT_KIND_SHARED_OBJECT, "other bytes");
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_FALSE(cache.PutMetadata(kiln::v1::ArtifactMetadata()).ok()); // no key
}

TEST_F(LocalCacheTest, ACorruptFileIsReportedAndRemoved) {
  LocalCache cache(dir_);
  ASSERT_TRUE(cache.PutMetadata(metadata_).ok());
  ASSERT_TRUE(cache.PutFile(metadata_, kiln::v1::ARTIFACT_KIND_SHARED_OBJECT, bytes_).ok());
  const std::string path = dir_ + "/artifacts/" + metadata_.key() + "/so";
  ASSERT_TRUE(fs::exists(path));
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(3);
    f.put('X'); // one flipped byte
  }
  std::string got;
  EXPECT_EQ(cache.GetFile(metadata_, kiln::v1::ARTIFACT_KIND_SHARED_OBJECT, &got),
            LocalCache::Read::kCorrupt);
  EXPECT_FALSE(fs::exists(path));
  EXPECT_EQ(cache.GetFile(metadata_, kiln::v1::ARTIFACT_KIND_SHARED_OBJECT, &got),
            LocalCache::Read::kMissing);

  // Metadata that does not parse, or names another key, is corrupt too.
  const std::string meta = dir_ + "/artifacts/" + metadata_.key() + "/metadata.pb";
  ASSERT_TRUE(util::WriteFileAtomically(meta, "\xff\xff\xff not a proto").ok());
  kiln::v1::ArtifactMetadata m;
  EXPECT_EQ(cache.GetMetadata(metadata_.key(), &m), LocalCache::Read::kCorrupt);
  kiln::v1::ArtifactMetadata other = metadata_;
  other.set_key(std::string(64, 'b'));
  ASSERT_TRUE(util::WriteFileAtomically(meta, other.SerializeAsString()).ok());
  EXPECT_EQ(cache.GetMetadata(metadata_.key(), &m), LocalCache::Read::kCorrupt);
}

TEST_F(LocalCacheTest, TheCompileMemoExpires) {
  LocalCache cache(dir_);
  const std::string id(64, 'c');
  const std::string key(64, 'd');
  const int64_t t0 = 1'000'000;
  ASSERT_TRUE(cache.PutCompileKey(id, key, t0).ok());
  EXPECT_EQ(cache.GetCompileKey(id, std::chrono::seconds(60), t0 + 59'000), key);
  EXPECT_EQ(cache.GetCompileKey(id, std::chrono::seconds(60), t0 + 61'000), std::nullopt);
  EXPECT_EQ(cache.GetCompileKey(id, std::chrono::seconds(0), t0), std::nullopt); // memo off
  EXPECT_EQ(cache.GetCompileKey(std::string(64, 'e'), std::chrono::seconds(60), t0), std::nullopt);
  // A damaged memo entry is ignored and removed.
  ASSERT_TRUE(util::WriteFileAtomically(dir_ + "/compile/" + id, "garbage").ok());
  EXPECT_EQ(cache.GetCompileKey(id, std::chrono::seconds(60), t0), std::nullopt);
  EXPECT_FALSE(fs::exists(dir_ + "/compile/" + id));
}

TEST(IsCacheKey, OnlySixtyFourLowercaseHexDigits) {
  EXPECT_TRUE(IsCacheKey(std::string(64, '0')));
  EXPECT_FALSE(IsCacheKey(std::string(63, '0')));
  EXPECT_FALSE(IsCacheKey(std::string(64, 'A')));
  EXPECT_FALSE(IsCacheKey("../" + std::string(61, 'a')));
}

} // namespace
} // namespace kiln::client
