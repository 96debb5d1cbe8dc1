#include "compiler/passes/shared_liveness.h"

#include <algorithm>
#include <functional>
#include <numeric>

namespace kiln::passes {
namespace {

using ir::Expr;
using ir::ExprKind;
using ir::Stmt;
using ir::StmtKind;

// Names every thread of the block sees with the same value.
std::set<std::string> UniformNames(const ir::Program& program) {
  std::set<std::string> names(program.kernel.block_vars.begin(), program.kernel.block_vars.end());
  for (const ir::Symbol& s : program.symbols) names.insert(s.name);
  for (const ir::Param& p : program.params) {
    if (p.is_scalar) names.insert(p.buffer.name);
  }
  return names;
}

bool Uniform(const Expr& e, const std::set<std::string>& names) {
  switch (e.kind) {
  case ExprKind::kThreadIdx:
  case ExprKind::kLoad:
  case ExprKind::kAddress:
    return false;
  case ExprKind::kVar:
    if (!names.count(e.name)) return false;
    break;
  default:
    break;
  }
  for (const Expr& a : e.args) {
    if (!Uniform(a, names)) return false;
  }
  return true;
}

// Calls fn(list, index) for each unit of `body` in program order (the file
// comment of shared_liveness.h). List is const or not.
template <typename List, typename Fn>
void WalkUnits(List& body, const std::set<std::string>& uniform, const Fn& fn) {
  for (size_t i = 0; i < body.size(); ++i) {
    auto& s = body[i];
    if (s.kind == StmtKind::kIf && Uniform(s.cond, uniform)) {
      WalkUnits(s.body, uniform, fn);
      WalkUnits(s.else_body, uniform, fn);
      continue;
    }
    fn(body, i);
  }
}

void NamesIn(const Expr& e, const std::set<std::string>& wanted, std::set<std::string>* out) {
  if ((e.kind == ExprKind::kLoad || e.kind == ExprKind::kAddress || e.kind == ExprKind::kVar) &&
      wanted.count(e.name)) {
    out->insert(e.name);
  }
  for (const Expr& a : e.args) NamesIn(a, wanted, out);
}

// Every buffer of `wanted` that `s` or a statement inside it names.
void NamesIn(const Stmt& s, const std::set<std::string>& wanted, std::set<std::string>* out) {
  if (s.kind == StmtKind::kAnnotateLayout) return; // a layout, not an access
  if (s.kind != StmtKind::kAlloc) {
    for (const ir::Region& r : s.regions) {
      if (wanted.count(r.buffer)) out->insert(r.buffer);
      for (const ir::Range& rg : r.ranges) {
        NamesIn(rg.min, wanted, out);
        NamesIn(rg.extent, wanted, out);
      }
    }
    if (s.kind == StmtKind::kStore && wanted.count(s.name)) out->insert(s.name);
  }
  if (s.has_value) NamesIn(s.value, wanted, out);
  NamesIn(s.cond, wanted, out); // if, and any kind that has a condition
  for (const Expr& e : s.indices) NamesIn(e, wanted, out);
  for (const Expr& e : s.extents) NamesIn(e, wanted, out);
  for (const Stmt& b : s.body) NamesIn(b, wanted, out);
  for (const Stmt& b : s.else_body) NamesIn(b, wanted, out);
}

int64_t AlignUp(int64_t v, int64_t align) {
  return align <= 1 ? v : (v + align - 1) / align * align;
}

// Places the slots in `order` (see PlaceByLiveness).
SharedLayout FirstFit(const std::vector<SharedSlot>& slots, const std::vector<size_t>& order) {
  SharedLayout out;
  out.offsets.assign(slots.size(), 0);
  std::vector<size_t> placed;
  for (size_t i : order) {
    const SharedSlot& s = slots[i];
    std::vector<size_t> conflicts;
    for (size_t j : placed) {
      if (slots[j].live.Overlaps(s.live)) conflicts.push_back(j);
    }
    std::vector<int64_t> candidates = {0};
    for (size_t j : conflicts) {
      candidates.push_back(AlignUp(out.offsets[j] + slots[j].bytes, s.align));
    }
    std::sort(candidates.begin(), candidates.end());
    int64_t at = candidates.back();
    for (int64_t c : candidates) {
      bool clear = true;
      for (size_t j : conflicts) {
        const int64_t lo = out.offsets[j], hi = lo + slots[j].bytes;
        if (c < hi && lo < c + s.bytes) clear = false;
      }
      if (clear) {
        at = c;
        break;
      }
    }
    out.offsets[i] = at;
    out.total = std::max(out.total, at + s.bytes);
    placed.push_back(i);
  }
  return out;
}

} // namespace

std::vector<LiveUnit> LiveUnits(const ir::Program& program) {
  std::vector<LiveUnit> units;
  WalkUnits(program.kernel.body, UniformNames(program),
            [&](const std::vector<Stmt>& list, size_t i) {
              units.push_back({&list, i});
            });
  return units;
}

void InsertBeforeUnits(ir::Program& program, const std::set<int64_t>& positions,
                       const std::vector<ir::Stmt>& stmts) {
  // First the statements to insert, by list and index; then each list
  // rebuilt, inner lists before the outer ones that hold them (rebuilding
  // an outer list moves the statements, and their lists, elsewhere).
  std::map<const std::vector<Stmt>*, std::set<size_t>> at;
  int64_t pos = 0;
  WalkUnits(program.kernel.body, UniformNames(program), [&](std::vector<Stmt>& list, size_t i) {
    if (positions.count(pos++)) at[&list].insert(i);
  });
  std::function<void(std::vector<Stmt>&)> rebuild = [&](std::vector<Stmt>& list) {
    for (Stmt& s : list) {
      if (s.kind != StmtKind::kIf) continue;
      rebuild(s.body);
      rebuild(s.else_body);
    }
    auto it = at.find(&list);
    if (it == at.end()) return;
    std::vector<Stmt> out;
    for (size_t i = 0; i < list.size(); ++i) {
      if (it->second.count(i)) out.insert(out.end(), stmts.begin(), stmts.end());
      out.push_back(std::move(list[i]));
    }
    list = std::move(out);
  };
  rebuild(program.kernel.body);
}

std::map<std::string, LiveRange> SharedLiveRanges(const ir::Program& program,
                                                  const std::set<std::string>& buffers) {
  std::map<std::string, LiveRange> out;
  for (const std::string& b : buffers) out[b] = LiveRange{};
  int64_t pos = 0;
  WalkUnits(program.kernel.body, UniformNames(program),
            [&](const std::vector<Stmt>& list, size_t i) {
              std::set<std::string> named;
              NamesIn(list[i], buffers, &named);
              for (const std::string& b : named) {
                LiveRange& r = out[b];
                if (r.empty()) r.first = pos;
                r.last = pos;
              }
              ++pos;
            });
  return out;
}

SharedLayout PlaceSequential(const std::vector<SharedSlot>& slots) {
  SharedLayout out;
  for (const SharedSlot& s : slots) {
    const int64_t at = AlignUp(out.total, s.align);
    out.offsets.push_back(at);
    out.total = at + s.bytes;
  }
  return out;
}

SharedLayout PlaceByLiveness(const std::vector<SharedSlot>& slots) {
  std::vector<size_t> by_size(slots.size());
  std::iota(by_size.begin(), by_size.end(), 0);
  std::vector<size_t> by_start = by_size;
  // Ties by position in `slots`: the result depends on nothing else.
  std::stable_sort(by_size.begin(), by_size.end(),
                   [&](size_t a, size_t b) { return slots[a].bytes > slots[b].bytes; });
  std::stable_sort(by_start.begin(), by_start.end(), [&](size_t a, size_t b) {
    const LiveRange &x = slots[a].live, &y = slots[b].live;
    if (x.empty() != y.empty()) return !x.empty();
    if (!x.empty() && x.first != y.first) return x.first < y.first;
    return slots[a].bytes > slots[b].bytes;
  });
  SharedLayout best = FirstFit(slots, by_size);
  SharedLayout other = FirstFit(slots, by_start);
  if (other.total < best.total) best = std::move(other);
  SharedLayout sequential = PlaceSequential(slots);
  return best.total < sequential.total ? best : sequential;
}

std::vector<std::pair<size_t, size_t>> SharedReuses(const std::vector<SharedSlot>& slots,
                                                    const SharedLayout& layout) {
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t a = 0; a < slots.size(); ++a) {
    for (size_t b = a + 1; b < slots.size(); ++b) {
      const SharedSlot &x = slots[a], &y = slots[b];
      if (x.live.empty() || y.live.empty() || x.bytes == 0 || y.bytes == 0) continue;
      const int64_t xa = layout.offsets[a], ya = layout.offsets[b];
      if (!(xa < ya + y.bytes && ya < xa + x.bytes)) continue;
      if (x.live.last < y.live.first) {
        out.emplace_back(a, b);
      } else {
        out.emplace_back(b, a);
      }
    }
  }
  return out;
}

} // namespace kiln::passes
