#include "tuner/roller/perf_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/driver/compile_driver.h"
#include "compiler/ir/dtype.h"
#include "compiler/passes/layout_inference.h"
#include "compiler/passes/split_k.h"

namespace kiln::roller {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return b <= 0 ? 0 : (a + b - 1) / b; }

// The MMA k-step of an input dtype (m16n8k16 for 16-bit, k32 for int8, k8
// for tf32); 1 for the scalar paths.
int64_t MmaK(ir::DType t) {
  switch (t) {
  case ir::DType::kFloat16:
  case ir::DType::kBFloat16:
    return 16;
  case ir::DType::kInt8:
  case ir::DType::kUInt8:
    return 32;
  case ir::DType::kFloat32:
    return 8;
  default:
    return 1;
  }
}

// The warpgroup grid of a gemm the compiler lowers to wgmma (the checks of
// layout inference's WgmmaGemmGroups on the summary's numbers), or nullopt.
std::optional<std::pair<int64_t, int64_t>> WgmmaTiling(const SummaryGemm& g, int64_t m, int64_t n,
                                                       int64_t k, int64_t threads) {
  if (!passes::WgmmaInputType(g.in_dtype) || g.acc_dtype != ir::DType::kFloat32 ||
      g.a_in_registers) {
    return std::nullopt;
  }
  const int64_t eb = ir::DTypeBits(g.in_dtype) / 8;
  if (k % passes::WgmmaKStep(g.in_dtype) != 0 ||
      !passes::WgmmaOperandForms(g.in_dtype, g.a_in_registers, g.transpose_a, g.transpose_b)) {
    return std::nullopt;
  }
  const int64_t a_cols = g.transpose_a ? m : k;
  const int64_t b_cols = g.transpose_b ? k : n;
  const int64_t wa = passes::WgmmaBlockElems(a_cols, eb), wb = passes::WgmmaBlockElems(b_cols, eb);
  if (wa == 0 || wb == 0 || (g.transpose_a && m % wa != 0)) return std::nullopt;
  return passes::WgmmaGroups(m, n, threads, g.transpose_b ? 0 : wb);
}

Prediction Misfit(Prediction p, std::string why) {
  p.fits = false;
  p.why_not = std::move(why);
  p.time_us = std::numeric_limits<double>::infinity();
  return p;
}

} // namespace

Prediction Predict(const ProgramAnalysis& analysis, const arch::ArchModel& arch,
                   const Config& config, const ModelOptions& options) {
  // Past a structure switch (one tile covers the row) the kernel is another
  // one, with its own quantities.
  const ProgramAnalysis& a = AnalysisFor(analysis, config);
  const KernelSummary& s = a.base;
  std::vector<int64_t> q = EvalQuantities(a, config);
  Prediction p;
  // Split-K (the knob kiln:split_k, pass split-k): `split` blocks share each
  // output tile's K loop (the outermost loop around the first gemm), each
  // writing float32 partials that a second kernel sums.
  int64_t split = 1;
  int k_loop = s.gemms.empty() ? -1 : s.gemms[0].loop;
  while (k_loop >= 0 && s.loops[k_loop].parent >= 0) k_loop = s.loops[k_loop].parent;
  if (k_loop >= 0) {
    auto it = config.find(driver::kSplitKKnob);
    if (it != config.end()) {
      split = std::max<int64_t>(1, it->second);
    } else if (options.auto_split) {
      int64_t blocks = 1;
      for (int gq : s.grid_qs) blocks *= std::max<int64_t>(1, q[gq]);
      split = passes::AutoSplitParts(blocks, q[s.loops[k_loop].extent_q], passes::kHopperSms);
    }
    if (split > 1) q[s.loops[k_loop].extent_q] = CeilDiv(q[s.loops[k_loop].extent_q], split);
  }
  p.split = split;

  // 1. Launch shape and per-block resources (the same counting as
  //    verify-resources, so a config over a limit never reaches the compiler).
  p.blocks = 1;
  std::vector<int64_t> grid;
  for (int gq : s.grid_qs) {
    grid.push_back(std::max<int64_t>(1, q[gq]));
    p.blocks *= grid.back();
  }
  // The split is a grid dimension of its own, which every access depends on
  // (each part reads its own K range and writes its own partials).
  const size_t split_dim = grid.size();
  if (split > 1) {
    grid.push_back(split);
    p.blocks *= split;
  }
  p.threads = std::max<int64_t>(1, q[s.threads_q]);
  if (p.threads > arch.max_threads_per_block) {
    return Misfit(p, absl::StrCat("threads ", p.threads, " > ", arch.max_threads_per_block));
  }
  if (p.threads % arch.warp_size != 0 && arch.vendor != arch::Vendor::kCpu) {
    return Misfit(p, absl::StrCat("threads ", p.threads, " is not a multiple of the warp size"));
  }
  for (size_t d = 1; d < grid.size(); ++d) {
    if (grid[d] > 65535) return Misfit(p, absl::StrCat("grid[", d, "] ", grid[d], " > 65535"));
  }
  int64_t frag_bytes = 0;
  int64_t local_bytes = 0;
  for (const SummaryAlloc& al : s.allocs) {
    int64_t bytes = al.elem_bytes;
    for (int dq : al.dim_qs) bytes *= std::max<int64_t>(1, q[dq]);
    if (al.scope == ir::Scope::kShared || al.scope == ir::Scope::kSharedDyn) {
      int64_t stages = 1;
      for (int sq : al.stages_qs) stages = std::max<int64_t>(stages, q[sq]);
      p.smem_bytes += bytes * stages;
    } else if (al.scope == ir::Scope::kFragment) {
      frag_bytes += bytes;
    } else {
      local_bytes += bytes;
    }
  }
  if (p.smem_bytes > arch.shared_bytes_optin) {
    return Misfit(p, absl::StrCat("shared memory ", p.smem_bytes, " > ", arch.shared_bytes_optin));
  }
  const int64_t reg_floor = CeilDiv(frag_bytes, p.threads * 4) + CeilDiv(local_bytes, 4);
  if (reg_floor > arch.registers_per_thread) {
    return Misfit(p, absl::StrCat("at least ", reg_floor, " registers per thread > ",
                                  arch.registers_per_thread));
  }
  // wgmma for all gemms or for none (the compiler's rule).
  p.wgmma = options.wgmma && arch.wgmma_tflops > 0 && !s.gemms.empty();
  for (const SummaryGemm& g : s.gemms) {
    p.wgmma = p.wgmma && WgmmaTiling(g, q[g.m_q], q[g.n_q], q[g.k_q], p.threads).has_value();
  }
  // What ptxas adds to the fragments: operand fragments, addresses, loop
  // state (Kiln's 256x128 GEMM tile with 256 threads: 128 accumulator
  // registers, 252 in all). wgmma reads its operands from shared memory:
  // 128 accumulators and 164 in all at 128x256 over 256 threads, 64 and 100
  // at 128x128 (docs/benchmarks.md).
  p.registers = static_cast<int>(std::min<int64_t>(
      arch.registers_per_thread, p.wgmma ? reg_floor + 36 : reg_floor + reg_floor / 2 + 32));

  // MMA shapes: the warp grid must tile the accumulator with 16x8 atoms and
  // K must be a multiple of the instruction's k-step.
  const int64_t warps = std::max<int64_t>(1, p.threads / arch.warp_size);
  double smem_read_per_block = 0;
  double warp_weighted_flops = 0; // MMA flops divided by their warp-tile efficiency
  for (const SummaryGemm& g : s.gemms) {
    const int64_t m = q[g.m_q], n = q[g.n_q], k = q[g.k_q];
    if (p.wgmma) {
      // One m64nNk16 instruction per warpgroup atom reads A and B from shared
      // memory. Narrow warpgroup tiles pay more per flop (issue, descriptor
      // arithmetic, waits): 128x128 over two warpgroups (64x128 each)
      // measured 416-450 TFLOP/s against 520-553 at 64x256 each.
      const auto [gm, gn] = *WgmmaTiling(g, m, n, k, p.threads);
      const double group_n = static_cast<double>(n) / static_cast<double>(gn);
      const double eff = std::min(1.0, 0.6 + 0.4 * group_n / 256.0);
      double trips = 1;
      for (int l = g.loop; l >= 0; l = s.loops[l].parent) trips *= q[s.loops[l].extent_q];
      warp_weighted_flops += 2.0 * m * n * k * trips / eff;
      const double a_reads = static_cast<double>(m) * k * gn;
      const double b_reads = static_cast<double>(n) * k * gm;
      smem_read_per_block += (a_reads + b_reads) * g.a_elem_bytes * trips;
      continue;
    }
    {
      auto w = passes::GemmWarps(m, n, warps, g.policy);
      if (!w.ok()) return Misfit(p, absl::StrCat("gemm ", m, "x", n, ": ", w.status().message()));
      if (k % MmaK(g.in_dtype) != 0) {
        return Misfit(p, absl::StrCat("gemm K ", k, " is not a multiple of ", MmaK(g.in_dtype)));
      }
      // Small warp tiles spend issue slots on ldmatrix and address math
      // instead of MMAs: efficiency 2 / (1 + 32 (1/warp_m + 1/warp_n)),
      // 1 at Kiln's 64x64 warp tile where mma_efficiency was measured, 0.8
      // at 64x32 (measured 290-347 vs ~400 TFLOP/s, docs/benchmarks.md).
      const double warp_m = static_cast<double>(m) / static_cast<double>(w->first);
      const double warp_n = static_cast<double>(n) / static_cast<double>(w->second);
      const double eff = std::min(1.0, 2.0 / (1.0 + 32.0 * (1.0 / warp_m + 1.0 / warp_n)));
      int64_t gemm_trips = 1;
      for (int l = g.loop; l >= 0; l = s.loops[l].parent) gemm_trips *= q[s.loops[l].extent_q];
      const double flops = 2.0 * m * n * k * static_cast<double>(gemm_trips);
      warp_weighted_flops += flops / eff;
      // Each warp reads its rows of A and columns of B once per k-step.
      const double a_reads = g.a_in_registers ? 0.0 : static_cast<double>(m) * k * w->second;
      const double b_reads = static_cast<double>(n) * k * w->first;
      int64_t trips = 1;
      for (int l = g.loop; l >= 0; l = s.loops[l].parent) trips *= q[s.loops[l].extent_q];
      smem_read_per_block += (a_reads + b_reads) * g.a_elem_bytes * trips;
    }
  }

  // 2. Occupancy.
  const int64_t regs_per_block =
      CeilDiv(p.registers, 8) * 8 * CeilDiv(p.threads, arch.warp_size) * arch.warp_size;
  int64_t bps = arch.max_blocks_per_sm;
  bps = std::min<int64_t>(bps, arch.max_threads_per_sm / p.threads);
  if (regs_per_block > 0) bps = std::min<int64_t>(bps, arch.registers_per_sm / regs_per_block);
  if (p.smem_bytes > 0) {
    // One KB per block is reserved by the CUDA runtime on sm_80+.
    bps = std::min<int64_t>(bps, arch.shared_bytes_per_sm / (p.smem_bytes + 1024));
  }
  if (bps < 1) {
    return Misfit(p, absl::StrCat("no block fits on an SM (", p.registers, " registers x ",
                                  p.threads, " threads, ", p.smem_bytes, " B shared)"));
  }
  p.blocks_per_sm = static_cast<int>(bps);
  const int64_t sms = std::max(1, arch.sm_count);
  const int64_t concurrent = sms * bps;
  p.waves = static_cast<double>(CeilDiv(p.blocks, concurrent));
  const double blocks_per_sm_total = static_cast<double>(CeilDiv(p.blocks, sms));

  // 3. Work and traffic per block.
  auto trips_of = [&](int loop) {
    double t = 1;
    for (int l = loop; l >= 0; l = s.loops[l].parent)
      t *= static_cast<double>(q[s.loops[l].extent_q]);
    return t;
  };
  double mma_flops_block = 0;
  double tensor_peak = 0; // TFLOP/s of the first GEMM's input dtype
  for (const SummaryGemm& g : s.gemms) {
    mma_flops_block += 2.0 * q[g.m_q] * q[g.n_q] * q[g.k_q] * trips_of(g.loop);
    if (tensor_peak == 0) tensor_peak = arch::TensorTflops(arch, ir::DTypeName(g.in_dtype));
  }
  double alu_ops_block = 0;
  for (const SummaryWork& w : s.work) {
    double elems = w.ops_per_elem;
    for (int eq : w.elem_qs) elems *= static_cast<double>(q[eq]);
    alu_ops_block += elems * trips_of(w.loop);
  }
  double global_block = 0;     // bytes per block, loads and stores
  double loop_bytes_block = 0; // bytes per block fetched per trip of the innermost loop
  double smem_write_block = 0;
  int64_t stages = 1;
  bool has_trip_loop = false;
  // Per-wave unique bytes: an access whose address ignores grid dimension d
  // is shared by the wave's blocks along d.
  std::vector<int64_t> wave(grid.size(), 1);
  {
    const int64_t w = std::min<int64_t>(concurrent, p.blocks);
    int64_t left = w;
    if (s.panel_q >= 0 && grid.size() >= 2) {
      // Panels of `panel` block rows (grid y), walked column by column.
      wave[1] = std::min<int64_t>(grid[1], std::max<int64_t>(1, q[s.panel_q]));
      wave[0] = std::min<int64_t>(grid[0], CeilDiv(left, wave[1]));
      left = CeilDiv(left, wave[0] * wave[1]);
      for (size_t d = 2; d < grid.size(); ++d) {
        wave[d] = std::min<int64_t>(grid[d], left);
        left = CeilDiv(left, wave[d]);
      }
    } else {
      for (size_t d = 0; d < grid.size(); ++d) {
        wave[d] = std::min<int64_t>(grid[d], left);
        left = CeilDiv(left, wave[d]);
      }
    }
  }
  double dram_wave = 0;
  // The part of dram_wave that blocks share (read once for several blocks
  // while it sits in L2), with what it would cost unshared.
  double shared_wave = 0, shared_wave_unshared = 0;
  double live_wave = 0; // the shared bytes L2 must hold at a time
  auto stages_of = [&](int loop) {
    int64_t st = 1;
    for (int l = loop; l >= 0; l = s.loops[l].parent) {
      if (s.loops[l].stages_q >= 0) st = std::max<int64_t>(st, q[s.loops[l].stages_q]);
    }
    return st;
  };
  // Split-K: the float32 partials all blocks write, and the output the
  // reduce kernel writes.
  double partial_bytes = 0, out_bytes = 0;
  for (const SummaryAccess& ac : s.accesses) {
    double bytes = split > 1 && ac.is_write ? 4 : ac.elem_bytes;
    for (int eq : ac.elem_qs) bytes *= static_cast<double>(q[eq]);
    const double trips = trips_of(ac.loop);
    if (split > 1 && ac.is_write) {
      const double all = bytes * trips * static_cast<double>(p.blocks);
      partial_bytes += all;
      out_bytes += all / static_cast<double>(split) * ac.elem_bytes / 4;
    }
    global_block += bytes * trips;
    if (ac.loop >= 0 && !ac.is_write) {
      loop_bytes_block += bytes;
      has_trip_loop = true;
      for (int l = ac.loop; l >= 0; l = s.loops[l].parent) {
        if (s.loops[l].stages_q >= 0) stages = std::max<int64_t>(stages, q[s.loops[l].stages_q]);
      }
    }
    if (!ac.is_write) smem_write_block += bytes * trips;
    double sharers = 1;
    for (size_t d = 0; d < grid.size(); ++d) {
      if (d != split_dim && !(ac.grid_dims & (1u << d))) sharers *= static_cast<double>(wave[d]);
    }
    const double wave_blocks = static_cast<double>(std::min<int64_t>(concurrent, p.blocks));
    const double all = bytes * trips * wave_blocks;
    // What must sit in L2 at once for the sharing to happen: a loop's
    // tiles for the stages in flight (a wave's blocks start together and
    // walk the loop at about the same pace), or all of a loop-free access.
    const double live = ac.loop >= 0 && !ac.is_write
                            ? bytes * static_cast<double>(std::max<int64_t>(1, stages_of(ac.loop)))
                            : bytes * trips;
    if (!ac.is_write && sharers > 1) live_wave += live * wave_blocks / sharers;
    if (ac.is_write || sharers <= 1) {
      dram_wave += all;
    } else {
      dram_wave += all / sharers;
      shared_wave += all / sharers;
      shared_wave_unshared += all;
    }
  }
  if (!has_trip_loop) loop_bytes_block = global_block;
  p.stages = stages;

  // 4. Times (µs).
  const double waves_exact = static_cast<double>(p.blocks) / static_cast<double>(concurrent);
  p.mma_flops = mma_flops_block * static_cast<double>(p.blocks);
  p.l2_bytes = static_cast<int64_t>(global_block * static_cast<double>(p.blocks));
  const double l2_wave_cap = static_cast<double>(arch.l2_bytes);
  // A wave whose shared bytes in use at a time overflow L2 loses the
  // sharing between its blocks (in proportion, up to reading every shared
  // byte once per block); what no two blocks share streams from DRAM once
  // either way. In use at a time: the pipeline stages of loop tiles, not
  // the whole K extent the wave walks (M = 128 x N = 14336 x K = 4096 at
  // 64x128x64: both block rows read each 117 MB B panel at once, and the
  // kernel measured at the speed of reading B once, 47.6 us on an H100).
  double wave_bytes = dram_wave;
  if (l2_wave_cap > 0 && live_wave > l2_wave_cap) {
    wave_bytes +=
        std::min(shared_wave_unshared, shared_wave * live_wave / l2_wave_cap) - shared_wave;
  }
  const double dram =
      std::min(static_cast<double>(p.l2_bytes), wave_bytes * std::max(1.0, waves_exact));
  p.dram_bytes = static_cast<int64_t>(std::min(dram, static_cast<double>(p.l2_bytes)));

  // Blocks an SM actually holds at once: the occupancy limit, or fewer when
  // the grid has fewer blocks than SMs x that limit (128 blocks on 132 SMs
  // are one per SM however many would fit).
  const double resident_blocks = std::min(static_cast<double>(bps), blocks_per_sm_total);
  const double resident_warps = resident_blocks * static_cast<double>(warps);
  // Fewer than two warps per scheduler (8 per SM) leave the pipes idle
  // between dependent instructions.
  // wgmma is issued asynchronously by a whole warpgroup: one warpgroup per
  // SM keeps the tensor cores as busy as two (128 x 14336 x 4096 at
  // 128x128x64, 5 stages: 47.6 us with 128 threads, 48.0 with 256).
  const double issue = p.wgmma ? 1.0 : std::min(1.0, 0.6 + 0.05 * resident_warps);
  if (mma_flops_block > 0) {
    const double peak = p.wgmma           ? arch.wgmma_tflops
                        : tensor_peak > 0 ? tensor_peak * arch.mma_efficiency
                                          : arch.fp32_tflops;
    const double per_sm = std::max(1e-9, peak) * 1e12 / static_cast<double>(sms) * issue;
    p.compute_us = blocks_per_sm_total * warp_weighted_flops / per_sm * 1e6;
  }
  // Each trip of a loop that feeds MMAs ends at a barrier (and a wait for
  // its async copies) that no warp can overlap: ~40 SM cycles per trip.
  if (mma_flops_block > 0 && arch.sm_clock_mhz > 0) {
    double trips = 0;
    for (const SummaryGemm& g : s.gemms) trips = std::max(trips, trips_of(g.loop));
    p.compute_us += blocks_per_sm_total * trips * 40.0 / arch.sm_clock_mhz;
  }
  if (alu_ops_block > 0 && arch.fp32_tflops > 0) {
    // fp32 peak counts an FMA as two operations; one op here is one instruction.
    const double per_sm = arch.fp32_tflops * 1e12 / 2 / static_cast<double>(sms) * issue;
    p.alu_us = blocks_per_sm_total * alu_ops_block / per_sm * 1e6;
  }
  if (arch.smem_gbs > 0) {
    const double per_sm = arch.smem_gbs * 1e9 / static_cast<double>(sms);
    p.smem_us = blocks_per_sm_total * (smem_read_per_block + smem_write_block) / per_sm * 1e6;
  }
  if (arch.l2_gbs > 0) p.l2_us = static_cast<double>(p.l2_bytes) / (arch.l2_gbs * 1e9) * 1e6;
  if (arch.dram_gbs > 0)
    p.dram_us = static_cast<double>(p.dram_bytes) / (arch.dram_gbs * 1e9) * 1e6;
  // Little's law: with s stages a block keeps s-1 loads in flight; a wgmma
  // loop keeps one group of MMAs in flight from 3 stages on and its copies
  // one stage fewer ahead (the compiler's LowerWgmmaLoop).
  const double latency_s = arch.dram_latency_ns * 1e-9;
  const int64_t ahead = stages - 1 - (p.wgmma && stages >= 3 ? 1 : 0);
  const double inflight =
      resident_blocks * loop_bytes_block * static_cast<double>(std::max<int64_t>(1, ahead));
  if (inflight > 0) {
    const double sm_bytes = blocks_per_sm_total * global_block;
    p.latency_us = sm_bytes / (inflight / latency_s) * 1e6;
  }
  struct Term {
    double us;
    const char* name;
  };
  const Term terms[] = {{p.compute_us, "compute"}, {p.alu_us, "alu"},   {p.smem_us, "smem"},
                        {p.l2_us, "l2"},           {p.dram_us, "dram"}, {p.latency_us, "latency"}};
  const Term* top = &terms[0];
  for (const Term& t : terms) {
    if (t.us > top->us) top = &t;
  }
  p.bound = top->name;
  // The other limits do not hide entirely behind the top one: a quarter of
  // the second largest adds to it. Where compute and memory are close
  // (decode GEMMs split into few parts) the kernel runs slower than either
  // alone: 64x128x64 at 16 x 4096 x 4096 measured 17.9 us split in 2
  // (compute, latency and DRAM terms about equal) and 14.9 us split in 4
  // (DRAM alone on top) on an H100 (bench/model_fit.py).
  double second = 0;
  for (const Term& t : terms) {
    if (&t != top) second = std::max(second, t.us);
  }
  double main = top->us + 0.25 * second;
  if (has_trip_loop && stages <= 1) {
    // Not multi-buffered: loads and math of one tile take turns.
    const double work = std::max({p.compute_us, p.alu_us, p.smem_us});
    const double memory = std::max({p.l2_us, p.dram_us, p.latency_us});
    main = work + memory;
  }
  p.overhead_us = arch.launch_overhead_us + p.waves * arch.dram_latency_ns * 1e-3;
  if (split > 1) {
    // The reduction: a latency (the last block of each tile sums after the
    // tile's other blocks finished, the tiles' last blocks side by side;
    // with split-k-reduce=kernel a second kernel launched right behind the
    // first, its launch overlapping that kernel's run), reading the
    // partials (just written: from L2 where they fit) and writing the
    // output.
    const bool fits_l2 = arch.l2_bytes > 0 && partial_bytes <= static_cast<double>(arch.l2_bytes);
    const double read_gbs = fits_l2 && arch.l2_gbs > 0 ? arch.l2_gbs : arch.dram_gbs;
    double reduce_us = arch.dram_latency_ns * 1e-3;
    if (read_gbs > 0) reduce_us += partial_bytes / (read_gbs * 1e9) * 1e6;
    if (arch.dram_gbs > 0) reduce_us += out_bytes / (arch.dram_gbs * 1e9) * 1e6;
    p.overhead_us += reduce_us;
  }
  p.time_us = main + p.overhead_us;
  return p;
}

} // namespace kiln::roller
