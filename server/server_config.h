// Settings of one kilnd process. Defaults are the embedded single-node setup:
// loopback only, a local cache directory, devices discovered at start-up.
// Plain data; not synchronized.
#pragma once

#include <string>

namespace kiln::server {

struct ServerConfig {
  // host:port to listen on; port 0 picks a free port (printed at start-up).
  std::string listen_address = "127.0.0.1:7070";
  std::string cache_dir; // empty: $KILN_CACHE_DIR, else $HOME/.cache/kiln
};

// The cache directory to use for `config` (resolving the defaults above).
std::string ResolveCacheDir(const ServerConfig& config);

} // namespace kiln::server
