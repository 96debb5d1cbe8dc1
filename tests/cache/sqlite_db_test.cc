#include <fstream>
#include <thread>

#include "cache/sqlite_db.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "util/temp_dir.h"

namespace kiln::cache {
namespace {

using ::testing::HasSubstr;

class SqliteDbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<util::TempDir> dir = util::TempDir::Create("kiln-sqlite-test");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(*std::move(dir));
    path_ = dir_->path() + "/db.sqlite";
  }
  std::unique_ptr<SqliteDb> OpenDb(SqliteOptions options = {}) {
    absl::StatusOr<std::unique_ptr<SqliteDb>> db = SqliteDb::Open(path_, true, options);
    EXPECT_TRUE(db.ok()) << db.status();
    return db.ok() ? *std::move(db) : nullptr;
  }
  std::optional<util::TempDir> dir_;
  std::string path_;
};

TEST_F(SqliteDbTest, OpensInWalModeAndRunsTransactions) {
  std::unique_ptr<SqliteDb> db = OpenDb();
  ASSERT_NE(db, nullptr);
  {
    absl::StatusOr<Statement> mode = db->Prepare("PRAGMA journal_mode");
    ASSERT_TRUE(mode.ok());
    ASSERT_TRUE(*mode->Step());
    EXPECT_EQ(mode->Text(0), "wal");
  }
  ASSERT_TRUE(db->Exec("CREATE TABLE t(x INTEGER)").ok());
  ASSERT_TRUE(db->Transaction(true, [&] { return db->Exec("INSERT INTO t VALUES (1)"); }).ok());
  // A failing callback rolls back.
  absl::Status s = db->Transaction(true, [&] {
    EXPECT_TRUE(db->Exec("INSERT INTO t VALUES (2)").ok());
    return absl::InternalError("stop");
  });
  EXPECT_EQ(s.message(), "stop");
  absl::StatusOr<Statement> count = db->Prepare("SELECT count(*) FROM t");
  ASSERT_TRUE(count.ok());
  ASSERT_TRUE(*count->Step());
  EXPECT_EQ(count->Int(0), 1);
}

TEST_F(SqliteDbTest, WriterWaitsForAnotherConnectionsLockInsteadOfFailing) {
  std::unique_ptr<SqliteDb> a = OpenDb();
  SqliteOptions quick;
  quick.busy_timeout = std::chrono::milliseconds(5); // force our own retry loop
  std::unique_ptr<SqliteDb> b = OpenDb(quick);
  ASSERT_TRUE(a->Exec("CREATE TABLE t(x INTEGER)").ok());
  ASSERT_TRUE(a->Exec("BEGIN IMMEDIATE").ok());
  ASSERT_TRUE(a->Exec("INSERT INTO t VALUES (1)").ok());
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_TRUE(a->Exec("COMMIT").ok());
  });
  absl::Status s = b->Transaction(true, [&] { return b->Exec("INSERT INTO t VALUES (2)"); });
  release.join();
  EXPECT_TRUE(s.ok()) << s;
}

TEST_F(SqliteDbTest, LockHeldPastTheBudgetIsATimeoutNotDatabaseIsLocked) {
  std::unique_ptr<SqliteDb> a = OpenDb();
  SqliteOptions quick;
  quick.busy_timeout = std::chrono::milliseconds(5);
  quick.retry_budget = std::chrono::milliseconds(100);
  std::unique_ptr<SqliteDb> b = OpenDb(quick);
  ASSERT_TRUE(a->Exec("CREATE TABLE t(x INTEGER); BEGIN IMMEDIATE").ok());
  absl::Status s = b->Transaction(true, [&] { return b->Exec("INSERT INTO t VALUES (2)"); });
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(s.message(), HasSubstr("stayed locked"));
  EXPECT_THAT(s.message(), ::testing::Not(HasSubstr("database is locked")));
  ASSERT_TRUE(a->Exec("COMMIT").ok());
}

TEST_F(SqliteDbTest, GarbageFileIsCorruptWithRebuildAdvice) {
  { std::ofstream(path_) << std::string(8192, 'x'); }
  absl::StatusOr<std::unique_ptr<SqliteDb>> db = SqliteDb::Open(path_, false, {});
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(db.status().message(), HasSubstr("kiln cache rebuild"));
}

TEST_F(SqliteDbTest, MissingFileWithoutCreateIsNotFound) {
  absl::StatusOr<std::unique_ptr<SqliteDb>> db = SqliteDb::Open(path_, false, {});
  EXPECT_EQ(db.status().code(), absl::StatusCode::kNotFound);
}

} // namespace
} // namespace kiln::cache
