// Fuzz target: the fuzz bytes are a stream of choices that generate a
// TileLang program, which then goes through the frontend as frontend_fuzzer
// sends raw bytes. Raw-byte fuzzing rarely builds the shapes that break a
// parser or an evaluator (a 70,000-link `1+1+...` chain, `l = (l, l)` 64
// times, a tile size of 2**31), so the generator makes them on purpose:
//  - deep and wide nesting of blocks, brackets, calls and lambdas;
//  - long left-deep chains of every shape (binary operators, subscripts,
//    calls, attributes, comparisons, boolean and unary operators) whose
//    lengths straddle the parser's limits;
//  - pathological literals (2**31, 2**63, 10**400, 1e309, long strings);
//  - growth at compile time (`l = (l, l)`, `[0] * N`, `s * N`, recursion,
//    big `range`s, `while True`);
//  - T.Kernel / T.alloc_shared / T.copy / T.gemm / T.Pipelined / T.Parallel
//    skeletons with sizes drawn from the same table, and bindings from it.
// The frontend must answer with a program or a located error ("fuzz.py:...")
// within libFuzzer's -timeout and -rss_limit_mb, without a sanitizer report.
// KILN_FUZZ_PRINT=1 prints each generated program to stderr (to read a
// reproducer: `KILN_FUZZ_PRINT=1 ./frontend_structured_fuzzer crash-...`).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compiler/frontend/frontend.h"
#include "compiler/ir/verifier.h"

namespace {

// The bytes read as bounded choices; past the end every choice is 0, so any
// prefix of an input is itself a (smaller) program.
class Choices {
 public:
  Choices(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  // A value in [0, bound).
  uint32_t Below(uint32_t bound) {
    if (bound <= 1) return 0;
    uint32_t v = 0;
    for (uint32_t range = 1; range < bound && pos_ < size_; range <<= 8)
      v = (v << 8) | data_[pos_++];
    return v % bound;
  }
  bool Flip() { return Below(2) == 1; }
  template <typename T, size_t N>
  const T& Pick(const T (&table)[N]) {
    return table[Below(N)];
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// Sizes, counts and literals worth trying: small ones that reach lowering and
// the edges of int32, int64, the parser's limits (200 nesting, 2000 chain
// links) and the evaluator's (2,000,000 steps, 2**20 items).
constexpr const char* kIntLiterals[] = {"0",
                                        "1",
                                        "2",
                                        "3",
                                        "16",
                                        "32",
                                        "64",
                                        "128",
                                        "-1",
                                        "255",
                                        "2**31",
                                        "2**31 - 1",
                                        "2**32 + 32",
                                        "2**63 - 1",
                                        "2**63",
                                        "-2**63",
                                        "2**64",
                                        "10**400",
                                        "2**2**40",
                                        "4294967296",
                                        "2147483648",
                                        "9223372036854775807",
                                        "9223372036854775808",
                                        "0x7fffffff",
                                        "0o777",
                                        "0b1",
                                        "1_000_000",
                                        "2**20",
                                        "2**20 + 1"};
constexpr const char* kFloatLiterals[] = {"0.5",       "1e308",        "1e309",        "-1e309",
                                          "1e-320",    "float('inf')", "float('nan')", "3.0",
                                          "2.0**1023", "1.0 / 3"};
constexpr const char* kSmallSizes[] = {"1", "2", "4", "8", "16", "32", "64", "128", "256"};
constexpr const char* kSizes[] = {"1",          "16",        "32",      "64",
                                  "128",        "0",         "-1",      "3",
                                  "4096",       "65536",     "2**31",   "2**31 - 1",
                                  "2**32 + 32", "2**63 - 1", "block_M", "M",
                                  "N",          "K",         "M // 0",  "T.ceildiv(M, 7)"};
constexpr size_t kChainLengths[] = {1,    2,    3,    10,   100,  199,   200,   201,
                                    1999, 2000, 2001, 4000, 9000, 30000, 70000, 120000};
constexpr size_t kNestDepths[] = {1, 2, 5, 20, 50, 100, 150, 199, 200, 201, 400, 1000};
constexpr const char* kNames[] = {"x", "l", "s", "M", "N", "K", "block_M", "f", "d", "n", "i", "T"};
constexpr const char* kBinOps[] = {"+", "-", "*", "/", "//", "%", "**",
                                   "@", "&", "|", "^", "<<", ">>"};
constexpr const char* kCmpOps[] = {
    "<", "<=", ">", ">=", "==", "!=", "in", "not in", "is", "is not"};
constexpr const char* kDtypes[] = {"T.float16", "T.float32", "T.bfloat16",  "T.int8",
                                   "T.int32",   "T.float64", "\"float16\"", "T.float8_e4m3"};
constexpr const char* kBuiltins[] = {"len", "range", "int",       "float", "min",
                                     "max", "abs",   "tuple",     "list",  "sum",
                                     "str", "bool",  "T.ceildiv", "T.min", "T.max"};

// Generated output larger than this stops growing (chains shorten, blocks
// end): large enough for a 70,000-link chain, small enough to stay fast.
constexpr size_t kMaxOutput = 256 << 10;

class Generator {
 public:
  explicit Generator(Choices* c) : c_(c) {}

  std::string Program() {
    out_ = "import tilelang\nimport tilelang.language as T\n\n";
    if (c_->Below(4) == 0) {
      // Module-level compile-time code before the kernel.
      for (uint32_t n = c_->Below(4); n > 0; --n) Stmt(0, 0);
    }
    out_ += "@tilelang.jit\ndef kernel(A, block_M=";
    out_ += c_->Pick(kSizes);
    out_ += ", threads=";
    out_ += c_->Flip() ? c_->Pick(kSmallSizes) : c_->Pick(kSizes);
    out_ += ", dtype=";
    out_ += c_->Pick(kDtypes);
    out_ += "):\n";
    Line(1, "M, N, K = T.const(\"M, N, K\")");
    for (uint32_t n = c_->Below(6); n > 0; --n) Stmt(1, 0);
    Line(1, "A: T.Tensor((M, K), dtype)");
    Line(1, "B = T.empty((M, N), dtype)");
    Kernel(1);
    for (uint32_t n = c_->Below(2); n > 0; --n) Stmt(1, 0);
    Line(1, "return B");
    return std::move(out_);
  }

 private:
  bool Full() const { return out_.size() >= kMaxOutput; }

  void Indent(int level) { out_.append(static_cast<size_t>(level) * 4, ' '); }
  void Line(int level, std::string_view text) {
    Indent(level);
    out_ += text;
    out_ += '\n';
  }

  size_t ChainLength() {
    size_t n = c_->Pick(kChainLengths);
    return Full() ? 1 : n;
  }

  // One expression; `depth` bounds the generator's own recursion, not the
  // depth of what it writes (chains and nests write deep trees iteratively).
  void Expr(int depth) {
    if (depth > 6 || Full()) {
      Atom();
      return;
    }
    switch (c_->Below(22)) {
    case 0:
    case 1:
      Atom();
      return;
    case 2: // binary operator
      Expr(depth + 1);
      out_ += ' ';
      out_ += c_->Pick(kBinOps);
      out_ += ' ';
      Expr(depth + 1);
      return;
    case 3: // comparison chain
      Expr(depth + 1);
      for (uint32_t n = 1 + c_->Below(3); n > 0; --n) {
        out_ += ' ';
        out_ += c_->Pick(kCmpOps);
        out_ += ' ';
        Expr(depth + 1);
      }
      return;
    case 4:
      out_ += '(';
      Expr(depth + 1);
      out_ += c_->Flip() ? " and " : " or ";
      Expr(depth + 1);
      out_ += ')';
      return;
    case 5:
      out_ += c_->Pick({"-", "+", "~", "not "});
      Expr(depth + 1);
      return;
    case 6: // subscript or slice
      Expr(depth + 1);
      out_ += '[';
      Expr(depth + 1);
      if (c_->Flip()) {
        out_ += c_->Flip() ? ":" : ", ";
        Expr(depth + 1);
      }
      out_ += ']';
      return;
    case 7: // call
      out_ += c_->Pick(kBuiltins);
      out_ += '(';
      for (uint32_t n = c_->Below(4); n > 0; --n) {
        Expr(depth + 1);
        out_ += n > 1 ? ", " : "";
      }
      out_ += ')';
      return;
    case 8:
      out_ += '(';
      Expr(depth + 1);
      out_ += ", ";
      Expr(depth + 1);
      out_ += ')';
      return;
    case 9:
      out_ += '[';
      Expr(depth + 1);
      out_ += "] * ";
      out_ += c_->Pick(kIntLiterals);
      return;
    case 10:
      out_ += '(';
      Expr(depth + 1);
      out_ += " if ";
      Expr(depth + 1);
      out_ += " else ";
      Expr(depth + 1);
      out_ += ')';
      return;
    case 11:
      out_ += "[";
      Expr(depth + 1);
      out_ += " for i in range(";
      out_ += c_->Pick(kIntLiterals);
      out_ += ")]";
      return;
    case 12:
      out_ += "(lambda x: ";
      Expr(depth + 1);
      out_ += ")(";
      Expr(depth + 1);
      out_ += ')';
      return;
    case 13:
      out_ += "{";
      Expr(depth + 1);
      out_ += ": ";
      Expr(depth + 1);
      out_ += "}";
      return;
    case 14:
    case 15:
    case 16:
      Chain();
      return;
    case 17:
    case 18:
      Nest();
      return;
    case 19:
      Expr(depth + 1);
      out_ += '.';
      out_ += c_->Pick({"shape", "dtype", "a", "__class__", "append", "bit_length"});
      return;
    case 20:
      out_ += "T.";
      out_ += c_->Pick({"ceildiv", "min", "max", "exp", "sqrt", "cast", "if_then_else"});
      out_ += '(';
      Expr(depth + 1);
      out_ += ", ";
      Expr(depth + 1);
      out_ += ')';
      return;
    default: // a long string
      out_ += '"';
      out_.append(c_->Pick(kChainLengths), 'a');
      out_ += '"';
      return;
    }
  }

  void Atom() {
    switch (c_->Below(6)) {
    case 0:
    case 1:
      out_ += c_->Pick(kIntLiterals);
      return;
    case 2:
      out_ += c_->Pick(kFloatLiterals);
      return;
    case 3:
      out_ += c_->Pick({"True", "False", "None", "\"\"", "()", "[]", "..."});
      return;
    default:
      out_ += c_->Pick(kNames);
      return;
    }
  }

  // A left-deep chain of one shape: the trees whose depth grows with the
  // length of the text, not with nesting.
  void Chain() {
    size_t n = ChainLength();
    uint32_t shape = c_->Below(12);
    std::string_view op = c_->Pick(kBinOps);
    std::string_view cmp = c_->Pick(kCmpOps);
    out_ += c_->Pick(kNames);
    for (size_t i = 0; i < n; ++i) {
      switch (shape) {
      case 0:
        out_ += op;
        out_ += '1';
        break;
      case 1:
        out_ += "[0]";
        break;
      case 2:
        out_ += "()";
        break;
      case 3:
        out_ += ".a";
        break;
      case 4:
        out_ += ' ';
        out_ += cmp;
        out_ += " x";
        break;
      case 5:
        out_ += " and x";
        break;
      case 6:
        out_ += " or x";
        break;
      case 7:
        out_ += " if x else x";
        break; // right-nested
      case 8:
        out_ += "[0:1]";
        break;
      case 9:
        out_ += "(x)[x].b";
        break;
      case 10:
        out_ += i % 2 == 0 ? "+1" : "*x";
        break;
      default:
        out_ += ", x";
        break; // a wide tuple
      }
    }
  }

  // Nesting written as a prefix and a suffix: brackets, calls, unary
  // operators and lambdas around an atom.
  void Nest() {
    size_t n = c_->Pick(kNestDepths);
    if (Full()) n = 1;
    static constexpr std::pair<const char*, const char*> kShapes[] = {
        {"(", ")"},         {"[", "]"},
        {"f(", ")"},        {"-", ""},
        {"not ", ""},       {"~", ""},
        {"x**", ""},        {"lambda: ", ""},
        {"{0: ", "}"},      {"(x, ", ")"},
        {"T.max(1, ", ")"}, {"x[", "]"},
        {"[0] * (", ")"},   {"(lambda y: y)(", ")"}};
    const auto& shape = c_->Pick(kShapes);
    for (size_t i = 0; i < n; ++i) out_ += shape.first;
    Atom();
    for (size_t i = 0; i < n; ++i) out_ += shape.second;
  }

  void Block(int level, int depth) {
    uint32_t n = 1 + c_->Below(3);
    for (uint32_t i = 0; i < n; ++i) Stmt(level, depth + 1);
  }

  // A compile-time statement at indentation `level`.
  void Stmt(int level, int depth) {
    if (depth > 8 || Full()) {
      Indent(level);
      out_ += "x = ";
      Atom();
      out_ += '\n';
      return;
    }
    switch (c_->Below(16)) {
    case 0:
    case 1:
    case 2:
      Indent(level);
      out_ += c_->Pick(kNames);
      out_ += c_->Pick({" = ", " += ", " *= ", " //= ", " **= ", " <<= "});
      Expr(0);
      out_ += '\n';
      return;
    case 3: { // container growth, unrolled or in a loop
      std::string n = std::to_string(c_->Pick(kChainLengths) % 130);
      if (c_->Flip()) {
        Line(level, "l = 0");
        Line(level, "for _ in range(" + n + "):");
        Line(level + 1, c_->Flip() ? "l = (l, l)" : "l = [l, l]");
      } else {
        Line(level, "l = ()");
        for (int i = std::stoi(n); i > 0; --i) Line(level, "l = (l, l)");
      }
      Line(level, c_->Pick({"x = l == l", "x = l < l", "x = len(str(l))", "x = hash(l)",
                            "x = l in [l]", "x = sorted([l, l])", "x = [l] * 1000 == [l] * 1000"}));
      return;
    }
    case 4:
      Indent(level);
      out_ += "for i in range(";
      out_ += c_->Pick(kIntLiterals);
      out_ += "):\n";
      Block(level + 1, depth);
      return;
    case 5:
      Indent(level);
      out_ += "while ";
      out_ += c_->Pick({"True", "x", "n < 10**9", "l"});
      out_ += ":\n";
      Block(level + 1, depth);
      return;
    case 6: { // deeply nested blocks
      size_t n = c_->Pick(kNestDepths);
      if (Full()) n = 1;
      for (size_t i = 0; i < n && !Full(); ++i) {
        Indent(level + static_cast<int>(i));
        out_ += c_->Flip() ? "if x:\n" : "for i in range(2):\n";
      }
      Indent(level + static_cast<int>(n));
      out_ += "pass\n";
      return;
    }
    case 7:
      Indent(level);
      out_ += "if ";
      Expr(0);
      out_ += ":\n";
      Block(level + 1, depth);
      if (c_->Flip()) {
        Line(level, "else:");
        Block(level + 1, depth);
      }
      return;
    case 8: // recursion
      Line(level, "def f(n):");
      Line(level + 1,
           c_->Pick({"return f(n - 1)", "return f(n) + f(n)", "return n if n < 1 else f(n - 1)",
                     "return [f(n - 1)] * 2", "return f"}));
      Indent(level);
      out_ += "x = f(";
      out_ += c_->Pick(kIntLiterals);
      out_ += ")\n";
      return;
    case 9: { // big containers and strings
      static constexpr std::pair<const char*, const char*> kGrowth[] = {
          {"x = [0] * ", ""},
          {"s = \"ab\" * ", ""},
          {"l = list(range(", "))"},
          {"d = {i: i for i in range(", ")}"},
          {"x = sum(range(", "))"}};
      const auto& g = c_->Pick(kGrowth);
      Indent(level);
      out_ += g.first;
      out_ += c_->Pick(kIntLiterals);
      out_ += g.second;
      out_ += '\n';
      return;
    }
    case 10:
      Indent(level);
      out_ += "assert ";
      Expr(0);
      out_ += ", ";
      Expr(0);
      out_ += '\n';
      return;
    case 11:
      Line(level, "try:");
      Block(level + 1, depth);
      Line(level, "except Exception:");
      Block(level + 1, depth);
      return;
    case 12:
      Indent(level);
      out_ += "x = ";
      Chain();
      out_ += '\n';
      return;
    case 13:
      Indent(level);
      out_ += "x = ";
      Nest();
      out_ += '\n';
      return;
    case 14: // many statements: a wide function body
      for (size_t i = 0, n = c_->Pick(kChainLengths); i < n && !Full(); ++i) {
        Line(level, "x = x + 1");
      }
      return;
    default:
      Indent(level);
      out_ += c_->Pick(kNames);
      out_ += ", ";
      out_ += c_->Pick(kNames);
      out_ += " = ";
      Expr(0);
      out_ += '\n';
      return;
    }
  }

  // The kernel: a T.Kernel with buffers, copies, gemms and loops of sizes
  // drawn from kSizes, sometimes with compile-time code inside.
  void Kernel(int level) {
    Indent(level);
    out_ += "with T.Kernel(T.ceildiv(N, ";
    out_ += c_->Pick(kSizes);
    out_ += "), T.ceildiv(M, block_M), threads=threads) as (bx, by):\n";
    ++level;
    std::string sa = c_->Pick(kSizes), sb = c_->Pick(kSizes), sk = c_->Pick(kSmallSizes);
    Line(level, "A_s = T.alloc_shared((" + sa + ", " + sk + "), dtype)");
    Line(level, "B_s = T.alloc_shared((" + sk + ", " + sb + "), dtype)");
    Line(level, "C_f = T.alloc_fragment((" + sa + ", " + sb + "), T.float32)");
    if (c_->Flip()) Line(level, "T.clear(C_f)");
    for (uint32_t n = 1 + c_->Below(4); n > 0; --n) KernelStmt(level, 0);
    if (c_->Flip()) Line(level, "T.copy(C_f, B[by * block_M, bx * " + sb + "])");
  }

  void KernelStmt(int level, int depth) {
    if (depth > 4 || Full()) {
      Line(level, "T.clear(C_f)");
      return;
    }
    switch (c_->Below(9)) {
    case 0:
      Indent(level);
      out_ += "for ko in T.Pipelined(";
      out_ += c_->Pick(kSizes);
      out_ += ", num_stages=";
      out_ += c_->Pick({"0", "1", "2", "3", "4", "-1", "2**31", "100"});
      out_ += "):\n";
      Line(level + 1,
           "T.copy(A[by * block_M, ko * " + std::string(c_->Pick(kSmallSizes)) + "], A_s)");
      Line(level + 1, "T.copy(B[ko, bx], B_s)");
      Line(level + 1, "T.gemm(A_s, B_s, C_f)");
      if (c_->Flip()) KernelStmt(level + 1, depth + 1);
      return;
    case 1:
      Indent(level);
      out_ += "for i, j in T.Parallel(";
      out_ += c_->Pick(kSizes);
      out_ += ", ";
      out_ += c_->Pick(kSizes);
      out_ += "):\n";
      Indent(level + 1);
      out_ += "C_f[i, j] = ";
      Expr(3);
      out_ += '\n';
      return;
    case 2:
      Indent(level);
      out_ += "for k in T.";
      out_ += c_->Pick({"serial", "unroll", "Parallel"});
      out_ += '(';
      out_ += c_->Pick(kSizes);
      out_ += "):\n";
      KernelStmt(level + 1, depth + 1);
      return;
    case 3:
      Line(level,
           "T.gemm(A_s, B_s, C_f" +
               std::string(c_->Pick({"", ", transpose_B=True", ", policy=T.GemmWarpPolicy.FullRow",
                                     ", k_pack=2**31"})) +
               ")");
      return;
    case 4:
      Indent(level);
      out_ += "T.copy(A[";
      Expr(4);
      out_ += ", ";
      Expr(4);
      out_ += "], A_s)\n";
      return;
    case 5:
      Indent(level);
      out_ += "if ";
      Expr(3);
      out_ += ":\n";
      KernelStmt(level + 1, depth + 1);
      return;
    case 6:
      Indent(level);
      out_ += "t = T.alloc_";
      out_ += c_->Pick({"shared", "fragment", "local"});
      out_ += "((";
      out_ += c_->Pick(kSizes);
      out_ += ", ";
      out_ += c_->Pick(kSizes);
      out_ += "), ";
      out_ += c_->Pick(kDtypes);
      out_ += ")\n";
      return;
    case 7:
      Line(level, c_->Pick({"T.reduce_sum(C_f, t, dim=1)", "T.fill(C_f, 0)",
                            "T.use_swizzle(panel_size=2**31)", "T.copy(C_f, B[by, bx])",
                            "T.atomic_add(B[0, 0], C_f[0, 0])"}));
      return;
    default:
      Stmt(level, 6); // compile-time code inside the kernel
      return;
    }
  }

  Choices* c_;
  std::string out_;
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool print = std::getenv("KILN_FUZZ_PRINT") != nullptr;
  Choices choices(data, size);
  kiln::frontend::FrontendOptions options;
  options.file_name = "fuzz.py";
  // A tenth of the default step budget: the same checks, reached ten times
  // sooner (an input that burns the whole default budget takes seconds under
  // ASan). The wall-time budget ends an evaluation before libFuzzer's
  // -timeout=10 calls it a hang: what outlives it is work the budget misses.
  options.limits.max_steps = 200'000;
  options.limits.max_seconds = 5;
  // Bindings from the same tables: ordinary sizes mostly, edges sometimes.
  for (const char* name : {"M", "N", "K", "block_M", "threads"}) {
    if (choices.Below(4) == 0) continue; // left unbound
    const char* value =
        choices.Flip() ? choices.Pick(kSmallSizes)
                       : choices.Pick({"0", "-1", "2147483648", "4294967328", "9223372036854775807",
                                       "-9223372036854775808", "1.5", "True", "float16", "x"});
    options.bindings.emplace_back(name, kiln::frontend::ParseBindingText(value));
  }
  std::string source = Generator(&choices).Program();
  if (print)
    std::fprintf(stderr, "---- generated program (%zu bytes)\n%s----\n", source.size(),
                 source.c_str());
  auto program = kiln::frontend::CompileSource(source, options);
  if (!program.ok()) {
    // Errors must be located: "fuzz.py:" prefix.
    if (program.status().message().substr(0, 7) != "fuzz.py") {
      std::fprintf(stderr, "unlocated error: %s\n",
                   std::string(program.status().message()).c_str());
      std::abort();
    }
    return 0;
  }
  (void)kiln::ir::Verify(*program);
  return 0;
}
