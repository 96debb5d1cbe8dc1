#include "server/wire_nesting.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

namespace kiln::server {

int ProtobufRecursionLimit() {
  return google::protobuf::io::CodedInputStream::GetDefaultRecursionLimit();
}

bool NestsDeeperThan(const google::protobuf::Descriptor& type, absl::string_view bytes, int limit) {
  using google::protobuf::FieldDescriptor;
  using google::protobuf::internal::WireFormatLite;
  using google::protobuf::io::CodedInputStream;
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max())) return false;
  CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                      static_cast<int>(bytes.size()));
  // One frame per open message: its type (null inside a group or a field
  // the schema does not know: its fields are skipped), the limit that ends
  // it (length-delimited), or the field number whose END_GROUP ends it.
  struct Frame {
    const google::protobuf::Descriptor* type;
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
    const uint32_t tag = in.ReadTag();
    if (tag == 0) return false; // the end, or bytes that do not parse
    const int number = static_cast<int>(WireFormatLite::GetTagFieldNumber(tag));
    // Field number 0 is invalid (and would match the outermost frame's
    // `group` of 0 below): the bytes do not parse.
    if (number == 0) return false;
    // A message opened here is at this level.
    const int level = static_cast<int>(stack.size());
    switch (WireFormatLite::GetTagWireType(tag)) {
    case WireFormatLite::WIRETYPE_VARINT: {
      uint64_t v = 0;
      if (!in.ReadVarint64(&v)) return false;
      break;
    }
    case WireFormatLite::WIRETYPE_FIXED64: {
      uint64_t v = 0;
      if (!in.ReadLittleEndian64(&v)) return false;
      break;
    }
    case WireFormatLite::WIRETYPE_FIXED32: {
      uint32_t v = 0;
      if (!in.ReadLittleEndian32(&v)) return false;
      break;
    }
    case WireFormatLite::WIRETYPE_LENGTH_DELIMITED: {
      uint32_t length = 0;
      if (!in.ReadVarint32(&length)) return false;
      const google::protobuf::Descriptor* parent = stack.back().type;
      const FieldDescriptor* field =
          parent != nullptr ? parent->FindFieldByNumber(number) : nullptr;
      if (field == nullptr || field->type() != FieldDescriptor::TYPE_MESSAGE) {
        if (!in.Skip(static_cast<int>(std::min<uint32_t>(
                length, static_cast<uint32_t>(std::numeric_limits<int>::max()))))) {
          return false;
        }
        break;
      }
      if (level > limit) return true;
      if (length > static_cast<uint32_t>(std::numeric_limits<int>::max())) return false;
      const CodedInputStream::Limit l = in.PushLimit(static_cast<int>(length));
      stack.push_back({field->message_type(), l, 0});
      break;
    }
    case WireFormatLite::WIRETYPE_START_GROUP:
      if (level > limit) return true;
      stack.push_back({nullptr, 0, number});
      break;
    case WireFormatLite::WIRETYPE_END_GROUP:
      if (stack.back().group == 0 || stack.back().group != number) return false;
      stack.pop_back();
      break;
    default:
      return false;
    }
  }
}

} // namespace kiln::server
