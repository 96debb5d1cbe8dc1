#include <string>

#include <sys/stat.h>
#include <unistd.h>

#include "cache/blob_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cache/cache_test_util.h"
#include "util/sha256.h"
#include "util/temp_dir.h"

namespace kiln::cache {
namespace {

using ::testing::HasSubstr;

class BlobStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<util::TempDir> dir = util::TempDir::Create("kiln-blob-test");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(*std::move(dir));
    store_.emplace(dir_->path() + "/blobs", BlobStoreOptions{});
  }
  std::optional<util::TempDir> dir_;
  std::optional<BlobStore> store_;
};

TEST_F(BlobStoreTest, RoundTripsBytesOfEverySizeAndCompression) {
  struct Case {
    std::string name;
    std::string bytes;
    Compression compression;
    bool expect_compressed;
  };
  const Case cases[] = {
      {"empty", "", Compression::kNone, false},
      {"one byte", "x", Compression::kZstd, false},
      {"64 KiB random raw", testing::Bytes("a", 64 << 10), Compression::kNone, false},
      {"64 KiB random zstd (incompressible: kept raw)", testing::Bytes("b", 64 << 10),
       Compression::kZstd, false},
      {"64 KiB text zstd", testing::Text("c", 64 << 10), Compression::kZstd, true},
      {"1 MiB text raw", testing::Text("d", 1 << 20), Compression::kNone, false},
      {"1 MiB random", testing::Bytes("e", 1 << 20), Compression::kNone, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<BlobPutResult> put = store_->Put(c.bytes, c.compression);
    ASSERT_TRUE(put.ok()) << put.status();
    EXPECT_TRUE(put->created);
    EXPECT_EQ(put->info.digest, util::Sha256Hex(c.bytes));
    EXPECT_EQ(put->info.compressed, c.expect_compressed);
    EXPECT_EQ(put->info.raw_size, c.bytes.size());
    struct stat st {};
    ASSERT_EQ(stat(store_->PathOf(put->info.digest).c_str(), &st), 0);
    EXPECT_EQ(static_cast<uint64_t>(st.st_size), put->info.file_size);
    for (ReadVerify v : {ReadVerify::kChecksum, ReadVerify::kFullHash}) {
      absl::StatusOr<std::string> got = store_->Get(put->info.digest, v, put->info.file_size);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(*got, c.bytes);
    }
    absl::StatusOr<BlobInfo> info = store_->Stat(put->info.digest);
    ASSERT_TRUE(info.ok());
    EXPECT_EQ(info->file_size, put->info.file_size);
  }
}

TEST_F(BlobStoreTest, ShardsByTheFirstTwoHexDigits) {
  absl::StatusOr<BlobPutResult> put = store_->Put("hello", Compression::kNone);
  ASSERT_TRUE(put.ok());
  const std::string& d = put->info.digest;
  EXPECT_EQ(store_->PathOf(d), dir_->path() + "/blobs/" + d.substr(0, 2) + "/" + d);
  EXPECT_TRUE(store_->Contains(d));
}

TEST_F(BlobStoreTest, SecondPutOfTheSameBytesKeepsTheFile) {
  ASSERT_TRUE(store_->Put("same", Compression::kNone).ok());
  absl::StatusOr<BlobPutResult> again = store_->Put("same", Compression::kNone);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->created);
}

TEST_F(BlobStoreTest, PutReplacesADamagedCopy) {
  absl::StatusOr<BlobPutResult> put = store_->Put(testing::Bytes("r", 1000), Compression::kNone);
  ASSERT_TRUE(put.ok());
  ASSERT_TRUE(testing::FlipByte(store_->PathOf(put->info.digest), -10));
  EXPECT_FALSE(store_->Get(put->info.digest).ok());
  absl::StatusOr<BlobPutResult> again = store_->Put(testing::Bytes("r", 1000), Compression::kNone);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->created);
  EXPECT_TRUE(store_->Get(put->info.digest).ok());
}

TEST_F(BlobStoreTest, EveryFlippedByteIsDetected) {
  // Header, checksum, payload start, middle and end; raw and compressed.
  for (Compression compression : {Compression::kNone, Compression::kZstd}) {
    const std::string bytes = testing::Text(compression == Compression::kNone ? "n" : "z", 8192);
    absl::StatusOr<BlobPutResult> put = store_->Put(bytes, compression);
    ASSERT_TRUE(put.ok());
    const std::string path = store_->PathOf(put->info.digest);
    const int64_t size = static_cast<int64_t>(put->info.file_size);
    for (int64_t offset : {int64_t{0}, int64_t{5}, int64_t{9}, int64_t{17}, int64_t{25},
                           int64_t{32}, size / 2, size - 1}) {
      SCOPED_TRACE(offset);
      ASSERT_TRUE(testing::FlipByte(path, offset));
      absl::StatusOr<std::string> got = store_->Get(put->info.digest);
      EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss) << got.status();
      ASSERT_TRUE(testing::FlipByte(path, offset)); // restore
      EXPECT_TRUE(store_->Get(put->info.digest).ok());
    }
  }
}

TEST_F(BlobStoreTest, TruncatedFileIsCorruptAndStaleSizeHintIsTolerated) {
  absl::StatusOr<BlobPutResult> put = store_->Put(testing::Bytes("t", 5000), Compression::kNone);
  ASSERT_TRUE(put.ok());
  // A wrong hint (as from an index row of an older copy) falls back to fstat.
  EXPECT_TRUE(store_->Get(put->info.digest, ReadVerify::kChecksum, 100).ok());
  ASSERT_EQ(truncate(store_->PathOf(put->info.digest).c_str(), 3000), 0);
  absl::StatusOr<std::string> got = store_->Get(put->info.digest);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(
      store_->Get(put->info.digest, ReadVerify::kChecksum, put->info.file_size).status().code(),
      absl::StatusCode::kDataLoss);
}

TEST_F(BlobStoreTest, MissingBlobIsNotFoundAndBadDigestIsInvalid) {
  const std::string absent = util::Sha256Hex("absent");
  EXPECT_EQ(store_->Get(absent).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->Remove(absent).code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(store_->Contains(absent));
  EXPECT_EQ(store_->Get("../../etc/passwd").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->Get(std::string(64, 'G')).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(BlobStoreTest, FullHashCatchesASwappedFileTheChecksumCannot) {
  // A valid blob file under the wrong name passes its own checksum; only the
  // SHA-256 shows that it is not the blob asked for.
  absl::StatusOr<BlobPutResult> a = store_->Put("aaaa", Compression::kNone);
  absl::StatusOr<BlobPutResult> b = store_->Put("bbbb", Compression::kNone);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(rename(store_->PathOf(b->info.digest).c_str(), store_->PathOf(a->info.digest).c_str()),
            0);
  EXPECT_TRUE(store_->Get(a->info.digest, ReadVerify::kChecksum).ok());
  absl::StatusOr<std::string> full = store_->Get(a->info.digest, ReadVerify::kFullHash);
  EXPECT_EQ(full.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(full.status().message(), HasSubstr("SHA-256"));
}

TEST_F(BlobStoreTest, ForEachListsBlobsAndStaleTempsAreRemoved) {
  std::set<std::string> put;
  for (int i = 0; i < 20; ++i) {
    absl::StatusOr<BlobPutResult> r = store_->Put("blob" + std::to_string(i), Compression::kNone);
    ASSERT_TRUE(r.ok());
    put.insert(r->info.digest);
  }
  std::set<std::string> seen;
  ASSERT_TRUE(store_->ForEach([&](const std::string& d) { seen.insert(d); }).ok());
  EXPECT_EQ(seen, put);
  // A crashed writer's temp file.
  const std::string tmp = dir_->path() + "/blobs/tmp/dead.tmp";
  { std::ofstream(tmp) << "partial"; }
  absl::StatusOr<int> young = store_->RemoveStaleTemps(3600);
  ASSERT_TRUE(young.ok());
  EXPECT_EQ(*young, 0);
  absl::StatusOr<int> all = store_->RemoveStaleTemps(0);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(*all, 1);
  EXPECT_NE(access(tmp.c_str(), F_OK), 0);
}

TEST_F(BlobStoreTest, RecordFlagIsKept) {
  absl::StatusOr<BlobPutResult> r = store_->Put("{\"kiln_record\": 1}", Compression::kNone, true);
  ASSERT_TRUE(r.ok());
  absl::StatusOr<BlobInfo> info = store_->Stat(r->info.digest);
  ASSERT_TRUE(info.ok());
  EXPECT_TRUE(info->record);
}

} // namespace
} // namespace kiln::cache
