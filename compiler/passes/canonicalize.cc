// Pass "canonicalize": replaces the program by its canonical form (the form
// that cache keys hash): names renamed by order of definition, locations,
// program name and source name cleared, expressions simplified.
#include "compiler/ir/canonicalize.h"

#include "compiler/passes/pass_registry.h"

namespace kiln::passes {

void RegisterCanonicalizePass() {
  RegisterPass({"canonicalize",
                "renames every name by order of definition, clears locations and names, "
                "simplifies expressions",
                [](ir::Program& program, const PassContext&) {
                  program = ir::Canonicalize(program);
                  return absl::OkStatus();
                }});
}

} // namespace kiln::passes
