// The text forms of kilnd's setting values, one syntax for flags,
// environment variables and the YAML file. Pure functions; thread-safe.
// Every parser answers InvalidArgument with a message that quotes the text
// and says what was expected.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/server_config.h"

namespace kiln::server {

// A decimal integer in [min, max].
absl::StatusOr<int64_t> ParseConfigInteger(std::string_view text, int64_t min, int64_t max);
// true/false, yes/no, on/off, 1/0, any case.
absl::StatusOr<bool> ParseConfigBool(std::string_view text);

// Bytes, with an optional unit: B; KB, MB, GB, TB (powers of 1000); KiB,
// MiB, GiB, TiB or Ki, Mi, Gi, Ti (powers of 1024); any case, a fraction
// allowed when the result is whole ("1.5GiB"). A bare "G" is refused: GB or
// GiB?
absl::StatusOr<uint64_t> ParseByteSize(std::string_view text);
// The largest binary unit that divides `bytes` ("20GiB", "1536MiB"), or
// plain bytes; ParseByteSize reads it back.
std::string FormatByteSize(uint64_t bytes);

// absl::ParseDuration's syntax ("500ms", "30s", "1h30m", "0"), finite and
// not negative. absl::FormatDuration writes it back.
absl::StatusOr<absl::Duration> ParseConfigDuration(std::string_view text);

// A listen address: HOST:PORT, or unix:PATH where `allow_unix` (gRPC).
absl::Status ValidateListenAddress(std::string_view text, bool allow_unix);

// auto | none | comma-separated CUDA ordinals ("0,1", "cuda:0,cuda:1").
absl::StatusOr<DeviceSelection> ParseDevices(std::string_view text);
std::string FormatDevices(const DeviceSelection& devices);

// auto | peer | metadata.
absl::StatusOr<FairShareConfig::ClientKey> ParseClientKey(std::string_view text);
std::string FormatClientKey(FairShareConfig::ClientKey key);

} // namespace kiln::server
