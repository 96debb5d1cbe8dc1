#include "tuner/roller/policy.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "compiler/codegen/codegen.h"
#include "compiler/frontend/frontend.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/verifier.h"
#include "compiler/passes/layout_inference.h"
#include "compiler/passes/pass_registry.h"
#include "compiler/passes/split_k.h"
#include "util/status_macros.h"

namespace kiln::roller {
namespace {

// The largest derived reduction step (and value past a structure switch).
constexpr int64_t kMaxDerivedStep = 16384;

int64_t NextPow2(int64_t v) {
  int64_t p = 1;
  while (p < v && p < (int64_t{1} << 40)) p *= 2;
  return p;
}

// Powers of two in [lo, hi].
std::vector<int64_t> Pow2Range(int64_t lo, int64_t hi) {
  std::vector<int64_t> out;
  for (int64_t v = 1; v <= hi; v *= 2) {
    if (v >= lo) out.push_back(v);
  }
  return out;
}

// The MMA k-step of the program's first GEMM (16 for 16-bit inputs).
int64_t ProgramMmaK(const ProgramAnalysis& a) {
  if (a.base.gemms.empty()) return 16;
  switch (a.base.gemms[0].in_dtype) {
  case ir::DType::kInt8:
  case ir::DType::kUInt8:
    return 32;
  case ir::DType::kFloat32:
    return 8;
  case ir::DType::kFloat64:
    return 8;
  default:
    return 16;
  }
}

// The narrowest element of the program's global tensors: a contiguous tile
// spans at least one 128-byte transaction of it.
int SmallestGlobalElem(const ProgramAnalysis& a) {
  int out = 8;
  for (const SummaryAccess& ac : a.base.accesses) out = std::min(out, ac.elem_bytes);
  return std::max(1, out);
}

std::vector<int64_t> Derived(const ProgramAnalysis& a, const Tunable& t,
                             const arch::ArchModel& arch) {
  const int64_t extent = t.extent > 0 ? NextPow2(t.extent) : int64_t{1} << 14;
  // A tile's contiguous extent spans at least one 128-byte transaction of
  // the program's narrowest global element (where the extent allows).
  const int64_t row = std::max<int64_t>(1, arch.transaction_bytes / SmallestGlobalElem(a));
  auto lowest = [&](int64_t atom) {
    return t.contiguous ? std::max(atom, std::min(row, extent)) : atom;
  };
  std::vector<int64_t> out;
  switch (t.role) {
  case Role::kBlockTile:
    if (t.mma_m || t.mma_n) {
      // m16n8 atoms over up to 4 warps per dimension; 16-wide keeps ldmatrix x4.
      const int64_t lo = lowest(16);
      out = Pow2Range(lo, std::min<int64_t>(256, std::max(lo, extent)));
      // wgmma's atom is 64 rows: on a device with wgmma a dimension below
      // 64 (decode: M = 16) also gets the 64-row tile, whose unused rows
      // cost no memory traffic (TMA fills them with zeros) and whose
      // TMA + wgmma path beats the 16-row mma.sync tiles there.
      if (t.mma_m && arch.wgmma_tflops > 0 && extent < 64) out.push_back(64);
    } else {
      out = Pow2Range(lowest(1), std::min<int64_t>(t.contiguous ? 4096 : 256, extent));
    }
    break;
  case Role::kReductionStep:
    if (t.mma_k) {
      const int64_t lo = lowest(ProgramMmaK(a));
      out = Pow2Range(lo, std::min<int64_t>(std::max<int64_t>(lo, 128), std::max(lo, extent)));
    } else {
      out = Pow2Range(lowest(1), std::min<int64_t>(kMaxDerivedStep, extent));
    }
    break;
  case Role::kPipelineDepth:
    out = arch.vendor == arch::Vendor::kAmd ? std::vector<int64_t>{1, 2}
                                            : std::vector<int64_t>{1, 2, 3, 4, 5};
    break;
  case Role::kThreads:
    out = a.base.gemms.empty() ? std::vector<int64_t>{64, 128, 256, 512}
                               : std::vector<int64_t>{128, 256};
    out.erase(std::remove_if(out.begin(), out.end(),
                             [&](int64_t v) {
                               return v > arch.max_threads_per_block || v % arch.warp_size != 0;
                             }),
              out.end());
    break;
  case Role::kRasterPanel:
    out = {4, 8, 16};
    break;
  case Role::kSplit:
    out = {1, 2, 4, 8, 16};
    break;
  case Role::kOther:
  case Role::kShape:
    break;
  }
  out.push_back(t.default_value);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

int64_t SpaceSize(const TuneSpace& space) {
  int64_t n = 1;
  for (const auto& [name, values] : space) {
    n *= static_cast<int64_t>(values.size());
    if (n > (int64_t{1} << 40)) break;
  }
  return n;
}

// Calls fn on every config of the product space (names in map order).
template <typename Fn>
void ForEachConfig(const TuneSpace& space, Fn fn) {
  std::vector<std::pair<std::string, const std::vector<int64_t>*>> dims;
  for (const auto& [name, values] : space) {
    if (values.empty()) return;
    dims.emplace_back(name, &values);
  }
  std::vector<size_t> idx(dims.size(), 0);
  Config c;
  while (true) {
    for (size_t d = 0; d < dims.size(); ++d) c[dims[d].first] = (*dims[d].second)[idx[d]];
    if (!fn(c)) return;
    size_t d = 0;
    while (d < dims.size() && ++idx[d] == dims[d].second->size()) idx[d++] = 0;
    if (d == dims.size()) return;
  }
}

Candidate MakeCandidate(const ProgramAnalysis& a, Config config, const Prediction& p) {
  Candidate c;
  c.config = std::move(config);
  c.prediction = p;
  c.predicted_us = p.fits ? p.time_us : -1;
  c.rationale = Rationale(a, c.config, p);
  return c;
}

void SortByPrediction(std::vector<Candidate>* cands) {
  std::stable_sort(cands->begin(), cands->end(), [](const Candidate& x, const Candidate& y) {
    const bool fx = x.prediction.fits, fy = y.prediction.fits;
    if (fx != fy) return fx;
    if (x.predicted_us != y.predicted_us) return x.predicted_us < y.predicted_us;
    // Ties (both compute-bound, say): less traffic; then the deeper
    // pipeline, which hides latency the model does not see (L2 hits,
    // ldmatrix; Kiln's measured best GEMMs use 3-4 stages where 2 fit);
    // then less shared memory.
    const int64_t tx = x.prediction.l2_bytes + x.prediction.dram_bytes;
    const int64_t ty = y.prediction.l2_bytes + y.prediction.dram_bytes;
    if (tx != ty) return tx < ty;
    if (x.prediction.stages != y.prediction.stages) {
      return x.prediction.stages > y.prediction.stages;
    }
    return x.prediction.smem_bytes < y.prediction.smem_bytes;
  });
}

std::string Target(const arch::ArchModel& arch, const PolicyOptions& o) {
  return o.target.empty() ? arch.target : o.target;
}

} // namespace

absl::StatusOr<Strategy> ParseStrategy(std::string_view name) {
  if (name == "roller") return Strategy::kRoller;
  if (name == "grid") return Strategy::kGrid;
  if (name == "random") return Strategy::kRandom;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown strategy '", std::string(name), "' (roller, grid or random)"));
}

std::string_view StrategyName(Strategy s) {
  switch (s) {
  case Strategy::kRoller:
    return "roller";
  case Strategy::kGrid:
    return "grid";
  case Strategy::kRandom:
    return "random";
  }
  return "roller";
}

TuneSpace DeriveSpace(const ProgramAnalysis& analysis, const arch::ArchModel& arch,
                      const TuneSpace& declared) {
  TuneSpace out;
  for (const Tunable* t : analysis.Tuned()) {
    if (auto it = declared.find(t->name); it != declared.end()) {
      out[t->name] = it->second;
    } else if (!t->declared.empty()) {
      out[t->name] = t->declared;
    } else {
      out[t->name] = Derived(analysis, *t, arch);
      // A value past a structure switch (one tile over the whole extent:
      // another kernel) is in the domain, so that kernel is ranked too.
      for (const StructureSwitch& sw : analysis.switches) {
        const int64_t v = NextPow2(sw.from);
        std::vector<int64_t>& d = out[t->name];
        if (sw.tunable != t->name || v > kMaxDerivedStep) continue;
        if (std::find(d.begin(), d.end(), v) == d.end()) {
          d.insert(std::upper_bound(d.begin(), d.end(), v), v);
        }
      }
    }
  }
  // Declared names of other roles (a kOther parameter given a domain).
  for (const auto& [name, values] : declared) out[name] = values;
  return out;
}

absl::StatusOr<std::string> VerifyConfig(const ProgramAnalysis& analysis, const Config& config,
                                         std::string_view target,
                                         const std::vector<std::string>& pass_options) {
  const driver::ProgramInput in = BindConfig(analysis, config);
  // The config's tuning knobs ("kiln:split_k") are pass options of its build.
  std::vector<std::string> options_of_config = pass_options;
  for (const auto& [name, value] : config) {
    if (!driver::IsPassKnob(name)) continue;
    ASSIGN_OR_RETURN(std::string option, driver::KnobPassOption(name, value));
    if (!option.empty()) options_of_config.push_back(std::move(option));
  }
  ir::Program program;
  std::string key;
  bool wgmma = false;
  if (target.substr(0, 4) == "hip:") {
    // Prepare refuses HIP until its code generation exists; the checks
    // below are target-aware without it.
    frontend::FrontendOptions fo;
    fo.file_name = in.file_name;
    fo.entry = in.entry;
    fo.bindings = in.bindings;
    fo.limits = in.limits;
    ASSIGN_OR_RETURN(program, frontend::CompileSource(in.text, fo));
    RETURN_IF_ERROR(ir::Verify(program));
  } else {
    driver::BuildOptions options;
    options.target = std::string(target);
    options.pass_options = options_of_config;
    ASSIGN_OR_RETURN(driver::Prepared prepared, driver::Prepare(in, options));
    program = std::move(prepared.program);
    key = std::move(prepared.key);
    wgmma = driver::GemmWgmma(options);
    // Split as the build splits it (the knob, or Kiln's own split).
    RETURN_IF_ERROR(codegen::ApplySplitK(program, options.target, driver::LoweringFor(options)));
  }
  passes::PassContext ctx;
  ctx.target = std::string(target);
  ctx.gemm_wgmma = wgmma;
  for (ir::Program& kernel : ir::SplitKernels(program)) {
    RETURN_IF_ERROR(passes::RunPasses(
        kernel, {"verify", "simplify", "verify-resources", "thread-regions", "layout-inference"},
        ctx));
  }
  return key;
}

std::string Rationale(const ProgramAnalysis& a, const Config& config, const Prediction& p) {
  auto value = [&](const Tunable& t) {
    auto it = config.find(t.name);
    return it == config.end() ? t.default_value : it->second;
  };
  std::vector<std::string> tile;
  std::vector<std::string> parts;
  for (const Tunable& t : a.tunables) {
    if (t.role == Role::kBlockTile) tile.push_back(absl::StrCat(value(t)));
  }
  for (const Tunable& t : a.tunables) {
    if (t.role == Role::kReductionStep) tile.push_back(absl::StrCat(value(t)));
  }
  if (!tile.empty()) parts.push_back(absl::StrCat("tile ", absl::StrJoin(tile, "x")));
  for (const Tunable& t : a.tunables) {
    switch (t.role) {
    case Role::kPipelineDepth:
      parts.push_back(absl::StrCat(value(t), value(t) == 1 ? " stage" : " stages"));
      break;
    case Role::kThreads:
      parts.push_back(absl::StrCat(value(t), " threads"));
      break;
    case Role::kRasterPanel:
      parts.push_back(absl::StrCat("panel ", value(t)));
      break;
    case Role::kSplit:
      parts.push_back(absl::StrCat(t.name, " ", value(t)));
      break;
    default:
      break;
    }
  }
  if (!p.fits) {
    parts.push_back(absl::StrCat("over a limit by the model's count: ", p.why_not));
    return absl::StrJoin(parts, ", ");
  }
  parts.push_back(
      absl::StrFormat("%g %s (%d/SM)", p.waves, p.waves == 1 ? "wave" : "waves", p.blocks_per_sm));
  parts.push_back(absl::StrFormat("%.0f KB smem", static_cast<double>(p.smem_bytes) / 1024));
  if (p.wgmma) parts.emplace_back("wgmma");
  parts.push_back(absl::StrCat(p.bound, "-bound"));
  if (p.split > 1 && config.count(driver::kSplitKKnob) == 0) {
    parts.push_back(absl::StrCat("split-K x", p.split, " by Kiln (split-k=auto)"));
  }
  return absl::StrJoin(parts, ", ");
}

absl::StatusOr<Proposal> Propose(const ProgramAnalysis& analysis, const arch::ArchModel& arch,
                                 const PolicyOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  Proposal out;
  out.analysis = analysis;
  const ProgramAnalysis& a = out.analysis;
  out.space = DeriveSpace(a, arch, options.space);
  const std::string target = Target(arch, options);
  driver::BuildOptions build;
  build.target = target;
  build.pass_options = options.pass_options;
  if (target.rfind("hip:", 0) != 0) RETURN_IF_ERROR(driver::ValidateBuildOptions(build));
  ModelOptions model;
  model.wgmma = driver::GemmWgmma(build) && passes::TargetUsesWgmma(target);
  // Kiln splits decode-shaped GEMMs by itself on Hopper's default path
  // (split-k=auto): the model predicts that split for configs without the
  // knob where split-K can take the program at all.
  if (model.wgmma && driver::TmaWsPipeline(build) && driver::SplitKParts(build) == 0 &&
      !a.base.gemms.empty()) {
    absl::StatusOr<driver::Prepared> at_defaults =
        driver::Prepare(BindConfig(a, a.defaults), build);
    model.auto_split = at_defaults.ok() && passes::SplitKCanTake(at_defaults->program);
  }
  const int64_t size = SpaceSize(out.space);
  if (size > options.max_space) {
    return absl::InvalidArgumentError(absl::StrCat("the search space has ", size,
                                                   " configs, more than the limit of ",
                                                   options.max_space, "; declare a smaller one"));
  }
  auto note_rejection = [&](const absl::Status& s) {
    ++out.compiler_rejected;
    if (out.rejections.size() < 8) out.rejections.emplace_back(s.message());
  };
  // The first verification whose compile-time evaluation was cancelled,
  // passed its deadline or ran out of its budget: it ends the proposal (the
  // next config would run out the same way), and nothing more is verified.
  absl::Status stopped;
  // Verifies and appends; false when the compiler rejects it.
  auto admit = [&](Candidate c) {
    if (!stopped.ok()) return false;
    if (options.verify) {
      absl::StatusOr<std::string> key = VerifyConfig(a, c.config, target, options.pass_options);
      if (!key.ok()) {
        const absl::StatusCode code = key.status().code();
        if (code == absl::StatusCode::kCancelled || code == absl::StatusCode::kDeadlineExceeded ||
            code == absl::StatusCode::kResourceExhausted) {
          stopped = key.status();
          return false;
        }
        note_rejection(key.status());
        return false;
      }
      c.key = *std::move(key);
    }
    out.candidates.push_back(std::move(c));
    return true;
  };

  switch (options.strategy) {
  case Strategy::kRoller: {
    std::vector<Candidate> ranked;
    ForEachConfig(out.space, [&](const Config& c) {
      ++out.considered;
      Prediction p = Predict(a, arch, c, model);
      if (!p.fits) {
        ++out.model_rejected;
        return true;
      }
      Candidate cand;
      cand.config = c;
      cand.prediction = std::move(p);
      cand.predicted_us = cand.prediction.time_us;
      ranked.push_back(std::move(cand));
      return true;
    });
    SortByPrediction(&ranked);
    // The tile shape of a config: all tunables but pipeline depth and
    // raster panel (the split-K knob, not a tunable of the program, stays).
    // For the split picks (`tile_only`), the tile alone: not the split
    // either, nor the threads.
    auto shape_of = [&](const Config& config, bool tile_only) {
      Config shape;
      for (const auto& [name, v] : config) {
        if (tile_only && name == driver::kSplitKKnob) continue;
        const Tunable* t = a.Find(name);
        if (t && (t->role == Role::kPipelineDepth || t->role == Role::kRasterPanel ||
                  (tile_only && t->role == Role::kThreads))) {
          continue;
        }
        shape[name] = v;
      }
      return shape;
    };
    // Split-K for a GEMM whose best config leaves most SMs idle (decode
    // shapes): every ranked config's variants of 2, 4, 8 and 16 splits (the
    // knob kiln:split_k, while blocks x splits stays within 4 waves) are
    // predicted (the model shares the K loop among the splits and adds the
    // float32 partials and the reduce kernel). The best-predicted variants
    // take up to half of the top-k, one per tile; where the device
    // has wgmma, half of those are wgmma tiles (64 rows at M = 16: the
    // 16-row mma.sync tiles the model ranks near them measured slower,
    // docs/benchmarks.md, Hopper GEMM run 4). A split the program does not
    // allow fails verification like any config. Not where the build's pass
    // options fix the split (split-k=N, or 1 for none).
    std::vector<Candidate> knob_picks;
    std::set<Config> picked;
    if (options.split_k_variants && !a.base.gemms.empty() && !ranked.empty() && arch.sm_count > 0 &&
        out.space.count(driver::kSplitKKnob) == 0 && driver::SplitKParts(build) == 0 &&
        ranked[0].prediction.blocks > 0 &&
        2 * (ranked[0].prediction.blocks / ranked[0].prediction.split) <= arch.sm_count) {
      std::vector<Candidate> variants;
      for (const Candidate& base : ranked) {
        // A config Kiln splits by itself (split-k=auto) competes as it is.
        if (base.prediction.split > 1) variants.push_back(base);
        // Blocks before any split (Kiln's auto split included).
        const int64_t blocks = base.prediction.blocks / base.prediction.split;
        for (int64_t s : {2, 4, 8, 16}) {
          if (blocks * s > 4 * arch.sm_count) break;
          if (s == base.prediction.split) continue; // what the config builds to already
          Candidate v = base;
          v.config[driver::kSplitKKnob] = s;
          v.prediction = Predict(a, arch, v.config, model);
          if (!v.prediction.fits) continue;
          v.predicted_us = v.prediction.time_us;
          variants.push_back(std::move(v));
        }
      }
      SortByPrediction(&variants);
      const size_t room = static_cast<size_t>(std::max(1, options.top_k)) / 2;
      std::map<Config, int> per_tile;
      auto pick = [&](bool wgmma_only, size_t until) {
        for (const Candidate& v : variants) {
          if (knob_picks.size() >= until) return;
          if (wgmma_only && !v.prediction.wgmma) continue;
          int& of_tile = per_tile[shape_of(v.config, true)];
          if (picked.count(v.config) || of_tile >= 1) continue;
          picked.insert(v.config);
          ++of_tile;
          Candidate c = v;
          c.rationale = Rationale(a, c.config, c.prediction);
          if (c.config.count(driver::kSplitKKnob) != 0) {
            absl::StrAppend(&c.rationale, ", split-K x", c.config.at(driver::kSplitKKnob), " (",
                            c.prediction.blocks, " blocks on ", arch.sm_count, " SMs)");
          }
          knob_picks.push_back(std::move(c));
        }
      };
      if (model.wgmma && arch.wgmma_tflops > 0) pick(/*wgmma_only=*/true, room / 2);
      pick(/*wgmma_only=*/false, room);
    }
    // Knob variants of a warp-specialized GEMM whose grid has more blocks
    // than SMs: the best ranked such configs again with the knob, a quarter
    // of the top-k per knob. The model does not tell them apart from the
    // plain configs (they differ by a few percent either way); the
    // measurement does. Not for decode shapes (the split picks above), nor
    // where the build's pass options fix the option.
    const bool split_picked = !knob_picks.empty();
    const bool ws_gemm = model.wgmma && driver::TmaWsPipeline(build) && arch.sm_count > 0;
    auto fixed = [&](absl::string_view option) {
      return std::any_of(options.pass_options.begin(), options.pass_options.end(),
                         [&](const std::string& po) { return absl::StartsWith(po, option); });
    };
    auto knob_variants = [&](const std::vector<std::pair<const char*, int64_t>>& knobs,
                             const std::function<std::string(const Prediction&)>& note) {
      if (split_picked || !ws_gemm) return;
      for (const auto& [knob, value] : knobs) {
        if (out.space.count(knob) != 0) return;
      }
      const size_t room = knob_picks.size() + static_cast<size_t>(std::max(1, options.top_k)) / 4;
      for (const Candidate& base : ranked) {
        if (knob_picks.size() >= room) break;
        if (!base.prediction.wgmma || base.prediction.split > 1 ||
            base.prediction.blocks <= arch.sm_count) {
          continue;
        }
        const std::string why = note(base.prediction);
        if (why.empty()) continue;
        Candidate c = base;
        for (const auto& [knob, value] : knobs) c.config[knob] = value;
        c.rationale = Rationale(a, c.config, c.prediction);
        absl::StrAppend(&c.rationale, why);
        picked.insert(c.config);
        knob_picks.push_back(std::move(c));
      }
    };
    // Persistent tiles (kiln:persistent, passes/persistent.h): one block
    // per SM walking the tiles, with the TMA-store epilogue (kiln:tma_store)
    // unless the build fixes it: the consumers then leave a tile's stores to
    // TMA and go on to the next (docs/benchmarks.md, "Codegen 24 on an
    // H200": 1-8 % over the grid of tiles where persistent tiles alone were
    // within the noise).
    // The variants go to the best ranked configs whose stages leave a
    // quarter of a block's shared memory for the store's tile (128x256x64
    // with 3 stages, 144 KiB; not with 4, 192 KiB, whose epilogue stays the
    // threads' own: persistent tiles without the TMA store ran slower than
    // the plain grid at 8192^3, and the tuner picked them less often).
    if (options.persistent_variants && !fixed("persistent=")) {
      std::vector<std::pair<const char*, int64_t>> knobs = {{driver::kPersistentKnob, 1}};
      const bool store = !fixed("epilogue=");
      if (store) knobs.emplace_back(driver::kTmaStoreKnob, 1);
      knob_variants(knobs, [&](const Prediction& p) -> std::string {
        if (store && arch.shared_bytes_optin > 0 &&
            4 * p.smem_bytes > 3 * arch.shared_bytes_optin) {
          return "";
        }
        return absl::StrCat(", persistent (", arch.sm_count, " blocks over ", p.blocks, " tiles)");
      });
    }
    // Diversity: a first pass admits at most two configs per tile shape, so
    // near-ties of one tile in different stage counts do not fill the whole
    // top-k; a second pass fills up from the rest in rank order.
    const size_t want = static_cast<size_t>(std::max(1, options.top_k)) - knob_picks.size();
    std::map<Config, int> per_shape;
    std::vector<bool> used(ranked.size(), false);
    for (int pass = 0; pass < 2 && out.candidates.size() < want; ++pass) {
      for (size_t i = 0; i < ranked.size() && out.candidates.size() < want && stopped.ok(); ++i) {
        if (used[i] || picked.count(ranked[i].config) != 0) continue;
        const Config shape = shape_of(ranked[i].config, false);
        if (pass == 0 && per_shape[shape] >= 2) continue;
        used[i] = true;
        ++per_shape[shape];
        Candidate c = ranked[i];
        c.rationale = Rationale(a, c.config, c.prediction);
        admit(std::move(c));
      }
    }
    for (Candidate& c : knob_picks) admit(std::move(c));
    SortByPrediction(&out.candidates);
    break;
  }
  case Strategy::kGrid: {
    std::vector<Candidate> all;
    ForEachConfig(out.space, [&](const Config& c) {
      ++out.considered;
      Prediction p = Predict(a, arch, c, model);
      if (!p.fits) ++out.model_rejected;
      all.push_back(MakeCandidate(a, c, p));
      return true;
    });
    SortByPrediction(&all);
    const size_t want = options.budget > 0 ? static_cast<size_t>(options.budget) : all.size();
    for (Candidate& c : all) {
      if (out.candidates.size() >= want || !stopped.ok()) break;
      admit(std::move(c));
    }
    break;
  }
  case Strategy::kRandom: {
    const int64_t want = options.budget > 0 ? options.budget : std::max(1, options.top_k);
    std::mt19937_64 rng(options.seed);
    std::set<Config> seen;
    const int64_t attempts = std::min<int64_t>(50 * want + 100, 20 * size + 100);
    for (int64_t i = 0;
         i < attempts && stopped.ok() && static_cast<int64_t>(out.candidates.size()) < want &&
         static_cast<int64_t>(seen.size()) < size;
         ++i) {
      Config c;
      for (const auto& [name, values] : out.space) {
        c[name] = values[static_cast<size_t>(rng() % values.size())];
      }
      if (!seen.insert(c).second) continue;
      ++out.considered;
      Prediction p = Predict(a, arch, c, model);
      if (!p.fits) ++out.model_rejected;
      admit(MakeCandidate(a, c, p));
    }
    SortByPrediction(&out.candidates);
    break;
  }
  }
  if (!stopped.ok()) return stopped;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (out.candidates.empty()) {
    std::string why = out.rejections.empty() ? "" : absl::StrCat("; first: ", out.rejections[0]);
    return absl::NotFoundError(
        absl::StrCat("no config of ", out.considered, " passes verification for ", target, why));
  }
  return out;
}

absl::StatusOr<Proposal> Propose(const driver::ProgramInput& input, const arch::ArchModel& arch,
                                 const PolicyOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(ProgramAnalysis analysis, AnalyzeProgram(input, options.space));
  ASSIGN_OR_RETURN(Proposal out, Propose(analysis, arch, options));
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

absl::StatusOr<std::vector<Candidate>> ProposeCandidates(const driver::ProgramInput& input,
                                                         const arch::ArchModel& arch,
                                                         const PolicyOptions& options) {
  ASSIGN_OR_RETURN(Proposal p, Propose(input, arch, options));
  return std::move(p.candidates);
}

} // namespace kiln::roller
