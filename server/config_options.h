// The table of kilnd's settings: one entry per setting, from which the YAML
// key, the flag, the environment variable and the --help text all derive
// (server_config.h describes the rules). Immutable after first use;
// thread-safe.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "server/server_config.h"

namespace kiln::server {

struct ConfigOption {
  std::string_view key;        // YAML path: "cache.max_size"
  std::string_view value_name; // in --help: "SIZE"
  std::string_view help;
  bool is_bool = false;          // a bare --flag means true
  std::string_view default_text; // --help's default when not the formatted default
  // Sets the option from its text form; the error says what was expected.
  std::function<absl::Status(std::string_view text, ServerConfig& config)> parse;
  // The option's value in the text form `parse` reads.
  std::function<std::string(const ServerConfig& config)> format;

  std::string flag() const; // "--cache-max-size"
  std::string env() const;  // "KILN_CACHE_MAX_SIZE"
};

// Every option, in --help order: options without a section first, then
// each section's options together.
const std::vector<ConfigOption>& ServerConfigOptions();

} // namespace kiln::server
