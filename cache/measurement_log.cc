#include "cache/measurement_log.h"

#include <chrono>

#include "util/status_macros.h"

namespace kiln::cache {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

constexpr char kColumns[] =
    "id, key, config_json, target, device_model, device_id, driver, sm_clock_mhz, "
    "mem_clock_mhz, min_us, median_us, mean_us, p90_us, stddev_us, samples, failure, label, "
    "time_ms";

} // namespace

absl::StatusOr<int64_t> MeasurementLog::Record(const Measurement& m) {
  int64_t id = 0;
  RETURN_IF_ERROR(index_->Write([&](IndexTxn& txn) -> absl::Status {
    ASSIGN_OR_RETURN(
        Statement st,
        txn.db().Prepare("INSERT INTO measurements(key, config_json, target, device_model, "
                         "device_id, driver, sm_clock_mhz, mem_clock_mhz, min_us, median_us, "
                         "mean_us, p90_us, stddev_us, samples, failure, label, time_ms) VALUES "
                         "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, "
                         "?17)"));
    st.Bind(1, m.key)
        .Bind(2, m.config_json)
        .Bind(3, m.target)
        .Bind(4, m.device_model)
        .Bind(5, m.device_id)
        .Bind(6, m.driver)
        .Bind(7, m.sm_clock_mhz)
        .Bind(8, m.mem_clock_mhz)
        .Bind(9, m.latency.min_us)
        .Bind(10, m.latency.median_us)
        .Bind(11, m.latency.mean_us)
        .Bind(12, m.latency.p90_us)
        .Bind(13, m.latency.stddev_us)
        .Bind(14, m.latency.samples)
        .Bind(15, m.failure)
        .Bind(16, m.label)
        .Bind(17, m.time_unix_ms != 0 ? m.time_unix_ms : NowMs());
    RETURN_IF_ERROR(st.Run());
    id = txn.db().LastInsertRowId();
    return absl::OkStatus();
  }));
  return id;
}

absl::StatusOr<std::vector<Measurement>> MeasurementLog::Query(const MeasurementQuery& q) {
  std::vector<Measurement> out;
  RETURN_IF_ERROR(index_->Read([&](IndexTxn& txn) -> absl::Status {
    out.clear();
    // One statement for every filter combination: an unset filter binds NULL
    // and matches all rows.
    ASSIGN_OR_RETURN(
        Statement st,
        txn.db().Prepare(std::string("SELECT ") + kColumns +
                         " FROM measurements WHERE (?1 IS NULL OR key = ?1) AND (?2 IS NULL OR "
                         "label = ?2) AND (?3 IS NULL OR device_model = ?3) AND (?4 IS NULL OR "
                         "time_ms >= ?4) AND (?5 IS NULL OR time_ms < ?5) AND (?6 = 0 OR failure "
                         "<> '') AND (?7 = 0 OR failure = '') ORDER BY time_ms DESC, id DESC "
                         "LIMIT ?8"));
    if (q.key) st.Bind(1, *q.key);
    if (q.label) st.Bind(2, *q.label);
    if (q.device_model) st.Bind(3, *q.device_model);
    if (q.since_unix_ms) st.Bind(4, *q.since_unix_ms);
    if (q.until_unix_ms) st.Bind(5, *q.until_unix_ms);
    st.Bind(6, static_cast<int64_t>(q.failures_only ? 1 : 0));
    st.Bind(7, static_cast<int64_t>(q.successes_only ? 1 : 0));
    st.Bind(8, q.limit <= 0 ? int64_t{-1} : q.limit);
    while (true) {
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      Measurement m;
      m.id = st.Int(0);
      m.key = st.Text(1);
      m.config_json = st.Text(2);
      m.target = st.Text(3);
      m.device_model = st.Text(4);
      m.device_id = st.Text(5);
      m.driver = st.Text(6);
      m.sm_clock_mhz = st.Int(7);
      m.mem_clock_mhz = st.Int(8);
      m.latency = {st.Double(9),  st.Double(10), st.Double(11),
                   st.Double(12), st.Double(13), st.Int(14)};
      m.failure = st.Text(15);
      m.label = st.Text(16);
      m.time_unix_ms = st.Int(17);
      out.push_back(std::move(m));
    }
    return absl::OkStatus();
  }));
  return out;
}

absl::StatusOr<std::vector<std::string>> MeasurementLog::Labels(const std::string& key) {
  std::vector<std::string> out;
  RETURN_IF_ERROR(index_->Read([&](IndexTxn& txn) -> absl::Status {
    out.clear();
    ASSIGN_OR_RETURN(Statement st,
                     txn.db().Prepare("SELECT label FROM measurements WHERE key = ?1 AND label "
                                      "<> '' GROUP BY label ORDER BY max(time_ms) DESC"));
    st.Bind(1, key);
    while (true) {
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      out.push_back(st.Text(0));
    }
    return absl::OkStatus();
  }));
  return out;
}

} // namespace kiln::cache
