// ir::IndexLayout (T.Layout on a tensor parameter): the physical shape and
// flat offset (index_layout.h), the text and proto forms, the key, the
// canonical form and the verifier's checks.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/canonicalize.h"
#include "compiler/ir/hash.h"
#include "compiler/ir/index_layout.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/proto_convert.h"
#include "compiler/ir/simplify.h"
#include "compiler/ir/text_parser.h"
#include "compiler/ir/verifier.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::ir {
namespace {

using ::testing::HasSubstr;

// The attention-backward dQ layout: 8x8 blocks in the order of an MMA
// accumulator fragment, so that atomics of one thread are adjacent.
constexpr char kProgram[] = R"(program @p {
  param X: global float32[2, 16, 2, 16]
  param dQ: global float32[2, 16, 2, 16] layout(b, l, h, d) -> [b, l // 8, h, d // 8, d % 2, l % 8 * 4 + d % 8 // 2] out
  kernel grid(1) threads(32) as (bx) {
    copy X[0 +: 2, 0 +: 16, 0 +: 2, 0 +: 16] -> dQ[0 +: 2, 0 +: 16, 0 +: 2, 0 +: 16]
  }
}
)";

Program MustParse(const std::string& text) {
  absl::StatusOr<Program> p = ParseProgramText(text, "t.kir");
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : Program{};
}

int64_t Const(const Expr& e) { return ConstInt(Simplify(e)).value_or(-1); }

TEST(IndexLayoutTest, PhysicalShapeIsEachIndexMaxPlusOne) {
  Program p = MustParse(kProgram);
  const Buffer& dq = p.params[1].buffer;
  ASSERT_TRUE(dq.index_layout.has_value());
  absl::StatusOr<std::vector<Expr>> shape = CheckedIndexLayoutShape(dq, "t.kir");
  ASSERT_TRUE(shape.ok()) << shape.status();
  std::vector<int64_t> got;
  for (const Expr& e : *shape) got.push_back(Const(e));
  EXPECT_EQ(got, (std::vector<int64_t>{2, 2, 2, 2, 2, 32}));
  // Element (1, 9, 1, 13) -> (1, 1, 1, 1, 1, 4 * 1 + 5 / 2 = 6).
  std::vector<Expr> idx = {IntImm(1), IntImm(9), IntImm(1), IntImm(13)};
  const int64_t want = ((((1 * 2 + 1) * 2 + 1) * 2 + 1) * 2 + 1) * 32 + 6;
  EXPECT_EQ(Const(IndexLayoutOffset(*dq.index_layout, *shape, idx)), want);
}

TEST(IndexLayoutTest, SymbolicExtentsGiveSymbolicShapes) {
  // A permutation over a dynamic extent: [h, l, d] of [L, 4, 8].
  Program p = MustParse(R"(program @p {
  sym L: int32
  param dK: global float32[L, 4, 8] layout(l, h, d) -> [h, l, d]
  kernel grid(1) threads(32) as (bx) {
  }
}
)");
  absl::StatusOr<std::vector<Expr>> shape = CheckedIndexLayoutShape(p.params[0].buffer, "t.kir");
  ASSERT_TRUE(shape.ok()) << shape.status();
  EXPECT_EQ(Const((*shape)[0]), 4);
  EXPECT_EQ(PrintExpr((*shape)[1]), "cast<int64>(L)");
  EXPECT_EQ(Const((*shape)[2]), 8);
}

TEST(IndexLayoutTest, AFitThatDependsOnAnUnboundExtentIsRefused) {
  // ((L - 1) // 8 + 1) * 8 elements fit in L only when 8 divides L.
  Program p = MustParse(R"(program @p {
  sym L: int32
  param A: global float32[L] layout(i) -> [i // 8, i % 8]
  kernel grid(1) threads(32) as (bx) {
  }
}
)");
  EXPECT_TRUE(Verify(p).ok()) << Verify(p);
  absl::Status st = CheckedIndexLayoutShape(p.params[0].buffer, "t.kir").status();
  EXPECT_THAT(std::string(st.message()),
              HasSubstr("t.kir:3:3: T.Layout: cannot show that the layout of 'A' ("));
  EXPECT_THAT(std::string(st.message()), HasSubstr("bind the dimensions that decide it"));
}

TEST(IndexLayoutTest, TextAndProtoRoundTripKeepTheLayout) {
  Program p = MustParse(kProgram);
  ASSERT_TRUE(Verify(p).ok()) << Verify(p);
  const std::string text = PrintProgram(p);
  EXPECT_THAT(text, HasSubstr("layout(b, l, h, d) -> [b, l // 8, h, d // 8, d % 2, "));
  EXPECT_EQ(PrintProgram(MustParse(text)), text);
  // With locations, the layout's own location survives.
  PrintOptions locs;
  locs.locations = true;
  Program q = MustParse(PrintProgram(p, locs));
  EXPECT_EQ(q.params[1].buffer.index_layout, p.params[1].buffer.index_layout);

  absl::StatusOr<kiln::v1::Program> proto = ToProto(p);
  ASSERT_TRUE(proto.ok()) << proto.status();
  EXPECT_EQ(proto->params(1).buffer().index_layout().vars_size(), 4);
  absl::StatusOr<Program> back = FromProto(*proto);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->params, p.params);
}

TEST(IndexLayoutTest, KeyCoversTheLayoutAndCanonicalNames) {
  Program p = MustParse(kProgram);
  Program plain = p;
  plain.params[1].buffer.index_layout.reset();
  Program other = p;
  other.params[1].buffer.index_layout->forward[1] =
      Binary(BinOp::kFloorDiv, VarRef("l"), IntImm(4)); // a different physical order
  EXPECT_NE(ProgramKey(p), ProgramKey(plain));
  EXPECT_NE(ProgramKey(p), ProgramKey(other));
  // Renaming the layout's variables is cosmetic.
  std::string renamed = kProgram;
  const std::string from =
      "layout(b, l, h, d) -> [b, l // 8, h, d // 8, d % 2, l % 8 * 4 + d % 8 // 2]";
  renamed.replace(
      renamed.find(from), from.size(),
      "layout(b2, l2, h2, d2) -> [b2, l2 // 8, h2, d2 // 8, d2 % 2, l2 % 8 * 4 + d2 % 8 // 2]");
  Program r = MustParse(renamed);
  EXPECT_EQ(r.params[1].buffer.index_layout->vars[0], "b2");
  EXPECT_EQ(ProgramKey(r), ProgramKey(p));
  Program c = Canonicalize(p);
  EXPECT_EQ(c.params[1].buffer.index_layout->vars,
            (std::vector<std::string>{"l0", "l1", "l2", "l3"}));
}

TEST(IndexLayoutTest, LocatedErrors) {
  struct Case {
    std::string param;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"param A: global float32[8, 8] layout(i, j) -> [i, j * 2]",
       "T.Layout: the layout of 'A' maps into 120 elements but the tensor holds 64"},
      {"param A: global float32[8, 8] layout(i, j) -> [i - j]", "may be negative (down to -7)"},
      {"param A: global float32[8, 8] layout(i, j) -> [i // (j + 1)]",
       "divides by something other than a positive constant"},
      {"param A: global float32[8, 8] layout(i) -> [i]",
       "the layout takes 1 indices but the tensor has 2 dimensions"},
      {"param A: global float32[8, 8] layout(i, j) -> [i, k]", "t.kir:2:53: unknown name 'k'"},
      {"param A: global float32[8, 8] layout(i, A) -> [i]", "duplicate name 'A'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.param);
    const std::string text = absl::StrCat("program @p {\n  ", c.param,
                                          "\n  kernel grid(1) threads(32) as (bx) {\n  }\n}\n");
    absl::StatusOr<Program> p = ParseProgramText(text, "t.kir");
    absl::Status st = p.ok() ? Verify(*p) : p.status();
    if (st.ok() && p.ok()) st = CheckedIndexLayoutShape(p->params[0].buffer, "t.kir").status();
    ASSERT_FALSE(st.ok());
    if (c.error.rfind("t.kir", 0) != 0) {
      EXPECT_THAT(std::string(st.message()), HasSubstr("t.kir:2:3: "));
    }
    EXPECT_THAT(std::string(st.message()), HasSubstr(c.error));
  }
  // Not on scalars (only the proto form can say it).
  Program scalar = MustParse(kProgram);
  scalar.params[0].is_scalar = true;
  scalar.params[0].buffer.shape.clear();
  scalar.params[0].buffer.index_layout = scalar.params[1].buffer.index_layout;
  scalar.params[1].buffer.index_layout.reset();
  EXPECT_THAT(std::string(Verify(scalar).message()),
              HasSubstr("t.kir:2:3: scalar parameter 'X' cannot have a shape or a layout"));
  // Not on shared buffers (yet).
  absl::StatusOr<Program> p = ParseProgramText(R"(program @p {
  kernel grid(1) threads(32) as (bx) {
    alloc s: shared float32[8] layout(i) -> [i]
  }
}
)",
                                               "t.kir");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(std::string(Verify(*p).message()),
              HasSubstr("t.kir:3:5: T.Layout on shared buffer 's' is not supported yet"));
}

} // namespace
} // namespace kiln::ir
