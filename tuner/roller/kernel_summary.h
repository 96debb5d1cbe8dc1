// A tile program reduced to the numbers the performance model needs: every
// integer the program's cost depends on (grid extents, threads, loop trip
// counts, pipeline depths, allocation shapes, the extents of copies, GEMMs,
// parallel loops and reductions, global tensor shapes) as one flat vector of
// "quantities", plus the structure that says how they combine (which loop
// encloses which access, which grid dimensions an access's address depends
// on, which buffers are multi-buffered by which pipelined loop).
//
// Two programs compiled from one source with different tunable values have
// the same structure and differ only in quantity values (Signature() is
// equal); ProgramAnalysis relies on that to see what each tunable controls.
//
// Extents that depend on a block index (a causal attention loop) are taken
// at the middle block of the grid. Errors: InvalidArgument for a program
// with unbound shape symbols or an extent that is not a compile-time
// integer even at the middle block.
// Thread-safety: plain data; Summarize is a pure function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/ir/ir.h"

namespace kiln::roller {

// A loop that repeats its body in time (serial, unrolled or pipelined);
// parallel and vectorized loops spread work over threads instead and count
// as element extents of what they contain.
struct SummaryLoop {
  int parent = -1; // enclosing trip loop, -1 at the kernel's top level
  ir::ForKind kind = ir::ForKind::kSerial;
  int extent_q = -1;
  int stages_q = -1; // kPipelined: its num_stages quantity
};

struct SummaryAlloc {
  std::string name;
  ir::Scope scope = ir::Scope::kShared;
  std::vector<int> dim_qs;
  int elem_bytes = 1;
  // Pipelined loops whose copies write this buffer: it holds max(stages)
  // copies of itself (as verify-resources counts it).
  std::vector<int> stages_qs;
};

// A global-memory access of a block: a copy with a global side, an atomic,
// or the loads / stores of a global buffer inside parallel loops.
struct SummaryAccess {
  int loop = -1;
  std::string buffer;
  std::vector<int> elem_qs; // element count = product of these
  int elem_bytes = 1;
  bool is_write = false;
  uint32_t grid_dims = 0; // bit d: the address depends on blockIdx d
  int inner_q = -1;       // the innermost (contiguous) extent, -1 if none
};

struct SummaryGemm {
  int loop = -1;
  int m_q = -1;
  int n_q = -1;
  int k_q = -1;
  ir::DType in_dtype = ir::DType::kFloat16;
  ir::GemmPolicy policy = ir::GemmPolicy::kSquare;
  int a_elem_bytes = 2;
  bool a_in_registers = false;
  bool transpose_a = false;
  bool transpose_b = false;
  ir::DType acc_dtype = ir::DType::kFloat32;
};

// Arithmetic on the CUDA cores: parallel-loop bodies and reductions.
struct SummaryWork {
  int loop = -1;
  std::vector<int> elem_qs;
  int ops_per_elem = 1;
};

struct KernelSummary {
  std::vector<int64_t> q;          // quantity values
  std::vector<std::string> q_what; // what each quantity is ("grid[1]", "alloc A_tile[0]")
  std::vector<bool> q_is_shape;    // a global tensor's shape
  std::vector<int> grid_qs;
  int threads_q = -1;
  int panel_q = -1; // T.use_swizzle panel size, when enabled
  std::vector<SummaryLoop> loops;
  std::vector<SummaryAlloc> allocs;
  std::vector<SummaryAccess> accesses;
  std::vector<SummaryGemm> gemms;
  std::vector<SummaryWork> work;
  // Structure only (kinds, names, nesting), no quantity values.
  std::string signature;
};

absl::StatusOr<KernelSummary> Summarize(const ir::Program& program);

} // namespace kiln::roller
