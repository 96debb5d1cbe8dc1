// The tuner's candidate generator: from a tile program, its bindings and a
// hardware model to a ranked list of configs, each verified by the real
// compiler (frontend, IR verifier, verify-resources and layout inference
// for the arch's target) before it is proposed, so a config over a
// resource limit or one the MMA atoms cannot tile never reaches a GPU.
//
// Strategies:
//   roller: enumerate the hardware-aligned space (DeriveSpace: MMA-aligned
//           block tiles and k-steps, 128-byte rows for contiguous tiles,
//           pipeline depths, thread counts, raster panels), drop what the
//           model says does not fit, rank by predicted time, verify in that
//           order until top_k pass.
//   grid:   every config of the declared space (the derived one for names
//           not declared), each verified; budget = the most configs returned
//           (0: all), best predicted first.
//   random: `budget` distinct configs drawn from the same space with a
//           seeded generator (same seed, same configs), each verified.
//
// Errors: the analysis's (InvalidArgument for a program that does not compile
// at its defaults, undeclared defaults, unbound shapes); InvalidArgument for
// a grid space of more than max_space configs; NotFound when no config
// passes verification. Every compile-time evaluation runs with the input's
// limits (ProgramInput::limits: budget, deadline, cancellation flag); one
// that is Cancelled, DeadlineExceeded or ResourceExhausted ends the
// proposal with its status instead of rejecting one config.
// Thread-safety: pure functions (the compiler calls are thread-safe).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compiler/driver/compile_driver.h"
#include "tuner/arch/arch_model.h"
#include "tuner/roller/perf_model.h"
#include "tuner/roller/program_analysis.h"

namespace kiln::roller {

enum class Strategy : uint8_t { kRoller, kGrid, kRandom };
absl::StatusOr<Strategy> ParseStrategy(std::string_view name);
std::string_view StrategyName(Strategy s);

struct PolicyOptions {
  Strategy strategy = Strategy::kRoller;
  int top_k = 10; // roller: candidates returned
  int budget = 0; // grid / random: configs returned (0: grid all, random top_k)
  uint64_t seed = 1;
  TuneSpace space; // declared domains; names not declared use the derived ones
  // Compiler target for verification; empty: the arch's (arch.target).
  std::string target;
  // Kiln pass options of the builds ("gemm=wgmma"): verification and the
  // candidates' keys use them, and the model predicts the kernel they make
  // (wgmma on cuda:sm_90a). InvalidArgument for an unknown one.
  std::vector<std::string> pass_options;
  bool verify = true; // false: model only (tests of the model)
  // Roller: add split-K variants (kiln:split_k) of the best config of a
  // GEMM whose grid leaves most SMs idle (Propose).
  bool split_k_variants = true;
  // Roller: add persistent variants (kiln:persistent = 1) of the best
  // warp-specialized configs of a GEMM with more blocks than SMs (Propose).
  bool persistent_variants = true;
  int64_t max_space = 200000; // grid / roller: refuse spaces larger than this
};

struct Candidate {
  Config config;
  double predicted_us = 0;
  std::string rationale; // "tile 128x256x64, 3 stages, 256 threads, 2 waves, compute-bound"
  Prediction prediction;
  std::string key; // the compiler's cache key of the bound program ("" for HIP targets)
};

struct Proposal {
  ProgramAnalysis analysis;
  TuneSpace space;                   // what was enumerated or sampled
  std::vector<Candidate> candidates; // best predicted first
  int64_t considered = 0;            // configs the model evaluated
  int64_t model_rejected = 0;        // over a limit by the model's count
  int64_t compiler_rejected = 0;
  std::vector<std::string> rejections; // the first few compiler messages
  double seconds = 0;                  // wall time of the whole proposal
};

// The values the roller enumerates for each tuned parameter: a declared
// domain where given, else one derived from its role, the arch and the
// extent it tiles (the default is always included).
TuneSpace DeriveSpace(const ProgramAnalysis& analysis, const arch::ArchModel& arch,
                      const TuneSpace& declared = {});

// Compiles `config` through Prepare (CUDA / CPU targets) or the frontend
// (HIP) and the verification passes for `target` with `pass_options`;
// returns the cache key ("" without Prepare) or the compiler's located
// error.
absl::StatusOr<std::string> VerifyConfig(const ProgramAnalysis& analysis, const Config& config,
                                         std::string_view target,
                                         const std::vector<std::string>& pass_options = {});

// One line for a config and its prediction.
std::string Rationale(const ProgramAnalysis& analysis, const Config& config,
                      const Prediction& prediction);

absl::StatusOr<Proposal> Propose(const ProgramAnalysis& analysis, const arch::ArchModel& arch,
                                 const PolicyOptions& options);

// AnalyzeProgram (with options.space declared) then Propose; the entry point
// for the daemon's Tune job.
absl::StatusOr<Proposal> Propose(const driver::ProgramInput& input, const arch::ArchModel& arch,
                                 const PolicyOptions& options);

// The same, candidates only.
absl::StatusOr<std::vector<Candidate>> ProposeCandidates(const driver::ProgramInput& input,
                                                         const arch::ArchModel& arch,
                                                         const PolicyOptions& options);

} // namespace kiln::roller
