#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/frontend/lexer.h"
#include "compiler/frontend/parser.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::frontend {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// S-expression of an expression tree, so that tests check shapes.
std::string Dump(const PyExpr& e);

std::string DumpAll(const std::vector<PyExpr>& v) {
  std::vector<std::string> parts;
  for (const PyExpr& x : v) parts.push_back(Dump(x));
  return absl::StrJoin(parts, " ");
}

std::string DumpParams(const std::vector<Param>& params) {
  std::vector<std::string> parts;
  for (const Param& p : params) {
    std::string s;
    switch (p.kind) {
    case Param::kVarArgs:
      s = "*";
      break;
    case Param::kKwArgs:
      s = "**";
      break;
    case Param::kKwOnly:
      s = "kw:";
      break;
    case Param::kPosOnly:
      s = "pos:";
      break;
    case Param::kNormal:
      break;
    }
    s += p.name;
    if (!p.annotation.empty()) absl::StrAppend(&s, ":", Dump(p.annotation[0]));
    if (!p.default_value.empty()) absl::StrAppend(&s, "=", Dump(p.default_value[0]));
    parts.push_back(s);
  }
  return absl::StrCat("(", absl::StrJoin(parts, " "), ")");
}

std::string Dump(const PyExpr& e) {
  switch (e.kind) {
  case PyExprKind::kName:
    return e.str;
  case PyExprKind::kInt:
    return absl::StrCat(e.ival);
  case PyExprKind::kFloat:
    return absl::StrCat(e.fval, "f");
  case PyExprKind::kString:
    return absl::StrCat(e.is_fstring ? "F" : "", "'", e.str, "'");
  case PyExprKind::kBool:
    return e.ival ? "True" : "False";
  case PyExprKind::kNone:
    return e.is_star ? "**" : "None";
  case PyExprKind::kEllipsis:
    return "...";
  case PyExprKind::kTuple:
    return absl::StrCat("(tuple", e.elts.empty() ? "" : " ", DumpAll(e.elts), ")");
  case PyExprKind::kList:
    return absl::StrCat("(list", e.elts.empty() ? "" : " ", DumpAll(e.elts), ")");
  case PyExprKind::kSet:
    return absl::StrCat("(set ", DumpAll(e.elts), ")");
  case PyExprKind::kDict: {
    std::vector<std::string> parts;
    for (size_t i = 0; i < e.elts.size() && i < e.values.size(); ++i)
      parts.push_back(absl::StrCat(Dump(e.elts[i]), ":", Dump(e.values[i])));
    return absl::StrCat("(dict", parts.empty() ? "" : " ", absl::StrJoin(parts, " "), ")");
  }
  case PyExprKind::kAttribute:
    return absl::StrCat("(. ", Dump(e.elts[0]), " ", e.str, ")");
  case PyExprKind::kCall: {
    std::string s = absl::StrCat("(call ", Dump(e.elts[0]));
    for (const PyExpr& a : e.args) absl::StrAppend(&s, " ", Dump(a));
    for (const Keyword& k : e.keywords)
      absl::StrAppend(&s, " ", k.name.empty() ? "**" : k.name + "=", Dump(k.value[0]));
    return s + ")";
  }
  case PyExprKind::kSubscript:
    return absl::StrCat("(sub ", Dump(e.elts[0]), " ", Dump(e.elts[1]), ")");
  case PyExprKind::kSlice:
    return absl::StrCat("(slice ", DumpAll(e.elts), ")");
  case PyExprKind::kBinOp:
    return absl::StrCat("(", e.str, " ", Dump(e.elts[0]), " ", Dump(e.elts[1]), ")");
  case PyExprKind::kUnaryOp:
    return absl::StrCat("(", e.str, " ", Dump(e.elts[0]), ")");
  case PyExprKind::kCompare: {
    std::string s = absl::StrCat("(cmp ", Dump(e.elts[0]));
    for (size_t i = 0; i < e.ops.size(); ++i)
      absl::StrAppend(&s, " ", e.ops[i], " ", Dump(e.elts[i + 1]));
    return s + ")";
  }
  case PyExprKind::kBoolOp:
    return absl::StrCat("(", e.str, " ", DumpAll(e.elts), ")");
  case PyExprKind::kIfExp:
    return absl::StrCat("(ifexp ", DumpAll(e.elts), ")");
  case PyExprKind::kLambda:
    return absl::StrCat("(lambda ", DumpParams(e.params), " ", Dump(e.elts[0]), ")");
  case PyExprKind::kStarred:
    return absl::StrCat("(* ", Dump(e.elts[0]), ")");
  case PyExprKind::kNamedExpr:
    return absl::StrCat("(:= ", e.str, " ", Dump(e.elts[0]), ")");
  case PyExprKind::kComprehension: {
    std::string s = absl::StrCat("(", e.str, "comp ", DumpAll(e.elts));
    for (const Comprehension& c : e.comps) {
      absl::StrAppend(&s, " (for ", Dump(c.target[0]), " ", Dump(c.iter[0]));
      for (const PyExpr& i : c.ifs) absl::StrAppend(&s, " (if ", Dump(i), ")");
      s += ")";
    }
    return s + ")";
  }
  }
  return "?";
}

std::string DumpExpr(std::string_view src) {
  absl::StatusOr<PyExpr> e = ParseExpression(src, "e.py");
  if (!e.ok()) return absl::StrCat("ERROR ", std::string(e.status().message()));
  return Dump(*e);
}

Module MustParse(std::string_view src) {
  absl::StatusOr<Module> m = ParseModule(src, "m.py");
  EXPECT_TRUE(m.ok()) << m.status();
  if (!m.ok()) return Module{};
  for (const BrokenStmt& b : m->broken) ADD_FAILURE() << "broken: " << b.message;
  return *std::move(m);
}

struct Case {
  std::string src;
  std::string want;
};

TEST(ParserTest, ExpressionShapes) {
  const Case cases[] = {
      // Precedence and associativity.
      {"a + b * c", "(+ a (* b c))"},
      {"a * b + c", "(+ (* a b) c)"},
      {"a - b - c", "(- (- a b) c)"},
      {"a / b // c % d @ e", "(@ (% (// (/ a b) c) d) e)"},
      {"a ** b ** c", "(** a (** b c))"},
      {"-x ** 2", "(- (** x 2))"},
      {"2 ** -1", "(** 2 (- 1))"},
      {"-a * b", "(* (- a) b)"},
      {"~a + +b", "(+ (~ a) (+ b))"},
      {"a | b ^ c & d << e + f", "(| a (^ b (& c (<< d (+ e f)))))"},
      {"a >> b << c", "(<< (>> a b) c)"},
      {"a < b <= c", "(cmp a < b <= c)"},
      {"a == b != c > d >= e", "(cmp a == b != c > d >= e)"},
      {"a in b not in c", "(cmp a in b not in c)"},
      {"a is b is not None", "(cmp a is b is not None)"},
      {"not a == b", "(not (cmp a == b))"},
      {"not not a", "(not (not a))"},
      {"a or b and c or d", "(or a (and b c) d)"},
      {"a and b and c", "(and a b c)"},
      {"a + b < c * d", "(cmp (+ a b) < (* c d))"},
      {"x if c else y", "(ifexp x c y)"},
      {"a if b else c if d else e", "(ifexp a b (ifexp c d e))"},
      {"lambda: 0", "(lambda () 0)"},
      {"lambda x, y=1, *a, k, **kw: x + y", "(lambda (x y=1 *a kw:k **kw) (+ x y))"},
      {"lambda x: lambda y: x if y else 0", "(lambda (x) (lambda (y) (ifexp x y 0)))"},
      {"(x := 5) + 1", "(+ (:= x 5) 1)"},
      // Atoms.
      {"1.5", "1.5f"},
      {"True, False, None, ...", "(tuple True False None ...)"},
      {"'a' \"b\" '''c'''", "'abc'"},
      {"f'{x}' 'y'", "F'f'{x}' 'y''"},
      {"()", "(tuple)"},
      {"(1,)", "(tuple 1)"},
      {"(1)", "1"},
      {"((a, b), c)", "(tuple (tuple a b) c)"},
      {"a, b,", "(tuple a b)"},
      {"[]", "(list)"},
      {"[1, *a, 2,]", "(list 1 (* a) 2)"},
      {"{}", "(dict)"},
      {"{1: 2, **d, 'k': v,}", "(dict 1:2 **:d 'k':v)"},
      {"{**d}", "(dict **:d)"},
      {"{1, 2, *s}", "(set 1 2 (* s))"},
      // Primaries.
      {"a.b.c", "(. (. a b) c)"},
      {"T.copy(A[by * bm, k * bk], A_s)",
       "(call (. T copy) (sub A (tuple (* by bm) (* k bk))) A_s)"},
      {"f(a, *b, c=1, **d)", "(call f a (* b) c=1 **d)"},
      {"f(a)(b)[c].d", "(. (sub (call (call f a) b) c) d)"},
      {"f(x for x in y)", "(call f (gencomp x (for x y)))"},
      {"f(a, b,)", "(call f a b)"},
      {"f(y := 1)", "(call f (:= y 1))"},
      {"a[i]", "(sub a i)"},
      {"a[i, j]", "(sub a (tuple i j))"},
      {"a[i,]", "(sub a (tuple i))"},
      {"a[::2]", "(sub a (slice None None 2))"},
      {"a[1:]", "(sub a (slice 1 None None))"},
      {"a[:, 0]", "(sub a (tuple (slice None None None) 0))"},
      {"A[bx * bm : (bx + 1) * bm, :]",
       "(sub A (tuple (slice (* bx bm) (* (+ bx 1) bm) None) (slice None None None)))"},
      {"a[*idx]", "(sub a (* idx))"},
      {"a[x:y:z]", "(sub a (slice x y z))"},
      // Comprehensions.
      {"[x * 2 for x in y if x if not z]", "(listcomp (* x 2) (for x y (if x) (if (not z))))"},
      {"[v for i, v in enumerate(a) for w in v]",
       "(listcomp v (for (tuple i v) (call enumerate a)) (for w v))"},
      {"{k: v for k, v in d.items()}", "(dictcomp k v (for (tuple k v) (call (. d items))))"},
      {"{x for x in s}", "(setcomp x (for x s))"},
      {"(x for x in a if x)", "(gencomp x (for x a (if x)))"},
      {"[x for x in (a if b else c)]", "(listcomp x (for x (ifexp a b c)))"},
      {"*a, b", "(tuple (* a) b)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.src);
    EXPECT_EQ(DumpExpr(c.src), c.want);
  }
}

TEST(ParserTest, ExpressionLocations) {
  absl::StatusOr<PyExpr> e = ParseExpression("(a + b) * f(x,\n  y=c[1:2])", "e.py");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->loc, (Loc{1, 1}));          // the '*' BinOp starts at '('
  EXPECT_EQ(e->elts[0].loc, (Loc{1, 2}));  // a + b
  EXPECT_EQ(e->elts[1].loc, (Loc{1, 11})); // the call starts at f
  const Keyword& kw = e->elts[1].keywords[0];
  EXPECT_EQ(kw.loc, (Loc{2, 3}));
  EXPECT_EQ(kw.value[0].loc, (Loc{2, 5}));         // c[1:2]
  EXPECT_EQ(kw.value[0].elts[1].loc, (Loc{2, 7})); // the slice
  absl::StatusOr<PyExpr> t = ParseExpression("(1, 2)", "e.py");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->loc, (Loc{1, 1}));
}

TEST(ParserTest, StatementKinds) {
  Module m = MustParse(R"py(import a.b as c, d
from ..x.y import (p as q, r,)
from . import z
from m import *
x = y = 1
a, *b = t
x: int
y: T.Tensor((M, K), dtype) = 3
acc[i, j] += 1
n //= 2
del a[0], b
assert x > 0, "msg"
raise E("m") from err
global g1, g2
pass; x = 1;
f(x)
)py");
  const std::vector<PyStmt>& b = m.body;
  ASSERT_EQ(b.size(), 17u);
  EXPECT_EQ(b[0].kind, PyStmtKind::kImport);
  EXPECT_THAT(b[0].names, ElementsAre("a.b", "d"));
  EXPECT_THAT(b[0].aliases, ElementsAre("c", ""));
  EXPECT_EQ(b[1].kind, PyStmtKind::kImportFrom);
  EXPECT_EQ(b[1].str, "..x.y");
  EXPECT_THAT(b[1].names, ElementsAre("p", "r"));
  EXPECT_THAT(b[1].aliases, ElementsAre("q", ""));
  EXPECT_EQ(b[2].str, ".");
  EXPECT_THAT(b[3].names, ElementsAre("*"));
  EXPECT_EQ(b[4].kind, PyStmtKind::kAssign);
  EXPECT_EQ(DumpAll(b[4].targets), "x y");
  EXPECT_EQ(Dump(b[4].exprs[0]), "1");
  EXPECT_EQ(Dump(b[5].targets[0]), "(tuple a (* b))");
  EXPECT_EQ(b[6].kind, PyStmtKind::kAnnAssign);
  EXPECT_EQ(b[6].exprs.size(), 1u);
  EXPECT_EQ(b[7].kind, PyStmtKind::kAnnAssign);
  EXPECT_EQ(DumpAll(b[7].exprs), "(call (. T Tensor) (tuple M K) dtype) 3");
  EXPECT_EQ(b[8].kind, PyStmtKind::kAugAssign);
  EXPECT_EQ(b[8].str, "+");
  EXPECT_EQ(Dump(b[8].targets[0]), "(sub acc (tuple i j))");
  EXPECT_EQ(b[9].str, "//");
  EXPECT_EQ(b[10].kind, PyStmtKind::kDel);
  EXPECT_EQ(DumpAll(b[10].targets), "(sub a 0) b");
  EXPECT_EQ(b[11].kind, PyStmtKind::kAssert);
  EXPECT_EQ(DumpAll(b[11].exprs), "(cmp x > 0) 'msg'");
  EXPECT_EQ(b[12].kind, PyStmtKind::kRaise);
  EXPECT_EQ(DumpAll(b[12].exprs), "(call E 'm') err");
  EXPECT_EQ(b[13].kind, PyStmtKind::kGlobal);
  EXPECT_THAT(b[13].names, ElementsAre("g1", "g2"));
  EXPECT_EQ(b[14].kind, PyStmtKind::kPass);
  EXPECT_EQ(b[15].kind, PyStmtKind::kAssign);
  EXPECT_EQ(b[16].kind, PyStmtKind::kExpr);
  EXPECT_EQ(b[16].loc, (Loc{16, 1}));
}

TEST(ParserTest, CompoundStatements) {
  Module m = MustParse(R"py(@tilelang.jit(out_idx=[-1])
@deco
def f(a, b: int = 2, /, c=3, *args, d, e: str = "x", **kw) -> T.Tensor:
    """Doc."""
    if a:
        return a
    elif b:
        pass
    elif c: return
    else:
        b = 1
    for i, j in T.Parallel(M, N):
        continue
    else:
        break
    while x < 3:
        x += 1
    else:
        pass
    with T.Kernel(8, threads=128) as (bx, by), open(p) as f2, lock:
        pass
    with (a as b, c as d,):
        pass
    with (a, b) as c:
        pass
    try:
        pass
    except (A, B) as e:
        pass
    except C:
        pass
    except:
        pass
    else:
        pass
    finally:
        pass
    def inner(*, k): nonlocal q; return k
class C(Base, metaclass=M):
    x: int = 0
if x: y = 1; z = 2
)py");
  ASSERT_EQ(m.body.size(), 3u);
  const PyStmt& f = m.body[0];
  EXPECT_EQ(f.kind, PyStmtKind::kFunctionDef);
  EXPECT_EQ(f.str, "f");
  EXPECT_EQ(f.loc, (Loc{3, 1}));
  EXPECT_EQ(DumpAll(f.decorators), "(call (. tilelang jit) out_idx=(list (- 1))) deco");
  EXPECT_EQ(DumpParams(f.params), "(pos:a pos:b:int=2 c=3 *args kw:d kw:e:str='x' **kw)");
  EXPECT_EQ(DumpAll(f.exprs), "(. T Tensor)");
  ASSERT_EQ(f.body.size(), 9u); // ... try, def inner
  EXPECT_EQ(f.body[0].kind, PyStmtKind::kExpr);
  // if/elif/elif/else chain.
  const PyStmt& s_if = f.body[1];
  EXPECT_EQ(s_if.kind, PyStmtKind::kIf);
  ASSERT_EQ(s_if.orelse.size(), 1u);
  const PyStmt& elif1 = s_if.orelse[0];
  EXPECT_EQ(elif1.kind, PyStmtKind::kIf);
  EXPECT_EQ(elif1.loc, (Loc{7, 5}));
  ASSERT_EQ(elif1.orelse.size(), 1u);
  const PyStmt& elif2 = elif1.orelse[0];
  EXPECT_EQ(elif2.body[0].kind, PyStmtKind::kReturn);
  EXPECT_TRUE(elif2.body[0].exprs.empty());
  ASSERT_EQ(elif2.orelse.size(), 1u);
  EXPECT_EQ(elif2.orelse[0].kind, PyStmtKind::kAssign);
  const PyStmt& s_for = f.body[2];
  EXPECT_EQ(s_for.kind, PyStmtKind::kFor);
  EXPECT_EQ(Dump(s_for.targets[0]), "(tuple i j)");
  EXPECT_EQ(Dump(s_for.exprs[0]), "(call (. T Parallel) M N)");
  EXPECT_EQ(s_for.orelse[0].kind, PyStmtKind::kBreak);
  const PyStmt& s_while = f.body[3];
  EXPECT_EQ(s_while.kind, PyStmtKind::kWhile);
  EXPECT_EQ(s_while.orelse.size(), 1u);
  const PyStmt& w1 = f.body[4];
  EXPECT_EQ(w1.kind, PyStmtKind::kWith);
  EXPECT_EQ(DumpAll(w1.exprs), "(call (. T Kernel) 8 threads=128) (call open p) lock");
  EXPECT_EQ(DumpAll(w1.targets), "(tuple bx by) f2 None");
  const PyStmt& w2 = f.body[5];
  EXPECT_EQ(DumpAll(w2.exprs), "a c");
  EXPECT_EQ(DumpAll(w2.targets), "b d");
  const PyStmt& w3 = f.body[6];
  EXPECT_EQ(DumpAll(w3.exprs), "(tuple a b)");
  EXPECT_EQ(DumpAll(w3.targets), "c");
  const PyStmt& t = f.body[7];
  EXPECT_EQ(t.kind, PyStmtKind::kTry);
  ASSERT_EQ(t.handlers.size(), 3u);
  EXPECT_EQ(t.handlers[0].kind, PyStmtKind::kExcept);
  EXPECT_EQ(Dump(t.handlers[0].exprs[0]), "(tuple A B)");
  EXPECT_EQ(t.handlers[0].str, "e");
  EXPECT_EQ(t.handlers[1].str, "");
  EXPECT_TRUE(t.handlers[2].exprs.empty());
  EXPECT_EQ(t.orelse.size(), 1u);
  EXPECT_EQ(t.finalbody.size(), 1u);
  EXPECT_EQ(f.body[8].kind, PyStmtKind::kFunctionDef);
  const PyStmt& c = m.body[1];
  EXPECT_EQ(c.kind, PyStmtKind::kClassDef);
  EXPECT_EQ(DumpAll(c.exprs), "Base");
  ASSERT_EQ(c.keywords.size(), 1u);
  EXPECT_EQ(c.keywords[0].name, "metaclass");
  EXPECT_EQ(c.body[0].kind, PyStmtKind::kAnnAssign);
  const PyStmt& i = m.body[2];
  EXPECT_EQ(i.kind, PyStmtKind::kIf);
  EXPECT_EQ(i.body.size(), 2u);
}

TEST(ParserTest, NestedDefWithSimpleBody) {
  Module m = MustParse("def f():\n    def inner(*, k): nonlocal q; return k\n    return inner\n");
  ASSERT_EQ(m.body.size(), 1u);
  ASSERT_EQ(m.body[0].body.size(), 2u);
  const PyStmt& inner = m.body[0].body[0];
  EXPECT_EQ(DumpParams(inner.params), "(kw:k)");
  ASSERT_EQ(inner.body.size(), 2u);
  EXPECT_EQ(inner.body[0].kind, PyStmtKind::kNonlocal);
  EXPECT_EQ(inner.body[1].kind, PyStmtKind::kReturn);
}

// A program of the shape of TileLang's examples (factory form and jit form).
constexpr char kKernelFile[] = R"py(import tilelang
import tilelang.language as T


def matmul(M, N, K, block_M, block_N, block_K, dtype="float16", accum_dtype="float"):
    @T.prim_func
    def gemm(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((K, N), dtype),
        C: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_B=True)
            for i, j in T.Parallel(block_M, block_N):
                C_local[i, j] = T.max(C_local[i, j], 0) if relu else C_local[i, j]
            T.copy(C_local, C[by * block_M : (by + 1) * block_M, bx * block_N :])

    return gemm


@tilelang.jit(
    out_idx=[3],
    pass_configs={
        tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True,
    },
)
def flash(batch, heads, seq_len, dim, is_causal, block_M=64, block_N=64):
    scale = (1.0 / dim) ** 0.5 * 1.44269504  # log2(e)
    shape = [batch, seq_len, heads, dim]
    loop_range = (
        T.min(T.ceildiv(seq_len, block_N), T.ceildiv((bx + 1) * block_M, block_N))
        if is_causal
        else T.ceildiv(seq_len, block_N)
    )
    return shape


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--m", type=int, default=1024, help="M")
    args, _ = parser.parse_known_args(argv)
    configs = [dict(zip(keys, v)) for v in itertools.product(*params.values())]
    print(f"Latency: {latency:.2f} ms", flush=True)
    total_flops = 2 * args.m * args.m * args.m


if __name__ == "__main__":
    main()
)py";

TEST(ParserTest, TileLangShapedFile) {
  Module m = MustParse(kKernelFile);
  ASSERT_EQ(m.body.size(), 6u);
  const PyStmt& matmul = m.body[2];
  EXPECT_EQ(matmul.str, "matmul");
  ASSERT_EQ(matmul.body.size(), 2u);
  const PyStmt& gemm = matmul.body[0];
  EXPECT_EQ(DumpAll(gemm.decorators), "(. T prim_func)");
  EXPECT_EQ(Dump(gemm.params[0].annotation[0]), "(call (. T Tensor) (tuple M K) dtype)");
  const PyStmt& with = gemm.body[0];
  EXPECT_EQ(with.kind, PyStmtKind::kWith);
  ASSERT_EQ(with.body.size(), 6u);
  EXPECT_EQ(Dump(with.body[5].exprs[0]),
            "(call (. T copy) C_local (sub C (tuple (slice (* by block_M) (* (+ by 1) block_M) "
            "None) (slice (* bx block_N) None None))))");
  const PyStmt& flash = m.body[3];
  EXPECT_EQ(flash.decorators.size(), 1u);
  EXPECT_EQ(Dump(flash.body[0].exprs[0]), "(* (** (/ 1f dim) 0.5f) 1.4427f)");
  EXPECT_EQ(flash.body[2].exprs[0].kind, PyExprKind::kIfExp);
  const PyStmt& main_fn = m.body[4];
  EXPECT_TRUE(main_fn.body[4].exprs[0].args[0].is_fstring);
  EXPECT_EQ(m.body[5].kind, PyStmtKind::kIf);
}

struct ErrCase {
  std::string src;
  std::string want; // BrokenStmt message
};

TEST(ParserTest, MalformedStatements) {
  const ErrCase cases[] = {
      {"if x\n    pass\n", "m.py:1:5: expected ':' after 'if' condition"},
      {"while x y:\n    pass\n", "m.py:1:9: expected ':' after 'while' condition"},
      {"for x y in z:\n    pass\n", "m.py:1:7: expected 'in' after 'for' target"},
      {"for x in y\n    pass\n", "m.py:1:11: expected ':' after 'for' iterable"},
      {"def f(:):\n    pass\n", "m.py:1:7: expected parameter name"},
      {"def (x):\n    pass\n", "m.py:1:5: expected function name after 'def'"},
      {"def f(x)\n    pass\n", "m.py:1:9: expected ':' after function signature"},
      {"def f(a=1, b):\n    pass\n",
       "m.py:1:12: parameter without a default follows parameter with a default"},
      {"def f(*, **k):\n    pass\n", "m.py:1:7: named parameters must follow bare '*'"},
      {"if x:\npass\n", "m.py:2:1: expected an indented block after 'if' statement on line 1"},
      {"x = 1\n    y = 2\n", "m.py:2:5: unexpected indent"},
      {"x = (1 +)\n", "m.py:1:9: expected an expression, found ')'"},
      {"x = \n", "m.py:1:5: expected an expression, found end of line"},
      {"f() = 1\n", "m.py:1:1: cannot assign to function call"},
      {"1 = x\n", "m.py:1:1: cannot assign to literal"},
      {"a + b = c\n", "m.py:1:1: cannot assign to expression"},
      {"(a, b) += 1\n", "m.py:1:1: 'tuple' is an illegal expression for augmented assignment"},
      {"a, b: int\n", "m.py:1:1: only single target (not tuple) can be annotated"},
      {"del f()\n", "m.py:1:5: cannot delete function call"},
      {"x = 1 2\n", "m.py:1:7: expected end of statement, found number 2"},
      {"f(a=1, b)\n", "m.py:1:8: positional argument follows keyword argument"},
      {"f(x for x in y, 1)\n", "m.py:1:3: generator expression must be parenthesized"},
      {"x = a if b\n", "m.py:1:11: expected 'else' after conditional expression"},
      {"x = [1, 2\n]]\n", "m.py:2:2: unmatched ']'"},
      {"x = 'abc\n", "m.py:1:5: unterminated string literal"},
      {"x = 1 $ 2\n", "m.py:1:7: invalid character '$'"},
      {"x = 0x\n", "m.py:1:5: invalid hexadecimal literal"},
      {"x = 'a\\x4'\n", "m.py:1:7: truncated \\xXX escape"},
      {"x = 'a' b'c'\n", "m.py:1:9: cannot mix bytes and nonbytes literals"},
      {"x = 3j\n", "m.py:1:5: imaginary literals are not supported"},
      {"try:\n    pass\nx = 1\n", "m.py:3:1: expected 'except' or 'finally' block, found name 'x'"},
      {"else:\n    pass\n", "m.py:1:1: 'else' without a matching statement"},
      {"match x:\n    case 1:\n        pass\n", "m.py:1:1: 'match' statements are not supported"},
      {"async def f():\n    pass\n", "m.py:1:1: 'async' is not supported"},
      {"def g():\n    yield 1\n", "m.py:2:5: 'yield' is not supported"},
      {"from import x\n", "m.py:1:6: expected a module name after 'from'"},
      {"from a import b,\n",
       "m.py:1:17: trailing comma not allowed without surrounding parentheses"},
      {"import a.\n", "m.py:1:10: expected a name after '.'"},
      {"x = a.\n", "m.py:1:7: expected attribute name after '.', found end of line"},
      {"print x\n", "m.py:1:7: expected end of statement, found name 'x'"},
      {"if x:\n        a\n    b\n",
       "m.py:3:5: unindent does not match any outer indentation level"},
      {"f(**a, *b)\n", "m.py:1:8: iterable argument unpacking follows keyword argument unpacking"},
      {"lambda x: (yield)\n", "m.py:1:12: 'yield' is not supported"},
      {"x = {1: 2, 3}\n", "m.py:1:13: expected ':' after dict key"},
      {"*a = b\n", "m.py:1:1: cannot use starred expression here"},
      {"try:\n    pass\nexcept A, B:\n    pass\n",
       "m.py:3:9: multiple exception types must be parenthesized"},
      {"class C\n    pass\n", "m.py:1:8: expected ':' after class header"},
      {"@deco\nx = 1\n", "m.py:2:1: expected 'def' or 'class' after decorator, found name 'x'"},
  };
  for (const ErrCase& c : cases) {
    SCOPED_TRACE(c.src);
    absl::StatusOr<Module> m = ParseModule(c.src, "m.py");
    EXPECT_TRUE(m.ok()) << m.status();
    if (!m.ok()) continue;
    EXPECT_EQ(m->broken.size(), 1u);
    if (m->broken.empty()) continue;
    EXPECT_EQ(m->broken[0].message, c.want);
  }
}

TEST(ParserTest, FatalErrors) {
  const ErrCase cases[] = {
      {"def f():\n    x = '''never closed\n",
       "m.py:2:9: unterminated triple-quoted string literal"},
      {"x = 1\ny = f(1,\n\ndef g():\n    pass\n", "m.py:2:6: '(' was never closed"},
  };
  for (const ErrCase& c : cases) {
    SCOPED_TRACE(c.src);
    absl::StatusOr<Module> m = ParseModule(c.src, "m.py");
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(m.status().message(), c.want);
  }
}

TEST(ParserTest, BrokenTopLevelStatementsAreKeptAndParsingResumes) {
  absl::StatusOr<Module> m = ParseModule(R"py(import os
x, y = f(1 +
         ) ; z = 1
@deco(
    1)
def bad(a, a b):
    return 1
def good():
    if x:
        return 1 2
    else:
        pass
match cmd:
    case "a":
        pass
def kernel(M):
    return M
k: int = $
from q import (r as s,
    t u)
w = 3
)py",
                                         "m.py");
  ASSERT_TRUE(m.ok()) << m.status();
  std::vector<std::string> kept;
  for (const PyStmt& s : m->body) kept.push_back(s.str.empty() ? "stmt" : s.str);
  EXPECT_THAT(kept, ElementsAre("stmt", "kernel", "stmt"));
  EXPECT_EQ(m->body[1].loc, (Loc{16, 1}));
  ASSERT_EQ(m->broken.size(), 6u);
  EXPECT_EQ(m->broken[0].loc, (Loc{2, 1}));
  EXPECT_EQ(m->broken[0].message, "m.py:3:10: expected an expression, found ')'");
  EXPECT_THAT(m->broken[0].defines, ElementsAre("x", "y"));
  EXPECT_EQ(m->broken[1].loc, (Loc{4, 1}));
  EXPECT_THAT(m->broken[1].defines, ElementsAre("bad"));
  EXPECT_EQ(m->broken[2].message, "m.py:10:18: expected end of statement, found number 2");
  EXPECT_THAT(m->broken[2].defines, ElementsAre("good"));
  EXPECT_THAT(m->broken[3].message, HasSubstr("'match' statements are not supported"));
  EXPECT_THAT(m->broken[4].defines, ElementsAre("k"));
  EXPECT_THAT(m->broken[4].message, HasSubstr("invalid character '$'"));
  EXPECT_THAT(m->broken[5].defines, ElementsAre("s", "t"));
}

TEST(ParserTest, DeepNestingIsAnErrorNotACrash) {
  {
    absl::StatusOr<Module> m = ParseModule(std::string(100000, '('), "m.py");
    ASSERT_FALSE(m.ok());
    EXPECT_THAT(m.status().message(), HasSubstr("nesting too deep"));
  }
  const std::string deep_inputs[] = {
      "x = " + std::string(100000, '-') + "1\n",
      "x = " + std::string(100000, '~') + "1\n",
      [] {
        std::string s = "x = ";
        for (int i = 0; i < 50000; ++i) s += "not ";
        return s + "y\n";
      }(),
      [] {
        std::string s = "x = a";
        for (int i = 0; i < 50000; ++i) s += " ** a";
        return s + "\n";
      }(),
      [] {
        std::string s = "x = ";
        for (int i = 0; i < 50000; ++i) s += "lambda: ";
        return s + "0\n";
      }(),
      [] {
        std::string s = "x = ";
        for (int i = 0; i < 50000; ++i) s += "a if b else ";
        return s + "c\n";
      }(),
      [] {
        std::string s;
        for (int i = 0; i < 1000; ++i) s += std::string(i, ' ') + "if x:\n";
        return s + std::string(1000, ' ') + "pass\n";
      }(),
      // Just under the bracket limit, but each level nests more recursion.
      "x = " + std::string(199, '[') + "-" + std::string(199, ']') + "\n",
  };
  for (const std::string& src : deep_inputs) {
    SCOPED_TRACE(src.substr(0, 40));
    absl::StatusOr<Module> m = ParseModule(src, "m.py");
    ASSERT_TRUE(m.ok()) << m.status();
    ASSERT_EQ(m->broken.size(), 1u);
    EXPECT_THAT(m->broken[0].message, HasSubstr("nesting too deep"));
  }
  // Moderate nesting is fine.
  Module ok = MustParse("x = " + std::string(150, '(') + "1" + std::string(150, ')') + "\n");
  EXPECT_EQ(ok.body.size(), 1u);
}

TEST(ParserTest, LongChainsAreAnErrorNotACrash) {
  // Each link of a left-deep chain wraps the tree built so far: a chain of
  // 70,000 links made a tree that deep, and destroying it overflowed a daemon
  // thread's stack. Every shape of chain is bounded per statement, also a
  // chain nested in another (the inner tree sinks under the outer links).
  auto repeat = [](const std::string& head, const std::string& link, int times) {
    std::string s = head;
    for (int i = 0; i < times; ++i) s += link;
    return s;
  };
  const int n = 70000;
  const std::string inputs[] = {
      "x = " + repeat("1", " + 1", n),
      "x = " + repeat("1", " * 1", n),
      "x = " + repeat("1", " << 1", n),
      "x = " + repeat("a", "[0]", n),
      "x = " + repeat("f", "()", n),
      "x = " + repeat("T", ".a", n),
      "x = f(" + repeat("a", " + a", 1500) + ")" + repeat("", "()", 1500),
      "x = " + repeat("a", "[0]", 1500) + " + " + repeat("b", ".c", 1500),
      "def k():\n    y = " + repeat("1", " - 1", n),
  };
  for (const std::string& src : inputs) {
    SCOPED_TRACE(src.substr(0, 40));
    absl::StatusOr<Module> m = ParseModule(src + "\nz = 1\n", "m.py");
    ASSERT_TRUE(m.ok()) << m.status();
    ASSERT_EQ(m->broken.size(), 1u);
    EXPECT_THAT(m->broken[0].message, HasSubstr("expression chain too long (limit 2000"));
    // The next statement is kept.
    ASSERT_FALSE(m->body.empty());
    EXPECT_EQ(m->body.back().loc.line, std::count(src.begin(), src.end(), '\n') + 2);
  }
  // The limit is per statement: many statements each under it are fine.
  const std::string row = "x = " + repeat("a", " + a", kMaxChainLinks - 1) + "\n";
  EXPECT_EQ(MustParse(row + row + row).body.size(), 3u);
}

TEST(ParserTest, LongInputsStayLinear) {
  // 15000 statements (225,000 tokens, under kMaxSourceTokens), a long
  // expression, and a 20000-branch elif chain parse without recursion trouble
  // (a quadratic step would time the test out).
  std::string many;
  for (int i = 0; i < 15000; ++i) absl::StrAppend(&many, "x", i, " = f(", i, ", k=[1, 2])\n");
  EXPECT_EQ(MustParse(many).body.size(), 15000u);
  // A long sum, just under the chain limit of a statement (kMaxChainLinks).
  std::string sum = "x = 0";
  for (int i = 1; i < kMaxChainLinks; ++i) sum += " + a";
  EXPECT_EQ(MustParse(sum + "\n").body.size(), 1u);
  std::string chain = "if a:\n    pass\n";
  for (int i = 0; i < 20000; ++i) chain += "elif b:\n    pass\n";
  EXPECT_EQ(MustParse(chain).body.size(), 1u);
  std::string broken;
  for (int i = 0; i < 20000; ++i) broken += "x = (1 +\n  )\n";
  absl::StatusOr<Module> m = ParseModule(broken, "m.py");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->broken.size(), 20000u);
}

TEST(ParserTest, MoreTokensThanTheLimitIsALocatedError) {
  // 16 MiB of `x = x + 1` lines took 2.8 GB of syntax tree (issue 27's
  // hostile_requests); past kMaxSourceTokens the lexer stops at once, and
  // says where.
  std::string lines;
  for (size_t i = 0; i < kMaxSourceTokens / 6 + 10; ++i) lines += "x = x + 1\n";
  absl::StatusOr<Module> m = ParseModule(lines, "big.py");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(m.status().message(), HasSubstr(absl::StrCat("program text too long (more than ",
                                                           kMaxSourceTokens, " tokens)")));
  EXPECT_THAT(absl::StrCat(m.status().message()), testing::StartsWith("big.py:43691:"));
  // One long string is one token.
  EXPECT_EQ(MustParse("x = '" + std::string(8 << 20, 'a') + "'\n").body.size(), 1u);
}

TEST(ParserTest, EveryPrefixOfAValidFileIsHandled) {
  // Truncations hit every error path of the lexer and parser at least once;
  // none may crash, and results must be either a module or a located error.
  std::string src = kKernelFile;
  for (size_t n = 0; n <= src.size(); ++n) {
    absl::StatusOr<Module> m = ParseModule(std::string_view(src).substr(0, n), "m.py");
    if (!m.ok()) {
      ASSERT_THAT(m.status().message(), HasSubstr("m.py:")) << n;
      continue;
    }
    for (const BrokenStmt& b : m->broken) ASSERT_THAT(b.message, HasSubstr("m.py:")) << n;
  }
}

TEST(ParserTest, RandomTokenSoupNeverCrashes) {
  const char* pieces[] = {"x",    "1",    "'s'",    "(",    ")",      "[",   "]",     "{",
                          "}",    ":",    ",",      "=",    "+",      "*",   "**",    "-",
                          "if",   "else", "for",    "in",   "lambda", "not", "def",   "class",
                          "with", "as",   "return", "\n",   "\n    ", ";",   ".",     "@",
                          ":=",   "...",  "\\\n",   "#c\n", "\t",     "try", "except"};
  uint64_t state = 0x9E3779B97F4A7C15ull;
  auto next = [&] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  for (int iter = 0; iter < 3000; ++iter) {
    std::string src;
    size_t n = next() % 40;
    for (size_t i = 0; i < n; ++i) {
      src += pieces[next() % std::size(pieces)];
      src += ' ';
    }
    absl::StatusOr<Module> m = ParseModule(src, "r.py");
    if (m.ok()) {
      for (const BrokenStmt& b : m->broken) ASSERT_FALSE(b.message.empty());
    }
  }
}

TEST(ParserTest, ExpressionInputErrors) {
  EXPECT_EQ(DumpExpr("1 +"), "ERROR e.py:1:4: expected an expression, found end of line");
  EXPECT_EQ(DumpExpr("a b"), "ERROR e.py:1:3: expected end of expression, found name 'b'");
  EXPECT_EQ(DumpExpr("  a"), "ERROR e.py:1:3: unexpected indent");
}

} // namespace
} // namespace kiln::frontend
