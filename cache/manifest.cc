#include "cache/manifest.h"

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "cache/cache_error.h"

namespace kiln::cache {
namespace {

using nlohmann::json;

json LatencyToJson(const LatencyStats& s) {
  return json{{"min_us", s.min_us}, {"median_us", s.median_us}, {"mean_us", s.mean_us},
              {"p90_us", s.p90_us}, {"stddev_us", s.stddev_us}, {"samples", s.samples}};
}

LatencyStats LatencyFromJson(const json& j) {
  LatencyStats s;
  s.min_us = j.at("min_us").get<double>();
  s.median_us = j.at("median_us").get<double>();
  s.mean_us = j.at("mean_us").get<double>();
  s.p90_us = j.at("p90_us").get<double>();
  s.stddev_us = j.at("stddev_us").get<double>();
  s.samples = j.at("samples").get<int64_t>();
  return s;
}

} // namespace

std::string EncodeArtifactManifest(std::string_view key, const Artifact& artifact) {
  json files = json::array();
  for (const ArtifactFile& f : artifact.files) {
    files.push_back({{"kind", f.kind}, {"digest", f.digest}, {"raw_size", f.raw_size}});
  }
  json timings = json::object();
  for (const auto& [step, seconds] : artifact.timings) timings[step] = seconds;
  const json j = {{"kiln_record", "artifact"},
                  {"version", 1},
                  {"key", key},
                  {"target", artifact.target},
                  {"toolchain_fingerprint", artifact.toolchain_fingerprint},
                  {"created_unix_ms", artifact.created_unix_ms},
                  {"launch_json", artifact.launch_json},
                  {"timings", timings},
                  {"files", files}};
  return j.dump();
}

std::string EncodeBestConfigRecord(const BestConfigKey& key, const BestConfig& value) {
  const json j = {{"kiln_record", "best_config"},
                  {"version", 1},
                  {"program_key", key.program_key},
                  {"shape", key.shape},
                  {"target", key.target},
                  {"device_model", key.device_model},
                  {"config_json", value.config_json},
                  {"latency", LatencyToJson(value.latency)},
                  {"tuning_record_id", value.tuning_record_id},
                  {"artifact_key", value.artifact_key},
                  {"updated_unix_ms", value.updated_unix_ms}};
  return j.dump();
}

absl::StatusOr<std::variant<ArtifactManifest, BestConfigRecord>>
DecodeRecord(std::string_view bytes) {
  const json j = json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return MakeError(CacheError::kCorrupt, "record is not a JSON object");
  }
  try {
    const std::string kind = j.at("kiln_record").get<std::string>();
    if (j.at("version").get<int>() != 1) {
      return MakeError(CacheError::kCorrupt, absl::StrCat("unknown ", kind, " record version"));
    }
    if (kind == "artifact") {
      ArtifactManifest m;
      m.key = j.at("key").get<std::string>();
      m.artifact.target = j.at("target").get<std::string>();
      m.artifact.toolchain_fingerprint = j.at("toolchain_fingerprint").get<std::string>();
      m.artifact.created_unix_ms = j.at("created_unix_ms").get<int64_t>();
      m.artifact.launch_json = j.at("launch_json").get<std::string>();
      for (const auto& [step, seconds] : j.at("timings").items()) {
        m.artifact.timings[step] = seconds.get<double>();
      }
      for (const json& f : j.at("files")) {
        ArtifactFile file;
        file.kind = f.at("kind").get<std::string>();
        file.digest = f.at("digest").get<std::string>();
        file.raw_size = f.at("raw_size").get<uint64_t>();
        m.artifact.files.push_back(std::move(file));
      }
      return m;
    }
    if (kind == "best_config") {
      BestConfigRecord r;
      r.key.program_key = j.at("program_key").get<std::string>();
      r.key.shape = j.at("shape").get<std::string>();
      r.key.target = j.at("target").get<std::string>();
      r.key.device_model = j.at("device_model").get<std::string>();
      r.value.config_json = j.at("config_json").get<std::string>();
      r.value.latency = LatencyFromJson(j.at("latency"));
      r.value.tuning_record_id = j.at("tuning_record_id").get<std::string>();
      r.value.artifact_key = j.at("artifact_key").get<std::string>();
      r.value.updated_unix_ms = j.at("updated_unix_ms").get<int64_t>();
      return r;
    }
    return MakeError(CacheError::kCorrupt, absl::StrCat("unknown record kind '", kind, "'"));
  } catch (const json::exception& e) {
    return MakeError(CacheError::kCorrupt, absl::StrCat("malformed record: ", e.what()));
  }
}

} // namespace kiln::cache
