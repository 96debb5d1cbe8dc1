#include "compiler/frontend/frontend.h"

#include "compiler/frontend/evaluator.h"
#include "compiler/frontend/parser.h"
#include "util/status_macros.h"

namespace kiln::frontend {

absl::StatusOr<ir::Program> CompileSource(std::string_view source, const FrontendOptions& options) {
  ASSIGN_OR_RETURN(Module module, ParseModule(source, options.file_name));
  Evaluator evaluator(module, options);
  return evaluator.Run();
}

absl::StatusOr<EntrySignature> DescribeEntry(std::string_view source,
                                             const FrontendOptions& options) {
  ASSIGN_OR_RETURN(Module module, ParseModule(source, options.file_name));
  Evaluator evaluator(module, options);
  return evaluator.DescribeEntry();
}

} // namespace kiln::frontend
