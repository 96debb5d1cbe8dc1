// Translation of the API's request messages into the compile driver's
// inputs (and nothing else: no I/O, no state), so the gRPC adapter stays a
// thin shell and the rules are testable on their own.
//
// Bindings: a proto map has no order, so bindings are taken sorted by name;
// `config` entries (tunable overrides, e.g. a best config) come after them
// and win over a binding of the same name.
// Errors: InvalidArgument naming the field (no program, an empty binding
// value, a bad wire IR program with its path).
// Thread-safe (pure functions).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "compiler/driver/compile_driver.h"
#include "kiln/v1/service.pb.h"

namespace kiln::server {

absl::StatusOr<driver::ProgramInput>
ProgramFromProto(const kiln::v1::ProgramSource& source,
                 const google::protobuf::Map<std::string, kiln::v1::BindingValue>& config);

// The pass options of the tuning knobs among `source`'s bindings and
// `config` (driver::IsPassKnob: "kiln:split_k" = 4 is split-k=4) appended to
// `options` (after the request's own, so a knob wins; config after
// bindings); ProgramFromProto leaves knobs out of the bindings.
// InvalidArgument naming the entry for an unknown knob or value.
absl::Status AddKnobs(const kiln::v1::ProgramSource& source,
                      const google::protobuf::Map<std::string, kiln::v1::BindingValue>& config,
                      driver::BuildOptions* options);

// `target` empty means "cpu".
driver::BuildOptions OptionsFromProto(const std::string& target,
                                      const kiln::v1::CompileOptions& options);

absl::StatusOr<frontend::BindingValue> BindingFromProto(const std::string& name,
                                                        const kiln::v1::BindingValue& value);

} // namespace kiln::server
