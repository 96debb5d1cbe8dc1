#include "cache/blob_store.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <utility>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <xxh_x86dispatch.h>
#include <xxhash.h>

#include "absl/strings/str_cat.h"
#include "cache/cache_error.h"
#include "cache/zstd_codec.h"
#include "util/sha256.h"

namespace kiln::cache {
namespace {

constexpr char kMagic[4] = {'K', 'L', 'N', 'B'};
constexpr uint8_t kFormatVersion = 1;
constexpr uint8_t kFlagZstd = 1;
constexpr uint8_t kFlagRecord = 2;
constexpr size_t kChecksumOffset = 24;

void PutU64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint64_t GetU64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// XXH3-64 of the payload, seeded with the XXH3 of the header's first 24
// bytes. The dispatching entry point picks AVX2/AVX-512 at run time.
uint64_t Checksum(const uint8_t* header, std::string_view payload) {
  const uint64_t seed = XXH3_64bits_dispatch(header, kChecksumOffset);
  return XXH3_64bits_withSeed_dispatch(payload.data(), payload.size(), seed);
}

void EncodeHeader(uint8_t* header, uint8_t flags, uint64_t raw_size, std::string_view payload) {
  std::memset(header, 0, kBlobHeaderSize);
  std::memcpy(header, kMagic, 4);
  header[4] = kFormatVersion;
  header[5] = flags;
  PutU64(header + 8, raw_size);
  PutU64(header + 16, payload.size());
  PutU64(header + kChecksumOffset, Checksum(header, payload));
}

struct Header {
  uint8_t flags = 0;
  uint64_t raw_size = 0;
  uint64_t payload_size = 0;
  uint64_t checksum = 0;
};

absl::StatusOr<Header> DecodeHeader(const uint8_t* header, std::string_view digest) {
  if (std::memcmp(header, kMagic, 4) != 0 || header[4] != kFormatVersion ||
      (header[5] & ~(kFlagZstd | kFlagRecord)) != 0) {
    return MakeError(CacheError::kCorrupt, absl::StrCat("blob ", AsAbsl(digest), ": bad header"));
  }
  Header h;
  h.flags = header[5];
  h.raw_size = GetU64(header + 8);
  h.payload_size = GetU64(header + 16);
  h.checksum = GetU64(header + kChecksumOffset);
  if ((h.flags & kFlagZstd) == 0 && h.raw_size != h.payload_size) {
    return MakeError(CacheError::kCorrupt,
                     absl::StrCat("blob ", AsAbsl(digest), ": bad header sizes"));
  }
  return h;
}

// Closes on scope exit.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

absl::Status WriteAll(int fd, const uint8_t* header, std::string_view payload,
                      const std::string& path) {
  iovec iov[2] = {{const_cast<uint8_t*>(header), kBlobHeaderSize},
                  {const_cast<char*>(payload.data()), payload.size()}};
  int first = 0;
  while (first < 2) {
    const ssize_t n = writev(fd, iov + first, 2 - first);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, absl::StrCat("write ", path));
    }
    size_t left = static_cast<size_t>(n);
    while (first < 2 && left >= iov[first].iov_len) {
      left -= iov[first].iov_len;
      ++first;
    }
    if (first < 2) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
      iov[first].iov_len -= left;
    }
  }
  return absl::OkStatus();
}

// Reads exactly header + payload.size() bytes from offset 0.
absl::Status ReadAll(int fd, uint8_t* header, std::string& payload, std::string_view digest) {
  iovec iov[2] = {{header, kBlobHeaderSize}, {payload.data(), payload.size()}};
  int first = 0;
  off_t offset = 0;
  while (first < 2) {
    const ssize_t n = preadv(fd, iov + first, 2 - first, offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, absl::StrCat("read blob ", AsAbsl(digest)));
    }
    if (n == 0) {
      return MakeError(CacheError::kCorrupt, absl::StrCat("blob ", AsAbsl(digest), ": truncated"));
    }
    offset += n;
    size_t left = static_cast<size_t>(n);
    while (first < 2 && left >= iov[first].iov_len) {
      left -= iov[first].iov_len;
      ++first;
    }
    if (first < 2) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
      iov[first].iov_len -= left;
    }
  }
  return absl::OkStatus();
}

absl::Status FsyncDir(const std::string& dir) {
  Fd fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) return ErrnoError(errno, absl::StrCat("open ", dir));
  if (fsync(fd.get()) != 0) return ErrnoError(errno, absl::StrCat("fsync ", dir));
  return absl::OkStatus();
}

absl::Status EnsureDir(const std::string& dir) {
  if (mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST) return absl::OkStatus();
  return ErrnoError(errno, absl::StrCat("mkdir ", dir));
}

std::string TempName() {
  static std::atomic<uint64_t> counter{0};
  const uint64_t n = counter.fetch_add(1, std::memory_order_relaxed);
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return absl::StrCat(getpid(), ".", n, ".", ts.tv_nsec, ".tmp");
}

// Validates a whole blob held in memory (header + payload as read back).
absl::Status CheckPayload(const uint8_t* header, const Header& h, std::string_view payload,
                          std::string_view digest) {
  if (payload.size() != h.payload_size || Checksum(header, payload) != h.checksum) {
    return MakeError(CacheError::kCorrupt,
                     absl::StrCat("blob ", AsAbsl(digest), ": checksum mismatch"));
  }
  return absl::OkStatus();
}

} // namespace

bool IsValidDigest(std::string_view digest) {
  if (digest.size() != 64) return false;
  for (char c : digest) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

BlobStore::BlobStore(std::string root, BlobStoreOptions options)
    : root_(std::move(root)), options_(options) {}

std::string BlobStore::PathOf(std::string_view digest) const {
  return absl::StrCat(root_, "/", AsAbsl(digest.substr(0, 2)), "/", AsAbsl(digest));
}

absl::StatusOr<BlobPutResult> BlobStore::Put(std::string_view bytes, Compression compression,
                                             bool record) {
  BlobPutResult result;
  result.info.digest = util::Sha256Hex(bytes);
  result.info.raw_size = bytes.size();
  result.info.record = record;
  const std::string& digest = result.info.digest;
  const std::string final_path = PathOf(digest);

  // Deduplicate: this digest's file already holds these bytes. Comparing the
  // bytes (not only the checksum) keeps a valid blob file that was copied
  // under this name from standing in for them.
  if (absl::StatusOr<std::string> existing = Get(digest, ReadVerify::kChecksum);
      existing.ok() && *existing == bytes) {
    absl::StatusOr<BlobInfo> info = Stat(digest);
    if (info.ok() && info->record == record) {
      result.info = *std::move(info);
      return result;
    }
  }

  std::string compressed;
  std::string_view payload = bytes;
  uint8_t flags = record ? kFlagRecord : 0;
  if (compression == Compression::kZstd && bytes.size() >= 64) {
    absl::StatusOr<std::string> z = ZstdCompress(bytes, options_.zstd_level);
    if (!z.ok()) return z.status();
    if (z->size() <= bytes.size() - bytes.size() / 8) {
      // Verify the frame before trusting it with the only copy.
      absl::StatusOr<std::string> back = ZstdDecompress(*z, bytes.size());
      if (!back.ok() || *back != bytes) {
        return absl::InternalError(
            absl::StrCat("blob ", AsAbsl(digest), ": zstd round trip failed"));
      }
      compressed = *std::move(z);
      payload = compressed;
      flags |= kFlagZstd;
    }
  }
  uint8_t header[kBlobHeaderSize];
  EncodeHeader(header, flags, bytes.size(), payload);

  const std::string tmp_dir = root_ + "/tmp";
  if (absl::Status s = EnsureDir(root_); !s.ok()) return s;
  if (absl::Status s = EnsureDir(tmp_dir); !s.ok()) return s;
  const std::string shard_dir = absl::StrCat(root_, "/", AsAbsl(digest.substr(0, 2)));
  if (absl::Status s = EnsureDir(shard_dir); !s.ok()) return s;

  const std::string tmp_path =
      absl::StrCat(tmp_dir, "/", AsAbsl(digest.substr(0, 16)), ".", TempName());
  Fd fd(open(tmp_path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (fd.get() < 0) return ErrnoError(errno, absl::StrCat("create ", tmp_path));
  auto fail = [&](absl::Status s) {
    unlink(tmp_path.c_str());
    return s;
  };
  if (absl::Status s = WriteAll(fd.get(), header, payload, tmp_path); !s.ok()) return fail(s);
  if (options_.sync && fsync(fd.get()) != 0) {
    return fail(ErrnoError(errno, absl::StrCat("fsync ", tmp_path)));
  }
  // Read back what the file now holds and verify it before publishing it.
  {
    uint8_t back_header[kBlobHeaderSize];
    std::string back(payload.size(), '\0');
    if (absl::Status s = ReadAll(fd.get(), back_header, back, digest); !s.ok()) return fail(s);
    if (std::memcmp(back_header, header, kBlobHeaderSize) != 0 ||
        Checksum(back_header, back) != GetU64(header + kChecksumOffset)) {
      return fail(MakeError(CacheError::kIo, absl::StrCat("blob ", AsAbsl(digest),
                                                          ": read-back verification failed")));
    }
  }
  if (rename(tmp_path.c_str(), final_path.c_str()) != 0) {
    return fail(ErrnoError(errno, absl::StrCat("rename ", tmp_path, " to ", final_path)));
  }
  if (options_.sync) {
    if (absl::Status s = FsyncDir(shard_dir); !s.ok()) return s;
  }
  result.info.file_size = kBlobHeaderSize + payload.size();
  result.info.compressed = (flags & kFlagZstd) != 0;
  result.created = true;
  return result;
}

absl::StatusOr<std::string> BlobStore::Get(std::string_view digest, ReadVerify verify,
                                           uint64_t file_size_hint) const {
  if (!IsValidDigest(digest)) {
    return absl::InvalidArgumentError(absl::StrCat("not a blob digest: '", AsAbsl(digest), "'"));
  }
  const std::string path = PathOf(digest);
  Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) {
      return MakeError(CacheError::kNotFound, absl::StrCat("blob ", AsAbsl(digest), " not found"));
    }
    return ErrnoError(errno, absl::StrCat("open ", path));
  }
  uint64_t size = file_size_hint;
  if (size == 0) {
    struct stat st {};
    if (fstat(fd.get(), &st) != 0) return ErrnoError(errno, absl::StrCat("fstat ", path));
    size = static_cast<uint64_t>(st.st_size);
  }
  if (size < kBlobHeaderSize) {
    return MakeError(CacheError::kCorrupt, absl::StrCat("blob ", AsAbsl(digest), ": truncated"));
  }
  uint8_t header[kBlobHeaderSize];
  std::string payload(size - kBlobHeaderSize, '\0');
  if (absl::Status s = ReadAll(fd.get(), header, payload, digest); !s.ok()) return s;
  absl::StatusOr<Header> h = DecodeHeader(header, digest);
  if (!h.ok()) return h.status();
  if (h->payload_size != payload.size()) {
    if (file_size_hint != 0) return Get(digest, verify, 0); // the hint was stale
    return MakeError(CacheError::kCorrupt,
                     absl::StrCat("blob ", AsAbsl(digest), ": size mismatch"));
  }
  if (absl::Status s = CheckPayload(header, *h, payload, digest); !s.ok()) return s;
  std::string bytes;
  if ((h->flags & kFlagZstd) != 0) {
    absl::StatusOr<std::string> raw = ZstdDecompress(payload, h->raw_size);
    if (!raw.ok()) {
      return MakeError(CacheError::kCorrupt,
                       absl::StrCat("blob ", AsAbsl(digest), ": ", raw.status().message()));
    }
    bytes = *std::move(raw);
  } else {
    bytes = std::move(payload);
  }
  if (verify == ReadVerify::kFullHash && util::Sha256Hex(bytes) != digest) {
    return MakeError(CacheError::kCorrupt,
                     absl::StrCat("blob ", AsAbsl(digest), ": SHA-256 mismatch"));
  }
  return bytes;
}

absl::StatusOr<BlobInfo> BlobStore::Stat(std::string_view digest) const {
  if (!IsValidDigest(digest)) {
    return absl::InvalidArgumentError(absl::StrCat("not a blob digest: '", AsAbsl(digest), "'"));
  }
  const std::string path = PathOf(digest);
  Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) {
      return MakeError(CacheError::kNotFound, absl::StrCat("blob ", AsAbsl(digest), " not found"));
    }
    return ErrnoError(errno, absl::StrCat("open ", path));
  }
  uint8_t header[kBlobHeaderSize];
  ssize_t n = pread(fd.get(), header, kBlobHeaderSize, 0);
  if (n != static_cast<ssize_t>(kBlobHeaderSize)) {
    if (n < 0) return ErrnoError(errno, absl::StrCat("read ", path));
    return MakeError(CacheError::kCorrupt, absl::StrCat("blob ", AsAbsl(digest), ": truncated"));
  }
  absl::StatusOr<Header> h = DecodeHeader(header, digest);
  if (!h.ok()) return h.status();
  BlobInfo info;
  info.digest = std::string(digest);
  info.file_size = kBlobHeaderSize + h->payload_size;
  info.raw_size = h->raw_size;
  info.compressed = (h->flags & kFlagZstd) != 0;
  info.record = (h->flags & kFlagRecord) != 0;
  return info;
}

bool BlobStore::Contains(std::string_view digest) const {
  if (!IsValidDigest(digest)) return false;
  return access(PathOf(digest).c_str(), F_OK) == 0;
}

absl::Status BlobStore::Remove(std::string_view digest) const {
  if (!IsValidDigest(digest)) {
    return absl::InvalidArgumentError(absl::StrCat("not a blob digest: '", AsAbsl(digest), "'"));
  }
  const std::string path = PathOf(digest);
  if (unlink(path.c_str()) != 0) {
    if (errno == ENOENT) {
      return MakeError(CacheError::kNotFound, absl::StrCat("blob ", AsAbsl(digest), " not found"));
    }
    return ErrnoError(errno, absl::StrCat("unlink ", path));
  }
  return absl::OkStatus();
}

absl::Status BlobStore::ForEach(const std::function<void(const std::string&)>& fn) const {
  static constexpr char kHex[] = "0123456789abcdef";
  for (int i = 0; i < 256; ++i) {
    const char shard[3] = {kHex[i >> 4], kHex[i & 15], '\0'};
    const std::string dir = absl::StrCat(root_, "/", shard);
    DIR* d = opendir(dir.c_str());
    if (d == nullptr) {
      if (errno == ENOENT) continue;
      return ErrnoError(errno, absl::StrCat("opendir ", dir));
    }
    while (dirent* e = readdir(d)) {
      std::string_view name(e->d_name);
      if (IsValidDigest(name) && name.substr(0, 2) == shard) fn(std::string(name));
    }
    closedir(d);
  }
  return absl::OkStatus();
}

absl::StatusOr<int> BlobStore::RemoveStaleTemps(int64_t min_age_seconds) const {
  const std::string dir = root_ + "/tmp";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) {
    if (errno == ENOENT) return 0;
    return ErrnoError(errno, absl::StrCat("opendir ", dir));
  }
  const time_t now = time(nullptr);
  int removed = 0;
  while (dirent* e = readdir(d)) {
    std::string_view name(e->d_name);
    if (name == "." || name == "..") continue;
    const std::string path = absl::StrCat(dir, "/", AsAbsl(name));
    struct stat st {};
    if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (now - st.st_mtime < min_age_seconds) continue;
    if (unlink(path.c_str()) == 0) ++removed;
  }
  closedir(d);
  return removed;
}

absl::StatusOr<int64_t> BlobStore::AgeSeconds(std::string_view digest) const {
  struct stat st {};
  if (stat(PathOf(digest).c_str(), &st) != 0) {
    if (errno == ENOENT) {
      return MakeError(CacheError::kNotFound, absl::StrCat("blob ", AsAbsl(digest), " not found"));
    }
    return ErrnoError(errno, absl::StrCat("stat blob ", AsAbsl(digest)));
  }
  return static_cast<int64_t>(time(nullptr) - st.st_mtime);
}

} // namespace kiln::cache
