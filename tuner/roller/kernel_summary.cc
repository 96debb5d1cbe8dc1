#include "tuner/roller/kernel_summary.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/dtype.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/simplify.h"
#include "util/status_macros.h"

namespace kiln::roller {
namespace {

using ir::Expr;
using ir::ExprKind;
using ir::Stmt;
using ir::StmtKind;

int ElemBytes(ir::DType t) { return std::max(1, ir::DTypeBits(t) / 8); }

// Names of the variables an expression reads.
void VarsOf(const Expr& e, std::vector<std::string>* out) {
  if (e.kind == ExprKind::kVar) out->push_back(e.name);
  for (const Expr& a : e.args) VarsOf(a, out);
}

// Arithmetic nodes of an expression (each counts as one ALU operation).
int OpsOf(const Expr& e) {
  int n = 0;
  if (e.kind == ExprKind::kBinary || e.kind == ExprKind::kUnary || e.kind == ExprKind::kCall ||
      e.kind == ExprKind::kSelect) {
    n = 1;
  }
  for (const Expr& a : e.args) n += OpsOf(a);
  return n;
}

struct BufferInfo {
  ir::Scope scope = ir::Scope::kGlobal;
  ir::DType dtype = ir::DType::kFloat32;
};

class Walker {
 public:
  explicit Walker(const ir::Program& p) : p_(p) {}

  absl::StatusOr<KernelSummary> Run() {
    if (!p_.symbols.empty()) {
      std::vector<std::string> names;
      for (const ir::Symbol& s : p_.symbols) names.push_back(ir::UserName(s));
      return absl::InvalidArgumentError(
          absl::StrCat("bind the shape symbols (", absl::StrJoin(names, ", "),
                       ") before tuning: the tuner plans for one problem size"));
    }
    for (const ir::Param& prm : p_.params) {
      buffers_[prm.buffer.name] = {prm.buffer.scope, prm.buffer.dtype};
      if (prm.is_scalar) continue;
      for (size_t d = 0; d < prm.buffer.shape.size(); ++d) {
        ASSIGN_OR_RETURN(int q,
                         Q(prm.buffer.shape[d], absl::StrCat(prm.buffer.name, ".shape[", d, "]")));
        out_.q_is_shape[q] = true;
      }
    }
    const ir::Kernel& k = p_.kernel;
    for (size_t d = 0; d < k.grid.size(); ++d) {
      ASSIGN_OR_RETURN(int q, Q(k.grid[d], absl::StrCat("grid[", d, "]")));
      out_.grid_qs.push_back(q);
    }
    // Extents that depend on a block index are taken at the middle block.
    for (size_t d = 0; d < k.block_vars.size() && d < out_.grid_qs.size(); ++d) {
      mid_[k.block_vars[d]] = (out_.q[out_.grid_qs[d]] - 1) / 2;
      block_dim_[k.block_vars[d]] = static_cast<int>(d);
    }
    int64_t threads = 1;
    for (int64_t t : k.threads) threads *= t;
    ASSIGN_OR_RETURN(out_.threads_q, Q(ir::IntImm(threads), "threads"));
    absl::StrAppend(&out_.signature, "K", k.grid.size(), "{");
    RETURN_IF_ERROR(Walk(k.body, -1, {}));
    absl::StrAppend(&out_.signature, "}");
    return std::move(out_);
  }

 private:
  absl::StatusOr<int> Q(const Expr& e, std::string what) {
    Expr x = e;
    if (!mid_.empty()) {
      ir::RewriteExpr(&x, [&](Expr n) {
        if (n.kind == ExprKind::kVar) {
          auto it = mid_.find(n.name);
          if (it != mid_.end()) return ir::IntImm(it->second, n.dtype);
        }
        return n;
      });
    }
    std::optional<int64_t> v = ir::ConstInt(ir::Simplify(x));
    if (!v) {
      return absl::InvalidArgumentError(
          absl::StrCat(p_.source_name, ":", e.loc.line, ":", e.loc.col, ": ", what,
                       " is not a compile-time integer; the tuner needs every extent known"));
    }
    out_.q.push_back(*v);
    out_.q_what.push_back(std::move(what));
    out_.q_is_shape.push_back(false);
    return static_cast<int>(out_.q.size()) - 1;
  }

  uint32_t GridDims(const std::vector<Expr>& exprs) const {
    std::vector<std::string> vars;
    for (const Expr& e : exprs) VarsOf(e, &vars);
    uint32_t mask = 0;
    for (const std::string& v : vars) {
      auto it = block_dim_.find(v);
      if (it != block_dim_.end()) mask |= 1u << it->second;
    }
    return mask;
  }

  bool IsGlobal(const std::string& buffer) const {
    auto it = buffers_.find(buffer);
    return it != buffers_.end() && it->second.scope == ir::Scope::kGlobal;
  }
  ir::DType DTypeOf(const std::string& buffer) const {
    auto it = buffers_.find(buffer);
    return it == buffers_.end() ? ir::DType::kFloat32 : it->second.dtype;
  }

  absl::StatusOr<std::vector<int>> RegionQs(const ir::Region& r, const std::string& what) {
    std::vector<int> qs;
    for (size_t d = 0; d < r.ranges.size(); ++d) {
      ASSIGN_OR_RETURN(int q,
                       Q(r.ranges[d].extent, absl::StrCat(what, " ", r.buffer, "[", d, "]")));
      qs.push_back(q);
    }
    return qs;
  }

  // Global loads inside an expression evaluated `par` times per trip.
  void LoadsOf(const Expr& e, int loop, const std::vector<int>& par) {
    if (e.kind == ExprKind::kLoad && IsGlobal(e.name)) {
      SummaryAccess a;
      a.loop = loop;
      a.buffer = e.name;
      a.elem_qs = par;
      a.elem_bytes = ElemBytes(DTypeOf(e.name));
      a.grid_dims = GridDims(e.args);
      a.inner_q = par.empty() ? -1 : par.back();
      out_.accesses.push_back(std::move(a));
      absl::StrAppend(&out_.signature, "L", e.name, ";");
    }
    for (const Expr& a : e.args) LoadsOf(a, loop, par);
  }

  absl::Status Walk(const std::vector<Stmt>& body, int loop, const std::vector<int>& par) {
    for (const Stmt& s : body) RETURN_IF_ERROR(Visit(s, loop, par));
    return absl::OkStatus();
  }

  absl::Status Visit(const Stmt& s, int loop, const std::vector<int>& par) {
    switch (s.kind) {
    case StmtKind::kAlloc: {
      buffers_[s.buffer.name] = {s.buffer.scope, s.buffer.dtype};
      absl::StrAppend(&out_.signature, "A", s.buffer.name, ":",
                      std::string(ir::ScopeName(s.buffer.scope)), ";");
      if (s.buffer.scope == ir::Scope::kGlobal || s.buffer.scope == ir::Scope::kVar) break;
      SummaryAlloc a;
      a.name = s.buffer.name;
      a.scope = s.buffer.scope;
      a.elem_bytes = ElemBytes(s.buffer.dtype);
      for (size_t d = 0; d < s.buffer.shape.size(); ++d) {
        ASSIGN_OR_RETURN(int q, Q(s.buffer.shape[d], absl::StrCat("alloc ", a.name, "[", d, "]")));
        a.dim_qs.push_back(q);
      }
      alloc_index_[a.name] = static_cast<int>(out_.allocs.size());
      out_.allocs.push_back(std::move(a));
      break;
    }
    case StmtKind::kFor: {
      if (s.for_kind == ir::ForKind::kParallel || s.for_kind == ir::ForKind::kVectorized) {
        std::vector<int> inner = par;
        for (size_t d = 0; d < s.extents.size(); ++d) {
          ASSIGN_OR_RETURN(int q, Q(s.extents[d], absl::StrCat("parallel extent ", d)));
          inner.push_back(q);
        }
        absl::StrAppend(&out_.signature, "P", s.extents.size(), "{");
        RETURN_IF_ERROR(Walk(s.body, loop, inner));
        absl::StrAppend(&out_.signature, "}");
        break;
      }
      SummaryLoop l;
      l.parent = loop;
      l.kind = s.for_kind;
      Expr extent = s.extents.empty() ? ir::IntImm(1) : s.extents[0];
      ASSIGN_OR_RETURN(l.extent_q, Q(extent, "loop extent"));
      if (s.for_kind == ir::ForKind::kPipelined) {
        ASSIGN_OR_RETURN(l.stages_q, Q(ir::IntImm(std::max(1, s.num_stages)), "num_stages"));
      }
      const int index = static_cast<int>(out_.loops.size());
      out_.loops.push_back(l);
      const bool pipelined = l.stages_q >= 0;
      if (pipelined) pipeline_.push_back(l.stages_q);
      absl::StrAppend(&out_.signature, "F", static_cast<int>(s.for_kind), "{");
      RETURN_IF_ERROR(Walk(s.body, index, par));
      absl::StrAppend(&out_.signature, "}");
      if (pipelined) pipeline_.pop_back();
      break;
    }
    case StmtKind::kCopy: {
      if (s.regions.size() != 2) break;
      const ir::Region& src = s.regions[0];
      const ir::Region& dst = s.regions[1];
      absl::StrAppend(&out_.signature, "C", src.buffer, ">", dst.buffer, ";");
      const bool src_global = IsGlobal(src.buffer);
      const bool dst_global = IsGlobal(dst.buffer);
      const ir::Region& side = src_global ? src : dst;
      ASSIGN_OR_RETURN(std::vector<int> qs, RegionQs(side, "copy"));
      for (bool write : {false, true}) {
        if (write ? !dst_global : !src_global) continue;
        const ir::Region& g = write ? dst : src;
        SummaryAccess a;
        a.loop = loop;
        a.buffer = g.buffer;
        a.elem_qs = qs;
        a.elem_qs.insert(a.elem_qs.end(), par.begin(), par.end());
        a.elem_bytes = ElemBytes(DTypeOf(g.buffer));
        a.is_write = write;
        std::vector<Expr> mins;
        for (const ir::Range& r : g.ranges) mins.push_back(r.min);
        a.grid_dims = GridDims(mins);
        a.inner_q = qs.empty() ? -1 : qs.back();
        out_.accesses.push_back(std::move(a));
      }
      if (!pipeline_.empty()) {
        auto it = alloc_index_.find(dst.buffer);
        if (it != alloc_index_.end()) {
          out_.allocs[it->second].stages_qs.insert(out_.allocs[it->second].stages_qs.end(),
                                                   pipeline_.begin(), pipeline_.end());
        }
      }
      break;
    }
    case StmtKind::kGemm: {
      if (s.regions.size() != 3) break;
      absl::StrAppend(&out_.signature, "G", s.regions[0].buffer, ",", s.regions[1].buffer, ",",
                      s.regions[2].buffer, ";");
      ASSIGN_OR_RETURN(std::vector<int> a, RegionQs(s.regions[0], "gemm A"));
      ASSIGN_OR_RETURN(std::vector<int> c, RegionQs(s.regions[2], "gemm C"));
      if (a.size() != 2 || c.size() != 2) break;
      SummaryGemm g;
      g.loop = loop;
      g.m_q = c[0];
      g.n_q = c[1];
      g.k_q = s.transpose_a ? a[0] : a[1];
      g.in_dtype = DTypeOf(s.regions[0].buffer);
      g.a_elem_bytes = ElemBytes(g.in_dtype);
      g.policy = s.policy;
      auto it = buffers_.find(s.regions[0].buffer);
      g.a_in_registers = it != buffers_.end() && it->second.scope == ir::Scope::kFragment;
      g.transpose_a = s.transpose_a;
      g.transpose_b = s.transpose_b;
      g.acc_dtype = DTypeOf(s.regions[2].buffer);
      out_.gemms.push_back(g);
      break;
    }
    case StmtKind::kFill:
    case StmtKind::kReduce: {
      if (s.regions.empty()) break;
      absl::StrAppend(&out_.signature, s.kind == StmtKind::kFill ? "f" : "r", s.regions[0].buffer,
                      ";");
      ASSIGN_OR_RETURN(std::vector<int> qs, RegionQs(s.regions[0], "tile op"));
      qs.insert(qs.end(), par.begin(), par.end());
      out_.work.push_back({loop, std::move(qs), 1});
      break;
    }
    case StmtKind::kAtomic: {
      if (s.regions.empty()) break;
      absl::StrAppend(&out_.signature, "a", s.regions[0].buffer, ";");
      if (!IsGlobal(s.regions[0].buffer)) break;
      ASSIGN_OR_RETURN(std::vector<int> qs, RegionQs(s.regions[0], "atomic"));
      qs.insert(qs.end(), par.begin(), par.end());
      std::vector<Expr> mins;
      for (const ir::Range& r : s.regions[0].ranges) mins.push_back(r.min);
      for (bool write : {false, true}) {
        SummaryAccess a;
        a.loop = loop;
        a.buffer = s.regions[0].buffer;
        a.elem_qs = qs;
        a.elem_bytes = ElemBytes(DTypeOf(a.buffer));
        a.is_write = write;
        a.grid_dims = GridDims(mins);
        a.inner_q = qs.empty() ? -1 : qs.back();
        out_.accesses.push_back(std::move(a));
      }
      break;
    }
    case StmtKind::kIf: {
      absl::StrAppend(&out_.signature, "I{");
      RETURN_IF_ERROR(Walk(s.body, loop, par));
      absl::StrAppend(&out_.signature, "}{");
      RETURN_IF_ERROR(Walk(s.else_body, loop, par));
      absl::StrAppend(&out_.signature, "}");
      break;
    }
    case StmtKind::kStore: {
      absl::StrAppend(&out_.signature, "S", s.name, ";");
      LoadsOf(s.value, loop, par);
      for (const Expr& i : s.indices) LoadsOf(i, loop, par);
      if (IsGlobal(s.name)) {
        SummaryAccess a;
        a.loop = loop;
        a.buffer = s.name;
        a.elem_qs = par;
        a.elem_bytes = ElemBytes(DTypeOf(s.name));
        a.is_write = true;
        a.grid_dims = GridDims(s.indices);
        a.inner_q = par.empty() ? -1 : par.back();
        out_.accesses.push_back(std::move(a));
      }
      out_.work.push_back({loop, par, std::max(1, OpsOf(s.value))});
      break;
    }
    case StmtKind::kUseSwizzle: {
      absl::StrAppend(&out_.signature, "W;");
      if (s.enable) {
        ASSIGN_OR_RETURN(out_.panel_q, Q(ir::IntImm(std::max(1, s.panel_size)), "panel_size"));
      }
      break;
    }
    case StmtKind::kWarpSpecialize: {
      // A T.ws region: its ops run on part of the block, modelled as the
      // block's (the traffic is the same).
      absl::StrAppend(&out_.signature, "Y{");
      RETURN_IF_ERROR(Walk(s.body, loop, par));
      absl::StrAppend(&out_.signature, "}");
      break;
    }
    case StmtKind::kTmaCopy: {
      // The same global traffic as the copy it performs.
      Stmt copy = s;
      copy.kind = StmtKind::kCopy;
      copy.regions.resize(2);
      return Visit(copy, loop, par);
    }
    case StmtKind::kBarrierArrive:
    case StmtKind::kBarrierWait:
    case StmtKind::kBarrierExpectTx:
    case StmtKind::kWaitWgmma:
    case StmtKind::kAnnotateLayout:
    case StmtKind::kAssert:
    case StmtKind::kCall:
      break;
    }
    return absl::OkStatus();
  }

  const ir::Program& p_;
  KernelSummary out_;
  std::map<std::string, BufferInfo> buffers_;
  std::map<std::string, int64_t> mid_;
  std::map<std::string, int> block_dim_;
  std::map<std::string, int> alloc_index_;
  std::vector<int> pipeline_; // stages quantities of the enclosing pipelined loops
};

} // namespace

absl::StatusOr<KernelSummary> Summarize(const ir::Program& program) {
  return Walker(program).Run();
}

} // namespace kiln::roller
