// UTF-8 validation and repair for text that must be valid UTF-8 on the way
// out (JSON log lines, Prometheus label values) but may come from anywhere.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace kiln::util {

// True if `text` is well-formed UTF-8 (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF).
bool IsValidUtf8(std::string_view text);

// Appends `text` to `out`, replacing each ill-formed sequence with U+FFFD
// (one replacement per maximal ill-formed subpart, as Unicode recommends).
void AppendValidUtf8(std::string& out, std::string_view text);

// `text` with ill-formed sequences replaced by U+FFFD.
std::string ToValidUtf8(std::string_view text);

} // namespace kiln::util
