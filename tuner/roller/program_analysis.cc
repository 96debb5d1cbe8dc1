#include "tuner/roller/program_analysis.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "compiler/frontend/frontend.h"
#include "compiler/tools/bind_lines.h"
#include "util/status_macros.h"

namespace kiln::roller {
namespace {

using frontend::BindingValue;

int64_t CeilDiv(int64_t a, int64_t b) { return b <= 0 ? 0 : (a + b - 1) / b; }

// The largest extent a structure switch is probed at (the largest derived
// reduction step).
constexpr int64_t kMaxSwitchExtent = 16384;

const BindingValue* FindBinding(const std::vector<std::pair<std::string, BindingValue>>& b,
                                const std::string& name) {
  for (const auto& [n, v] : b) {
    if (n == name) return &v;
  }
  return nullptr;
}

BindingValue Int(int64_t v) {
  BindingValue b;
  b.kind = BindingValue::Kind::kInt;
  b.ival = v;
  return b;
}

// Whether a probe's failure ends the whole analysis: its evaluation was
// cancelled, passed the caller's deadline or ran out of its budget. Another
// probe of the same program would only run out the same way (a hostile
// program would cost the budget once per probe), so these are not taken as
// "this value does not compile".
bool EndsAnalysis(const absl::Status& s) {
  return s.code() == absl::StatusCode::kCancelled ||
         s.code() == absl::StatusCode::kDeadlineExceeded ||
         s.code() == absl::StatusCode::kResourceExhausted;
}

absl::StatusOr<KernelSummary> CompileAndSummarize(const driver::ProgramInput& in) {
  frontend::FrontendOptions fo;
  fo.file_name = in.file_name;
  fo.entry = in.entry;
  fo.bindings = in.bindings;
  fo.limits = in.limits;
  ASSIGN_OR_RETURN(ir::Program p, frontend::CompileSource(in.text, fo));
  return Summarize(p);
}

// Fits how quantity value v0 (at x0) became v1 (at x1). `known` are extents
// the program mentions (bindings, tensor dims), preferred for a ceil-div.
std::optional<SizeFactor> Fit(int64_t v0, int64_t v1, int64_t x0, int64_t x1,
                              const std::set<int64_t>& known) {
  if (v0 == v1) return std::nullopt;
  SizeFactor f;
  if (v0 <= 0 || v1 <= 0 || x0 <= 0 || x1 <= 0) {
    f.kind = SizeFactor::kPower;
    f.exponent = 0;
    return f;
  }
  if (v1 * x0 == v0 * x1) {
    f.kind = SizeFactor::kLinear;
    return f;
  }
  // ceildiv(E, x) == v  <=>  (v - 1) * x < E <= v * x.
  const int64_t lo = std::max((v0 - 1) * x0 + 1, (v1 - 1) * x1 + 1);
  const int64_t hi = std::min(v0 * x0, v1 * x1);
  if ((v1 < v0) == (x1 > x0) && lo <= hi) {
    f.kind = SizeFactor::kCeilDiv;
    f.extent = hi;
    for (auto it = known.rbegin(); it != known.rend(); ++it) {
      if (*it >= lo && *it <= hi) {
        f.extent = *it;
        break;
      }
    }
    return f;
  }
  f.kind = SizeFactor::kPower;
  f.exponent = std::log(static_cast<double>(v1) / static_cast<double>(v0)) /
               std::log(static_cast<double>(x1) / static_cast<double>(x0));
  return f;
}

struct Candidate {
  std::string name;
  int64_t base = 0;
  std::vector<int64_t> declared;
};

} // namespace

std::string_view RoleName(Role role) {
  switch (role) {
  case Role::kBlockTile:
    return "block_tile";
  case Role::kReductionStep:
    return "reduction_step";
  case Role::kPipelineDepth:
    return "pipeline_depth";
  case Role::kThreads:
    return "threads";
  case Role::kRasterPanel:
    return "raster_panel";
  case Role::kSplit:
    return "split";
  case Role::kOther:
    return "other";
  case Role::kShape:
    return "shape";
  }
  return "other";
}

std::vector<const Tunable*> ProgramAnalysis::Tuned() const {
  std::vector<const Tunable*> out;
  for (const Tunable& t : tunables) {
    if (t.role == Role::kShape) continue;
    if (t.role == Role::kOther && t.declared.empty()) continue;
    out.push_back(&t);
  }
  return out;
}

const Tunable* ProgramAnalysis::Find(std::string_view name) const {
  for (const Tunable& t : tunables) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

driver::ProgramInput BindConfig(const ProgramAnalysis& analysis, const Config& config) {
  driver::ProgramInput in = analysis.input;
  for (const Tunable& t : analysis.tunables) {
    auto it = config.find(t.name);
    in.bindings.emplace_back(t.name, Int(it == config.end() ? t.default_value : it->second));
  }
  return in;
}

std::vector<int64_t> EvalQuantities(const ProgramAnalysis& a, const Config& config) {
  std::vector<int64_t> x(a.tunables.size());
  std::vector<int64_t> x0(a.tunables.size());
  for (size_t i = 0; i < a.tunables.size(); ++i) {
    x0[i] = a.tunables[i].default_value;
    auto it = config.find(a.tunables[i].name);
    x[i] = it == config.end() ? x0[i] : it->second;
  }
  std::vector<int64_t> out(a.exprs.size());
  for (size_t q = 0; q < a.exprs.size(); ++q) {
    const SizeExpr& e = a.exprs[q];
    if (e.factors.empty()) {
      out[q] = e.base;
      continue;
    }
    // A lone ceil-div factor is evaluated exactly in integers.
    if (e.factors.size() == 1 && e.factors[0].kind == SizeFactor::kCeilDiv) {
      const SizeFactor& f = e.factors[0];
      const int64_t d0 = CeilDiv(f.extent, x0[f.tunable]);
      if (d0 > 0 && e.base % d0 == 0) {
        out[q] = e.base / d0 * CeilDiv(f.extent, x[f.tunable]);
        continue;
      }
    }
    double v = static_cast<double>(e.base);
    for (const SizeFactor& f : e.factors) {
      const double xi = static_cast<double>(x[f.tunable]);
      const double xb = static_cast<double>(x0[f.tunable]);
      switch (f.kind) {
      case SizeFactor::kLinear:
        v *= xi / xb;
        break;
      case SizeFactor::kCeilDiv:
        v *= static_cast<double>(CeilDiv(f.extent, x[f.tunable])) /
             static_cast<double>(std::max<int64_t>(1, CeilDiv(f.extent, x0[f.tunable])));
        break;
      case SizeFactor::kPower:
        v *= std::pow(xi / xb, f.exponent);
        break;
      }
    }
    out[q] = std::max<int64_t>(e.base > 0 ? 1 : 0, std::llround(v));
  }
  return out;
}

namespace {

// The probes, fits and roles around one anchor: `base_values` (one per
// candidate) is compiled (unless the caller passes its summary as
// `baseline`), then each candidate is moved on its own. `out` arrives with
// `input` and `entry` set; `known` holds the extents the bindings name.
// `anchored` (a candidate's index, or -1) sits at a structure switch: values
// below it are another kernel, so it is not probed there.
absl::Status FitAround(const std::vector<Candidate>& cands, const std::vector<int64_t>& base_values,
                       std::set<int64_t> known, std::optional<KernelSummary> baseline, int anchored,
                       ProgramAnalysis* analysis) {
  ProgramAnalysis& out = *analysis;
  auto with = [&](const std::vector<int64_t>& values) {
    driver::ProgramInput in = out.input;
    for (size_t i = 0; i < cands.size(); ++i)
      in.bindings.emplace_back(cands[i].name, Int(values[i]));
    return in;
  };
  if (baseline) {
    out.base = *std::move(baseline);
  } else {
    ASSIGN_OR_RETURN(out.base, CompileAndSummarize(with(base_values)));
  }
  for (size_t q = 0; q < out.base.q.size(); ++q) {
    if (out.base.q_is_shape[q] && out.base.q[q] > 0) known.insert(out.base.q[q]);
  }
  out.exprs.resize(out.base.q.size());
  for (size_t q = 0; q < out.base.q.size(); ++q) out.exprs[q].base = out.base.q[q];

  std::set<int> stage_qs;
  std::set<int> loop_qs;
  for (const SummaryLoop& l : out.base.loops) {
    if (l.stages_q >= 0) stage_qs.insert(l.stages_q);
    loop_qs.insert(l.extent_q);
  }
  std::set<int> grid_qs(out.base.grid_qs.begin(), out.base.grid_qs.end());

  for (size_t i = 0; i < cands.size(); ++i) {
    Tunable t;
    t.name = cands[i].name;
    t.default_value = base_values[i];
    t.declared = cands[i].declared;
    const int index = static_cast<int>(out.tunables.size());
    // Probe: double it (halve when doubling does not compile).
    std::optional<KernelSummary> probe;
    int64_t probe_value = 0;
    for (int64_t v : {t.default_value > 0 ? 2 * t.default_value : 1,
                      t.default_value >= 2 ? t.default_value / 2 : -1}) {
      if (v < 0) continue;
      std::vector<int64_t> values = base_values;
      values[i] = v;
      absl::StatusOr<KernelSummary> s = CompileAndSummarize(with(values));
      if (!s.ok() && EndsAnalysis(s.status())) return s.status();
      if (s.ok() && s->signature == out.base.signature) {
        probe = *std::move(s);
        probe_value = v;
        break;
      }
    }
    if (!probe) {
      t.role = Role::kOther;
      out.notes.push_back(absl::StrCat(t.name,
                                       ": changing it changes the kernel's structure (or "
                                       "does not compile); kept at ",
                                       t.default_value));
      out.tunables.push_back(std::move(t));
      continue;
    }
    // Fits every quantity that moved between two probes; `only_new` skips
    // quantities that already have a factor for this tunable.
    std::vector<std::optional<SizeFactor>> fits(out.base.q.size());
    auto fit_all = [&](const KernelSummary& lo, const KernelSummary& hi, int64_t x_lo,
                       int64_t x_hi) {
      for (size_t q = 0; q < out.base.q.size(); ++q) {
        if (fits[q]) continue;
        fits[q] = Fit(lo.q[q], hi.q[q], x_lo, x_hi, known);
      }
    };
    fit_all(out.base, *probe, t.default_value, probe_value);
    // A tile larger than its extent (block_M = 128 at M = 16) moves no grid
    // extent between the default and its double: probe small values too.
    bool divides_any = false;
    for (size_t q = 0; q < fits.size(); ++q) {
      divides_any = divides_any || (fits[q] && fits[q]->kind == SizeFactor::kCeilDiv);
    }
    if (!divides_any && t.default_value > 2 && static_cast<int>(i) != anchored) {
      std::vector<int64_t> v1 = base_values, v2 = base_values;
      v1[i] = 1;
      v2[i] = 2;
      absl::StatusOr<KernelSummary> s1 = CompileAndSummarize(with(v1));
      if (!s1.ok() && EndsAnalysis(s1.status())) return s1.status();
      absl::StatusOr<KernelSummary> s2 = CompileAndSummarize(with(v2));
      if (!s2.ok() && EndsAnalysis(s2.status())) return s2.status();
      if (s1.ok() && s2.ok() && s1->signature == out.base.signature &&
          s2->signature == out.base.signature) {
        fit_all(*s1, *s2, 1, 2);
      }
    }
    bool shape = false, threads = false, stages = false, panel = false, tile = false, split = false,
         step = false, any = false;
    for (size_t q = 0; q < out.base.q.size(); ++q) {
      std::optional<SizeFactor> f = fits[q];
      if (!f) continue;
      f->tunable = index;
      out.exprs[q].factors.push_back(*f);
      any = true;
      const int qi = static_cast<int>(q);
      if (out.base.q_is_shape[q]) shape = true;
      if (qi == out.base.threads_q) threads = true;
      if (stage_qs.count(qi)) stages = true;
      if (qi == out.base.panel_q) panel = true;
      const bool divides =
          f->kind == SizeFactor::kCeilDiv || (f->kind == SizeFactor::kPower && f->exponent < -0.5);
      if (grid_qs.count(qi) && divides) {
        tile = true;
        if (t.extent == 0) t.extent = f->kind == SizeFactor::kCeilDiv ? f->extent : 0;
      }
      if (grid_qs.count(qi) && f->kind == SizeFactor::kLinear) split = true;
      if (loop_qs.count(qi) && divides && !grid_qs.count(qi)) {
        step = true;
        if (t.extent == 0 && f->kind == SizeFactor::kCeilDiv) t.extent = f->extent;
      }
    }
    if (shape) {
      t.role = Role::kShape;
    } else if (threads) {
      t.role = Role::kThreads;
    } else if (stages) {
      t.role = Role::kPipelineDepth;
    } else if (panel) {
      t.role = Role::kRasterPanel;
    } else if (tile) {
      t.role = Role::kBlockTile;
    } else if (split) {
      t.role = Role::kSplit;
    } else if (step) {
      t.role = Role::kReductionStep;
    } else {
      t.role = Role::kOther;
    }
    if (t.role != Role::kBlockTile && t.role != Role::kReductionStep) t.extent = 0;
    if (!any) out.notes.push_back(absl::StrCat(t.name, ": changes nothing the model sees"));
    if (t.role == Role::kShape) {
      out.notes.push_back(absl::StrCat(t.name,
                                       ": a problem size (it changes a tensor's shape); "
                                       "kept at ",
                                       t.default_value, "; bind it to choose another"));
    }
    out.tunables.push_back(std::move(t));
  }

  // Which tunables size a GEMM or an innermost global extent.
  auto depends = [&](int q, int tunable) {
    if (q < 0) return false;
    for (const SizeFactor& f : out.exprs[q].factors) {
      if (f.tunable == tunable) return true;
    }
    return false;
  };
  for (size_t i = 0; i < out.tunables.size(); ++i) {
    Tunable& t = out.tunables[i];
    const int ti = static_cast<int>(i);
    for (const SummaryGemm& g : out.base.gemms) {
      t.mma_m = t.mma_m || depends(g.m_q, ti);
      t.mma_n = t.mma_n || depends(g.n_q, ti);
      t.mma_k = t.mma_k || depends(g.k_q, ti);
    }
    for (const SummaryAccess& a : out.base.accesses)
      t.contiguous = t.contiguous || depends(a.inner_q, ti);
    if (t.extent > 0) {
      // Name the extent after a binding with that value whose name the
      // tunable carries (block_M tiles M), else any binding of that value.
      for (const auto& [n, v] : out.input.bindings) {
        if (v.kind != BindingValue::Kind::kInt || v.ival != t.extent) continue;
        const bool named =
            t.name.size() > n.size() && t.name.compare(t.name.size() - n.size(), n.size(), n) == 0;
        if (named || t.dim.empty()) t.dim = n;
        if (named) break;
      }
    }
    out.defaults[t.name] = t.default_value;
  }

  // The iteration space: grid dimensions (tiled or not), then reduced loops.
  for (size_t d = 0; d < out.base.grid_qs.size(); ++d) {
    const int q = out.base.grid_qs[d];
    IterDim dim;
    dim.name = absl::StrCat("grid[", d, "]");
    dim.extent = out.base.q[q];
    for (const SizeFactor& f : out.exprs[q].factors) {
      const Tunable& t = out.tunables[f.tunable];
      if (t.role != Role::kBlockTile || f.kind != SizeFactor::kCeilDiv) continue;
      dim.extent = f.extent;
      dim.tiled_by = t.name;
      if (!t.dim.empty()) dim.name = t.dim;
    }
    out.iteration_space.push_back(dim);
  }
  for (const Tunable& t : out.tunables) {
    if (t.role != Role::kReductionStep) continue;
    out.iteration_space.push_back(
        {t.dim.empty() ? absl::StrCat("loop over ", t.extent) : t.dim, t.extent, true, t.name});
  }
  return absl::OkStatus();
}

// Step 5 of the header: compiles each tile / step at the extent it tiles
// and, where the kernel there is not what the fits predict, fits a second
// analysis around that point. `depth` bounds the nesting (a region may
// switch again on another tunable).
absl::Status DetectSwitches(const std::vector<Candidate>& cands,
                            const std::vector<int64_t>& base_values, const std::set<int64_t>& known,
                            int depth, ProgramAnalysis* analysis) {
  ProgramAnalysis& out = *analysis;
  for (size_t i = 0; i < out.tunables.size() && i < cands.size(); ++i) {
    const Tunable& t = out.tunables[i];
    if (t.role != Role::kBlockTile && t.role != Role::kReductionStep) continue;
    // Past kMaxSwitchExtent no derived domain reaches the extent.
    if (t.extent <= 0 || t.default_value >= t.extent || t.extent > kMaxSwitchExtent) continue;
    Config at = out.defaults;
    at[t.name] = t.extent;
    absl::StatusOr<KernelSummary> real = CompileAndSummarize(BindConfig(out, at));
    if (!real.ok() && EndsAnalysis(real.status())) return real.status();
    if (!real.ok()) continue;
    if (real->signature == out.base.signature) {
      // Same kernel: the fits hold there, or are inexact at the edge (a
      // one-block grid moves the middle block an extent is taken at). A
      // second analysis would cost a set of probes for configs that no
      // derived domain reaches, so that case is only noted.
      if (EvalQuantities(out, at) != real->q) {
        out.notes.push_back(absl::StrCat(t.name, ": at ", t.name, " = ", t.extent,
                                         " some quantities differ from the fits' values"));
      }
      continue;
    }
    const std::string why = "structure";
    std::vector<int64_t> values = base_values;
    values[i] = t.extent;
    auto region = std::make_shared<ProgramAnalysis>();
    region->entry = out.entry;
    region->input = out.input;
    absl::Status s =
        FitAround(cands, values, known, *std::move(real), static_cast<int>(i), region.get());
    if (EndsAnalysis(s)) return s;
    if (!s.ok()) {
      out.notes.push_back(absl::StrCat(t.name, ": the kernel changes its ", why, " at ", t.name,
                                       " = ", t.extent, " but cannot be analysed there (",
                                       s.message(), "); configs there use the default's fits"));
      continue;
    }
    if (depth > 0) RETURN_IF_ERROR(DetectSwitches(cands, values, known, depth - 1, region.get()));
    out.notes.push_back(absl::StrCat(
        t.name, ": the kernel changes its ", why, " at ", t.name, " = ", t.extent,
        " (one tile covers ", t.dim.empty() ? absl::StrCat(t.extent) : t.dim, "); configs with ",
        t.name, " >= ", t.extent, " are evaluated with an analysis fitted there"));
    out.switches.push_back({t.name, t.extent, why, std::move(region)});
  }
  return absl::OkStatus();
}

} // namespace

absl::StatusOr<ProgramAnalysis> AnalyzeProgram(const driver::ProgramInput& input,
                                               const TuneSpace& declared) {
  if (input.kind != driver::ProgramInput::Kind::kTileLang) {
    return absl::InvalidArgumentError(
        "tuning needs TileLang source: IR has no parameters left to tune");
  }
  ProgramAnalysis out;
  out.input = input;
  frontend::FrontendOptions fo;
  fo.file_name = input.file_name;
  fo.entry = input.entry;
  fo.limits = input.limits;
  ASSIGN_OR_RETURN(frontend::EntrySignature sig, frontend::DescribeEntry(input.text, fo));
  out.entry = sig.name;
  out.input.entry = sig.name;

  // The file's bind line supplies values for parameters without a default.
  tools::Bindings bind_line;
  if (auto b = tools::BindLine(input.text, input.file_name, "bind"); b.ok()) bind_line = *b;

  for (const auto& [name, values] : declared) {
    // A tuning knob of the build (driver::IsPassKnob, "kiln:split_k"), not a
    // parameter: checked when its configs are verified.
    if (driver::IsPassKnob(name)) {
      if (values.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("declared knob '", name, "' has an empty domain"));
      }
      continue;
    }
    bool found = false;
    for (const frontend::EntryParam& p : sig.params) {
      if (p.name != name) continue;
      found = true;
      if (p.is_tensor) {
        return absl::InvalidArgumentError(
            absl::StrCat("declared tunable '", name, "' is a tensor parameter"));
      }
    }
    if (!found) {
      return absl::InvalidArgumentError(
          absl::StrCat("declared tunable '", name, "' is not a parameter of '", sig.name, "'"));
    }
    if (values.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("declared tunable '", name, "' has an empty domain"));
    }
    if (FindBinding(input.bindings, name) != nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", name, "' is both bound and declared tunable; choose one"));
    }
  }

  std::vector<Candidate> cands;
  for (const frontend::EntryParam& p : sig.params) {
    if (p.is_tensor || FindBinding(input.bindings, p.name) != nullptr) continue;
    auto decl = declared.find(p.name);
    std::optional<BindingValue> value = p.default_value;
    const bool from_signature = p.has_default;
    if (!p.has_default) {
      if (const BindingValue* b = FindBinding(bind_line, p.name)) value = *b;
    }
    if (decl != declared.end()) {
      int64_t base = decl->second.front();
      if (value && value->kind == BindingValue::Kind::kInt &&
          std::find(decl->second.begin(), decl->second.end(), value->ival) != decl->second.end()) {
        base = value->ival;
      }
      cands.push_back({p.name, base, decl->second});
      continue;
    }
    if (value && value->kind == BindingValue::Kind::kInt) {
      cands.push_back({p.name, value->ival, {}});
      continue;
    }
    if (!from_signature) {
      if (!value) {
        return absl::InvalidArgumentError(
            absl::StrCat("parameter '", p.name, "' of '", sig.name,
                         "' has no default and no bind-line value: bind it or declare its domain"));
      }
      // A non-integer value without a default (is_causal=True): fixed.
      out.input.bindings.emplace_back(p.name, *value);
      out.notes.push_back(absl::StrCat(p.name, ": fixed at the bind line's value"));
    }
  }

  // Extents the program mentions, preferred when fitting a ceil-div.
  std::set<int64_t> known;
  for (const auto& [n, v] : out.input.bindings) {
    if (v.kind == BindingValue::Kind::kInt && v.ival > 0) known.insert(v.ival);
  }

  std::vector<int64_t> base_values;
  for (const Candidate& c : cands) base_values.push_back(c.base);
  RETURN_IF_ERROR(FitAround(cands, base_values, known, std::nullopt, /*anchored=*/-1, &out));
  RETURN_IF_ERROR(DetectSwitches(cands, base_values, known, /*depth=*/1, &out));
  return out;
}

const ProgramAnalysis& AnalysisFor(const ProgramAnalysis& analysis, const Config& config) {
  for (const StructureSwitch& sw : analysis.switches) {
    const Tunable* t = analysis.Find(sw.tunable);
    if (t == nullptr || sw.analysis == nullptr) continue;
    auto it = config.find(sw.tunable);
    const int64_t v = it == config.end() ? t->default_value : it->second;
    if (v >= sw.from) return AnalysisFor(*sw.analysis, config);
  }
  return analysis;
}

} // namespace kiln::roller
