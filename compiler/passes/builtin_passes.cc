// The list of built-in passes. Each pass file defines one Register*Pass()
// function; add it here when you add a pass.
#include "compiler/passes/pass_registry.h"

namespace kiln::passes {

void RegisterVerifyPass();
void RegisterSimplifyPass();
void RegisterSimplifyBoundsPass();
void RegisterCanonicalizePass();
void RegisterVerifyResourcesPass();
void RegisterThreadRegionsPass();
void RegisterLayoutInferencePass();
void RegisterLowerTileOpsPass();
void RegisterSharedPlacementPass();

void RegisterBuiltinPasses() {
  RegisterVerifyPass();
  RegisterSimplifyPass();
  RegisterSimplifyBoundsPass();
  RegisterCanonicalizePass();
  RegisterVerifyResourcesPass();
  RegisterThreadRegionsPass();
  RegisterLayoutInferencePass();
  RegisterLowerTileOpsPass();
  RegisterSharedPlacementPass();
}

} // namespace kiln::passes
