// Toolchain fingerprints: the part of a cache key that says which compiler
// (and which version of Kiln's code generator) produced an artifact, so that
// upgrading either one never serves a stale binary.
//
// Thread-safety: safe to call concurrently. Each kind's fingerprint is
// computed once per process (the first call may load NVRTC or run
// `nvcc --version`) and then returned from memory.
//
// Errors: none; a toolchain that cannot be found or asked for its version
// yields "<kind>=unavailable", which no real artifact carries (compiles with
// that toolchain fail anyway).
#pragma once

#include <string>

namespace kiln::toolchain {

// Bumped by codegen whenever the code it emits changes for the same IR.
// 2: rotated GEMM main loop, per-warp cross-warp reductions, converting
// vector copies. 3: artifact metadata marks the parameters the kernel writes
// as outputs (benchmarks and tuning validate them). 4: simplify-bounds
// removes index operations that thread and loop bounds make redundant.
// 5: the wgmma path's operand writers fence toward the async proxy before
// the barrier. 6: the wgmma main loop's last iteration waits for every
// group (ptxas hoisted the epilogue above the wait after the loop).
// 7: swizzled block indices are computed in 64 bits (panel * blocks wrapped).
// 8: pass option pipeline=tma-ws: wgmma main loops on TMA loads, an mbarrier
// ring and a producer warpgroup (warp_specialize.cc); named barriers.
// 9: a warp-specialized block runs two per SM where shared memory allows
// (__launch_bounds__ minimum 2, registers moved to the consumers).
// 10: Hopper (cuda:sm_90 too, built as sm_90a) lowers gemms to wgmma and
// their main loops to TMA + warp specialization by default.
// 11: one reduction scratch array per dtype serves all of a kernel's
// reductions; shared buffers that do not fit one after another share bytes
// by lifetime (pass shared-placement).
// 12: the warp-specialized main loop fences only the warpgroup
// (wgmma_fence_tma): no proxy fence, whose MEMBAR.ALL.CTA each iteration paid.
// 13: T.use_swizzle rasterizes as TileLang does (panels of rows, every other
// one backwards), not in panels of columns.
// 14: a gemm on a K range of its shared operands (A_s[:, k0:k1]) reads that
// range; before, the plans read the whole buffers (wrong results).
// 15: a warp-specialized loop with two or more consumer warpgroups waits
// for every wgmma group and releases the stage in the same iteration.
// 16: if-chains on the thread index over whole warpgroups become T.ws
// regions (pass thread-regions); consecutive ws regions on other threads
// get no block barrier between them.
// 17: on Hopper, a gemm whose A operand is a fragment is wgmma's register
// form (the program used to fall back to mma.sync for every gemm).
// 18: split-K by default on Hopper's default path for grids of at most a
// quarter of the SMs (split-k=auto, passes::AutoSplitK).
// 19: T.tma_copy into whole column blocks of a tile is TMA (it was a copy by
// the threads).
// 20: a pipelined loop with more than one gemm or other statements beside
// them (attention) is warp-specialized too: TMA into one mbarrier ring per
// producer copy, waited for before its first reader, released after its last.
// A program whose pass_configs ask for fast math compiles with --use_fast_math.
// A warp-specialized GEMM loop on a grid of at most one block per SM waits
// for every wgmma group (no stage held back from the loads).
// 21: T.wgmma_gemm and T.gemm(wg_wait=n) leave their wgmma group in flight
// until T.wait_wgmma(n) (they waited at once); clear_accum=True clears the
// accumulator (it accumulated); a program with its own synchronization
// fences toward the async proxy only after its own shared writes; wgmma
// descriptors are an add to the shared window's base at each gemm.
// 22: fp8 (e4m3, e5m2) gemms on Hopper are wgmma (m64nNk32, both operands
// K-major, 1-byte swizzle rows of 128 elements); they were scalar.
// 23: a T.Pipelined loop under serial loops and ifs (TileLang's T.Persistent
// GEMM) is warp-specialized, its ring running on across the nest (it took
// cp.async); pass option persistent= (off by default).
// 24: pass options cluster=2 (thread-block cluster pairs whose producers
// multicast the operand tiles both blocks load) and epilogue=tma (the
// accumulator through a swizzled shared tile and TMA stores), both off by
// default.
// 25: epilogue=auto, the default: warp-specialized GEMMs store through TMA
// where the tile leaves the blocks per SM unchanged (they stored directly);
// wgmma descriptors mask the shared window's base (in a cluster it carried
// the block's rank into the leading offset: cluster=2 computed wrong tiles).
inline constexpr int kKilnCodegenVersion = 25;

// kHostCc: the CPU target's host C++ compiler (host_cc.h).
enum class ToolchainKind { kNvrtc, kNvcc, kHostCc };

// e.g. "kiln-codegen=3;nvrtc=13.0", "kiln-codegen=3;nvcc=13.0.88" or
// "kiln-codegen=3;cc=g++ (Debian 12.2.0-14) 12.2.0".
std::string ToolchainFingerprint(ToolchainKind kind);

// The fingerprint for a given toolchain version string (no caching, no
// probing); what ToolchainFingerprint formats.
std::string FormatFingerprint(ToolchainKind kind, const std::string& version);

} // namespace kiln::toolchain
