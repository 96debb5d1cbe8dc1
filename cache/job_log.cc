#include "cache/job_log.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "util/status_macros.h"

namespace kiln::cache {
namespace {

constexpr char kColumns[] = "id, kind, state, key, created_ms, finished_ms, record";

JobRecord Row(const Statement& st) {
  JobRecord j;
  j.id = st.Text(0);
  j.kind = st.Text(1);
  j.state = st.Text(2);
  j.key = st.Text(3);
  j.created_unix_ms = st.Int(4);
  j.finished_unix_ms = st.Int(5);
  j.record = st.Text(6); // byte-exact for blobs too
  return j;
}

} // namespace

absl::Status JobLog::Put(const JobRecord& job) {
  if (job.id.empty()) return absl::InvalidArgumentError("a job record needs an id");
  return index_->Write([&](IndexTxn& txn) -> absl::Status {
    ASSIGN_OR_RETURN(Statement st,
                     txn.db().Prepare(absl::StrCat("INSERT OR REPLACE INTO jobs(", kColumns,
                                                   ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")));
    st.Bind(1, job.id)
        .Bind(2, job.kind)
        .Bind(3, job.state)
        .Bind(4, job.key)
        .Bind(5, job.created_unix_ms)
        .Bind(6, job.finished_unix_ms)
        .BindBlob(7, job.record);
    return st.Run();
  });
}

absl::StatusOr<JobRecord> JobLog::Get(const std::string& id) {
  JobRecord out;
  bool found = false;
  RETURN_IF_ERROR(index_->Read([&](IndexTxn& txn) -> absl::Status {
    ASSIGN_OR_RETURN(Statement st, txn.db().Prepare(absl::StrCat("SELECT ", kColumns,
                                                                 " FROM jobs WHERE id = ?1")));
    st.Bind(1, id);
    ASSIGN_OR_RETURN(found, st.Step());
    if (found) out = Row(st);
    return absl::OkStatus();
  }));
  if (!found) return absl::NotFoundError(absl::StrCat("no job '", id, "'"));
  return out;
}

absl::StatusOr<std::vector<JobRecord>> JobLog::List(int64_t limit, bool unfinished_only,
                                                    int64_t min_created_ms) {
  std::vector<JobRecord> out;
  RETURN_IF_ERROR(index_->Read([&](IndexTxn& txn) -> absl::Status {
    out.clear();
    ASSIGN_OR_RETURN(Statement st, txn.db().Prepare(absl::StrCat(
                                       "SELECT ", kColumns, " FROM jobs WHERE created_ms >= ?2",
                                       unfinished_only ? " AND finished_ms = 0" : "",
                                       " ORDER BY created_ms DESC, id LIMIT ?1")));
    st.Bind(1, limit > 0 ? limit : int64_t{-1});
    st.Bind(2, min_created_ms);
    while (true) {
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      out.push_back(Row(st));
    }
    return absl::OkStatus();
  }));
  return out;
}

absl::StatusOr<int64_t> JobLog::Prune(int64_t before_unix_ms) {
  int64_t n = 0;
  RETURN_IF_ERROR(index_->Write([&](IndexTxn& txn) -> absl::Status {
    ASSIGN_OR_RETURN(Statement st, txn.db().Prepare("DELETE FROM jobs WHERE finished_ms != 0 "
                                                    "AND created_ms < ?1"));
    st.Bind(1, before_unix_ms);
    RETURN_IF_ERROR(st.Run());
    n = txn.db().Changes();
    return absl::OkStatus();
  }));
  return n;
}

absl::StatusOr<int64_t> JobLog::PruneKeepNewest(int64_t keep) {
  if (keep <= 0) return Prune(std::numeric_limits<int64_t>::max());
  int64_t n = 0;
  RETURN_IF_ERROR(index_->Write([&](IndexTxn& txn) -> absl::Status {
    n = 0;
    // The creation time of the oldest of the `keep` newest finished jobs
    // (by the jobs_created index); none: there are fewer, nothing to do.
    ASSIGN_OR_RETURN(Statement cut,
                     txn.db().Prepare("SELECT created_ms FROM jobs WHERE finished_ms != 0 "
                                      "ORDER BY created_ms DESC LIMIT 1 OFFSET ?1"));
    cut.Bind(1, keep - 1);
    ASSIGN_OR_RETURN(bool found, cut.Step());
    if (!found) return absl::OkStatus();
    const int64_t cutoff = cut.Int(0);
    ASSIGN_OR_RETURN(Statement del, txn.db().Prepare("DELETE FROM jobs WHERE finished_ms != 0 "
                                                     "AND created_ms < ?1"));
    del.Bind(1, cutoff);
    RETURN_IF_ERROR(del.Run());
    n = txn.db().Changes();
    return absl::OkStatus();
  }));
  return n;
}

} // namespace kiln::cache
