#include "compiler/frontend/names.h"

#include <array>
#include <utility>

#include "absl/strings/str_cat.h"
#include "compiler/ir/dtype.h"

namespace kiln::frontend {
namespace {

template <size_t N>
bool In(const std::array<std::string_view, N>& table, std::string_view s) {
  for (std::string_view t : table) {
    if (t == s) return true;
  }
  return false;
}

constexpr std::array<std::string_view, 58> kReserved = {"program",       "attr",
                                                        "sym",           "param",
                                                        "kernel",        "grid",
                                                        "threads",       "as",
                                                        "alloc",         "copy",
                                                        "gemm",          "fill",
                                                        "reduce_sum",    "reduce_max",
                                                        "reduce_min",    "reduce_abssum",
                                                        "reduce_absmax", "atomic_add",
                                                        "atomic_max",    "atomic_min",
                                                        "for",           "in",
                                                        "serial",        "unroll",
                                                        "vectorized",    "pipelined",
                                                        "parallel",      "if",
                                                        "else",          "annotate_layout",
                                                        "use_swizzle",   "true",
                                                        "false",         "inf",
                                                        "nan",           "min",
                                                        "max",           "select",
                                                        "cast",          "thread_idx",
                                                        "exp",           "exp2",
                                                        "log",           "log2",
                                                        "sqrt",          "rsqrt",
                                                        "abs",           "pow",
                                                        "tanh",          "floor",
                                                        "ceil",          "sin",
                                                        "cos",           "round",
                                                        "trunc",         "sigmoid",
                                                        "loc",           "out"};
// The statement words of TileLang's Hopper synchronization (ir-text.md).
constexpr std::array<std::string_view, 6> kReservedHopper = {
    "ws", "tma_copy", "barrier_arrive", "barrier_wait", "barrier_expect_tx", "wait_wgmma"};

// tfloat32: TileLang's name for float32 operands that the tensor cores read
// as TF32. Kiln's float32 gemms already run on the TF32 mma, and element-wise
// code computes in float32 either way, so it is float32 storage.
constexpr std::array<std::pair<std::string_view, ir::DType>, 10> kDTypeAliases = {{
    {"float", ir::DType::kFloat32},
    {"half", ir::DType::kFloat16},
    {"double", ir::DType::kFloat64},
    {"int", ir::DType::kInt32},
    {"long", ir::DType::kInt64},
    {"short", ir::DType::kInt16},
    {"uint", ir::DType::kUInt32},
    {"ulong", ir::DType::kUInt64},
    {"float8_e4m3fn", ir::DType::kFloat8E4M3},
    {"tfloat32", ir::DType::kFloat32},
}};

constexpr std::array<std::pair<std::string_view, ir::DType>, 21> kTorchDTypes = {{
    {"float16", ir::DType::kFloat16},
    {"half", ir::DType::kFloat16},
    {"bfloat16", ir::DType::kBFloat16},
    {"float32", ir::DType::kFloat32},
    {"float", ir::DType::kFloat32},
    {"float64", ir::DType::kFloat64},
    {"double", ir::DType::kFloat64},
    {"int8", ir::DType::kInt8},
    {"int16", ir::DType::kInt16},
    {"short", ir::DType::kInt16},
    {"int32", ir::DType::kInt32},
    {"int", ir::DType::kInt32},
    {"int64", ir::DType::kInt64},
    {"long", ir::DType::kInt64},
    {"uint8", ir::DType::kUInt8},
    {"uint16", ir::DType::kUInt16},
    {"uint32", ir::DType::kUInt32},
    {"uint64", ir::DType::kUInt64},
    {"bool", ir::DType::kBool},
    {"float8_e4m3fn", ir::DType::kFloat8E4M3},
    {"float8_e5m2", ir::DType::kFloat8E5M2},
}};

constexpr std::array<std::string_view, 25> kPythonBuiltins = {
    "range", "len",        "min",    "max",      "abs",    "int",  "float",  "bool",      "str",
    "tuple", "list",       "dict",   "sum",      "any",    "all",  "round",  "enumerate", "zip",
    "print", "isinstance", "sorted", "reversed", "divmod", "type", "getattr"};

constexpr std::array<std::string_view, 110> kTBuiltins = {
    // Kernel, types, symbols.
    "Kernel", "Tensor", "Buffer", "const", "dynamic", "symbolic", "empty", "prim_func", "macro",
    "GemmWarpPolicy",
    // Allocation.
    "alloc_shared", "alloc_fragment", "alloc_local", "alloc_var", "alloc_buffer", "alloc_reducer",
    "finalize_reducer", "alloc_global",
    // Views of a buffer's storage.
    "reshape", "view",
    // Threads and barriers.
    "thread_binding", "sync_threads",
    // Tile ops.
    "copy", "gemm", "fill", "clear", "reduce_max", "reduce_min", "reduce_sum", "reduce_abssum",
    "reduce_absmax", "atomic_add", "atomic_max", "atomic_min", "atomic_addx2", "atomic_addx4",
    "use_swizzle", "annotate_layout",
    // Convolution tiles (im2col.cc; c2d_im2col is TileLang's older name).
    "im2col", "c2d_im2col",
    // Scans (scan_op.cc).
    "cumsum",
    // Loops.
    "Parallel", "Pipelined", "serial", "Serial", "unroll", "Unroll", "vectorized", "Vectorized",
    // Scalar functions.
    "min", "max", "clamp", "if_then_else", "cast", "infinity", "ceildiv", "floordiv", "floormod",
    "truncdiv", "get_thread_binding", "max_value", "min_value", "exp", "exp2", "log", "log2",
    "sqrt", "rsqrt", "abs", "pow", "tanh", "floor", "ceil", "sin", "cos", "round", "trunc",
    "sigmoid", "print",
    // Layouts (also reachable as tilelang.layout.*).
    "make_swizzled_layout", "make_full_bank_swizzled_layout", "make_half_bank_swizzled_layout",
    "make_quarter_bank_swizzled_layout", "Layout",
    // Aliases.
    "ceil_div", "if_then_else_", "Cast", "device_assert",
    // Hopper synchronization (hopper_ops.cc).
    "ws", "alloc_barrier", "tma_copy", "mbarrier_wait_parity", "barrier_wait", "mbarrier_arrive",
    "barrier_arrive", "mbarrier_expect_tx", "mbarrier_arrive_expect_tx", "set_max_nreg",
    "inc_max_nreg", "dec_max_nreg", "disable_warp_group_reg_alloc", "no_set_max_nreg",
    "annotate_producer_reg_dealloc", "annotate_consumer_reg_alloc", "fence_proxy_async",
    // Hopper's asynchronous gemm (tile_ops.cc).
    "wgmma_gemm", "wait_wgmma",
    // The persistent tile loop (persistent.cc).
    "Persistent",
    // Bit casts (tl_builtins.cc).
    "reinterpret"};

// TileLang names (its examples use them) that Kiln lacks, each with the
// rewrite that works in Kiln where one exists.
constexpr std::string_view kNoSm100 = "Blackwell tcgen05/TMEM needs an sm_100 target, which Kiln "
                                      "does not have yet";
constexpr std::string_view kRawTir =
    "raw TIR and PTX intrinsics are not modelled; use the tile ops (T.copy, T.gemm, T.reduce_*)";
constexpr std::string_view kWsSchedule =
    "for warp specialization use T.ws(...) blocks with T.alloc_barrier and T.tma_copy";
constexpr std::array<std::pair<std::string_view, std::string_view>, 49> kMissingNames = {{
    {"get_block_binding", "use the block variables of 'with T.Kernel(...) as (bx, by)'"},
    {"sync_warp", ""},
    {"sync_grid", ""},
    {"rng_init", ""},
    {"rng_rand", ""},
    {"rng_rand_float", ""},
    {"gemm_sp", ""},
    {"Fragment", ""},
    {"make_tensor", ""},
    {"alloc_tmem", kNoSm100},
    {"tcgen05_gemm", kNoSm100},
    {"tcgen05_gemm_blockscaled", kNoSm100},
    {"tcgen05_mma_arrive", kNoSm100},
    {"tcgen05_sf_warp_transpose", kNoSm100},
    {"tcgen05_cp_warpx4", kNoSm100},
    {"mma_gemm_blockscaled", kNoSm100},
    {"clc_try_cancel_multicast", kNoSm100},
    {"clc_is_canceled", kNoSm100},
    {"clc_get_first_ctaid_x", kNoSm100},
    {"ClusterKernel", "thread-block clusters are not modelled; use T.Kernel"},
    {"alloc_cluster_barrier", "thread-block clusters are not modelled; use T.alloc_barrier"},
    {"block_rank_in_cluster", "thread-block clusters are not modelled"},
    {"PersistentTileScheduler", ""},
    {"ws_op", kWsSchedule},
    {"WSSync", kWsSchedule},
    {"WSID", kWsSchedule},
    {"WSPipeline", kWsSchedule},
    {"WSScope", kWsSchedule},
    {"WSRole", kWsSchedule},
    {"WSSchedule", kWsSchedule},
    {"annotate_ws_schedule", kWsSchedule},
    {"attr", kRawTir},
    {"comm_reducer", kRawTir},
    {"tvm_thread_allreduce", kRawTir},
    {"tvm_warp_shuffle", kRawTir},
    {"evaluate", kRawTir},
    {"call_extern", kRawTir},
    {"call_intrin", kRawTir},
    {"import_source", kRawTir},
    {"ptx_cp_async", kRawTir},
    {"ptx_commit_group", kRawTir},
    {"ptx_wait_group", kRawTir},
    {"cp_async_barrier_noinc", kRawTir},
    {"access_ptr", kRawTir},
    {"address_of", kRawTir},
    {"dp4a", kRawTir},
    {"atomic_load", "read the value with an ordinary load"},
    {"atomic_store", "write the value with an ordinary store"},
}};

constexpr std::array<std::string_view, 7> kMissingDTypes = {
    "int4",          "uint4",          "float4_e2m1fn",       "float6_e2m3fn",
    "float6_e3m2fn", "float8_e8m0fnu", "float4_e2m1_unpacked"};

constexpr std::array<std::pair<std::string_view, std::string_view>, 4> kLayouts = {{
    {"make_swizzled_layout", "swizzled"},
    {"make_full_bank_swizzled_layout", "full_bank_swizzled"},
    {"make_half_bank_swizzled_layout", "half_bank_swizzled"},
    {"make_quarter_bank_swizzled_layout", "quarter_bank_swizzled"},
}};

constexpr std::array<std::pair<std::string_view, std::string_view>, 52> kPassConfigKeys = {{
    {"TL_SIMPLIFY", "tl.Simplify"},
    {"TL_DISABLE_BUFFER_INIT_CHECK", "tl.disable_buffer_init_check"},
    {"TL_DISABLE_DATA_RACE_CHECK", "tl.disable_data_race_check"},
    {"TL_DISABLE_WARP_SPECIALIZED", "tl.disable_warp_specialized"},
    {"TL_ENABLE_FAST_MATH", "tl.enable_fast_math"},
    {"TL_PTXAS_REGISTER_USAGE_LEVEL", "tl.ptxas_register_usage_level"},
    {"TL_DEVICE_COMPILE_FLAGS", "tl.device_compile_flags"},
    {"TL_EMIT_LINE_DIRECTIVES", "tl.emit_line_directives"},
    {"TL_CONFIG_INDEX_BITWIDTH", "tl.config_index_bitwidth"},
    {"TL_LAYOUT_COST_MODEL", "tl.layout_cost_model"},
    {"TL_DISABLE_TMA_LOWER", "tl.disable_tma_lower"},
    {"TL_DISABLE_SAFE_MEMORY_ACCESS", "tl.disable_safe_memory_legalize"},
    {"TL_DISABLE_VECTORIZE_256", "tl.disable_vectorize_256"},
    {"TL_ENABLE_ASYNC_COPY", "tl.enable_async_copy"},
    {"TL_ENABLE_LOWER_LDGSTG", "tl.enable_lower_ldgstg"},
    {"TL_DISABLE_WGMMA", "tl.disable_wgmma"},
    {"TL_ENABLE_AGGRESSIVE_SHARED_MEMORY_MERGE", "tl.enable_aggressive_shared_memory_merge"},
    {"TL_DISABLE_SHARED_MEMORY_REUSE", "tl.disable_shared_memory_reuse"},
    {"TL_DISABLE_SHUFFLE_ELECT", "tl.disable_shuffle_elect"},
    {"TL_DISABLE_LOOP_UNSWITCHING", "tl.disable_loop_unswitching"},
    {"TL_DISABLE_THREAD_STORAGE_SYNC", "tl.disable_thread_storage_sync"},
    {"TL_FORCE_LET_INLINE", "tl.force_let_inline"},
    {"TL_STORAGE_REWRITE_DETECT_INPLACE", "tl.storage_rewrite_detect_inplace"},
    {"TL_DISABLE_OUT_OF_BOUND_WARNING", "tl.disable_out_of_bound_warning"},
    {"TL_ENABLE_DUMP_IR", "tl.enable_dump_ir"},
    {"TIR_DISABLE_CSE", "tirx.disable_cse_tir"},
    {"TIR_SIMPLIFY", "tirx.Simplify"},
    {"TIR_DISABLE_STORAGE_REWRITE", "tirx.disable_storage_rewrite"},
    {"TIR_DISABLE_VECTORIZE", "tirx.disable_vectorize"},
    {"TIR_USE_ASYNC_COPY", "tirx.use_async_copy"},
    {"TL_DISABLE_FAST_MATH", "tl.disable_fast_math"},
    {"TL_ENABLE_PTXAS_VERBOSE_OUTPUT", "tl.enable_ptxas_verbose_output"},
    {"TL_DISABLE_PRELOWER_SEMANTIC_CHECK", "tl.disable_prelower_semantic_check"},
    {"TL_ENABLE_AUTO_WARP_SPECIALIZATION", "tl.enable_auto_warp_specialization"},
    {"TL_ENABLE_REDUCER_PLAN_VERBOSE", "tl.enable_reducer_plan_verbose"},
    {"TL_REDUCER_FORCE_BASELINE", "tl.reducer_force_baseline"},
    {"TL_ENABLE_FP32X2_REDUCTION", "tl.enable_fp32x2_reduction"},
    {"TL_ENABLE_LOWER_LDGSTG_PREDICATED", "tl.enable_lower_ldgstg_predicated"},
    {"TL_ENABLE_VECTORIZE_PLANNER_VERBOSE", "tl.enable_vectorize_planner_verbose"},
    {"TL_DEBUG_MERGE_SHARED_MEMORY_ALLOCATIONS", "tl.debug_merge_shared_memory_allocations"},
    {"TL_LOOP_UNSWITCHING_ALLOW_NON_TRIVIAL_ELSE", "tl.loop_unswitching_allow_non_trivial_else"},
    {"TL_AST_PRINT_ENABLE", "tl.ast_print_enable"},
    {"TL_LAYOUT_VISUALIZATION_ENABLE", "tl.layout_visualization_enable"},
    {"TL_LAYOUT_VISUALIZATION_FORMATS", "tl.layout_visualization_formats"},
    {"TL_DUMP_IR_DIR", "tl.dump_ir_path"},
    {"TL_PASS_PROFILE", "tl.pass_profile"},
    {"TL_PASS_PROFILE_THRESHOLD_MS", "tl.pass_profile_threshold_ms"},
    {"TIR_ENABLE_EQUIV_TERMS_IN_CSE", "tir.enable_equiv_terms_in_cse_tir"},
    {"TIR_ENABLE_DEBUG", "tirx.enable_debug"},
    {"TIR_MERGE_STATIC_SMEM", "tirx.merge_static_smem"},
    {"TIR_NOALIAS", "tirx.noalias"},
    {"CUDA_KERNELS_OUTPUT_DIR", "cuda.kernels_output_dir"},
}};

bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

} // namespace

bool IsIdentifier(std::string_view s) {
  if (s.empty() || s.size() > 256 || !IsAlpha(s[0])) return false;
  for (char c : s) {
    if (!IsAlpha(c) && !IsDigit(c)) return false;
  }
  return true;
}

bool IsReservedIrName(std::string_view s) { return In(kReserved, s) || In(kReservedHopper, s); }

std::optional<ir::DType> ParseDTypeAlias(std::string_view name) {
  if (std::optional<ir::DType> t = ir::ParseDType(name)) return t;
  for (const auto& [alias, t] : kDTypeAliases) {
    if (alias == name) return t;
  }
  return std::nullopt;
}

std::optional<ir::DType> TorchDType(std::string_view name) {
  for (const auto& [n, t] : kTorchDTypes) {
    if (n == name) return t;
  }
  return std::nullopt;
}

bool IsPythonBuiltin(std::string_view name) { return In(kPythonBuiltins, name); }

bool IsTBuiltin(std::string_view name) { return In(kTBuiltins, name); }

bool IsHostMathHelper(std::string_view name) { return name == "next_power_of_2" || name == "cdiv"; }

bool IsIketCall(std::string_view name) {
  return name == "range" || name == "mark" || name == "payload";
}

std::optional<std::string_view> MissingTileLangName(std::string_view name) {
  for (const auto& [n, rewrite] : kMissingNames) {
    if (n == name) return rewrite;
  }
  return std::nullopt;
}

bool IsMissingTileLangDType(std::string_view name) { return In(kMissingDTypes, name); }

std::optional<std::string> LayoutKind(std::string_view fn) {
  for (const auto& [f, kind] : kLayouts) {
    if (f == fn) return std::string(kind);
  }
  return std::nullopt;
}

std::string CanonicalModule(std::string_view path) {
  if (path == "tilelang.language" || path == "tilelang.language.v2") return "T";
  return std::string(path);
}

std::optional<std::string> PassConfigKeyValue(std::string_view member) {
  for (const auto& [m, v] : kPassConfigKeys) {
    if (m == member) return std::string(v);
  }
  return std::nullopt;
}

bool IsConfigKey(std::string_view s) {
  if (s.empty() || s.size() > 128) return false;
  for (char c : s) {
    if (!IsAlpha(c) && !IsDigit(c) && c != '.') return false;
  }
  return true;
}

bool IsSafeText(std::string_view s) {
  if (s.size() > 256) return false;
  for (char c : s) {
    if (!IsAlpha(c) && !IsDigit(c) &&
        std::string_view(".+-:/=, ").find(c) == std::string_view::npos) {
      return false;
    }
  }
  return true;
}

bool IsPrintableText(std::string_view s) {
  for (char c : s) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

std::string DottedName(const PyExpr& e) {
  const PyExpr* x = &e;
  if (x->kind == PyExprKind::kCall && !x->elts.empty()) x = &x->elts[0];
  std::string out;
  while (x->kind == PyExprKind::kAttribute && !x->elts.empty()) {
    out = out.empty() ? x->str : absl::StrCat(x->str, ".", out);
    x = &x->elts[0];
  }
  if (x->kind != PyExprKind::kName) return "";
  return out.empty() ? x->str : absl::StrCat(x->str, ".", out);
}

bool IsJitDecorator(const PyExpr& d) {
  std::string n = DottedName(d);
  return n == "jit" || n.ends_with(".jit");
}

bool IsPrimFuncDecorator(const PyExpr& d) {
  std::string n = DottedName(d);
  return n == "prim_func" || n.ends_with(".prim_func");
}

} // namespace kiln::frontend
