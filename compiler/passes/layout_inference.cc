// Pass "layout-inference".
//
// 1. Every fragment gets a constant shape or a located error.
// 2. Constraints, applied until nothing changes:
//    - gemm fixes C to the m16n8 accumulator layout of its warp grid, and a
//      register A operand to the accumulator layout of (M x K) over the same
//      warp rows (which is exactly the mma A-operand register order);
//    - reduce gives dst the projection of src without the reduced dimension;
//    - a fragment-to-fragment copy gives both sides the same layout (a copy
//      of part of a fragment is first rewritten into the T.Parallel loop
//      that says the same, which the loop rules below then lay out);
//    - a T.Parallel loop takes the layout of a fragment indexed by exactly
//      its loop variables, and every other fragment it indexes by loop
//      variables gets the projection of that layout.
//    A fragment given two different layouts is a located error. (Perfect
//    nests of T.Parallel loops are fused into one loop first.)
//    A fragment only read in a loop, whose layout is fully replicated
//    (every thread holds every element), takes no constraint from it: any
//    thread reads any element of it directly.
//    A reducer (T.alloc_reducer, compiler/ir/reducer.h) is fully replicated
//    from the start and takes no constraint from the loops that update it:
//    each thread updates its own copy.
// 3. When nothing changes, fragments accessed element by element outside
//    a T.Parallel loop, or inside one by indices that are not distinct loop
//    variables (`if mask[k]:`, `x[0]` in a loop over i), get the fully
//    replicated layout (every thread holds all of it, row-major in its
//    registers), unless they have a layout already; at the end, each such
//    fragment must have a fully replicated layout, else a located error at
//    the access names the statement that distributed it.
// 4. When nothing changes and fragments remain unknown: the first Parallel
//    loop over an unknown fragment gets a default layout (threads over the
//    innermost dimension, 16-byte vectors); else the first unknown fragment
//    does. Then back to 2. ("First" is the first statement in program order
//    that touches an unknown fragment; where that order ends in an error,
//    inference runs again with every T.Parallel loop before other
//    statements.)
// 5. Shared buffers read by gemm with 16-bit elements get the 128-byte XOR
//    swizzle when their rows are a multiple of 16 bytes.
// 6. For sm_90a (LayoutOptions::wgmma), when every gemm has 16-bit shared
//    (or register: a fragment) A and shared B, or fp8 A and B both
//    K-major in shared memory (WgmmaInputType), an f32 accumulator and a
//    shape wgmma tiles (WgmmaGroups), accumulators get the wgmma D layout,
//    a register A the same layout over (M x K), and the shared operands the
//    column-block layout of wgmma's swizzle modes instead of 1.'s and 5.'s
//    choices.
#include "compiler/passes/layout_inference.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/diagnostic.h"
#include "compiler/ir/dtype.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/reducer.h"
#include "compiler/ir/simplify.h"
#include "compiler/passes/pass_registry.h"
#include "compiler/passes/warp_groups.h"
#include "util/status_macros.h"

namespace kiln::passes {
namespace {

using ir::Expr;
using ir::ExprKind;
using ir::Stmt;
using ir::StmtKind;

struct FragInfo {
  const ir::Buffer* buffer = nullptr;
  std::vector<int64_t> shape;
};

void CollectAllocs(const std::vector<Stmt>& body, std::vector<const Stmt*>* out) {
  for (const Stmt& s : body) {
    if (s.kind == StmtKind::kAlloc) out->push_back(&s);
    CollectAllocs(s.body, out);
    CollectAllocs(s.else_body, out);
  }
}

absl::StatusOr<std::map<std::string, FragInfo>> CollectFragments(const ir::Program& p) {
  std::vector<const Stmt*> allocs;
  CollectAllocs(p.kernel.body, &allocs);
  std::map<std::string, FragInfo> out;
  for (const Stmt* s : allocs) {
    if (s->buffer.scope != ir::Scope::kFragment) continue;
    FragInfo info;
    info.buffer = &s->buffer;
    for (const Expr& e : s->buffer.shape) {
      std::optional<int64_t> v = ir::ConstInt(ir::Simplify(e));
      if (!v || *v <= 0) {
        return ir::ErrorAt(
            p.source_name, s->loc,
            absl::StrCat("fragment '", s->buffer.name, "' needs a constant positive shape"));
      }
      info.shape.push_back(*v);
    }
    out.emplace(s->buffer.name, std::move(info));
  }
  return out;
}

// A fragment access inside a Parallel loop whose indices are distinct loop
// variables: dims[k] is the loop dimension of the fragment's dimension k.
struct Candidate {
  std::string buffer;
  std::vector<int> dims;
  ir::Loc loc;
  bool write = false; // some access with these dims stores to it
};

void VisitExpr(const Expr& e, const std::function<void(const Expr&)>& fn) {
  fn(e);
  for (const Expr& a : e.args) VisitExpr(a, fn);
}

std::vector<Candidate> LoopCandidates(const Stmt& loop,
                                      const std::map<std::string, FragInfo>& frags) {
  std::vector<Candidate> out;
  auto consider = [&](const std::string& name, const std::vector<Expr>& indices, ir::Loc loc,
                      bool write) {
    if (!frags.count(name)) return;
    std::optional<std::vector<int>> dims = LoopDims(indices, loop.loop_vars);
    if (!dims) return;
    for (Candidate& c : out) {
      if (c.buffer == name && c.dims == *dims) {
        c.write = c.write || write;
        return;
      }
    }
    out.push_back({name, *dims, loc, write});
  };
  auto on_expr = [&](const Expr& root) {
    VisitExpr(root, [&](const Expr& e) {
      if (e.kind == ExprKind::kLoad) consider(e.name, e.args, e.loc, false);
    });
  };
  std::function<void(const std::vector<Stmt>&)> walk = [&](const std::vector<Stmt>& body) {
    for (const Stmt& s : body) {
      if (s.kind == StmtKind::kStore) consider(s.name, s.indices, s.loc, true);
      // An element-wise atomic names its operands as one-element regions
      // (the first is the destination).
      if (s.kind == StmtKind::kAtomic) {
        for (size_t k = 0; k < s.regions.size(); ++k) {
          const ir::Region& r = s.regions[k];
          std::vector<Expr> mins;
          for (const ir::Range& rg : r.ranges) mins.push_back(rg.min);
          consider(r.buffer, mins, r.loc, k == 0);
        }
      }
      if (s.kind == StmtKind::kAtomic && s.has_value) on_expr(s.value);
      if (s.kind == StmtKind::kStore && s.has_value) on_expr(s.value);
      for (const Expr& ix : s.indices) on_expr(ix);
      if (s.kind == StmtKind::kIf) on_expr(s.cond);
      walk(s.body);
      walk(s.else_body);
    }
  };
  walk(loop.body);
  return out;
}

// The first element-by-element access of a fragment that needs a copy of
// every element in every thread (step 3 of the overview).
struct ElementAccess {
  ir::Loc loc;
  bool in_parallel = false; // inside a T.Parallel loop, by non-loop indices
  bool write = false;
  int64_t threads = 0; // of the statement (a T.ws region's, or the block's)
};

std::map<std::string, ElementAccess> ElementAccesses(const ir::Program& p,
                                                     const std::map<std::string, FragInfo>& frags) {
  std::map<std::string, ElementAccess> out;
  // `vars`: the variables of the enclosing T.Parallel loops, or null.
  auto note = [&](const std::string& name, const std::vector<Expr>& indices, ir::Loc loc,
                  const std::vector<std::string>* vars, bool write, int64_t threads) {
    if (!frags.count(name) || out.count(name)) return;
    if (vars && LoopDims(indices, *vars)) return;
    out.emplace(name, ElementAccess{loc, vars != nullptr, write, threads});
  };
  auto loads = [&](const Expr& root, const std::vector<std::string>* vars, int64_t threads) {
    VisitExpr(root, [&](const Expr& e) {
      if (e.kind == ExprKind::kLoad) note(e.name, e.args, e.loc, vars, false, threads);
    });
  };
  std::function<void(const std::vector<Stmt>&, const std::vector<std::string>*, int64_t)> walk =
      [&](const std::vector<Stmt>& body, const std::vector<std::string>* vars, int64_t threads) {
        for (const Stmt& s : body) {
          if (s.has_value) loads(s.value, vars, threads);
          if (s.kind == StmtKind::kIf) loads(s.cond, vars, threads);
          for (const Expr& e : s.indices) loads(e, vars, threads);
          for (const Expr& e : s.extents) loads(e, vars, threads);
          for (const ir::Region& r : s.regions) {
            for (const ir::Range& rg : r.ranges) {
              loads(rg.min, vars, threads);
              loads(rg.extent, vars, threads);
            }
          }
          if (s.kind == StmtKind::kStore) note(s.name, s.indices, s.loc, vars, true, threads);
          // Inside a loop, an atomic's regions are single elements (the
          // first is the destination); outside, it is a tile op.
          if (s.kind == StmtKind::kAtomic && vars) {
            for (size_t k = 0; k < s.regions.size(); ++k) {
              std::vector<Expr> mins;
              for (const ir::Range& rg : s.regions[k].ranges) mins.push_back(rg.min);
              note(s.regions[k].buffer, mins, s.regions[k].loc, vars, k == 0, threads);
            }
          }
          int64_t inner = threads;
          if (s.kind == StmtKind::kWarpSpecialize) {
            if (auto r = WarpGroupRange(s)) inner = r->second - r->first;
          }
          if (s.kind == StmtKind::kFor && s.for_kind == ir::ForKind::kParallel) {
            std::vector<std::string> all = vars ? *vars : std::vector<std::string>{};
            all.insert(all.end(), s.loop_vars.begin(), s.loop_vars.end());
            walk(s.body, &all, inner);
          } else {
            walk(s.body, vars, inner);
          }
          walk(s.else_body, vars, inner);
        }
      };
  walk(p.kernel.body, nullptr, BlockThreads(p));
  return out;
}

int64_t VectorOf(ir::DType t) { return std::max(1, 128 / std::max(8, ir::DTypeBits(t))); }

// Elements per 16-byte vector for a fragment's default layout: by the
// narrowest dtype it is copied from or to in global or shared memory, so
// that a float32 fragment loaded from float16 data moves 16 bytes per load.
int64_t FragmentVector(const ir::Program& p, const std::string& frag, ir::DType dtype) {
  std::map<std::string, const ir::Buffer*> memory;
  for (const ir::Param& param : p.params) {
    if (!param.is_scalar) memory[param.buffer.name] = &param.buffer;
  }
  ir::ForEachStmt(p.kernel.body, [&](const Stmt& s) {
    if (s.kind == StmtKind::kAlloc &&
        (s.buffer.scope == ir::Scope::kShared || s.buffer.scope == ir::Scope::kSharedDyn)) {
      memory[s.buffer.name] = &s.buffer;
    }
  });
  int bits = ir::DTypeBits(dtype);
  ir::ForEachStmt(p.kernel.body, [&](const Stmt& s) {
    if (s.kind != StmtKind::kCopy || s.regions.size() != 2) return;
    for (int k = 0; k < 2; ++k) {
      if (s.regions[k].buffer != frag) continue;
      auto it = memory.find(s.regions[1 - k].buffer);
      if (it != memory.end()) bits = std::min(bits, ir::DTypeBits(it->second->dtype));
    }
  });
  return VectorOf(bits <= 8 ? ir::DType::kInt8 : bits <= 16 ? ir::DType::kFloat16 : dtype);
}

// The wgmma plan of one gemm: its warpgroup grid, or nullopt. A is in
// shared memory, or (wgmma's register form) a 16-bit (M x K) fragment,
// not transposed, whose rows the warpgroups split among them (groups_n
// is 1: a fragment cannot hold the same rows in two warpgroups).
std::optional<std::pair<int64_t, int64_t>>
WgmmaGemmGroups(const Stmt& s, const std::map<std::string, const ir::Buffer*>& shared,
                const std::map<std::string, FragInfo>& frags, int64_t threads) {
  auto sa = shared.find(s.regions[0].buffer);
  auto fa = frags.find(s.regions[0].buffer);
  auto sb = shared.find(s.regions[1].buffer);
  auto fc = frags.find(s.regions[2].buffer);
  const bool register_a = sa == shared.end() && fa != frags.end();
  if ((sa == shared.end() && !register_a) || sb == shared.end() || fc == frags.end()) {
    return std::nullopt;
  }
  const ir::Buffer& a = register_a ? *fa->second.buffer : *sa->second;
  const ir::Buffer& b = *sb->second;
  if (a.dtype != b.dtype || !WgmmaInputType(a.dtype)) return std::nullopt;
  if (!WgmmaOperandForms(a.dtype, register_a, s.transpose_a, s.transpose_b)) return std::nullopt;
  const int64_t eb = ir::DTypeBits(a.dtype) / 8;
  const int64_t kstep = WgmmaKStep(a.dtype);
  if (fc->second.buffer->dtype != ir::DType::kFloat32 || fc->second.shape.size() != 2 ||
      a.shape.size() != 2 || b.shape.size() != 2) {
    return std::nullopt;
  }
  auto dims = [](const ir::Buffer& x) -> std::optional<std::pair<int64_t, int64_t>> {
    std::optional<int64_t> r = ir::ConstInt(ir::Simplify(x.shape[0]));
    std::optional<int64_t> c = ir::ConstInt(ir::Simplify(x.shape[1]));
    if (!r || !c) return std::nullopt;
    return std::make_pair(*r, *c);
  };
  auto ad = dims(a), bd = dims(b);
  if (!ad || !bd) return std::nullopt;
  const int64_t m = fc->second.shape[0], n = fc->second.shape[1];
  const int64_t am = s.transpose_a ? ad->second : ad->first;
  const int64_t k = s.transpose_a ? ad->first : ad->second;
  const int64_t bk = s.transpose_b ? bd->second : bd->first;
  const int64_t bn = s.transpose_b ? bd->first : bd->second;
  if (am != m || bk != k || bn != n || k % kstep != 0) return std::nullopt;
  // Each shared operand's contiguous dimension must fit a swizzle mode.
  const int64_t wb = WgmmaBlockElems(bd->second, eb);
  if (wb == 0) return std::nullopt;
  if (register_a) {
    if (s.transpose_a) return std::nullopt;
    auto groups = WgmmaGroups(m, n, threads, s.transpose_b ? 0 : wb);
    if (!groups || groups->second != 1) return std::nullopt;
    return groups;
  }
  const int64_t wa = WgmmaBlockElems(ad->second, eb);
  if (wa == 0) return std::nullopt;
  // An M-major A moves by whole 64-row atoms, which W (<= 64) divides.
  if (s.transpose_a && m % wa != 0) return std::nullopt;
  return WgmmaGroups(m, n, threads, s.transpose_b ? 0 : wb);
}

class Inference {
 public:
  // `loops_first`: step 4 defaults the first T.Parallel loop over an
  // unknown fragment anywhere before any other statement's fragment.
  Inference(ir::Program& p, std::map<std::string, FragInfo> frags, LayoutOptions options,
            bool loops_first)
      : p_(p), frags_(std::move(frags)), threads_(BlockThreads(p)), options_(options),
        loops_first_(loops_first) {}

  absl::Status Run() {
    RETURN_IF_ERROR(CheckFragmentThreads());
    RETURN_IF_ERROR(PlaceReducers());
    if (options_.wgmma) DecideWgmma();
    for (int round = 0; round < 10000; ++round) {
      changed_ = false;
      RETURN_IF_ERROR(Propagate(p_.kernel.body));
      if (changed_) continue;
      RETURN_IF_ERROR(ReplicateElementAccessed());
      if (changed_) continue;
      ASSIGN_OR_RETURN(bool defaulted, DefaultOne());
      if (!defaulted) break;
    }
    RETURN_IF_ERROR(CheckElementAccessed());
    for (const auto& [name, layout] : known_) {
      p_.attrs[absl::StrCat("layout.", name)] = layout.ToString();
    }
    MarkSwizzles(p_.kernel.body);
    if (wgmma_) p_.attrs[kGemmAttr] = "wgmma";
    return absl::OkStatus();
  }

 private:
  absl::Status Set(const std::string& name, FragmentLayout layout, ir::Loc loc,
                   const std::string& why) {
    layout = Normalize(std::move(layout));
    auto it = known_.find(name);
    if (it == known_.end()) {
      known_.emplace(name, std::move(layout));
      origin_[name] = why;
      changed_ = true;
      return absl::OkStatus();
    }
    if (it->second == layout) return absl::OkStatus();
    return ir::ErrorAt(p_.source_name, loc,
                       absl::StrCat("layout conflict for fragment '", name, "': ", origin_[name],
                                    " gives ", it->second.ToString(), " but ", why, " needs ",
                                    layout.ToString()));
  }

  // Step 3: the fragments that need every element in every thread and
  // have no layout yet get the fully replicated one.
  absl::Status ReplicateElementAccessed() {
    for (const auto& [name, access] : element_accesses_) {
      if (known_.count(name)) continue;
      RETURN_IF_ERROR(Set(name, ReplicatedLayout(frags_.at(name).shape, access.threads), access.loc,
                          absl::StrCat(Describe(access), " at line ", access.loc.line)));
    }
    return absl::OkStatus();
  }

  static std::string Describe(const ElementAccess& access) {
    return absl::StrCat(access.write ? "the write" : "the read",
                        access.in_parallel
                            ? " by indices that are not distinct variables of the T.Parallel loop"
                            : " outside a T.Parallel loop");
  }

  absl::Status CheckElementAccessed() const {
    for (const auto& [name, access] : element_accesses_) {
      auto it = known_.find(name);
      if (it == known_.end() || FullyReplicated(it->second)) continue;
      return ir::ErrorAt(
          p_.source_name, access.loc,
          absl::StrCat("fragment '", name, "': ", Describe(access),
                       " needs every element in every thread (a fully replicated layout), but ",
                       origin_.at(name), " spreads it over threads as ", it->second.ToString(),
                       "; copy it to a shared buffer and index that instead"));
    }
    return absl::OkStatus();
  }

  absl::Status Propagate(const std::vector<Stmt>& body) {
    for (const Stmt& s : body) {
      switch (s.kind) {
      case StmtKind::kGemm:
        RETURN_IF_ERROR(Gemm(s));
        break;
      case StmtKind::kReduce: {
        if (s.dim == ir::kReducerFinalizeDim) break; // in place: the layout stays
        const std::string& src = s.regions[0].buffer;
        const std::string& dst = s.regions[1].buffer;
        auto it = known_.find(src);
        if (it != known_.end() && frags_.count(dst)) {
          std::vector<int> dims;
          for (int d = 0; d < static_cast<int>(it->second.shape.size()); ++d) {
            if (d != s.dim) dims.push_back(d);
          }
          RETURN_IF_ERROR(Set(dst, Project(it->second, dims, frags_.at(dst).shape), s.loc,
                              absl::StrCat("the reduction of '", src, "'")));
        }
        break;
      }
      case StmtKind::kCopy: {
        const std::string& a = s.regions[0].buffer;
        const std::string& b = s.regions[1].buffer;
        if (frags_.count(a) && frags_.count(b) && frags_.at(a).shape == frags_.at(b).shape) {
          if (known_.count(a)) {
            RETURN_IF_ERROR(Set(b, known_.at(a), s.loc, absl::StrCat("the copy from '", a, "'")));
          } else if (known_.count(b)) {
            RETURN_IF_ERROR(Set(a, known_.at(b), s.loc, absl::StrCat("the copy to '", b, "'")));
          }
        }
        break;
      }
      case StmtKind::kFor:
        if (s.for_kind == ir::ForKind::kParallel) RETURN_IF_ERROR(Parallel(s, false));
        RETURN_IF_ERROR(Propagate(s.body));
        break;
      case StmtKind::kIf:
        RETURN_IF_ERROR(Propagate(s.body));
        RETURN_IF_ERROR(Propagate(s.else_body));
        break;
      case StmtKind::kWarpSpecialize: {
        // The region's ops are laid out for its own threads (warp_groups.h).
        const int64_t saved = threads_;
        if (auto r = WarpGroupRange(s)) threads_ = r->second - r->first;
        absl::Status st = Propagate(s.body);
        threads_ = saved;
        RETURN_IF_ERROR(st);
        break;
      }
      default:
        break;
      }
    }
    return absl::OkStatus();
  }

  // A fragment lives in the registers of the threads that use it: every
  // statement naming it must run on the same number of threads (all inside
  // ws regions of one size, or all outside them).
  absl::Status CheckFragmentThreads() const {
    std::map<std::string, std::pair<int64_t, ir::Loc>> seen;
    absl::Status status;
    ForEachStmtWithThreads(p_.kernel.body, BlockThreads(p_), [&](const Stmt& s, int64_t t) {
      if (!status.ok() || s.kind == StmtKind::kWarpSpecialize) return;
      std::set<std::string> names;
      for (const ir::Region& r : s.regions) names.insert(r.buffer);
      if (s.kind == StmtKind::kStore) names.insert(s.name);
      std::function<void(const ir::Expr&)> loads = [&](const ir::Expr& e) {
        if (e.kind == ir::ExprKind::kLoad) names.insert(e.name);
        for (const ir::Expr& x : e.args) loads(x);
      };
      if (s.has_value) loads(s.value);
      if (s.kind == StmtKind::kIf) loads(s.cond);
      for (const ir::Expr& e : s.indices) loads(e);
      for (const std::string& n : names) {
        if (!frags_.count(n)) continue;
        auto [it, inserted] = seen.emplace(n, std::make_pair(t, s.loc));
        if (inserted || it->second.first == t) continue;
        status =
            ir::ErrorAt(p_.source_name, s.loc,
                        absl::StrCat("fragment '", n, "' is used by ", t, " threads here but by ",
                                     it->second.first, " threads at line ", it->second.second.line,
                                     "; a fragment belongs to the threads of one T.ws "
                                     "region (or to the whole block)"));
      }
    });
    return status;
  }

  std::map<std::string, const ir::Buffer*> SharedBuffers() const {
    std::vector<const Stmt*> allocs;
    CollectAllocs(p_.kernel.body, &allocs);
    std::map<std::string, const ir::Buffer*> shared;
    for (const Stmt* s : allocs) {
      if (s->buffer.scope == ir::Scope::kShared || s->buffer.scope == ir::Scope::kSharedDyn) {
        shared[s->buffer.name] = &s->buffer;
      }
    }
    return shared;
  }

  // wgmma for all gemms or for none (a mixed program would need layout
  // conversions between the two accumulator layouts).
  void DecideWgmma() {
    const auto shared = SharedBuffers();
    bool all = true, any = false;
    ForEachStmtWithThreads(p_.kernel.body, threads_, [&](const Stmt& s, int64_t threads) {
      if (s.kind != StmtKind::kGemm) return;
      any = true;
      auto groups = WgmmaGemmGroups(s, shared, frags_, threads);
      if (!groups) {
        all = false;
        return;
      }
      wgmma_groups_[&s] = *groups;
    });
    wgmma_ = any && all;
    if (!wgmma_) wgmma_groups_.clear();
  }

  // Reducers: every thread holds every element (the fully replicated
  // layout), set before anything else constrains them.
  absl::Status PlaceReducers() {
    for (const auto& [name, kind] : reducers_) {
      auto it = frags_.find(name);
      if (it == frags_.end()) continue; // the verifier names the bad mark
      RETURN_IF_ERROR(Set(name, ReplicatedLayout(it->second.shape, threads_),
                          it->second.buffer->loc, "T.alloc_reducer"));
    }
    return absl::OkStatus();
  }

  absl::Status Gemm(const Stmt& s) {
    const ir::Region& a = s.regions[0];
    const ir::Region& c = s.regions[2];
    for (const ir::Region& r : s.regions) {
      if (reducers_.count(r.buffer)) {
        return ir::ErrorAt(p_.source_name, r.loc.line ? r.loc : s.loc,
                           absl::StrCat("T.gemm: '", r.buffer,
                                        "' is a reducer (T.alloc_reducer), which cannot be a "
                                        "T.gemm operand; accumulate the gemm in a "
                                        "T.alloc_fragment"));
      }
    }
    if (!frags_.count(c.buffer)) {
      return ir::ErrorAt(p_.source_name, s.loc,
                         absl::StrCat("gemm: the accumulator '", c.buffer, "' must be a fragment"));
    }
    const std::vector<int64_t>& cs = frags_.at(c.buffer).shape;
    if (cs.size() != 2) {
      return ir::ErrorAt(p_.source_name, s.loc, "gemm: the accumulator must be 2-d");
    }
    if (wgmma_) {
      const auto [gm, gn] = wgmma_groups_.at(&s);
      RETURN_IF_ERROR(Set(c.buffer, WgmmaAccumulatorLayout(cs[0], cs[1], gm, gn), s.loc,
                          "wgmma's accumulator"));
      // A register A operand: per k-step of 16, a thread's 8 elements of
      // the accumulator layout of (M x K) are wgmma's A fragment in order
      // (the m16n8k16 A table of each warp's 16 rows).
      if (frags_.count(a.buffer)) {
        const std::vector<int64_t>& as = frags_.at(a.buffer).shape;
        RETURN_IF_ERROR(Set(a.buffer, WgmmaAccumulatorLayout(as[0], as[1], gm, 1), s.loc,
                            "wgmma's register A operand"));
      }
      return absl::OkStatus();
    }
    auto warps = GemmWarps(cs[0], cs[1], threads_ / 32, s.policy);
    if (!warps.ok())
      return ir::ErrorAt(p_.source_name, s.loc, absl::StrCat(warps.status().message()));
    const auto [wm, wn] = *warps;
    RETURN_IF_ERROR(Set(c.buffer, MmaAccumulatorLayout(cs[0], cs[1], wm, wn, threads_), s.loc,
                        "gemm's accumulator"));
    if (frags_.count(a.buffer)) {
      const std::vector<int64_t>& as = frags_.at(a.buffer).shape;
      if (as.size() != 2 || s.transpose_a || as[0] != cs[0]) {
        return ir::ErrorAt(p_.source_name, s.loc,
                           "gemm: a fragment A operand must be (M x K), not transposed");
      }
      // The tensor instructions' inputs: 16-bit floats, tf32 (float32) and
      // int8; other types multiply per element and take any layout.
      const ir::DType at = frags_.at(a.buffer).buffer->dtype;
      const int bits = at == ir::DType::kFloat16 || at == ir::DType::kBFloat16 ? 16
                       : at == ir::DType::kFloat32                             ? 32
                       : at == ir::DType::kInt8                                ? 8
                                                                               : 0;
      if (bits == 0) return absl::OkStatus();
      const int64_t kstep = 8 * (32 / bits); // 16, 8, 32
      if (as[1] % kstep != 0) {
        return ir::ErrorAt(p_.source_name, s.loc,
                           absl::StrCat("gemm: a fragment A operand of ",
                                        std::string(ir::DTypeName(at)),
                                        " needs K to be a multiple of ", kstep));
      }
      RETURN_IF_ERROR(Set(a.buffer, MmaOperandALayout(as[0], as[1], wm, threads_, bits), s.loc,
                          "gemm's register A operand"));
    }
    return absl::OkStatus();
  }

  absl::Status Parallel(const Stmt& loop, bool allow_default) {
    std::vector<Candidate> cands = LoopCandidates(loop, frags_);
    if (cands.empty()) return absl::OkStatus();
    const size_t n = loop.loop_vars.size();
    bool have = false;
    for (const Candidate& c : cands) {
      if (c.dims.size() == n && known_.count(c.buffer) && !reducers_.count(c.buffer)) have = true;
    }
    if (!have && !allow_default) return absl::OkStatus();
    ASSIGN_OR_RETURN(FragmentLayout layout, LoopLayout(p_, loop, known_, std::nullopt, threads_));
    for (const Candidate& c : cands) {
      // Each thread updates its own copy of a reducer.
      if (reducers_.count(c.buffer)) continue;
      // Lowering reads any element of a fully replicated fragment directly.
      auto it = known_.find(c.buffer);
      if (!c.write && it != known_.end() && FullyReplicated(it->second)) continue;
      RETURN_IF_ERROR(Set(c.buffer, Project(layout, c.dims, frags_.at(c.buffer).shape), c.loc,
                          absl::StrCat("the T.Parallel loop at line ", loop.loc.line)));
    }
    return absl::OkStatus();
  }

  // Finds the first statement (in program order) that touches a fragment
  // without a layout: a Parallel loop gets a default loop layout, any other
  // statement gives its first such fragment (a reduction's source first)
  // the default layout.
  absl::StatusOr<bool> DefaultOne() {
    const Stmt* loop = nullptr;
    const FragInfo* frag = nullptr;
    const int64_t block = threads_;
    int64_t at = block; // the threads of the statement found
    int64_t cur = block;
    bool only_loops = loops_first_;
    std::function<void(const std::vector<Stmt>&)> find = [&](const std::vector<Stmt>& body) {
      for (const Stmt& s : body) {
        if (loop || frag) return;
        if (s.kind == StmtKind::kWarpSpecialize) {
          const int64_t saved = cur;
          if (auto r = WarpGroupRange(s)) cur = r->second - r->first;
          find(s.body);
          if (!loop && !frag) cur = saved;
          continue;
        }
        at = cur;
        if (s.kind == StmtKind::kFor && s.for_kind == ir::ForKind::kParallel) {
          for (const Candidate& c : LoopCandidates(s, frags_)) {
            if (!known_.count(c.buffer)) loop = &s;
          }
          continue;
        }
        // A fill fits any layout; a reduction's destination follows its
        // source.
        const size_t regions = only_loops                    ? 0
                               : s.kind == StmtKind::kFill   ? 0
                               : s.kind == StmtKind::kReduce ? 1
                                                             : s.regions.size();
        for (size_t k = 0; k < regions; ++k) {
          auto it = frags_.find(s.regions[k].buffer);
          if (!frag && it != frags_.end() && !known_.count(it->first)) frag = &it->second;
        }
        find(s.body);
        find(s.else_body);
      }
    };
    find(p_.kernel.body);
    if (only_loops && !loop) {
      only_loops = false;
      cur = at = block;
      find(p_.kernel.body);
    }
    if (!loop && !frag) at = block;
    if (loop) {
      threads_ = at;
      absl::Status st = Parallel(*loop, true);
      threads_ = block;
      RETURN_IF_ERROR(st);
      return true;
    }
    if (!frag) {
      for (const auto& [name, info] : frags_) {
        if (!known_.count(name)) {
          frag = &info;
          break;
        }
      }
    }
    if (!frag) return false;
    RETURN_IF_ERROR(Set(
        frag->buffer->name,
        DefaultLayout(frag->shape, at, FragmentVector(p_, frag->buffer->name, frag->buffer->dtype)),
        frag->buffer->loc, "the default layout"));
    return true;
  }

  void MarkSwizzles(const std::vector<Stmt>& body) {
    std::vector<const Stmt*> allocs;
    CollectAllocs(p_.kernel.body, &allocs);
    std::map<std::string, const ir::Buffer*> shared;
    for (const Stmt* s : allocs) {
      if (s->buffer.scope == ir::Scope::kShared || s->buffer.scope == ir::Scope::kSharedDyn) {
        shared[s->buffer.name] = &s->buffer;
      }
    }
    ir::ForEachStmt(body, [&](const Stmt& s) {
      if (s.kind != StmtKind::kGemm) return;
      for (int k = 0; k < 2; ++k) {
        auto it = shared.find(s.regions[k].buffer);
        if (it == shared.end()) continue;
        const ir::Buffer& b = *it->second;
        std::optional<int64_t> cols = ir::ConstInt(ir::Simplify(b.shape.back()));
        if (!cols) continue;
        if (wgmma_) {
          p_.attrs[absl::StrCat("layout.", b.name)] =
              absl::StrCat(kWgmmaLayoutPrefix, WgmmaBlockElems(*cols, ir::DTypeBits(b.dtype) / 8));
          continue;
        }
        if (ir::DTypeBits(b.dtype) != 16) continue;
        const int64_t row_bytes = *cols * 2;
        if (row_bytes % 16 != 0 || (row_bytes > 128 && row_bytes % 128 != 0)) continue;
        p_.attrs[absl::StrCat("layout.", b.name)] = kSwizzleLayout;
      }
    });
  }

  ir::Program& p_;
  std::map<std::string, FragInfo> frags_;
  int64_t threads_;
  LayoutMap known_;
  std::map<std::string, std::string> origin_;
  bool changed_ = false;
  LayoutOptions options_;
  bool wgmma_ = false;
  std::map<const Stmt*, std::pair<int64_t, int64_t>> wgmma_groups_;
  std::map<std::string, ElementAccess> element_accesses_ = ElementAccesses(p_, frags_);
  bool loops_first_ = false;
  std::map<std::string, ir::ReduceKind> reducers_ = Reducers(p_);

  static std::map<std::string, ir::ReduceKind> Reducers(const ir::Program& p) {
    std::map<std::string, ir::ReduceKind> out;
    ir::CollectReducers(p.kernel.body, &out);
    return out;
  }
};

absl::Status RunLayoutInference(ir::Program& program, const PassContext& ctx) {
  LayoutOptions options;
  options.wgmma =
      ctx.gemm_wgmma && TargetUsesWgmma(ctx.lower_for.empty() ? ctx.target : ctx.lower_for);
  if (options.wgmma && ctx.tma_ws_pipeline) program.attrs[kPipelineAttr] = kPipelineWarpSpecialized;
  if (options.wgmma && ctx.tma_ws_pipeline && ctx.ws_blocks > 0) {
    program.attrs[kWsBlocksAttr] = absl::StrCat(ctx.ws_blocks);
  }
  if (options.wgmma && ctx.tma_ws_pipeline && ctx.ws_overlap) program.attrs[kWsOverlapAttr] = "1";
  if (options.wgmma && ctx.tma_ws_pipeline && ctx.epilogue != Epilogue::kDirect) {
    program.attrs[kTmaStoreAttr] = ctx.epilogue == Epilogue::kTma ? "1" : "auto";
  }
  if (ctx.cluster > 1) {
    // Clusters are the GPU's: the CPU emulation runs blocks one at a time.
    if (!options.wgmma || !ctx.tma_ws_pipeline || !ctx.lower_for.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cluster=", ctx.cluster,
          " needs a CUDA Hopper target with wgmma and the TMA pipeline "
          "(target '",
          ctx.target, ctx.lower_for.empty() ? "" : "', lower-for '", ctx.lower_for, "')"));
    }
    program.attrs[kClusterAttr] = absl::StrCat(ctx.cluster);
  }
  return InferLayouts(program, options);
}

} // namespace

std::optional<std::vector<int>> LoopDims(const std::vector<Expr>& indices,
                                         const std::vector<std::string>& vars) {
  std::vector<int> dims;
  for (const Expr& ix : indices) {
    if (ix.kind != ExprKind::kVar) return std::nullopt;
    auto it = std::find(vars.begin(), vars.end(), ix.name);
    if (it == vars.end()) return std::nullopt;
    const int d = static_cast<int>(it - vars.begin());
    if (std::find(dims.begin(), dims.end(), d) != dims.end()) return std::nullopt;
    dims.push_back(d);
  }
  return dims;
}

int64_t BlockThreads(const ir::Program& program) {
  int64_t t = 1;
  for (int64_t v : program.kernel.threads) t *= v;
  return t;
}

absl::StatusOr<std::pair<int64_t, int64_t>> GemmWarps(int64_t m, int64_t n, int64_t warps,
                                                      ir::GemmPolicy policy) {
  if (warps < 1) return absl::InvalidArgumentError("gemm needs at least one warp (32 threads)");
  std::optional<std::pair<int64_t, int64_t>> best;
  double best_score = 0;
  for (int64_t wm = 1; wm <= warps; ++wm) {
    if (warps % wm != 0) continue;
    const int64_t wn = warps / wm;
    if (m % (16 * wm) != 0 || n % (8 * wn) != 0) continue;
    double score = 0;
    switch (policy) {
    case ir::GemmPolicy::kFullRow:
      score = static_cast<double>(-wn);
      break;
    case ir::GemmPolicy::kFullCol:
      score = static_cast<double>(-wm);
      break;
    case ir::GemmPolicy::kSquare: {
      // Balanced per-warp tiles; ties go to more warps along M.
      const int64_t tile_m = m / wm, tile_n = n / wn;
      const double r = static_cast<double>(tile_m) / static_cast<double>(tile_n);
      score = -std::abs(std::log2(r)) + 1e-3 * static_cast<double>(wm);
      break;
    }
    }
    if (!best || score > best_score) {
      best = {wm, wn};
      best_score = score;
    }
  }
  if (!best) {
    return absl::InvalidArgumentError(
        absl::StrCat("gemm: a ", m, "x", n, " accumulator cannot be split over ", warps,
                     " warps in 16x8 MMA tiles (M must be a multiple of 16 per warp row and N "
                     "of 8 per warp column)"));
  }
  return *best;
}

absl::StatusOr<FragmentLayout> LoopLayout(const ir::Program& program, const Stmt& loop,
                                          const LayoutMap& known,
                                          std::optional<ir::DType> vector_hint, int64_t threads) {
  ASSIGN_OR_RETURN(auto frags, CollectFragments(program));
  std::vector<int64_t> extents;
  for (const Expr& e : loop.extents) {
    std::optional<int64_t> v = ir::ConstInt(ir::Simplify(e));
    if (!v || *v <= 0) {
      return ir::ErrorAt(program.source_name, loop.loc,
                         "T.Parallel needs constant positive extents");
    }
    extents.push_back(*v);
  }
  const std::vector<Candidate> cands = LoopCandidates(loop, frags);
  // A fully replicated fragment that the loop only reads says nothing about
  // how the loop's iterations are spread: prefer any other known fragment.
  // A reducer says nothing either (each thread updates its own copy).
  std::map<std::string, ir::ReduceKind> reducers;
  ir::CollectReducers(program.kernel.body, &reducers);
  const Candidate* from = nullptr;
  for (int pass = 0; pass < 2 && !from; ++pass) {
    for (const Candidate& c : cands) {
      if (c.dims.size() != extents.size() || reducers.count(c.buffer)) continue;
      auto it = known.find(c.buffer);
      if (it == known.end()) continue;
      if (pass == 0 && !c.write && FullyReplicated(it->second)) continue;
      from = &c;
      break;
    }
  }
  if (from) {
    const Candidate& c = *from;
    auto it = known.find(c.buffer);
    FragmentLayout out = it->second;
    out.shape = extents;
    for (size_t k = 0; k < c.dims.size(); ++k) {
      if (it->second.shape[k] != extents[c.dims[k]]) {
        return ir::ErrorAt(program.source_name, c.loc,
                           absl::StrCat("fragment '", c.buffer, "' has extent ",
                                        it->second.shape[k], " in dimension ", k,
                                        " but the T.Parallel loop runs ", extents[c.dims[k]]));
      }
    }
    for (auto* digits : {&out.thread, &out.reg}) {
      for (LayoutDigit& d : *digits) {
        if (d.dim >= 0) d.dim = c.dims[d.dim];
      }
    }
    return out;
  }
  int64_t vector = vector_hint ? VectorOf(*vector_hint) : 1;
  for (const Candidate& c : cands) {
    if (c.dims.size() == extents.size() && !vector_hint) {
      vector = FragmentVector(program, c.buffer, frags.at(c.buffer).buffer->dtype);
      break;
    }
  }
  const bool has_fragments = !cands.empty();
  FragmentLayout fallback =
      DefaultLayout(extents, threads > 0 ? threads : BlockThreads(program), vector, has_fragments);
  // No fragment names every loop variable, but a known fragment spread over
  // threads names some of them (`S_shared[h, k] = ... / row_sum[h]`): when
  // the default layout does not hold its elements where it keeps them, the
  // loop follows that fragment over its dimensions and each thread runs the
  // other dimensions whole, in registers.
  const Candidate* partial = nullptr;
  bool fits = true;
  for (const Candidate& c : cands) {
    if (c.dims.size() >= extents.size() || reducers.count(c.buffer)) continue;
    auto it = known.find(c.buffer);
    if (it == known.end() || FullyReplicated(it->second)) continue;
    if (Project(fallback, c.dims, it->second.shape) == Normalize(it->second)) continue;
    fits = false;
    bool same_extents = it->second.shape.size() == c.dims.size();
    for (size_t k = 0; same_extents && k < c.dims.size(); ++k) {
      same_extents = it->second.shape[k] == extents[c.dims[k]];
    }
    if (same_extents && (!partial || c.dims.size() > partial->dims.size())) partial = &c;
  }
  if (fits || !partial) return fallback;
  FragmentLayout out = known.at(partial->buffer);
  out.shape = extents;
  std::vector<bool> covered(extents.size(), false);
  for (auto* digits : {&out.thread, &out.reg}) {
    for (LayoutDigit& d : *digits) {
      if (d.dim >= 0) d.dim = partial->dims[d.dim];
    }
  }
  for (int d : partial->dims) covered[d] = true;
  for (size_t d = extents.size(); d-- > 0;) {
    if (!covered[d]) out.reg.push_back({static_cast<int>(d), extents[d], 1});
  }
  return Normalize(std::move(out));
}

bool FullyReplicated(const FragmentLayout& layout) {
  return std::none_of(layout.thread.begin(), layout.thread.end(),
                      [](const LayoutDigit& d) { return d.dim >= 0; });
}

FragmentLayout ReplicatedLayout(const std::vector<int64_t>& shape, int64_t threads) {
  FragmentLayout layout;
  layout.shape = shape;
  layout.thread.push_back({-1, threads, 1});
  for (size_t d = shape.size(); d-- > 0;) {
    layout.reg.push_back({static_cast<int>(d), shape[d], 1});
  }
  return Normalize(std::move(layout));
}

bool TargetUsesWgmma(std::string_view target) {
  return target == "cuda:sm_90a" || target == "cuda:sm_90";
}

int64_t WgmmaBlockElems(int64_t cols, int64_t elem_bytes) {
  if (cols <= 0 || elem_bytes <= 0) return 0;
  const int64_t row = cols * elem_bytes;
  if (row % 128 == 0) return 128 / elem_bytes;
  return row == 64 || row == 32 ? cols : 0;
}

int64_t WgmmaKStep(ir::DType t) { return 32 / std::max(1, ir::DTypeBits(t) / 8); }

bool WgmmaOperandForms(ir::DType t, bool register_a, bool transpose_a, bool transpose_b) {
  return ir::DTypeBits(t) != 8 || (!register_a && !transpose_a && transpose_b);
}

bool WgmmaInputType(ir::DType t) {
  return t == ir::DType::kFloat16 || t == ir::DType::kBFloat16 || t == ir::DType::kFloat8E4M3 ||
         t == ir::DType::kFloat8E5M2;
}

std::optional<std::pair<int64_t, int64_t>> WgmmaGroups(int64_t m, int64_t n, int64_t threads,
                                                       int64_t n_block) {
  if (threads <= 0 || threads % 128 != 0) return std::nullopt;
  const int64_t groups = threads / 128;
  for (int64_t gm = groups; gm >= 1; --gm) {
    if (groups % gm != 0) continue;
    const int64_t gn = groups / gm;
    if (m % (64 * gm) != 0 || n % (8 * gn) != 0 || n / gn > 256) continue;
    if (gn > 1 && n_block > 0 && (n / gn) % n_block != 0) continue;
    return std::make_pair(gm, gn);
  }
  return std::nullopt;
}

bool IsParallelNest(const Stmt& s) {
  return s.kind == StmtKind::kFor && s.for_kind == ir::ForKind::kParallel && s.body.size() == 1 &&
         s.body[0].kind == StmtKind::kFor && s.body[0].for_kind == ir::ForKind::kParallel;
}

Stmt FuseParallelNest(Stmt loop) {
  while (IsParallelNest(loop)) {
    Stmt inner = std::move(loop.body[0]);
    loop.loop_vars.insert(loop.loop_vars.end(), inner.loop_vars.begin(), inner.loop_vars.end());
    loop.extents.insert(loop.extents.end(), inner.extents.begin(), inner.extents.end());
    loop.body = std::move(inner.body);
  }
  return loop;
}

namespace {

void FuseParallelNests(std::vector<Stmt>* body) {
  for (Stmt& s : *body) {
    if (IsParallelNest(s)) s = FuseParallelNest(std::move(s));
    FuseParallelNests(&s.body);
    FuseParallelNests(&s.else_body);
  }
}

// A T.copy between two fragments where either side is part of its fragment
// (`T.copy(lse[k, :], lse_row)`) as the T.Parallel loop that says the same
// (`for i in T.Parallel(n): lse_row[i] = lse[k, i]`), so that the loop's
// rules (step 3 for an index that is no loop variable) choose layouts under
// which each thread reads its own registers. Copies of whole fragments stay
// (step 2's rule); so does a copy whose extents are not constants or whose
// two sides differ in shape, for lowering to refuse with its location.
// Loop variable names for the rewrite: kiln_c<N>, none already in the program.
struct FreshNames {
  std::set<std::string> used;
  int next = 0;
  std::string Take() {
    for (;;) {
      std::string name = absl::StrCat("kiln_c", next++);
      if (used.insert(name).second) return name;
    }
  }
};

std::optional<Stmt> FragmentRegionLoop(const Stmt& s, const std::map<std::string, FragInfo>& frags,
                                       FreshNames* names) {
  if (s.kind != StmtKind::kCopy || s.regions.size() != 2) return std::nullopt;
  std::vector<std::vector<size_t>> dims(2);
  bool whole = true;
  std::vector<int64_t> shapes[2];
  for (int k = 0; k < 2; ++k) {
    auto it = frags.find(s.regions[k].buffer);
    if (it == frags.end()) return std::nullopt;
    const ir::Region& r = s.regions[k];
    if (r.ranges.size() != it->second.shape.size()) return std::nullopt;
    for (size_t d = 0; d < r.ranges.size(); ++d) {
      std::optional<int64_t> e = ir::ConstInt(ir::Simplify(r.ranges[d].extent));
      std::optional<int64_t> m = ir::ConstInt(ir::Simplify(r.ranges[d].min));
      if (!e || *e <= 0) return std::nullopt;
      whole = whole && m && *m == 0 && *e == it->second.shape[d];
      if (*e != 1) {
        dims[k].push_back(d);
        shapes[k].push_back(*e);
      }
    }
  }
  if (whole || shapes[0] != shapes[1]) return std::nullopt;
  Stmt loop;
  loop.kind = StmtKind::kFor;
  loop.loc = s.loc;
  loop.for_kind = ir::ForKind::kParallel;
  std::vector<ir::Expr> vars;
  for (size_t k = 0; k < std::max<size_t>(shapes[0].size(), 1); ++k) {
    std::string name = names->Take();
    vars.push_back(ir::VarRef(name, ir::DType::kInt32, s.loc));
    loop.loop_vars.push_back(std::move(name));
    loop.extents.push_back(
        ir::IntImm(shapes[0].empty() ? 1 : shapes[0][k], ir::DType::kInt32, s.loc));
  }
  std::vector<ir::Expr> idx[2];
  for (int k = 0; k < 2; ++k) {
    const ir::Region& r = s.regions[k];
    size_t next = 0;
    for (size_t d = 0; d < r.ranges.size(); ++d) {
      ir::Expr x = r.ranges[d].min;
      if (next < dims[k].size() && dims[k][next] == d) {
        x = ir::Binary(ir::BinOp::kAdd, x, vars[next++], s.loc);
      }
      idx[k].push_back(ir::Simplify(x));
    }
  }
  const ir::Buffer& src = *frags.at(s.regions[0].buffer).buffer;
  const ir::Buffer& dst = *frags.at(s.regions[1].buffer).buffer;
  ir::Expr v = ir::Load(src.name, src.dtype, idx[0], s.loc);
  if (src.dtype != dst.dtype) v = ir::Cast(dst.dtype, v, s.loc);
  Stmt store;
  store.kind = StmtKind::kStore;
  store.loc = s.loc;
  store.name = dst.name;
  store.indices = std::move(idx[1]);
  store.has_value = true;
  store.value = std::move(v);
  loop.body.push_back(std::move(store));
  return loop;
}

void ExpandFragmentRegionCopies(std::vector<Stmt>* body,
                                const std::map<std::string, FragInfo>& frags, FreshNames* names) {
  for (Stmt& s : *body) {
    if (std::optional<Stmt> loop = FragmentRegionLoop(s, frags, names)) {
      s = std::move(*loop);
      continue;
    }
    ExpandFragmentRegionCopies(&s.body, frags, names);
    ExpandFragmentRegionCopies(&s.else_body, frags, names);
  }
}

} // namespace

absl::Status InferLayouts(ir::Program& program, const LayoutOptions& options) {
  FuseParallelNests(&program.kernel.body);
  {
    // The copies' buffers are allocations elsewhere in the body, which the
    // rewrite replaces in place (no pointer into the body moves).
    ASSIGN_OR_RETURN(auto before, CollectFragments(program));
    FreshNames names;
    ir::ForEachStmt(program.kernel.body, [&](const Stmt& s) {
      names.used.insert(s.loop_vars.begin(), s.loop_vars.end());
    });
    ir::ForEachExpr(program, [&](const ir::Expr& e) {
      if (e.kind == ir::ExprKind::kVar) names.used.insert(e.name);
    });
    ExpandFragmentRegionCopies(&program.kernel.body, before, &names);
  }
  ASSIGN_OR_RETURN(auto frags, CollectFragments(program));
  absl::Status status = Inference(program, frags, options, /*loops_first=*/false).Run();
  if (status.ok()) return status;
  // A fragment copied from memory before the loop that indexes it got its
  // own default, which that loop then contradicts: T.Parallel loops decide
  // first. Only where the usual order fails, so working programs keep their
  // layouts; the usual order's error stands when this fails too.
  if (Inference(program, std::move(frags), options, /*loops_first=*/true).Run().ok()) {
    return absl::OkStatus();
  }
  return status;
}

absl::StatusOr<LayoutMap> ReadLayouts(const ir::Program& program) {
  ASSIGN_OR_RETURN(auto frags, CollectFragments(program));
  LayoutMap out;
  for (const auto& [name, info] : frags) {
    auto it = program.attrs.find(absl::StrCat("layout.", name));
    if (it == program.attrs.end()) {
      return ir::ErrorAt(
          program.source_name, info.buffer->loc,
          absl::StrCat("fragment '", name, "' has no layout (run layout-inference first)"));
    }
    auto layout = ParseLayout(it->second, info.shape);
    if (!layout.ok()) {
      return ir::ErrorAt(program.source_name, info.buffer->loc,
                         absl::StrCat(layout.status().message()));
    }
    out.emplace(name, *std::move(layout));
  }
  return out;
}

void RegisterLayoutInferencePass() {
  RegisterPass({"layout-inference",
                "gives every fragment a (thread, register) layout and swizzles gemm's shared "
                "operands; records them as attrs layout.<buffer>",
                RunLayoutInference});
}

} // namespace kiln::passes
