// The Python syntax tree of a TileLang source file: the subset of Python that
// TileLang programs and the code around them use. Produced by the parser
// (parser.h), consumed by the compile-time evaluator (evaluator.h).
//
// Plain value tree; locations are 1-based line:col of the node's first token.
// Thread-safety: plain data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/ir.h"

namespace kiln::frontend {

using Loc = ::kiln::ir::Loc;

enum class PyExprKind : uint8_t {
  kName,   // str = identifier
  kInt,    // ival (literals that overflow int64 are a parse error)
  kFloat,  // fval
  kString, // str = decoded value (adjacent literals concatenated);
           // f-strings set is_fstring, keep their raw text in str and
           // their parts in elts: literal text (a kString), or a field
           // (a kString with is_fstring: elts[0] = the expression, str =
           // the format spec, ops = {"r" | "s" | "a"} when converted);
           // an f-string whose fields do not parse has no parts and its
           // error in values[0] (a kString: str = message, at loc)
  kBool,   // ival 0/1
  kNone,
  kEllipsis,
  kTuple,         // elts (parenthesized or bare `a, b`)
  kList,          // elts
  kDict,          // elts = keys, values = values (`**x` entries: key is kNone
                  // with is_star)
  kSet,           // elts
  kAttribute,     // elts[0] = object, str = attribute name
  kCall,          // elts[0] = callee, args = positional, keywords = named
  kSubscript,     // elts[0] = object, elts[1] = index (a kTuple for a[i, j])
  kSlice,         // elts = {lower, upper, step}, each kNone-kind when omitted
  kBinOp,         // str = operator ("+", "-", "*", "/", "//", "%", "**", "@",
                  // "&", "|", "^", "<<", ">>"), elts = {lhs, rhs}
  kUnaryOp,       // str = "-", "+", "not", "~"; elts = {operand}
  kCompare,       // chained: elts = operands (n+1), ops = operators (n):
                  // "<", "<=", ">", ">=", "==", "!=", "in", "not in", "is", "is not"
  kBoolOp,        // str = "and" | "or"; elts = operands (2 or more)
  kIfExp,         // elts = {body, test, orelse}  (body if test else orelse)
  kLambda,        // params, elts[0] = body
  kStarred,       // elts[0]; `*x` in calls, tuples, lists, targets
  kComprehension, // str = "list" | "set" | "dict" | "gen"; elts[0] = element
                  // (for dict: elts[0] key, elts[1] value); comps
  kNamedExpr,     // `x := v`: str = name, elts[0] = value
};

struct PyExpr;

struct Keyword {
  std::string name;          // empty for `**kwargs`
  std::vector<PyExpr> value; // exactly one element (vector for recursion)
  Loc loc;
};

struct Param {
  std::string name;
  std::vector<PyExpr> annotation;    // zero or one
  std::vector<PyExpr> default_value; // zero or one
  enum Kind : uint8_t { kNormal, kVarArgs, kKwOnly, kKwArgs, kPosOnly } kind = kNormal;
  Loc loc;
};

struct Comprehension {
  std::vector<PyExpr> target; // one element
  std::vector<PyExpr> iter;   // one element
  std::vector<PyExpr> ifs;
};

struct PyExpr {
  PyExprKind kind = PyExprKind::kNone;
  Loc loc;
  std::string str;
  int64_t ival = 0;
  double fval = 0.0;
  bool is_fstring = false;
  bool is_star = false;
  std::vector<PyExpr> elts;
  std::vector<PyExpr> values;
  std::vector<PyExpr> args;
  std::vector<Keyword> keywords;
  std::vector<std::string> ops;
  std::vector<Param> params;
  std::vector<Comprehension> comps;
};

enum class PyStmtKind : uint8_t {
  kExpr,        // exprs[0]
  kAssign,      // targets = one or more (a = b = v), exprs[0] = value
  kAugAssign,   // targets[0], str = operator without '=' ("+", "//", ...), exprs[0]
  kAnnAssign,   // targets[0], exprs[0] = annotation, exprs[1] = value if any
  kFor,         // targets[0], exprs[0] = iterable, body, orelse
  kWhile,       // exprs[0] = test, body, orelse
  kIf,          // exprs[0] = test, body, orelse (an elif is a nested kIf
                // as the only statement of orelse)
  kWith,        // items: exprs[i] = context manager, targets[i] = `as`
                // target or a kNone-kind expression when absent; body
  kFunctionDef, // str = name, params, decorators, exprs = return annotation
                // (zero or one), body
  kClassDef,    // str = name, exprs = bases, keywords, decorators, body
  kReturn,      // exprs = zero or one value
  kPass,
  kBreak,
  kContinue,
  kAssert,     // exprs[0] = test, exprs[1] = message if any
  kImport,     // names = dotted module names, aliases (empty when absent)
  kImportFrom, // str = module (with leading dots), names, aliases ("*" ok)
  kGlobal,     // names
  kNonlocal,   // names
  kDel,        // targets
  kRaise,      // exprs = zero to two (exc, cause)
  kTry,        // body, handlers (each a kExcept), orelse, finalbody
  kExcept,     // exprs = type if any, str = `as` name, body
};

struct PyStmt {
  PyStmtKind kind = PyStmtKind::kPass;
  Loc loc;
  std::string str;
  std::vector<PyExpr> targets;
  std::vector<PyExpr> exprs;
  std::vector<PyExpr> decorators;
  std::vector<Keyword> keywords; // kClassDef: keyword arguments (metaclass=...)
  std::vector<Param> params;
  std::vector<std::string> names;
  std::vector<std::string> aliases;
  std::vector<PyStmt> body;
  std::vector<PyStmt> orelse;
  std::vector<PyStmt> handlers;
  std::vector<PyStmt> finalbody;
};

// A parsed file. A top-level statement that does not parse is kept as an
// error instead of failing the whole file: example files carry test drivers
// (argparse, f-strings, torch calls) that the kernel never reaches. The
// evaluator reports a kept error only if it needs a name that statement would
// have defined (`defines`), or if the statement is the entry itself.
struct BrokenStmt {
  Loc loc;
  std::string message;              // "file:line:col: message"
  std::vector<std::string> defines; // best-effort: `def NAME`, `NAME = ...`
};

struct Module {
  std::string file_name;
  std::vector<PyStmt> body;
  std::vector<BrokenStmt> broken;
};

} // namespace kiln::frontend
