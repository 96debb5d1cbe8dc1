#include "server/artifact_metadata.h"

#include <optional>
#include <set>

#include "absl/time/clock.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/proto_convert.h"
#include "compiler/ir/simplify.h"
#include "server/artifact_store.h"
#include "util/sha256.h"

namespace kiln::server {
namespace {

// The buffers `kernel` writes (stores, copy/reduce/gemm/fill destinations,
// atomics), added to `written`.
void WrittenIn(const ir::Kernel& kernel, std::set<std::string>& written) {
  ir::ForEachStmt(kernel.body, [&written](const ir::Stmt& s) {
    switch (s.kind) {
    case ir::StmtKind::kStore:
      written.insert(s.name);
      break;
    case ir::StmtKind::kCopy:
    case ir::StmtKind::kReduce:
      if (s.regions.size() > 1) written.insert(s.regions[1].buffer);
      break;
    case ir::StmtKind::kGemm:
      if (s.regions.size() > 2) written.insert(s.regions[2].buffer);
      break;
    case ir::StmtKind::kFill:
    case ir::StmtKind::kAtomic:
      if (!s.regions.empty()) written.insert(s.regions[0].buffer);
      break;
    default:
      break;
    }
  });
}

// The tensor parameters the program's kernels write: the outputs, when the
// program marks none itself.
std::set<std::string> WrittenBuffers(const ir::Program& program) {
  std::set<std::string> written;
  WrittenIn(program.kernel, written);
  for (const ir::Kernel& k : program.next_kernels) WrittenIn(k, written);
  return written;
}

std::string ExtentText(const ir::Expr& e) {
  std::optional<int64_t> v = ir::ConstInt(ir::Simplify(e));
  return v ? std::to_string(*v) : ir::PrintExpr(e);
}

} // namespace

kiln::v1::ArtifactKind ArtifactKindOf(const std::string& kind) {
  if (kind == driver::kCubin) return kiln::v1::ARTIFACT_KIND_CUBIN;
  if (kind == driver::kPtx) return kiln::v1::ARTIFACT_KIND_PTX;
  if (kind == driver::kSharedObject) return kiln::v1::ARTIFACT_KIND_SHARED_OBJECT;
  if (kind == driver::kCudaSource || kind == driver::kCppSource) {
    return kiln::v1::ARTIFACT_KIND_SOURCE;
  }
  if (kind == driver::kIrText) return kiln::v1::ARTIFACT_KIND_IR_TEXT;
  return kiln::v1::ARTIFACT_KIND_UNSPECIFIED;
}

std::string FileKindOf(kiln::v1::ArtifactKind kind, const std::string& target) {
  switch (kind) {
  case kiln::v1::ARTIFACT_KIND_CUBIN:
    return driver::kCubin;
  case kiln::v1::ARTIFACT_KIND_PTX:
    return driver::kPtx;
  case kiln::v1::ARTIFACT_KIND_SHARED_OBJECT:
    return driver::kSharedObject;
  case kiln::v1::ARTIFACT_KIND_SOURCE:
    return target.rfind("cuda", 0) == 0 ? driver::kCudaSource : driver::kCppSource;
  case kiln::v1::ARTIFACT_KIND_IR_TEXT:
    return driver::kIrText;
  default:
    return "";
  }
}

kiln::v1::LaunchInfo MakeLaunchInfo(const codegen::LaunchSpec& l,
                                    const driver::Prepared& prepared) {
  kiln::v1::LaunchInfo info;
  info.set_kernel_symbol(l.symbol);
  for (const ir::Expr& g : l.grid) info.add_grid(ExtentText(g));
  for (int64_t b : l.block) info.add_block(b);
  info.set_dynamic_shared_bytes(l.dynamic_smem_bytes);
  bool marked = false;
  for (const codegen::KernelArg& a : l.args) marked = marked || a.is_output;
  const std::set<std::string> written =
      marked ? std::set<std::string>{} : WrittenBuffers(prepared.program);
  for (const codegen::KernelArg& a : l.args) {
    if (a.is_symbol) {
      info.add_symbols(a.name);
      continue;
    }
    kiln::v1::ParamInfo* p = info.add_params();
    p->set_name(a.name);
    p->set_dtype(ir::DTypeToProto(a.dtype));
    p->set_is_scalar(a.is_scalar);
    // `written` holds IR names; the metadata shows the user's (a.name).
    p->set_is_output(!a.is_scalar && (marked ? a.is_output : written.count(a.ir_name) > 0));
    for (const ir::Expr& e : a.shape) p->add_shape(ExtentText(e));
  }
  auto add_maps = [&l](const std::vector<codegen::TensorMapSpec>& maps,
                       google::protobuf::RepeatedPtrField<kiln::v1::TensorMap>* out) {
    for (const codegen::TensorMapSpec& m : maps) {
      kiln::v1::TensorMap* t = out->Add();
      const auto arg = static_cast<size_t>(m.arg);
      t->set_param(arg < l.args.size() ? l.args[arg].name : l.workspaces[arg - l.args.size()].name);
      for (int64_t b : m.box) t->add_box(b);
      t->set_swizzle_bytes(m.swizzle_bytes);
    }
  };
  add_maps(l.tensor_maps, info.mutable_tensor_maps());
  // A program of several kernels or with workspaces (kernel_spec.h).
  for (const codegen::WorkspaceSpec& w : l.workspaces) {
    kiln::v1::WorkspaceInfo* wi = info.add_workspaces();
    wi->set_name(w.name);
    wi->set_dtype(ir::DTypeToProto(w.dtype));
    for (const ir::Expr& e : w.shape) wi->add_shape(ExtentText(e));
  }
  for (const codegen::KernelLaunch& k : l.next_kernels) {
    kiln::v1::KernelLaunchInfo* ki = info.add_next_kernels();
    ki->set_kernel_symbol(k.symbol);
    for (const ir::Expr& g : k.grid) ki->add_grid(ExtentText(g));
    for (int64_t b : k.block) ki->add_block(b);
    ki->set_dynamic_shared_bytes(k.dynamic_smem_bytes);
    add_maps(k.tensor_maps, ki->mutable_tensor_maps());
  }
  return info;
}

kiln::v1::ArtifactMetadata MakeArtifactMetadata(const std::string& key,
                                                const driver::BuildOptions& options,
                                                const driver::Prepared& prepared,
                                                const driver::Built& built) {
  kiln::v1::ArtifactMetadata m;
  m.set_key(key);
  m.set_target(options.target);
  for (const driver::BuiltFile& f : built.files) {
    kiln::v1::ArtifactFile* out = m.add_files();
    out->set_kind(ArtifactKindOf(f.kind));
    out->set_blob_digest(util::Sha256Hex(f.bytes));
    out->set_size_bytes(static_cast<int64_t>(f.bytes.size()));
  }
  *m.mutable_launch() = MakeLaunchInfo(built.kernel.launch, prepared);
  if (built.resources) {
    kiln::v1::ResourceUsage* r = m.mutable_resources();
    r->set_registers_per_thread(built.resources->registers);
    r->set_static_shared_bytes(built.resources->shared_bytes);
    r->set_spill_store_bytes(built.resources->spill_store_bytes);
    r->set_spill_load_bytes(built.resources->spill_load_bytes);
    r->set_local_bytes(built.resources->stack_frame_bytes);
  }
  m.set_toolchain_fingerprint(prepared.fingerprint);
  double seconds = prepared.frontend_seconds;
  for (const auto& [step, s] : built.timings) seconds += s;
  m.set_compile_seconds(seconds);
  m.set_created_unix_ms(absl::ToUnixMillis(absl::Now()));
  return m;
}

cache::Artifact MakeCacheArtifact(const kiln::v1::ArtifactMetadata& metadata,
                                  const driver::Built& built) {
  cache::Artifact a;
  a.target = metadata.target();
  a.toolchain_fingerprint = metadata.toolchain_fingerprint();
  a.launch_json = built.launch_json;
  a.timings = built.timings;
  a.created_unix_ms = metadata.created_unix_ms();
  for (const driver::BuiltFile& f : built.files) a.files.push_back({f.kind, f.bytes, "", 0});
  a.files.push_back({kMetadataKind, metadata.SerializeAsString(), "", 0});
  return a;
}

} // namespace kiln::server
