#include "util/file_path.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace kiln::util {
namespace {

std::string Quote(const std::string& path) { return absl::StrCat("'", path, "'"); }

// "a/b//" -> "a/b"; "/" stays "/".
std::string StripTrailingSlashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

absl::StatusCode CodeOf(int err) {
  switch (err) {
  case EACCES:
  case EPERM:
  case EROFS:
    return absl::StatusCode::kPermissionDenied;
  case ENOSPC:
  case EDQUOT:
    return absl::StatusCode::kResourceExhausted;
  case ENOTDIR:
  case EISDIR:
  case EEXIST:
    return absl::StatusCode::kFailedPrecondition;
  default:
    return absl::StatusCode::kInternal;
  }
}

bool IsPermissionError(int err) { return err == EACCES || err == EPERM || err == EROFS; }

absl::Status Error(int err, const std::string& message) {
  return absl::Status(CodeOf(err), message);
}

// The same code with `prefix` before the message.
absl::Status Prefixed(const absl::Status& s, const std::string& prefix) {
  return absl::Status(s.code(), absl::StrCat(prefix, s.message()));
}

bool IsFolder(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Makes `dir` a folder (mkdir -p). The message says which component is in
// the way and why, without naming the operation (the caller's prefix does).
absl::Status CreateFolders(const std::string& dir_in) {
  const std::string dir = StripTrailingSlashes(dir_in.empty() ? "." : dir_in);
  struct stat st;
  if (::stat(dir.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return absl::OkStatus();
    return Error(ENOTDIR, absl::StrCat(Quote(dir), " exists and is not a folder"));
  }
  if (errno != ENOENT && errno != ENOTDIR) {
    const int err = errno;
    return Error(err,
                 absl::StrCat("cannot reach folder ", Quote(dir), " (", std::strerror(err), ")"));
  }
  // A missing folder: its parent first. "." and "/" always exist, so the
  // recursion ends.
  const std::string parent = ParentFolder(dir);
  if (parent != dir) {
    if (absl::Status s = CreateFolders(parent); !s.ok()) return s;
  }
  if (::mkdir(dir.c_str(), 0777) == 0) return absl::OkStatus();
  const int err = errno;
  if (err == EEXIST) {
    // Made by a concurrent writer, or a file (or a dangling link) is there.
    if (IsFolder(dir)) return absl::OkStatus();
    return Error(ENOTDIR, absl::StrCat(Quote(dir), " exists and is not a folder"));
  }
  if (IsPermissionError(err)) {
    return Error(
        err, absl::StrCat("folder ", Quote(parent), " is not writable (", std::strerror(err), ")"));
  }
  return Error(err,
               absl::StrCat("cannot create folder ", Quote(dir), " (", std::strerror(err), ")"));
}

// A new, empty, uniquely named file in `folder` beside `base`, open for
// writing; its path is returned in `tmp`.
absl::StatusOr<int> CreateTempFile(const std::string& folder, const std::string& base,
                                   std::string* tmp) {
  thread_local std::mt19937_64 rng(std::random_device{}());
  for (int attempt = 0;; ++attempt) {
    *tmp = absl::StrCat(folder, "/.", base, ".tmp-", getpid(), "-",
                        absl::Hex(rng(), absl::kZeroPad16));
    const int fd = ::open(tmp->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) return fd;
    const int err = errno;
    if (err == EEXIST && attempt < 16) continue;
    if (IsPermissionError(err)) {
      return Error(err, absl::StrCat("folder ", Quote(folder), " is not writable (",
                                     std::strerror(err), ")"));
    }
    return Error(err, absl::StrCat("cannot create a file in folder ", Quote(folder), " (",
                                   std::strerror(err), ")"));
  }
}

// The checks shared by PrepareOutputFile and WriteFileAtomically: a usable
// name, its folder made, and not a folder itself. Sets `folder` and `base`.
absl::Status CheckOutputPath(const std::string& path, std::string* folder, std::string* base) {
  if (path.empty()) return absl::InvalidArgumentError("an empty file name");
  if (path.back() == '/') {
    return absl::FailedPreconditionError("the name ends in '/', which makes it a folder");
  }
  *folder = ParentFolder(path);
  *base = path.substr(path.rfind('/') + 1); // npos + 1 == 0: the whole bare name
  if (absl::Status s = CreateFolders(*folder); !s.ok()) return s;
  if (IsFolder(path)) return absl::FailedPreconditionError("it is a folder");
  return absl::OkStatus();
}

// Whether `path` exists and is neither a regular file nor a folder: a
// device (/dev/null, /dev/stdout), a FIFO or a socket. Such a target is
// written in place: renaming a file over it would replace the device.
bool IsSpecialFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

absl::Status WriteAll(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error(errno, std::strerror(errno));
    }
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

} // namespace

std::string HomeDirectory() {
  if (const char* home = std::getenv("HOME"); home != nullptr && home[0] != '\0') return home;
  long size = sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buffer(size > 0 ? static_cast<size_t>(size) : 16384);
  struct passwd entry;
  struct passwd* found = nullptr;
  if (getpwuid_r(getuid(), &entry, buffer.data(), buffer.size(), &found) == 0 && found != nullptr &&
      found->pw_dir != nullptr) {
    return found->pw_dir;
  }
  return "";
}

std::string ExpandHome(const std::string& path, const std::string& home) {
  if (home.empty() || path.empty() || path[0] != '~') return path;
  if (path.size() > 1 && path[1] != '/') return path; // ~user
  return StripTrailingSlashes(home) + (home == "/" ? path.substr(2) : path.substr(1));
}

std::string ExpandHome(const std::string& path) {
  if (path.empty() || path[0] != '~') return path;
  return ExpandHome(path, HomeDirectory());
}

std::string ParentFolder(const std::string& path) {
  const std::string p = StripTrailingSlashes(path);
  const size_t slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return StripTrailingSlashes(p.substr(0, slash));
}

absl::Status EnsureDirectory(const std::string& dir) {
  if (dir.empty()) return absl::InvalidArgumentError("an empty folder name");
  if (absl::Status s = CreateFolders(dir); !s.ok()) {
    return Prefixed(s, absl::StrCat("cannot create folder ", Quote(dir), ": "));
  }
  return absl::OkStatus();
}

absl::Status PrepareOutputFile(const std::string& path) {
  const std::string prefix = absl::StrCat("cannot write ", Quote(path), ": ");
  std::string folder, base, tmp;
  if (absl::Status s = CheckOutputPath(path, &folder, &base); !s.ok()) return Prefixed(s, prefix);
  if (IsSpecialFile(path)) {
    if (::access(path.c_str(), W_OK) == 0) return absl::OkStatus();
    const int err = errno;
    return Prefixed(Error(err, std::strerror(err)), prefix);
  }
  absl::StatusOr<int> fd = CreateTempFile(folder, base, &tmp);
  if (!fd.ok()) return Prefixed(fd.status(), prefix);
  ::close(*fd);
  ::unlink(tmp.c_str());
  return absl::OkStatus();
}

absl::Status WriteFileAtomically(const std::string& path, const std::string& bytes) {
  const std::string prefix = absl::StrCat("cannot write ", Quote(path), ": ");
  std::string folder, base, tmp;
  if (absl::Status s = CheckOutputPath(path, &folder, &base); !s.ok()) return Prefixed(s, prefix);
  if (IsSpecialFile(path)) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return Prefixed(Error(errno, std::strerror(errno)), prefix);
    absl::Status s = WriteAll(fd, bytes);
    if (::close(fd) != 0 && s.ok()) s = Error(errno, std::strerror(errno));
    return s.ok() ? s : Prefixed(s, prefix);
  }
  absl::StatusOr<int> fd = CreateTempFile(folder, base, &tmp);
  if (!fd.ok()) return Prefixed(fd.status(), prefix);
  absl::Status s = WriteAll(*fd, bytes);
  if (s.ok() && ::fsync(*fd) != 0) s = Error(errno, std::strerror(errno));
  if (::close(*fd) != 0 && s.ok()) s = Error(errno, std::strerror(errno));
  if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    s = Error(err,
              absl::StrCat("cannot rename ", Quote(tmp), " onto it (", std::strerror(err), ")"));
  }
  if (!s.ok()) {
    ::unlink(tmp.c_str());
    return Prefixed(s, prefix);
  }
  return absl::OkStatus();
}

} // namespace kiln::util
