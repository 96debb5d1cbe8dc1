// The machine-readable output of every `kiln` command (--json), made in one
// place so that every command prints the same shapes (docs/tools.md, "JSON
// output"):
//
//  - MessageJson: a protobuf message as plain JSON. Proto field names, enums
//    by name, every field without presence printed (0, "", false, [] and {}
//    included, so a reader never has to guess a default), a message or oneof
//    field only when set. Unlike protobuf's own printer (which writes 64-bit
//    integers as strings, for JavaScript), int64 / uint64 fields are JSON
//    numbers, and a BindingValue (a binding or a config value) is its plain
//    value: {"block_M": 128}, not {"block_M": {"int_value": "128"}}.
//  - ErrorJson: the object a failed command prints on stdout under --json,
//    with its nonzero exit code (stderr keeps the human message):
//      {"error": {"code": "INVALID_ARGUMENT", "message": "...",
//                 "diagnostics": [{"file": "gemm.py", "line": 7, "col": 9,
//                                  "message": "..."}]}}
//    The diagnostics are the "file:line:col: message" lines of the message
//    (how the compiler's located errors travel, compiler/ir/diagnostic.h);
//    [] when it has none.
//
// Objects keep their insertion order (proto field order for messages, map
// entries sorted by key). Thread-safe (pure functions).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"
#include "kiln/v1/service.pb.h"

namespace kiln::cli {

using OrderedJson = nlohmann::ordered_json;

OrderedJson MessageJson(const google::protobuf::Message& message);

// 128, 1.5, true or "text"; null for an empty value.
OrderedJson BindingJson(const kiln::v1::BindingValue& value);

struct DiagnosticLocation {
  std::string file;
  int line = 0;
  int col = 0;
  std::string message;
};

// The "file:line:col: message" lines of `text`, in order (the file is the
// word before the first ":LINE:COL: " of a line).
std::vector<DiagnosticLocation> ParseDiagnostics(absl::string_view text);

// {"error": {"code", "message", "diagnostics"}} for a failed `status`
// (code UNKNOWN for an OK one, which no caller should pass).
OrderedJson ErrorJson(const absl::Status& status);

// ErrorJson(status) as one line, newline-terminated.
std::string ErrorJsonLine(const absl::Status& status);

// `j` as text (`indent` < 0: one line). Bytes that are not UTF-8 (a
// compiler message quoting a source line, a file name) become U+FFFD instead
// of failing the dump.
std::string Dump(const OrderedJson& j, int indent = -1);

// Whether `args` asks for --json (a command's arguments, before parsing:
// lets a usage error answer in JSON too).
bool WantsJson(const std::vector<std::string>& args);

} // namespace kiln::cli
