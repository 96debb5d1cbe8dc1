#include "util/utf8.h"

#include <cstdint>

namespace kiln::util {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD"; // U+FFFD

// Scans the sequence starting at text[at]. Returns its length in bytes and
// sets `valid`. An ill-formed sequence's length is its maximal subpart: the
// lead byte plus the continuation bytes that could still have completed it.
size_t ScanSequence(std::string_view text, size_t at, bool& valid) {
  const auto lead = static_cast<uint8_t>(text[at]);
  valid = false;
  if (lead < 0x80) {
    valid = true;
    return 1;
  }
  size_t length = 0;
  // Allowed range of the first continuation byte (Unicode table 3-7).
  uint8_t low = 0x80;
  uint8_t high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;  // no overlong forms
    if (lead == 0xED) high = 0x9F; // no surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;  // no overlong forms
    if (lead == 0xF4) high = 0x8F; // nothing above U+10FFFF
  } else {
    return 1; // a stray continuation byte, C0/C1, or F5..FF
  }
  size_t i = 1;
  for (; i < length; ++i) {
    if (at + i >= text.size()) return i;
    const auto byte = static_cast<uint8_t>(text[at + i]);
    if (byte < low || byte > high) return i;
    low = 0x80;
    high = 0xBF;
  }
  valid = true;
  return length;
}

} // namespace

bool IsValidUtf8(std::string_view text) {
  for (size_t at = 0; at < text.size();) {
    bool valid = false;
    at += ScanSequence(text, at, valid);
    if (!valid) return false;
  }
  return true;
}

void AppendValidUtf8(std::string& out, std::string_view text) {
  size_t run_start = 0; // start of the pending run of valid bytes
  for (size_t at = 0; at < text.size();) {
    bool valid = false;
    const size_t length = ScanSequence(text, at, valid);
    if (!valid) {
      out.append(text.substr(run_start, at - run_start));
      out.append(kReplacement);
      run_start = at + length;
    }
    at += length;
  }
  out.append(text.substr(run_start));
}

std::string ToValidUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  AppendValidUtf8(out, text);
  return out;
}

} // namespace kiln::util
