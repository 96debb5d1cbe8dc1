#!/usr/bin/env python3
"""TileLang corpus runner: which of TileLang's own example kernels Kiln compiles.

For every example file (TileLang's examples/ folder, kept beside the checkout as test
data), the runner

1. finds the kernels the way Kiln's frontend picks an entry (compiler/frontend/entry.cc):
   a module-level function decorated with ``@tilelang.jit`` (the jit form, or a factory
   when it defines a ``@T.prim_func``), a module-level ``@T.prim_func``, or a module-level
   function that defines a ``@T.prim_func`` (the factory form). Kernels defined inside
   another function are counted too, as ``outer.inner``; Kiln cannot name them as an
   entry, so they are reported with that reason and not compiled;
2. discovers the bindings the file itself uses, statically: a small evaluator runs the
   module's top level (the ``if __name__ == "__main__"`` block included), ``main()``,
   test functions and every other function over literal values (module constants,
   argparse defaults, function defaults, arguments passed by the file's own calls,
   ``**config`` dicts, tensor shapes, autograd Functions, kernel variants, the first
   config of ``@autotune(configs=...)``; docs/compatibility.md lists it all) and records
   each call of a kernel (``kernel.compile(**binds)``, ``kernel(...)``,
   ``tilelang.compile(factory(...))``). Tensor data and anything else it cannot evaluate
   stay unknown and are not bound (a jit-form shape symbol left unbound is dynamic);
3. compiles each kernel with ``kiln-opt FILE --entry NAME --bind ... --emit=cuda
   --target cuda:sm_90`` (and ``--emit=none`` when that fails, to tell the frontend from
   the lowering), in at most ``--jobs`` processes with a per-kernel timeout;
4. sorts every failure into a feature bucket by regular expressions over its first
   message (BUCKETS below; the first bucket whose pattern matches wins) and writes a JSON
   file and a Markdown report.

Standard library only (Python 3.11), so CI runs it without a virtual environment.
Exit status: 0; 1 when fewer than ``--min-emitted`` kernels emit CUDA; 2 on a usage
error; 77 (ctest's skip code) when the examples folder is missing and
``--skip-if-missing`` was given.
"""
import argparse
import ast
import concurrent.futures
import datetime
import itertools
import json
import math
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field

# The ten files of issue 30's public set, relative to the examples folder.
PUBLIC_SET = (
    "gemm/example_gemm.py",
    "quickstart.py",
    "elementwise/example_elementwise_add.py",
    "norm/rms_norm.py",
    "norm/layernorm.py",
    "online_softmax/online_softmax.py",
    "gemv/example_gemv.py",
    "flash_attention/example_mha_fwd_bhsd.py",
    "gemm_splitk/example_tilelang_gemm_splitk.py",
    "convolution/example_convolution.py",
)

# Feature buckets, in match order: (key, title, patterns). A failure's first message,
# without its file:line:col prefix, is matched against each bucket's patterns
# (re.search); the first bucket with a match gets it. Failures no pattern matches fall
# into "lowering" when the frontend accepted the kernel and "other" otherwise.
# Kiln names what it lacks as "'T.name' is not supported (unknown TileLang name)",
# "'a.b.c' is not supported in kernel code", "calling 'a.b.c' is not supported" or
# "dtype 'T.x' is not supported by Kiln yet";
# _named(...) matches those forms for a set of names.


def _named(names):
    return r"^(calling |dtype )?'(" + names + r")' is not supported"


BUCKETS = (
    ("unbound", "No bindings discovered in the file", [
        r"^no binding discovered",
        r"has no binding and no default",
        r"unsupported operand types for .*'None'",
    ]),
    ("nested", "Kernel defined inside a class (not an entry Kiln can name)", [
        r"^kernel defined inside",
    ]),
    ("timeout", "Timeouts and crashes of kiln-opt", [
        r"^timed out after", r"^kiln-opt died",
    ]),
    ("hopper", "Hopper/Blackwell async primitives", [
        _named(r"T\.(alloc_barrier|tma_copy|ws|mbarrier\w*|barrier_\w+|"
               r"disable_warp_group_reg_alloc|ClusterKernel|alloc_tmem|tcgen05\w*|tmem\w*|"
               r"wgmma\w*|warpgroup\w*|fence_proxy_async|create_tma_\w+|tma_\w+|"
               r"cluster\w*|set_max_nreg|no_set_max_nreg|get_mbarrier|wait_wgmma|"
               r"copy_async\w*|pdl\w*|\w*mma_ts\w*|\w*2cta\w*|clc\w*)"),
        r"tcgen05|TMEM|sm_100|mbarrier",
    ]),
    ("device_query", "Device queries at kernel-build time", [
        _named(r"torch\.cuda[\w.]*|tilelang\.carver[\w.]*|[\w.]*get_num_sms|"
               r"[\w.]*get_device_properties|[\w.]*determine_arch|[\w.]*is_hopper\w*|"
               r"tilelang\.contrib[\w.]*"),
    ]),
    ("host_helpers", "Host helpers used while building the kernel", [
        _named(r"tilelang\.(math\.\w+|cdiv|next_power_of_2|utils\.\w+)|triton\.\w+|"
               r"tilelang\.tools\.[\w.]+|torch\.\w+"),
    ]),
    ("layout", "T.Layout and user-defined layouts", [
        _named(r"T\.(Layout|Fragment|annotate_layout|make_swizzled_layout|layout\w*)"),
    ]),
    ("lowering", "Lowering gaps and Kiln's restrictions on tile programs", [
        r"can only be indexed inside a T\.Parallel loop",
        r"must be indexed by distinct variables",
        r"reduce: source and destination must be fragments",
        r"registers per thread",
        r"^shared memory: the kernel needs",
        r"needs a constant shape",
        r"atomic tile updates need a fragment source",
        r"has extent \d+ in dimension \d+ but the T\.Parallel loop runs",
        r"^gemm: ",
    ]),
    ("small_ops", "Small ops (T.clamp, T.reshape, random, lowercase T.parallel, ...)", [
        _named(r"T\.(clamp|reshape|view|rng_\w+|rand\w*|parallel|alloc_reducer|"
               r"finalize_reducer|atomic_\w+|cumsum|im2col|c2d_im2col|sort\w*|topk|argsort|"
               r"dp4a|loop_break|print|device_assert|shuffle\w*|any_of|all_of|pow|"
               r"bitwise_\w+|copysign|exp10|log1p|erf\w*|fmod|max_value|min_value)"),
    ]),
    ("python_subset", "The Python subset (f-strings, str methods, isinstance, while, ...)", [
        r"'while' loop", r"f-string", r"'str' has no attribute", r"bit_length",
        r"isinstance\(\)", _named(r"math\.\w+|functools\.\w+|itertools\.\w+"),
        r"^assert on a value only known at run time",
        r"a with statement must have exactly one context manager",
        r"'(lambda|try|class|global|nonlocal|yield)'", r"comprehension",
        # TileLang's dtypes are str subclasses: drivers iterate over them.
        r"'dtype' object is not iterable",
    ]),
    ("internals", "Kernels calling TileLang internals (intrinsic emitters, fp8/sparse helpers)", [
        _named(r"tilelang\.(cuda|intrinsics|layout|quantize|transform|engine|ir|tileop|"
               r"language\.\w+)[\w.]*|quantize\.\w+|[\w.]*Emitter\w*|[\w.]*decode_\w+|"
               r"[\w.]*sparse\w*"),
        r"unknown PassConfigKey",
    ]),
    ("dtypes", "dtypes (float4_e2m1fn, int4, tfloat32, ...)", [
        _named(r"T\.(float4\w*|float6\w*|int4|uint4|int1|uint1|tfloat32|float8_e8m0\w*)"),
        r"unknown dtype|unsupported dtype",
    ]),
    ("tvm_multifile", "Direct TVM API, raw TIR, T.alloc_global/T.alloc_buffer outside "
     "T.Kernel, buffer aliasing, several files or several T.Kernel blocks", [
        _named(r"tvm\.[\w.]+|tilelang\.tvm[\w.]*|(tilelang\.|tvm\.)?DataType|T\.(alloc_global|alloc_buffer|thread_binding|"
               r"sync_threads|attr|comm_reducer|tvm_\w+|evaluate|launch_thread|env_thread|"
               r"call_packed|call_extern|decl_buffer|match_buffer|block|reinterpret|Ptr|"
               r"handle|address_of|access_ptr|ptx_\w+)"),
        r"only allowed inside a T\.Kernel block", r"only one T\.Kernel per program",
        r"has no attribute 'data'", r"unsupported import",
    ]),
    ("other", "Other", []),
)
BUCKET_TITLES = {key: title for key, title, _ in BUCKETS}
_COMPILED_BUCKETS = [(key, [re.compile(p) for p in pats]) for key, _, pats in BUCKETS]


def classify(message, frontend_ok):
    """The bucket key of a failure, from its first message."""
    # The location prefix names the file, whose path may contain any bucket's words.
    text = re.sub(r"^\S+?:\d+:\d+:\s*", "", message)
    for key, patterns in _COMPILED_BUCKETS:
        if any(p.search(text) for p in patterns):
            return key
    return "lowering" if frontend_ok else "other"


# ---------------------------------------------------------------------------
# Static evaluation of the example's own Python.


class _Unknown:
    """A value the evaluator cannot know (a tensor, a call into torch, ...)."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self):
        return "<unknown>"


UNKNOWN = _Unknown()


@dataclass(frozen=True)
class DType:
    """A dtype written as an attribute (T.float16, torch.bfloat16): bound as its text,
    which Kiln's frontend reads as a dtype."""
    text: str


@dataclass
class KernelDef:
    name: str  # the entry name; "outer.inner" for a nested kernel
    form: str  # "jit", "factory" or "prim_func"
    node: ast.FunctionDef
    nested: bool = False
    params: list = field(default_factory=list)  # names, in order
    defaults: dict = field(default_factory=dict)  # name -> ast default
    tensor_params: set = field(default_factory=set)  # jit form: annotated in the body
    # jit form: a tensor parameter's annotated shape, one entry per dimension: the
    # T.const symbol the dimension is (`x: T.Tensor([M, N], dtype)`), else None
    tensor_dims: dict = field(default_factory=dict)
    consts: list = field(default_factory=list)  # jit form: T.const symbols
    var_kw: bool = False
    autotune_first: dict = field(default_factory=dict)  # first config of @autotune
    # A nested kernel: the functions enclosing it, outermost first (kiln-opt
    # --entry outer.inner runs them up to its definition), and the class that holds
    # the outermost one ("" when it is a module-level function; Kiln cannot name a
    # method).
    chain: list = field(default_factory=list)
    in_class: str = ""


@dataclass
class _ArgParser:
    defaults: dict = field(default_factory=dict)


@dataclass
class _Namespace:
    values: dict


@dataclass
class _KernelObj:
    """What calling a kernel returns (a compiled kernel): never itself a kernel call."""
    kernel: str


@dataclass
class _Tensor:
    """A torch tensor the driver made (torch.randn(M, K, ...)): only its shape and
    dtype are known, so that ``M, K = a.shape`` binds a factory's shape parameters."""
    shape: tuple
    dtype: object = None


@dataclass
class _KernelRef:
    """A kernel as a value (``KERNELS = {"gemm": gemm}``; ``fn = KERNELS[name]``), or
    one of several (``fn = a if cond else b``): a call of it is a call of each."""
    names: tuple


@dataclass
class _ClassRef:
    node: ast.ClassDef


@dataclass
class _ApplyRef:
    """``Fn.apply`` of an autograd Function class: calling it runs forward, then
    backward with the same ctx (where backward kernels are built)."""
    node: ast.ClassDef


@dataclass
class _Ctx:
    """An object: an autograd ctx (attributes forward sets, save_for_backward's
    tensors) or an instance of one of the file's classes (a config object), whose
    methods ``cls`` holds."""
    values: dict
    cls: object = None

    def method(self, name):
        if self.cls is None:
            return None
        for s in self.cls.body:
            if isinstance(s, ast.FunctionDef) and s.name == name:
                return s
        return None


@dataclass
class _FuncRef:
    node: ast.FunctionDef


class _Return(Exception):
    def __init__(self, value):
        super().__init__()
        self.value = value


class _Budget(Exception):
    pass


_DTYPE_NAMES = re.compile(
    r"^(u?int(1|4|8|16|32|64)|float(16|32|64)|bfloat16|half|float|double|bool|"
    r"float8\w*|float4\w*|float6\w*|tfloat32|dtype)$")


def _dotted(node):
    """'a.b.c' for a Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


class Module:
    """One example file: its imports, kernels and the call sites of its kernels."""

    STEP_BUDGET = 200_000  # evaluator steps per file: a loop-heavy driver stops early
    MAX_DEPTH = 6  # nested calls of the file's own functions
    LOOP_ITERATIONS = 16  # iterations of a driver's for loop that are walked

    def __init__(self, source, path="<source>"):
        self.path = path
        self.tree = ast.parse(source, filename=path)
        self.tilelang = {"tilelang"}  # names bound to the tilelang module
        self.language = {"T"}  # names bound to tilelang.language
        self.jit_names = set()  # bare names of tilelang.jit
        self.autotune_names = set()
        self.funcs = {}  # module-level function name -> node
        self.classes = {}  # module-level class name -> node (autograd Functions)
        self.kernels = {}  # entry name -> KernelDef
        self.calls = {}  # kernel name -> list of (bindings dict, unbindable names)
        # id(def) of a function enclosing a nested kernel -> the bindings of each call
        # of it the walk made (literal arguments only)
        self.enclosing_calls = {}
        self._steps = 0
        self.module_env = {}  # the module's top-level names, once discover() ran
        self._maybe_returns = []  # per active call: values returned under unknown tests
        self._read_imports()
        self._find_kernels()
        self._nested_by_node = {id(k.node): k.name for k in self.kernels.values()
                                if k.nested and not k.in_class}
        self._enclosing = {id(f) for k in self.kernels.values() if k.nested and not k.in_class
                           for f in k.chain}

    # -- imports and kernels --

    def _read_imports(self):
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name == "tilelang" and a.asname:
                        self.tilelang.add(a.asname)
                    elif a.name == "tilelang.language" and a.asname:
                        self.language.add(a.asname)
            elif isinstance(node, ast.ImportFrom) and node.module:
                for a in node.names:
                    bound = a.asname or a.name
                    if node.module == "tilelang" and a.name == "language":
                        self.language.add(bound)
                    elif node.module == "tilelang" and a.name == "jit":
                        self.jit_names.add(bound)
                    elif node.module in ("tilelang", "tilelang.autotuner") and \
                            a.name == "autotune":
                        self.autotune_names.add(bound)

    def _is_jit(self, dec):
        d = _dotted(dec.func if isinstance(dec, ast.Call) else dec)
        if d is None:
            return False
        return d in self.jit_names or any(d == f"{t}.jit" for t in self.tilelang)

    def _is_prim_func(self, dec):
        d = _dotted(dec.func if isinstance(dec, ast.Call) else dec)
        return d is not None and (any(d == f"{t}.prim_func" for t in self.language) or
                                  d == "tilelang.language.prim_func")

    def _is_autotune(self, dec):
        if not isinstance(dec, ast.Call):
            return False
        d = _dotted(dec.func)
        return d is not None and (d in self.autotune_names or
                                  any(d in (f"{t}.autotune", f"{t}.autotuner.autotune")
                                      for t in self.tilelang))

    def _defines_prim_func(self, body):
        """Kiln's rule: a @T.prim_func def in this body, looking through control flow
        but not into nested functions."""
        for s in body:
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if any(self._is_prim_func(d) for d in s.decorator_list):
                    return True
                continue
            if isinstance(s, ast.ClassDef):
                continue
            for attr in ("body", "orelse", "finalbody"):
                if self._defines_prim_func(getattr(s, attr, []) or []):
                    return True
            for h in getattr(s, "handlers", []) or []:
                if self._defines_prim_func(h.body):
                    return True
        return False

    def _kernel_form(self, fn):
        """'jit', 'factory', 'prim_func' or None."""
        if self._defines_prim_func(fn.body):
            return "factory"
        if any(self._is_prim_func(d) for d in fn.decorator_list):
            return "prim_func"
        if any(self._is_jit(d) for d in fn.decorator_list):
            return "jit"
        return None

    def _find_kernels(self):
        for s in self.tree.body:
            if isinstance(s, ast.FunctionDef):
                self.funcs[s.name] = s
                form = self._kernel_form(s)
                if form:
                    self.kernels[s.name] = self._kernel_def(s.name, form, s)
                    continue
            if isinstance(s, ast.ClassDef):
                self.classes[s.name] = s
            if isinstance(s, ast.FunctionDef):
                self._find_nested(s, s.name, [s], "")
            elif isinstance(s, ast.ClassDef):
                self._find_nested(s, s.name, [], s.name)

    @staticmethod
    def _direct_defs(body):
        """The functions running ``body`` defines: defs in it, looking through control
        flow but not into other functions or classes (Kiln's rule for a dotted entry)."""
        out = []
        for s in body:
            if isinstance(s, ast.FunctionDef):
                out.append(s)
                continue
            if isinstance(s, (ast.ClassDef, ast.AsyncFunctionDef)):
                continue
            for attr in ("body", "orelse", "finalbody"):
                out += Module._direct_defs(getattr(s, attr, []) or [])
            for h in getattr(s, "handlers", []) or []:
                out += Module._direct_defs(h.body)
        return out

    def _find_nested(self, outer, prefix, chain, in_class):
        """Kernels defined inside ``outer`` (a function ``chain`` leads to), named by
        their dotted path. A kernel's own nested @T.prim_func is its kernel, not another
        one, so kernels are not looked into."""
        for s in self._direct_defs(outer.body):
            name = f"{prefix}.{s.name}"
            form = self._kernel_form(s)
            if form:
                k = self._kernel_def(name, form, s, nested=True)
                k.chain, k.in_class = list(chain), in_class
                self.kernels.setdefault(name, k)
            else:
                self._find_nested(s, name, chain + [s], in_class)

    def _kernel_def(self, name, form, fn, nested=False):
        k = KernelDef(name=name, form=form, node=fn, nested=nested)
        args = fn.args
        positional = args.posonlyargs + args.args
        k.params = [a.arg for a in positional] + [a.arg for a in args.kwonlyargs]
        for a, d in zip(positional[len(positional) - len(args.defaults):], args.defaults):
            k.defaults[a.arg] = d
        for a, d in zip(args.kwonlyargs, args.kw_defaults):
            if d is not None:
                k.defaults[a.arg] = d
        k.var_kw = args.kwarg is not None
        if form == "jit":
            for s in ast.walk(fn):
                if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and \
                        s.value is None:
                    k.tensor_params.add(s.target.id)
                    dims = self._annotated_dims(s.annotation)
                    if dims is not None:
                        k.tensor_dims[s.target.id] = dims
                if isinstance(s, ast.Call) and isinstance(s.func, ast.Attribute) and \
                        s.func.attr in ("const", "dynamic") and s.args and \
                        isinstance(s.args[0], ast.Constant) and isinstance(s.args[0].value, str):
                    k.consts += [n.strip() for n in s.args[0].value.split(",") if n.strip()]
        return k

    @staticmethod
    def _annotated_dims(ann):
        """The dimensions of `T.Tensor([M, N], dtype)` / `T.Tensor((M, N), ...)` /
        `T.Tensor[(M, N), dtype]`: each a symbol's name or None; None when the
        annotation is not one of these."""
        shape = None
        if isinstance(ann, ast.Call) and isinstance(ann.func, ast.Attribute) and \
                ann.func.attr == "Tensor" and ann.args:
            shape = ann.args[0]
        elif isinstance(ann, ast.Subscript) and isinstance(ann.value, ast.Attribute) and \
                ann.value.attr == "Tensor":
            sl = ann.slice
            shape = sl.elts[0] if isinstance(sl, ast.Tuple) and sl.elts else sl
        if not isinstance(shape, (ast.List, ast.Tuple)):
            return None
        return [e.id if isinstance(e, ast.Name) else None for e in shape.elts]

    def bindable_names(self, k):
        names = [p for p in k.params if p not in k.tensor_params]
        return names + [c for c in k.consts if c not in names]

    # -- the evaluator --

    def _tick(self):
        self._steps += 1
        if self._steps > self.STEP_BUDGET:
            raise _Budget()

    def _safe_eval(self, node, env):
        try:
            return self.eval(node, env)
        except (_Budget, RecursionError):
            return UNKNOWN

    def lookup(self, name, env):
        if name in env:
            return env[name]
        if name in self.module_env:
            return self.module_env[name]
        if name in self.kernels:
            return _KernelRef((name,))
        if name in self.funcs:
            return _FuncRef(self.funcs[name])
        if name in self.classes:
            return _ClassRef(self.classes[name])
        return {"True": True, "False": False, "None": None}.get(name, UNKNOWN)

    def eval(self, node, env, depth=0):
        self._tick()
        m = getattr(self, "_eval_" + type(node).__name__, None)
        if m is None:
            # Still visit sub-expressions: a kernel call may hide inside anything.
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self.eval(child, env, depth)
            return UNKNOWN
        return m(node, env, depth)

    def _eval_Constant(self, node, env, depth):
        return node.value

    def _eval_Name(self, node, env, depth):
        return self.lookup(node.id, env)

    def _eval_Attribute(self, node, env, depth):
        base = _dotted(node.value)
        if base is not None and _DTYPE_NAMES.match(node.attr):
            if base in self.language or base == "tilelang.language":
                return DType(f"T.{node.attr}")
            if base == "torch":
                return DType(f"torch.{node.attr}")
            if base in ("np", "numpy"):
                return node.attr
        value = self.eval(node.value, env, depth)
        if isinstance(value, _Namespace):
            return value.values.get(node.attr, UNKNOWN)
        if isinstance(value, _Ctx):
            if node.attr in value.values:
                return value.values[node.attr]
            m = value.method(node.attr)
            if m is not None and depth < self.MAX_DEPTH and \
                    any(_dotted(d) == "property" for d in m.decorator_list):
                return self.call_function(m, [value], {}, depth + 1)
            return UNKNOWN
        if isinstance(value, _ClassRef) and node.attr == "apply":
            return _ApplyRef(value.node)
        if isinstance(value, _Tensor) and node.attr == "shape":
            return value.shape
        if isinstance(value, _Tensor) and node.attr == "dtype":
            return value.dtype if value.dtype is not None else UNKNOWN
        if isinstance(value, _Tensor) and node.attr in ("T", "mT"):
            return _Tensor(tuple(reversed(value.shape)))
        return UNKNOWN

    def _eval_Tuple(self, node, env, depth):
        return tuple(self._elts(node.elts, env, depth))

    def _eval_List(self, node, env, depth):
        return list(self._elts(node.elts, env, depth))

    def _elts(self, elts, env, depth):
        out = []
        for e in elts:
            if isinstance(e, ast.Starred):
                v = self.eval(e.value, env, depth)
                if isinstance(v, (list, tuple)):
                    out.extend(v)
                else:
                    out.append(UNKNOWN)
            else:
                out.append(self.eval(e, env, depth))
        return out

    def _eval_Dict(self, node, env, depth):
        out = {}
        for k, v in zip(node.keys, node.values):
            val = self.eval(v, env, depth)
            if k is None:
                if isinstance(val, dict):
                    out.update(val)
                continue
            key = self.eval(k, env, depth)
            if isinstance(key, (str, int, DType)):
                out[key] = val
        return out

    def _eval_JoinedStr(self, node, env, depth):
        for v in node.values:
            self.eval(v, env, depth)
        return UNKNOWN

    _BINOPS = {
        ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
        ast.Mult: lambda a, b: a * b, ast.Div: lambda a, b: a / b,
        ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
        ast.Pow: lambda a, b: a ** b, ast.LShift: lambda a, b: a << b,
        ast.RShift: lambda a, b: a >> b, ast.BitAnd: lambda a, b: a & b,
        ast.BitOr: lambda a, b: a | b, ast.BitXor: lambda a, b: a ^ b,
    }

    @staticmethod
    def _scalar(v):
        return isinstance(v, (int, float, bool)) and not isinstance(v, _Unknown)

    def _eval_BinOp(self, node, env, depth):
        a = self.eval(node.left, env, depth)
        b = self.eval(node.right, env, depth)
        op = self._BINOPS.get(type(node.op))
        if op is None:
            return UNKNOWN
        # Tensor arithmetic keeps the tensor's shape (`torch.randn(...) / 10`).
        if isinstance(a, _Tensor) and (self._scalar(b) or isinstance(b, _Tensor)):
            return a
        if isinstance(b, _Tensor) and self._scalar(a):
            return b
        ok = (self._scalar(a) and self._scalar(b)) or \
             (isinstance(a, (list, tuple, str)) and isinstance(b, (list, tuple, str, int)))
        if not ok:
            return UNKNOWN
        if isinstance(a, (list, tuple, str)) and isinstance(b, int) and b > 4096:
            return UNKNOWN
        if type(node.op) is ast.Pow and self._scalar(b) and abs(b) > 64:
            return UNKNOWN
        try:
            return op(a, b)
        except Exception:  # division by zero, type mismatch: not knowable
            return UNKNOWN

    def _eval_UnaryOp(self, node, env, depth):
        v = self.eval(node.operand, env, depth)
        if not self._scalar(v):
            return UNKNOWN if not isinstance(node.op, ast.Not) or v is UNKNOWN else (not v)
        if isinstance(node.op, ast.USub):
            return -v
        if isinstance(node.op, ast.UAdd):
            return +v
        if isinstance(node.op, ast.Not):
            return not v
        if isinstance(node.op, ast.Invert):
            return ~v if isinstance(v, int) else UNKNOWN
        return UNKNOWN

    def _eval_BoolOp(self, node, env, depth):
        values = [self.eval(v, env, depth) for v in node.values]
        if any(v is UNKNOWN for v in values):
            return UNKNOWN
        result = values[0]
        for v in values[1:]:
            if isinstance(node.op, ast.And):
                result = result and v
            else:
                result = result or v
        return result

    def _eval_Compare(self, node, env, depth):
        left = self.eval(node.left, env, depth)
        rights = [self.eval(c, env, depth) for c in node.comparators]
        if left is UNKNOWN or any(r is UNKNOWN for r in rights):
            return UNKNOWN
        ops = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
               ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b,
               ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
               ast.Is: lambda a, b: a is b, ast.IsNot: lambda a, b: a is not b,
               ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
        try:
            for op, r in zip(node.ops, rights):
                if not ops[type(op)](left, r):
                    return False
                left = r
            return True
        except Exception:
            return UNKNOWN

    def _eval_IfExp(self, node, env, depth):
        test = self.eval(node.test, env, depth)
        body = self.eval(node.body, env, depth)
        orelse = self.eval(node.orelse, env, depth)
        if isinstance(body, _KernelRef) and isinstance(orelse, _KernelRef):
            first, second = (body, orelse) if test is UNKNOWN or test else (orelse, body)
            return _KernelRef(first.names + second.names)
        if test is UNKNOWN:
            return UNKNOWN
        return body if test else orelse

    def _eval_Subscript(self, node, env, depth):
        value = self.eval(node.value, env, depth)
        index = self.eval(node.slice, env, depth)
        if isinstance(value, dict) and value and \
                all(isinstance(v, _KernelRef) for v in value.values()):
            # A table of kernel variants (`KERNELS[args.kernel]`): the chosen one,
            # then the others a command-line flag could choose.
            chosen = value.get(index) if isinstance(index, (int, str)) else None
            names = list(chosen.names) if chosen else []
            for v in value.values():
                names += [n for n in v.names if n not in names]
            return _KernelRef(tuple(names))
        if isinstance(value, (list, tuple, dict, str)) and isinstance(index, (int, str, DType)):
            try:
                return value[index]
            except (IndexError, KeyError, TypeError):
                return UNKNOWN
        return UNKNOWN

    def _eval_ListComp(self, node, env, depth):
        return self._comprehension(node, env, depth, lambda e: [self.eval(node.elt, e, depth)])

    def _eval_GeneratorExp(self, node, env, depth):
        return self._eval_ListComp(node, env, depth)

    def _eval_DictComp(self, node, env, depth):
        out = {}

        def one(e):
            k = self.eval(node.key, e, depth)
            v = self.eval(node.value, e, depth)
            return [(k, v)]

        items = self._comprehension(node, env, depth, one)
        if items is UNKNOWN:
            return UNKNOWN
        for k, v in items:
            if isinstance(k, (str, int)):
                out[k] = v
        return out

    def _comprehension(self, node, env, depth, produce):
        results = []

        def loop(gens, e):
            if not gens:
                results.extend(produce(e))
                return True
            g = gens[0]
            it = self.eval(g.iter, e, depth)
            if not isinstance(it, (list, tuple, range, dict)):
                return False
            for item in (list(it) if not isinstance(it, dict) else list(it.keys())):
                inner = dict(e)
                self._assign(g.target, item, inner)
                if all(self.eval(c, inner, depth) is True for c in g.ifs):
                    if not loop(gens[1:], inner):
                        return False
            return True

        return results if loop(node.generators, dict(env)) else UNKNOWN

    def _eval_Call(self, node, env, depth):
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                v = self.eval(a.value, env, depth)
                args.extend(v if isinstance(v, (list, tuple)) else [UNKNOWN])
            else:
                args.append(self.eval(a, env, depth))
        kwargs = {}
        for kw in node.keywords:
            v = self.eval(kw.value, env, depth)
            if kw.arg is None:
                if isinstance(v, dict):
                    kwargs.update({k: x for k, x in v.items() if isinstance(k, str)})
                else:
                    kwargs["**"] = UNKNOWN
            else:
                kwargs[kw.arg] = v
        func = node.func
        # A kernel: kernel(...), kernel.compile(...), kernel.get_tir(...) (the
        # program without compiling it: its bindings all the same).
        if isinstance(func, ast.Name) and func.id in self.kernels and func.id not in env:
            return self._record(func.id, args, kwargs)
        if isinstance(func, ast.Attribute) and func.attr in KERNEL_BUILDERS and \
                isinstance(func.value, ast.Name) and func.value.id in self.kernels and \
                func.value.id not in env:
            return self._record(func.value.id, args, kwargs)
        if isinstance(func, ast.Attribute) and func.attr in KERNEL_BUILDERS:
            ref = self.eval(func.value, env, depth)
            if isinstance(ref, _KernelRef):
                for n in ref.names:
                    self._record(n, args, kwargs)
                return _KernelObj(ref.names[0])
        d = _dotted(func)
        if d is not None and (d == "from_kernel" or d.endswith(".from_kernel")):
            # AutoTuner.from_kernel(kernel=fn, configs=[...]): the tuner's first config
            # binds a nested kernel's tunables as @autotune's would.
            self._from_kernel(kwargs.get("kernel", args[0] if args else None),
                              kwargs.get("configs", args[1] if len(args) > 1 else None))
            return UNKNOWN
        if d is not None:
            builtin = self._builtin(d, args, kwargs)
            if builtin is not None:
                return builtin
        if isinstance(func, ast.Attribute):
            target = self.eval(func.value, env, depth)
            if isinstance(target, _Tensor):
                return self._tensor_method(target, func.attr, args)
            if isinstance(target, _ClassRef) and func.attr == "apply":
                return self._apply(target.node, args, kwargs, depth)
            if isinstance(target, _Ctx):
                if func.attr == "save_for_backward":
                    target.values["saved_tensors"] = tuple(args)
                m = target.method(func.attr)
                if m is not None and depth < self.MAX_DEPTH:
                    return self.call_function(m, [target] + args, kwargs, depth + 1)
                return UNKNOWN
            if isinstance(target, _ArgParser):
                return self._argparse(target, func.attr, args, kwargs)
            if isinstance(target, list) and func.attr in ("append", "extend"):
                if func.attr == "append" and args:
                    target.append(args[0])
                elif args and isinstance(args[0], (list, tuple)):
                    target.extend(args[0])
                return None
            if isinstance(target, dict) and func.attr in ("items", "keys", "values", "get"):
                if func.attr == "get" and args:
                    return target.get(args[0], args[1] if len(args) > 1 else None)
                return list(getattr(target, func.attr)())
            if isinstance(target, dict) and func.attr == "update" and args and \
                    isinstance(args[0], dict):
                target.update(args[0])
                return None
            return UNKNOWN
        callee = self.eval(func, env, depth) if not isinstance(func, ast.Name) else \
            self.lookup(func.id, env)
        if isinstance(callee, _FuncRef) and id(callee.node) in self._nested_by_node:
            return self._record(self._nested_by_node[id(callee.node)], args, kwargs)
        if isinstance(callee, _FuncRef) and depth < self.MAX_DEPTH:
            return self.call_function(callee.node, args, kwargs, depth + 1)
        if isinstance(callee, _ApplyRef):
            return self._apply(callee.node, args, kwargs, depth)
        if isinstance(callee, _ClassRef) and depth < self.MAX_DEPTH:
            return self._instantiate(callee.node, args, kwargs, depth)
        if isinstance(callee, _Ctx) and depth < self.MAX_DEPTH:
            # Calling an instance of one of the file's classes: its __call__, or
            # forward for a torch.nn.Module (`attn = Attn(...); out = attn(q, k, v)`).
            m = callee.method("__call__") or callee.method("forward")
            if m is not None:
                return self.call_function(m, [callee] + args, kwargs, depth + 1)
        if isinstance(callee, _KernelRef):
            for n in callee.names:
                self._record(n, args, kwargs)
            return _KernelObj(callee.names[0])
        return UNKNOWN

    def _from_kernel(self, kernel, configs):
        if not isinstance(kernel, _FuncRef) or id(kernel.node) not in self._nested_by_node:
            return
        k = self.kernels[self._nested_by_node[id(kernel.node)]]
        if not k.autotune_first and isinstance(configs, (list, tuple)) and configs and \
                isinstance(configs[0], dict):
            k.autotune_first = dict(configs[0])

    def _instantiate(self, cls, args, kwargs, depth):
        """An instance of one of the file's classes: dataclass-style fields (class-level
        annotations, with their defaults), then __init__ when the class has one."""
        obj = _Ctx({}, cls)
        fields = []
        for s in cls.body:
            if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name):
                fields.append(s.target.id)
                if s.value is not None:
                    obj.values[s.target.id] = self._safe_eval(s.value, {})
            elif isinstance(s, ast.Assign):
                for t in s.targets:
                    if isinstance(t, ast.Name):
                        obj.values[t.id] = self._safe_eval(s.value, {})
        init = obj.method("__init__")
        if init is not None:
            self.call_function(init, [obj] + list(args), kwargs, depth + 1)
        else:
            for name, v in zip(fields, args):
                obj.values[name] = v
            for name, v in kwargs.items():
                if name in fields:
                    obj.values[name] = v
        return obj

    def _apply(self, cls, args, kwargs, depth):
        """An autograd Function's apply(): forward(ctx, *args), then backward(ctx, ...)
        with unknown gradients, both with the ctx forward filled."""
        if depth >= self.MAX_DEPTH:
            return UNKNOWN
        methods = {s.name: s for s in cls.body if isinstance(s, ast.FunctionDef)}
        ctx = _Ctx({})
        out = UNKNOWN
        if "forward" in methods:
            out = self.call_function(methods["forward"], [ctx] + list(args), kwargs, depth + 1)
        if "backward" in methods:
            self.call_function(methods["backward"], [ctx], {}, depth + 1)
        return out

    _SHAPE_KEEPING = {"cuda", "cpu", "half", "float", "bfloat16", "to", "contiguous",
                      "requires_grad_", "detach", "clone", "normal_", "uniform_", "zero_",
                      "fill_", "abs", "exp", "clamp", "mul", "add", "div", "sub", "type",
                      "softmax", "sigmoid", "relu", "neg", "sqrt", "int", "long", "bool"}

    def _tensor_method(self, t, method, args):
        if method == "size" and not args:
            return t.shape
        if method == "size" and len(args) == 1 and isinstance(args[0], int):
            try:
                return t.shape[args[0]]
            except IndexError:
                return UNKNOWN
        if method in ("dim", "ndimension"):
            return len(t.shape)
        if method in self._SHAPE_KEEPING:
            return t
        if method in ("t", "transpose") and len(t.shape) == 2:
            return _Tensor(tuple(reversed(t.shape)))
        return UNKNOWN

    _TENSOR_MAKERS = {"randn", "rand", "zeros", "ones", "empty", "full", "randint",
                      "randn_like", "rand_like", "zeros_like", "ones_like", "empty_like",
                      "full_like", "tensor"}

    def _make_tensor(self, name, args, kwargs):
        if name.endswith("_like"):
            return args[0] if args and isinstance(args[0], _Tensor) else UNKNOWN
        if name == "tensor":
            return UNKNOWN
        dims = args
        if name == "randint":
            dims = [a for a in args[2:3]] if len(args) >= 3 else [kwargs.get("size", UNKNOWN)]
        elif name == "full":
            dims = args[:1]
        if "size" in kwargs and name != "randint":
            dims = [kwargs["size"]]
        if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
            dims = list(dims[0])
        dtype = kwargs.get("dtype")
        if dims and all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
            return _Tensor(tuple(dims), dtype if isinstance(dtype, DType) else None)
        return UNKNOWN

    def _builtin(self, d, args, kwargs):
        """Python builtins and stdlib helpers the drivers use; None when not one."""
        if d == "argparse.ArgumentParser":
            return _ArgParser()
        if d in ("argparse.Namespace", "types.SimpleNamespace", "SimpleNamespace"):
            return _Namespace({n: v for n, v in kwargs.items() if n != "**"})
        if d.startswith("torch.") and d[6:] in self._TENSOR_MAKERS:
            return self._make_tensor(d[6:], args, kwargs)
        if d in {f"{t}.dtype" for t in self.language} and len(args) == 1 and \
                isinstance(args[0], (DType, str)):
            return args[0]  # T.dtype(x) of a dtype is that dtype
        if d == "determine_fp8_type" or d.endswith(".determine_fp8_type"):
            # TileLang's fp8 dtype of a format on the target (CUDA's: e4m3fn, e5m2).
            fmt = args[0] if args else kwargs.get("fp8_format", "e4m3")
            if fmt in ("e4m3", "e5m2"):
                return DType("T.float8_e4m3fn" if fmt == "e4m3" else "T.float8_e5m2")
        known = all(a is not UNKNOWN for a in args)
        if not known:
            return None
        try:
            if d in ("int", "float", "bool", "str", "abs", "min", "max", "len", "round",
                     "sum", "sorted", "tuple", "list", "dict", "range", "zip", "enumerate",
                     "reversed"):
                if d in ("list", "tuple", "sorted", "reversed", "zip", "enumerate") and \
                        not all(isinstance(a, (list, tuple, range, dict, str)) for a in args):
                    return None
                if d == "range" and (not args or not all(isinstance(a, int) for a in args)):
                    return None
                if d == "range":
                    r = range(*args)
                    return list(r) if len(r) <= 4096 else None
                if d == "dict":
                    base = dict(args[0]) if args else {}
                    base.update(kwargs)
                    return base
                fn = {"int": int, "float": float, "bool": bool, "str": str, "abs": abs,
                      "min": min, "max": max, "len": len, "round": round, "sum": sum,
                      "sorted": sorted, "tuple": tuple, "list": list, "zip": zip,
                      "enumerate": enumerate, "reversed": reversed}[d]
                v = fn(*args)
                return list(v) if d in ("zip", "enumerate", "reversed") else v
            if d == "itertools.product" and all(isinstance(a, (list, tuple)) for a in args):
                total = math.prod(len(a) for a in args)
                return [tuple(p) for p in itertools.product(*args)] if total <= 100_000 \
                    else None
            if d in ("math.ceil", "math.floor", "math.log2", "math.sqrt", "math.gcd",
                     "math.prod", "math.log"):
                return getattr(math, d.split(".")[1])(*args)
            # Host-side integer helpers of TileLang and Triton (ceiling division, next
            # power of two): the driver computes a binding with them.
            root, _, leaf = d.rpartition(".")
            ints = len(args) >= 1 and all(isinstance(a, int) and not isinstance(a, bool)
                                          for a in args)
            if ints and leaf in ("cdiv", "ceildiv") and len(args) == 2 and args[1] and \
                    (root in self.tilelang or root in self.language or root == "triton"):
                return -(-args[0] // args[1])
            if ints and leaf == "next_power_of_2" and len(args) == 1 and \
                    root.split(".")[0] in (self.tilelang | {"triton"}):
                return 1 if args[0] <= 1 else 1 << (args[0] - 1).bit_length()
        except Exception:
            return None
        return None

    def _argparse(self, parser, method, args, kwargs):
        if method == "add_argument":
            flags = [a for a in args if isinstance(a, str)]
            dest = kwargs.get("dest")
            if not isinstance(dest, str):
                longs = [f for f in flags if f.startswith("--")]
                name = (longs or flags or ["?"])[0].lstrip("-")
                dest = name.replace("-", "_")
            default = kwargs.get("default", None)
            if "default" not in kwargs and kwargs.get("action") == "store_true":
                default = False
            if "default" not in kwargs and kwargs.get("action") == "store_false":
                default = True
            parser.defaults[dest] = default
            return UNKNOWN
        if method in ("parse_args",):
            return _Namespace(dict(parser.defaults))
        if method == "parse_known_args":
            return (_Namespace(dict(parser.defaults)), [])
        return UNKNOWN

    def _record(self, name, args, kwargs):
        k = self.kernels[name]
        binds, unbindable = {}, []
        positional = [p for p in k.params]
        for p, v in zip(positional, args):
            binds[p] = v
        binds.update({n: v for n, v in kwargs.items() if n != "**"})
        # A tensor of known shape passed for a parameter annotated with T.const
        # symbols (`logits: T.Tensor([M, N], dtype)`) gives those symbols their values.
        for p, dims in k.tensor_dims.items():
            t = binds.get(p)
            if not isinstance(t, _Tensor) or len(t.shape) != len(dims):
                continue
            for sym, extent in zip(dims, t.shape):
                if sym in k.consts and sym not in binds:
                    binds[sym] = extent
        valid = set(self.bindable_names(k))
        chosen = {}
        for n, v in binds.items():
            if n not in valid and not k.var_kw:
                continue
            if v is UNKNOWN or v is None:
                continue
            text = binding_text(v)
            if text is None:
                if isinstance(v, (list, tuple)):
                    unbindable.append(n)
                continue
            chosen[n] = text
        self.calls.setdefault(name, []).append((chosen, unbindable, "**" in kwargs))
        return _KernelObj(name)

    # -- statements --

    def call_function(self, fn, args, kwargs, depth):
        env = {}
        a = fn.args
        positional = a.posonlyargs + a.args
        defaults = dict(zip([p.arg for p in positional[len(positional) - len(a.defaults):]],
                            a.defaults))
        for p, d in zip(a.kwonlyargs, a.kw_defaults):
            if d is not None:
                defaults[p.arg] = d
        for p in positional + a.kwonlyargs:
            env[p.arg] = UNKNOWN
        for name, d in defaults.items():
            env[name] = self._safe_eval(d, {})
        for p, v in zip(positional, args):
            env[p.arg] = v
        for n, v in kwargs.items():
            if n in env:
                env[n] = v
        if id(fn) in self._enclosing:
            given = {p.arg: v for p, v in zip(positional, args)}
            given.update({n: v for n, v in kwargs.items() if n in env})
            texts = {n: binding_text(v) for n, v in given.items()
                     if v is not UNKNOWN and v is not None}
            self.enclosing_calls.setdefault(id(fn), []).append(
                {n: t for n, t in texts.items() if t is not None})
        self._maybe_returns.append([])
        try:
            self.exec_body(fn.body, env, depth)
        except _Return as r:
            return r.value
        finally:
            maybe = self._maybe_returns.pop()
        return maybe[0] if maybe else None

    def _assign(self, target, value, env):
        if isinstance(target, ast.Name):
            env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, (list, tuple)) and len(value) == len(target.elts) and \
                    not any(isinstance(e, ast.Starred) for e in target.elts):
                for t, v in zip(target.elts, value):
                    self._assign(t, v, env)
            else:
                for t in target.elts:
                    self._assign(t.value if isinstance(t, ast.Starred) else t, UNKNOWN, env)
        elif isinstance(target, ast.Attribute):
            obj = self.eval(target.value, env)
            if isinstance(obj, (_Ctx, _Namespace)):
                obj.values[target.attr] = value
        elif isinstance(target, ast.Subscript):
            container = self.eval(target.value, env)
            key = self.eval(target.slice, env)
            if isinstance(container, dict) and isinstance(key, (str, int)):
                container[key] = value

    @staticmethod
    def _merge_kernel_refs(env, other):
        """Variables that hold kernels in ``other`` (another branch's variables) hold
        those kernels in ``env`` too, after their own."""
        for name, v in other.items():
            if not isinstance(v, _KernelRef) or env.get(name) == v:
                continue
            cur = env.get(name)
            if isinstance(cur, _KernelRef):
                env[name] = _KernelRef(cur.names + tuple(n for n in v.names if n not in cur.names))
            elif cur is None or cur is UNKNOWN:
                env[name] = v

    def exec_body(self, body, env, depth):
        for s in body:
            self.exec_stmt(s, env, depth)

    def exec_stmt(self, s, env, depth):
        self._tick()
        if isinstance(s, ast.Assign):
            v = self.eval(s.value, env, depth)
            for t in s.targets:
                self._assign(t, v, env)
        elif isinstance(s, ast.AnnAssign):
            if s.value is not None:
                self._assign(s.target, self.eval(s.value, env, depth), env)
        elif isinstance(s, ast.AugAssign):
            cur = self.eval(s.target, env, depth) if isinstance(s.target, ast.Name) else UNKNOWN
            rhs = self.eval(s.value, env, depth)
            op = self._BINOPS.get(type(s.op))
            try:
                v = op(cur, rhs) if op and self._scalar(cur) and self._scalar(rhs) else UNKNOWN
            except Exception:
                v = UNKNOWN
            self._assign(s.target, v, env)
        elif isinstance(s, ast.Expr):
            self.eval(s.value, env, depth)
        elif isinstance(s, ast.Return):
            raise _Return(self.eval(s.value, env, depth) if s.value is not None else None)
        elif isinstance(s, ast.If):
            test = self.eval(s.test, env, depth)
            if test is UNKNOWN:
                # Both branches, and a `return` in one (an early exit on a value
                # only known at run time) does not end the walk.
                # Its value is kept: the function returns the first such value when
                # it ends without a return of its own (a config chosen by a device
                # query: `if sm == 80: return {...}`).
                after_body = env
                for branch in (s.body, s.orelse):
                    try:
                        self.exec_body(branch, env, depth)
                    except _Return as r:
                        if self._maybe_returns and r.value is not None:
                            self._maybe_returns[-1].append(r.value)
                    if branch is s.body:
                        after_body = dict(env)
                self._merge_kernel_refs(env, after_body)
            else:
                # The branch not taken still shows how the file calls its kernels
                # (a variant switch): walked on a copy, so it changes nothing here
                # but the kernels a variable may hold (`kernel = a if x else b`).
                shadow = dict(env)
                try:
                    self.exec_body(s.orelse if test else s.body, shadow, depth)
                except _Return:
                    pass
                self.exec_body(s.body if test else s.orelse, env, depth)
                self._merge_kernel_refs(env, shadow)
        elif isinstance(s, ast.For):
            it = self.eval(s.iter, env, depth)
            if isinstance(it, dict):
                it = list(it.keys())
            if isinstance(it, (list, tuple, range)) and len(it) > 0:
                # The first iterations show the calls; a driver's loop over every
                # token would only spend the step budget.
                for item in list(it)[:self.LOOP_ITERATIONS]:
                    self._assign(s.target, item, env)
                    self.exec_body(s.body, env, depth)
            else:
                self._assign(s.target, UNKNOWN, env)
                self.exec_body(s.body, env, depth)
            self.exec_body(s.orelse, env, depth)
        elif isinstance(s, ast.While):
            self.eval(s.test, env, depth)  # visited once, never looped
            self.exec_body(s.body, env, depth)
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            for item in s.items:
                v = self.eval(item.context_expr, env, depth)
                if item.optional_vars is not None:
                    self._assign(item.optional_vars, UNKNOWN, env)
            self.exec_body(s.body, env, depth)
        elif isinstance(s, ast.Try):
            self.exec_body(s.body, env, depth)
            self.exec_body(s.orelse, env, depth)
            self.exec_body(s.finalbody, env, depth)
        elif isinstance(s, ast.FunctionDef):
            env[s.name] = _FuncRef(s)
            # A closure (`def run(): kernel(q, k, v)` handed to a benchmark helper) sees
            # this scope's names: walked once, here, over a copy of them.
            if depth < self.MAX_DEPTH and self._kernel_form(s) is None:
                inner = dict(env)
                a = s.args
                for p in a.posonlyargs + a.args + a.kwonlyargs:
                    inner[p.arg] = UNKNOWN
                try:
                    self.exec_body(s.body, inner, depth + 1)
                except _Return:
                    pass
        # imports, classes, pass, raise, del, global: nothing to evaluate

    def discover(self):
        """Runs the module's top level, then every function no run has reached, and
        fills self.calls."""
        self.module_env = {}
        reached = set()
        original = self.call_function

        def tracking(fn, args, kwargs, depth):
            reached.add(fn.name)
            return original(fn, args, kwargs, depth)

        self.call_function = tracking
        try:
            for s in self.tree.body:
                if isinstance(s, (ast.FunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
                    continue
                self._steps = 0  # each top-level statement and function: its own budget
                try:
                    self.exec_stmt(s, self.module_env, 0)
                except (_Return, _Budget, RecursionError):
                    pass
            # main() and test functions first (their own defaults), then the rest.
            order = sorted(self.funcs, key=lambda n: (n != "main", not n.startswith("test"), 0))
            for name in order:
                if name in reached or name in self.kernels:
                    continue
                self._steps = 0
                try:
                    tracking(self.funcs[name], [], {}, 1)
                except (_Budget, RecursionError):
                    pass
        finally:
            self.call_function = original
        for k in self.kernels.values():
            self._steps = 0  # a fresh budget: the drivers may have spent theirs
            self._autotune_configs(k)

    def _autotune_configs(self, k):
        """The first config of the kernel's @autotune(configs=...), when it evaluates."""
        for d in k.node.decorator_list:
            if not self._is_autotune(d):
                continue
            for kw in d.keywords:
                if kw.arg == "configs":
                    configs = self._safe_eval(kw.value, {})
                    if isinstance(configs, (list, tuple)) and configs and \
                            isinstance(configs[0], dict) and not k.autotune_first:
                        k.autotune_first = dict(configs[0])

    def bindings_for(self, name):
        """(bindings, reason): the file's bindings of one kernel, or why there are none."""
        binds, reason, _ = self.bindings_and_dynamic(name)
        return binds, reason

    def bindings_and_dynamic(self, name):
        """(bindings, reason, dynamic): bindings_for's answer, and the parameters the
        file's calls pass values of run time to (a token count taken from a tensor's
        shape): Kiln can compile those as dynamic shape symbols (kiln-opt --dynamic)."""
        k = self.kernels[name]
        outer, outer_missing = {}, []
        if k.nested:
            if k.in_class:
                return {}, (f"kernel defined inside class {k.in_class}: Kiln compiles "
                            "module-level functions and functions defined in them"), []
            outer, outer_missing = self._enclosing_bindings(k)
        merged, reason, dynamic = self._kernel_bindings(k, name)
        # kiln-opt binds a name at every level that declares it; the kernel function's
        # own value wins where both levels have one.
        merged = {**{n: v for n, v in outer.items() if n not in merged}, **merged}
        if outer_missing:
            missing = f"no binding discovered for {', '.join(outer_missing)} (the file's " \
                      "calls of it give no literal value)"
            return merged, missing if reason is None else f"{missing}; {reason}", []
        return merged, reason, dynamic

    def _enclosing_bindings(self, k):
        """(bindings, missing) of the functions enclosing a nested kernel: for each, the
        call of it the walk made that gives the most literal arguments; a parameter
        without a default that it does not give is missing ("N of get_best")."""
        binds, missing = {}, []
        for f in k.chain:
            a = f.args
            positional = a.posonlyargs + a.args
            optional = {p.arg for p in positional[len(positional) - len(a.defaults):]}
            optional |= {p.arg for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None}
            best = max(self.enclosing_calls.get(id(f), []), key=len, default={})
            binds.update(best)
            missing += [f"{p.arg} of {f.name}" for p in positional + a.kwonlyargs
                        if p.arg not in optional and p.arg not in best]
        return binds, missing

    def _kernel_bindings(self, k, name):
        required = [p for p in self.bindable_names(k)
                    if p in k.params and (p not in k.defaults or
                                          (isinstance(k.defaults[p], ast.Constant) and
                                           k.defaults[p].value is None))]
        candidates = [(c[0], c[1]) for c in self.calls.get(name, [])]
        if not candidates:
            # A kernel its file never calls takes the module's values of the same names
            # (`M, N, blk_m, blk_k = 8192, 8192, 1, 512` in the __main__ block).
            own = {}
            for p in self.bindable_names(k):
                text = binding_text(self.module_env.get(p, UNKNOWN))
                if text is not None and (p in required or p in k.consts):
                    own[p] = text
            candidates = [(own, [])]
        best = None
        for binds, lists in candidates:
            merged = dict(binds)
            # The first autotune config fills what neither the call nor a default does.
            for n, v in k.autotune_first.items():
                text = binding_text(v)
                if n not in merged and n in required and text is not None:
                    merged[n] = text
            missing = [p for p in required if p not in merged]
            score = (len(missing), -len(merged))
            if best is None or score < best[0]:
                best = (score, merged, missing, lists)
        _, merged, missing, lists = best
        # Parameters defaulting to None are left to the frontend (the kernel may test
        # `x is None`) when the file calls the kernel; the rest must be bound.
        hard = [p for p in missing if p not in k.defaults or name not in self.calls]
        any_list = set(lists).union(*(c[1] for c in candidates))
        as_lists = [p for p in hard if p in any_list]
        if as_lists:
            return merged, (f"no binding discovered for {', '.join(hard)} (the file passes "
                            f"{', '.join(as_lists)} as a list or tuple that kiln-opt --bind "
                            "cannot carry: not all literal ints, or more than "
                            f"{MAX_BINDING_LIST_ITEMS} of them)"), []
        if hard:
            if name not in self.calls:
                return merged, f"no binding discovered for {', '.join(hard)} " \
                               "(the file never calls it)", []
            return merged, (f"no binding discovered for {', '.join(hard)} (the file's calls "
                            "of it give no literal value)"), list(hard)
        return merged, None, []


# The most items kiln-opt --bind takes in a list (frontend::kMaxBindingListItems).
MAX_BINDING_LIST_ITEMS = 4096


def binding_text(v):
    """The --bind text of an evaluated value (a scalar, or a list or tuple of ints as
    Python writes it), or None when it has none."""
    if isinstance(v, (list, tuple)):
        if len(v) > MAX_BINDING_LIST_ITEMS or \
                not all(isinstance(x, int) and not isinstance(x, bool) for x in v):
            return None
        items = ", ".join(str(x) for x in v)
        if isinstance(v, list):
            return f"[{items}]"
        return f"({items},)" if len(v) == 1 else f"({items})"
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, DType):
        return v.text
    if isinstance(v, str) and v and "\n" not in v:
        return v
    return None


# ---------------------------------------------------------------------------
# Running kiln-opt.


# Methods of a @tilelang.jit kernel that build it for the bindings they are given.
KERNEL_BUILDERS = ("compile", "get_tir")


@dataclass
class Result:
    file: str
    entry: str
    form: str
    bindings: dict
    status: str  # emitted, lowering_failed, frontend_rejected, unbound, nested, timeout
    frontend: bool
    cuda: bool
    message: str
    bucket: str
    public: bool
    command: str  # kiln-opt's command line, run in the examples folder ("" if not run)
    # Parameters compiled as dynamic shape symbols (kiln-opt --dynamic): the file
    # passes them values known only at run time.
    dynamic: list = field(default_factory=list)


MEMORY_LIMIT_BYTES = 4 << 30  # per kiln-opt process (address space)


def _limit_memory():
    try:
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))
    except (ImportError, ValueError, OSError):
        pass


def first_message(stderr, stdout=""):
    """The first located line (file:line:col: ...) of kiln-opt's output, else its first
    non-empty line; one line, at most 400 characters."""
    lines = [l.strip() for l in (stderr + "\n" + stdout).splitlines() if l.strip()]
    for l in lines:
        if re.match(r"^\S+:\d+:\d+:", l):
            return l[:400]
    return (lines[0] if lines else "(no message)")[:400]


def run_opt(kiln_opt, examples, rel, entry, bindings, extra, timeout):
    """Runs kiln-opt in the examples folder on the file's relative path, so that its
    messages name the file as the report does. (True|False|None for a timeout, message)."""
    cmd = [kiln_opt, rel, "--entry", entry]
    for n, v in bindings.items():
        cmd += ["--bind", f"{n}={v}"]
    cmd += extra
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           errors="replace", timeout=timeout, preexec_fn=_limit_memory,
                           cwd=examples)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout:g} s: {' '.join(cmd)}"
    if p.returncode < 0 or p.returncode > 2:
        return False, (f"kiln-opt died with status {p.returncode}: {' '.join(cmd)}: "
                       f"{first_message(p.stderr)}")
    return p.returncode == 0, "" if p.returncode == 0 else first_message(p.stderr)


def compile_kernel(job, kiln_opt, examples, target, timeout):
    rel, entry, form, bindings, reason, public = job[:6]
    dynamic = list(job[6]) if len(job) > 6 else []
    dyn_flags = [x for n in dynamic for x in ("--dynamic", n)]

    def result(status, frontend, cuda, message, ran=True):
        bucket = "" if cuda else classify(message, frontend)
        command = "" if not ran else " ".join(shlex.quote(a) for a in [
            "kiln-opt", rel, "--entry", entry, *[x for n, v in bindings.items()
                                                 for x in ("--bind", f"{n}={v}")],
            *dyn_flags, "--emit=cuda", "--target", target])
        return Result(rel, entry, form, bindings, status, frontend, cuda, message, bucket, public,
                      command, dynamic if ran else [])

    if reason is not None and not dynamic:
        return result("nested" if reason.startswith("kernel defined inside") else "unbound",
                      False, False, reason, ran=False)
    ok, msg = run_opt(kiln_opt, examples, rel, entry, bindings,
                      dyn_flags + ["--emit=cuda", "--target", target], timeout)
    if reason is not None:
        # Values of run time, compiled as dynamic shape symbols: counted when the
        # kernel emits; otherwise still a kernel without bindings, with the reason.
        if ok:
            return result("emitted", True, True, "")
        return result("unbound", False, False,
                      f"{reason}; compiled with {', '.join(dynamic)} dynamic: {msg}")
    if ok:
        return result("emitted", True, True, "")
    if ok is None or msg.startswith("kiln-opt died"):
        return result("timeout", False, False, msg)
    fe_ok, fe_msg = run_opt(kiln_opt, examples, rel, entry, bindings,
                             dyn_flags + ["--emit=none", "--target", target], timeout)
    if fe_ok:
        return result("lowering_failed", True, False, msg)
    if fe_ok is None or fe_msg.startswith("kiln-opt died"):
        return result("timeout", False, False, fe_msg)
    return result("frontend_rejected", False, False, fe_msg)


def collect_jobs(examples, only):
    jobs, file_errors = [], []
    for root, dirs, files in os.walk(examples):
        dirs.sort()
        for f in sorted(files):
            if not f.endswith(".py"):
                continue
            path = os.path.join(root, f)
            rel = os.path.relpath(path, examples).replace(os.sep, "/")
            if only and not re.search(only, rel):
                continue
            try:
                with open(path, encoding="utf-8") as fh:
                    source = fh.read()
                mod = Module(source, path)
            except (SyntaxError, UnicodeDecodeError, ValueError) as e:
                file_errors.append((rel, f"{type(e).__name__}: {e}"))
                continue
            if not mod.kernels:
                continue
            mod.discover()
            for name, k in mod.kernels.items():
                binds, reason, dynamic = mod.bindings_and_dynamic(name)
                jobs.append((rel, name, k.form, binds, reason, rel in PUBLIC_SET, dynamic))
    return jobs, file_errors


# ---------------------------------------------------------------------------
# Reports.


def summarize(results):
    files = {}
    for r in results:
        files.setdefault(r.file, []).append(r)
    return {
        "kernels": len(results),
        "files": len(files),
        "frontend_accepted": sum(r.frontend for r in results),
        "cuda_emitted": sum(r.cuda for r in results),
        "files_fully_accepted": sum(all(r.cuda for r in rs) for rs in files.values()),
        "cuda_emitted_dynamic": sum(r.cuda and bool(r.dynamic) for r in results),
    }


def _md_escape(text):
    return text.replace("|", "\\|").replace("\n", " ")


def _bind_text(b, dynamic=()):
    text = " ".join([f"{k}={v}" for k, v in b.items()] + [f"{n}=dynamic" for n in dynamic])
    return text or "(none)"


def markdown(results, meta):
    out = []
    t = summarize(results)
    pub = sorted((r for r in results if r.public), key=lambda r: PUBLIC_SET.index(r.file))
    rest = [r for r in results if not r.public]
    tp, tr = summarize(pub), summarize(rest)
    out.append(f"Measured {meta['date']} at Kiln {meta['kiln_commit']} against the examples in "
               f"`{meta['examples']}`, target `{meta['target']}`, with "
               f"`tests/compat/tilelang_corpus.py`:\n")
    out.append("| set | files | kernels | frontend accepted | CUDA emitted | "
               "files fully accepted |")
    out.append("|---|---|---|---|---|---|")
    for label, s in (("public set", tp), ("the rest", tr), ("all", t)):
        out.append(f"| {label} | {s['files']} | {s['kernels']} | {s['frontend_accepted']} | "
                   f"{s['cuda_emitted']} | {s['files_fully_accepted']} |")
    out.append("")
    if t["cuda_emitted_dynamic"]:
        out.append(f"Of the kernels that emit CUDA, {t['cuda_emitted_dynamic']} take parameters "
                   "whose values the file computes at run time (a token count from a tensor's "
                   "shape): they are compiled with those parameters as dynamic shape symbols "
                   "(`kiln-opt --dynamic NAME`; `NAME=dynamic` in the tables), one kernel for "
                   "every value.\n")
    if meta.get("unparsed"):
        out.append(f"Files Python {sys.version_info.major}.{sys.version_info.minor} could not "
                   "parse (their kernels are not counted): " +
                   ", ".join(f"`{f}` ({_md_escape(m)})" for f, m in meta["unparsed"]) + "\n")
    failed = [r for r in results if not r.cuda]
    counts = {}
    for r in failed:
        counts.setdefault(r.bucket, []).append(r)
    out.append("Failures by feature (first message of each kernel):\n")
    out.append("| feature | kernels | files |")
    out.append("|---|---|---|")
    order = [key for key, _, _ in BUCKETS if key in counts]
    order.sort(key=lambda k: -len(counts[k]))
    for key in order:
        rs = counts[key]
        out.append(f"| {BUCKET_TITLES[key]} | {len(rs)} | {len({r.file for r in rs})} |")
    out.append("")
    out.append("### The public set\n")
    out.append("| file | kernel | bindings | result |")
    out.append("|---|---|---|---|")
    for r in pub:
        res = "CUDA emitted" if r.cuda else f"{BUCKET_TITLES[r.bucket]}: `{_md_escape(r.message)}`"
        out.append(f"| {r.file} | {r.entry} | {_md_escape(_bind_text(r.bindings, r.dynamic))} | {res} |")
    out.append("")
    for key in order:
        out.append(f"### {BUCKET_TITLES[key]} ({len(counts[key])})\n")
        out.append("| file | kernel | first message |")
        out.append("|---|---|---|")
        for r in counts[key]:
            out.append(f"| {r.file} | {r.entry} | `{_md_escape(r.message)}` |")
        out.append("")
    ok = [r for r in results if r.cuda]
    out.append(f"### CUDA emitted ({len(ok)})\n")
    out.append("| file | kernel | bindings |")
    out.append("|---|---|---|")
    for r in ok:
        out.append(f"| {r.file} | {r.entry} | {_md_escape(_bind_text(r.bindings, r.dynamic))} |")
    out.append("")
    return "\n".join(out)


def write_file(path, text):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


BEGIN_MARK = "<!-- tilelang_corpus.py: generated from here -->"
END_MARK = "<!-- tilelang_corpus.py: generated up to here -->"


def splice_report(path, report):
    """The Markdown file's new text: when ``path`` exists and holds both marks (a
    hand-written page such as docs/compatibility.md), its text with only what lies
    between them replaced; otherwise the report alone."""
    try:
        with open(path, encoding="utf-8") as f:
            old = f.read()
    except OSError:
        return report
    begin, end = old.find(BEGIN_MARK), old.find(END_MARK)
    if begin < 0 or end < begin:
        return report
    return old[:begin + len(BEGIN_MARK)] + "\n\n" + report.rstrip("\n") + "\n\n" + old[end:]


def _kiln_commit():
    """The checkout's HEAD, marked when compiler/ holds uncommitted changes (kiln-opt
    may then have been built from them)."""
    here = os.path.dirname(os.path.abspath(__file__))

    def git(*args):
        return subprocess.run(["git", "-C", here, *args], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True, timeout=10).stdout.strip()

    try:
        head = git("rev-parse", "--short", "HEAD") or "unknown"
        root = git("rev-parse", "--show-toplevel")
        dirty = root and git("status", "--porcelain", "--", os.path.join(root, "compiler"))
        return head + (" (plus uncommitted changes in compiler/)" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", required=True, help="TileLang's examples folder")
    ap.add_argument("--kiln-opt", default="build/kiln-opt", help="the kiln-opt binary")
    ap.add_argument("--json", help="write per-kernel results here")
    ap.add_argument("--markdown", help="write the Markdown report here")
    ap.add_argument("--jobs", type=int, default=2, help="kiln-opt processes at once (1-2)")
    ap.add_argument("--target", default="cuda:sm_90", help="kiln-opt --target for CUDA")
    ap.add_argument("--only", help="only example files whose relative path matches this regex")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per kiln-opt run")
    ap.add_argument("--min-emitted", type=int, default=0,
                    help="exit 1 when fewer kernels emit CUDA (a regression gate)")
    ap.add_argument("--skip-if-missing", action="store_true",
                    help="exit 77 (ctest's skip code) when --examples does not exist")
    ap.add_argument("--quiet", action="store_true", help="print only the totals")
    args = ap.parse_args(argv)
    if not os.path.isdir(args.examples):
        print(f"tilelang_corpus: examples folder '{args.examples}' not found (TileLang's "
              "examples sit beside the checkout, which CI does not clone; set "
              "KILN_TILELANG_EXAMPLES)", file=sys.stderr)
        return 77 if args.skip_if_missing else 2
    if not (os.path.isfile(args.kiln_opt) and os.access(args.kiln_opt, os.X_OK)):
        print(f"tilelang_corpus: kiln-opt '{args.kiln_opt}' is not an executable file",
              file=sys.stderr)
        return 2
    if args.jobs < 1 or args.jobs > 2:
        print("tilelang_corpus: --jobs must be 1 or 2 (the build machines have 2 cores)",
              file=sys.stderr)
        return 2
    if args.only:
        try:
            re.compile(args.only)
        except re.error as e:
            print(f"tilelang_corpus: --only: {e}", file=sys.stderr)
            return 2
    kiln_opt, examples = os.path.abspath(args.kiln_opt), os.path.abspath(args.examples)
    jobs, file_errors = collect_jobs(examples, args.only)
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(
            lambda j: compile_kernel(j, kiln_opt, examples, args.target, args.timeout), jobs))
    meta = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "kiln_commit": _kiln_commit(),
        "examples": os.path.normpath(args.examples),
        "target": args.target,
        "unparsed": file_errors,
    }
    totals = summarize(results)
    if args.json:
        doc = {"meta": {k: v for k, v in meta.items() if k != "unparsed"}, "totals": totals,
               "unparsed_files": [{"file": f, "message": m} for f, m in file_errors],
               "kernels": [{k: v for k, v in r.__dict__.items()} for r in results]}
        write_file(args.json, json.dumps(doc, indent=1) + "\n")
    if args.markdown:
        write_file(args.markdown, splice_report(args.markdown, markdown(results, meta)))
    if not args.quiet:
        for r in results:
            if not r.cuda:
                print(f"{r.file} {r.entry}: [{r.bucket}] {r.message}")
    for f, m in file_errors:
        print(f"{f}: not parsed by Python 3.{sys.version_info.minor}: {m}", file=sys.stderr)
    print(f"kernels {totals['kernels']} in {totals['files']} files; frontend accepted "
          f"{totals['frontend_accepted']}; CUDA emitted {totals['cuda_emitted']} "
          f"({totals['cuda_emitted_dynamic']} with dynamic parameters); files fully "
          f"accepted {totals['files_fully_accepted']}")
    if totals["cuda_emitted"] < args.min_emitted:
        print(f"tilelang_corpus: regression: {totals['cuda_emitted']} kernels emit CUDA, "
              f"fewer than --min-emitted {args.min_emitted}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
