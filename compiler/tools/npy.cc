#include "compiler/tools/npy.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "compiler/ir/dtype.h"
#include "util/file_path.h"

namespace kiln::tools {
namespace {

// The format stores multi-byte values little-endian; Kiln copies them as is.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "npy I/O assumes a little-endian host");

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
// NumPy pads the preamble and header to this, so the data is aligned.
constexpr size_t kHeaderAlign = 64;
constexpr char kSupported[] = "<f2 <f4 <f8 |i1 <i2 <i4 <i8 |u1 <u2 <u4 <u8 |b1";

absl::Status Bad(absl::string_view what, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(what, ": ", message));
}

// A cursor over the header text, which is a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
class HeaderParser {
 public:
  explicit HeaderParser(absl::string_view text) : text_(text) {}

  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool Take(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool Peek(char c) {
    SkipSpace();
    return pos_ < text_.size() && text_[pos_] == c;
  }
  bool AtEnd() {
    SkipSpace();
    return pos_ >= text_.size();
  }
  std::optional<std::string> String() {
    SkipSpace();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) return std::nullopt;
    const char quote = text_[pos_++];
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\\') return std::nullopt; // NumPy never escapes
      out.push_back(text_[pos_++]);
    }
    if (pos_ >= text_.size()) return std::nullopt;
    ++pos_;
    return out;
  }
  std::optional<std::string> Word() {
    SkipSpace();
    size_t begin = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
      ++pos_;
    }
    if (begin == pos_) return std::nullopt;
    return std::string(text_.data() + begin, pos_ - begin);
  }
  // A non-negative integer (Python 2 files may add an 'L').
  std::optional<int64_t> Int() {
    SkipSpace();
    size_t begin = pos_;
    int64_t value = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      const int digit = text_[pos_] - '0';
      if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) return std::nullopt;
      value = value * 10 + digit;
      ++pos_;
    }
    if (begin == pos_) return std::nullopt;
    if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;
    return value;
  }

 private:
  absl::string_view text_;
  size_t pos_ = 0;
};

struct Header {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

absl::StatusOr<Header> ParseHeader(absl::string_view text, absl::string_view what) {
  auto malformed = [&](absl::string_view detail) {
    return Bad(what, absl::StrCat("malformed .npy header (", detail, "): ", text));
  };
  HeaderParser p(text);
  if (!p.Take('{')) return malformed("expected '{'");
  Header header;
  bool has_descr = false, has_order = false, has_shape = false;
  while (!p.Take('}')) {
    std::optional<std::string> key = p.String();
    if (!key) return malformed("expected a quoted key");
    if (!p.Take(':')) return malformed("expected ':'");
    if (*key == "descr") {
      if (p.Peek('[')) {
        return Bad(what, "structured dtypes are not supported; supported dtypes: " +
                             std::string(kSupported));
      }
      std::optional<std::string> descr = p.String();
      if (!descr) return malformed("descr is not a string");
      header.descr = *descr;
      has_descr = true;
    } else if (*key == "fortran_order") {
      std::optional<std::string> word = p.Word();
      if (!word || (*word != "True" && *word != "False")) {
        return malformed("fortran_order is not True or False");
      }
      header.fortran_order = *word == "True";
      has_order = true;
    } else if (*key == "shape") {
      if (!p.Take('(')) return malformed("shape is not a tuple");
      while (!p.Take(')')) {
        std::optional<int64_t> dim = p.Int();
        if (!dim) return malformed("shape holds something other than non-negative integers");
        header.shape.push_back(*dim);
        if (!p.Take(',') && !p.Peek(')')) return malformed("expected ',' or ')' in shape");
      }
      has_shape = true;
    } else {
      return malformed(absl::StrCat("unexpected key '", *key, "'"));
    }
    if (!p.Take(',') && !p.Peek('}')) return malformed("expected ',' or '}'");
  }
  if (!p.AtEnd()) return malformed("text after '}'");
  if (!has_descr || !has_order || !has_shape) {
    return malformed("it needs the keys 'descr', 'fortran_order' and 'shape'");
  }
  return header;
}

// Elements of `shape`, or nullopt if the count (times 8 bytes) overflows.
std::optional<int64_t> CountElements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / 8 / d) return std::nullopt;
    n *= d;
  }
  return n;
}

std::string ReadableDType(ir::DType dtype) { return std::string(ir::DTypeName(dtype)); }

} // namespace

int64_t NpyArray::num_elements() const { return CountElements(shape).value_or(0); }

int64_t DTypeBytes(ir::DType dtype) { return std::max(1, ir::DTypeBits(dtype) / 8); }

std::string NpyDescr(ir::DType dtype) {
  using ir::DType;
  switch (dtype) {
  case DType::kBool:
    return "|b1";
  case DType::kInt8:
    return "|i1";
  case DType::kInt16:
    return "<i2";
  case DType::kInt32:
    return "<i4";
  case DType::kInt64:
    return "<i8";
  case DType::kUInt8:
  case DType::kFloat8E4M3:
  case DType::kFloat8E5M2:
    return "|u1";
  case DType::kUInt16:
  case DType::kBFloat16:
    return "<u2";
  case DType::kUInt32:
    return "<u4";
  case DType::kUInt64:
    return "<u8";
  case DType::kFloat16:
    return "<f2";
  case DType::kFloat32:
    return "<f4";
  case DType::kFloat64:
    return "<f8";
  }
  return "|u1";
}

absl::StatusOr<ir::DType> DTypeFromDescr(std::string_view descr_in) {
  using ir::DType;
  const absl::string_view descr(descr_in.data(), descr_in.size());
  auto unsupported = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("unsupported dtype '", descr, "'", why, "; supported dtypes: ", kSupported));
  };
  if (descr.size() != 3) return unsupported("");
  const char order = descr[0];
  const absl::string_view code = descr.substr(1);
  const bool one_byte = code[1] == '1';
  if (order != '<' && order != '|' && order != '=' && order != '>') return unsupported("");
  if (order == '>' && !one_byte) return unsupported(" (big-endian data)");
  if (order == '|' && !one_byte) return unsupported("");
  static constexpr std::pair<absl::string_view, DType> kCodes[] = {
      {"f2", DType::kFloat16}, {"f4", DType::kFloat32}, {"f8", DType::kFloat64},
      {"i1", DType::kInt8},    {"i2", DType::kInt16},   {"i4", DType::kInt32},
      {"i8", DType::kInt64},   {"u1", DType::kUInt8},   {"u2", DType::kUInt16},
      {"u4", DType::kUInt32},  {"u8", DType::kUInt64},  {"b1", DType::kBool},
  };
  for (const auto& [c, dtype] : kCodes) {
    if (c == code) return dtype;
  }
  return unsupported("");
}

bool DTypeCompatible(ir::DType file, ir::DType param) {
  using ir::DType;
  if (file == param) return true;
  if (param == DType::kBFloat16) return file == DType::kUInt16;
  if (param == DType::kFloat8E4M3 || param == DType::kFloat8E5M2) return file == DType::kUInt8;
  return false;
}

std::string FormatShape(const std::vector<int64_t>& shape) {
  if (shape.size() == 1) return absl::StrCat("(", shape[0], ",)");
  return absl::StrCat("(", absl::StrJoin(shape, ", "), ")");
}

absl::StatusOr<NpyArray> ParseNpy(std::string_view bytes_in, std::string_view what_in) {
  const absl::string_view bytes(bytes_in.data(), bytes_in.size());
  const absl::string_view what(what_in.data(), what_in.size());
  if (bytes.size() < kMagicSize + 2 || bytes.substr(0, kMagicSize) != kMagic) {
    return Bad(what, "not a .npy file (bad magic; expected \\x93NUMPY)");
  }
  const int major = static_cast<unsigned char>(bytes[6]);
  const int minor = static_cast<unsigned char>(bytes[7]);
  if ((major != 1 && major != 2 && major != 3) || minor != 0) {
    return Bad(what, absl::StrCat("unsupported .npy format version ", major, ".", minor,
                                  " (supported: 1.0, 2.0, 3.0)"));
  }
  const size_t len_size = major == 1 ? 2 : 4;
  const size_t preamble = kMagicSize + 2 + len_size;
  if (bytes.size() < preamble) return Bad(what, "truncated .npy header");
  uint64_t header_len = 0;
  for (size_t i = 0; i < len_size; ++i) {
    header_len |= uint64_t{static_cast<unsigned char>(bytes[kMagicSize + 2 + i])} << (8 * i);
  }
  if (bytes.size() - preamble < header_len) return Bad(what, "truncated .npy header");
  absl::StatusOr<Header> header = ParseHeader(bytes.substr(preamble, header_len), what);
  if (!header.ok()) return header.status();
  if (header->fortran_order) {
    return Bad(what, "fortran_order is True; save a C-ordered array (np.ascontiguousarray)");
  }
  absl::StatusOr<ir::DType> dtype = DTypeFromDescr(header->descr);
  if (!dtype.ok()) return Bad(what, dtype.status().message());
  std::optional<int64_t> count = CountElements(header->shape);
  if (!count) return Bad(what, absl::StrCat("shape ", FormatShape(header->shape), " is too large"));

  NpyArray array;
  array.dtype = *dtype;
  array.shape = header->shape;
  const uint64_t want = static_cast<uint64_t>(*count * DTypeBytes(*dtype));
  const absl::string_view data = bytes.substr(preamble + header_len);
  if (data.size() < want) {
    return Bad(what,
               absl::StrCat("truncated data: shape ", FormatShape(array.shape), " of ",
                            header->descr, " needs ", want, " bytes, the file has ", data.size()));
  }
  if (data.size() > want) {
    return Bad(what, absl::StrCat(data.size() - want, " unexpected bytes after the data (shape ",
                                  FormatShape(array.shape), " of ", header->descr, ")"));
  }
  array.data.assign(data.data(), data.size());
  return array;
}

absl::StatusOr<std::string> SerializeNpy(const NpyArray& array) {
  std::optional<int64_t> count = CountElements(array.shape);
  if (!count) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot write shape ", FormatShape(array.shape)));
  }
  const int64_t want = *count * DTypeBytes(array.dtype);
  if (static_cast<int64_t>(array.data.size()) != want) {
    return absl::InvalidArgumentError(absl::StrCat(
        "array of shape ", FormatShape(array.shape), " and dtype ", ReadableDType(array.dtype),
        " needs ", want, " bytes, has ", array.data.size()));
  }
  std::string header =
      absl::StrCat("{'descr': '", NpyDescr(array.dtype),
                   "', 'fortran_order': False, 'shape': ", FormatShape(array.shape), ", }");
  int major = 1;
  size_t preamble = kMagicSize + 2 + 2;
  // +1 for the terminating newline.
  if (header.size() + 1 + kHeaderAlign > 0xffff) {
    major = 2;
    preamble = kMagicSize + 2 + 4;
  }
  const size_t unpadded = preamble + header.size() + 1;
  header.append((kHeaderAlign - unpadded % kHeaderAlign) % kHeaderAlign, ' ');
  header.push_back('\n');

  std::string out(kMagic, kMagicSize);
  out.push_back(static_cast<char>(major));
  out.push_back('\0');
  const uint64_t len = header.size();
  for (size_t i = 0; i < preamble - kMagicSize - 2; ++i) {
    out.push_back(static_cast<char>((len >> (8 * i)) & 0xff));
  }
  out += header;
  out += array.data;
  return out;
}

absl::StatusOr<NpyArray> ReadNpyFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    std::string message = absl::StrCat("cannot open '", path, "': ", std::strerror(err));
    if (err == ENOENT) return absl::NotFoundError(message);
    return absl::InternalError(message);
  }
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return absl::InternalError(absl::StrCat("cannot read '", path, "'"));
  return ParseNpy(bytes, path);
}

absl::Status WriteNpyFile(const std::string& path, const NpyArray& array) {
  absl::StatusOr<std::string> bytes = SerializeNpy(array);
  if (!bytes.ok())
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", bytes.status().message()));
  return util::WriteFileAtomically(path, *bytes);
}

absl::Status CheckMatches(const NpyArray& array, std::string_view name_in, ir::DType dtype,
                          const std::vector<int64_t>& shape) {
  const absl::string_view name(name_in.data(), name_in.size());
  if (!DTypeCompatible(array.dtype, dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat("input '", name, "': dtype ", NpyDescr(array.dtype), " (",
                     ReadableDType(array.dtype), ") does not match the parameter's dtype ",
                     ReadableDType(dtype), " (", NpyDescr(dtype), ")"));
  }
  if (array.shape != shape) {
    return absl::InvalidArgumentError(
        absl::StrCat("input '", name, "': shape ", FormatShape(array.shape),
                     " does not match the parameter's shape ", FormatShape(shape)));
  }
  return absl::OkStatus();
}

} // namespace kiln::tools
