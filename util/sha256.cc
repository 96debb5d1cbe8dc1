#include "util/sha256.h"

#include <openssl/evp.h>

namespace kiln::util {

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), EVP_sha256(), nullptr);
}

Sha256::~Sha256() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }

void Sha256::Update(std::string_view bytes) {
  EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), bytes.data(), bytes.size());
}

void Sha256::UpdateField(std::string_view bytes) {
  uint64_t n = bytes.size();
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(n >> (8 * i));
  EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), len, sizeof(len));
  Update(bytes);
}

std::array<uint8_t, 32> Sha256::Finish() {
  std::array<uint8_t, 32> out{};
  unsigned int size = 0;
  EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), out.data(), &size);
  return out;
}

std::string Sha256::FinishHex() {
  std::array<uint8_t, 32> digest = Finish();
  return ToHex(digest.data(), digest.size());
}

std::string ToHex(const uint8_t* data, size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex(size * 2, '0');
  for (size_t i = 0; i < size; ++i) {
    hex[2 * i] = kDigits[data[i] >> 4];
    hex[2 * i + 1] = kDigits[data[i] & 0xf];
  }
  return hex;
}

std::string Sha256Hex(std::string_view bytes) {
  Sha256 h;
  h.Update(bytes);
  return h.FinishHex();
}

} // namespace kiln::util
