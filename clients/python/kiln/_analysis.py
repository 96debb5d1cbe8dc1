"""What @kiln.jit reads from a kernel's source before compiling it: the form
(factory or jit), which parameters are tensors, the expressions of their shapes
and dtypes, the T.const symbols and the outputs. Only the syntax is read (Python's
ast); the server evaluates the program. Anything not recognised here is left for
the server to bind (and to reject, with a located diagnostic, when it is wrong).
"""
import ast
import dataclasses
import re

from ._values import dtype_name


@dataclasses.dataclass(frozen=True)
class Dim:
    kind: str    # "sym" (a parameter or T.const name), "int", "expr" (anything else)
    value: object


@dataclasses.dataclass(frozen=True)
class TensorSpec:
    name: str
    dims: object   # tuple of Dim, or None when the shape is not a literal tuple
    dtype: object  # ("param", name) | ("name", "float16") | None (not recognised)


@dataclasses.dataclass
class KernelInfo:
    form: str                       # "factory" or "jit"
    name: str
    params: list                    # the decorated function's parameter names
    kernel_params: list             # factory: the prim_func's params (TensorSpec or
                                    # ("scalar", name, dtype)); jit: the tensor params
    consts: list                    # jit form: T.const symbols, in order
    outputs: list                   # jit form: the T.empty tensors returned, in order
    line: int


class AnalysisError(ValueError):
    pass


def _is_t_attr(node, attrs):
    """``T.<attr>`` / ``tilelang.language.<attr>`` / a bare ``<attr>``."""
    if isinstance(node, ast.Attribute):
        return node.attr in attrs
    return isinstance(node, ast.Name) and node.id in attrs


def _call_of(node, attrs):
    return isinstance(node, ast.Call) and _is_t_attr(node.func, attrs)


def _text(node):
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001
        return "?"


def find_function(module, name, line):
    """The top-level def called ``name`` (the one nearest ``line`` if several)."""
    candidates = [n for n in module.body
                  if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name]
    if not candidates:
        raise AnalysisError(f"no top-level function '{name}' in the module source: @kiln.jit "
                            "needs a kernel defined at module level (the server parses the file)")
    return min(candidates, key=lambda n: abs(min([n.lineno] + [d.lineno for d in
                                                              n.decorator_list]) - line))


class _Scope:
    def __init__(self, fn, names):
        self.names = set(names)
        self.locals = {}
        for stmt in fn.body:
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
                continue
            target = stmt.targets[0]
            if isinstance(target, ast.Name):
                self.locals[target.id] = stmt.value
            elif isinstance(target, ast.Tuple) and isinstance(stmt.value, ast.Tuple) and \
                    len(target.elts) == len(stmt.value.elts):
                # `KH, KW = K, K`: each name is its value
                for t, v in zip(target.elts, stmt.value.elts):
                    if isinstance(t, ast.Name):
                        self.locals[t.id] = v

    def dims(self, node):
        if isinstance(node, ast.Name) and node.id in self.locals and node.id not in self.names:
            node = self.locals[node.id]
        if not isinstance(node, (ast.Tuple, ast.List)):
            return None
        out = []
        for e in node.elts:
            if isinstance(e, ast.Constant) and isinstance(e.value, int) and not isinstance(
                    e.value, bool):
                out.append(Dim("int", e.value))
            elif isinstance(e, ast.Name) and e.id in self.names:
                out.append(Dim("sym", e.id))
            elif isinstance(e, ast.Name) and isinstance(self.locals.get(e.id), ast.Name) and \
                    self.locals[e.id].id in self.names:
                out.append(Dim("sym", self.locals[e.id].id))  # an alias (`KH = K`)
            else:
                out.append(Dim("expr", _text(e)))
        return tuple(out)

    def dtype(self, node):
        if node is None:
            return ("name", "float32")  # T.Tensor's default dtype
        if isinstance(node, ast.Name) and node.id in self.names:
            return ("param", node.id)
        if isinstance(node, ast.Attribute):
            name = dtype_name(node.attr)
            return ("name", name) if name else None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            name = dtype_name(node.value)
            return ("name", name) if name else None
        return None

    def tensor(self, name, call):
        shape = call.args[0] if call.args else next(
            (k.value for k in call.keywords if k.arg == "shape"), None)
        dt = call.args[1] if len(call.args) > 1 else next(
            (k.value for k in call.keywords if k.arg == "dtype"), None)
        return TensorSpec(name, self.dims(shape) if shape is not None else None, self.dtype(dt))


_TENSOR = {"Tensor", "Buffer"}


def _params(fn):
    a = fn.args
    return [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]


def _consts(fn):
    out = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and _call_of(node.value, {"const"}):
            call = node.value
            if call.args and isinstance(call.args[0], ast.Constant) and isinstance(
                    call.args[0].value, str):
                out += [n for n in re.split(r"[\s,]+", call.args[0].value) if n]
    return out


def analyze(source, name, line=0):
    """KernelInfo of the function ``name`` of the module ``source``."""
    try:
        module = ast.parse(source)
    except SyntaxError as e:
        raise AnalysisError(f"{e.filename or '<source>'}:{e.lineno}:{e.offset}: {e.msg}") from None
    fn = find_function(module, name, line)
    params = _params(fn)

    prim = [n for n in ast.walk(fn) if isinstance(n, ast.FunctionDef) and n is not fn
            and any(_is_t_attr(d.func if isinstance(d, ast.Call) else d, {"prim_func"})
                    for d in n.decorator_list)]
    if prim:
        main = prim[0]
        scope = _Scope(fn, params)
        kparams = []
        for p in main.args.posonlyargs + main.args.args:
            ann = p.annotation
            if ann is not None and _call_of(ann, _TENSOR):
                kparams.append(scope.tensor(p.arg, ann))
            else:
                kparams.append(("scalar", p.arg, scope.dtype(ann)[1] if ann is not None and
                                scope.dtype(ann) else None))
        return KernelInfo("factory", name, params, kparams, [], [], fn.lineno)

    consts = _consts(fn)
    scope = _Scope(fn, params + consts)
    tensors, empties = [], {}
    for node in ast.walk(fn):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and _call_of(
                node.annotation, _TENSOR) and node.target.id in params:
            tensors.append(scope.tensor(node.target.id, node.annotation))
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(
                node.targets[0], ast.Name) and _call_of(node.value, {"empty"}):
            empties[node.targets[0].id] = scope.tensor(node.targets[0].id, node.value)
    outputs = []
    for stmt in fn.body:
        if isinstance(stmt, ast.Return) and stmt.value is not None:
            vals = stmt.value.elts if isinstance(stmt.value, (ast.Tuple, ast.List)) else [stmt.value]
            outputs = [empties[v.id] for v in vals if isinstance(v, ast.Name) and v.id in empties]
    if not outputs:
        outputs = list(empties.values())
    return KernelInfo("jit", name, params, tensors, consts, outputs, fn.lineno)
