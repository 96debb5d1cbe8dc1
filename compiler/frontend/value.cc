#include "compiler/frontend/value.h"

#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "compiler/frontend/eval_budget.h"
#include "compiler/frontend/value_heap.h"
#include "compiler/ir/dtype.h"

namespace kiln::frontend {
namespace {

thread_local int64_t live_lists = 0;

// Frees a ValueList without recursion: a list freed while another is being
// freed on this thread is queued, and the outermost call frees the queue.
// A list leaves its heap (value_heap.h) at once, before it is queued.
struct ValueListDeleter {
  void operator()(ValueList* list) const {
    auto* node = static_cast<ValueHeap::Node*>(list);
    if (node->heap != nullptr) node->heap->Unlink(node);
    --live_lists;
    thread_local std::vector<ValueHeap::Node*> queue;
    thread_local bool draining = false;
    queue.push_back(node);
    if (draining) return;
    draining = true;
    while (!queue.empty()) {
      ValueHeap::Node* next = queue.back();
      queue.pop_back();
      delete next; // its items' lists land in `queue`
    }
    draining = false;
  }
};

} // namespace

std::shared_ptr<ValueList> NewValueList(ValueList items) {
  auto* node = new ValueHeap::Node(std::move(items));
  if (ValueHeap* heap = ValueHeap::Current()) heap->Link(node);
  ++live_lists;
  return std::shared_ptr<ValueList>(node, ValueListDeleter());
}

int64_t LiveValueLists() { return live_lists; }

Value Value::Bool(bool b) {
  Value v;
  v.kind = ValueKind::kBool;
  v.i = b ? 1 : 0;
  return v;
}

Value Value::Int(int64_t x) {
  Value v;
  v.kind = ValueKind::kInt;
  v.i = x;
  return v;
}

Value Value::Float(double x) {
  Value v;
  v.kind = ValueKind::kFloat;
  v.f = x;
  return v;
}

Value Value::Str(std::string x) {
  Value v;
  v.kind = ValueKind::kString;
  v.s = std::move(x);
  return v;
}

Value Value::Tuple(ValueList elts) {
  Value v;
  v.kind = ValueKind::kTuple;
  v.items = NewValueList(std::move(elts));
  return v;
}

Value Value::List(ValueList elts) {
  Value v;
  v.kind = ValueKind::kList;
  v.items = NewValueList(std::move(elts));
  return v;
}

Value Value::Expr(ir::Expr e) {
  Value v;
  v.kind = ValueKind::kExpr;
  v.dtype = e.dtype;
  v.expr = std::make_shared<const ir::Expr>(std::move(e));
  return v;
}

Value Value::DType(ir::DType t) {
  Value v;
  v.kind = ValueKind::kDType;
  v.dtype = t;
  return v;
}

Value Value::Buffer(int id) {
  Value v;
  v.kind = ValueKind::kBuffer;
  v.i = id;
  return v;
}

Value Value::Module(std::string path) {
  Value v;
  v.kind = ValueKind::kModule;
  v.s = std::move(path);
  return v;
}

Value Value::Builtin(std::string name) {
  Value v;
  v.kind = ValueKind::kBuiltin;
  v.s = std::move(name);
  return v;
}

Value Value::Opaque(std::string what) {
  Value v;
  v.kind = ValueKind::kOpaque;
  v.s = std::move(what);
  return v;
}

Value Value::Dict() {
  Value d;
  d.kind = ValueKind::kDict;
  d.items = NewValueList();
  d.values = NewValueList();
  return d;
}

int64_t RangeLength(int64_t start, int64_t stop, int64_t step) {
  if (step > 0 && start < stop) return (stop - start - 1) / step + 1;
  if (step < 0 && start > stop) return (start - stop - 1) / (-step) + 1;
  return 0;
}

const ValueList& Value::elts() const {
  static const ValueList kEmpty;
  return items ? *items : kEmpty;
}

std::string TypeName(const Value& v) {
  switch (v.kind) {
  case ValueKind::kNone:
    return "None";
  case ValueKind::kBool:
    return "bool";
  case ValueKind::kInt:
    return "int";
  case ValueKind::kFloat:
    return "float";
  case ValueKind::kString:
    return "str";
  case ValueKind::kTuple:
    return "tuple";
  case ValueKind::kList:
    return "list";
  case ValueKind::kDict:
    return "dict";
  case ValueKind::kExpr:
    return absl::StrCat("symbolic ", std::string(ir::DTypeName(v.dtype)), " expression");
  case ValueKind::kDType:
    return "dtype";
  case ValueKind::kBuffer:
    return "buffer";
  case ValueKind::kAccess:
    return "buffer access";
  case ValueKind::kSlice:
    return "slice";
  case ValueKind::kFunction:
    return "function";
  case ValueKind::kPrimFunc:
    return "prim_func";
  case ValueKind::kModule:
    return "module";
  case ValueKind::kBuiltin:
    return "builtin function";
  case ValueKind::kLayout:
    return "layout";
  case ValueKind::kPolicy:
    return "GemmWarpPolicy";
  case ValueKind::kTensorType:
    return "tensor type";
  case ValueKind::kRange:
    return "range";
  case ValueKind::kOpaque:
    return "unsupported object";
  }
  return "value";
}

std::string Describe(const Value& v) {
  switch (v.kind) {
  case ValueKind::kBool:
    return v.i ? "True" : "False";
  case ValueKind::kInt:
    return absl::StrCat(v.i);
  case ValueKind::kFloat:
    return absl::StrFormat("%g", v.f);
  case ValueKind::kDType:
    return std::string(ir::DTypeName(v.dtype));
  default:
    return TypeName(v);
  }
}

bool Truthy(const Value& v, bool* known) {
  *known = true;
  switch (v.kind) {
  case ValueKind::kNone:
    return false;
  case ValueKind::kBool:
  case ValueKind::kInt:
    return v.i != 0;
  case ValueKind::kFloat:
    return v.f != 0.0;
  case ValueKind::kString:
    return !v.s.empty();
  case ValueKind::kTuple:
  case ValueKind::kList:
  case ValueKind::kDict:
    return !v.elts().empty();
  case ValueKind::kDType:
  case ValueKind::kBuffer:
  case ValueKind::kFunction:
  case ValueKind::kPrimFunc:
  case ValueKind::kModule:
  case ValueKind::kBuiltin:
  case ValueKind::kPolicy:
  case ValueKind::kLayout:
  case ValueKind::kTensorType:
    return true;
  default:
    *known = false;
    return false;
  }
}

namespace {

bool EqualsAt(const Value& a, const Value& b, bool* known, EvalBudget* budget, ir::Loc loc,
              int depth) {
  *known = true;
  if (a.is_number() && b.is_number()) {
    if (a.is_int() && b.is_int()) return a.i == b.i;
    double x = a.is_int() ? static_cast<double>(a.i) : a.f;
    double y = b.is_int() ? static_cast<double>(b.i) : b.f;
    return x == y;
  }
  if (a.kind == ValueKind::kExpr || b.kind == ValueKind::kExpr || a.kind == ValueKind::kAccess ||
      b.kind == ValueKind::kAccess) {
    *known = false;
    return false;
  }
  if (a.kind != b.kind) {
    // A dtype equals its name: TileLang dtypes are str subclasses.
    if (a.kind == ValueKind::kDType && b.kind == ValueKind::kString) {
      return ir::DTypeName(a.dtype) == b.s;
    }
    if (b.kind == ValueKind::kDType && a.kind == ValueKind::kString) {
      return ir::DTypeName(b.dtype) == a.s;
    }
    return false;
  }
  switch (a.kind) {
  case ValueKind::kNone:
    return true;
  case ValueKind::kString:
  case ValueKind::kModule:
  case ValueKind::kBuiltin:
    if (budget != nullptr && a.s.size() == b.s.size() &&
        !budget->Charge(loc, static_cast<int64_t>(a.s.size() / 256)).ok()) {
      *known = false;
      return false;
    }
    return a.s == b.s;
  case ValueKind::kDType:
    return a.dtype == b.dtype;
  case ValueKind::kPolicy:
  case ValueKind::kBuffer:
    return a.i == b.i;
  case ValueKind::kTuple:
  case ValueKind::kList: {
    if (a.items == b.items) return true; // one object: Python compares no further
    const ValueList& x = a.elts();
    const ValueList& y = b.elts();
    if (x.size() != y.size()) return false;
    if (x.empty()) return true;
    if (depth >= kMaxCompareDepth) {
      if (budget != nullptr) {
        (void)budget->FailAt(
            absl::StatusCode::kInvalidArgument, loc,
            absl::StrCat("values nested more than ", kMaxCompareDepth, " deep cannot be compared"));
      }
      *known = false;
      return false;
    }
    if (budget != nullptr && !budget->Charge(loc, static_cast<int64_t>(x.size())).ok()) {
      *known = false;
      return false;
    }
    for (size_t k = 0; k < x.size(); ++k) {
      bool k_known = true;
      bool eq = EqualsAt(x[k], y[k], &k_known, budget, loc, depth + 1);
      if (!k_known) {
        *known = false;
        return false;
      }
      if (!eq) return false;
    }
    return true;
  }
  case ValueKind::kFunction:
  case ValueKind::kPrimFunc:
    return a.func == b.func;
  default:
    *known = false;
    return false;
  }
}

} // namespace

bool PyEquals(const Value& a, const Value& b, bool* known, EvalBudget* budget, ir::Loc loc) {
  return EqualsAt(a, b, known, budget, loc, 0);
}

std::string AttrText(const Value& v) {
  switch (v.kind) {
  case ValueKind::kBool:
    return v.i ? "true" : "false";
  case ValueKind::kInt:
    return absl::StrCat(v.i);
  case ValueKind::kFloat:
    return absl::StrFormat("%.17g", v.f);
  case ValueKind::kString:
    return v.s;
  case ValueKind::kDType:
    return std::string(ir::DTypeName(v.dtype));
  default:
    return "";
  }
}

} // namespace kiln::frontend
