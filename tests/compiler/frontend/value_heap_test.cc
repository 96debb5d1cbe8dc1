// An evaluation frees every list, tuple and dict it made, reference cycles
// included (compiler/frontend/value_heap.h): the count of live sequences on
// this thread is the same before and after, whether the evaluation
// succeeds or fails. In the sanitizer build LeakSanitizer checks the same.
#include <string>

#include "absl/strings/str_cat.h"
#include "compiler/frontend/frontend.h"
#include "compiler/frontend/value.h"
#include "compiler/frontend/value_heap.h"
#include "gtest/gtest.h"

namespace kiln::frontend {
namespace {

// A kernel whose entry runs `body` (4-space indented lines) first.
std::string Program(const std::string& body) {
  return absl::StrCat(R"(import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A):
    N = T.const("N")
    A: T.Tensor((N,), T.float32)
)",
                      body, R"(
    with T.Kernel(1, threads=32) as bx:
        A[bx] = 0
)");
}

absl::StatusOr<ir::Program> Evaluate(const std::string& body, EvalLimits limits = {}) {
  FrontendOptions o;
  o.file_name = "t.py";
  o.bindings.emplace_back("N", ParseBindingText("64"));
  o.limits = limits;
  return CompileSource(Program(body), o);
}

struct Case {
  const char* name;
  std::string body;
  bool ok = true;
};

TEST(ValueHeap, AnEvaluationFreesItsCycles) {
  const Case cases[] = {
      {"a list that contains itself", "    l = []\n    l.append(l)\n"},
      {"a dict reached back through a list", "    d = {}\n    d['self'] = [d]\n"},
      {"a tuple reached back through its list", "    t = ([],)\n    t[0].append(t)\n"},
      {"a ring of lists", "    a = []\n    b = [a]\n    c = [b]\n    a.append(c)\n"},
      {"many cycles in a loop",
       "    for i in range(1000):\n        l = [i]\n        l.append(l)\n"},
      {"a cycle, then a failing evaluation", "    l = []\n    l.append(l)\n    x = 1 // 0\n",
       false},
      {"a cycle, then the budget runs out",
       "    l = []\n    l.append(l)\n    while True:\n        l.append(0)\n", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const int64_t before = LiveValueLists();
    absl::StatusOr<ir::Program> p = Evaluate(c.body);
    EXPECT_EQ(p.ok(), c.ok) << p.status();
    EXPECT_EQ(LiveValueLists(), before);
  }
}

TEST(ValueHeap, SequencesOutsideAHeapAreUntouchedAndAHeapEmptiesOnlyItsOwn) {
  const int64_t before = LiveValueLists();
  Value kept = Value::List({Value::Int(1)});
  {
    ValueHeap heap;
    Value cycle = Value::List({});
    cycle.items->push_back(cycle);
    Value plain = Value::Tuple({Value::Int(2), kept});
    EXPECT_EQ(heap.live(), 2);
  }
  EXPECT_EQ(LiveValueLists(), before + 1); // `kept`, still holding its item
  ASSERT_EQ(kept.elts().size(), 1u);
  EXPECT_EQ(kept.elts()[0].i, 1);
}

} // namespace
} // namespace kiln::frontend
