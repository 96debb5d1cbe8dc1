"""Conversions between Python values and the wire's BindingValue and DType."""
from ._proto.v1 import program_pb2, service_pb2

# Kiln's dtype names (the frontend's and kiln-run's), by enum value.
DTYPE_NAMES = {
    program_pb2.DTYPE_BOOL: "bool",
    program_pb2.DTYPE_INT8: "int8",
    program_pb2.DTYPE_INT16: "int16",
    program_pb2.DTYPE_INT32: "int32",
    program_pb2.DTYPE_INT64: "int64",
    program_pb2.DTYPE_UINT8: "uint8",
    program_pb2.DTYPE_UINT16: "uint16",
    program_pb2.DTYPE_UINT32: "uint32",
    program_pb2.DTYPE_UINT64: "uint64",
    program_pb2.DTYPE_FLOAT16: "float16",
    program_pb2.DTYPE_BFLOAT16: "bfloat16",
    program_pb2.DTYPE_FLOAT32: "float32",
    program_pb2.DTYPE_FLOAT64: "float64",
    program_pb2.DTYPE_FLOAT8_E4M3: "float8_e4m3",
    program_pb2.DTYPE_FLOAT8_E5M2: "float8_e5m2",
}
DTYPE_BYTES = {
    "bool": 1, "int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint8": 1, "uint16": 2,
    "uint32": 4, "uint64": 8, "float16": 2, "bfloat16": 2, "float32": 4, "float64": 8,
    "float8_e4m3": 1, "float8_e5m2": 1,
}
# Other spellings of the same types (torch, NumPy, ml_dtypes, C).
_ALIASES = {
    "half": "float16", "float": "float32", "double": "float64", "int": "int32", "long": "int64",
    "short": "int16", "bool_": "bool", "float8_e4m3fn": "float8_e4m3",
}


def dtype_name(obj):
    """Kiln's name for a dtype given as a string, a NumPy/cupy dtype, a torch dtype or
    anything with a .dtype; None when it is not a dtype Kiln knows."""
    if obj is None:
        return None
    if isinstance(obj, str):
        text = obj
    elif isinstance(obj, int) and obj in DTYPE_NAMES:
        return DTYPE_NAMES[obj]
    else:
        text = getattr(obj, "name", None) if not _is_torch_dtype(obj) else None
        if not isinstance(text, str):
            text = str(obj)
    for prefix in ("torch.", "T.", "tilelang.language.", "numpy.", "np."):
        if text.startswith(prefix):
            text = text[len(prefix):]
    text = _ALIASES.get(text, text)
    return text if text in DTYPE_BYTES else None


def _is_torch_dtype(obj):
    return type(obj).__module__ == "torch" and type(obj).__name__ == "dtype"


def to_binding(value):
    """A BindingValue for a Python value (bool, int, float, str, a dtype, or a list or tuple
    of ints)."""
    b = service_pb2.BindingValue()
    if isinstance(value, service_pb2.BindingValue):
        b.CopyFrom(value)
    elif isinstance(value, bool) or type(value).__name__ == "bool_":
        b.bool_value = bool(value)
    elif isinstance(value, int) or (hasattr(value, "__index__") and not hasattr(value, "dtype")
                                    and not isinstance(value, float)):
        b.int_value = int(value)
    elif isinstance(value, float):
        b.float_value = value
    elif isinstance(value, str):
        b.string_value = value
    elif isinstance(value, (list, tuple)):
        # A list or tuple of ints (grouped GEMM's group sizes); the daemon
        # takes at most 4096 items.
        items = []
        for x in value:
            if isinstance(x, bool) or not (isinstance(x, int) or hasattr(x, "__index__")):
                raise TypeError(f"cannot bind a {type(value).__name__} holding a "
                                f"{type(x).__name__} ({x!r}); list bindings hold ints")
            items.append(int(x))
        b.int_list.values.extend(items)
        b.int_list.tuple = isinstance(value, tuple)
    else:
        # NumPy scalars and dtypes, torch dtypes.
        name = dtype_name(value) if not hasattr(value, "item") else None
        if name is not None:
            b.string_value = name
        elif hasattr(value, "item"):
            return to_binding(value.item())
        else:
            raise TypeError(f"cannot bind a {type(value).__name__} ({value!r}); bindings are "
                            "bool, int, float, str, a dtype or a list of ints")
    return b


def from_binding(b):
    """The Python value of a BindingValue (None when unset)."""
    which = b.WhichOneof("value")
    if which == "int_list":
        items = list(b.int_list.values)
        return tuple(items) if b.int_list.tuple else items
    return getattr(b, which) if which else None


def fill_map(pb_map, values):
    """Fills a map<string, BindingValue> field from a dict."""
    for name, value in (values or {}).items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"binding names are non-empty strings, not {name!r}")
        pb_map[name].CopyFrom(to_binding(value))


def to_dict(pb_map):
    return {k: from_binding(v) for k, v in sorted(pb_map.items())}
