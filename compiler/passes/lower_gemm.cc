// Tile-op lowering, part 3: T.gemm as mma.sync.
//
// 1. The warp grid (GemmWarps) splits C into per-warp tiles of MI x NI
//    m16n8 atoms; C's registers are the accumulator layout's.
// 2. Per k-step of the instruction (16 for 16-bit inputs, 8 for tf32, 32
//    for int8): A and B fragments of the warp are loaded from shared memory
//    (ldmatrix, .trans where the operand is stored the other way round, for
//    16-bit types with 16-byte aligned rows; element by element otherwise)
//    or, for a register A operand, taken in place from its fragment (the
//    accumulator layout of m16n8k16 is the A-operand layout).
// 3. One mma per (mi, ni) atom accumulates into C in place.
// For sm_90a (attr kiln.gemm = "wgmma", layout-inference's choice), a gemm
// is instead one wgmma.mma_async per k-step of 16 and m64 atom of each
// warpgroup, reading A and B from shared memory through descriptors of the
// operands' wgmma layouts, or A from registers (wgmma's register form, a
// fragment A: 8 registers per step in the accumulator layout of M x K)
// (PlanWgmmaGemm).
#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/dtype.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/simplify.h"
#include "compiler/passes/layout_inference.h"
#include "compiler/passes/lowering.h"
#include "util/status_macros.h"

namespace kiln::passes::lowering {

using ir::DType;
using ir::Expr;
using ir::Stmt;
using ir::StmtKind;

namespace {

struct MmaKind {
  const char* name;
  int64_t kstep;            // K per instruction
  int64_t a_elems, b_elems; // operand elements per thread per atom
  DType acc;
};

std::optional<MmaKind> MmaFor(DType t) {
  switch (t) {
  case DType::kFloat16:
    return MmaKind{"mma_m16n8k16_f16", 16, 8, 4, DType::kFloat32};
  case DType::kBFloat16:
    return MmaKind{"mma_m16n8k16_bf16", 16, 8, 4, DType::kFloat32};
  case DType::kFloat32:
    return MmaKind{"mma_m16n8k8_tf32", 8, 4, 2, DType::kFloat32};
  case DType::kInt8:
    return MmaKind{"mma_m16n8k32_s8", 32, 16, 8, DType::kInt32};
  default:
    return std::nullopt;
  }
}

// (row, col) within the 16 x kstep A atom of operand element e of lane (g, t).
std::pair<Expr, Expr> AElem(const MmaKind& k, int64_t e, const Expr& g, const Expr& t) {
  if (k.kstep == 16) {
    const int64_t r = e / 2, h = e % 2;
    return {Add(g, I(8 * (r % 2))), Add(Mul(t, I(2)), I(8 * (r / 2) + h))};
  }
  if (k.kstep == 8) return {Add(g, I(8 * (e % 2))), Add(t, I(4 * (e / 2)))};
  const int64_t r = e / 4, q = e % 4;
  return {Add(g, I(8 * (r % 2))), Add(Mul(t, I(4)), I(16 * (r / 2) + q))};
}

// (k, n) within the kstep x 8 B atom of operand element e.
std::pair<Expr, Expr> BElem(const MmaKind& k, int64_t e, const Expr& g, const Expr& t) {
  if (k.kstep == 16) return {Add(Mul(t, I(2)), I(8 * (e / 2) + e % 2)), g};
  if (k.kstep == 8) return {Add(t, I(4 * e)), g};
  return {Add(Mul(t, I(4)), I(16 * (e / 4) + e % 4)), g};
}

} // namespace

absl::StatusOr<Lowering::GemmK> Lowering::GemmOperandK(const Stmt& s, size_t k, int64_t quantum) {
  const ir::Region& r = s.regions[k];
  const Buf* b = FindBuf(r.buffer);
  if (!b) return Error(s.loc, "gemm: unknown buffer");
  if (r.ranges.size() != b->shape.size()) {
    return Error(s.loc, absl::StrCat("gemm: operand '", b->name, "' has ", r.ranges.size(),
                                     " ranges for a ", b->shape.size(), "-d buffer"));
  }
  // The K dimension: A is M x K (K x M transposed), B is K x N (N x K).
  const bool has_k = k < 2 && b->scope == ir::Scope::kShared && b->shape.size() == 2;
  const size_t kdim = k == 0 ? (s.transpose_a ? 0 : 1) : (s.transpose_b ? 1 : 0);
  GemmK out;
  out.offset = I(0);
  for (size_t d = 0; d < r.ranges.size(); ++d) {
    const Expr lo = ir::Simplify(r.ranges[d].min);
    const std::optional<int64_t> ext = ir::ConstInt(ir::Simplify(r.ranges[d].extent));
    const bool whole = ir::ConstInt(lo) == 0 && ext == b->shape[d];
    if (has_k && d == kdim) {
      if (!ext || *ext <= 0) {
        return Error(s.loc, absl::StrCat("gemm: the K extent of operand '", b->name,
                                         "' must be a positive constant"));
      }
      if (ir::ConstInt(ir::Simplify(Mod(lo, quantum))) != 0) {
        return Error(s.loc, absl::StrCat("gemm: operand '", b->name, "' starts its K range at ",
                                         ir::PrintExpr(lo), ", which is not a multiple of ",
                                         quantum, " (the gemm's k-step)"));
      }
      ASSIGN_OR_RETURN(out.offset, LowerExpr(lo));
      out.extent = *ext;
      continue;
    }
    if (!whole) {
      return Error(s.loc,
                   absl::StrCat("gemm: operand '", b->name, "' is a part of the buffer in ",
                                "dimension ", d,
                                has_k ? "; a shared operand may be a part along K only"
                                      : "; the accumulator and register operands must be whole",
                                ": copy the part into a buffer of its own"));
    }
  }
  if (!has_k && k < 2) out.extent = b->shape.size() == 2 ? b->shape[kdim] : 0;
  return out;
}

absl::StatusOr<std::optional<MmaGemm>> Lowering::PlanMmaGemm(const Stmt& s) {
  const Buf* a = FindBuf(s.regions[0].buffer);
  const Buf* b = FindBuf(s.regions[1].buffer);
  const Buf* c = FindBuf(s.regions[2].buffer);
  if (!a || !b || !c) return Error(s.loc, "gemm: unknown buffer");
  for (const Buf* x : {a, b, c}) {
    if (x->shape.size() != 2) {
      return Error(s.loc, absl::StrCat("gemm: operand '", x->name, "' must be 2-d"));
    }
  }
  if (c->scope != ir::Scope::kFragment) {
    return Error(s.loc, "gemm: the accumulator must be a fragment");
  }
  if (b->scope != ir::Scope::kShared) {
    return Error(s.loc, "gemm: the B operand must be in shared memory");
  }
  if (a->scope != ir::Scope::kShared && a->scope != ir::Scope::kFragment) {
    return Error(s.loc, "gemm: the A operand must be in shared memory or a fragment");
  }
  if (a->dtype != b->dtype) {
    return Error(s.loc, "gemm: A and B must have the same dtype");
  }
  std::optional<MmaKind> mma = MmaFor(a->dtype);
  // An int8 product accumulated in a float, or any input without a tensor
  // instruction (float64, 32/64-bit integers): multiply-adds per element.
  if (mma && c->dtype != mma->acc && a->dtype == ir::DType::kInt8) mma.reset();
  if (!mma) return std::optional<MmaGemm>();
  if (c->dtype != mma->acc) {
    return Error(s.loc, absl::StrCat("gemm: ", std::string(ir::DTypeName(a->dtype)),
                                     " inputs accumulate in ", std::string(ir::DTypeName(mma->acc)),
                                     ", not ", std::string(ir::DTypeName(c->dtype))));
  }
  ASSIGN_OR_RETURN(GemmK a_k, GemmOperandK(s, 0, mma->kstep));
  ASSIGN_OR_RETURN(GemmK b_k, GemmOperandK(s, 1, mma->kstep));
  RETURN_IF_ERROR(GemmOperandK(s, 2, 1).status());
  const int64_t m = c->shape[0], n = c->shape[1];
  const int64_t am = s.transpose_a ? a->shape[1] : a->shape[0];
  const int64_t k = a_k.extent;
  const int64_t bk = b_k.extent;
  const int64_t bn = s.transpose_b ? b->shape[0] : b->shape[1];
  if (am != m || bn != n || bk != k) {
    return Error(s.loc, absl::StrCat("gemm: shapes do not agree: A is ", am, "x", k, ", B is ", bk,
                                     "x", bn, ", C is ", m, "x", n));
  }
  if (k % mma->kstep != 0) {
    return Error(s.loc, absl::StrCat("gemm: K = ", k, " must be a multiple of ", mma->kstep,
                                     " for ", std::string(ir::DTypeName(a->dtype)), " inputs"));
  }
  auto warps = GemmWarps(m, n, threads_ / 32, s.policy);
  if (!warps.ok()) return Error(s.loc, absl::StrCat(warps.status().message()));
  const auto [wm, wn] = *warps;
  if (!(Normalize(*c->layout) == MmaAccumulatorLayout(m, n, wm, wn, threads_))) {
    return Error(s.loc, absl::StrCat("gemm: accumulator '", c->name, "' has layout ",
                                     c->layout->ToString(), ", not the MMA layout"));
  }
  if (a->scope == ir::Scope::kFragment &&
      !(Normalize(*a->layout) == MmaOperandALayout(m, k, wm, threads_, ir::DTypeBits(a->dtype)))) {
    return Error(s.loc, absl::StrCat("gemm: register A operand '", a->name, "' has layout ",
                                     a->layout->ToString(), ", not the MMA A-operand layout"));
  }
  MmaGemm plan;
  if (a->scope == ir::Scope::kShared) plan.reads.insert(a->name);
  plan.reads.insert(b->name);

  const int64_t warp_m = m / wm, warp_n = n / wn;
  const int64_t mi_count = warp_m / 16, ni_count = warp_n / 8;
  const Expr lane = ir::Simplify(Mod(tid_, 32));
  const Expr warp = ir::Simplify(Div(tid_, 32));
  const Expr wmi = ir::Simplify(Mod(warp, wm));
  const Expr wni = ir::Simplify(Mod(Div(warp, wm), wn));
  const Expr g = ir::Simplify(Div(lane, 4));
  const Expr t = ir::Simplify(Mod(lane, 4));
  const Expr row0 = ir::Simplify(Mul(wmi, I(warp_m)));
  const Expr col0 = ir::Simplify(Mul(wni, I(warp_n)));

  // ldmatrix moves 8x8 tiles of 16-bit elements: any layout of a 16-bit
  // operand (.trans where K runs down the rows), and an 8-bit operand whose
  // K is contiguous (a 16-bit column pair is then 4 consecutive k of one
  // row, the m16n8k32 fragment). Rows must start 16-byte aligned.
  const int bits = ir::DTypeBits(a->dtype);
  const int64_t chunk = 128 / bits; // elements per 16-byte row of an 8x8 b16 tile
  auto ldsm_ok = [bits](const Buf* x, bool k_contiguous) {
    return (bits == 16 || (bits == 8 && k_contiguous)) && (x->shape[1] * bits / 8) % 16 == 0;
  };
  // Two register slots per operand: step kk+1's fragments load while step
  // kk's MMAs run (the k-steps are unrolled, so every index is constant).
  const int64_t a_slot = mi_count * mma->a_elems, b_slot = ni_count * mma->b_elems;
  std::string a_regs;
  if (a->scope == ir::Scope::kShared) {
    a_regs = Fresh("a");
    plan.allocs.push_back(LocalAlloc(a_regs, a->dtype, 2 * a_slot));
  }
  const std::string b_regs = Fresh("b");
  plan.allocs.push_back(LocalAlloc(b_regs, b->dtype, 2 * b_slot));
  // Pointers into bufs_ (a std::map: stable while the plan is in use).
  const Buf* abuf = a->scope == ir::Scope::kShared ? &bufs_.at(a_regs) : a;
  const Buf* bbuf = &bufs_.at(b_regs);
  const bool ta = s.transpose_a, tb = s.transpose_b;
  const MmaKind k_mma = *mma;

  // The pieces below run when the caller emits them (SharedPhys then reads
  // the stage the caller has set), so they capture values, not references.
  // (row, k) of A and (k, n) of B within the gemm, K shifted to the
  // operand's K range.
  const Expr a_k0 = a_k.offset, b_k0 = b_k.offset;
  auto a_elem = [this, a, ta, a_k0](const Expr& row, const Expr& col) {
    const Expr kx = ir::Simplify(Add(col, a_k0));
    return ta ? SharedPhys(*a, {kx, row}) : SharedPhys(*a, {row, kx});
  };
  auto b_elem = [this, b, tb, b_k0](const Expr& kx, const Expr& nx) {
    const Expr kk = ir::Simplify(Add(kx, b_k0));
    return tb ? SharedPhys(*b, {nx, kk}) : SharedPhys(*b, {kk, nx});
  };

  // Loads k-step `step`'s fragments into register slot `slot`.
  plan.load = [=, this](int64_t step, int64_t slot, std::vector<Stmt>* to) {
    const MmaKind* mma = &k_mma;
    const Expr k0 = I(step * mma->kstep);
    if (a->scope == ir::Scope::kShared) {
      for (int64_t mi = 0; mi < mi_count; ++mi) {
        const Expr m0 = Add(row0, I(mi * 16));
        const int64_t at = slot * a_slot + mi * mma->a_elems;
        if (ldsm_ok(a, !ta)) {
          Expr addr;
          if (!ta) {
            addr = a_elem(Add(m0, Mod(lane, 16)), Add(k0, Mul(Div(lane, 16), I(chunk))));
            to->push_back(Call("ldmatrix_x4", {Address(*abuf, I(at)), Address(*a, addr)}));
          } else {
            addr = a_elem(Add(m0, Mul(Mod(Div(lane, 8), 2), I(8))),
                          Add(Add(k0, Mul(Div(lane, 16), I(8))), Mod(lane, 8)));
            to->push_back(Call("ldmatrix_x4_trans", {Address(*abuf, I(at)), Address(*a, addr)}));
          }
        } else {
          for (int64_t e = 0; e < mma->a_elems; ++e) {
            auto [r, cc] = AElem(*mma, e, g, t);
            to->push_back(Store(abuf->name, {I(at + e)},
                                ir::Load(a->name, a->dtype, {a_elem(Add(m0, r), Add(k0, cc))})));
          }
        }
      }
    }
    for (int64_t ni = 0; ni < ni_count; ++ni) {
      const Expr n0 = Add(col0, I(ni * 8));
      const int64_t at = slot * b_slot + ni * mma->b_elems;
      if (ldsm_ok(b, tb)) {
        const bool pair = ni + 1 < ni_count;
        const Expr k_row = Add(Add(k0, Mul(Mod(Div(lane, 8), 2), I(8))), Mod(lane, 8));
        const Expr k_chunk = Add(k0, Mul(Mod(Div(lane, 8), 2), I(chunk)));
        Expr addr;
        std::string op;
        if (!tb) {
          addr = b_elem(k_row, pair ? Add(n0, Mul(Div(lane, 16), I(8))) : n0);
          op = pair ? "ldmatrix_x4_trans" : "ldmatrix_x2_trans";
        } else {
          Expr nrow =
              pair ? Add(Add(n0, Mul(Div(lane, 16), I(8))), Mod(lane, 8)) : Add(n0, Mod(lane, 8));
          addr = b_elem(k_chunk, nrow);
          op = pair ? "ldmatrix_x4" : "ldmatrix_x2";
        }
        to->push_back(Call(op, {Address(*bbuf, I(at)), Address(*b, addr)}));
        if (pair) ++ni;
      } else {
        for (int64_t e = 0; e < mma->b_elems; ++e) {
          auto [kx, nx] = BElem(*mma, e, g, t);
          to->push_back(Store(bbuf->name, {I(at + e)},
                              ir::Load(b->name, b->dtype, {b_elem(Add(k0, kx), Add(n0, nx))})));
        }
      }
    }
  };
  // MMAs of k-step `step` from register slot `slot`.
  const int64_t a_frag_steps = k / mma->kstep; // register A operand: k-steps per atom row
  plan.compute = [=, this](int64_t step, int64_t slot, std::vector<Stmt>* to) {
    const MmaKind* mma = &k_mma;
    for (int64_t mi = 0; mi < mi_count; ++mi) {
      Expr a_addr = a->scope == ir::Scope::kShared
                        ? Address(*abuf, I(slot * a_slot + mi * mma->a_elems))
                        : Address(*a, I((mi * a_frag_steps + step) * mma->a_elems));
      for (int64_t ni = 0; ni < ni_count; ++ni) {
        const Expr acc = I((mi * ni_count + ni) * 4);
        to->push_back(Call(mma->name, {Address(*c, acc), a_addr,
                                       Address(*bbuf, I(slot * b_slot + ni * mma->b_elems)),
                                       Address(*c, acc)}));
      }
    }
  };
  plan.steps = k / mma->kstep;
  return std::optional<MmaGemm>(std::move(plan));
}

absl::StatusOr<std::optional<WgmmaGemm>> Lowering::PlanWgmmaGemm(const Stmt& s) {
  if (!wgmma_) return std::optional<WgmmaGemm>();
  const Buf* a = FindBuf(s.regions[0].buffer);
  const Buf* b = FindBuf(s.regions[1].buffer);
  const Buf* c = FindBuf(s.regions[2].buffer);
  if (!a || !b || !c) return Error(s.loc, "gemm: unknown buffer");
  const bool register_a = a->scope == ir::Scope::kFragment;
  if ((a->wgmma_block == 0 && !register_a) || b->wgmma_block == 0 ||
      c->scope != ir::Scope::kFragment || c->shape.size() != 2 || a->dtype != b->dtype) {
    return Error(s.loc, "gemm: the program lowers for wgmma, but this gemm's operands do not "
                        "have wgmma layouts (run layout-inference for the same target)");
  }
  const int64_t eb = ir::DTypeBits(a->dtype) / 8;
  const int64_t kstep = WgmmaKStep(a->dtype);
  const bool ta = s.transpose_a, tb = s.transpose_b;
  if (!WgmmaOperandForms(a->dtype, register_a, ta, tb)) {
    return Error(s.loc, "gemm: an fp8 wgmma needs both operands K-major in shared memory "
                        "(A as M x K, B as N x K with transpose_B=True)");
  }
  ASSIGN_OR_RETURN(GemmK a_k, GemmOperandK(s, 0, kstep));
  ASSIGN_OR_RETURN(GemmK b_k, GemmOperandK(s, 1, kstep));
  RETURN_IF_ERROR(GemmOperandK(s, 2, 1).status());
  const int64_t m = c->shape[0], n = c->shape[1];
  const int64_t k = a_k.extent;
  if (b_k.extent != k) {
    return Error(s.loc, absl::StrCat("gemm: shapes do not agree: A has K = ", k,
                                     ", B has K = ", b_k.extent));
  }
  std::optional<std::pair<int64_t, int64_t>> groups =
      WgmmaGroups(m, n, threads_, tb ? 0 : b->wgmma_block);
  if (!groups || k % kstep != 0) {
    return Error(s.loc, absl::StrCat("gemm: wgmma cannot tile a ", m, "x", n, "x", k, " gemm over ",
                                     threads_, " threads"));
  }
  const auto [gm, gn] = *groups;
  if (!(Normalize(*c->layout) == WgmmaAccumulatorLayout(m, n, gm, gn))) {
    return Error(s.loc, absl::StrCat("gemm: accumulator '", c->name, "' has layout ",
                                     c->layout->ToString(), ", not the wgmma layout"));
  }
  // A register A operand (whole: GemmOperandK) has the accumulator layout
  // of (M x K) over the same warpgroups (layout-inference).
  if (register_a && (gn != 1 || ta || !a->layout || a->shape.size() != 2 ||
                     !(Normalize(*a->layout) == WgmmaAccumulatorLayout(m, k, gm, 1)))) {
    return Error(s.loc, absl::StrCat("gemm: register A operand '", a->name, "' has layout ",
                                     a->layout ? a->layout->ToString() : "(none)",
                                     ", not the wgmma A layout"));
  }
  const int64_t group_m = m / gm, group_n = n / gn, atoms = group_m / 64;
  const Expr group = ir::Simplify(Div(tid_, 128));
  const Expr row0 = ir::Simplify(Mul(Mod(group, gm), I(group_m)));
  const Expr col0 = ir::Simplify(Mul(Div(group, gm), I(group_n)));
  // Descriptor constants: swizzle width S = W elements' bytes; SBO = 8 rows
  // (K-major) or 8 k (MN-major) of S bytes; LBO = the column-block stride
  // (MN-major; unused by swizzled K-major layouts, which take 16).
  auto mode = [](int64_t bytes) { return bytes == 128 ? 1 : bytes == 64 ? 2 : 3; };
  const int64_t sa = eb * a->wgmma_block, sb = eb * b->wgmma_block;
  // The shared form's constants: trans A, trans B, A's offsets and swizzle,
  // B's; the register form has no A constants.
  std::vector<int64_t> consts;
  if (!register_a) consts.push_back(ta ? 1 : 0);
  consts.push_back(tb ? 0 : 1);
  if (!register_a) {
    consts.insert(consts.end(), {ta ? a->shape[0] * sa : 16, 8 * sa, mode(sa)});
  }
  consts.insert(consts.end(), {tb ? 16 : b->shape[0] * sb, 8 * sb, mode(sb)});
  const char* type = a->dtype == DType::kBFloat16     ? "bf16"
                     : a->dtype == DType::kFloat8E4M3 ? "e4m3"
                     : a->dtype == DType::kFloat8E5M2 ? "e5m2"
                                                      : "f16";
  const std::string name =
      absl::StrCat("wgmma_m64n", group_n, "k", kstep, "_", register_a ? "rs_" : "", type);
  WgmmaGemm plan;
  plan.reads = {b->name};
  if (!register_a) plan.reads.insert(a->name);
  plan.steps = k / kstep;
  // A K range that starts past 0 (a multiple of the k-step) is more steps
  // of the same walk: each step's descriptor starts a k-step further along K.
  const Expr a_k0 = a_k.offset, b_k0 = b_k.offset;
  plan.issue = [=, this](int64_t step, std::vector<Stmt>* to) {
    const Expr kb = ir::Simplify(Add(b_k0, I(kstep * step)));
    const Expr ka = ir::Simplify(Add(a_k0, I(kstep * step)));
    const Expr b_at = tb ? SharedPhys(*b, {col0, kb}) : SharedPhys(*b, {kb, col0});
    for (int64_t mi = 0; mi < atoms; ++mi) {
      const Expr m0 = ir::Simplify(Add(row0, I(64 * mi)));
      // A register A's registers: K / 2 per 64-row atom, 8 per k-step.
      const Expr a_at = register_a ? I(mi * k / 2 + step * 8)
                        : ta       ? SharedPhys(*a, {ka, m0})
                                   : SharedPhys(*a, {m0, ka});
      std::vector<Expr> args = {Address(*c, I(mi * group_n / 2)), Address(*a, a_at),
                                Address(*b, b_at)};
      for (int64_t v : consts) args.push_back(I(v));
      to->push_back(Call(name, std::move(args)));
    }
  };
  return std::optional<WgmmaGemm>(std::move(plan));
}

absl::Status Lowering::LowerGemm(const Stmt& s, std::vector<Stmt>* out) {
  if (s.clear_accum) {
    // C = A @ B: a zero fill of the accumulator, then C += A @ B.
    Stmt fill;
    fill.kind = StmtKind::kFill;
    fill.loc = s.loc;
    fill.regions = {s.regions[2]};
    fill.has_value = true;
    fill.value = ZeroOf(FindBuf(s.regions[2].buffer)->dtype);
    RETURN_IF_ERROR(LowerFill(fill, out));
    Stmt accumulate = s;
    accumulate.clear_accum = false;
    return LowerGemm(accumulate, out);
  }
  ASSIGN_OR_RETURN(std::optional<WgmmaGemm> w, PlanWgmmaGemm(s));
  if (w) {
    // Synchronous (wg_wait 0): the group completes before anything else
    // touches the accumulators or overwrites the operands. Otherwise
    // (TileLang's T.wgmma_gemm, T.gemm(wg_wait=n)) the program waits for it
    // itself: its accumulator joins those in flight. The operands' writers
    // fence toward the async proxy before the barrier Touch may place (in a
    // warp-specialized loop, once before it for operands the loop does not
    // write: no_proxy_fence_; in a program with its own synchronization,
    // only after this thread's own writes: own_sync_).
    const bool fenced = (own_sync_ && !proxy_dirty_) ||
                        std::all_of(w->reads.begin(), w->reads.end(), [&](const std::string& r) {
                          return no_proxy_fence_.count(r) > 0;
                        });
    if (!fenced) {
      out->push_back(Call("fence_proxy_async", {}));
      proxy_dirty_ = false;
    }
    Touch(w->reads, {}, out);
    // wgmma_fence_tma is the warpgroup's fence alone (wgmma_fence adds the
    // proxy fence).
    out->push_back(Call(fenced ? "wgmma_fence_tma" : "wgmma_fence", {}));
    for (int64_t step = 0; step < w->steps; ++step) w->issue(step, out);
    out->push_back(Call("wgmma_commit", {}));
    if (s.wg_wait == 0 || sync_gemms_) {
      WaitWgmma(0, out);
      return absl::OkStatus();
    }
    inflight_.insert(s.regions[2].buffer);
    if (s.wg_wait != ir::kGemmNoWait) WaitWgmma(s.wg_wait, out);
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(std::optional<MmaGemm> g, PlanMmaGemm(s));
  if (!g) return LowerGemmScalar(s, out);
  Touch(g->reads, {}, out);
  for (Stmt& alloc : g->allocs) out->push_back(std::move(alloc));
  g->load(0, 0, out);
  for (int64_t step = 0; step < g->steps; ++step) {
    if (step + 1 < g->steps) g->load(step + 1, (step + 1) % 2, out);
    g->compute(step, step % 2, out);
  }
  return absl::OkStatus();
}

absl::Status Lowering::LowerWaitWgmma(const Stmt& s, std::vector<Stmt>* out) {
  if (loop_) return Error(s.loc, "T.wait_wgmma cannot appear inside a T.Parallel loop");
  std::optional<int64_t> left = ir::ConstInt(s.value);
  if (!left) return Error(s.loc, "internal: wait_wgmma without a constant count");
  // Where no gemm was left in flight (every other target, Kiln's own
  // pipelines, a program that waits twice) there is nothing to wait for.
  if (!inflight_.empty()) WaitWgmma(*left, out);
  return absl::OkStatus();
}

// wgmma_wait<left>, then an empty asm that reads and writes every register
// of each accumulator that may have been in flight (all of them: fencing
// one still in flight is harmless, as CUTLASS does after its waits). asm
// volatile statements keep their order, so no use of those registers moves
// above the wait. After a full wait nothing is in flight.
void Lowering::WaitWgmma(int64_t left, std::vector<Stmt>* out) {
  out->push_back(Call("wgmma_wait", {I(left)}));
  for (const std::string& name : inflight_) {
    const Buf* c = FindBuf(name);
    out->push_back(Call("wgmma_fence_regs", {Address(*c, I(0)), I(c->layout->NumRegs())}));
  }
  if (left == 0) inflight_.clear();
}

std::set<std::string> Lowering::AsyncAccumulators(const std::vector<Stmt>& body) const {
  std::set<std::string> accs;
  if (!wgmma_ || sync_gemms_) return accs;
  ir::ForEachStmt(body, [&](const Stmt& s) {
    if (s.kind == StmtKind::kGemm && s.wg_wait != 0) accs.insert(s.regions[2].buffer);
  });
  return accs;
}

// 4. Without a tensor instruction for the dtypes: every thread computes its
//    own accumulator registers (the same layout as the MMA path, so the rest
//    of the program is unchanged) with one multiply-add per k, reading A and
//    B from shared memory.
absl::Status Lowering::LowerGemmScalar(const Stmt& s, std::vector<Stmt>* out) {
  const Buf* a = FindBuf(s.regions[0].buffer);
  const Buf* b = FindBuf(s.regions[1].buffer);
  const Buf* c = FindBuf(s.regions[2].buffer);
  if (a->scope != ir::Scope::kShared) {
    return Error(s.loc, absl::StrCat("gemm: ", std::string(ir::DTypeName(a->dtype)),
                                     " inputs have no tensor instruction; the scalar path needs A "
                                     "in shared memory"));
  }
  ASSIGN_OR_RETURN(GemmK a_k, GemmOperandK(s, 0, 1));
  ASSIGN_OR_RETURN(GemmK b_k, GemmOperandK(s, 1, 1));
  RETURN_IF_ERROR(GemmOperandK(s, 2, 1).status());
  const int64_t m = c->shape[0], n = c->shape[1];
  const int64_t k = a_k.extent;
  if ((s.transpose_a ? a->shape[1] : a->shape[0]) != m ||
      (s.transpose_b ? b->shape[0] : b->shape[1]) != n || b_k.extent != k) {
    return Error(s.loc, "gemm: operand shapes do not agree");
  }
  Touch({a->name, b->name}, {}, out);
  const FragmentLayout& layout = *c->layout;
  const std::string r = Fresh("r");
  const std::string kk = Fresh("k");
  var_max_[r] = layout.NumRegs() - 1;
  var_max_[kk] = k - 1;
  const std::vector<Expr> idx = ElementIndex(layout, tid_, Var(r));
  const Expr ka = ir::Simplify(Add(Var(kk), a_k.offset));
  const Expr kb = ir::Simplify(Add(Var(kk), b_k.offset));
  const Expr av =
      ir::Load(a->name, a->dtype,
               {s.transpose_a ? SharedPhys(*a, {ka, idx[0]}) : SharedPhys(*a, {idx[0], ka})});
  const Expr bv =
      ir::Load(b->name, b->dtype,
               {s.transpose_b ? SharedPhys(*b, {idx[1], kb}) : SharedPhys(*b, {kb, idx[1]})});
  auto widen = [&](Expr x) { return x.dtype == c->dtype ? x : ir::Cast(c->dtype, std::move(x)); };
  const Expr acc = ir::Load(c->name, c->dtype, {Var(r)});
  std::vector<Stmt> body = {
      For(kk, I(k), ir::ForKind::kSerial,
          {Store(c->name, {Var(r)},
                 ir::Binary(ir::BinOp::kAdd, acc,
                            ir::Binary(ir::BinOp::kMul, widen(av), widen(bv))))})};
  std::vector<Stmt> guarded;
  Guarded(layout.HasPadding() ? InBounds(layout, idx) : ir::BoolImm(true), std::move(body),
          &guarded);
  Stmt loop = For(r, I(layout.NumRegs()), ir::ForKind::kUnroll, std::move(guarded));
  loop.loc = s.loc;
  out->push_back(std::move(loop));
  return absl::OkStatus();
}

} // namespace kiln::passes::lowering
