#include "compiler/passes/layout.h"

#include <algorithm>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/simplify.h"

namespace kiln::passes {
namespace {

using ir::BinOp;
using ir::Expr;

int64_t Product(const std::vector<LayoutDigit>& digits) {
  int64_t p = 1;
  for (const LayoutDigit& d : digits) p *= d.size;
  return p;
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

Expr I(int64_t v) { return ir::IntImm(v); }

// (x / place) % size, leaving out what is trivially redundant.
Expr Digit(const Expr& x, int64_t place, int64_t size, int64_t total) {
  Expr v = place == 1 ? x : ir::Binary(BinOp::kFloorDiv, x, I(place));
  if (place * size < total) v = ir::Binary(BinOp::kFloorMod, v, I(size));
  return ir::Simplify(v);
}

std::string DigitsToString(const std::vector<LayoutDigit>& digits) {
  std::string out;
  for (const LayoutDigit& d : digits) {
    if (!out.empty()) out += " ";
    if (d.dim < 0) {
      absl::StrAppend(&out, "-:", d.size);
    } else {
      absl::StrAppend(&out, d.dim, ":", d.size, "@", d.stride);
    }
  }
  return out;
}

bool ParseInt(const std::string& text, int64_t* out) {
  if (text.empty() || text.size() > 18) return false;
  int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

absl::StatusOr<std::vector<LayoutDigit>> ParseDigits(const std::string& text,
                                                     bool allow_replicate) {
  std::vector<LayoutDigit> out;
  std::istringstream words(text);
  std::string word;
  while (words >> word) {
    auto bad = [&] {
      return absl::InvalidArgumentError(absl::StrCat("bad layout digit '", word, "'"));
    };
    LayoutDigit d;
    const size_t colon = word.find(':');
    if (colon == std::string::npos) return bad();
    const std::string dim = word.substr(0, colon);
    const size_t at = word.find('@', colon);
    int64_t v = 0;
    if (dim == "-") {
      if (!allow_replicate || at != std::string::npos || !ParseInt(word.substr(colon + 1), &v) ||
          v < 1) {
        return bad();
      }
      d = {-1, v, 0};
    } else {
      int64_t dv = 0, size = 0, stride = 0;
      if (at == std::string::npos || !ParseInt(dim, &dv) ||
          !ParseInt(word.substr(colon + 1, at - colon - 1), &size) ||
          !ParseInt(word.substr(at + 1), &stride) || size < 1 || stride < 1 || dv > 64) {
        return bad();
      }
      d = {static_cast<int>(dv), size, stride};
    }
    out.push_back(d);
  }
  return out;
}

} // namespace

int64_t FragmentLayout::NumThreads() const { return Product(thread); }
int64_t FragmentLayout::NumRegs() const { return Product(reg); }

int64_t FragmentLayout::ThreadPlace(size_t k) const {
  int64_t p = 1;
  for (size_t i = 0; i < k; ++i) p *= thread[i].size;
  return p;
}

int64_t FragmentLayout::RegPlace(size_t k) const {
  int64_t p = 1;
  for (size_t i = 0; i < k; ++i) p *= reg[i].size;
  return p;
}

bool FragmentLayout::HasPadding() const {
  std::vector<int64_t> cover(shape.size(), 0);
  for (const auto* digits : {&thread, &reg}) {
    for (const LayoutDigit& d : *digits) {
      if (d.dim >= 0) cover[d.dim] += (d.size - 1) * d.stride;
    }
  }
  for (size_t i = 0; i < shape.size(); ++i) {
    if (cover[i] + 1 > shape[i]) return true;
  }
  return false;
}

bool FragmentLayout::HasReplication() const {
  return std::any_of(thread.begin(), thread.end(),
                     [](const LayoutDigit& d) { return d.dim < 0 && d.size > 1; });
}

std::string FragmentLayout::ToString() const {
  return absl::StrCat("threads(", DigitsToString(thread), ") regs(", DigitsToString(reg), ")");
}

absl::StatusOr<FragmentLayout> ParseLayout(std::string_view text_view, std::vector<int64_t> shape) {
  const std::string text(text_view);
  FragmentLayout layout;
  layout.shape = std::move(shape);
  const size_t t0 = text.find("threads(");
  const size_t r0 = text.find(") regs(");
  if (t0 != 0 || r0 == std::string::npos || text.empty() || text.back() != ')') {
    return absl::InvalidArgumentError(absl::StrCat("bad layout '", text, "'"));
  }
  const std::string threads = text.substr(8, r0 - 8);
  const std::string regs = text.substr(r0 + 7, text.size() - r0 - 8);
  auto t = ParseDigits(threads, true);
  if (!t.ok()) return t.status();
  auto r = ParseDigits(regs, false);
  if (!r.ok()) return r.status();
  layout.thread = *std::move(t);
  layout.reg = *std::move(r);
  for (const auto* digits : {&layout.thread, &layout.reg}) {
    for (const LayoutDigit& d : *digits) {
      if (d.dim >= static_cast<int>(layout.shape.size())) {
        return absl::InvalidArgumentError(absl::StrCat("layout '", text, "' names dimension ",
                                                       d.dim, " of a ", layout.shape.size(),
                                                       "-d fragment"));
      }
    }
  }
  return layout;
}

FragmentLayout Normalize(FragmentLayout layout) {
  for (auto* digits : {&layout.thread, &layout.reg}) {
    std::vector<LayoutDigit> out;
    for (LayoutDigit d : *digits) {
      if (d.size == 1) continue;
      if (d.dim < 0) d.stride = 0;
      if (!out.empty()) {
        LayoutDigit& last = out.back();
        if (d.dim < 0 && last.dim < 0) {
          last.size *= d.size;
          continue;
        }
        if (d.dim >= 0 && last.dim == d.dim && last.stride * last.size == d.stride) {
          last.size *= d.size;
          continue;
        }
      }
      out.push_back(d);
    }
    *digits = std::move(out);
  }
  return layout;
}

FragmentLayout DefaultLayout(const std::vector<int64_t>& shape, int64_t threads, int64_t vector,
                             bool row_warps) {
  FragmentLayout layout;
  layout.shape = shape;
  const int n = static_cast<int>(shape.size());
  std::vector<int64_t> cover(shape.size(), 1);
  int64_t rest = threads;
  if (n > 0 && vector > 1 && shape[n - 1] % vector == 0) {
    layout.reg.push_back({n - 1, vector, 1});
    cover[n - 1] = vector;
  }
  // The innermost dimension takes one warp's lanes and leaves the warps to
  // the outer dimensions when they are big enough to use them: reductions
  // along the row then stay inside a warp (shuffles, no barrier).
  int64_t outer = 1;
  for (int d = 0; d + 1 < n; ++d) outer *= shape[d];
  for (int d = n - 1; d >= 0; --d) {
    int64_t e = CeilDiv(shape[d], cover[d]);
    int64_t take = rest;
    if (row_warps && d == n - 1 && n > 1 && rest > 32 && rest % 32 == 0) {
      take = outer >= rest / 32 ? 32 : (rest % outer == 0 ? rest / outer : rest);
    }
    if (rest > 1 && e > 1) {
      if (e % take == 0) {
        layout.thread.push_back({d, take, cover[d]});
        cover[d] *= take;
        e /= take;
        rest /= take;
      } else if (rest % e == 0) {
        layout.thread.push_back({d, e, cover[d]});
        cover[d] *= e;
        rest /= e;
        e = 1;
      } else if (d == 0) {
        // The outermost dimension takes all remaining threads, padded.
        layout.thread.push_back({d, rest, cover[d]});
        cover[d] *= rest;
        e = CeilDiv(e, rest);
        rest = 1;
      }
    }
    if (e > 1) {
      layout.reg.push_back({d, e, cover[d]});
      cover[d] *= e;
    }
  }
  if (rest > 1) layout.thread.push_back({-1, rest, 0});
  return Normalize(std::move(layout));
}

FragmentLayout MmaAccumulatorLayout(int64_t m, int64_t n, int64_t warps_m, int64_t warps_n,
                                    int64_t threads) {
  FragmentLayout layout;
  layout.shape = {m, n};
  const int64_t wm = m / warps_m, wn = n / warps_n;
  layout.thread = {{1, 4, 2}, {0, 8, 1}, {0, warps_m, wm}, {1, warps_n, wn}};
  if (threads > 32 * warps_m * warps_n) {
    layout.thread.push_back({-1, threads / (32 * warps_m * warps_n), 0});
  }
  layout.reg = {{1, 2, 1}, {0, 2, 8}, {1, wn / 8, 8}, {0, wm / 16, 16}};
  return Normalize(std::move(layout));
}

FragmentLayout MmaOperandALayout(int64_t m, int64_t k, int64_t warps_m, int64_t threads, int bits) {
  // (For 16-bit inputs this is the accumulator layout of (m x k).)
  FragmentLayout layout;
  layout.shape = {m, k};
  const int64_t wm = m / warps_m;
  // w consecutive columns per 32-bit register; a k-step of 8 * w columns.
  const int64_t w = 32 / bits, kstep = 8 * w;
  layout.thread = {{1, 4, w}, {0, 8, 1}, {0, warps_m, wm}};
  if (threads > 32 * warps_m) layout.thread.push_back({-1, threads / (32 * warps_m), 0});
  if (w > 1) layout.reg.push_back({1, w, 1});
  layout.reg.push_back({0, 2, 8});
  layout.reg.push_back({1, 2, 4 * w});
  layout.reg.push_back({1, k / kstep, kstep});
  layout.reg.push_back({0, wm / 16, 16});
  return Normalize(std::move(layout));
}

FragmentLayout WgmmaAccumulatorLayout(int64_t m, int64_t n, int64_t groups_m, int64_t groups_n) {
  FragmentLayout layout;
  layout.shape = {m, n};
  const int64_t gm = m / groups_m, gn = n / groups_n;
  layout.thread = {{1, 4, 2}, {0, 8, 1}, {0, 4, 16}, {0, groups_m, gm}, {1, groups_n, gn}};
  layout.reg = {{1, 2, 1}, {0, 2, 8}, {1, gn / 8, 8}, {0, gm / 64, 64}};
  return Normalize(std::move(layout));
}

FragmentLayout Project(const FragmentLayout& loop, const std::vector<int>& dims,
                       const std::vector<int64_t>& shape) {
  std::vector<int> to_frag(loop.shape.size(), -1);
  for (size_t k = 0; k < dims.size(); ++k) to_frag[dims[k]] = static_cast<int>(k);
  FragmentLayout out;
  out.shape = shape;
  for (LayoutDigit d : loop.thread) {
    if (d.dim >= 0) d.dim = to_frag[d.dim];
    if (d.dim < 0) d.stride = 0;
    out.thread.push_back(d);
  }
  for (LayoutDigit d : loop.reg) {
    if (to_frag[d.dim] < 0) continue;
    d.dim = to_frag[d.dim];
    out.reg.push_back(d);
  }
  return Normalize(std::move(out));
}

Expr ThreadDigit(const FragmentLayout& layout, size_t k, const Expr& tid) {
  return Digit(tid, layout.ThreadPlace(k), layout.thread[k].size, layout.NumThreads());
}

Expr RegDigit(const FragmentLayout& layout, size_t k, const Expr& reg) {
  return Digit(reg, layout.RegPlace(k), layout.reg[k].size, layout.NumRegs());
}

std::vector<Expr> ElementIndex(const FragmentLayout& layout, const Expr& tid, const Expr& reg) {
  std::vector<Expr> index(layout.shape.size(), I(0));
  auto add = [&](int dim, Expr digit, int64_t stride) {
    if (dim < 0) return;
    if (stride != 1) digit = ir::Binary(BinOp::kMul, digit, I(stride));
    index[dim] = ir::Binary(BinOp::kAdd, index[dim], digit);
  };
  for (size_t k = 0; k < layout.thread.size(); ++k) {
    add(layout.thread[k].dim, ThreadDigit(layout, k, tid), layout.thread[k].stride);
  }
  for (size_t k = 0; k < layout.reg.size(); ++k) {
    add(layout.reg[k].dim, RegDigit(layout, k, reg), layout.reg[k].stride);
  }
  for (Expr& e : index) e = ir::Simplify(e);
  return index;
}

Expr RegisterOf(const FragmentLayout& layout, const std::vector<Expr>& index) {
  Expr reg = I(0);
  for (size_t k = 0; k < layout.reg.size(); ++k) {
    const LayoutDigit& d = layout.reg[k];
    Expr v = index[d.dim];
    if (d.stride != 1) v = ir::Binary(BinOp::kFloorDiv, v, I(d.stride));
    v = ir::Binary(BinOp::kFloorMod, v, I(d.size));
    reg = ir::Binary(BinOp::kAdd, reg, ir::Binary(BinOp::kMul, v, I(layout.RegPlace(k))));
  }
  return ir::Simplify(reg);
}

Expr InBounds(const FragmentLayout& layout, const std::vector<Expr>& index) {
  std::vector<int64_t> cover(layout.shape.size(), 0);
  for (const auto* digits : {&layout.thread, &layout.reg}) {
    for (const LayoutDigit& d : *digits) {
      if (d.dim >= 0) cover[d.dim] += (d.size - 1) * d.stride;
    }
  }
  Expr cond = ir::BoolImm(true);
  for (size_t i = 0; i < layout.shape.size(); ++i) {
    if (cover[i] + 1 <= layout.shape[i]) continue;
    cond = ir::Binary(BinOp::kAnd, cond, ir::Binary(BinOp::kLt, index[i], I(layout.shape[i])));
  }
  return ir::Simplify(cond);
}

Expr IsFirstReplica(const FragmentLayout& layout, const Expr& tid) {
  Expr cond = ir::BoolImm(true);
  for (size_t k = 0; k < layout.thread.size(); ++k) {
    if (layout.thread[k].dim >= 0 || layout.thread[k].size == 1) continue;
    cond = ir::Binary(BinOp::kAnd, cond, ir::Binary(BinOp::kEq, ThreadDigit(layout, k, tid), I(0)));
  }
  return ir::Simplify(cond);
}

} // namespace kiln::passes
