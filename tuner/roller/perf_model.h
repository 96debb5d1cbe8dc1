// The micro-performance model: predicted time of one config of an analysed
// program on one hardware model, from traffic per memory level over its
// bandwidth and work over its throughput. No compile, no GPU: a config is
// a few hundred arithmetic operations (see docs/tuning.md for the
// equations).
//
//  blocks      = product of the grid extents; per SM: occupancy from shared
//                memory (stages included), registers and threads
//  t_compute   = ceil(blocks / SMs) * MMA flops per block / (tensor peak *
//                mma_efficiency / SMs), scaled down when few warps are
//                resident (the tensor pipe needs several warps per scheduler)
//  t_alu       = the same for CUDA-core work (parallel loops, reductions)
//  t_smem      = ceil(blocks / SMs) * shared-memory bytes per block (tile
//                writes + the warps' operand reads) / per-SM bank bandwidth
//  t_l2        = global bytes of all blocks / L2 bandwidth
//  t_dram      = unique bytes touched per wave (blocks that share an
//                operand row/column read it once while it sits in L2, which
//                must hold the tiles of the stages in flight) * waves / DRAM
//                bandwidth
//  t_latency   = Little's law: bytes one SM must fetch / (bytes it keeps in
//                flight, = stages-1 tiles per resident block / DRAM latency)
//  time        = launch overhead + max(t_*) + a quarter of the second largest
//                t_* (a sum of the compute and memory sides when the loop is
//                not multi-buffered) + one latency per wave for the
//                pipeline's fill
//  split-K     = (config knob kiln:split_k = s) blocks x s, the K loop / s
//                per block, float32 partials written, and the reduce kernel:
//                a latency plus reading the partials (from L2 where they fit)
//                and writing the output
//
// Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <string>

#include "tuner/arch/arch_model.h"
#include "tuner/roller/program_analysis.h"

namespace kiln::roller {

struct Prediction {
  bool fits = true;    // false: over a limit (why_not says which); time is +inf
  std::string why_not; // "shared memory 245760 > 232448", ...
  double time_us = 0;
  double compute_us = 0;
  double alu_us = 0;
  double smem_us = 0;
  double l2_us = 0;
  double dram_us = 0;
  double latency_us = 0;
  double overhead_us = 0;
  std::string bound; // "compute", "alu", "smem", "l2", "dram", "latency"
  int64_t blocks = 0;
  int blocks_per_sm = 0;
  double waves = 0; // blocks / (SMs * blocks_per_sm), rounded up
  int64_t threads = 0;
  int64_t stages = 1;     // pipeline depth of the loop that feeds the block
  int64_t smem_bytes = 0; // per block, pipeline stages included
  int registers = 0;      // estimated per thread
  int64_t dram_bytes = 0; // whole kernel
  int64_t l2_bytes = 0;   // whole kernel (global loads and stores)
  double mma_flops = 0;   // whole kernel, padding of ragged tiles included
  bool wgmma = false;     // the gemms are predicted as wgmma (ModelOptions)
  int64_t split = 1;      // split-K parts (the knob, or the compiler's auto split)
};

// How the candidates are compiled, where it changes the kernel.
struct ModelOptions {
  // The build asks for wgmma (cuda:sm_90a, pass option gemm=wgmma): a
  // config whose every gemm wgmma can tile (the compiler's rule, mirrored
  // here) is predicted at arch.wgmma_tflops with warpgroup tiles; one it
  // cannot tile falls back to mma.sync, as the compiler does.
  bool wgmma = false;
  // The build leaves split-K to Kiln (pass option split-k=auto, the default)
  // on Hopper's default path and split-K can take the program: a config
  // without the kiln:split_k knob is predicted split as the compiler will
  // split it (passes::AutoSplitParts).
  bool auto_split = false;
};

Prediction Predict(const ProgramAnalysis& analysis, const arch::ArchModel& arch,
                   const Config& config, const ModelOptions& options = {});

} // namespace kiln::roller
