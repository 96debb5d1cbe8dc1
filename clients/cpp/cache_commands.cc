#include "clients/cpp/cache_commands.h"

#include <cstdlib>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "cache/cache.h"
#include "cache/cache_error.h"
#include "clients/cpp/json_output.h"
#include "clients/cpp/suggest.h"
#include "util/file_path.h"

namespace kiln::cli {
namespace {

using nlohmann::json;

constexpr char kUsage[] = R"(usage: kiln cache SUBCOMMAND [--cache-dir DIR] [--json] [OPTIONS]

subcommands:
  stats                 entries, bytes, limits, hit/miss/eviction/corruption counters
  ls [--limit N]        artifacts, most recently used first
  gc [--max-size SIZE]  evict least recently used unpinned artifacts down to SIZE
     [--all]            (default: the soft limit) and remove unreferenced blobs;
                        --all also removes fresh orphans (no other writer may run)
  verify                re-hash every blob; damaged ones are removed with the
                        artifacts that use them; checks the index
  rebuild               reconstruct the index from the blobs' manifests (run it
                        while nothing else uses the cache)

--cache-dir defaults to $KILN_CACHE_DIR, else ~/.cache/kiln. SIZE takes K, M, G
(powers of 1024). Exit codes: 0 ok, 1 failure, 2 usage, 3 verify found damage,
4 the index is missing or corrupt (run `kiln cache rebuild`).
)";

struct Flags {
  std::string subcommand;
  std::string cache_dir;
  bool json = false;
  std::optional<uint64_t> max_size;
  int64_t limit = 0;
  bool all = false;
};

std::string DefaultCacheDir() {
  if (const char* env = std::getenv("KILN_CACHE_DIR"); env != nullptr && *env != '\0') return env;
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return std::string(home) + "/.cache/kiln";
  }
  return "/tmp/kiln-cache";
}

std::optional<uint64_t> ParseSize(std::string text) {
  uint64_t scale = 1;
  if (!text.empty()) {
    const char last = static_cast<char>(std::toupper(static_cast<unsigned char>(text.back())));
    if (last == 'K' || last == 'M' || last == 'G' || last == 'T') {
      scale = last == 'K'   ? 1ULL << 10
              : last == 'M' ? 1ULL << 20
              : last == 'G' ? 1ULL << 30
                            : 1ULL << 40;
      text.pop_back();
    }
  }
  uint64_t n = 0;
  if (text.empty() || !absl::SimpleAtoi(text, &n)) return std::nullopt;
  return n * scale;
}

// Fills `flags`; returns an error message, or "" when fine.
std::string ParseFlags(const std::vector<std::string>& args, Flags& flags) {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    std::string value;
    bool has_value = false;
    if (const size_t eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
      has_value = true;
    }
    auto take = [&](std::string& out) {
      if (has_value) {
        out = value;
        return true;
      }
      if (i + 1 >= args.size()) return false;
      out = args[++i];
      return true;
    };
    if (a == "--cache-dir") {
      if (!take(flags.cache_dir)) return "--cache-dir needs a directory";
    } else if (a == "--json") {
      flags.json = true;
    } else if (a == "--all") {
      flags.all = true;
    } else if (a == "--max-size") {
      std::string v;
      if (!take(v)) return "--max-size needs a size";
      flags.max_size = ParseSize(v);
      if (!flags.max_size) return "--max-size: '" + v + "' is not a size (e.g. 512M, 10G)";
    } else if (a == "--limit") {
      std::string v;
      if (!take(v) || !absl::SimpleAtoi(v, &flags.limit)) return "--limit needs a number";
    } else if (!a.empty() && a[0] != '-' && flags.subcommand.empty()) {
      flags.subcommand = a;
    } else if (!a.empty() && a[0] == '-') {
      return UnknownFlag(args[i],
                         {"--cache-dir", "--json", "--all", "--max-size", "--limit", "--help"});
    } else {
      return "unknown argument '" + args[i] + "'";
    }
  }
  if (flags.subcommand.empty()) return "missing subcommand";
  if (flags.max_size && flags.subcommand != "gc") return "--max-size is for gc";
  if (flags.all && flags.subcommand != "gc") return "--all is for gc";
  if (flags.limit != 0 && flags.subcommand != "ls") return "--limit is for ls";
  return "";
}

int ExitCodeFor(const absl::Status& s) {
  if (s.code() == absl::StatusCode::kDataLoss) return kExitIndexCorrupt;
  return kExitFailure;
}

// The human message on stderr and, with --json, the error object on stdout.
int Fail(const absl::Status& s, const Flags& flags, CommandIo io) {
  io.err << "kiln cache: " << s.message() << "\n";
  if (flags.json) io.out << ErrorJsonLine(s);
  return ExitCodeFor(s);
}

std::string Bytes(uint64_t n) {
  if (n >= (1ULL << 30)) return absl::StrFormat("%.2f GiB", static_cast<double>(n) / (1 << 30));
  if (n >= (1ULL << 20)) return absl::StrFormat("%.2f MiB", static_cast<double>(n) / (1 << 20));
  if (n >= (1ULL << 10)) return absl::StrFormat("%.1f KiB", static_cast<double>(n) / (1 << 10));
  return absl::StrFormat("%d B", n);
}

std::string Time(int64_t unix_ms) {
  const time_t t = static_cast<time_t>(unix_ms / 1000);
  tm parts{};
  gmtime_r(&t, &parts);
  char buf[32];
  strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &parts);
  return buf;
}

int Stats(cache::Cache& c, const Flags& flags, CommandIo io) {
  absl::StatusOr<cache::CacheStats> s = c.Stats();
  if (!s.ok()) return Fail(s.status(), flags, io);
  if (flags.json) {
    io.out << json{{"cache_dir", s->dir},
                   {"schema_version", s->schema_version},
                   {"artifacts", s->artifacts},
                   {"blobs", s->blobs},
                   {"blob_bytes", s->blob_bytes},
                   {"soft_limit_bytes", s->soft_limit_bytes},
                   {"hard_limit_bytes", s->hard_limit_bytes},
                   {"pinned_artifacts", s->pinned_artifacts},
                   {"best_configs", s->best_configs},
                   {"measurements", s->measurements},
                   {"hits", s->hits},
                   {"misses", s->misses},
                   {"evictions", s->evictions},
                   {"corrupt_blobs", s->corrupt_blobs},
                   {"corrupt_artifacts", s->corrupt_artifacts},
                   {"warnings", s->warnings}}
                  .dump(2)
           << "\n";
    return kExitOk;
  }
  io.out << "cache directory  " << s->dir << "\n"
         << "schema version   " << s->schema_version << "\n"
         << "artifacts        " << s->artifacts << " (" << s->pinned_artifacts << " pinned)\n"
         << "blobs            " << s->blobs << ", " << Bytes(s->blob_bytes) << "\n"
         << "size limits      "
         << (s->soft_limit_bytes == 0
                 ? std::string("none")
                 : "soft " + Bytes(s->soft_limit_bytes) + ", hard " + Bytes(s->hard_limit_bytes))
         << "\n"
         << "best configs     " << s->best_configs << "\n"
         << "measurements     " << s->measurements << "\n"
         << "hits / misses    " << s->hits << " / " << s->misses << "\n"
         << "evictions        " << s->evictions << "\n"
         << "corrupt blobs    " << s->corrupt_blobs << "\n"
         << "corrupt entries  " << s->corrupt_artifacts << " (sound blobs under the wrong key)\n";
  for (const std::string& w : s->warnings) io.out << "warning: " << w << "\n";
  return kExitOk;
}

int List(cache::Cache& c, const Flags& flags, CommandIo io) {
  absl::StatusOr<std::vector<cache::ArtifactSummary>> list = c.ListArtifacts(flags.limit);
  if (!list.ok()) return Fail(list.status(), flags, io);
  if (flags.json) {
    json arr = json::array();
    for (const cache::ArtifactSummary& a : *list) {
      arr.push_back({{"key", a.key},
                     {"target", a.target},
                     {"kinds", a.kinds},
                     {"size_bytes", a.size_bytes},
                     {"created_unix_ms", a.created_unix_ms},
                     {"last_access_unix_ms", a.last_access_unix_ms},
                     {"pinned", a.pinned}});
    }
    io.out << arr.dump(2) << "\n";
    return kExitOk;
  }
  for (const cache::ArtifactSummary& a : *list) {
    std::string kinds;
    for (const std::string& k : a.kinds) kinds += (kinds.empty() ? "" : ",") + k;
    io.out << absl::StrFormat("%s  %-12s %10s  %s  %s%s\n", a.key, a.target, Bytes(a.size_bytes),
                              Time(a.last_access_unix_ms), kinds, a.pinned ? "  pinned" : "");
  }
  return kExitOk;
}

int Gc(cache::Cache& c, const Flags& flags, CommandIo io) {
  cache::GcOptions options;
  options.max_size_bytes = flags.max_size;
  options.ignore_grace = flags.all;
  absl::StatusOr<cache::GcReport> r = c.Gc(options);
  if (!r.ok()) return Fail(r.status(), flags, io);
  if (flags.json) {
    io.out << json{{"bytes_before", r->bytes_before},           {"bytes_after", r->bytes_after},
                   {"evicted_artifacts", r->evicted_artifacts}, {"removed_blobs", r->removed_blobs},
                   {"removed_orphans", r->removed_orphans},     {"removed_temps", r->removed_temps}}
                  .dump(2)
           << "\n";
    return kExitOk;
  }
  io.out << "evicted " << r->evicted_artifacts << " artifact(s), removed " << r->removed_blobs
         << " unreferenced blob(s), " << r->removed_orphans << " orphan file(s), "
         << r->removed_temps << " temp file(s); " << Bytes(r->bytes_before) << " -> "
         << Bytes(r->bytes_after) << "\n";
  return kExitOk;
}

int Verify(cache::Cache& c, const Flags& flags, CommandIo io) {
  absl::StatusOr<cache::VerifyReport> r = c.Verify();
  if (!r.ok()) return Fail(r.status(), flags, io);
  if (flags.json) {
    io.out << json{{"ok", r->ok()},
                   {"checked_blobs", r->checked_blobs},
                   {"checked_bytes", r->checked_bytes},
                   {"corrupt_blobs", r->corrupt_blobs},
                   {"missing_blobs", r->missing_blobs},
                   {"mismatched_artifacts", r->mismatched_artifacts},
                   {"evicted_artifacts", r->evicted_artifacts},
                   {"orphan_files", r->orphan_files},
                   {"index_findings", r->index_findings}}
                  .dump(2)
           << "\n";
  } else {
    io.out << "checked " << r->checked_blobs << " blob(s), " << Bytes(r->checked_bytes) << ": "
           << r->corrupt_blobs << " corrupt, " << r->missing_blobs << " missing, "
           << r->mismatched_artifacts << " artifact(s) naming another's blobs (removed with "
           << r->evicted_artifacts << " artifact(s)), " << r->orphan_files << " orphan file(s)\n";
    if (!r->index_findings.empty()) io.out << "index: " << r->index_findings;
    io.out << (r->ok() ? "ok\n" : "damage found\n");
  }
  return r->ok() ? kExitOk : kExitDamage;
}

int Rebuild(const std::string& dir, const Flags& flags, CommandIo io) {
  cache::CacheOptions options;
  options.on_warning = [&](const std::string& w) {
    io.err << "kiln cache: warning: " << w << "\n";
  };
  absl::StatusOr<cache::RebuildReport> r = cache::Cache::Rebuild(dir, options);
  if (!r.ok()) return Fail(r.status(), flags, io);
  if (flags.json) {
    io.out << json{{"moved_aside", r->moved_aside},
                   {"blobs", r->blobs},
                   {"corrupt_blobs", r->corrupt_blobs},
                   {"artifacts", r->artifacts},
                   {"best_configs", r->best_configs},
                   {"incomplete_manifests", r->incomplete_manifests}}
                  .dump(2)
           << "\n";
    return kExitOk;
  }
  if (!r->moved_aside.empty()) io.out << "old index moved to " << r->moved_aside << "\n";
  io.out << "rebuilt from " << r->blobs << " blob(s): " << r->artifacts << " artifact(s), "
         << r->best_configs << " best config(s); " << r->corrupt_blobs
         << " corrupt blob(s) removed, " << r->incomplete_manifests
         << " incomplete manifest(s) skipped\n";
  return kExitOk;
}

int RunCache(const std::vector<std::string>& args, CommandIo io) {
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") {
      io.out << kUsage;
      return kExitOk;
    }
  }
  Flags flags;
  if (std::string error = ParseFlags(args, flags); !error.empty()) {
    io.err << "kiln cache: " << error << "\n" << kUsage;
    return kExitUsage;
  }
  static const char* const kKnown[] = {"stats", "ls", "gc", "verify", "rebuild"};
  if (std::find(std::begin(kKnown), std::end(kKnown), flags.subcommand) == std::end(kKnown)) {
    io.err << "kiln cache: unknown subcommand '" << flags.subcommand << "'"
           << DidYouMean(flags.subcommand, {std::begin(kKnown), std::end(kKnown)}) << "\n"
           << kUsage;
    return kExitUsage;
  }
  // `--cache-dir=~/c` (and a quoted "~/c" in KILN_CACHE_DIR): no shell expanded the ~.
  const std::string dir =
      util::ExpandHome(flags.cache_dir.empty() ? DefaultCacheDir() : flags.cache_dir);
  if (flags.subcommand == "rebuild") return Rebuild(dir, flags, io);

  cache::CacheOptions options;
  options.background = false;
  options.create = false;
  options.on_warning = [&](const std::string& w) {
    io.err << "kiln cache: warning: " << w << "\n";
  };
  absl::StatusOr<std::unique_ptr<cache::Cache>> c = cache::Cache::Open(dir, options);
  if (!c.ok()) return Fail(c.status(), flags, io);
  if (flags.subcommand == "stats") return Stats(**c, flags, io);
  if (flags.subcommand == "ls") return List(**c, flags, io);
  if (flags.subcommand == "gc") return Gc(**c, flags, io);
  return Verify(**c, flags, io);
}

} // namespace

Command CacheCommand() { return {"cache", "inspect and maintain the local cache", RunCache}; }

} // namespace kiln::cli
