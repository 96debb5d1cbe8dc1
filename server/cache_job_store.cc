#include "server/cache_job_store.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace kiln::server {
namespace {

// "JOB_STATE_RUNNING" -> "running": the column is for people and queries.
std::string Lower(const std::string& enum_name, size_t prefix) {
  return absl::AsciiStrToLower(enum_name.substr(std::min(prefix, enum_name.size())));
}

} // namespace

absl::Status CacheJobStore::Save(const kiln::v1::Job& job) {
  cache::JobRecord r;
  r.id = job.id();
  r.kind = Lower(kiln::v1::JobKind_Name(job.kind()), 9);     // JOB_KIND_
  r.state = Lower(kiln::v1::JobState_Name(job.state()), 10); // JOB_STATE_
  r.key = job.key();
  r.created_unix_ms = job.created_unix_ms();
  r.finished_unix_ms = job.finished_unix_ms();
  r.record = job.SerializeAsString();
  return cache_->jobs().Put(r);
}

absl::StatusOr<kiln::v1::Job> CacheJobStore::Load(const std::string& id) {
  absl::StatusOr<cache::JobRecord> r = cache_->jobs().Get(id);
  if (!r.ok()) return r.status();
  kiln::v1::Job job;
  if (!job.ParseFromString(r->record)) {
    return absl::DataLossError(absl::StrCat("job record '", id, "' is unreadable"));
  }
  return job;
}

absl::StatusOr<std::vector<kiln::v1::Job>> CacheJobStore::List(int64_t limit) {
  return ListSince(limit, 0);
}

absl::StatusOr<std::vector<kiln::v1::Job>> CacheJobStore::ListSince(int64_t limit,
                                                                    int64_t min_created_unix_ms) {
  absl::StatusOr<std::vector<cache::JobRecord>> rows =
      cache_->jobs().List(limit, /*unfinished_only=*/false, min_created_unix_ms);
  if (!rows.ok()) return rows.status();
  std::vector<kiln::v1::Job> out;
  for (const cache::JobRecord& r : *rows) {
    kiln::v1::Job job;
    if (job.ParseFromString(r.record)) out.push_back(std::move(job));
  }
  return out;
}

absl::StatusOr<int64_t> CacheJobStore::PruneFinished(int64_t keep) {
  return cache_->jobs().PruneKeepNewest(keep);
}

} // namespace kiln::server
