"""Evaluates the integer expressions of launch metadata (grid extents, shapes) such
as "(N + 31) // 32" or "min(M, 4)" under the dynamic symbols' values. The text is
the IR printer's (compiler/ir/printer.cc); only arithmetic, comparisons, min, max,
select and integer casts are accepted. Symbols go by the user's names, which may be
Python keywords ("in") or words the text itself uses ("max", "true"): a name followed
by "(" is a function, any other name a symbol."""
import ast
import functools
import operator
import re

_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.BitAnd: operator.and_,
        ast.BitOr: operator.or_, ast.BitXor: operator.xor, ast.LShift: operator.lshift,
        ast.RShift: operator.rshift}
_CMP = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
        ast.Gt: operator.gt, ast.GtE: operator.ge}
_CASTS = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool"}


def _c_div(a, b):
    # Integer "/" of the IR truncates toward zero, as C does.
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


_NAME = re.compile(r"(?<![A-Za-z0-9_.])[A-Za-z_][A-Za-z0-9_]*")  # not inside a number
_SYM = "_kiln_sym_"  # prefix that makes every symbol a valid, non-keyword Python name


def _rename(m):
    rest = m.string[m.end():].lstrip()
    return m.group(0) if rest.startswith("(") else _SYM + m.group(0)


@functools.lru_cache(maxsize=1024)
def _parse(text):
    py = re.sub(r"\bcast<(\w+)>\(", r"\1(", text)  # cast<int64>(x) -> int64(x)
    py = _NAME.sub(_rename, py)  # before the operators below add Python words
    py = py.replace("&&", " and ").replace("||", " or ")
    py = re.sub(r"!(?!=)", " not ", py)
    return ast.parse(py.strip(), mode="eval").body


def evaluate(text, symbols=None):
    """The int value of ``text`` with ``symbols`` ({name: int}); ValueError for a name
    without a value or a construct outside the accepted set."""
    symbols = symbols or {}

    def ev(n):
        if isinstance(n, ast.Constant) and isinstance(n.value, (int, bool)):
            return int(n.value)
        if isinstance(n, ast.Name) and n.id.startswith(_SYM):
            name = n.id[len(_SYM):]
            if name in symbols:
                return int(symbols[name])
            if name in ("true", "false"):
                return int(name == "true")
            raise ValueError(f"'{text}' uses '{name}', which has no value")
        if isinstance(n, ast.BinOp):
            a, b = ev(n.left), ev(n.right)
            if isinstance(n.op, ast.Div):
                return _c_div(a, b)
            if type(n.op) in _BIN:
                return _BIN[type(n.op)](a, b)
        if isinstance(n, ast.UnaryOp):
            v = ev(n.operand)
            if isinstance(n.op, ast.USub):
                return -v
            if isinstance(n.op, ast.Not):
                return int(not v)
            if isinstance(n.op, ast.Invert):
                return ~v
        if isinstance(n, ast.BoolOp):
            vals = [ev(v) for v in n.values]
            return int(all(vals) if isinstance(n.op, ast.And) else any(vals))
        if isinstance(n, ast.Compare) and len(n.ops) == 1 and type(n.ops[0]) in _CMP:
            return int(_CMP[type(n.ops[0])](ev(n.left), ev(n.comparators[0])))
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and not n.keywords:
            args = [ev(a) for a in n.args]
            if n.func.id == "min" and len(args) == 2:
                return min(args)
            if n.func.id == "max" and len(args) == 2:
                return max(args)
            if n.func.id == "select" and len(args) == 3:
                return args[1] if args[0] else args[2]
            if n.func.id in _CASTS and len(args) == 1:
                return args[0]
        raise ValueError(f"cannot evaluate launch expression '{text}'")

    return ev(_parse(text))
