// Pass "verify": structural and type checks of the tile IR (ir::Verify).
#include "compiler/ir/verifier.h"
#include "compiler/passes/pass_registry.h"

namespace kiln::passes {

void RegisterVerifyPass() {
  RegisterPass({"verify",
                "checks names, scopes, dtypes, region ranks and extents, loops and the kernel "
                "launch shape; changes nothing",
                [](ir::Program& program, const PassContext&) { return ir::Verify(program); }});
}

} // namespace kiln::passes
