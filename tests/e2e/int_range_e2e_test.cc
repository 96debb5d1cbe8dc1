// End-to-end (issue 27, item 3): a tile size that does not fit int32, sent to
// the real kilnd as a binding, in the source or as IR text, is answered
// INVALID_ARGUMENT with the file:line:col of the value. Before the fix the
// daemon compiled block_M = 2**31 into a loop of -2147483648 iterations and
// 2**32 + 32 into one of 32, and answered OK.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kiln/v1/service.grpc.pb.h"
#include "tests/e2e/daemon_process.h"
#include "tests/e2e/test_dir.h"
#include "tests/support/example_loader.h"

namespace kiln {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

const std::string kKilnd = std::string(KILN_BINARY_DIR) + "/kilnd";
constexpr char kExample[] = "examples/elementwise/add.py";
constexpr char kLoop[] = "T.Parallel(block_M, block_N)";

// "line:col" of the first occurrence of `anchor` in `text` (1-based).
std::string LineCol(const std::string& text, const std::string& anchor) {
  size_t pos = text.find(anchor);
  if (pos == std::string::npos) return "anchor not found: " + anchor;
  size_t line = 1, line_start = 0;
  for (size_t i = 0; i < pos; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return absl::StrCat(line, ":", pos - line_start + 1);
}

class IntRangeE2ETest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::FreshTestDir("int_range_e2e_");
    daemon_ = std::make_unique<testing::DaemonProcess>();
    ASSERT_TRUE(daemon_->Start(kKilnd, {"--listen=127.0.0.1:0", "--cache-dir=" + dir_}))
        << daemon_->output();
    stub_ = kiln::v1::Kiln::NewStub(
        grpc::CreateChannel(daemon_->address(), grpc::InsecureChannelCredentials()));
    example_ = testing::LoadExampleFile(KILN_SOURCE_DIR, kExample);
  }

  // add.py at its test-bind size with block_M bound to `block_m`.
  kiln::v1::CompileRequest Request(int64_t block_m) const {
    kiln::v1::CompileRequest req;
    req.mutable_program()->set_tilelang_source(example_.source);
    req.mutable_program()->set_file_name(kExample);
    for (const auto& [name, value] : example_.test_bind) {
      kiln::v1::BindingValue v;
      v.set_int_value(name == "block_M" ? block_m : value.ival);
      (*req.mutable_program()->mutable_bindings())[name] = v;
    }
    req.set_target("cpu");
    return req;
  }

  grpc::Status Compile(const kiln::v1::CompileRequest& req, kiln::v1::CompileResponse* resp) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
    return stub_->Compile(&ctx, req, resp);
  }

  std::string dir_;
  std::unique_ptr<testing::DaemonProcess> daemon_;
  std::unique_ptr<kiln::v1::Kiln::Stub> stub_;
  testing::ExampleFile example_;
};

TEST_F(IntRangeE2ETest, TileSizeBeyondInt32InABindingIsALocatedError) {
  ASSERT_NE(example_.source.find(kLoop), std::string::npos);
  // The diagnostic points at block_M inside T.Parallel(...).
  const std::string at =
      absl::StrCat(kExample, ":", LineCol(example_.source, "block_M, block_N)"), ": ");
  for (int64_t block_m : {int64_t{1} << 31, (int64_t{1} << 32) + 32, INT64_MAX}) {
    SCOPED_TRACE(block_m);
    kiln::v1::CompileResponse resp;
    grpc::Status s = Compile(Request(block_m), &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    EXPECT_THAT(s.error_message(), StartsWith(at));
    EXPECT_THAT(
        s.error_message(),
        HasSubstr(absl::StrCat("T.Parallel extent must be in [1, 1073741824], got ", block_m)));
  }
  // The daemon goes on serving the same program at a valid size.
  kiln::v1::CompileResponse ok;
  grpc::Status s = Compile(Request(16), &ok);
  EXPECT_TRUE(s.ok()) << s.error_message();
}

TEST_F(IntRangeE2ETest, TileSizeBeyondInt32InTheSourceIsALocatedError) {
  for (const std::string literal : {"2**31", "2**32 + 32"}) {
    SCOPED_TRACE(literal);
    std::string source = example_.source;
    const size_t pos = source.find(kLoop);
    ASSERT_NE(pos, std::string::npos);
    source.replace(pos, std::string(kLoop).size(),
                   absl::StrCat("T.Parallel(", literal, ", block_N)"));
    kiln::v1::CompileRequest req = Request(16);
    req.mutable_program()->set_tilelang_source(source);
    kiln::v1::CompileResponse resp;
    grpc::Status s = Compile(req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    EXPECT_THAT(s.error_message(),
                StartsWith(absl::StrCat(kExample, ":", LineCol(source, literal + ", block_N)"),
                                        ": T.Parallel extent must be in [1, 1073741824], got ")));
  }
}

TEST_F(IntRangeE2ETest, Int32LiteralBeyondItsTypeInIrTextIsALocatedError) {
  // Tile IR skips the frontend; verify-resources refuses the literal before
  // the simplifier would wrap it to 32.
  const std::string ir = R"(program @p {
  param A: global float16[8192]
  kernel grid(1) threads(128) as (bx) {
    for i in parallel(4294967328) {
      A[i] = A[i]
    }
  }
}
)";
  kiln::v1::CompileRequest req;
  req.mutable_program()->set_ir_text(ir);
  req.mutable_program()->set_file_name("wrap.kir");
  req.set_target("cpu");
  kiln::v1::CompileResponse resp;
  grpc::Status s = Compile(req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_THAT(s.error_message(),
              StartsWith("wrap.kir:4:5: integer literal 4294967328 does not fit int32"));
}

} // namespace
} // namespace kiln
