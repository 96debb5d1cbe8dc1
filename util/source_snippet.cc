#include "util/source_snippet.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "util/utf8.h"

namespace kiln::util {
namespace {

// The widest quoted line, in bytes of the source; longer lines show a window.
constexpr size_t kMaxShown = 120;

struct Position {
  int64_t line = 0;
  int64_t col = 0;
};

// A decimal number >= 1 that ends at `text`'s next ':'; advances past it.
std::optional<int64_t> TakeNumber(std::string_view& text) {
  size_t n = 0;
  int64_t value = 0;
  while (n < text.size() && text[n] >= '0' && text[n] <= '9') {
    if (value > (INT64_MAX - 9) / 10) return std::nullopt;
    value = value * 10 + (text[n] - '0');
    ++n;
  }
  if (n == 0 || n >= text.size() || text[n] != ':' || value < 1) return std::nullopt;
  text.remove_prefix(n + 1);
  return value;
}

// "<file>:<line>:<col>: ..." -> (line, col).
std::optional<Position> ParsePrefix(std::string_view text, std::string_view file) {
  if (file.empty() || text.size() <= file.size() || text.substr(0, file.size()) != file ||
      text[file.size()] != ':') {
    return std::nullopt;
  }
  text.remove_prefix(file.size() + 1);
  std::optional<int64_t> line = TakeNumber(text);
  if (!line) return std::nullopt;
  std::optional<int64_t> col = TakeNumber(text);
  if (!col || text.substr(0, 1) != " ") return std::nullopt;
  return Position{*line, *col};
}

// Line `n` (1-based) of `source`, without its end of line.
std::optional<std::string_view> LineOf(std::string_view source, int64_t n) {
  size_t begin = 0;
  for (int64_t k = 1; k < n; ++k) {
    size_t nl = source.find('\n', begin);
    if (nl == std::string_view::npos) return std::nullopt;
    begin = nl + 1;
  }
  if (begin > source.size()) return std::nullopt;
  size_t end = source.find('\n', begin);
  std::string_view line = source.substr(begin, end == std::string_view::npos ? end : end - begin);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

bool IsContinuationByte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// Printable text of `bytes`: tabs kept, other control characters as spaces.
std::string Printable(std::string_view bytes) {
  std::string valid = ToValidUtf8(bytes);
  for (char& c : valid) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7F) c = ' ';
  }
  return valid;
}

// The blanks that put a caret under the character after `prefix`: a tab for
// each tab, one space for each other character.
std::string CaretIndent(std::string_view prefix) {
  std::string out;
  for (char c : prefix) {
    if (c == '\t') {
      out.push_back('\t');
    } else if (!IsContinuationByte(c)) {
      out.push_back(' ');
    }
  }
  return out;
}

std::string Snippet(std::string_view line, Position p) {
  size_t col = static_cast<size_t>(p.col) - 1;
  if (col > line.size()) col = line.size();
  // A window around the column for long lines, on character boundaries.
  size_t begin = 0;
  size_t end = line.size();
  if (line.size() > kMaxShown) {
    begin = col > kMaxShown / 2 ? col - kMaxShown / 2 : 0;
    end = begin + kMaxShown < line.size() ? begin + kMaxShown : line.size();
    while (begin > 0 && IsContinuationByte(line[begin])) --begin;
    while (end < line.size() && IsContinuationByte(line[end])) ++end;
  }
  const std::string lead = begin > 0 ? "..." : "";
  const std::string tail = end < line.size() ? "..." : "";
  const std::string number = std::to_string(p.line);
  const std::string gutter(number.size(), ' ');
  std::string shown = Printable(line.substr(begin, end - begin));
  std::string indent =
      std::string(lead.size(), ' ') + CaretIndent(Printable(line.substr(begin, col - begin)));
  std::string out;
  out.append("  ").append(number).append(" | ").append(lead).append(shown).append(tail);
  out.append("\n  ").append(gutter).append(" | ").append(indent).append("^");
  return out;
}

} // namespace

std::string WithSourceSnippets(std::string_view message, std::string_view file,
                               std::string_view source) {
  std::string out;
  size_t begin = 0;
  while (true) {
    const size_t nl = message.find('\n', begin);
    const std::string_view line =
        message.substr(begin, nl == std::string_view::npos ? nl : nl - begin);
    out.append(line);
    std::optional<Position> p = ParsePrefix(line, file);
    std::optional<std::string_view> text;
    if (p) text = LineOf(source, p->line);
    if (text) out.append("\n").append(Snippet(*text, *p));
    if (nl == std::string_view::npos) break;
    out.push_back('\n');
    begin = nl + 1;
  }
  return out;
}

} // namespace kiln::util
