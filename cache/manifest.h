// Self-describing records stored as blobs (with the blob header's record
// flag), from which `kiln cache rebuild` reconstructs a lost index:
//
//   {"kiln_record": "artifact", "version": 1, "key": "...", "target": "...",
//    "toolchain_fingerprint": "...", "created_unix_ms": 0, "launch_json": "...",
//    "timings": {"nvrtc": 0.25}, "files": [{"kind": "cubin", "digest": "...",
//    "raw_size": 65536}]}
//   {"kiln_record": "best_config", "version": 1, "program_key": "...",
//    "shape": "...", "target": "...", "device_model": "...", "config_json": "...",
//    "latency": {"min_us": ..., ...}, "tuning_record_id": "...",
//    "artifact_key": "...", "updated_unix_ms": 0}
//
// Thread-safe (pure functions). Parse errors are kCorrupt.
#pragma once

#include <string>
#include <string_view>
#include <variant>

#include "absl/status/statusor.h"
#include "cache/records.h"

namespace kiln::cache {

// An artifact's manifest: everything but the file bytes.
struct ArtifactManifest {
  std::string key;
  Artifact artifact; // files carry kind, digest and raw_size, no bytes
};

struct BestConfigRecord {
  BestConfigKey key;
  BestConfig value;
};

// Uses the files' kind, digest and raw_size (not their bytes).
std::string EncodeArtifactManifest(std::string_view key, const Artifact& artifact);
std::string EncodeBestConfigRecord(const BestConfigKey& key, const BestConfig& value);

// Either kind of record; kCorrupt when `bytes` is not one.
absl::StatusOr<std::variant<ArtifactManifest, BestConfigRecord>>
DecodeRecord(std::string_view bytes);

} // namespace kiln::cache
