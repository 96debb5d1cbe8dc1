// A fresh private directory under $TMPDIR (default /tmp), removed with
// everything in it when the object goes away. Move-only. Thread-safe in the
// sense that every instance owns a distinct directory (mkdtemp).
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"

namespace kiln::util {

class TempDir {
 public:
  // `prefix` names the directory ("kiln-nvcc" -> /tmp/kiln-nvcc-Ab12Cd).
  // Internal error with the path when it cannot be created.
  static absl::StatusOr<TempDir> Create(std::string_view prefix);

  TempDir(TempDir&& other) noexcept;
  TempDir& operator=(TempDir&&) = delete;
  TempDir(const TempDir&) = delete;
  ~TempDir();

  const std::string& path() const { return path_; }

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

} // namespace kiln::util
