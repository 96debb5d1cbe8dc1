// Content-addressed blob files under one directory: each blob is named by the
// SHA-256 (lowercase hex) of its uncompressed bytes and lives at
// <root>/<first two hex digits>/<digest>.
//
// A blob file is a 32-byte header followed by the payload (the bytes, or
// their zstd frame):
//   0  magic "KLNB"        8  raw size (u64 LE)      24 XXH3-64 of the payload
//   4  format version (1)  16 payload size (u64 LE)    (seeded with XXH3 of the header)
//   5  flags (bit 0: zstd payload, bit 1: record, i.e. a manifest)
// The checksum proves only that the file is intact (a whole valid blob file
// copied under another blob's name passes it); the SHA-256 of the bytes
// against the name proves that they are the blob asked for. Get checks both
// by default (kFullHash); Put checks the name of what it writes, and a Put
// that finds the digest's file already there keeps it only when its bytes
// are the ones being put.
//
// Writes are crash-safe: temp file in <root>/tmp → write → fsync → read back
// and verify → rename onto the final name → fsync of the shard directory. A
// reader therefore sees either no file or a complete one; a crash leaves at
// most a temp file (removed by RemoveStaleTemps) or a complete blob that no
// index row names yet (an orphan; see the Cache's sweep).
//
// Thread- and process-safe: every method may run concurrently with any other,
// in this or another process. Two writers of one digest both succeed (the
// bytes are equal). BlobStore knows nothing of the index: deciding when a blob
// may be removed is the caller's job.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kiln::cache {

inline constexpr size_t kBlobHeaderSize = 32;

enum class Compression {
  kNone,
  // zstd, kept only where the frame is at least 1/8 smaller than the bytes.
  kZstd,
};

// What a read proves (costs measured in docs/benchmarks.md, "Read verification").
enum class ReadVerify {
  // XXH3-64 of the stored bytes (and zstd's own checks): the file is intact,
  // but not that it is the blob of this name.
  kChecksum,
  // Additionally the SHA-256 of the bytes against the digest (the blob's
  // name, its content address): the bytes are the ones asked for.
  kFullHash,
};

struct BlobStoreOptions {
  // fsync files and directories on Put. Off only for throwaway caches and
  // tests: a process crash still cannot tear a blob, a power loss can.
  bool sync = true;
  int zstd_level = 3;
};

// What a blob file's header says.
struct BlobInfo {
  std::string digest;
  uint64_t file_size = 0; // header + payload: what the blob costs on disk
  uint64_t raw_size = 0;  // the uncompressed bytes
  bool compressed = false;
  bool record = false; // a self-describing manifest (see manifest.h)
};

struct BlobPutResult {
  BlobInfo info;
  // This call wrote the file (false: a valid one was there already).
  bool created = false;
};

class BlobStore {
 public:
  BlobStore(std::string root, BlobStoreOptions options);

  const std::string& root() const { return root_; }
  // <root>/<digest[0..2)>/<digest>.
  std::string PathOf(std::string_view digest) const;

  // Stores `bytes` and returns their digest and header. An existing blob of
  // the same digest is kept when it holds exactly `bytes`, replaced otherwise.
  // Errors: kExhausted when the disk is full, kIo otherwise; nothing but a
  // temp file (removed before returning) is left behind on failure.
  absl::StatusOr<BlobPutResult> Put(std::string_view bytes, Compression compression,
                                    bool record = false);

  // The bytes of `digest`. `file_size_hint` (from the index; 0 if unknown)
  // saves an fstat. Errors: kNotFound when there is no such file, kCorrupt
  // when the header, checksum, zstd frame or (kFullHash) SHA-256 is wrong,
  // kIo for other read failures. InvalidArgument for a malformed digest.
  absl::StatusOr<std::string> Get(std::string_view digest,
                                  ReadVerify verify = ReadVerify::kFullHash,
                                  uint64_t file_size_hint = 0) const;

  // The header of `digest` (reads 32 bytes, verifies nothing else).
  absl::StatusOr<BlobInfo> Stat(std::string_view digest) const;
  bool Contains(std::string_view digest) const;

  // Unlinks the blob. kNotFound when it is not there.
  absl::Status Remove(std::string_view digest) const;

  // Calls `fn(digest)` for every blob file name on disk (no verification).
  absl::Status ForEach(const std::function<void(const std::string& digest)>& fn) const;

  // Removes temp files older than `min_age_seconds` (a crashed writer's);
  // returns how many.
  absl::StatusOr<int> RemoveStaleTemps(int64_t min_age_seconds) const;

  // Seconds since the blob file was last modified; kNotFound if absent.
  absl::StatusOr<int64_t> AgeSeconds(std::string_view digest) const;

 private:
  std::string root_;
  BlobStoreOptions options_;
};

// True for 64 lowercase hex digits.
bool IsValidDigest(std::string_view digest);

} // namespace kiln::cache
