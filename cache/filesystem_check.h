// Detects cache directories on network or FUSE filesystems, where SQLite's
// WAL locking (shared memory) and rename atomicity are not to be relied on.
// The cache then still works but warns (Cache::warnings()). Also: the space
// left on a cache directory's filesystem.
// Thread-safe (pure functions).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace kiln::cache {

// "nfs", "cifs", "smb2", "fuse", ... for a statfs f_type that names a network
// or userspace filesystem; nullopt for local ones.
std::optional<std::string> NetworkFilesystemName(int64_t statfs_magic);

// The network filesystem `path` is on, if any. kIo when statfs fails.
absl::StatusOr<std::optional<std::string>> DetectNetworkFilesystem(const std::string& path);

// Bytes an unprivileged process may still write on the filesystem of `path`
// (statvfs f_bavail * f_frsize). kIo when statvfs fails.
absl::StatusOr<uint64_t> AvailableBytes(const std::string& path);

} // namespace kiln::cache
