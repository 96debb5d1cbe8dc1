#include "compiler/tools/kernel_inputs.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/simplify.h"
#include "kiln/cpu/types.h"

namespace kiln::tools {
namespace {

// SplitMix64: a fixed generator, so a seed gives the same data everywhere
// (the standard distributions are implementation-defined).
struct Rng {
  uint64_t state;
  uint64_t Next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53 * 2.0 - 1.0; }
};

template <typename T>
void Put(std::string& data, int64_t i, T value) {
  std::memcpy(data.data() + i * sizeof(T), &value, sizeof(T));
}

// Elements [begin, end) of `a` from `rng` (FillRandom's draws).
void FillRange(NpyArray& a, Rng& rng, int64_t begin, int64_t end);

} // namespace

void CollectVars(const ir::Expr& e, std::set<std::string>* names) {
  if (e.kind == ir::ExprKind::kVar) names->insert(e.name);
  for (const ir::Expr& a : e.args) CollectVars(a, names);
}

absl::StatusOr<int64_t> EvalInt(const ir::Expr& e, const std::map<std::string, int64_t>& symbols,
                                const std::string& what) {
  ir::Expr bound = e;
  ir::RewriteExpr(&bound, [&](ir::Expr x) {
    if (x.kind == ir::ExprKind::kVar) {
      auto it = symbols.find(x.name);
      if (it != symbols.end()) return ir::IntImm(it->second, x.dtype, x.loc);
    }
    return x;
  });
  if (std::optional<int64_t> v = ir::ConstInt(ir::Simplify(bound))) return *v;
  std::set<std::string> vars;
  CollectVars(bound, &vars);
  if (vars.empty()) return absl::InvalidArgumentError(what + " is not a constant");
  return absl::InvalidArgumentError(
      absl::StrCat(what, " depends on ", absl::StrJoin(vars, ", "), ", which has no value"));
}

absl::StatusOr<std::vector<int64_t>> EvalShape(const std::vector<ir::Expr>& shape,
                                               const std::map<std::string, int64_t>& symbols,
                                               const std::string& what) {
  std::vector<int64_t> out;
  int64_t elements = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    absl::StatusOr<int64_t> v = EvalInt(shape[d], symbols, absl::StrCat(what, " dimension ", d));
    if (!v.ok()) return v.status();
    if (*v < 0) return absl::InvalidArgumentError(absl::StrCat(what, " has a negative extent"));
    // 2^40 elements is far beyond any host's memory; the bound keeps byte counts exact.
    if (*v != 0 && elements > (int64_t{1} << 40) / *v) {
      return absl::InvalidArgumentError(absl::StrCat(what, " is too large"));
    }
    elements *= *v;
    out.push_back(*v);
  }
  return out;
}

// Parameter `index`'s data: independent of the other parameters, so that
// replacing one with --input leaves the rest unchanged.
void FillRandom(NpyArray& a, uint64_t seed, size_t index) {
  using ir::DType;
  const uint64_t start = seed * 0x2545f4914f6cdd1dULL + index * 0x9e3779b97f4a7c15ULL + 1;
  const int64_t n = a.num_elements();
  // SplitMix64 is a counter: element i's draws are the same whichever thread
  // makes them, so large arrays fill in parallel chunks with the very bytes a
  // single thread would write.
  const uint64_t draws_per_element = a.dtype == DType::kBool ? 3 : 2;
  constexpr int64_t kChunk = int64_t{1} << 20;
  const int64_t chunks = std::clamp<int64_t>(
      n / kChunk, 1, std::clamp<int64_t>(std::thread::hardware_concurrency(), 1, 16));
  auto fill = [&](int64_t begin, int64_t end) {
    Rng rng{start + static_cast<uint64_t>(begin) * draws_per_element * 0x9e3779b97f4a7c15ULL};
    FillRange(a, rng, begin, end);
  };
  std::vector<std::thread> pool;
  for (int64_t c = 1; c < chunks; ++c)
    pool.emplace_back(fill, n * c / chunks, n * (c + 1) / chunks);
  fill(0, n / chunks);
  for (std::thread& t : pool) t.join();
}

namespace {

// Each element takes the same draws whatever its dtype: a uniform double f
// in [-1, 1), an integer k in [-8, 8) from the next draw, and for bool a
// third draw. `put(i, f, k, rng)` stores element i; the dtype is chosen once
// per range, not per element.
template <class PutFn>
void FillLoop(Rng& rng, int64_t begin, int64_t end, PutFn put) {
  for (int64_t i = begin; i < end; ++i) {
    const double f = rng.Uniform();
    const int64_t k = static_cast<int64_t>(rng.Next() >> 60) - 8; // [-8, 8)
    put(i, f, k, rng);
  }
}

void FillRange(NpyArray& a, Rng& rng, int64_t begin, int64_t end) {
  using ir::DType;
  namespace rt = kiln::rt;
  std::string& d = a.data;
  // Integers and floats that ignore one of the draws still make it (above).
  auto integer = [&](auto type_tag) {
    using T = decltype(type_tag);
    FillLoop(rng, begin, end,
             [&d](int64_t i, double, int64_t k, Rng&) { Put<T>(d, i, static_cast<T>(k)); });
  };
  switch (a.dtype) {
  case DType::kBool:
    FillLoop(rng, begin, end, [&d](int64_t i, double, int64_t, Rng& r) {
      Put<uint8_t>(d, i, (r.Next() >> 63) != 0);
    });
    return;
  case DType::kInt8:
    return integer(int8_t{});
  case DType::kInt16:
    return integer(int16_t{});
  case DType::kInt32:
    return integer(int32_t{});
  case DType::kInt64:
    return integer(int64_t{});
  // Unsigned types take the same draw modulo 2^bits (so -1 is the maximum).
  case DType::kUInt8:
    return integer(uint8_t{});
  case DType::kUInt16:
    return integer(uint16_t{});
  case DType::kUInt32:
    return integer(uint32_t{});
  case DType::kUInt64:
    return integer(uint64_t{});
  case DType::kFloat16:
    return FillLoop(rng, begin, end, [&d](int64_t i, double f, int64_t, Rng&) {
      Put<uint16_t>(d, i, rt::float_to_half(static_cast<float>(f)).bits);
    });
  case DType::kBFloat16:
    return FillLoop(rng, begin, end, [&d](int64_t i, double f, int64_t, Rng&) {
      Put<uint16_t>(d, i, rt::float_to_bfloat16(static_cast<float>(f)).bits);
    });
  case DType::kFloat32:
    return FillLoop(rng, begin, end, [&d](int64_t i, double f, int64_t, Rng&) {
      Put<float>(d, i, static_cast<float>(f));
    });
  case DType::kFloat64:
    return FillLoop(rng, begin, end,
                    [&d](int64_t i, double f, int64_t, Rng&) { Put<double>(d, i, f); });
  case DType::kFloat8E4M3:
    return FillLoop(rng, begin, end, [&d](int64_t i, double f, int64_t, Rng&) {
      Put<uint8_t>(d, i, rt::float_to_e4m3(static_cast<float>(f)).bits);
    });
  case DType::kFloat8E5M2:
    return FillLoop(rng, begin, end, [&d](int64_t i, double f, int64_t, Rng&) {
      Put<uint8_t>(d, i, rt::float_to_e5m2(static_cast<float>(f)).bits);
    });
  }
}

} // namespace

AlignedBytes AllocateAligned(size_t bytes) {
  const size_t rounded =
      std::max<size_t>(kHostAlign, (bytes + kHostAlign - 1) / kHostAlign * kHostAlign);
  return AlignedBytes(static_cast<char*>(std::aligned_alloc(kHostAlign, rounded)));
}

} // namespace kiln::tools
