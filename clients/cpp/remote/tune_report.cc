#include "clients/cpp/remote/tune_report.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "clients/cpp/remote/tune_progress.h"

namespace kiln::cli {
namespace {

namespace pb = kiln::v1;

bool Ok(const pb::Measurement& m) { return m.status() == pb::Measurement::STATUS_OK; }

// The first line of a failure's message, at most 120 characters.
std::string ShortError(const std::string& error) {
  std::string line = error.substr(0, error.find('\n'));
  if (line.size() > 120) line = line.substr(0, 117) + "...";
  return line;
}

std::string Micros(double us) { return us > 0 ? absl::StrFormat("%.2f us", us) : "-"; }

} // namespace

const char* MeasurementStatusName(pb::Measurement::Status status) {
  switch (status) {
  case pb::Measurement::STATUS_OK:
    return "ok";
  case pb::Measurement::STATUS_COMPILE_ERROR:
    return "compile_error";
  case pb::Measurement::STATUS_LAUNCH_ERROR:
    return "launch_error";
  case pb::Measurement::STATUS_TIMEOUT:
    return "timeout";
  case pb::Measurement::STATUS_WRONG_RESULT:
    return "wrong_result";
  case pb::Measurement::STATUS_RESOURCE_LIMIT:
    return "resource_limit";
  default:
    return "unknown";
  }
}

std::vector<bool> ReusedFromHistory(const pb::TuneResult& result, int64_t sweep_created_unix_ms) {
  std::vector<bool> out;
  out.reserve(static_cast<size_t>(result.measurements_size()));
  for (const pb::Measurement& m : result.measurements()) {
    const bool earlier =
        sweep_created_unix_ms > 0 && m.unix_ms() > 0 && m.unix_ms() < sweep_created_unix_ms;
    out.push_back(earlier || absl::StartsWith(m.error(), "measured earlier: "));
  }
  return out;
}

std::vector<int> RankOrder(const pb::TuneResult& result) {
  std::vector<int> order(static_cast<size_t>(result.measurements_size()));
  std::vector<std::string> configs;
  for (int i = 0; i < result.measurements_size(); ++i) {
    order[static_cast<size_t>(i)] = i;
    configs.push_back(ConfigLine(result.measurements(i).config()));
  }
  auto key = [&](int i) {
    const pb::Measurement& m = result.measurements(i);
    const bool ok = Ok(m);
    // Failures after every success, grouped by kind.
    return std::make_tuple(!ok, ok ? 0 : static_cast<int>(m.status()), ok ? m.median_us() : 0.0,
                           ok ? m.predicted_us() : 0.0, std::cref(configs[static_cast<size_t>(i)]));
  };
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return key(a) < key(b); });
  return order;
}

void PrintTuneTable(const pb::TuneResult& result, const std::vector<bool>& reused,
                    std::ostream& out) {
  const std::vector<int> order = RankOrder(result);
  auto is_reused = [&](int i) {
    return static_cast<size_t>(i) < reused.size() && reused[static_cast<size_t>(i)];
  };
  int ok = 0, failed = 0;
  bool any_reused = false;
  for (int i : order) (Ok(result.measurements(i)) ? ok : failed) += 1;
  if (ok > 0) {
    out << absl::StrFormat("%5s  %11s  %11s  %8s  %s\n", "rank", "measured", "predicted", "spread",
                           "config");
  }
  int rank = 0;
  for (int i : order) {
    const pb::Measurement& m = result.measurements(i);
    if (!Ok(m)) continue;
    ++rank;
    any_reused = any_reused || is_reused(i);
    const std::string spread =
        m.median_us() > 0 && m.stddev_us() > 0
            ? absl::StrFormat("+-%.1f%%", 100 * m.stddev_us() / m.median_us())
            : std::string("-");
    out << absl::StrFormat("%4d%s  %11s  %11s  %8s  %s\n", rank, is_reused(i) ? "*" : " ",
                           Micros(m.median_us()), Micros(m.predicted_us()), spread,
                           ConfigLine(m.config()));
  }
  if (failed > 0) {
    out << "failed: " << failed << "\n";
    for (int i : order) {
      const pb::Measurement& m = result.measurements(i);
      if (Ok(m)) continue;
      any_reused = any_reused || is_reused(i);
      out << absl::StrFormat("%4s%s  %-15s  %s%s\n", "", is_reused(i) ? "*" : " ",
                             MeasurementStatusName(m.status()), ConfigLine(m.config()),
                             m.error().empty() ? ""
                                               : absl::StrCat("  (", ShortError(m.error()), ")"));
    }
  }
  if (result.has_best()) {
    const pb::Measurement& b = result.best();
    out << absl::StrFormat("best: %s  %.2f us on %s (%s), artifact %s\n", ConfigLine(b.config()),
                           b.median_us(), b.device_id(), b.device_model(), b.key().substr(0, 12));
  } else {
    out << "no valid config: every candidate failed\n";
  }
  if (any_reused) {
    out << "* reused from kilnd's measurement history (measured in an earlier sweep on this "
           "device model); --remeasure measures again\n";
  }
}

OrderedJson TuneResultJson(const std::string& job_id, const pb::TuneResult& result,
                           const std::vector<bool>& reused) {
  OrderedJson r = MessageJson(result);
  OrderedJson measurements = OrderedJson::array();
  int rank = 0;
  for (int i : RankOrder(result)) {
    const pb::Measurement& m = result.measurements(i);
    OrderedJson entry = OrderedJson::object();
    entry["rank"] = Ok(m) ? OrderedJson(++rank) : OrderedJson(nullptr);
    entry["reused"] = static_cast<size_t>(i) < reused.size() && reused[static_cast<size_t>(i)];
    const OrderedJson fields = MessageJson(m);
    for (auto it = fields.begin(); it != fields.end(); ++it) entry[it.key()] = it.value();
    measurements.push_back(std::move(entry));
  }
  r["measurements"] = std::move(measurements);
  OrderedJson out = OrderedJson::object();
  out["job_id"] = job_id;
  out["result"] = std::move(r);
  return out;
}

} // namespace kiln::cli
