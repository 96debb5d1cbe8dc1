// server/wire_scan.h on well-formed and hostile bytes:
//  - deep nesting is found, and malformed tags (field number 0, an END_GROUP
//    with no group open) end the scan as malformed instead of popping the
//    outermost frame (an rpc_fuzz finding: a 471-byte Compile request crashed
//    kilnd there);
//  - the parsed-size estimate is never below what protobuf really allocates
//    (SpaceUsedLong of the parsed message) and not far above it, for requests
//    of every shape: programs, empty sub-messages by the million, packed
//    lists, long strings, unknown fields;
//  - a request of empty sub-messages is refused before it is parsed (rpc_fuzz,
//    2026-12-06: a 64 MB Benchmark parsed to 5.8 GB), naming the limit and
//    the message type.
#include <iostream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kiln/v1/service.pb.h"
#include "server/wire_scan.h"

namespace kiln::server {
namespace {

using ::testing::HasSubstr;

const google::protobuf::Descriptor& Compile() { return *kiln::v1::CompileRequest::descriptor(); }

WireLimits Unbounded() {
  WireLimits l;
  l.max_parsed_bytes = int64_t{1} << 50;
  return l;
}

// Whether `bytes` nest a message more than `limit` levels deep.
bool NestsDeeperThan(absl::string_view bytes, int limit) {
  WireLimits l = Unbounded();
  l.max_depth = limit;
  return ScanWire(Compile(), bytes, l).end == WireScan::End::kTooDeep;
}

// A protobuf tag's bytes for small field numbers.
std::string Tag(int number, int wire_type) {
  return std::string(1, static_cast<char>((number << 3) | wire_type));
}
std::string Varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
  return out;
}
std::string LengthDelimited(int number, const std::string& body) {
  return Tag(number, 2) + Varint(body.size()) + body;
}

// A Benchmark request whose program's IR has a workspace whose shape is an
// Expr with `n` empty args: 2 bytes on the wire each.
std::string EmptyExprs(int64_t n) {
  std::string args;
  args.reserve(static_cast<size_t>(2 * n));
  for (int64_t i = 0; i < n; ++i) args += LengthDelimited(kiln::v1::Expr::kArgsFieldNumber, "");
  const std::string buffer = LengthDelimited(kiln::v1::Buffer::kShapeFieldNumber, args);
  const std::string program = LengthDelimited(kiln::v1::Program::kWorkspacesFieldNumber, buffer);
  const std::string source = LengthDelimited(kiln::v1::ProgramSource::kIrFieldNumber, program);
  return LengthDelimited(kiln::v1::BenchmarkRequest::kProgramFieldNumber, source);
}

// The scan's estimate against what the parse really allocates.
void ExpectEstimateCovers(const google::protobuf::Message& message, const std::string& what) {
  SCOPED_TRACE(what);
  const std::string bytes = message.SerializeAsString();
  const WireScan scan = ScanWire(*message.GetDescriptor(), bytes, Unbounded());
  ASSERT_EQ(scan.end, WireScan::End::kComplete);
  EXPECT_EQ(scan.scanned_bytes, static_cast<int64_t>(bytes.size()));
  std::unique_ptr<google::protobuf::Message> parsed(message.New());
  ASSERT_TRUE(parsed->ParseFromString(bytes));
  const int64_t actual = static_cast<int64_t>(parsed->SpaceUsedLong());
  std::cout << what << ": estimate " << scan.parsed_bytes << ", parsed " << actual << "\n";
  EXPECT_GE(scan.parsed_bytes, actual);
  EXPECT_LE(scan.parsed_bytes, 4 * actual + 4096);
}

TEST(WireScan, MalformedTagsAreMalformedNotACrash) {
  // 0x04: field 0, END_GROUP; 0x0c: field 1, END_GROUP with no group open;
  // 0x00: tag 0; 0x03 0x04: field 0 START_GROUP then END_GROUP.
  for (const std::string& bytes :
       {std::string("\x04", 1), std::string("\x0c", 1), std::string("\x00", 1),
        std::string("\x03\x04", 2), std::string("\x0b\x04\x04", 3), std::string("\x0b\x0c\x0c", 3),
        // What follows a field-0 END_GROUP used to read an empty stack.
        std::string("\x04\x0a\x00", 3), std::string("\x04\x04", 2),
        std::string("\x04\x12\x02\x08\x01", 5)}) {
    EXPECT_FALSE(NestsDeeperThan(bytes, 100)) << testing::PrintToString(bytes);
    EXPECT_EQ(ScanWire(Compile(), bytes, WireLimits()).end, WireScan::End::kMalformed)
        << testing::PrintToString(bytes);
  }
}

TEST(WireScan, GroupsNestingPastTheLimitAreFound) {
  // Field 1 as a group, opened 5 times (groups count as levels).
  std::string bytes;
  for (int i = 0; i < 5; ++i) bytes += '\x0b';
  EXPECT_TRUE(NestsDeeperThan(bytes, 3));
  EXPECT_FALSE(NestsDeeperThan(bytes, 5));
}

TEST(WireScan, TruncatedBytesSayWhereTheyStop) {
  kiln::v1::CompileRequest request;
  request.set_target("cuda:sm_90");
  request.mutable_program()->set_tilelang_source(std::string(100, 'x'));
  const std::string bytes = request.SerializeAsString();
  const WireScan scan = ScanWire(Compile(), bytes.substr(0, 50), WireLimits());
  EXPECT_EQ(scan.end, WireScan::End::kMalformed);
  EXPECT_LE(scan.scanned_bytes, 50);
  EXPECT_EQ(ScanWire(Compile(), "", WireLimits()).end, WireScan::End::kComplete);
}

TEST(WireScan, TheEstimateCoversWhatTheParseAllocates) {
  kiln::v1::CompileRequest compile;
  compile.set_target("cuda:sm_90");
  compile.mutable_program()->set_tilelang_source(std::string(10000, 'x'));
  (*compile.mutable_program()->mutable_bindings())["M"].set_int_value(4096);
  (*compile.mutable_program()->mutable_bindings())["dtype"].set_string_value("float16");
  ExpectEstimateCovers(compile, "a source program");

  kiln::v1::CompileRequest ir;
  kiln::v1::Program* program = ir.mutable_program()->mutable_ir();
  program->set_name("gemm");
  for (int k = 0; k < 8; ++k) {
    kiln::v1::Buffer* b = program->add_workspaces();
    b->set_name("w" + std::to_string(k));
    for (int d = 0; d < 3; ++d) {
      kiln::v1::Expr* e = b->add_shape();
      e->set_name("dim");
      for (int a = 0; a < 4; ++a) e->add_args()->set_int_value(a);
    }
  }
  ExpectEstimateCovers(ir, "a wire IR program");

  kiln::v1::CompileRequest lists;
  for (int k = 0; k < 50; ++k) {
    kiln::v1::IntList* list =
        (*lists.mutable_program()->mutable_bindings())["l" + std::to_string(k)].mutable_int_list();
    for (int i = 0; i < 4096; ++i) list->add_values(i % 3);
  }
  lists.mutable_program()->add_dynamic_params("M");
  ExpectEstimateCovers(lists, "packed int lists");

  kiln::v1::CompileRequest strings;
  for (int k = 0; k < 20000; ++k) strings.mutable_program()->add_dynamic_params("");
  ExpectEstimateCovers(strings, "empty repeated strings");

  kiln::v1::BenchmarkRequest exprs;
  ASSERT_TRUE(exprs.ParseFromString(EmptyExprs(100000)));
  ExpectEstimateCovers(exprs, "100,000 empty Exprs");

  // Unknown fields: kept by the parse, charged by the scan.
  std::string unknown;
  for (int i = 0; i < 10000; ++i) unknown += Tag(15, 0) + Varint(i);
  for (int i = 0; i < 100; ++i) unknown += LengthDelimited(14, std::string(100, 'u'));
  kiln::v1::CompileRequest with_unknown;
  ASSERT_TRUE(with_unknown.ParseFromString(unknown));
  ExpectEstimateCovers(with_unknown, "unknown fields");
}

TEST(WireScan, EmptySubMessagesPastTheLimitStopTheScanEarly) {
  const std::string bytes = EmptyExprs(4 << 20); // 8 MiB of wire, ~400 MiB parsed
  WireLimits limits;
  limits.max_parsed_bytes = int64_t{64} << 20;
  const WireScan scan = ScanWire(*kiln::v1::BenchmarkRequest::descriptor(), bytes, limits);
  EXPECT_EQ(scan.end, WireScan::End::kTooLarge);
  EXPECT_GT(scan.parsed_bytes, limits.max_parsed_bytes);
  EXPECT_LT(scan.scanned_bytes, static_cast<int64_t>(bytes.size()) / 2);
  EXPECT_EQ(scan.commonest, kiln::v1::Expr::descriptor());
  EXPECT_GT(scan.commonest_count, 100000);
}

TEST(WireScan, ParseRequestRefusesBeforeParsingAndNamesTheCause) {
  kiln::v1::BenchmarkRequest request;
  WireLimits limits;
  limits.max_parsed_bytes = int64_t{16} << 20;
  const absl::Status big = ParseRequest("Benchmark", EmptyExprs(1 << 20), limits, &request);
  EXPECT_EQ(big.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(big.message(), HasSubstr("Benchmark: the request would take more than 16MiB"));
  EXPECT_THAT(big.message(), HasSubstr("max_parsed_request_size"));
  EXPECT_THAT(big.message(), HasSubstr("of them kiln.v1.Expr"));
  EXPECT_FALSE(request.has_program()); // nothing parsed

  const absl::Status cut =
      ParseRequest("Benchmark", EmptyExprs(10).substr(0, 9), WireLimits(), &request);
  EXPECT_EQ(cut.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(cut.message(), HasSubstr("are not a kiln.v1.BenchmarkRequest message (they stop "
                                       "parsing at byte"));

  std::string deep = "";
  for (int i = 0; i < 150; ++i) deep = LengthDelimited(kiln::v1::Expr::kArgsFieldNumber, deep);
  deep = LengthDelimited(kiln::v1::Buffer::kShapeFieldNumber, deep);
  deep = LengthDelimited(kiln::v1::Program::kWorkspacesFieldNumber, deep);
  deep = LengthDelimited(kiln::v1::ProgramSource::kIrFieldNumber, deep);
  deep = LengthDelimited(kiln::v1::BenchmarkRequest::kProgramFieldNumber, deep);
  const absl::Status nested = ParseRequest("Benchmark", deep, WireLimits(), &request);
  EXPECT_EQ(nested.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(nested.message(), HasSubstr("recursion limit of 100 levels"));

  // Within the limits: parsed.
  ASSERT_TRUE(ParseRequest("Benchmark", EmptyExprs(1000), WireLimits(), &request).ok());
  EXPECT_EQ(request.program().ir().workspaces(0).shape(0).args_size(), 1000);
}

} // namespace
} // namespace kiln::server
