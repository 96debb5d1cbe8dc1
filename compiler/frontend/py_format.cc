#include "compiler/frontend/py_format.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "compiler/ir/dtype.h"

namespace kiln::frontend {
namespace {

// Nested sequences deeper than this are refused (the walk recurses).
constexpr int kMaxDepth = 64;

absl::Status TooLong() { return absl::InvalidArgumentError("formatted text is too long"); }

std::string StrRepr(const std::string& s) {
  char q = s.find('\'') != std::string::npos && s.find('"') == std::string::npos ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == '\\' || c == static_cast<unsigned char>(q)) {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7f) {
      absl::StrAppend(&out, absl::StrFormat("\\x%02x", c));
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  out.push_back(q);
  return out;
}

absl::Status Append(const Value& v, bool repr, int depth, size_t max_bytes, std::string* out) {
  if (depth > kMaxDepth) return absl::InvalidArgumentError("values nest too deeply to format");
  switch (v.kind) {
  case ValueKind::kNone:
    out->append("None");
    break;
  case ValueKind::kBool:
    out->append(v.i ? "True" : "False");
    break;
  case ValueKind::kInt:
    absl::StrAppend(out, v.i);
    break;
  case ValueKind::kFloat:
    out->append(PyFloatRepr(v.f));
    break;
  case ValueKind::kString:
    if (repr) {
      out->append(StrRepr(v.s));
    } else {
      out->append(v.s);
    }
    break;
  case ValueKind::kDType:
    out->append(ir::DTypeName(v.dtype));
    break;
  case ValueKind::kTuple:
  case ValueKind::kList: {
    bool tuple = v.kind == ValueKind::kTuple;
    out->push_back(tuple ? '(' : '[');
    const ValueList& items = v.elts();
    for (size_t k = 0; k < items.size(); ++k) {
      if (k) out->append(", ");
      absl::Status st = Append(items[k], true, depth + 1, max_bytes, out);
      if (!st.ok()) return st;
      if (out->size() > max_bytes) return TooLong();
    }
    if (tuple && items.size() == 1) out->push_back(',');
    out->push_back(tuple ? ')' : ']');
    break;
  }
  case ValueKind::kDict: {
    out->push_back('{');
    for (size_t k = 0; k < v.items->size(); ++k) {
      if (k) out->append(", ");
      absl::Status st = Append((*v.items)[k], true, depth + 1, max_bytes, out);
      if (st.ok()) {
        out->append(": ");
        st = Append((*v.values)[k], true, depth + 1, max_bytes, out);
      }
      if (!st.ok()) return st;
      if (out->size() > max_bytes) return TooLong();
    }
    out->push_back('}');
    break;
  }
  case ValueKind::kExpr:
  case ValueKind::kAccess:
    return absl::InvalidArgumentError(
        "cannot format a value only known at run time (a symbolic expression)");
  default:
    return absl::InvalidArgumentError(absl::StrCat("cannot format a ", TypeName(v)));
  }
  if (out->size() > max_bytes) return TooLong();
  return absl::OkStatus();
}

struct Spec {
  char fill = ' ';
  char align = 0; // '<' '>' '=' '^', 0 for the type's default
  char sign = '-';
  bool alternate = false;
  int width = 0;
  int precision = -1;
  char type = 0;
};

absl::StatusOr<Spec> ParseSpec(std::string_view s) {
  Spec spec;
  size_t i = 0;
  auto is_align = [](char c) { return c == '<' || c == '>' || c == '=' || c == '^'; };
  if (s.size() >= 2 && is_align(s[1])) {
    spec.fill = s[0];
    spec.align = s[1];
    i = 2;
  } else if (!s.empty() && is_align(s[0])) {
    spec.align = s[0];
    i = 1;
  }
  if (i < s.size() && (s[i] == '+' || s[i] == '-' || s[i] == ' ')) spec.sign = s[i++];
  if (i < s.size() && s[i] == '#') {
    spec.alternate = true;
    ++i;
  }
  if (i < s.size() && s[i] == '0') {
    if (spec.align == 0) {
      spec.fill = '0';
      spec.align = '=';
    }
    ++i;
  }
  auto number = [&](int* out) -> bool {
    size_t start = i;
    int64_t v = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      v = v * 10 + (s[i++] - '0');
      if (v > kMaxFormatWidth) return false;
    }
    if (i > start) *out = static_cast<int>(v);
    return true;
  };
  if (!number(&spec.width)) {
    return absl::InvalidArgumentError(
        absl::StrCat("format width above ", kMaxFormatWidth, " is not supported"));
  }
  if (i < s.size() && (s[i] == ',' || s[i] == '_')) {
    return absl::InvalidArgumentError("digit grouping in a format spec is not supported");
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    spec.precision = 0;
    size_t start = i;
    if (!number(&spec.precision)) {
      return absl::InvalidArgumentError(
          absl::StrCat("format precision above ", kMaxFormatWidth, " is not supported"));
    }
    if (i == start) return absl::InvalidArgumentError("format specifier missing precision");
  }
  if (i < s.size()) spec.type = s[i++];
  if (i != s.size()) return absl::InvalidArgumentError("invalid format specifier");
  return spec;
}

// `sign` and `body` (digits) padded to the spec's width.
std::string Pad(const Spec& spec, const std::string& sign, const std::string& body,
                char default_align) {
  char align = spec.align ? spec.align : default_align;
  size_t len = sign.size() + body.size();
  size_t width = static_cast<size_t>(spec.width);
  if (len >= width) return sign + body;
  std::string fill(width - len, spec.fill);
  switch (align) {
  case '<':
    return sign + body + fill;
  case '=':
    return sign + fill + body;
  case '^': {
    size_t left = fill.size() / 2;
    return fill.substr(0, left) + sign + body + fill.substr(left);
  }
  default:
    return fill + sign + body;
  }
}

std::string SignOf(bool negative, char sign) {
  if (negative) return "-";
  if (sign == '+') return "+";
  if (sign == ' ') return " ";
  return "";
}

std::string FormatFloat(double d, const Spec& spec) {
  bool negative = std::signbit(d) && !std::isnan(d);
  double a = std::fabs(d);
  char type = spec.type;
  std::string body;
  if (std::isnan(a) || std::isinf(a)) {
    body = std::isnan(a) ? "nan" : "inf";
    if (type == 'F' || type == 'E' || type == 'G') {
      for (char& c : body) c = static_cast<char>(c - 'a' + 'A');
    }
    if (type == '%') body += "%";
  } else if (type == 0 && spec.precision < 0) {
    body = PyFloatRepr(a);
  } else {
    int p = spec.precision < 0 ? 6 : spec.precision;
    if (type == '%') {
      body = absl::StrFormat("%.*f%%", p, a * 100);
    } else if (type == 'f' || type == 'F') {
      body = absl::StrFormat("%.*f", p, a);
    } else if (type == 'e') {
      body = absl::StrFormat("%.*e", p, a);
    } else if (type == 'E') {
      body = absl::StrFormat("%.*E", p, a);
    } else {
      // g and G (and no type with a precision); the format strings stay
      // literals (absl checks them at compile time).
      int q = p == 0 ? 1 : p;
      if (type == 'G') {
        body = spec.alternate ? absl::StrFormat("%#.*G", q, a) : absl::StrFormat("%.*G", q, a);
      } else {
        body = spec.alternate ? absl::StrFormat("%#.*g", q, a) : absl::StrFormat("%.*g", q, a);
      }
    }
  }
  return Pad(spec, SignOf(negative, spec.sign), body, '>');
}

absl::StatusOr<std::string> FormatInt(int64_t v, const Spec& spec) {
  bool negative = v < 0;
  uint64_t m = negative ? uint64_t{0} - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  std::string body, prefix;
  switch (spec.type) {
  case 0:
  case 'd':
  case 'n':
    body = absl::StrCat(m);
    break;
  case 'b':
  case 'o':
  case 'x':
  case 'X': {
    int shift = spec.type == 'b' ? 1 : (spec.type == 'o' ? 3 : 4);
    const char* digits = spec.type == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
    uint64_t mask = (uint64_t{1} << shift) - 1;
    do {
      body.insert(body.begin(), digits[m & mask]);
      m >>= shift;
    } while (m != 0);
    if (spec.alternate) prefix = absl::StrCat("0", std::string(1, spec.type));
    break;
  }
  case 'c':
    if (v < 0 || v > 0x7f) return absl::InvalidArgumentError("format 'c' needs an ASCII code");
    body = std::string(1, static_cast<char>(v));
    return Pad(spec, "", body, '<');
  default:
    return absl::InvalidArgumentError(
        absl::StrCat("unknown format code '", std::string(1, spec.type), "' for an int"));
  }
  if (spec.precision >= 0) {
    return absl::InvalidArgumentError("precision is not allowed in an integer format specifier");
  }
  return Pad(spec, SignOf(negative, spec.sign) + prefix, body, '>');
}

} // namespace

std::string PyFloatRepr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  // The shortest %.{p}e that reads back exactly; its digits and exponent.
  std::string e;
  for (int p = 0; p <= 17; ++p) {
    e = absl::StrFormat("%.*e", p, d);
    if (std::strtod(e.c_str(), nullptr) == d) break;
  }
  bool negative = e[0] == '-';
  size_t mant_start = negative ? 1 : 0;
  size_t epos = e.find('e');
  std::string digits;
  for (size_t k = mant_start; k < epos; ++k) {
    if (e[k] != '.') digits.push_back(e[k]);
  }
  int exp = std::atoi(e.c_str() + epos + 1);
  std::string out = negative ? "-" : "";
  int n = static_cast<int>(digits.size());
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      absl::StrAppend(&out, "0.", std::string(static_cast<size_t>(-exp - 1), '0'), digits);
    } else if (exp + 1 >= n) {
      absl::StrAppend(&out, digits, std::string(static_cast<size_t>(exp + 1 - n), '0'), ".0");
    } else {
      const size_t point = static_cast<size_t>(exp) + 1;
      absl::StrAppend(&out, digits.substr(0, point), ".", digits.substr(point));
    }
    return out;
  }
  out += digits.substr(0, 1);
  // StrAppend, not "." + string: GCC 12 at -O3 reports a false -Wrestrict
  // overlap in operator+(const char*, string&&).
  if (n > 1) absl::StrAppend(&out, ".", digits.substr(1));
  absl::StrAppend(&out, exp < 0 ? "e-" : "e+", absl::StrFormat("%02d", exp < 0 ? -exp : exp));
  return out;
}

absl::StatusOr<std::string> PyStr(const Value& v, bool repr, size_t max_bytes) {
  std::string out;
  absl::Status st = Append(v, repr, 0, max_bytes, &out);
  if (!st.ok()) return st;
  return out;
}

absl::StatusOr<std::string> PyFormat(const Value& v, std::string_view spec_text, size_t max_bytes) {
  if (spec_text.empty()) return PyStr(v, false, max_bytes);
  absl::StatusOr<Spec> spec = ParseSpec(spec_text);
  if (!spec.ok()) return spec.status();
  if (v.kind == ValueKind::kString || v.kind == ValueKind::kDType) {
    // A TileLang dtype is a str (its name).
    const std::string text =
        v.kind == ValueKind::kDType ? std::string(ir::DTypeName(v.dtype)) : v.s;
    if (spec->type != 0 && spec->type != 's') {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown format code '", std::string(1, spec->type), "' for a str"));
    }
    if (spec->sign != '-' || spec->align == '=') {
      return absl::InvalidArgumentError("sign and '=' alignment are not allowed for a str");
    }
    std::string body = text;
    if (spec->precision >= 0 && body.size() > static_cast<size_t>(spec->precision)) {
      body.resize(static_cast<size_t>(spec->precision));
    }
    return Pad(*spec, "", body, '<');
  }
  bool float_type =
      spec->type != 0 && std::string_view("eEfFgG%").find(spec->type) != std::string_view::npos;
  if (v.is_int() && !float_type) {
    if (v.kind == ValueKind::kBool && spec->type == 0) {
      return Pad(*spec, "", v.i ? "True" : "False", '<');
    }
    return FormatInt(v.i, *spec);
  }
  if (v.is_number()) {
    if (spec->type != 0 && !float_type) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown format code '", std::string(1, spec->type), "' for a float"));
    }
    return FormatFloat(v.is_int() ? static_cast<double>(v.i) : v.f, *spec);
  }
  if (v.kind == ValueKind::kExpr || v.kind == ValueKind::kAccess) {
    return PyStr(v, false, max_bytes); // the run-time value error
  }
  // Python's object.__format__ takes only the empty spec.
  return absl::InvalidArgumentError(
      absl::StrCat("a format spec is not supported for a ", TypeName(v)));
}

} // namespace kiln::frontend
