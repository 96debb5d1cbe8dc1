// Pass "verify-resources": checks a program against its target's per-block
// limits before any code is generated, so that an oversized config fails
// with a located message instead of a launch error on the GPU.
//
// 1. Threads per block and grid extents (y and z at most 65535).
// 2. Shared memory: every shared/shared.dyn buffer must have a constant
//    shape; a buffer written by a copy inside a Pipelined loop with
//    num_stages = s is counted s times (the pipeline multi-buffers it). The
//    total must fit the target's opt-in limit.
// 3. Registers: fragments are spread over the block's threads and local
//    buffers are per thread; the resulting lower bound on 32-bit registers
//    per thread must not exceed the target's limit.
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/ir/diagnostic.h"
#include "compiler/ir/dtype.h"
#include "compiler/ir/simplify.h"
#include "compiler/passes/pass_registry.h"
#include "compiler/passes/target.h"

namespace kiln::passes {
namespace {

struct SharedUse {
  const ir::Stmt* alloc = nullptr;
  int64_t bytes = 0;
  int stages = 1;
};

// Records, for every buffer written by a copy inside a pipelined loop, the
// largest num_stages of the loops around that copy.
void CollectStages(const std::vector<ir::Stmt>& body, int stages, std::map<std::string, int>* out) {
  for (const ir::Stmt& s : body) {
    int inner = stages;
    if (s.kind == ir::StmtKind::kFor && s.for_kind == ir::ForKind::kPipelined) {
      inner = std::max(stages, static_cast<int>(s.num_stages));
    }
    if (s.kind == ir::StmtKind::kCopy && s.regions.size() == 2 && stages > 1) {
      int& v = (*out)[s.regions[1].buffer];
      v = std::max(v, stages);
    }
    CollectStages(s.body, inner, out);
    CollectStages(s.else_body, inner, out);
  }
}

void CollectAllocs(const std::vector<ir::Stmt>& body, std::vector<const ir::Stmt*>* out) {
  for (const ir::Stmt& s : body) {
    if (s.kind == ir::StmtKind::kAlloc) out->push_back(&s);
    CollectAllocs(s.body, out);
    CollectAllocs(s.else_body, out);
  }
}

absl::StatusOr<int64_t> ConstBytes(const ir::Program& program, const ir::Stmt& alloc) {
  int64_t elems = 1;
  for (const ir::Expr& e : alloc.buffer.shape) {
    std::optional<int64_t> v = ir::ConstInt(ir::Simplify(e));
    if (!v) {
      return ir::ErrorAt(program.source_name, alloc.loc,
                         absl::StrCat(std::string(ir::ScopeName(alloc.buffer.scope)), " buffer '",
                                      alloc.buffer.name, "' needs a constant shape"));
    }
    if (*v <= 0 || elems > (int64_t{1} << 40) / *v) {
      return ir::ErrorAt(program.source_name, alloc.loc,
                         absl::StrCat("buffer '", alloc.buffer.name, "' is too large"));
    }
    elems *= *v;
  }
  return elems * std::max(1, ir::DTypeBits(alloc.buffer.dtype) / 8);
}

absl::Status VerifyResources(ir::Program& program, const PassContext& ctx) {
  auto target = ParseTarget(ctx.target);
  if (!target.ok()) return target.status();
  const ir::Kernel& kernel = program.kernel;
  const std::string& file = program.source_name;

  int64_t threads = 1;
  for (int64_t t : kernel.threads) threads *= t;
  if (threads > target->max_threads_per_block) {
    return ir::ErrorAt(file, kernel.loc,
                       absl::StrCat("the kernel uses ", threads, " threads per block; target ",
                                    ctx.target, " allows at most ", target->max_threads_per_block));
  }
  for (size_t d = 1; d < kernel.grid.size(); ++d) {
    std::optional<int64_t> g = ir::ConstInt(ir::Simplify(kernel.grid[d]));
    if (g && *g > 65535) {
      return ir::ErrorAt(file, kernel.loc,
                         absl::StrCat("grid dimension ", d, " is ", *g,
                                      "; at most 65535 blocks are allowed along y and z"));
    }
  }

  std::map<std::string, int> stages;
  CollectStages(kernel.body, 1, &stages);
  std::vector<const ir::Stmt*> allocs;
  CollectAllocs(kernel.body, &allocs);

  std::vector<SharedUse> shared;
  int64_t shared_total = 0;
  int64_t fragment_bytes = 0;
  int64_t local_bytes = 0;
  const ir::Stmt* largest_fragment = nullptr;
  int64_t largest_fragment_bytes = -1;
  for (const ir::Stmt* a : allocs) {
    ir::Scope scope = a->buffer.scope;
    if (scope == ir::Scope::kGlobal || scope == ir::Scope::kVar) continue;
    auto bytes = ConstBytes(program, *a);
    if (!bytes.ok()) return bytes.status();
    if (scope == ir::Scope::kShared || scope == ir::Scope::kSharedDyn) {
      SharedUse use{a, *bytes, 1};
      auto it = stages.find(a->buffer.name);
      if (it != stages.end()) use.stages = it->second;
      shared_total += use.bytes * use.stages;
      shared.push_back(use);
    } else if (scope == ir::Scope::kFragment) {
      fragment_bytes += *bytes;
      if (*bytes > largest_fragment_bytes) {
        largest_fragment_bytes = *bytes;
        largest_fragment = a;
      }
    } else {
      local_bytes += *bytes;
    }
  }

  if (shared_total > target->shared_bytes_optin) {
    std::sort(shared.begin(), shared.end(), [](const SharedUse& x, const SharedUse& y) {
      return x.bytes * x.stages > y.bytes * y.stages;
    });
    std::vector<std::string> parts;
    for (const SharedUse& u : shared) {
      parts.push_back(u.stages > 1 ? absl::StrCat(u.alloc->buffer.name, " ", u.bytes, " x ",
                                                  u.stages, " stages")
                                   : absl::StrCat(u.alloc->buffer.name, " ", u.bytes));
    }
    return ir::ErrorAt(file, shared.front().alloc->loc,
                       absl::StrCat("shared memory: the kernel needs ", shared_total,
                                    " bytes per block (", absl::StrJoin(parts, ", "),
                                    ") but target ", ctx.target, " allows at most ",
                                    target->shared_bytes_optin));
  }

  int64_t regs = (fragment_bytes + threads * 4 - 1) / (threads * 4) + (local_bytes + 3) / 4;
  if (regs > target->registers_per_thread) {
    ir::Loc loc = largest_fragment != nullptr ? largest_fragment->loc : kernel.loc;
    return ir::ErrorAt(file, loc,
                       absl::StrCat("fragments and local buffers need at least ", regs,
                                    " registers per thread (", fragment_bytes,
                                    " fragment bytes over ", threads, " threads, ", local_bytes,
                                    " local bytes per thread); target ", ctx.target,
                                    " allows at most ", target->registers_per_thread));
  }
  return absl::OkStatus();
}

} // namespace

void RegisterVerifyResourcesPass() {
  RegisterPass({"verify-resources",
                "checks threads, grid, shared memory (with pipeline stages) and a register "
                "lower bound against the target's per-block limits; changes nothing",
                VerifyResources});
}

} // namespace kiln::passes
