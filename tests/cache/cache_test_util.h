// Helpers shared by the cache tests: deterministic artifacts whose bytes can
// be recomputed from their key (so any reader can check what it got), and
// byte flipping for corruption tests.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>

#include "cache/records.h"
#include "util/sha256.h"

namespace kiln::cache::testing {

// `size` pseudo-random bytes determined by `seed`.
inline std::string Bytes(const std::string& seed, size_t size) {
  std::string out;
  out.reserve(size + 32);
  uint64_t x = 0x9E3779B97F4A7C15ULL;
  for (char c : seed) x = (x ^ static_cast<unsigned char>(c)) * 0x100000001B3ULL;
  while (out.size() < size) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    for (int i = 0; i < 8 && out.size() < size; ++i) out.push_back(static_cast<char>(x >> (8 * i)));
  }
  return out;
}

// Text that compresses like PTX does.
inline std::string Text(const std::string& seed, size_t size) {
  std::string out;
  int i = 0;
  while (out.size() < size) {
    out += "  ld.global.f32 %f" + std::to_string(i % 97) + ", [%rd" + std::to_string(i % 13) + "+" +
           std::to_string((i * 4) % 512) + "]; // " + seed + "\n";
    ++i;
  }
  out.resize(size);
  return out;
}

// The artifact a test stores under `key`: its bytes follow from the key.
inline Artifact MakeArtifact(const std::string& key, size_t cubin_size = 4096,
                             size_t ptx_size = 2048) {
  Artifact a;
  a.target = "cuda:sm_90";
  a.toolchain_fingerprint = "kiln-test nvrtc-13.0";
  a.launch_json = R"({"symbol": "kiln_kernel", "grid": [1, 1, 1], "block": [128, 1, 1], "key": ")" +
                  key + "\"}";
  a.timings = {{"frontend", 0.001}, {"nvrtc", 0.25}};
  a.files.push_back({"cubin", Bytes(key + "/cubin", cubin_size), "", 0});
  if (ptx_size > 0) a.files.push_back({"ptx", Text(key, ptx_size), "", 0});
  return a;
}

// True when `got` is exactly what MakeArtifact(key, ...) stored.
inline bool MatchesKey(const Artifact& got, const std::string& key, size_t cubin_size = 4096,
                       size_t ptx_size = 2048) {
  const Artifact want = MakeArtifact(key, cubin_size, ptx_size);
  if (got.files.size() != want.files.size() || got.launch_json != want.launch_json ||
      got.target != want.target) {
    return false;
  }
  for (size_t i = 0; i < want.files.size(); ++i) {
    const ArtifactFile* f = nullptr;
    for (const ArtifactFile& g : got.files) {
      if (g.kind == want.files[i].kind) f = &g;
    }
    if (f == nullptr || f->bytes != want.files[i].bytes ||
        f->digest != util::Sha256Hex(want.files[i].bytes)) {
      return false;
    }
  }
  return true;
}

// Flips the bits of the byte at `offset` (from the end when negative).
inline bool FlipByte(const std::string& path, int64_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  if (!f) return false;
  f.seekg(0, std::ios::end);
  const int64_t size = f.tellg();
  const int64_t at = offset < 0 ? size + offset : offset;
  if (at < 0 || at >= size) return false;
  f.seekg(at);
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(~c);
  f.seekp(at);
  f.write(&c, 1);
  return static_cast<bool>(f);
}

} // namespace kiln::cache::testing
