#include "clients/cpp/remote/stats_command.h"

#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "clients/cpp/client/client.h"
#include "clients/cpp/json_output.h"
#include "clients/cpp/remote/connection_flags.h"
#include "clients/cpp/suggest.h"

namespace kiln::cli {
namespace {

constexpr char kUsage[] = "usage: kiln stats [--zero] [--json] [--server HOST:PORT]\n"
                          "  the daemon's cache and job statistics (like sccache -s);\n"
                          "  --zero starts the daemon's counters again from zero\n";

std::string Size(int64_t bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? absl::StrFormat("%d bytes", bytes) : absl::StrFormat("%.1f %s", v, units[u]);
}

std::string UtcTime(int64_t unix_ms) {
  const std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

// Hits over all answered compiles; nullopt before the first.
std::optional<double> HitRate(const kiln::v1::CacheStatsResponse& s) {
  const int64_t total = s.compile_hits() + s.compile_misses() + s.joined();
  if (total <= 0) return std::nullopt;
  return 100.0 * static_cast<double>(s.compile_hits()) / static_cast<double>(total);
}

void PrintText(const kiln::v1::CacheStatsResponse& s, const std::string& server, CommandIo io) {
  // Label left, numbers right-aligned in one column, text after the label.
  auto line = [&](const std::string& label, const std::string& value, bool number) {
    io.out << (number ? absl::StrFormat("%-36s%14s\n", label, value)
                      : absl::StrFormat("%-36s%s\n", label, value));
  };
  auto count = [&](const std::string& label, int64_t v) {
    line(label, absl::StrFormat("%d", v), true);
  };
  line("Server", server, false);
  line("Cache directory", s.cache_dir(), false);
  line("Counting since", UtcTime(s.since_unix_ms()), false);
  count("Compile requests", s.compile_hits() + s.compile_misses() + s.joined());
  count("Compile requests hit", s.compile_hits());
  count("Compile requests missed", s.compile_misses());
  count("Compile requests joined", s.joined());
  const std::optional<double> rate = HitRate(s);
  line("Cache hit rate", rate ? absl::StrFormat("%.2f %%", *rate) : "-", true);
  count("Builds", s.builds());
  count("Build failures", s.build_failures());
  count("Tune sweeps", s.tunes());
  count("Tune configs measured", s.tune_configs_measured());
  count("Tune configs failed", s.tune_configs_failed());
  count("Benchmarks", s.benchmarks());
  io.out << "\n";
  count("Cache entries", s.entries());
  line("Cache size", Size(s.blob_bytes()), true);
  line("Index, WAL and reserve", Size(s.overhead_bytes()), true);
  line("Cache size limit", s.capacity_bytes() > 0 ? Size(s.capacity_bytes()) : "none", true);
  count("Best configs", s.best_configs());
  count("Measurements", s.measurements());
  count("Cache lookups hit (all time)", s.hits());
  count("Cache lookups missed (all time)", s.misses());
  count("Evictions (all time)", s.evictions());
  count("Corrupt blobs repaired (all time)", s.corrupt_blobs_repaired());
  count("Damaged entries evicted (all time)", s.corrupt_artifacts_evicted());
}

OrderedJson ToJson(const kiln::v1::CacheStatsResponse& s, const std::string& server) {
  const std::optional<double> rate = HitRate(s);
  return {{"server", server},
          {"cache_dir", s.cache_dir()},
          {"since_unix_ms", s.since_unix_ms()},
          {"zeroed", s.zeroed()},
          {"compile_requests", s.compile_hits() + s.compile_misses() + s.joined()},
          {"compile_hits", s.compile_hits()},
          {"compile_misses", s.compile_misses()},
          {"joined", s.joined()},
          {"hit_rate", rate ? OrderedJson(*rate / 100) : OrderedJson()},
          {"builds", s.builds()},
          {"build_failures", s.build_failures()},
          {"tunes", s.tunes()},
          {"tune_configs_measured", s.tune_configs_measured()},
          {"tune_configs_failed", s.tune_configs_failed()},
          {"benchmarks", s.benchmarks()},
          {"entries", s.entries()},
          {"blob_bytes", s.blob_bytes()},
          {"overhead_bytes", s.overhead_bytes()},
          {"capacity_bytes", s.capacity_bytes()},
          {"best_configs", s.best_configs()},
          {"measurements", s.measurements()},
          {"hits", s.hits()},
          {"misses", s.misses()},
          {"evictions", s.evictions()},
          {"corrupt_blobs_repaired", s.corrupt_blobs_repaired()},
          {"corrupt_artifacts_evicted", s.corrupt_artifacts_evicted()}};
}

} // namespace

int RunStats(const std::vector<std::string>& args, CommandIo io) {
  std::optional<Connection> c = ParseConnection(args, io, "stats");
  if (!c) return kExitUsage;
  bool zero = false;
  for (const std::string& a : c->rest) {
    if (a == "-h" || a == "--help") {
      io.out << kUsage << kConnectionFlagsHelp;
      return kExitOk;
    } else if (a == "--zero") {
      zero = true;
    } else if (!a.empty() && a[0] == '-') {
      io.err << "kiln stats: " << UnknownFlag(a, WithConnectionFlags({"--zero", "--help"})) << "\n"
             << kUsage;
      return kExitUsage;
    } else {
      io.err << "kiln stats: unexpected argument '" << a << "'\n" << kUsage;
      return kExitUsage;
    }
  }
  std::unique_ptr<client::Client> client = Connect(*c, io, "stats");
  if (!client) return kExitUsage;
  kiln::v1::CacheStatsRequest request;
  request.set_zero(zero);
  absl::StatusOr<kiln::v1::CacheStatsResponse> s = client->CacheStats(request);
  if (!s.ok()) return ReportFailure(s.status(), *c, io);
  if (c->json) {
    io.out << Dump(ToJson(*s, c->options.address)) << "\n";
  } else {
    PrintText(*s, c->options.address, io);
    if (s->zeroed()) io.out << "\nStatistics zeroed.\n";
  }
  return kExitOk;
}

Command StatsCommand() {
  return {"stats", "a kilnd's cache and job statistics: hit rate, entries, builds, tunes",
          RunStats};
}

} // namespace kiln::cli
