// Tests of CompileSource: both TileLang forms, the compile-time evaluator and
// the lowering of kernel bodies to tile IR. Every program that compiles is
// also checked by the IR verifier.
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/frontend/frontend.h"
#include "compiler/ir/dtype.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/frontend_compile.h"

namespace kiln::frontend {
namespace {

using ir::DType;
using ir::StmtKind;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

using testing::Bindings;
using testing::Compile;
using testing::MustCompile;

std::string P(const ir::Expr& e) { return ir::PrintExpr(e); }

// The n-th statement of `kind` in pre-order.
const ir::Stmt* Find(const std::vector<ir::Stmt>& body, StmtKind kind, int n = 0) {
  const ir::Stmt* found = nullptr;
  ir::ForEachStmt(body, [&](const ir::Stmt& s) {
    if (s.kind == kind && n-- == 0) found = &s;
  });
  return found;
}

std::vector<StmtKind> Kinds(const std::vector<ir::Stmt>& body) {
  std::vector<StmtKind> out;
  for (const ir::Stmt& s : body) out.push_back(s.kind);
  return out;
}

std::string RegionText(const ir::Region& r) {
  std::string out = r.buffer + "[";
  for (size_t k = 0; k < r.ranges.size(); ++k) {
    absl::StrAppend(&out, k ? ", " : "", P(r.ranges[k].min), " +: ", P(r.ranges[k].extent));
  }
  return out + "]";
}

constexpr char kJitGemm[] = R"(import tilelang
import tilelang.language as T


@tilelang.jit
def matmul(A, B, block_M, block_N, block_K, dtype=T.float16, accum_dtype=T.float32):
    M, N, K = T.const("M, N, K")
    A: T.Tensor((M, K), dtype)
    B: T.Tensor((K, N), dtype)
    C = T.empty((M, N), dtype)
    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
        A_s = T.alloc_shared((block_M, block_K), dtype)
        B_s = T.alloc_shared((block_K, block_N), dtype)
        C_l = T.alloc_fragment((block_M, block_N), accum_dtype)
        T.clear(C_l)
        for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
            T.copy(A[by * block_M, k * block_K], A_s)
            T.copy(B[k * block_K, bx * block_N], B_s)
            T.gemm(A_s, B_s, C_l)
        T.copy(C_l, C[by * block_M, bx * block_N])
    return C
)";

TEST(FrontendTest, JitFormWithBoundShapes) {
  ir::Program p = MustCompile(kJitGemm, {{"M", "256"},
                                         {"N", "512"},
                                         {"K", "128"},
                                         {"block_M", "64"},
                                         {"block_N", "128"},
                                         {"block_K", "32"}});
  EXPECT_EQ(p.name, "matmul");
  EXPECT_EQ(p.source_name, "t.py");
  EXPECT_TRUE(p.symbols.empty());
  ASSERT_EQ(p.params.size(), 3u);
  EXPECT_EQ(p.params[0].buffer.name, "A");
  EXPECT_FALSE(p.params[0].is_output);
  EXPECT_EQ(p.params[2].buffer.name, "C");
  EXPECT_TRUE(p.params[2].is_output);
  EXPECT_EQ(p.params[1].buffer.dtype, DType::kFloat16);
  EXPECT_EQ(P(p.params[1].buffer.shape[0]), "128");
  EXPECT_EQ(P(p.params[1].buffer.shape[1]), "512");
  EXPECT_EQ(p.params[0].buffer.loc, (ir::Loc{8, 5}));
  // Grid (ceildiv folded at compile time), threads, block variables.
  ASSERT_EQ(p.kernel.grid.size(), 2u);
  EXPECT_EQ(P(p.kernel.grid[0]), "4");
  EXPECT_EQ(P(p.kernel.grid[1]), "4");
  EXPECT_THAT(p.kernel.threads, ElementsAre(128));
  EXPECT_THAT(p.kernel.block_vars, ElementsAre("bx", "by"));
  EXPECT_EQ(p.kernel.loc, (ir::Loc{11, 5}));
  EXPECT_THAT(Kinds(p.kernel.body),
              ElementsAre(StmtKind::kAlloc, StmtKind::kAlloc, StmtKind::kAlloc, StmtKind::kFill,
                          StmtKind::kFor, StmtKind::kCopy));
  const ir::Stmt& a_s = p.kernel.body[0];
  EXPECT_EQ(a_s.buffer.name, "A_s");
  EXPECT_EQ(a_s.buffer.scope, ir::Scope::kSharedDyn); // TileLang's default for alloc_shared
  EXPECT_EQ(p.kernel.body[2].buffer.scope, ir::Scope::kFragment);
  EXPECT_EQ(p.kernel.body[2].buffer.dtype, DType::kFloat32);
  EXPECT_EQ(a_s.loc, (ir::Loc{12, 15}));
  const ir::Stmt& clear = p.kernel.body[3];
  EXPECT_EQ(clear.value.dtype, DType::kFloat32);
  EXPECT_EQ(P(clear.value), "0.0");
  const ir::Stmt& loop = p.kernel.body[4];
  EXPECT_EQ(loop.for_kind, ir::ForKind::kPipelined);
  EXPECT_EQ(loop.num_stages, 3);
  EXPECT_THAT(loop.loop_vars, ElementsAre("k"));
  EXPECT_EQ(P(loop.extents[0]), "4");
  ASSERT_EQ(loop.body.size(), 3u);
  EXPECT_EQ(RegionText(loop.body[0].regions[0]), "A[by * 64 +: 64, k * 32 +: 32]");
  EXPECT_EQ(RegionText(loop.body[0].regions[1]), "A_s[0 +: 64, 0 +: 32]");
  const ir::Stmt& gemm = loop.body[2];
  EXPECT_EQ(gemm.kind, StmtKind::kGemm);
  EXPECT_FALSE(gemm.transpose_a);
  EXPECT_EQ(gemm.policy, ir::GemmPolicy::kSquare);
  EXPECT_EQ(RegionText(p.kernel.body[5].regions[1]), "C[by * 64 +: 64, bx * 128 +: 128]");
}

TEST(FrontendTest, JitFormUnboundConstsBecomeSymbols) {
  ir::Program p = MustCompile(kJitGemm, {{"block_M", "64"}, {"block_N", "64"}, {"block_K", "32"}});
  ASSERT_EQ(p.symbols.size(), 3u);
  EXPECT_EQ(p.symbols[0].name, "M");
  EXPECT_EQ(p.symbols[2].name, "K");
  EXPECT_EQ(p.symbols[0].dtype, DType::kInt32);
  EXPECT_EQ(p.symbols[0].loc, (ir::Loc{7, 15}));
  EXPECT_EQ(P(p.params[0].buffer.shape[0]), "M");
  EXPECT_EQ(P(p.kernel.grid[0]), "(N + 63) // 64");
  const ir::Stmt* loop = Find(p.kernel.body, StmtKind::kFor);
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(P(loop->extents[0]), "(K + 31) // 32");
}

TEST(FrontendTest, BindingErrors) {
  absl::StatusOr<ir::Program> p = Compile(kJitGemm, {{"block_M", "64"}, {"block_N", "64"}});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(), "t.py:6:36: parameter 'block_K' has no binding and no default");
  p = Compile(kJitGemm, {{"block_M", "64"}, {"block_N", "64"}, {"block_K", "32"}, {"bogus", "1"}});
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(), HasSubstr("t.py:6:1: unknown binding 'bogus'"));
  EXPECT_THAT(p.status().message(),
              HasSubstr("valid names: K, M, N, accum_dtype, block_K, block_M, block_N, dtype"));
  p = Compile(kJitGemm, {{"A", "1"}});
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(), HasSubstr("'A' is a tensor"));
}

constexpr char kFactory[] = R"(import tilelang.language as T

SCALE = 2 ** 3


def kernel(M, N, block, dtype="float16", use_scale=True):
    assert M % block == 0, "M must be a multiple of block"
    grid = M // block

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Buffer([M, N], dtype), alpha: T.float32,
             n: T.int32):
        with T.Kernel(grid, threads=[64, 2]) as bx:
            tile = T.alloc_fragment((block, N), "float")
            T.copy(A[bx * block:(bx + 1) * block, :], tile)
            for i, j in T.Parallel(block, N):
                if use_scale:
                    tile[i, j] = tile[i, j] * SCALE * alpha
                else:
                    tile[i, j] = tile[i, j] + n
            T.copy(tile, B[bx * block:(bx + 1) * block, 0:N])

    return main
)";

TEST(FactoryTest, ParamsDefaultsAndCompileTimeIf) {
  ir::Program p = MustCompile(kFactory, {{"M", "128"}, {"N", "64"}, {"block", "32"}});
  EXPECT_EQ(p.name, "kernel");
  ASSERT_EQ(p.params.size(), 4u);
  EXPECT_EQ(p.params[0].buffer.dtype, DType::kFloat16);
  EXPECT_FALSE(p.params[0].is_scalar);
  EXPECT_TRUE(p.params[2].is_scalar);
  EXPECT_EQ(p.params[2].buffer.name, "alpha");
  EXPECT_EQ(p.params[2].buffer.dtype, DType::kFloat32);
  EXPECT_EQ(p.params[3].buffer.dtype, DType::kInt32);
  EXPECT_EQ(p.params[1].buffer.loc, (ir::Loc{11, 42}));
  EXPECT_EQ(P(p.kernel.grid[0]), "4");
  EXPECT_THAT(p.kernel.threads, ElementsAre(64, 2));
  const ir::Stmt* copy = Find(p.kernel.body, StmtKind::kCopy);
  ASSERT_NE(copy, nullptr);
  // The slice extent (bx + 1) * 32 - bx * 32 simplifies to 32.
  EXPECT_EQ(RegionText(copy->regions[0]), "A[bx * 32 +: 32, 0 +: 64]");
  const ir::Stmt* store = Find(p.kernel.body, StmtKind::kStore);
  ASSERT_NE(store, nullptr);
  // float32 tile * 8 * alpha: the int literal takes the float32 dtype.
  EXPECT_EQ(P(store->value), "tile[i, j] * 8.0 * alpha");
  EXPECT_EQ(Find(p.kernel.body, StmtKind::kIf), nullptr);

  p = MustCompile(kFactory, {{"M", "128"}, {"N", "64"}, {"block", "32"}, {"use_scale", "false"}});
  store = Find(p.kernel.body, StmtKind::kStore);
  ASSERT_NE(store, nullptr);
  // float32 + int32 scalar param: the param is cast to float32.
  EXPECT_EQ(store->value.args[1].kind, ir::ExprKind::kCast);
  EXPECT_EQ(store->value.args[1].dtype, DType::kFloat32);
}

TEST(FactoryTest, AssertFailureIsLocated) {
  absl::StatusOr<ir::Program> p = Compile(kFactory, {{"M", "100"}, {"N", "64"}, {"block", "32"}});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(), "t.py:7:5: assertion failed: M must be a multiple of block");
}

TEST(FactoryTest, TopLevelPrimFuncWithModuleConstants) {
  ir::Program p = MustCompile(R"(import tilelang.language as T
N = 256
BLOCK = N // 4
DT = T.bfloat16
m = T.dynamic("m")

@T.prim_func
def add_one(X: T.Tensor((m, N), DT), Y: T.Tensor((m, N), DT)):
    with T.Kernel(T.ceildiv(m, BLOCK), threads=128) as bx:
        for i, j in T.Parallel(BLOCK, N):
            Y[bx * BLOCK + i, j] = X[bx * BLOCK + i, j] + 1
)");
  EXPECT_EQ(p.name, "add_one");
  ASSERT_EQ(p.symbols.size(), 1u);
  EXPECT_EQ(p.symbols[0].name, "m");
  EXPECT_EQ(P(p.params[0].buffer.shape[0]), "m");
  EXPECT_EQ(P(p.kernel.grid[0]), "(m + 63) // 64");
  const ir::Stmt* store = Find(p.kernel.body, StmtKind::kStore);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->value.dtype, DType::kBFloat16);
  EXPECT_EQ(store->value.args[1].dtype, DType::kBFloat16);
}

TEST(FrontendTest, JitDecoratorArguments) {
  ir::Program p = MustCompile(R"(import tilelang
import tilelang.language as T

@autotune(configs=undefined_function(), warmup=10)
@tilelang.jit(out_idx=[-1], pass_configs={tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True,
                                          "tl.custom": 3})
def f(n):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=32):
            T.copy(A, B)
    return main
)",
                              {{"n", "64"}});
  ASSERT_EQ(p.params.size(), 2u);
  EXPECT_FALSE(p.params[0].is_output);
  EXPECT_TRUE(p.params[1].is_output);
  EXPECT_EQ(p.attrs.at("tl.enable_fast_math"), "true");
  EXPECT_EQ(p.attrs.at("tl.custom"), "3");
  EXPECT_THAT(p.kernel.block_vars, ElementsAre("bx"));
}

TEST(FrontendTest, DTypeNames) {
  struct Case {
    std::string spelling;
    DType dtype;
  };
  std::vector<Case> cases = {
      {"T.float16", DType::kFloat16},
      {"T.half", DType::kFloat16},
      {"T.float", DType::kFloat32},
      {"T.float32", DType::kFloat32},
      {"T.double", DType::kFloat64},
      {"T.bfloat16", DType::kBFloat16},
      {"T.int8", DType::kInt8},
      {"T.uint16", DType::kUInt16},
      {"T.int64", DType::kInt64},
      {"T.bool", DType::kBool},
      {"T.float8_e4m3", DType::kFloat8E4M3},
      {"T.float8_e4m3fn", DType::kFloat8E4M3},
      {"T.float8_e5m2", DType::kFloat8E5M2},
      {"\"float\"", DType::kFloat32},
      {"\"float16\"", DType::kFloat16},
      {"\"int\"", DType::kInt32},
      {"A.dtype", DType::kFloat64},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.spelling);
    std::string src = absl::StrCat(R"(import tilelang.language as T
@T.prim_func
def f(A: T.Tensor((4,), T.float64)):
    with T.Kernel(1, threads=32):
        x = T.alloc_fragment((4,), )",
                                   c.spelling, ")\n");
    ir::Program p = MustCompile(src);
    const ir::Stmt* alloc = Find(p.kernel.body, StmtKind::kAlloc);
    ASSERT_NE(alloc, nullptr);
    EXPECT_EQ(alloc->buffer.dtype, c.dtype);
  }
  absl::StatusOr<ir::Program> bad = Compile(R"(import tilelang.language as T
@T.prim_func
def f():
    with T.Kernel(1):
        x = T.alloc_fragment((4,), "fp16")
)");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "t.py:5:13: unknown dtype 'fp16'");
}

constexpr char kOps[] = R"(import tilelang.language as T

@T.prim_func
def ops(Q: T.Tensor((2, 4, 128, 64), "float16"), O: T.Tensor((128, 64), "float32"),
        S: T.Tensor((64,), "float32")):
    with T.Kernel(2, 4, threads=128) as (bz, by):
        q = T.alloc_shared((64, 64), "float16")
        acc = T.alloc_fragment((64, 64), "float32")
        m = T.alloc_fragment((64,), "float32")
        T.copy(Q[bz, by, 64, 0], q)
        T.copy(Q[bz, by, 0:64, :], q)
        T.fill(acc, -T.infinity("float32"))
        T.fill(acc[0:32, :], 1)
        T.reduce_max(acc, m, dim=-1, clear=False)
        T.reduce_sum(acc, m, 0)
        T.reduce_abssum(acc, m)
        T.reduce_absmax(acc, m, dim=1)
        T.atomic_add(O[by, 3], acc[1, 2])
        T.atomic_max(O[0:64, :], acc)
        T.atomic_min(S[7], 2.5)
        T.gemm(q, q, acc, transpose_A=True, transpose_B=True, clear_accum=True,
               policy=T.GemmWarpPolicy.FullCol, k_pack=2, wg_wait=0)
        T.copy(q[1, 2], acc[3, 4])
        T.copy(acc, O[64 * bz, 0])
)";

TEST(TileOpsTest, RegionsAndFlags) {
  ir::Program p = MustCompile(kOps);
  const auto& b = p.kernel.body;
  const ir::Stmt* c0 = Find(b, StmtKind::kCopy, 0);
  // Start corner: extents from the 2-d destination, leading dims extent 1.
  EXPECT_EQ(RegionText(c0->regions[0]), "Q[bz +: 1, by +: 1, 64 +: 64, 0 +: 64]");
  const ir::Stmt* c1 = Find(b, StmtKind::kCopy, 1);
  EXPECT_EQ(RegionText(c1->regions[0]), "Q[bz +: 1, by +: 1, 0 +: 64, 0 +: 64]");
  const ir::Stmt* f0 = Find(b, StmtKind::kFill, 0);
  EXPECT_EQ(f0->value.kind, ir::ExprKind::kFloat);
  EXPECT_TRUE(std::isinf(f0->value.fval) && f0->value.fval < 0);
  const ir::Stmt* f1 = Find(b, StmtKind::kFill, 1);
  EXPECT_EQ(RegionText(f1->regions[0]), "acc[0 +: 32, 0 +: 64]");
  EXPECT_EQ(P(f1->value), "1.0");
  const ir::Stmt* r0 = Find(b, StmtKind::kReduce, 0);
  EXPECT_EQ(r0->reduce_kind, ir::ReduceKind::kMax);
  EXPECT_EQ(r0->dim, 1);
  EXPECT_FALSE(r0->clear);
  const ir::Stmt* r1 = Find(b, StmtKind::kReduce, 1);
  EXPECT_EQ(r1->reduce_kind, ir::ReduceKind::kSum);
  EXPECT_EQ(r1->dim, 0);
  EXPECT_TRUE(r1->clear);
  EXPECT_EQ(Find(b, StmtKind::kReduce, 2)->reduce_kind, ir::ReduceKind::kAbsSum);
  EXPECT_EQ(Find(b, StmtKind::kReduce, 2)->dim, 1); // default dim=-1
  EXPECT_EQ(Find(b, StmtKind::kReduce, 3)->reduce_kind, ir::ReduceKind::kAbsMax);
  const ir::Stmt* a0 = Find(b, StmtKind::kAtomic, 0);
  EXPECT_EQ(a0->atomic_op, ir::AtomicOp::kAdd);
  ASSERT_EQ(a0->regions.size(), 1u);
  EXPECT_EQ(RegionText(a0->regions[0]), "O[by +: 1, 3 +: 1]");
  EXPECT_TRUE(a0->has_value);
  EXPECT_EQ(P(a0->value), "acc[1, 2]");
  const ir::Stmt* a1 = Find(b, StmtKind::kAtomic, 1);
  EXPECT_EQ(a1->atomic_op, ir::AtomicOp::kMax);
  ASSERT_EQ(a1->regions.size(), 2u);
  EXPECT_EQ(RegionText(a1->regions[0]), "O[0 +: 64, 0 +: 64]");
  EXPECT_EQ(RegionText(a1->regions[1]), "acc[0 +: 64, 0 +: 64]");
  const ir::Stmt* a2 = Find(b, StmtKind::kAtomic, 2);
  EXPECT_EQ(a2->atomic_op, ir::AtomicOp::kMin);
  EXPECT_EQ(P(a2->value), "2.5");
  const ir::Stmt* g = Find(b, StmtKind::kGemm);
  EXPECT_TRUE(g->transpose_a);
  EXPECT_TRUE(g->transpose_b);
  EXPECT_TRUE(g->clear_accum);
  EXPECT_EQ(g->k_pack, 2);
  EXPECT_EQ(g->policy, ir::GemmPolicy::kFullCol);
  // Two single elements: a store with a cast to the destination dtype.
  const ir::Stmt* st = Find(b, StmtKind::kStore);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(st->name, "acc");
  EXPECT_EQ(st->value.kind, ir::ExprKind::kCast);
  EXPECT_EQ(st->value.dtype, DType::kFloat32);
  const ir::Stmt* last = Find(b, StmtKind::kCopy, 2);
  EXPECT_EQ(RegionText(last->regions[1]), "O[64 * bz +: 64, 0 +: 64]");
}

TEST(TileOpsTest, LayoutsAndSwizzle) {
  ir::Program p = MustCompile(R"(import tilelang.language as T
from tilelang.layout import make_full_bank_swizzled_layout

@T.prim_func
def f(A: T.Tensor((64, 64), "float16")):
    with T.Kernel(1, threads=128):
        a = T.alloc_shared((64, 64), "float16", scope="shared")
        b = T.alloc_shared((64, 64), "float16")
        T.annotate_layout({a: T.make_swizzled_layout(a), b: make_full_bank_swizzled_layout(b)})
        T.use_swizzle(panel_size=10, order="column")
        T.use_swizzle(8, enable=False)
        T.copy(A, a)
        T.copy(a, b)
)");
  const auto& b = p.kernel.body;
  EXPECT_EQ(b[0].buffer.scope, ir::Scope::kShared);
  const ir::Stmt* l0 = Find(b, StmtKind::kAnnotateLayout, 0);
  EXPECT_EQ(l0->name, "a");
  EXPECT_EQ(l0->layout, "swizzled");
  EXPECT_EQ(Find(b, StmtKind::kAnnotateLayout, 1)->layout, "full_bank_swizzled");
  const ir::Stmt* s0 = Find(b, StmtKind::kUseSwizzle, 0);
  EXPECT_EQ(s0->panel_size, 10);
  EXPECT_EQ(s0->swizzle_order, "col");
  EXPECT_TRUE(s0->enable);
  const ir::Stmt* s1 = Find(b, StmtKind::kUseSwizzle, 1);
  EXPECT_EQ(s1->swizzle_order, "row");
  EXPECT_FALSE(s1->enable);
}

TEST(LoopsTest, KindsStartsAndSteps) {
  ir::Program p = MustCompile(R"(import tilelang.language as T

@T.prim_func
def f(A: T.Tensor((64,), "int32"), n: T.int32):
    with T.Kernel(1, threads=64):
        for i in T.serial(2, 10, 2):
            A[i] = i
        for i in range(3, n):
            A[i] = 0
        for i in T.unroll(4):
            for j in T.vectorized(4):
                A[i * 4 + j] = 1
        for k in T.Pipelined(1, 9, num_stages=2, order=[1, 0], stage=[0, 1]):
            A[k] = k
        for i in T.serial(10, 0, -3):
            A[i] = 2
)");
  const auto& b = p.kernel.body;
  ASSERT_EQ(b.size(), 5u);
  EXPECT_EQ(b[0].for_kind, ir::ForKind::kSerial);
  EXPECT_EQ(P(b[0].extents[0]), "4");
  EXPECT_EQ(P(b[0].body[0].indices[0]), "2 + i * 2");
  EXPECT_EQ(P(b[1].extents[0]), "n - 3");
  EXPECT_THAT(b[1].loop_vars, ElementsAre("i_1")); // shadowed names are made unique
  EXPECT_EQ(b[2].for_kind, ir::ForKind::kUnroll);
  EXPECT_EQ(b[2].body[0].for_kind, ir::ForKind::kVectorized);
  EXPECT_EQ(b[3].for_kind, ir::ForKind::kPipelined);
  EXPECT_EQ(P(b[3].extents[0]), "8");
  EXPECT_EQ(b[3].num_stages, 2);
  EXPECT_THAT(b[3].order, ElementsAre(1, 0));
  EXPECT_THAT(b[3].stage, ElementsAre(0, 1));
  EXPECT_EQ(P(b[4].extents[0]), "4"); // 10, 7, 4, 1
  EXPECT_EQ(P(b[4].body[0].indices[0]), "10 + i_3 * -3");
}

TEST(LoopsTest, ParallelTargetsAndScoping) {
  ir::Program p = MustCompile(R"(import tilelang.language as T

@T.prim_func
def f(A: T.Tensor((8, 16), "float32")):
    with T.Kernel(1, threads=128):
        for i, j in T.Parallel(8, 16):
            idx = i * 16 + j
            A[i, j] = idx
        for i in T.Parallel(8):
            A[i, 0] = 0.5
)");
  const ir::Stmt& par = p.kernel.body[0];
  EXPECT_EQ(par.for_kind, ir::ForKind::kParallel);
  EXPECT_THAT(par.loop_vars, ElementsAre("i", "j"));
  EXPECT_EQ(P(par.extents[1]), "16");
  // `idx` is inlined; the int expression is cast to the buffer's float32.
  EXPECT_EQ(par.body[0].value.kind, ir::ExprKind::kCast);
  EXPECT_EQ(P(par.body[0].value.args[0]), "i * 16 + j");

  absl::StatusOr<ir::Program> leak = Compile(R"(import tilelang.language as T
@T.prim_func
def f(A: T.Tensor((8,), "float32")):
    with T.Kernel(1, threads=128):
        for i in T.Parallel(8):
            idx = i
        A[0] = idx
)");
  ASSERT_FALSE(leak.ok());
  EXPECT_EQ(leak.status().message(), "t.py:7:16: name 'idx' is not defined");

  // A Python name bound outside a run-time loop cannot be rebound inside it
  // (it would keep only one trace's value); straight-line rebinding of names
  // made inside the loop, and macro locals, are fine.
  absl::StatusOr<ir::Program> rebind = Compile(R"(import tilelang.language as T
@T.prim_func
def f(A: T.Tensor((8,), "float32")):
    with T.Kernel(1, threads=128):
        total = 0
        for i in T.serial(8):
            t = A[i]
            t = t * 2
            total += t
        A[0] = total
)");
  ASSERT_FALSE(rebind.ok());
  EXPECT_EQ(rebind.status().message(),
            "t.py:9:13: cannot rebind 'total' inside a run-time loop or branch (it is bound "
            "outside); use T.alloc_var for a mutable variable");
  MustCompile(R"(import tilelang.language as T
@T.macro
def twice(buf, k):
    k = k * 2
    buf[k] = 1
@T.prim_func
def f(A: T.Tensor((16,), "float32")):
    with T.Kernel(1, threads=128):
        for i in T.serial(8):
            twice(A, i)
)");
}

TEST(ControlFlowTest, SymbolicIfElifAndLogic) {
  ir::Program p = MustCompile(R"(import tilelang.language as T

@T.prim_func
def f(A: T.Tensor((64,), "float16"), n: T.int32):
    with T.Kernel(1, threads=64):
        for i in T.Parallel(64):
            if i < n and not i == 3:
                A[i] = 1
            elif i >= n or 0 <= i < 2:
                A[i] = 2
            else:
                A[i] = 3
)");
  const ir::Stmt* s = Find(p.kernel.body, StmtKind::kIf);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->cond.dtype, DType::kBool);
  EXPECT_EQ(s->cond.bop, ir::BinOp::kAnd);
  EXPECT_EQ(s->cond.args[1].kind, ir::ExprKind::kUnary);
  ASSERT_EQ(s->else_body.size(), 1u);
  const ir::Stmt& elif = s->else_body[0];
  EXPECT_EQ(elif.kind, StmtKind::kIf);
  EXPECT_EQ(elif.cond.bop, ir::BinOp::kOr);
  EXPECT_EQ(P(elif.cond.args[1]), "0 <= i && i < 2");
  ASSERT_EQ(elif.else_body.size(), 1u);
  EXPECT_EQ(P(elif.else_body[0].value), "float16(3.0)");
}

TEST(ControlFlowTest, AllocVarLoadsAndStores) {
  ir::Program p = MustCompile(R"(import tilelang.language as T

@T.prim_func
def f(A: T.Tensor((64,), "float32")):
    with T.Kernel(1, threads=64):
        acc = T.alloc_var("float32", 1.5)
        cnt = T.alloc_var(T.int32)
        for i in T.serial(64):
            acc = acc + A[i]
            cnt += 1
        A[0] = acc
)");
  const auto& b = p.kernel.body;
  EXPECT_EQ(b[0].buffer.scope, ir::Scope::kVar);
  EXPECT_TRUE(b[0].buffer.has_init);
  EXPECT_EQ(P(b[0].buffer.init), "1.5");
  EXPECT_FALSE(b[1].buffer.has_init);
  const ir::Stmt& loop = b[2];
  EXPECT_EQ(loop.body[0].name, "acc");
  EXPECT_EQ(P(loop.body[0].value), "acc[0] + A[i]");
  EXPECT_EQ(P(loop.body[1].value), "cnt[0] + 1");
  EXPECT_EQ(P(b[3].value), "acc[0]");
}

TEST(ExprTest, PromotionAndIntrinsics) {
  ir::Program p = MustCompile(R"(import tilelang.language as T

@T.prim_func
def f(H: T.Tensor((16,), "float16"), F: T.Tensor((16,), "float32"), I: T.Tensor((16,), "int32"),
      L: T.Tensor((16,), "int64"), n: T.int32):
    with T.Kernel(1, threads=32):
        for i in T.Parallel(16):
            H[i] = H[i] + 1
            F[i] = H[i] + F[i]
            F[i] = I[i] * 0.5
            L[i] = L[i] + I[i]
            F[i] = T.exp2(F[i] * 2) + T.max(F[i], 0) + T.sqrt(I[i])
            F[i] = T.if_then_else(i < n, F[i], -T.infinity(F.dtype))
            I[i] = T.cast(F[i], "int32") + F[i].astype(T.int32) + i // 4 + i % 3 + i / 2
            I[i] = T.min(i, n) + T.ceildiv(n, 64) + T.get_thread_binding(0) + T.floordiv(n, 2)
            F[i] = T.float32(3) + T.max_value("float16")
)");
  std::vector<const ir::Stmt*> s;
  ir::ForEachStmt(p.kernel.body, [&](const ir::Stmt& x) {
    if (x.kind == StmtKind::kStore) s.push_back(&x);
  });
  ASSERT_EQ(s.size(), 9u);
  EXPECT_EQ(P(s[0]->value), "H[i] + float16(1.0)");
  // float16 + float32: the float16 operand is cast.
  EXPECT_EQ(s[1]->value.args[0].kind, ir::ExprKind::kCast);
  EXPECT_EQ(s[1]->value.dtype, DType::kFloat32);
  // int32 * 0.5: both float32.
  EXPECT_EQ(s[2]->value.args[0].kind, ir::ExprKind::kCast);
  EXPECT_EQ(P(s[2]->value.args[1]), "0.5");
  // int64 + int32: the int32 operand widens.
  EXPECT_EQ(s[3]->value.args[1].kind, ir::ExprKind::kCast);
  EXPECT_EQ(s[3]->value.args[1].dtype, DType::kInt64);
  EXPECT_EQ(P(s[4]->value), "exp2(F[i] * 2.0) + max(F[i], 0.0) + sqrt(cast<float32>(I[i]))");
  EXPECT_EQ(P(s[5]->value), "select(i < n, F[i], -inf)");
  EXPECT_EQ(P(s[6]->value), "cast<int32>(F[i]) + cast<int32>(F[i]) + i // 4 + i % 3 + i / 2");
  EXPECT_EQ(P(s[7]->value), "min(i, n) + (n + 63) // 64 + thread_idx(0) + n // 2");
  EXPECT_EQ(P(s[8]->value), "3.0 + 65504.0");
}

TEST(ExprTest, SymbolicConditionalAndTwoOutputs) {
  ir::Program p = MustCompile(R"(import tilelang
import tilelang.language as T

@tilelang.jit
def k(X):
    X: T.Tensor((32,), T.float32)
    Lo = T.empty((32,), T.float32)
    Hi = T.empty((32,), T.int8)
    with T.Kernel(1, threads=(32, 1, 1)) as (bx,):
        for i in T.Parallel(32):
            Lo[i] = X[i] if X[i] < 0 else T.sin(X[i]) - T.min_value(T.float32)
            Hi[i] = T.max_value(T.int8) if i % 2 == 0 else -1
    return Lo, Hi
)");
  ASSERT_EQ(p.params.size(), 3u);
  EXPECT_TRUE(p.params[1].is_output);
  EXPECT_TRUE(p.params[2].is_output);
  EXPECT_EQ(p.params[2].buffer.dtype, DType::kInt8);
  EXPECT_THAT(p.kernel.threads, ElementsAre(32, 1, 1));
  const ir::Stmt* s0 = Find(p.kernel.body, StmtKind::kStore, 0);
  EXPECT_EQ(s0->value.kind, ir::ExprKind::kSelect);
  EXPECT_EQ(P(s0->value.args[0]), "X[i] < 0.0");
  EXPECT_EQ(s0->value.args[2].args[0].fn, ir::Intrinsic::kSin);
  const ir::Stmt* s1 = Find(p.kernel.body, StmtKind::kStore, 1);
  EXPECT_EQ(P(s1->value), "select(i % 2 == 0, int8(127), int8(-1))");
}

TEST(ExprTest, PythonSemanticsAtCompileTime) {
  struct Case {
    std::string expr;
    std::string want; // the printed float32 fill value
  };
  std::vector<Case> cases = {
      {"7 / 2", "3.5"},
      {"-7 // 2", "-4.0"},
      {"-7 % 3", "2.0"},
      {"7 % -3", "-2.0"},
      {"2 ** 10", "1024.0"},
      {"2 ** -1", "0.5"},
      {"7.5 // 2", "3.0"},
      {"-7.5 % 2", "0.5"},
      {"1 if 3 > 2 > 1 else 0", "1.0"},
      {"(1, 2, 3)[-1]", "3.0"},
      {"len([1, 2] + [3])", "3.0"},
      {"max(3, 9, 4)", "9.0"},
      {"min([5, 2])", "2.0"},
      {"abs(-4)", "4.0"},
      {"int(3.9)", "3.0"},
      {"float(2)", "2.0"},
      {"sum(range(5))", "10.0"},
      {"True + True", "2.0"},
      {"3 and 5", "5.0"},
      {"0 or 7", "7.0"},
      {"sum([x * x for x in range(4)])", "14.0"},
      {"{'a': 1, 'b': 2}['b']", "2.0"},
      {"(x := 1) if False else 6", "6.0"},
      {"T.ceildiv(10, 3)", "4.0"},
      {"1 << 4 | 1", "17.0"},
      {"divmod(17, 5)[1]", "2.0"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.expr);
    std::string src = absl::StrCat(R"(import tilelang.language as T
@T.prim_func
def f(A: T.Tensor((4,), "float32")):
    with T.Kernel(1, threads=32):
        T.fill(A, )",
                                   c.expr, ")\n");
    absl::StatusOr<ir::Program> p = Compile(src);
    ASSERT_TRUE(p.ok()) << p.status();
    const ir::Stmt* fill = Find(p->kernel.body, StmtKind::kFill);
    ASSERT_NE(fill, nullptr);
    EXPECT_EQ(P(fill->value), c.want);
  }
}

TEST(ExprTest, CompileTimeErrors) {
  struct Case {
    std::string expr;
    std::string error;
  };
  std::vector<Case> cases = {
      {"1 // 0", "t.py:5:19: integer division or modulo by zero"},
      {"2 ** 64", "t.py:5:19: integer overflow in compile-time arithmetic"},
      {"(1, 2)[5]", "t.py:5:19: index 5 is out of range"},
      {"undefined_name", "t.py:5:19: name 'undefined_name' is not defined"},
      {"T.nonexistent(1)", "t.py:5:19: 'T.nonexistent' is not supported (unknown TileLang name)"},
      {"'a' - 1", "t.py:5:19: unsupported operand types for -: 'str' and 'int'"},
      {"(x := 1)", "t.py:5:20: assignment expressions (':=') are not supported"},
      {"[i for i in range(3)][0] + (lambda x: x)()",
       "t.py:5:46: <lambda>() missing required argument 'x'"},
      {"f\"{A}\"", "t.py:5:22: f-string: cannot format a buffer"},
      {"A[0:2]",
       "t.py:5:19: a slice is not a single element here; use T.copy or T.fill for regions"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.expr);
    std::string src = absl::StrCat(R"(import tilelang.language as T
@T.prim_func
def f(A: T.Tensor((4,), "float32")):
    with T.Kernel(1, threads=32):
        T.fill(A, )",
                                   c.expr, ")\n");
    absl::StatusOr<ir::Program> p = Compile(src);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().message(), c.error);
  }
}

TEST(FrontendTest, MoreSurfaceForms) {
  ir::Program p = MustCompile(R"(import tilelang
import tilelang.language as T
from tvm import DataType

@tilelang.jit(out_idx=-1)
def k(A, n, scale, block=32):
    m = T.symbolic("m")
    A: T.Tensor[(m, 64), T.float16]
    n: T.int32
    Out = T.empty(m, 64, dtype=T.float32)
    bits = DataType(A.dtype).bits
    with T.Kernel(T.ceildiv(m, block)):
        x: T.int32 = 7
        loc = T.alloc_local([2], "float32")
        buf = T.alloc_buffer((block, A.shape[1]), T.float16, scope="shared")
        T.copy(A[0:block, :], buf)
        for i in range(bits // 8):
            loc[i] = scale + x + n
        Out[0, 0] = loc[0]
    return Out
)",
                              {{"scale", "0.5"}});
  ASSERT_EQ(p.symbols.size(), 1u);
  EXPECT_EQ(p.symbols[0].name, "m");
  ASSERT_EQ(p.params.size(), 3u);
  EXPECT_EQ(p.params[0].buffer.name, "A");
  EXPECT_TRUE(p.params[1].is_scalar);
  EXPECT_EQ(p.params[1].buffer.name, "n");
  EXPECT_EQ(p.params[2].buffer.name, "Out");
  EXPECT_TRUE(p.params[2].is_output);
  EXPECT_EQ(p.params[2].buffer.dtype, DType::kFloat32);
  EXPECT_THAT(p.kernel.threads, ElementsAre(128)); // TileLang's default
  EXPECT_THAT(p.kernel.block_vars, ElementsAre("bx"));
  const auto& b = p.kernel.body;
  EXPECT_EQ(b[0].buffer.name, "x");
  EXPECT_EQ(b[0].buffer.scope, ir::Scope::kVar);
  EXPECT_EQ(P(b[0].buffer.init), "7");
  EXPECT_EQ(b[1].buffer.scope, ir::Scope::kLocal);
  EXPECT_EQ(b[2].buffer.scope, ir::Scope::kShared);
  EXPECT_EQ(P(b[2].buffer.shape[1]), "64");
  const ir::Stmt* loop = Find(b, StmtKind::kFor);
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(P(loop->extents[0]), "2"); // float16 is 16 bits
  EXPECT_EQ(loop->loc, (ir::Loc{17, 9}));
  EXPECT_EQ(loop->body[0].loc, (ir::Loc{18, 13}));
  EXPECT_EQ(P(loop->body[0].value), "0.5 + cast<float32>(x[0]) + cast<float32>(n)");
}

TEST(FrontendTest, EntrySelection) {
  constexpr char kTwo[] = R"(import tilelang.language as T
import argparse
parser = argparse.ArgumentParser()

@T.prim_func
def a(A: T.Tensor((4,), "float32")):
    with T.Kernel(1, threads=32):
        T.fill(A, 1)

def b(n):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=32):
            T.fill(A, 2)
    return main

def helper():
    return 1

if __name__ == "__main__":
    print(f"{parser}")
)";
  absl::StatusOr<ir::Program> p = Compile(kTwo);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(),
            "t.py: several kernel functions (a, b); choose one with the entry option");
  ir::Program pa = MustCompile(kTwo, {}, "a");
  EXPECT_EQ(pa.name, "a");
  ir::Program pb = MustCompile(kTwo, {{"n", "8"}}, "b");
  EXPECT_EQ(pb.name, "b");
  EXPECT_EQ(P(pb.params[0].buffer.shape[0]), "8");
  p = Compile(kTwo, {}, "nope");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(), "t.py: entry function 'nope' not found; candidates: a, b");
}

TEST(FrontendTest, MacroAndHelperFunctions) {
  ir::Program p = MustCompile(R"(import tilelang
import tilelang.language as T

def tile_of(n, parts=2):
    return n // parts

@tilelang.jit
def k(A, block):
    N = T.const("N")
    A: T.Tensor((N,), T.float32)

    @T.macro
    def zero(buf, lo):
        for i in T.Parallel(tile_of(block)):
            buf[lo + i] = 0

    with T.Kernel(T.ceildiv(N, block), threads=64) as bx:
        zero(A, bx * block)
        zero(A, bx * block + tile_of(block))
)",
                              {{"N", "1024"}, {"block", "128"}});
  ASSERT_EQ(p.kernel.body.size(), 2u);
  EXPECT_EQ(P(p.kernel.body[0].extents[0]), "64");
  EXPECT_EQ(P(p.kernel.body[1].body[0].indices[0]), "bx * 128 + 64 + i_1");
}

TEST(FrontendTest, RecursionIsBounded) {
  std::string expr = "1";
  for (int k = 0; k < 150; ++k) expr = absl::StrCat("f(", expr, ")");
  std::string src = absl::StrCat(R"(import tilelang.language as T
def f(x):
    return f(x)
@T.prim_func
def g(A: T.Tensor((4,), "float32")):
    with T.Kernel(1, threads=32):
        T.fill(A, f(1))
)");
  absl::StatusOr<ir::Program> p = Compile(src);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(), HasSubstr("nesting too deep"));
}

// A user's names that the IR text reserves (`out`, `max`, `exp`, `in`) get
// safe IR names, and each symbol and parameter keeps the user's spelling as
// its user name: what launch metadata and tools show.
TEST(FrontendTest, ReservedWordsKeepTheUsersNameBesideTheIrName) {
  ir::Program p = MustCompile(R"(import tilelang
import tilelang.language as T

@tilelang.jit
def scale(x, max, exp, block=64):
    n = T.const("in")
    x: T.Tensor((n,), "float32")
    max: T.Tensor((n,), "float32")
    exp: T.float32
    out = T.empty((n,), "float32")
    with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
        for i in T.Parallel(block):
            out[bx * block + i] = x[bx * block + i] * exp + max[bx * block + i]
    return out
)");
  ASSERT_EQ(p.symbols.size(), 1u);
  EXPECT_EQ(p.symbols[0].name, "in_");
  EXPECT_EQ(ir::UserName(p.symbols[0]), "in");
  std::vector<std::string> ir_names, user_names;
  for (const ir::Param& param : p.params) {
    ir_names.push_back(param.buffer.name);
    user_names.push_back(ir::UserName(param));
  }
  EXPECT_THAT(ir_names, ElementsAre("x", "max_", "exp_", "out_"));
  EXPECT_THAT(user_names, ElementsAre("x", "max", "exp", "out"));
  // A name that needed no change has no separate user name.
  EXPECT_EQ(p.params[0].user_name, "");
  EXPECT_THAT(ir::PrintProgram(p), HasSubstr("param out_ as \"out\": global float32[in_] out"));

  // The factory form's parameters.
  ir::Program prim = MustCompile(R"(import tilelang.language as T

def k(N):
    @T.prim_func
    def main(min: T.Tensor((N,), "float32"), out: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=32):
            T.copy(min, out)
    return main
)",
                                 {{"N", "32"}});
  ASSERT_EQ(prim.params.size(), 2u);
  EXPECT_EQ(prim.params[0].buffer.name, "min_");
  EXPECT_EQ(ir::UserName(prim.params[0]), "min");
  EXPECT_EQ(ir::UserName(prim.params[1]), "out");
}

} // namespace
} // namespace kiln::frontend
