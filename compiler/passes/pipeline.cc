// Tile-op lowering, part 5: T.Pipelined(n, num_stages=S) with S >= 2.
//
// 1. Producers are the loop body's top-level copies from global to shared
//    memory whose destination nothing else in the body writes. Each
//    destination gets S buffers (stage = iteration % S).
// 2. Prologue: iterations 0 .. S-2 issue their producers (as cp.async where
//    the copy vectorizes), one commit group each, empty groups included, so
//    that group counting stays uniform.
// 3. Iteration ko: wait until at most S-2 groups are pending (iteration
//    ko's group is then complete), barrier (its data is visible to all
//    threads, and every thread is done with iteration ko-1, whose stage the
//    next issue overwrites), issue iteration ko+S-1's producers, commit,
//    run the rest of the body on stage ko % S.
// 4. After the loop, wait for all groups.
// Loops with S < 2 or without producers run as serial loops.
//
// A body that is only producers and one mma.sync gemm (a GEMM main loop)
// is rotated instead, as in CUTLASS's multistage main loop: the wait and
// barrier move from the top of iteration ko to before its last k-step, and
// the first k-step's fragments of iteration ko+1 load right after them, so
// the tensor cores still hold the last k-steps' MMAs while warps meet at
// the barrier and no iteration starts by waiting on shared-memory loads.
// Iteration ko issues iteration ko+S-1's producers after its first k-step;
// the stage they overwrite was last read before the previous iteration's
// barrier.
// With wgmma (sm_90a), a body of producers and one gemm keeps one wgmma
// group in flight across iterations (LowerWgmmaLoop): the wgmma of tile ko
// is issued after the barrier, then the copies of tile ko + S - 2, then a
// wait that leaves that group pending (none in the last iteration).
// `order` and `stage` annotations are accepted; the schedule above is the
// one they describe for copy-then-compute bodies.
#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/simplify.h"
#include "compiler/passes/lowering.h"
#include "util/status_macros.h"

namespace kiln::passes::lowering {

using ir::Expr;
using ir::Stmt;
using ir::StmtKind;

namespace {

bool Writes(const Stmt& s, const std::string& buffer) {
  if (s.kind == StmtKind::kStore && s.name == buffer) return true;
  if ((s.kind == StmtKind::kCopy || s.kind == StmtKind::kFill) && !s.regions.empty() &&
      s.regions.back().buffer == buffer) {
    return true;
  }
  if (s.kind == StmtKind::kAtomic && !s.regions.empty() && s.regions[0].buffer == buffer) {
    return true;
  }
  for (const Stmt& b : s.body) {
    if (Writes(b, buffer)) return true;
  }
  for (const Stmt& b : s.else_body) {
    if (Writes(b, buffer)) return true;
  }
  return false;
}

bool HasLoad(const Expr& e) {
  if (e.kind == ir::ExprKind::kLoad) return true;
  for (const Expr& a : e.args) {
    if (HasLoad(a)) return true;
  }
  return false;
}

// Indices (into loop.body) of the producer copies, given which buffers are
// shared and which global.
std::vector<size_t> Producers(const Stmt& loop, const std::set<std::string>& shared,
                              const std::set<std::string>& global) {
  std::vector<size_t> out;
  for (size_t i = 0; i < loop.body.size(); ++i) {
    const Stmt& s = loop.body[i];
    if (s.kind != StmtKind::kCopy || s.regions.size() != 2) continue;
    if (!global.count(s.regions[0].buffer) || !shared.count(s.regions[1].buffer)) continue;
    bool pure = true;
    for (const ir::Region& r : s.regions) {
      for (const ir::Range& rg : r.ranges) pure = pure && !HasLoad(rg.min) && !HasLoad(rg.extent);
    }
    for (size_t j = 0; j < loop.body.size() && pure; ++j) {
      if (j != i && Writes(loop.body[j], s.regions[1].buffer)) pure = false;
    }
    if (pure) out.push_back(i);
  }
  return out;
}

void Scopes(const std::vector<Stmt>& body, std::set<std::string>* shared) {
  for (const Stmt& s : body) {
    if (s.kind == StmtKind::kAlloc &&
        (s.buffer.scope == ir::Scope::kShared || s.buffer.scope == ir::Scope::kSharedDyn)) {
      shared->insert(s.buffer.name);
    }
    Scopes(s.body, shared);
    Scopes(s.else_body, shared);
  }
}

void Collect(const std::vector<Stmt>& body, const std::set<std::string>& shared,
             const std::set<std::string>& global, std::map<std::string, int>* stages) {
  for (const Stmt& s : body) {
    if (s.kind == StmtKind::kFor && s.for_kind == ir::ForKind::kPipelined && s.num_stages >= 2) {
      for (size_t i : Producers(s, shared, global)) {
        int& v = (*stages)[s.body[i].regions[1].buffer];
        v = std::max(v, static_cast<int>(s.num_stages));
      }
    }
    Collect(s.body, shared, global, stages);
    Collect(s.else_body, shared, global, stages);
  }
}

} // namespace

void CollectPipelineStages(const std::vector<Stmt>& body, std::map<std::string, int>* stages) {
  // Global buffers are the params; everything allocated is not.
  std::set<std::string> shared, allocated;
  Scopes(body, &shared);
  std::set<std::string> global;
  std::function<void(const std::vector<Stmt>&)> walk = [&](const std::vector<Stmt>& b) {
    for (const Stmt& s : b) {
      if (s.kind == StmtKind::kAlloc) allocated.insert(s.buffer.name);
      for (const ir::Region& r : s.regions) {
        if (!shared.count(r.buffer)) global.insert(r.buffer);
      }
      walk(s.body);
      walk(s.else_body);
    }
  };
  walk(body);
  for (const std::string& a : allocated) global.erase(a);
  Collect(body, shared, global, stages);
}

const Stmt* SoleGemm(const Stmt& loop, const std::vector<size_t>& producers) {
  const Stmt* gemm = nullptr;
  for (size_t i = 0; i < loop.body.size(); ++i) {
    if (std::find(producers.begin(), producers.end(), i) != producers.end()) continue;
    // A gemm that clears its accumulator first is a fill and a gemm
    // (LowerGemm), not the accumulating loop these schedules build.
    if (loop.body[i].kind != StmtKind::kGemm || loop.body[i].clear_accum || gemm) return nullptr;
    gemm = &loop.body[i];
  }
  return gemm;
}

Stmt WgmmaIterationWait(const std::string& ko, const Expr& n, int64_t inflight) {
  // The last iteration drains every group before the loop exits. A wait
  // after the loop alone is not enough: ptxas (CUDA 13.0) was seen to
  // schedule the epilogue's reads of the accumulators above that wait
  // (SASS: F2FP before WARPGROUP.DEPBAR.LE gsb0, 0x0), so they raced the
  // last wgmma; it does not move them into the loop, above this one.
  Stmt wait;
  wait.kind = StmtKind::kIf;
  wait.cond = ir::Simplify(Lt(Add(Var(ko), I(1)), n));
  wait.body.push_back(Call("wgmma_wait", {I(inflight)}));
  wait.else_body.push_back(Call("wgmma_wait", {I(0)}));
  return wait;
}

absl::StatusOr<bool> Lowering::LowerRotatedGemmLoop(const Stmt& s,
                                                    const std::vector<size_t>& producers,
                                                    const std::set<std::string>& dsts,
                                                    const Expr& n, const IssueFn& issue,
                                                    std::vector<Stmt>* out) {
  // Only a body of producers and one mma.sync gemm, with an even number of
  // k-steps (each tile then starts in register slot 0).
  const Stmt* gemm = SoleGemm(s, producers);
  if (!gemm) return false;
  ASSIGN_OR_RETURN(std::optional<MmaGemm> g, PlanMmaGemm(*gemm));
  if (!g || g->steps < 2 || g->steps % 2 != 0) return false;

  const int stages = s.num_stages;
  const std::string ko = s.loop_vars[0];
  const std::optional<int64_t> n_const = MaxOf(n);
  auto set_stage = [&](const Expr& iter) {
    for (const std::string& d : dsts) stage_[d] = ir::Simplify(Mod(iter, stages));
  };
  auto clear_stage = [&] {
    for (const std::string& d : dsts) stage_.erase(d);
  };
  for (Stmt& alloc : g->allocs) out->push_back(std::move(alloc));
  out->push_back(Call("cp_async_wait", {I(stages - 2)}));
  Barrier(out);
  set_stage(I(0));
  g->load(0, 0, out);

  Stmt loop = For(ko, n, ir::ForKind::kSerial, {});
  loop.loc = s.loc;
  std::vector<Stmt> next, producer;
  if (n_const) var_max_[ko] = *n_const - stages;
  const Expr ahead = ir::Simplify(Add(Var(ko), I(stages - 1)));
  RETURN_IF_ERROR(issue(ahead, &next));
  Guarded(Lt(ahead, n), std::move(next), &producer);
  producer.push_back(Call("cp_async_commit", {}));
  if (n_const) var_max_[ko] = *n_const - 1;
  for (int64_t kk = 0; kk < g->steps; ++kk) {
    set_stage(Var(ko));
    if (kk + 1 < g->steps) g->load(kk + 1, (kk + 1) % 2, &loop.body);
    g->compute(kk, kk % 2, &loop.body);
    if (kk == 0) {
      for (Stmt& p : producer) loop.body.push_back(std::move(p));
    }
    if (kk == g->steps - 2) {
      loop.body.push_back(Call("cp_async_wait", {I(stages - 2)}));
      Barrier(&loop.body);
      set_stage(Add(Var(ko), I(1)));
      g->load(0, 0, &loop.body);
    }
  }
  clear_stage();
  out->push_back(std::move(loop));
  out->push_back(Call("cp_async_wait", {I(0)}));
  // After the loop the operands were read (the last k-step) and the stages
  // written (by copies that the final wait completed) since the last barrier.
  read_.insert(g->reads.begin(), g->reads.end());
  dirty_.insert(dsts.begin(), dsts.end());
  return true;
}

absl::StatusOr<bool> Lowering::LowerWgmmaLoop(const Stmt& s, const std::vector<size_t>& producers,
                                              const std::set<std::string>& dsts, const Expr& n,
                                              const IssueFn& issue, std::vector<Stmt>* out) {
  const Stmt* gemm = SoleGemm(s, producers);
  if (!gemm) return false;
  ASSIGN_OR_RETURN(std::optional<WgmmaGemm> g, PlanWgmmaGemm(*gemm));
  if (!g) return false;

  // F wgmma groups stay in flight across iterations (1 from 3 stages on),
  // so the copies run L = S - 1 - F iterations ahead: iteration ko's copies
  // overwrite stage (ko + L) % S = (ko - 1 - F) % S, whose group every
  // thread waited for (wgmma_wait(F) in iteration ko - 1) before this
  // iteration's barrier.
  const int stages = s.num_stages;
  const int inflight = stages >= 3 ? 1 : 0;
  const int ahead_n = stages - 1 - inflight;
  const std::string ko = s.loop_vars[0];
  const std::optional<int64_t> n_const = MaxOf(n);

  const std::string sv = Fresh("s");
  if (n_const) var_max_[sv] = std::min<int64_t>(ahead_n - 1, *n_const - 1);
  std::vector<Stmt> pro, pro_issue;
  RETURN_IF_ERROR(issue(Var(sv), &pro_issue));
  Guarded(Lt(Var(sv), n), std::move(pro_issue), &pro);
  pro.push_back(Call("cp_async_commit", {}));
  out->push_back(For(sv, I(ahead_n), ir::ForKind::kUnroll, std::move(pro)));

  Stmt loop = For(ko, n, ir::ForKind::kSerial, {});
  loop.loc = s.loc;
  loop.body.push_back(Call("cp_async_wait", {I(ahead_n - 1)}));
  // Every writer fences its operand writes toward wgmma's async proxy before
  // the barrier (intrinsics.h); wgmma_fence after it is the warpgroup's.
  loop.body.push_back(Call("fence_proxy_async", {}));
  Barrier(&loop.body);
  for (const std::string& d : dsts) stage_[d] = ir::Simplify(Mod(Var(ko), stages));
  loop.body.push_back(Call("wgmma_fence", {}));
  for (int64_t step = 0; step < g->steps; ++step) g->issue(step, &loop.body);
  loop.body.push_back(Call("wgmma_commit", {}));
  for (const std::string& d : dsts) stage_.erase(d);
  std::vector<Stmt> next, producer;
  if (n_const) var_max_[ko] = *n_const - 1 - ahead_n;
  const Expr ahead = ir::Simplify(Add(Var(ko), I(ahead_n)));
  RETURN_IF_ERROR(issue(ahead, &next));
  Guarded(Lt(ahead, n), std::move(next), &producer);
  producer.push_back(Call("cp_async_commit", {}));
  if (n_const) var_max_[ko] = *n_const - 1;
  for (Stmt& p : producer) loop.body.push_back(std::move(p));
  if (inflight == 0) {
    loop.body.push_back(Call("wgmma_wait", {I(0)}));
  } else {
    loop.body.push_back(WgmmaIterationWait(ko, n, inflight));
  }
  out->push_back(std::move(loop));
  out->push_back(Call("wgmma_wait", {I(0)}));
  out->push_back(Call("cp_async_wait", {I(0)}));
  read_.insert(g->reads.begin(), g->reads.end());
  dirty_.insert(dsts.begin(), dsts.end());
  return true;
}

absl::Status Lowering::LowerPipelined(const Stmt& s, std::vector<Stmt>* out) {
  std::set<std::string> shared, global;
  for (const auto& [name, b] : bufs_) {
    if (b.scope == ir::Scope::kShared) shared.insert(name);
    if (b.scope == ir::Scope::kGlobal) global.insert(name);
  }
  const std::vector<size_t> producers = Producers(s, shared, global);
  const int stages = s.num_stages;
  bool staged = stages >= 2 && !producers.empty();
  for (size_t i : producers) {
    staged = staged && bufs_.at(s.body[i].regions[1].buffer).stages == stages;
  }
  if (!staged) return LowerSerialFor(s, out);

  const std::string ko = s.loop_vars[0];
  ASSIGN_OR_RETURN(Expr n, LowerExpr(s.extents[0]));
  std::set<std::string> dsts;
  for (size_t i : producers) dsts.insert(s.body[i].regions[1].buffer);
  Touch({}, dsts, out);

  // Ranges under the guards `iteration < n` around each issue.
  const std::optional<int64_t> n_const = MaxOf(n);
  const IssueFn issue = [&](const Expr& iter, std::vector<Stmt>* to) -> absl::Status {
    std::map<std::string, Expr> saved_env = env_;
    env_[ko] = iter;
    for (const std::string& d : dsts) stage_[d] = ir::Simplify(Mod(iter, stages));
    producer_ = true;
    absl::Status st;
    for (size_t i : producers) {
      st = LowerCopy(s.body[i], to);
      if (!st.ok()) break;
    }
    producer_ = false;
    env_ = std::move(saved_env);
    for (const std::string& d : dsts) stage_.erase(d);
    return st;
  };

  if (wgmma_) {
    const std::set<std::string> dirty0 = dirty_, read0 = read_;
    ASSIGN_OR_RETURN(bool ws, LowerWarpSpecializedLoop(s, producers, dsts, n, out));
    if (ws) {
      dirty_.insert(dirty0.begin(), dirty0.end());
      read_.insert(read0.begin(), read0.end());
      return absl::OkStatus();
    }
    ASSIGN_OR_RETURN(bool done, LowerWgmmaLoop(s, producers, dsts, n, issue, out));
    if (done) {
      dirty_.insert(dirty0.begin(), dirty0.end());
      read_.insert(read0.begin(), read0.end());
      return absl::OkStatus();
    }
  }

  // Prologue.
  const std::string sv = Fresh("s");
  if (n_const) var_max_[sv] = std::min<int64_t>(stages - 2, *n_const - 1);
  std::vector<Stmt> pro, pro_issue;
  RETURN_IF_ERROR(issue(Var(sv), &pro_issue));
  Guarded(Lt(Var(sv), n), std::move(pro_issue), &pro);
  pro.push_back(Call("cp_async_commit", {}));
  out->push_back(For(sv, I(stages - 1), ir::ForKind::kUnroll, std::move(pro)));

  const std::set<std::string> entry_dirty = dirty_, entry_read = read_;
  ASSIGN_OR_RETURN(bool rotated, LowerRotatedGemmLoop(s, producers, dsts, n, issue, out));
  if (rotated) {
    dirty_.insert(entry_dirty.begin(), entry_dirty.end());
    read_.insert(entry_read.begin(), entry_read.end());
    return absl::OkStatus();
  }

  // Steady state.
  Stmt loop = For(ko, n, ir::ForKind::kSerial, {});
  loop.loc = s.loc;
  loop.body.push_back(Call("cp_async_wait", {I(stages - 2)}));
  Barrier(&loop.body);
  std::vector<Stmt> next;
  if (n_const) var_max_[ko] = *n_const - stages;
  const Expr ahead = ir::Simplify(Add(Var(ko), I(stages - 1)));
  RETURN_IF_ERROR(issue(ahead, &next));
  std::vector<Stmt> producer;
  Guarded(Lt(ahead, n), std::move(next), &producer);
  producer.push_back(Call("cp_async_commit", {}));
  if (n_const) var_max_[ko] = *n_const - 1;
  for (const std::string& d : dsts) stage_[d] = ir::Simplify(Mod(Var(ko), stages));
  std::vector<Stmt> consumer;
  for (size_t i = 0; i < s.body.size(); ++i) {
    if (std::find(producers.begin(), producers.end(), i) != producers.end()) continue;
    RETURN_IF_ERROR(LowerStmt(s.body[i], &consumer));
  }
  // The issue (address arithmetic and cp.async) goes right after the first
  // k-step's MMAs, so it runs while the tensor cores work through them
  // instead of delaying them after the barrier. Any point after the barrier
  // is safe: the stage it overwrites was last read in the previous
  // iteration.
  auto is_mma = [&](size_t i) {
    return consumer[i].kind == StmtKind::kCall &&
           (absl::StartsWith(consumer[i].name, "mma_") ||
            absl::StartsWith(consumer[i].name, "wgmma_m") || consumer[i].name == "wgmma_commit");
  };
  size_t at = 0;
  for (size_t i = 0; i < consumer.size(); ++i) {
    if (!is_mma(i)) continue;
    at = i;
    while (at < consumer.size() && is_mma(at)) ++at;
    break;
  }
  for (size_t i = 0; i < consumer.size(); ++i) {
    if (i == at) {
      for (Stmt& p : producer) loop.body.push_back(std::move(p));
    }
    loop.body.push_back(std::move(consumer[i]));
  }
  if (at >= consumer.size()) {
    for (Stmt& p : producer) loop.body.push_back(std::move(p));
  }
  for (const std::string& d : dsts) stage_.erase(d);
  out->push_back(std::move(loop));
  out->push_back(Call("cp_async_wait", {I(0)}));
  dirty_.insert(entry_dirty.begin(), entry_dirty.end());
  read_.insert(entry_read.begin(), entry_read.end());
  return absl::OkStatus();
}

} // namespace kiln::passes::lowering
