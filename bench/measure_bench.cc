// The worker's output validation (measure::CompareOutput) against reading the
// same two buffers with memcmp, in the same run: an fp16 output of
// 128 x 14336 (a tuning candidate of the 128 x 14336 x 4096 GEMM) and of
// 16 x 4096, on all hardware threads (at most 16, as the worker) and on one.
//
//   measure_bench [--benchmark_repetitions=5 ...]   (Google Benchmark flags)
#include <cstring>
#include <random>
#include <string>

#include "benchmark/benchmark.h"
#include "compiler/tools/kernel_inputs.h"
#include "kiln/cpu/types.h"
#include "tuner/measure/output_compare.h"

namespace {

struct Pair {
  kiln::tools::NpyArray got;
  std::string want;
};

Pair MakePair(int64_t rows, int64_t cols) {
  Pair p;
  p.got.dtype = kiln::ir::DType::kFloat16;
  p.got.shape = {rows, cols};
  const int64_t n = rows * cols;
  p.got.data.resize(static_cast<size_t>(n) * 2);
  p.want.resize(p.got.data.size());
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-20, 20);
  for (int64_t i = 0; i < n; ++i) {
    const float v = u(rng);
    const uint16_t a = kiln::rt::float_to_half(v).bits;
    const uint16_t b = kiln::rt::float_to_half(v * 1.001f).bits; // within tolerance
    std::memcpy(&p.got.data[static_cast<size_t>(i) * 2], &a, 2);
    std::memcpy(&p.want[static_cast<size_t>(i) * 2], &b, 2);
  }
  return p;
}

void BM_CompareOutput(benchmark::State& state) {
  const Pair p = MakePair(state.range(0), state.range(1));
  const int threads = static_cast<int>(state.range(2));
  for (auto _ : state) {
    kiln::v1::ValidateResponse r;
    if (!kiln::measure::CompareOutput("C", p.got, p.want, 0, 0, &r, threads).ok() || !r.ok()) {
      state.SkipWithError("comparison failed");
      return;
    }
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0) * state.range(1));
}
BENCHMARK(BM_CompareOutput)
    ->Args({128, 14336, 0})
    ->Args({128, 14336, 1})
    ->Args({16, 4096, 0})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// The peer: two equal buffers of the same size read to the end.
void BM_Memcmp(benchmark::State& state) {
  const Pair p = MakePair(state.range(0), state.range(1));
  const std::string copy = p.got.data;
  for (auto _ : state) {
    benchmark::DoNotOptimize(std::memcmp(p.got.data.data(), copy.data(), copy.size()));
  }
  state.SetItemsProcessed(state.iterations() * state.range(0) * state.range(1));
}
BENCHMARK(BM_Memcmp)->Args({128, 14336})->Args({16, 4096})->Unit(benchmark::kMicrosecond);

// Generated inputs (tools::FillRandom, as kiln-run --seed and the worker make
// them): the 4096 x 4096 fp16 B of a tuning sweep, next to filling the same
// bytes with memset.
void BM_FillRandom(benchmark::State& state) {
  kiln::tools::NpyArray a;
  a.dtype = kiln::ir::DType::kFloat16;
  a.shape = {state.range(0), state.range(1)};
  a.data.resize(static_cast<size_t>(a.num_elements()) * 2);
  for (auto _ : state) {
    kiln::tools::FillRandom(a, 1, 1);
    benchmark::DoNotOptimize(a.data.data());
  }
  state.SetItemsProcessed(state.iterations() * a.num_elements());
}
BENCHMARK(BM_FillRandom)->Args({4096, 4096})->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Memset(benchmark::State& state) {
  std::string bytes(static_cast<size_t>(state.range(0) * state.range(1)) * 2, '\0');
  for (auto _ : state) {
    std::memset(bytes.data(), 1, bytes.size());
    benchmark::DoNotOptimize(bytes.data());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0) * state.range(1));
}
BENCHMARK(BM_Memset)->Args({4096, 4096})->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
