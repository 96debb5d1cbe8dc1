#include "server/launch_plan.h"

#include <limits>
#include <optional>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "compiler/driver/compile_driver.h"

namespace kiln::server {
namespace {

// A precedence-climbing evaluator over the IR text syntax's integer subset.
class ExtentParser {
 public:
  ExtentParser(absl::string_view text, const std::map<std::string, int64_t>& symbols)
      : text_(text), symbols_(symbols) {}

  absl::StatusOr<int64_t> Parse() {
    absl::StatusOr<int64_t> v = Binary(1);
    if (!v.ok()) return v;
    Skip();
    if (pos_ != text_.size()) return Error(absl::StrCat("unexpected '", text_.substr(pos_), "'"));
    return v;
  }

 private:
  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat("extent '", text_, "': ", what));
  }

  void Skip() {
    while (pos_ < text_.size() && absl::ascii_isspace(static_cast<unsigned char>(text_[pos_]))) {
      ++pos_;
    }
  }

  bool Eat(absl::string_view token) {
    Skip();
    if (text_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }

  // The binary operator at the cursor with its precedence (the IR printer's
  // table), without consuming it.
  std::optional<std::pair<absl::string_view, int>> PeekOperator() {
    Skip();
    static constexpr std::pair<absl::string_view, int> kOps[] = {
        {"//", 10}, {"<<", 8}, {">>", 8}, {"<=", 7}, {">=", 7}, {"==", 6}, {"!=", 6},
        {"&&", 2},  {"||", 1}, {"+", 9},  {"-", 9},  {"*", 10}, {"/", 10}, {"%", 10},
        {"<", 7},   {">", 7},  {"&", 5},  {"|", 3},  {"^", 4}};
    for (const auto& op : kOps) {
      if (text_.substr(pos_, op.first.size()) == op.first) return op;
    }
    return std::nullopt;
  }

  absl::StatusOr<int64_t> Binary(int min_prec) {
    absl::StatusOr<int64_t> lhs = Unary();
    if (!lhs.ok()) return lhs;
    int64_t value = *lhs;
    for (;;) {
      std::optional<std::pair<absl::string_view, int>> op = PeekOperator();
      if (!op || op->second < min_prec) return value;
      pos_ += op->first.size();
      absl::StatusOr<int64_t> rhs = Binary(op->second + 1);
      if (!rhs.ok()) return rhs;
      absl::StatusOr<int64_t> r = Apply(op->first, value, *rhs);
      if (!r.ok()) return r;
      value = *r;
    }
  }

  absl::StatusOr<int64_t> Apply(absl::string_view op, int64_t a, int64_t b) const {
    __int128 wide = 0;
    if (op == "+") {
      wide = static_cast<__int128>(a) + b;
    } else if (op == "-") {
      wide = static_cast<__int128>(a) - b;
    } else if (op == "*") {
      wide = static_cast<__int128>(a) * b;
    } else if (op == "/" || op == "//" || op == "%") {
      if (b == 0) return Error("division by zero");
      int64_t q = a / b;
      int64_t r = a % b;
      if (op == "/") return q;
      const bool floor_adjust = r != 0 && ((r < 0) != (b < 0));
      if (op == "//") return floor_adjust ? q - 1 : q;
      return floor_adjust ? r + b : r;
    } else if (op == "<<" || op == ">>") {
      if (b < 0 || b > 62) return Error("shift out of range");
      return op == "<<" ? static_cast<int64_t>(static_cast<uint64_t>(a) << b) : a >> b;
    } else if (op == "<") {
      return int64_t{a < b};
    } else if (op == "<=") {
      return int64_t{a <= b};
    } else if (op == ">") {
      return int64_t{a > b};
    } else if (op == ">=") {
      return int64_t{a >= b};
    } else if (op == "==") {
      return int64_t{a == b};
    } else if (op == "!=") {
      return int64_t{a != b};
    } else if (op == "&&") {
      return int64_t{a != 0 && b != 0};
    } else if (op == "||") {
      return int64_t{a != 0 || b != 0};
    } else if (op == "&") {
      return a & b;
    } else if (op == "|") {
      return a | b;
    } else {
      return a ^ b;
    }
    if (wide > std::numeric_limits<int64_t>::max() || wide < std::numeric_limits<int64_t>::min()) {
      return Error("overflows int64");
    }
    return static_cast<int64_t>(wide);
  }

  absl::StatusOr<int64_t> Unary() {
    if (Eat("-")) {
      absl::StatusOr<int64_t> v = Unary();
      if (!v.ok()) return v;
      if (*v == std::numeric_limits<int64_t>::min()) return Error("overflows int64");
      return -*v;
    }
    if (Eat("!")) {
      absl::StatusOr<int64_t> v = Unary();
      if (!v.ok()) return v;
      return int64_t{*v == 0};
    }
    if (Eat("~")) {
      absl::StatusOr<int64_t> v = Unary();
      if (!v.ok()) return v;
      return ~*v;
    }
    return Primary();
  }

  absl::StatusOr<std::vector<int64_t>> Arguments() {
    std::vector<int64_t> args;
    if (!Eat("(")) return Error("expected '('");
    if (Eat(")")) return args;
    for (;;) {
      absl::StatusOr<int64_t> v = Binary(1);
      if (!v.ok()) return v.status();
      args.push_back(*v);
      if (Eat(")")) return args;
      if (!Eat(",")) return Error("expected ',' or ')'");
    }
  }

  absl::StatusOr<int64_t> Primary() {
    Skip();
    if (pos_ >= text_.size()) return Error("ends early");
    const char c = text_[pos_];
    if (c == '(') {
      ++pos_;
      absl::StatusOr<int64_t> v = Binary(1);
      if (!v.ok()) return v;
      if (!Eat(")")) return Error("expected ')'");
      return v;
    }
    if (absl::ascii_isdigit(static_cast<unsigned char>(c))) {
      int64_t v = 0;
      while (pos_ < text_.size() && absl::ascii_isdigit(static_cast<unsigned char>(text_[pos_]))) {
        const int d = text_[pos_] - '0';
        if (v > (std::numeric_limits<int64_t>::max() - d) / 10) return Error("overflows int64");
        v = v * 10 + d;
        ++pos_;
      }
      return v;
    }
    if (!absl::ascii_isalpha(static_cast<unsigned char>(c)) && c != '_') {
      return Error(absl::StrCat("unexpected '", text_.substr(pos_, 1), "'"));
    }
    const size_t start = pos_;
    while (pos_ < text_.size() &&
           (absl::ascii_isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
      ++pos_;
    }
    const std::string name(text_.substr(start, pos_ - start));
    // Names are the user's (a symbol may be called `max`, `cast` or even
    // `true`): a symbol with a value wins over a literal, and a name is a
    // function only when a call follows (the printer writes `cast<int64>(`
    // with no space; `cast < 4` compares).
    auto symbol = symbols_.find(name);
    const bool cast_call = name == "cast" && pos_ < text_.size() && text_[pos_] == '<';
    Skip();
    const bool call = cast_call || (pos_ < text_.size() && text_[pos_] == '(');
    if (symbol != symbols_.end() && !call) return symbol->second;
    if (name == "true") return 1;
    if (name == "false") return 0;
    if (cast_call) { // cast<int64>(x): integer casts keep the value
      if (!Eat("<")) return Error("expected '<' after cast");
      while (pos_ < text_.size() && text_[pos_] != '>') ++pos_;
      if (!Eat(">")) return Error("expected '>'");
    }
    Skip();
    if (pos_ < text_.size() && text_[pos_] == '(') {
      absl::StatusOr<std::vector<int64_t>> args = Arguments();
      if (!args.ok()) return args.status();
      const std::vector<int64_t>& a = *args;
      if ((name == "min" || name == "max") && a.size() == 2) {
        return name == "min" ? std::min(a[0], a[1]) : std::max(a[0], a[1]);
      }
      if (name == "select" && a.size() == 3) return a[0] != 0 ? a[1] : a[2];
      if (name == "ceildiv" && a.size() == 2) {
        if (a[1] <= 0) return Error("ceildiv by a non-positive value");
        return a[0] >= 0 ? (a[0] + a[1] - 1) / a[1] : a[0] / a[1];
      }
      const bool integer_type = name == "cast" || name == "int8" || name == "int16" ||
                                name == "int32" || name == "int64" || name == "uint8" ||
                                name == "uint16" || name == "uint32" || name == "uint64" ||
                                name == "bool";
      if (integer_type && a.size() == 1) return a[0];
      return Error(absl::StrCat("cannot evaluate ", name, "() with ", a.size(), " arguments"));
    }
    return Error(absl::StrCat("symbol ", name, " has no value; bind it (config ", name, "=...)"));
  }

  absl::string_view text_;
  const std::map<std::string, int64_t>& symbols_;
  size_t pos_ = 0;
};

} // namespace

absl::StatusOr<int64_t> EvalExtent(absl::string_view text,
                                   const std::map<std::string, int64_t>& symbols) {
  return ExtentParser(text, symbols).Parse();
}

bool IsCpuTarget(const std::string& target) { return target.empty() || target == "cpu"; }

absl::StatusOr<kiln::v1::WorkerRequest> LoadRequestFor(ArtifactStore& store,
                                                       const kiln::v1::ArtifactMetadata& metadata) {
  const std::string& key = metadata.key();
  const std::string kind = IsCpuTarget(metadata.target()) ? driver::kSharedObject : driver::kCubin;
  absl::StatusOr<cache::Artifact> binary = store.Get(key, {kind});
  if (!binary.ok()) {
    return absl::Status(binary.status().code(),
                        absl::StrCat("artifact ", key, ": ", binary.status().message()));
  }
  kiln::v1::WorkerRequest load;
  kiln::v1::LoadModuleRequest* m = load.mutable_load();
  for (cache::ArtifactFile& f : binary->files) {
    if (f.kind == kind) m->set_image(std::move(f.bytes));
  }
  if (m->image().empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("artifact ", key, " has no ", kind, " to run"));
  }
  m->set_module_id(key);
  m->set_kernel_symbol(metadata.launch().kernel_symbol());
  m->set_dynamic_shared_bytes(metadata.launch().dynamic_shared_bytes());
  for (const kiln::v1::KernelLaunchInfo& next : metadata.launch().next_kernels()) {
    m->add_next_kernel_symbols(next.kernel_symbol());
    m->add_next_dynamic_shared_bytes(next.dynamic_shared_bytes());
  }
  return load;
}

absl::StatusOr<kiln::v1::LaunchSpec>
MakeLaunchPlan(const kiln::v1::LaunchInfo& launch,
               const std::map<std::string, kiln::v1::BindingValue>& values,
               const LaunchPlanOptions& options) {
  std::map<std::string, int64_t> ints;
  for (const auto& [name, v] : values) {
    if (v.value_case() == kiln::v1::BindingValue::kIntValue) ints[name] = v.int_value();
    if (v.value_case() == kiln::v1::BindingValue::kBoolValue) ints[name] = v.bool_value();
  }
  kiln::v1::LaunchSpec spec;
  spec.set_module_id(options.module_id);
  if (launch.grid().empty() || launch.grid_size() > 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("the launch metadata has ", launch.grid_size(), " grid extents, not 1..3"));
  }
  for (int i = 0; i < launch.grid_size(); ++i) {
    absl::StatusOr<int64_t> g = EvalExtent(launch.grid(i), ints);
    if (!g.ok())
      return absl::InvalidArgumentError(absl::StrCat("grid[", i, "]: ", g.status().message()));
    if (*g <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("grid[", i, "] = ", launch.grid(i), " is ", *g, ", not positive"));
    }
    spec.add_grid(*g);
  }
  for (int64_t b : launch.block()) spec.add_block(b);
  spec.set_dynamic_shared_bytes(launch.dynamic_shared_bytes());
  for (const kiln::v1::ParamInfo& p : launch.params()) {
    kiln::v1::TensorSpec* t = spec.add_args();
    t->set_name(p.name());
    t->set_dtype(p.dtype());
    if (p.is_scalar()) {
      auto it = values.find(p.name());
      if (it == values.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("scalar parameter ", p.name(), " has no value; give it in config"));
      }
      *t->mutable_scalar() = it->second;
      continue;
    }
    const int64_t elem = kiln::v1::DTypeBytes(p.dtype());
    if (elem == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("parameter ", p.name(), " has an unknown dtype"));
    }
    __int128 bytes = elem;
    for (int d = 0; d < p.shape_size(); ++d) {
      absl::StatusOr<int64_t> extent = EvalExtent(p.shape(d), ints);
      if (!extent.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("parameter ", p.name(), " shape[", d, "]: ", extent.status().message()));
      }
      if (*extent < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("parameter ", p.name(), " shape[", d, "] = ", p.shape(d), " is negative"));
      }
      t->add_shape(*extent);
      bytes *= *extent;
      if (bytes > options.max_tensor_bytes) {
        return absl::InvalidArgumentError(
            absl::StrCat("parameter ", p.name(), " needs more than ", options.max_tensor_bytes,
                         " bytes; benchmarks allocate every tensor on the device"));
      }
    }
    t->set_is_output(p.is_output());
    if (p.is_output()) {
      t->set_init(kiln::v1::TensorSpec::INIT_ZEROS);
    } else {
      t->set_init(kiln::v1::TensorSpec::INIT_RANDOM_UNIFORM);
      t->set_seed(options.seed);
    }
  }
  for (const std::string& s : launch.symbols()) {
    auto it = ints.find(s);
    if (it == ints.end()) {
      return absl::InvalidArgumentError(absl::StrCat("the kernel takes the dynamic shape symbol ",
                                                     s, " at launch; give its value in config (", s,
                                                     "=...)"));
    }
    kiln::v1::TensorSpec* t = spec.add_args();
    t->set_name(s);
    t->set_dtype(kiln::v1::DTYPE_INT32);
    t->mutable_scalar()->set_int_value(it->second);
  }
  *spec.mutable_tensor_maps() = launch.tensor_maps(); // the worker encodes them
  // A program of several kernels and its workspaces (docs/design/multi-kernel.md).
  for (int k = 0; k < launch.next_kernels_size(); ++k) {
    const kiln::v1::KernelLaunchInfo& next = launch.next_kernels(k);
    kiln::v1::KernelStep* step = spec.add_next_kernels();
    if (next.grid().empty() || next.grid_size() > 3) {
      return absl::InvalidArgumentError(absl::StrCat("kernel ", k + 2,
                                                     " of the launch metadata has ",
                                                     next.grid_size(), " grid extents, not 1..3"));
    }
    for (int i = 0; i < next.grid_size(); ++i) {
      absl::StatusOr<int64_t> g = EvalExtent(next.grid(i), ints);
      if (!g.ok() || *g <= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("kernel ", k + 2, " grid[", i, "] = ", next.grid(i), ": ",
                         g.ok() ? absl::StrCat(*g, ", not positive") : g.status().message()));
      }
      step->add_grid(*g);
    }
    for (int64_t b : next.block()) step->add_block(b);
    step->set_dynamic_shared_bytes(next.dynamic_shared_bytes());
    *step->mutable_tensor_maps() = next.tensor_maps();
  }
  for (const kiln::v1::WorkspaceInfo& w : launch.workspaces()) {
    __int128 bytes = kiln::v1::DTypeBytes(w.dtype());
    if (bytes == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("workspace ", w.name(), " has an unknown dtype"));
    }
    for (int d = 0; d < w.shape_size(); ++d) {
      absl::StatusOr<int64_t> extent = EvalExtent(w.shape(d), ints);
      if (!extent.ok() || *extent < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("workspace ", w.name(), " shape[", d, "] = ", w.shape(d), ": ",
                         extent.ok() ? "negative" : extent.status().message()));
      }
      bytes *= *extent;
      if (bytes > options.max_tensor_bytes) {
        return absl::InvalidArgumentError(
            absl::StrCat("workspace ", w.name(), " needs more than ", options.max_tensor_bytes,
                         " bytes; benchmarks allocate every tensor on the device"));
      }
    }
    spec.add_workspace_bytes(static_cast<int64_t>(bytes));
  }
  return spec;
}

} // namespace kiln::server
