#include "server/server_config.h"

#include <cstdlib>

namespace kiln::server {

std::string ResolveCacheDir(const ServerConfig& config) {
  if (!config.cache_dir.empty()) return config.cache_dir;
  if (const char* env = std::getenv("KILN_CACHE_DIR"); env != nullptr && *env != '\0') return env;
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return std::string(home) + "/.cache/kiln";
  }
  return "/tmp/kiln-cache";
}

} // namespace kiln::server
