#include "compiler/frontend/frontend.h"

#include "compiler/frontend/evaluator.h"
#include "compiler/frontend/parser.h"
#include "compiler/frontend/value_heap.h"
#include "util/status_macros.h"

namespace kiln::frontend {

absl::StatusOr<ir::Program> CompileSource(std::string_view source, const FrontendOptions& options) {
  for (const auto& [name, value] : options.bindings) RETURN_IF_ERROR(CheckBinding(name, value));
  ASSIGN_OR_RETURN(Module module, ParseModule(source, options.file_name));
  const PyStmt* returned = nullptr;
  {
    // Before the evaluator, so it ends after it: frees the cycles it left.
    ValueHeap heap;
    Evaluator evaluator(module, options);
    absl::StatusOr<ir::Program> program = evaluator.Run();
    if (program.ok() || evaluator.ReturnedPrimFunc() == nullptr) return program;
    returned = evaluator.ReturnedPrimFunc();
  }
  // The kernel function returned a @T.prim_func other than the first it
  // defined: evaluate it again (the evaluation is deterministic) lowering
  // that one.
  ValueHeap heap;
  Evaluator evaluator(module, options);
  evaluator.LowerOnly(returned);
  return evaluator.Run();
}

absl::StatusOr<EntrySignature> DescribeEntry(std::string_view source,
                                             const FrontendOptions& options) {
  ASSIGN_OR_RETURN(Module module, ParseModule(source, options.file_name));
  ValueHeap heap;
  Evaluator evaluator(module, options);
  return evaluator.DescribeEntry();
}

} // namespace kiln::frontend
