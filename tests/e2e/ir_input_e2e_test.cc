// End-to-end: programs sent as IR (ProgramSource.ir_text and .ir) that are
// as deep or as long as the IR readers accept, or deeper or longer, against
// the real kilnd with 1 MiB thread stacks (half the smallest default a kilnd
// thread gets: glibc gives 2 MiB when RLIMIT_STACK is unlimited, and the
// limit otherwise). Each is answered (a build or INVALID_ARGUMENT with its
// location) and the daemon goes on serving (issue 27, item 1).
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <sys/resource.h>

#include "compiler/ir/proto_convert.h"
#include "compiler/ir/text_parser.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kiln/v1/service.grpc.pb.h"
#include "tests/e2e/daemon_process.h"
#include "tests/e2e/test_dir.h"

namespace kiln {
namespace {

using ::testing::HasSubstr;

const std::string kKilnd = std::string(KILN_BINARY_DIR) + "/kilnd";

std::string Repeat(const std::string& s, int n) {
  std::string out;
  out.reserve(s.size() * static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

std::string ProgramText(const std::string& body) {
  return "program @deep {\n"
         "  sym M: int32\n"
         "  param A: global float32[M]\n"
         "  param B: global float32[M] out\n"
         "  kernel grid((M + 63) // 64) threads(64) as (bx) {\n" +
         body + "\n  }\n}\n";
}

class IrInputE2ETest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::FreshTestDir("ir_input_e2e_");
    // kilnd inherits the limit, and glibc sizes every thread's stack by it.
    rlimit old{};
    ASSERT_EQ(getrlimit(RLIMIT_STACK, &old), 0);
    rlimit small = old;
    small.rlim_cur = 1 << 20;
    ASSERT_EQ(setrlimit(RLIMIT_STACK, &small), 0);
    daemon_ = std::make_unique<testing::DaemonProcess>();
    const bool started =
        daemon_->Start(kKilnd, {"--listen=127.0.0.1:0", "--cache-dir=" + dir_, "--devices=none"});
    ASSERT_EQ(setrlimit(RLIMIT_STACK, &old), 0);
    ASSERT_TRUE(started) << daemon_->output();
    stub_ = kiln::v1::Kiln::NewStub(
        grpc::CreateChannel(daemon_->address(), grpc::InsecureChannelCredentials()));
  }

  grpc::Status Compile(const kiln::v1::CompileRequest& req) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
    kiln::v1::CompileResponse resp;
    return stub_->Compile(&ctx, req, &resp);
  }

  static kiln::v1::CompileRequest TextRequest(const std::string& text) {
    kiln::v1::CompileRequest req;
    req.mutable_program()->set_ir_text(text);
    req.mutable_program()->set_file_name("deep.kir");
    req.set_target("cpu");
    return req;
  }

  std::string dir_;
  std::unique_ptr<testing::DaemonProcess> daemon_;
  std::unique_ptr<kiln::v1::Kiln::Stub> stub_;
};

TEST_F(IrInputE2ETest, HostileIrIsACleanErrorAndTheDaemonLives) {
  std::string open, close;
  for (int i = 0; i < 200; ++i) {
    open += i % 2 ? "if bx < " + std::to_string(i) + " { "
                  : "for i" + std::to_string(i) + " in serial(2) { ";
    close += " }";
  }
  const std::string chain = "A[0]" + Repeat(" + A[0]", 254); // 256 levels
  const std::string deepest =
      ProgramText(open + "B[0] = " + Repeat("(", 560) + chain + Repeat(")", 560) + close);
  struct Case {
    std::string name;
    kiln::v1::CompileRequest req;
    std::string message; // empty: builds
  };
  std::vector<Case> cases = {
      {"deepest accepted text", TextRequest(deepest), ""},
      {"chain of 10^5 operators",
       TextRequest(ProgramText("B[0] = A[0]" + Repeat(" + 1.0", 100000))),
       "deep.kir:6:1537: nesting too deep (more than 256 levels)"},
      {"10^5 parentheses",
       TextRequest(ProgramText("B[0] = " + Repeat("(", 100000) + "A[0]" + Repeat(")", 100000))),
       "deep.kir:6:775: nesting too deep (more than 256 levels)"},
      {"40,000 nested blocks", TextRequest(ProgramText(Repeat("if bx < 1 { ", 40000))),
       "deep.kir:6:3071: nesting too deep (more than 256 levels)"},
      {"16 MB of tokens", TextRequest(ProgramText("B[0] = A[" + Repeat("0, ", 5600000) + "0]")),
       "deep.kir:6:393148: program text too long (more than 262144 tokens)"},
      {"40,000 statements", TextRequest(ProgramText(Repeat("use_swizzle\n", 40000))),
       "deep.kir:32774:1: too many statements (more than 32768)"},
  };
  // The same programs as wire IR: the deepest one builds; 40,000 statements
  // are refused before they are allocated.
  absl::StatusOr<ir::Program> parsed = ir::ParseProgramText(deepest, "deep.kir");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  kiln::v1::CompileRequest wire;
  wire.set_target("cpu");
  ir::ToProto(*parsed, wire.mutable_program()->mutable_ir());
  wire.mutable_program()->set_file_name("deep.kir");
  // Protobuf's own recursion limit (100 levels) stops this one at the door,
  // and the client is told so (server/wire_scan.h).
  cases.push_back({"deepest accepted wire IR", wire,
                   "nests messages deeper than protobuf's recursion limit of 100 levels"});
  absl::StatusOr<ir::Program> flat =
      ir::ParseProgramText(ProgramText(Repeat("B[0] = A[0]\n", 20000)), "flat.kir");
  ASSERT_TRUE(flat.ok()) << flat.status();
  kiln::v1::CompileRequest many = wire;
  ir::ToProto(*flat, many.mutable_program()->mutable_ir());
  for (int i = 0; i < 20000; ++i) {
    *many.mutable_program()->mutable_ir()->mutable_kernel()->add_body() =
        many.program().ir().kernel().body(0);
  }
  cases.push_back({"40,000 wire statements", many,
                   "program.ir: flat.kir:5:3: kernel.body: program has more than 32768 statements "
                   "and declarations"});

  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    grpc::Status s = Compile(c.req);
    if (c.message.empty()) {
      EXPECT_TRUE(s.ok()) << s.error_message();
    } else {
      EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
      EXPECT_THAT(s.error_message(), HasSubstr(c.message));
    }
    // Still serving.
    EXPECT_TRUE(Compile(TextRequest(ProgramText("B[0] = A[0]"))).ok());
  }
}

} // namespace
} // namespace kiln
