#include "cache/filesystem_check.h"

#include <cerrno>

#include <sys/statvfs.h>
#include <sys/vfs.h>

#include "absl/strings/str_cat.h"
#include "cache/cache_error.h"

namespace kiln::cache {

std::optional<std::string> NetworkFilesystemName(int64_t statfs_magic) {
  // Values from linux/magic.h and the filesystems' sources (some are not in
  // the uapi header).
  struct Known {
    uint32_t magic;
    const char* name;
  };
  static constexpr Known kNetwork[] = {
      {0x6969, "nfs"},        {0x517B, "smb"},       {0xFF534D42, "cifs"},
      {0xFE534D42, "smb2"},   {0x65735546, "fuse"},  {0x73757245, "coda"},
      {0x5346414F, "afs"},    {0x6B414653, "kafs"},  {0x01021997, "9p"},
      {0x00C36400, "ceph"},   {0x01161970, "gfs2"},  {0x7461636F, "ocfs2"},
      {0x0BD00BD0, "lustre"}, {0x564C, "ncp"},       {0x47504653, "gpfs"},
      {0x013111A8, "ibrix"},  {0xAAD7AAEA, "panfs"}, {0x19830326, "fhgfs/beegfs"},
  };
  const auto magic = static_cast<uint32_t>(statfs_magic);
  for (const Known& k : kNetwork) {
    if (k.magic == magic) return std::string(k.name);
  }
  return std::nullopt;
}

absl::StatusOr<std::optional<std::string>> DetectNetworkFilesystem(const std::string& path) {
  struct statfs st {};
  if (statfs(path.c_str(), &st) != 0) return ErrnoError(errno, absl::StrCat("statfs ", path));
  return NetworkFilesystemName(static_cast<int64_t>(st.f_type));
}

absl::StatusOr<uint64_t> AvailableBytes(const std::string& path) {
  struct statvfs st {};
  if (statvfs(path.c_str(), &st) != 0) return ErrnoError(errno, absl::StrCat("statvfs ", path));
  return static_cast<uint64_t>(st.f_bavail) * static_cast<uint64_t>(st.f_frsize);
}

} // namespace kiln::cache
