// server/wire_nesting.h on well-formed and hostile bytes: deep nesting is
// found, and malformed tags (field number 0, an END_GROUP with no group
// open) end the scan with false instead of popping the outermost frame (an
// rpc_fuzz finding: a 471-byte Compile request crashed kilnd there).
#include <string>

#include "gtest/gtest.h"
#include "kiln/v1/service.pb.h"
#include "server/wire_nesting.h"

namespace kiln::server {
namespace {

const google::protobuf::Descriptor& Compile() { return *kiln::v1::CompileRequest::descriptor(); }

TEST(WireNesting, MalformedTagsAreFalseNotACrash) {
  // 0x04: field 0, END_GROUP; 0x0c: field 1, END_GROUP with no group open;
  // 0x00: tag 0; 0x03 0x04: field 0 START_GROUP then END_GROUP.
  for (const std::string& bytes :
       {std::string("\x04", 1), std::string("\x0c", 1), std::string("\x00", 1),
        std::string("\x03\x04", 2), std::string("\x0b\x04\x04", 3), std::string("\x0b\x0c\x0c", 3),
        // What follows a field-0 END_GROUP used to read an empty stack.
        std::string("\x04\x0a\x00", 3), std::string("\x04\x04", 2),
        std::string("\x04\x12\x02\x08\x01", 5)}) {
    EXPECT_FALSE(NestsDeeperThan(Compile(), bytes, 100)) << testing::PrintToString(bytes);
  }
}

TEST(WireNesting, GroupsNestingPastTheLimitAreFound) {
  // Field 1 as a group, opened 5 times (groups count as levels).
  std::string bytes;
  for (int i = 0; i < 5; ++i) bytes += '\x0b';
  EXPECT_TRUE(NestsDeeperThan(Compile(), bytes, 3));
  EXPECT_FALSE(NestsDeeperThan(Compile(), bytes, 5));
}

} // namespace
} // namespace kiln::server
