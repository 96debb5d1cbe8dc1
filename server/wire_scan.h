// What a serialized protobuf request will cost to parse, found without
// parsing it, and the one way kilnd parses the requests that carry programs.
//
// Two things protobuf's own parse cannot be asked beforehand:
//  - How deep the messages nest. Protobuf refuses a message whose fields nest
//    deeper than its recursion limit (100 levels by default:
//    CodedInputStream's default, which ParseFromArray uses) with a bare "does
//    not parse", the same answer as for truncated bytes; a request's wire IR
//    (ProgramSource.ir: an Expr's args nest) can reach it. The scan tells the
//    two apart, so the client is told the real reason and the limit.
//  - How much memory the parse allocates. An empty sub-message is 2 bytes on
//    the wire and about 100 in memory (a kiln.v1.Expr), so a request within
//    the 64 MiB message limit could make protobuf allocate 5 GB (rpc_fuzz,
//    2026-12-06: a 64 MB Benchmark holding 11.8 million empty Exprs). The
//    scan adds up an upper estimate of the parsed size from the schema and
//    stops as soon as it passes the limit, before anything is allocated.
//
// The scan is iterative (an explicit stack, no recursion), reads each byte
// at most once and stops at the first field past a limit, so it is safe on
// any input, however deep, large or malformed.
// Thread-safe (pure functions).
#pragma once

#include <cstdint>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace kiln::server {

// The recursion limit protobuf parses requests with (100).
int ProtobufRecursionLimit();

// What a request's bytes can parse to at most; see the header comment.
// Default: protobuf's recursion limit; 256 MiB (the config's
// max_parsed_request_size).
struct WireLimits {
  int max_depth = ProtobufRecursionLimit();
  int64_t max_parsed_bytes = int64_t{256} << 20;
};

struct WireScan {
  enum class End {
    kComplete,  // every byte read, within the limits
    kMalformed, // the bytes stop parsing at `scanned_bytes`
    kTooDeep,   // a message nested more than max_depth levels
    kTooLarge,  // the parsed size passed max_parsed_bytes
  };
  End end = End::kComplete;
  // How far the scan read (all of the bytes when kComplete).
  int64_t scanned_bytes = 0;
  // Message objects the parse of the scanned bytes makes (the top-level one
  // included), and the upper estimate of the bytes it allocates.
  int64_t messages = 0;
  int64_t parsed_bytes = 0;
  // The sub-message type met most often, and how often (null: none).
  const google::protobuf::Descriptor* commonest = nullptr;
  int64_t commonest_count = 0;
};

// Scans `bytes` as a `type` message. A field of the top-level message is
// level 1; groups count as messages, as protobuf counts them. Fields that are
// not in `type`'s schema are skipped and charged as protobuf keeps them (in
// the unknown-field set). The estimate errs high: a singular message field
// sent twice is charged twice, and repeated fields are charged for their
// capacity growth.
WireScan ScanWire(const google::protobuf::Descriptor& type, absl::string_view bytes,
                  const WireLimits& limits);

// Parses a `method` call's request bytes into `request` after ScanWire:
//  - RESOURCE_EXHAUSTED when the parse would allocate more than
//    limits.max_parsed_bytes (nothing is parsed);
//  - INVALID_ARGUMENT when the messages nest deeper than limits.max_depth,
//    or the bytes are not a `request` message (naming the byte where they
//    stop parsing, when the scan found it).
absl::Status ParseRequest(absl::string_view method, absl::string_view bytes,
                          const WireLimits& limits, google::protobuf::Message* request);

} // namespace kiln::server
