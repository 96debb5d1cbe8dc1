#include "compiler/frontend/frontend.h"

#include "compiler/frontend/evaluator.h"
#include "compiler/frontend/parser.h"
#include "compiler/frontend/value_heap.h"
#include "util/status_macros.h"

namespace kiln::frontend {

absl::StatusOr<ir::Program> CompileSource(std::string_view source, const FrontendOptions& options) {
  ASSIGN_OR_RETURN(Module module, ParseModule(source, options.file_name));
  // Before the evaluator, so it ends after it: frees the cycles it left.
  ValueHeap heap;
  Evaluator evaluator(module, options);
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
