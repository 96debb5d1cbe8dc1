#include "cache/index.h"
#include "cache/schema.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "util/temp_dir.h"

namespace kiln::cache {
namespace {

// Rows that a database at `version` can hold, inserted with that version's
// columns only.
void Populate(SqliteDb& db, int version) {
  if (version >= 1) {
    ASSERT_TRUE(db.Exec("INSERT INTO blobs(digest, file_size, raw_size, compressed, created_ms) "
                        "VALUES ('d1', 100, 68, 0, 1), ('m1', 50, 18, 0, 1);"
                        "INSERT INTO artifacts VALUES ('k1', 'm1', 'cpu', 'fp', '{}', '{}', 150, "
                        "1, 2);"
                        "INSERT INTO artifact_files VALUES ('k1', 'cubin', 'd1', 68);"
                        "UPDATE counters SET value = 7 WHERE name = 'hits';")
                    .ok());
  }
  if (version >= 2) {
    ASSERT_TRUE(db.Exec("INSERT INTO blobs(digest, file_size, raw_size, compressed, created_ms) "
                        "VALUES ('r1', 10, 10, 0, 1);"
                        "INSERT INTO best_configs VALUES ('p', 's', 'cpu', 'H200', '{}', 1, 2, 3, "
                        "4, 5, 6, 'run', 'k1', 'r1', 9);"
                        "INSERT INTO measurements(key, config_json, device_model, device_id, "
                        "driver, sm_clock_mhz, mem_clock_mhz, min_us, median_us, mean_us, "
                        "p90_us, stddev_us, samples, failure, label, time_ms) VALUES ('k1', '{}', "
                        "'H200', 'cuda:0', '550', 0, 0, 1, 2, 3, 4, 5, 6, '', 'abc123', 10);")
                    .ok());
  }
}

TEST(SchemaTest, MigratesFromEveryEarlierVersionKeepingData) {
  for (int from = 0; from <= kSchemaVersion; ++from) {
    SCOPED_TRACE(from);
    absl::StatusOr<util::TempDir> dir = util::TempDir::Create("kiln-schema-test");
    ASSERT_TRUE(dir.ok());
    const std::string path = dir->path() + "/index.sqlite";
    {
      absl::StatusOr<std::unique_ptr<SqliteDb>> db = SqliteDb::Open(path, true, {});
      ASSERT_TRUE(db.ok());
      ASSERT_TRUE(MigrateTo(**db, from).ok());
      absl::StatusOr<int> v = SchemaVersion(**db);
      ASSERT_TRUE(v.ok());
      EXPECT_EQ(*v, from);
      Populate(**db, from);
    }
    absl::StatusOr<std::unique_ptr<Index>> index = Index::Open(path, false, {});
    ASSERT_TRUE(index.ok()) << index.status();
    ASSERT_TRUE((*index)
                    ->Read([&](IndexTxn& txn) -> absl::Status {
                      absl::StatusOr<int> v = SchemaVersion(txn.db());
                      EXPECT_EQ(*v, kSchemaVersion);
                      absl::StatusOr<IndexCounts> c = txn.Counts();
                      EXPECT_TRUE(c.ok());
                      EXPECT_EQ(c->artifacts, from >= 1 ? 1 : 0);
                      EXPECT_EQ(c->best_configs, from >= 2 ? 1 : 0);
                      EXPECT_EQ(c->measurements, from >= 2 ? 1 : 0);
                      EXPECT_EQ(c->pinned_artifacts, from >= 2 ? 1 : 0);
                      EXPECT_EQ(c->counters["hits"], from >= 1 ? 7 : 0);
                      auto a = txn.GetArtifact("k1");
                      EXPECT_TRUE(a.ok());
                      EXPECT_EQ(a->has_value(), from >= 1);
                      // Columns added by later steps exist with defaults.
                      absl::StatusOr<std::vector<BlobInfo>> scrub = txn.ScrubCandidates(10);
                      EXPECT_TRUE(scrub.ok()) << scrub.status();
                      return absl::OkStatus();
                    })
                    .ok());
  }
}

TEST(SchemaTest, NewerDatabaseIsRefused) {
  absl::StatusOr<util::TempDir> dir = util::TempDir::Create("kiln-schema-test");
  ASSERT_TRUE(dir.ok());
  const std::string path = dir->path() + "/index.sqlite";
  {
    absl::StatusOr<std::unique_ptr<SqliteDb>> db = SqliteDb::Open(path, true, {});
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(MigrateToLatest(**db).ok());
    ASSERT_TRUE((*db)->Exec("PRAGMA user_version=" + std::to_string(kSchemaVersion + 1)).ok());
  }
  absl::StatusOr<std::unique_ptr<Index>> index = Index::Open(path, false, {});
  ASSERT_FALSE(index.ok());
  EXPECT_EQ(index.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(index.status().message(), ::testing::HasSubstr("newer Kiln"));
}

TEST(SchemaTest, MigratingTwiceIsANoOp) {
  absl::StatusOr<util::TempDir> dir = util::TempDir::Create("kiln-schema-test");
  ASSERT_TRUE(dir.ok());
  absl::StatusOr<std::unique_ptr<SqliteDb>> db =
      SqliteDb::Open(dir->path() + "/index.sqlite", true, {});
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(MigrateToLatest(**db).ok());
  ASSERT_TRUE(MigrateToLatest(**db).ok());
  EXPECT_EQ(*SchemaVersion(**db), kSchemaVersion);
}

} // namespace
} // namespace kiln::cache
