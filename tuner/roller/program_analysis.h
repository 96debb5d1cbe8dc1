// Program analysis for the tuner: which parameters of a tile program are
// tunable, what each one controls, and how every cost-relevant integer of
// the kernel (KernelSummary's quantities) depends on them.
//
// How it works, without annotations:
//  1. The entry's parameters (frontend::DescribeEntry) that the caller did
//     not bind, that are not tensors and whose default (from the signature,
//     else from the file's `# kiln: bind` line, else the declared space) is
//     an integer are the candidates. Shape parameters are the caller's: it
//     binds M, N, K, ...; T.const symbols must be bound too.
//  2. The program is compiled by the real frontend at the defaults (the
//     baseline) and once more per candidate with that candidate doubled (or
//     halved when doubling does not compile). The two kernels have the same
//     structure, so their quantity vectors line up.
//  3. Each quantity that moved is fitted, per candidate, as linear in it
//     (a tile shape), a ceiling division of an extent by it (a grid extent
//     or a trip count: ceildiv(M, block_M)), or a power law (anything else).
//     A quantity that depends on several candidates is the product of the
//     factors (separable). Evaluating a config is then a few multiplications
//     per quantity, with no compile.
//  4. Roles follow from what moved: a global tensor's shape -> kShape (not
//     tunable; the bind-line value is kept), the block's thread count ->
//     kThreads, a pipelined loop's num_stages -> kPipelineDepth, the
//     T.use_swizzle panel -> kRasterPanel, a grid extent divided by it ->
//     kBlockTile, a grid extent multiplied by it -> kSplit, a trip count
//     divided by it -> kReductionStep, else kOther.
//  5. Structure switches: a program may take another path when one tile
//     covers a whole extent (`if num_tiles > 1:` re-reads the row; with one
//     tile it is still in registers). The fits of steps 2-3 cannot see that,
//     so each block tile / reduction step is also compiled at its extent E
//     (where ceildiv(E, x) becomes 1). When that kernel's structure (its
//     signature) differs from the defaults' kernel, the analysis is redone
//     around it (the same probes, anchored at x = E) and kept as a
//     StructureSwitch; AnalysisFor() picks it for configs with x >= E.
//
// Errors: the frontend's located InvalidArgument for a program that does not
// compile at its defaults; InvalidArgument for a candidate without any
// default, unbound shape symbols, or a non-TileLang input. Every evaluation
// runs with input.limits (the budget, the caller's deadline and
// cancellation flag); one that is Cancelled, DeadlineExceeded or
// ResourceExhausted ends the analysis with its located status (it is not
// taken as a probe value that does not compile). The analysis keeps a copy
// of the input, limits included: a caller that keeps it past the life of
// the cancellation flag clears limits.cancelled.
// Thread-safety: pure functions; the result is plain data.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/driver/compile_driver.h"
#include "tuner/roller/kernel_summary.h"

namespace kiln::roller {

// One value per tunable, by name.
using Config = std::map<std::string, int64_t>;
// A declared search space: the values each named tunable may take.
using TuneSpace = std::map<std::string, std::vector<int64_t>>;

enum class Role : uint8_t {
  kBlockTile,     // tiles a spatial extent over the grid (block_M, block_N)
  kReductionStep, // the step of a loop over a reduced extent (block_K)
  kPipelineDepth, // num_stages of a T.Pipelined loop
  kThreads,       // threads per block
  kRasterPanel,   // T.use_swizzle panel size
  kSplit,         // multiplies the grid (split_k)
  kOther,         // changes the kernel in another way (kept at its default)
  kShape,         // changes a tensor's shape: a problem size, never tuned
};
std::string_view RoleName(Role role);

// How one quantity depends on one tunable.
struct SizeFactor {
  enum Kind : uint8_t { kLinear, kCeilDiv, kPower };
  int tunable = -1;
  Kind kind = kLinear;
  int64_t extent = 0;  // kCeilDiv: the divided extent
  double exponent = 1; // kPower
};

// A quantity as a function of the tunables: its baseline value times one
// factor per tunable it depends on.
struct SizeExpr {
  int64_t base = 0;
  std::vector<SizeFactor> factors;
};

struct Tunable {
  std::string name;
  Role role = Role::kOther;
  int64_t default_value = 0;
  int64_t extent = 0; // kBlockTile / kReductionStep: the extent it tiles
  std::string dim;    // that extent's name when a binding names it ("M"), else ""
  bool mma_m = false; // sizes a T.gemm's M, N or K
  bool mma_n = false;
  bool mma_k = false;
  bool contiguous = false;       // sizes the innermost extent of a global access
  std::vector<int64_t> declared; // the request's domain, empty when none
};

// One axis of the iteration space.
struct IterDim {
  std::string name; // "M" or "grid[2]" / "loop[0]" when unnamed
  int64_t extent = 0;
  bool reduction = false;
  std::string tiled_by; // the tunable, "" when not tiled
};

struct ProgramAnalysis;

// A region of the config space where the compiled kernel has another
// structure than at the defaults: `tunable` >= `from` (the extent it tiles:
// one tile covers it). `analysis` is fitted around a config in the region
// (the defaults with `tunable` = `from`); its quantity vector is its own.
struct StructureSwitch {
  std::string tunable;
  int64_t from = 0;
  std::string why; // "structure": another signature (other accesses, copies, loops)
  std::shared_ptr<const ProgramAnalysis> analysis;
};

struct ProgramAnalysis {
  std::string entry;
  // The input with every non-tuned binding resolved (the caller's plus
  // bind-line values for parameters without a default); a config's bindings
  // are added to these.
  driver::ProgramInput input;
  std::vector<Tunable> tunables; // candidates of every role, kShape included
  Config defaults;               // the baseline values of the tunables
  KernelSummary base;            // the kernel at the defaults
  std::vector<SizeExpr> exprs;   // one per base.q
  std::vector<IterDim> iteration_space;
  std::vector<StructureSwitch> switches; // regions with their own analysis
  std::vector<std::string> notes;        // what was decided and why (for --verbose output)

  // The tunables the policy may change (roles other than kShape / kOther,
  // plus kOther ones with a declared domain).
  std::vector<const Tunable*> Tuned() const;
  const Tunable* Find(std::string_view name) const;
};

absl::StatusOr<ProgramAnalysis> AnalyzeProgram(const driver::ProgramInput& input,
                                               const TuneSpace& declared = {});

// Every quantity of the analysed kernel at `config` (missing names take
// their defaults). Exact for linear and single ceil-div dependencies.
// The vector lines up with `analysis.base`; for a config inside a structure
// switch, evaluate AnalysisFor(analysis, config) instead.
std::vector<int64_t> EvalQuantities(const ProgramAnalysis& analysis, const Config& config);

// The analysis that describes `config`: the region of the first structure
// switch the config lies in (recursively), else `analysis` itself.
const ProgramAnalysis& AnalysisFor(const ProgramAnalysis& analysis, const Config& config);

// The input's bindings plus the config's, as the compiler takes them.
driver::ProgramInput BindConfig(const ProgramAnalysis& analysis, const Config& config);

} // namespace kiln::roller
