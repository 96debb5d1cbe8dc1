// SHA-256 over bytes (OpenSSL libcrypto), as raw bytes or lowercase hex.
// Thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::util {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(std::string_view bytes);
  // Appends a length-prefixed field, so that ("ab","c") and ("a","bc") differ.
  void UpdateField(std::string_view bytes);
  std::array<uint8_t, 32> Finish();
  std::string FinishHex();

 private:
  void* ctx_;
};

std::string Sha256Hex(std::string_view bytes);
std::string ToHex(const uint8_t* data, size_t size);

} // namespace kiln::util
