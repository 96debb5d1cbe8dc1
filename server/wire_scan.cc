#include "server/wire_scan.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "server/config_values.h"

namespace kiln::server {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;

// What the parse allocates beyond a message object's own size (upper
// estimates for libstdc++ and protobuf's containers on 64-bit hosts).
constexpr int64_t kRepeatedSlot = 24; // a repeated field's element pointer, with growth slack
constexpr int64_t kStringObject = 32; // a repeated string field's std::string (allocated apart)
constexpr int64_t kStringSlack = 32;  // a string's capacity past its length
constexpr int64_t kMapNode = 48;      // a map entry's hash-map node
constexpr int64_t kMapKey = 32;       // a map entry's key (a string, or a scalar)
constexpr int64_t kUnknownField = 40; // an entry of the unknown-field set, with growth slack
constexpr int64_t kUnknownGroup = 48; // a group's own unknown-field set
constexpr int64_t kNoPrototype = 256; // a message type without a generated class

// A message object's size: its generated class's default instance. A map
// entry is no object of its own once parsed: its key and a node in the map
// (the value, a message, is charged as one when the scan enters it).
class ObjectSizes {
 public:
  int64_t Of(const Descriptor* type) {
    if (type->options().map_entry()) return kMapNode + kMapKey;
    auto [it, inserted] = sizes_.try_emplace(type, kNoPrototype);
    if (inserted) {
      const google::protobuf::Message* prototype =
          google::protobuf::MessageFactory::generated_factory()->GetPrototype(type);
      if (prototype != nullptr) it->second = static_cast<int64_t>(prototype->SpaceUsedLong());
    }
    return it->second;
  }

 private:
  absl::flat_hash_map<const Descriptor*, int64_t> sizes_;
};

// Bytes of one element of a repeated scalar field in memory, and the fewest
// bytes it takes on the wire.
int64_t ElementBytes(const FieldDescriptor& f) {
  switch (f.cpp_type()) {
  case FieldDescriptor::CPPTYPE_BOOL:
    return 1;
  case FieldDescriptor::CPPTYPE_INT64:
  case FieldDescriptor::CPPTYPE_UINT64:
  case FieldDescriptor::CPPTYPE_DOUBLE:
    return 8;
  default:
    return 4;
  }
}
int64_t WireElementBytes(const FieldDescriptor& f) {
  switch (WireFormatLite::WireTypeForFieldType(static_cast<WireFormatLite::FieldType>(f.type()))) {
  case WireFormatLite::WIRETYPE_FIXED32:
    return 4;
  case WireFormatLite::WIRETYPE_FIXED64:
    return 8;
  default:
    return 1; // a varint
  }
}

// Whether protobuf parses a field sent with `wire_type` as `f` (else it keeps
// it as an unknown field). Repeated scalars are read packed or not.
bool Known(const FieldDescriptor* f, int wire_type) {
  if (f == nullptr) return false;
  if (f->is_packable() && wire_type == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) return true;
  return WireFormatLite::WireTypeForFieldType(static_cast<WireFormatLite::FieldType>(f->type())) ==
         wire_type;
}

// Reads past one scalar of `wire_type` (varint, fixed64 or fixed32).
bool SkipScalar(CodedInputStream* in, int wire_type) {
  if (wire_type == WireFormatLite::WIRETYPE_VARINT) {
    uint64_t v = 0;
    return in->ReadVarint64(&v);
  }
  if (wire_type == WireFormatLite::WIRETYPE_FIXED64) {
    uint64_t v = 0;
    return in->ReadLittleEndian64(&v);
  }
  uint32_t v = 0;
  return in->ReadLittleEndian32(&v);
}

} // namespace

int ProtobufRecursionLimit() { return CodedInputStream::GetDefaultRecursionLimit(); }

WireScan ScanWire(const Descriptor& type, absl::string_view bytes, const WireLimits& limits) {
  WireScan scan;
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    scan.end = WireScan::End::kMalformed; // protobuf parses no more than 2 GiB
    return scan;
  }
  CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                      static_cast<int>(bytes.size()));
  ObjectSizes sizes;
  absl::flat_hash_map<const Descriptor*, int64_t> seen;
  // Adds `n` bytes to the estimate; true once it is past the limit.
  const auto charge = [&](int64_t n) {
    scan.parsed_bytes += n;
    return scan.parsed_bytes > limits.max_parsed_bytes;
  };
  const auto finish = [&](WireScan::End end) {
    scan.end = end;
    scan.scanned_bytes = in.CurrentPosition();
    for (const auto& [t, n] : seen) {
      if (n > scan.commonest_count) {
        scan.commonest = t;
        scan.commonest_count = n;
      }
    }
    return scan;
  };
  scan.messages = 1;
  if (charge(sizes.Of(&type))) return finish(WireScan::End::kTooLarge);
  // One frame per open message: its type (null inside a group or a field
  // the schema does not know: its fields are kept as unknown fields), the
  // limit that ends it (length-delimited), or the field number whose
  // END_GROUP ends it.
  struct Frame {
    const Descriptor* type;
    CodedInputStream::Limit limit;
    int group = 0;
  };
  std::vector<Frame> stack{{&type, 0, 0}};
  for (;;) {
    if (stack.size() > 1 && stack.back().group == 0 && in.BytesUntilLimit() == 0) {
      in.PopLimit(stack.back().limit);
      stack.pop_back();
      continue;
    }
    if (stack.size() == 1 && in.ExpectAtEnd()) return finish(WireScan::End::kComplete);
    const uint32_t tag = in.ReadTag();
    // A tag of 0, a bad varint, or the end inside an open group.
    if (tag == 0) return finish(WireScan::End::kMalformed);
    const int number = static_cast<int>(WireFormatLite::GetTagFieldNumber(tag));
    // Field number 0 is invalid (and would match the outermost frame's
    // `group` of 0 below): the bytes do not parse.
    if (number == 0) return finish(WireScan::End::kMalformed);
    // A message opened here is at this level.
    const int level = static_cast<int>(stack.size());
    const int wire_type = static_cast<int>(WireFormatLite::GetTagWireType(tag));
    const Descriptor* parent = stack.back().type;
    const FieldDescriptor* field = parent != nullptr ? parent->FindFieldByNumber(number) : nullptr;
    const bool known = Known(field, wire_type);
    bool over = false;
    switch (wire_type) {
    case WireFormatLite::WIRETYPE_VARINT:
    case WireFormatLite::WIRETYPE_FIXED64:
    case WireFormatLite::WIRETYPE_FIXED32:
      if (!SkipScalar(&in, wire_type)) return finish(WireScan::End::kMalformed);
      over = charge(!known ? kUnknownField : field->is_repeated() ? 2 * ElementBytes(*field) : 0);
      break;
    case WireFormatLite::WIRETYPE_LENGTH_DELIMITED: {
      uint32_t length = 0;
      if (!in.ReadVarint32(&length)) return finish(WireScan::End::kMalformed);
      if (length > static_cast<uint32_t>(std::numeric_limits<int>::max())) {
        return finish(WireScan::End::kMalformed);
      }
      if (known && field->type() == FieldDescriptor::TYPE_MESSAGE) {
        if (level > limits.max_depth) return finish(WireScan::End::kTooDeep);
        const Descriptor* sub = field->message_type();
        ++scan.messages;
        ++seen[sub];
        over = charge(sizes.Of(sub) + (field->is_repeated() ? kRepeatedSlot : 0));
        const CodedInputStream::Limit l = in.PushLimit(static_cast<int>(length));
        stack.push_back({sub, l, 0});
        break;
      }
      const int64_t n = length;
      if (!known) {
        over = charge(kUnknownField + kStringObject + kStringSlack + n);
      } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
        over =
            charge(n + kStringSlack + (field->is_repeated() ? kStringObject + kRepeatedSlot : 0));
      } else { // packed repeated scalars, with the repeated field's growth
        over = charge(2 * (n / WireElementBytes(*field) + 1) * ElementBytes(*field));
      }
      if (!over && !in.Skip(static_cast<int>(length))) return finish(WireScan::End::kMalformed);
      break;
    }
    case WireFormatLite::WIRETYPE_START_GROUP:
      if (level > limits.max_depth) return finish(WireScan::End::kTooDeep);
      ++scan.messages;
      if (known && field->type() == FieldDescriptor::TYPE_GROUP) {
        ++seen[field->message_type()];
        over = charge(sizes.Of(field->message_type()) + (field->is_repeated() ? kRepeatedSlot : 0));
        stack.push_back({field->message_type(), 0, number});
      } else {
        over = charge(kUnknownField + kUnknownGroup);
        stack.push_back({nullptr, 0, number});
      }
      break;
    case WireFormatLite::WIRETYPE_END_GROUP:
      if (stack.back().group == 0 || stack.back().group != number) {
        return finish(WireScan::End::kMalformed);
      }
      stack.pop_back();
      break;
    default:
      return finish(WireScan::End::kMalformed);
    }
    if (over) return finish(WireScan::End::kTooLarge);
  }
}

absl::Status ParseRequest(absl::string_view method, absl::string_view bytes,
                          const WireLimits& limits, google::protobuf::Message* request) {
  const Descriptor& type = *request->GetDescriptor();
  const WireScan scan = ScanWire(type, bytes, limits);
  switch (scan.end) {
  case WireScan::End::kTooLarge:
    return absl::ResourceExhaustedError(absl::StrCat(
        method, ": the request would take more than ",
        FormatByteSize(static_cast<uint64_t>(limits.max_parsed_bytes)),
        " of memory once parsed (the daemon's max_parsed_request_size): its first ",
        scan.scanned_bytes, " of ", bytes.size(), " bytes already hold ", scan.messages,
        " protobuf messages",
        scan.commonest != nullptr
            ? absl::StrCat(", ", scan.commonest_count, " of them ", scan.commonest->full_name())
            : "",
        "; send a large program as ir_text or tilelang_source"));
  case WireScan::End::kTooDeep:
    return absl::InvalidArgumentError(absl::StrCat(
        method, ": the request nests messages deeper than protobuf's recursion limit of ",
        limits.max_depth,
        " levels (e.g. a wire IR expression nested that deep); send such a program "
        "as ir_text or tilelang_source"));
  case WireScan::End::kMalformed:
    return absl::InvalidArgumentError(absl::StrCat(
        method, ": the request's ", bytes.size(), " bytes are not a ", type.full_name(),
        " message (they stop parsing at byte ", scan.scanned_bytes, ")"));
  case WireScan::End::kComplete:
    break;
  }
  if (!request->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError(
        absl::StrCat(method, ": the request's ", bytes.size(), " bytes are not a ",
                     type.full_name(), " message (e.g. a string field that is not UTF-8)"));
  }
  return absl::OkStatus();
}

} // namespace kiln::server
