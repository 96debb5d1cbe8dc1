#include "compiler/tools/reference_check.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <stdlib.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/frontend/parser.h"
#include "compiler/ir/dtype.h"
#include "util/subprocess.h"
#include "util/temp_dir.h"

namespace kiln::tools {
namespace {

namespace fs = std::filesystem;

// argv: FILE DIR INPUTS OUTPUTS, where INPUTS and OUTPUTS are comma-separated
// "name:dtype" lists; DIR holds in_<i>.npy and out_<i>.npy. Exit status: 0
// every output matches, 11 some output does not (Python itself exits with 1
// on an uncaught error, so 1 is not used), 3 NumPy is missing, 4 the program
// or ref_program raised (traceback on stderr), 5 ref_program returned the
// wrong number of arrays, 6 the script itself failed.
constexpr char kScript[] = R"py(
import sys
sys.dont_write_bytecode = True
try:
    import numpy as np
except Exception as e:  # noqa: BLE001
    sys.stderr.write("numpy is not importable by %s: %s\n" % (sys.executable, e))
    sys.exit(3)
import importlib.abc
import importlib.machinery
import importlib.util
import os
import traceback
import types


class _Stub:
    """Any name of tilelang / tvm: attributes, calls and indexing give stubs."""

    def __init__(self, name):
        object.__setattr__(self, "_kiln_name", name)

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Stub(self._kiln_name + "." + name)

    def __call__(self, *args, **kwargs):
        # A decorator (@tilelang.jit, @tilelang.jit(...), @T.prim_func) hands
        # the function back unchanged.
        if len(args) == 1 and not kwargs and isinstance(args[0], (types.FunctionType, type)):
            return args[0]
        return _Stub(self._kiln_name + "(...)")

    def __getitem__(self, key):
        return _Stub(self._kiln_name + "[...]")

    def __iter__(self):
        return iter(())

    def __bool__(self):
        return True

    def __repr__(self):
        return "<stub " + self._kiln_name + ">"

    def __mro_entries__(self, bases):
        return (object,)


def _same(self, *args):
    return self


for _op in ("add", "radd", "sub", "rsub", "mul", "rmul", "truediv", "rtruediv", "floordiv",
            "rfloordiv", "mod", "rmod", "pow", "rpow", "neg", "pos", "abs", "invert", "and",
            "rand", "or", "ror", "xor", "rxor", "lshift", "rshift", "lt", "le", "gt", "ge",
            "matmul", "rmatmul"):
    setattr(_Stub, "__%s__" % _op, _same)


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    ROOTS = ("tilelang", "tvm")

    def find_spec(self, fullname, path, target=None):
        if fullname.split(".")[0] in self.ROOTS:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.__path__ = []
        prefix = spec.name

        def __getattr__(name):
            if name.startswith("__") and name.endswith("__"):
                raise AttributeError(name)
            return _Stub(prefix + "." + name)

        module.__getattr__ = __getattr__
        return module

    def exec_module(self, module):
        pass


def _fp8_table(exp_bits, man_bits, bias, ieee):
    table = np.empty(256, np.float32)
    top = (1 << exp_bits) - 1
    for b in range(256):
        sign = -1.0 if b & 0x80 else 1.0
        e = (b >> man_bits) & top
        m = b & ((1 << man_bits) - 1)
        if ieee and e == top:
            v = np.inf if m == 0 else np.nan
        elif not ieee and e == top and m == (1 << man_bits) - 1:
            v = np.nan
        elif e == 0:
            v = m / (1 << man_bits) * 2.0 ** (1 - bias)
        else:
            v = (1 + m / (1 << man_bits)) * 2.0 ** (e - bias)
        table[b] = sign * v
    return table


FP8 = {"float8_e4m3": _fp8_table(4, 3, 7, False), "float8_e5m2": _fp8_table(5, 2, 15, True)}
TOLERANCE = {"float16": (1e-2, 1e-2), "bfloat16": (3e-2, 3e-2), "float32": (1e-3, 1e-3),
             "float64": (1e-3, 1e-3), "float8_e4m3": (1.25e-1, 1.25e-1),
             "float8_e5m2": (2.5e-1, 2.5e-1)}


def decode(a, dtype):
    """bfloat16 / float8 raw bits (as .npy stores them) -> float32."""
    if dtype == "bfloat16" and a.dtype == np.uint16:
        return (a.astype(np.uint32) << 16).view(np.float32)
    if dtype in FP8 and a.dtype == np.uint8:
        return FP8[dtype][a]
    return a


def fmt(v):
    return repr(v.item()) if hasattr(v, "item") else repr(v)


def compare(name, dtype, kernel, ref):
    ref = np.asarray(ref)
    head = "%s (%s, shape %s): " % (name, dtype, tuple(kernel.shape))
    if ref.shape != kernel.shape:
        print(head + "FAIL: ref_program returned shape %s" % (tuple(ref.shape),))
        return False
    n = kernel.size
    if dtype in TOLERANCE:
        rtol, atol = TOLERANCE[dtype]
        k = decode(kernel, dtype).astype(np.float64)
        r = decode(ref, dtype).astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            finite = np.isfinite(k) & np.isfinite(r)
            diff = np.where(finite, np.abs(k - r), 0.0)
            # The absolute slack shrinks with the output's scale, so that outputs
            # far below 1 (softmax probabilities) are held to their rtol too.
            peak = float(np.abs(r[finite]).max()) if finite.any() else 0.0
            atol = atol * min(1.0, peak)
            bad = finite & (diff > atol + rtol * np.abs(r))
            special_ok = (np.isnan(k) & np.isnan(r)) | (k == r)
            bad |= ~finite & ~special_ok
            nonzero = finite & (r != 0)
            rel = np.where(nonzero, diff / np.where(nonzero, np.abs(r), 1.0), 0.0)
        tol = "rtol %g, atol %g" % (rtol, atol)
    else:
        if dtype == "bool":
            k, r = kernel.astype(bool), ref.astype(bool)
            bad = k != r
        else:
            k, r = kernel, ref
            bad = np.not_equal(k, r)
        with np.errstate(invalid="ignore", over="ignore"):
            diff = np.abs(k.astype(np.float64) - r.astype(np.float64))
            nonzero = r.astype(np.float64) != 0
            rel = np.where(nonzero, diff / np.where(nonzero, np.abs(r.astype(np.float64)), 1.0), 0.0)
        tol = "exact"
    max_abs = float(diff.max()) if n else 0.0
    max_rel = float(rel.max()) if n else 0.0
    count = int(np.count_nonzero(bad))
    line = head + "max abs err %.3g, max rel err %.3g, %d of %d mismatch (%s)" % (
        max_abs, max_rel, count, n, tol)
    if count:
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        line += ": FAIL; first mismatch at %s: kernel %s, reference %s" % (
            idx, fmt(k[idx]), fmt(r[idx]))
    else:
        line += ": PASS"
    print(line)
    return count == 0


def parse_list(text):
    return [tuple(item.split(":")) for item in text.split(",") if item]


def main():
    path, directory = sys.argv[1], sys.argv[2]
    inputs, outputs = parse_list(sys.argv[3]), parse_list(sys.argv[4])
    sys.meta_path.insert(0, _StubFinder())
    args = [decode(np.load(os.path.join(directory, "in_%d.npy" % i)), dtype)
            for i, (_, dtype) in enumerate(inputs)]
    try:
        sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
        loader = importlib.machinery.SourceFileLoader("kiln_reference_program", path)
        spec = importlib.util.spec_from_loader(loader.name, loader)
        module = importlib.util.module_from_spec(spec)
        sys.modules[loader.name] = module
        loader.exec_module(module)
        result = module.ref_program(*args)
    except BaseException:  # noqa: BLE001: anything the program does is reported
        traceback.print_exc()
        sys.exit(4)
    if not isinstance(result, (tuple, list)):
        result = [result]
    if len(result) != len(outputs):
        sys.stderr.write("ref_program returned %d array(s); the kernel has %d output(s) (%s)\n" % (
            len(result), len(outputs), ", ".join(name for name, _ in outputs)))
        sys.exit(5)
    ok = True
    for i, ((name, dtype), ref) in enumerate(zip(outputs, result)):
        kernel = np.load(os.path.join(directory, "out_%d.npy" % i))
        ok = compare(name, dtype, kernel, ref) and ok
    sys.stdout.flush()
    sys.exit(0 if ok else 11)


try:
    main()
except SystemExit:
    raise
except BaseException:  # noqa: BLE001
    traceback.print_exc()
    sys.exit(6)
)py";

constexpr int kExitMismatch = 11;
constexpr int kExitNoNumpy = 3;
constexpr int kExitReferenceRaised = 4;
constexpr int kExitWrongArity = 5;

std::string NameList(const std::vector<NamedArray>& arrays) {
  std::vector<std::string> items;
  for (const NamedArray& a : arrays) {
    items.push_back(absl::StrCat(a.name, ":", std::string(ir::DTypeName(a.array.dtype))));
  }
  return absl::StrJoin(items, ",");
}

bool IsIdentifier(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
      return false;
  }
  return true;
}

std::vector<std::string> PythonCandidates() {
  if (const char* env = getenv("KILN_PYTHON"); env != nullptr && env[0] != '\0') return {env};
  return {"python3", "/usr/bin/python3"};
}

} // namespace

std::string_view ReferenceCheckScript() { return kScript; }

absl::StatusOr<int> RefProgramArity(std::string_view source, std::string_view file_name_in) {
  const absl::string_view file_name(file_name_in.data(), file_name_in.size());
  absl::StatusOr<frontend::Module> module = frontend::ParseModule(source, file_name_in);
  if (!module.ok()) return module.status();
  for (const frontend::PyStmt& stmt : module->body) {
    if (stmt.kind != frontend::PyStmtKind::kFunctionDef || stmt.str != "ref_program") continue;
    int count = 0;
    for (const frontend::Param& p : stmt.params) {
      if (p.kind == frontend::Param::kVarArgs) {
        return absl::InvalidArgumentError(
            absl::StrCat(file_name, ":", stmt.loc.line, ": ref_program takes *", p.name,
                         "; Kiln needs a fixed list of input parameters"));
      }
      if (p.kind == frontend::Param::kNormal || p.kind == frontend::Param::kPosOnly) ++count;
    }
    return count;
  }
  return absl::NotFoundError(absl::StrCat(file_name, " defines no top-level ref_program"));
}

absl::StatusOr<ReferenceCheckResult> RunReferenceCheck(const ReferenceCheckRequest& request) {
  for (const auto* list : {&request.inputs, &request.outputs}) {
    for (const NamedArray& a : *list) {
      if (!IsIdentifier(a.name)) {
        return absl::InvalidArgumentError(absl::StrCat("bad array name '", a.name, "'"));
      }
    }
  }
  if (request.outputs.empty()) {
    return absl::InvalidArgumentError("reference check: the kernel has no outputs to compare");
  }
  absl::StatusOr<kiln::util::TempDir> dir = kiln::util::TempDir::Create("kiln-check");
  if (!dir.ok()) return dir.status();
  for (size_t i = 0; i < request.inputs.size(); ++i) {
    if (absl::Status s =
            WriteNpyFile(absl::StrCat(dir->path(), "/in_", i, ".npy"), request.inputs[i].array);
        !s.ok()) {
      return s;
    }
  }
  for (size_t i = 0; i < request.outputs.size(); ++i) {
    if (absl::Status s =
            WriteNpyFile(absl::StrCat(dir->path(), "/out_", i, ".npy"), request.outputs[i].array);
        !s.ok()) {
      return s;
    }
  }
  const std::string file = fs::absolute(request.program_file).string();

  util::SubprocessOptions options;
  options.timeout = request.timeout;
  options.memory_limit_bytes = request.memory_limit_bytes;
  options.extra_env = {{"PYTHONDONTWRITEBYTECODE", "1"}, {"TMPDIR", dir->path()}};
  std::vector<std::string> tried;
  for (const std::string& python : PythonCandidates()) {
    absl::StatusOr<util::SubprocessResult> run =
        util::RunSubprocess({python, "-c", kScript, file, dir->path(), NameList(request.inputs),
                             NameList(request.outputs)},
                            options);
    if (!run.ok()) {
      tried.push_back(absl::StrCat(python, ": ", run.status().message()));
      continue;
    }
    if (run->timed_out) {
      return absl::DeadlineExceededError(
          absl::StrCat("reference check (", python, ") ", run->DescribeTermination()));
    }
    if (run->exited && run->exit_code == kExitNoNumpy) {
      tried.push_back(absl::StrCat(python, ": ", run->stderr_data));
      continue;
    }
    if (run->exited && (run->exit_code == 0 || run->exit_code == kExitMismatch)) {
      ReferenceCheckResult result;
      result.passed = run->exit_code == 0;
      result.report = run->stdout_data;
      result.python = python;
      return result;
    }
    if (run->exited &&
        (run->exit_code == kExitReferenceRaised || run->exit_code == kExitWrongArity)) {
      return absl::InvalidArgumentError(run->stderr_data);
    }
    if (run->signaled) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "reference check (", python, ") ", run->DescribeTermination(), "\n", run->stderr_data));
    }
    return absl::InternalError(absl::StrCat("reference check (", python, ") failed (",
                                            run->DescribeTermination(), "):\n", run->stdout_data,
                                            run->stderr_data));
  }
  return absl::FailedPreconditionError(
      absl::StrCat("--check needs Python 3 with NumPy (install python3-numpy, or set "
                   "KILN_PYTHON); tried ",
                   absl::StrJoin(tried, "; ")));
}

} // namespace kiln::tools
