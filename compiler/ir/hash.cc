// The key is a hash of an explicit serialization, field by field, never of
// memory: struct padding, std::string layout and enum widths differ between
// compilers. Every field is one length-prefixed Sha256 field (UpdateField),
// so no two different field sequences hash alike. Changing what is written
// or its order changes every key: bump kKeyFormat when doing so.
//
// Program::name and Program::source_name are deliberately not hashed (they
// do not change the compiled code); everything else, locations included, is.
#include "compiler/ir/hash.h"

#include <cstring>
#include <string_view>

#include "compiler/ir/canonicalize.h"
#include "util/sha256.h"

namespace kiln::ir {
namespace {

// v2: symbols and parameters hash their user names (ir.h).
constexpr std::string_view kKeyFormat = "kiln-key-v2";

class KeyWriter {
 public:
  explicit KeyWriter(util::Sha256* h) : h_(h) {}

  void Str(std::string_view s) { h_->UpdateField(s); }

  // Fixed-width little-endian, independent of the host's byte order.
  void Int(int64_t v) {
    uint64_t u = static_cast<uint64_t>(v);
    char bytes[8];
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((u >> (8 * i)) & 0xff);
    h_->UpdateField(std::string_view(bytes, sizeof bytes));
  }

  template <typename E>
  void Enum(E e) {
    Int(static_cast<int64_t>(e));
  }

  void Bool(bool b) { Int(b ? 1 : 0); }

  // The bit pattern: -0.0 and 0.0 (and NaN payloads) compile differently.
  void Float(double d) {
    uint64_t bits;
    std::memcpy(&bits, &d, sizeof bits);
    Int(static_cast<int64_t>(bits));
  }

  void Write(const Loc& loc) {
    Int(loc.line);
    Int(loc.col);
  }

  void Write(const Expr& e) {
    Str("expr");
    Enum(e.kind);
    Enum(e.dtype);
    Int(e.ival);
    Float(e.fval);
    Str(e.name);
    Enum(e.bop);
    Enum(e.uop);
    Enum(e.fn);
    WriteAll(e.args);
    Write(e.loc);
  }

  void Write(const Buffer& b) {
    Str("buffer");
    Str(b.name);
    Enum(b.dtype);
    Enum(b.scope);
    WriteAll(b.shape);
    Bool(b.has_init);
    Write(b.init);
    Write(b.loc);
    // Only when present, behind its own tag, so that the keys of programs
    // without one stay as they were (the next field is never this tag).
    if (b.index_layout) {
      Str("index_layout");
      Strings(b.index_layout->vars);
      WriteAll(b.index_layout->forward);
      Write(b.index_layout->loc);
    }
  }

  void Write(const Range& r) {
    Write(r.min);
    Write(r.extent);
  }

  void Write(const Region& r) {
    Str("region");
    Str(r.buffer);
    WriteAll(r.ranges);
    Write(r.loc);
  }

  void Write(const Stmt& s) {
    Str("stmt");
    Enum(s.kind);
    Write(s.loc);
    Write(s.buffer);
    WriteAll(s.regions);
    Bool(s.has_value);
    Write(s.value);
    Bool(s.transpose_a);
    Bool(s.transpose_b);
    Bool(s.clear_accum);
    Int(s.k_pack);
    Int(s.wg_wait);
    Enum(s.policy);
    Enum(s.reduce_kind);
    Int(s.dim);
    Bool(s.clear);
    Enum(s.atomic_op);
    Enum(s.for_kind);
    Strings(s.loop_vars);
    WriteAll(s.extents);
    Int(s.num_stages);
    Ints(s.order);
    Ints(s.stage);
    Write(s.cond);
    WriteAll(s.body);
    WriteAll(s.else_body);
    Str(s.name);
    WriteAll(s.indices);
    Str(s.layout);
    Int(s.panel_size);
    Str(s.swizzle_order);
    Bool(s.enable);
    // Only where present, so that the keys of programs without asserts
    // stay what they were before the field existed.
    if (!s.message.empty()) {
      Str("message");
      Str(s.message);
    }
  }

  void Write(const Kernel& k) {
    Str("kernel");
    WriteAll(k.grid);
    Strings(k.block_vars);
    Int(static_cast<int64_t>(k.threads.size()));
    for (int64_t t : k.threads) Int(t);
    WriteAll(k.body);
    Write(k.loc);
  }

  void Write(const Symbol& s) {
    Str("symbol");
    Str(s.name);
    Enum(s.dtype);
    Write(s.loc);
    Str(s.user_name);
  }

  void Write(const Param& p) {
    Str("param");
    Write(p.buffer);
    Bool(p.is_scalar);
    Bool(p.is_output);
    Str(p.user_name);
  }

  void Write(const Program& p) {
    Str("program");
    WriteAll(p.symbols);
    WriteAll(p.params);
    Write(p.kernel);
    // Only where present, so that one-kernel programs keep their keys.
    if (!p.next_kernels.empty()) {
      Str("next_kernels");
      WriteAll(p.next_kernels);
    }
    if (!p.workspaces.empty()) {
      Str("workspaces");
      WriteAll(p.workspaces);
    }
    Int(static_cast<int64_t>(p.attrs.size()));
    for (const auto& [key, value] : p.attrs) {
      Str(key);
      Str(value);
    }
  }

 private:
  template <typename T>
  void WriteAll(const std::vector<T>& items) {
    Int(static_cast<int64_t>(items.size()));
    for (const T& item : items) Write(item);
  }

  void Strings(const std::vector<std::string>& items) {
    Int(static_cast<int64_t>(items.size()));
    for (const std::string& s : items) Str(s);
  }

  void Ints(const std::vector<int32_t>& items) {
    Int(static_cast<int64_t>(items.size()));
    for (int32_t v : items) Int(v);
  }

  util::Sha256* h_;
};

} // namespace

std::string HashCanonical(const Program& canonical, const KeyContext& ctx) {
  util::Sha256 h;
  KeyWriter w(&h);
  w.Str(kKeyFormat);
  w.Str(ctx.target);
  w.Str(ctx.options);
  w.Str(ctx.toolchain_fingerprint);
  w.Write(canonical);
  return h.FinishHex();
}

std::string ProgramKey(const Program& program, const KeyContext& ctx) {
  return HashCanonical(Canonicalize(program), ctx);
}

} // namespace kiln::ir
