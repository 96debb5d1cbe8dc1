// The deepest IR the entry points accept (textual IR, wire IR) goes through
// every walk over it -- parsing, verification, printing, canonicalization,
// hashing, proto conversion, copies, comparison, destruction, lowering and
// code generation -- on a thread with a small stack, and anything deeper or
// longer is a located error. docs/design/ir-text.md (Limits) gives the
// budget: kilnd's threads have at least 2 MiB of stack (glibc's default when
// RLIMIT_STACK is unlimited; 8 MiB under the usual limit), and the IR library's
// walks must fit in a quarter of that, the whole pipeline in half.
#include <functional>
#include <string>
#include <vector>

#include <pthread.h>

#include "compiler/driver/compile_driver.h"
#include "compiler/ir/canonicalize.h"
#include "compiler/ir/hash.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/proto_convert.h"
#include "compiler/ir/text_parser.h"
#include "compiler/ir/verifier.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kiln/v1/program.pb.h"

namespace kiln::ir {
namespace {

using ::testing::HasSubstr;

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

// What the IR library's walks may use, and what the whole pipeline may use.
// Measured (docs/design/ir-text.md, Limits): the walks fit in 320 KiB at -O2
// and 832 KiB under AddressSanitizer at -O1, the pipeline in 640 KiB at -O2
// (not measured under AddressSanitizer, whose frames hold every temporary's
// redzones: it gets 16 times the budget).
constexpr size_t kIrStack = (size_t{512} << 10) * (kSanitized ? 4 : 1);
constexpr size_t kPipelineStack = (size_t{1} << 20) * (kSanitized ? 16 : 1);

// Runs `fn` on a thread with a `bytes` stack; an overflow crashes the test.
void RunOnStack(size_t bytes, const std::function<void()>& fn) {
  pthread_attr_t attr;
  ASSERT_EQ(pthread_attr_init(&attr), 0);
  ASSERT_EQ(pthread_attr_setstacksize(&attr, bytes), 0);
  pthread_t thread;
  auto body = [](void* arg) -> void* {
    (*static_cast<const std::function<void()>*>(arg))();
    return nullptr;
  };
  ASSERT_EQ(pthread_create(&thread, &attr, body, const_cast<std::function<void()>*>(&fn)), 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
}

std::string Repeat(const std::string& s, int n) {
  std::string out;
  out.reserve(s.size() * static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

// A program around `body` (statements inside the kernel block).
std::string ProgramText(const std::string& body) {
  return "program @deep {\n"
         "  sym M: int32\n"
         "  param A: global float32[M]\n"
         "  param B: global float32[M] out\n"
         "  kernel grid((M + 63) // 64) threads(64) as (bx) {\n" +
         body +
         "\n  }\n"
         "}\n";
}

// `levels` nested blocks (for, if, if-else in turn) around `inner`.
std::string Nest(int levels, const std::string& inner) {
  std::string open, close;
  for (int i = 0; i < levels; ++i) {
    switch (i % 3) {
    case 0:
      open += "for i" + std::to_string(i) + " in serial(2) { ";
      close += " }";
      break;
    case 1:
      open += "if bx < " + std::to_string(i) + " { ";
      close += " }";
      break;
    default:
      open += "if bx > 1 { B[1] = A[1] } else { ";
      close += " }";
      break;
    }
  }
  return open + inner + close;
}

struct Shape {
  std::string name;
  std::string text;
};

// The deepest programs that parse and verify: 200 nested blocks inside the
// kernel (the verifier's statement limit), expression trees 256
// levels high (the parsers' limit), and as many parentheses as the parser's
// recursion limit (3 x 256 levels, blocks included) leaves.
std::vector<Shape> DeepestAccepted() {
  // A[0] is two levels (the load and its index).
  const std::string chain = "A[0]" + Repeat(" + A[0]", 254);                 // 256 levels
  const std::string negations = Repeat("-", 254) + "A[0]";                   // 256 levels
  const std::string calls = Repeat("abs(", 254) + "A[0]" + Repeat(")", 254); // 256 levels
  const std::string index = "bx" + Repeat(" * 3 + 1", 127);                  // 255 levels
  const std::string parens = Repeat("(", 560) + chain + Repeat(")", 560);
  return {
      {"left-deep chain in nested blocks", ProgramText(Nest(200, "B[0] = " + chain))},
      {"negations in nested blocks", ProgramText(Nest(200, "B[0] = " + negations))},
      {"calls in nested blocks", ProgramText(Nest(200, "B[0] = " + calls))},
      {"parentheses in nested blocks", ProgramText(Nest(200, "B[0] = " + parens))},
      {"deep index in a parallel loop",
       ProgramText("for i in parallel(64) { B[" + index + "] = A[" + index + "] }")},
      {"deep extents", ProgramText("for i in serial(" + index + ") { B[i] = A[i] }")},
  };
}

TEST(DeepIrTest, DeepestAcceptedIrWalksFitInASmallStack) {
  for (const Shape& shape : DeepestAccepted()) {
    RunOnStack(kIrStack, [&] {
      SCOPED_TRACE(shape.name); // traces are per thread
      absl::StatusOr<ir::Program> p = ParseProgramText(shape.text, "deep.kir");
      ASSERT_TRUE(p.ok()) << p.status();
      ASSERT_TRUE(Verify(*p).ok()) << Verify(*p);
      // Printing (both forms) parses back to the same program.
      for (bool locations : {false, true}) {
        const std::string printed = PrintProgram(*p, PrintOptions{.locations = locations});
        absl::StatusOr<ir::Program> back = ParseProgramText(printed, "printed.kir");
        ASSERT_TRUE(back.ok()) << back.status();
        back->source_name = p->source_name;
        ir::Program a = *back, b = *p;
        StripLocations(&a);
        StripLocations(&b);
        EXPECT_EQ(a, b);
      }
      ir::Program canonical = Canonicalize(*p);
      EXPECT_EQ(ProgramKey(*p), HashCanonical(canonical));
      kiln::v1::Program proto;
      ToProto(*p, &proto);
      absl::StatusOr<ir::Program> from = FromProto(proto);
      ASSERT_TRUE(from.ok()) << from.status();
      EXPECT_EQ(*from, *p);
      ir::Program copy = *p; // copy, compare and destroy
      EXPECT_EQ(copy, *p);
    });
  }
}

TEST(DeepIrTest, DeepestAcceptedIrCompilesInASmallStack) {
  for (const Shape& shape : DeepestAccepted()) {
    RunOnStack(kPipelineStack, [&] {
      SCOPED_TRACE(shape.name);
      driver::ProgramInput in;
      in.kind = driver::ProgramInput::Kind::kIrText;
      in.text = shape.text;
      in.file_name = "deep.kir";
      for (const char* target : {"cpu", "cuda:sm_80", "cuda:sm_90a"}) {
        SCOPED_TRACE(target);
        driver::BuildOptions options;
        options.target = target;
        absl::StatusOr<driver::Prepared> prepared = driver::Prepare(in, options);
        ASSERT_TRUE(prepared.ok()) << prepared.status();
        absl::StatusOr<codegen::EmittedKernel> kernel = driver::Emit(*prepared, options);
        ASSERT_TRUE(kernel.ok()) << kernel.status();
        EXPECT_FALSE(kernel->source.empty());
      }
    });
  }
}

// FromProto accepts 256 levels of statements with an expression 256 levels
// high inside (the verifier then rejects the statements past 200 levels).
// Over gRPC, protobuf's recursion limit of 100 stops such a message earlier;
// this is for the library's other callers.
TEST(DeepIrTest, DeepestWireIrDecodesInASmallStack) {
  kiln::v1::Program proto;
  absl::StatusOr<kiln::v1::Program> base = ToProto(*ParseProgramText(ProgramText(""), "w.kir"));
  ASSERT_TRUE(base.ok()) << base.status();
  proto = *base;
  google::protobuf::RepeatedPtrField<kiln::v1::Stmt>* body = proto.mutable_kernel()->mutable_body();
  for (int i = 0; i < 255; ++i) {
    kiln::v1::Stmt* s = body->Add();
    s->set_kind(kiln::v1::STMT_KIND_IF);
    s->mutable_cond()->set_kind(kiln::v1::EXPR_KIND_INT);
    s->mutable_cond()->set_dtype(kiln::v1::DTYPE_BOOL);
    body = s->mutable_body();
  }
  kiln::v1::Stmt* store = body->Add();
  store->set_kind(kiln::v1::STMT_KIND_STORE);
  store->set_name("B");
  store->add_indices()->set_kind(kiln::v1::EXPR_KIND_INT);
  store->mutable_indices(0)->set_dtype(kiln::v1::DTYPE_INT32);
  kiln::v1::Expr* e = store->mutable_value();
  for (int i = 0; i < 255; ++i) {
    e->set_kind(kiln::v1::EXPR_KIND_UNARY);
    e->set_dtype(kiln::v1::DTYPE_FLOAT32);
    e->set_un_op(kiln::v1::UN_OP_NEG);
    e = e->add_args();
  }
  e->set_kind(kiln::v1::EXPR_KIND_FLOAT);
  e->set_dtype(kiln::v1::DTYPE_FLOAT32);
  RunOnStack(kIrStack, [&] {
    absl::StatusOr<ir::Program> p = FromProto(proto);
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_THAT(std::string(Verify(*p).message()),
                HasSubstr("statements are nested too deeply (more than 200 levels)"));
    kiln::v1::Program back;
    ToProto(*p, &back);
    EXPECT_EQ(back.SerializeAsString(), proto.SerializeAsString());
  });
  // One more level of either is an error.
  e->set_kind(kiln::v1::EXPR_KIND_UNARY);
  e->set_un_op(kiln::v1::UN_OP_NEG);
  e->add_args()->set_kind(kiln::v1::EXPR_KIND_FLOAT);
  e->mutable_args(0)->set_dtype(kiln::v1::DTYPE_FLOAT32);
  RunOnStack(kIrStack, [&] {
    EXPECT_THAT(std::string(FromProto(proto).status().message()),
                HasSubstr("expression nesting is deeper than 256 levels"));
  });
}

// One level past each limit, and far past it (up to 10^5 links or levels,
// within the token limit, which comes first otherwise): a
// located error, on the same small stack.
TEST(DeepIrTest, DeeperIrIsALocatedError) {
  struct Case {
    std::string name;
    std::string text;
    std::string message;
  };
  const std::string deep_chain = "A[0]" + Repeat(" + 1.0", 100000);
  const std::vector<Case> cases = {
      {"chain of 257 levels", ProgramText("B[0] = A[0]" + Repeat(" + A[0]", 256)),
       "deep.kir:6:1791: nesting too deep (more than 256 levels)"},
      {"chain of 10^5 operators", ProgramText("B[0] = " + deep_chain),
       "deep.kir:6:1537: nesting too deep (more than 256 levels)"},
      {"10^5 parentheses",
       ProgramText("B[0] = " + Repeat("(", 100000) + "A[0]" + Repeat(")", 100000)),
       "deep.kir:6:775: nesting too deep (more than 256 levels)"},
      {"10^5 negations", ProgramText("B[0] = " + Repeat("- ", 100000) + "A[0]"),
       "deep.kir:6:1542: nesting too deep (more than 256 levels)"},
      {"25,000 nested loops", ProgramText(Repeat("for i in serial(2) { ", 25000)),
       "deep.kir:6:5375: nesting too deep (more than 256 levels)"},
      {"15,000 nested else blocks", ProgramText(Repeat("if bx < 1 { B[0] = A[0] } else { ", 15000)),
       "deep.kir:6:8426: nesting too deep (more than 256 levels)"},
      {"blocks and parentheses share the recursion limit",
       ProgramText(Nest(200, "B[0] = " + Repeat("(", 600) + "A[0]" + Repeat(")", 600))),
       "nesting too deep (more than 256 levels)"},
      {"201 nested blocks in the kernel", ProgramText(Nest(201, "B[0] = A[0]")),
       "statements are nested too deeply (more than 200 levels)"},
  };
  for (const Case& c : cases) {
    RunOnStack(kIrStack, [&] {
      SCOPED_TRACE(c.name);
      absl::StatusOr<ir::Program> p = ParseProgramText(c.text, "deep.kir");
      absl::Status s = p.ok() ? Verify(*p) : p.status();
      ASSERT_FALSE(s.ok());
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(std::string(s.message()), HasSubstr(c.message));
    });
  }
}

} // namespace
} // namespace kiln::ir
