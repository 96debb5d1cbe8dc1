"""Typed exceptions for kilnd's gRPC status codes.

Every failed call raises a subclass of :class:`KilnError`; the status code, the
server's message (passed through unchanged by kilnd) and, for bad programs, the
located diagnostics parsed from it are attributes of the exception.
"""
import dataclasses
import re

import grpc

__all__ = [
    "Diagnostic", "KilnError", "CompileError", "InvalidArgument", "NotFound",
    "AlreadyExists", "FailedPrecondition", "ResourceExhausted", "Aborted", "DeadlineExceeded",
    "Unavailable", "Unauthenticated", "PermissionDenied", "Cancelled", "DataLoss", "Internal",
    "Unimplemented", "OutOfRange", "LaunchError", "BindingError", "TuneError", "error_from_rpc",
]


@dataclasses.dataclass(frozen=True)
class Diagnostic:
    """A located problem in a tile program: ``file:line:col: message``."""

    file: str
    line: int
    col: int
    message: str
    severity: str = "error"  # "error", "warning" or "note"

    @property
    def rendered(self):
        return f"{self.file}:{self.line}:{self.col}: {self.message}"

    def __str__(self):
        return self.rendered


# "path/to/file.py:12:5: message"; the file part may itself hold colons (C:\...)
# but never a newline. A "note:"/"warning:" prefix of the message sets the severity.
_LOCATED = re.compile(r"^(?P<file>[^\n]*?):(?P<line>\d+):(?P<col>\d+): (?P<msg>.*)$")


def parse_diagnostics(text):
    """The located lines of a server message, in order; [] when there are none."""
    out = []
    for line in text.splitlines():
        m = _LOCATED.match(line)
        if not m:
            continue
        msg = m.group("msg")
        severity = "error"
        for word in ("warning", "note", "error"):
            if msg.startswith(word + ": "):
                severity, msg = word, msg[len(word) + 2:]
                break
        out.append(Diagnostic(m.group("file"), int(m.group("line")), int(m.group("col")), msg,
                              severity))
    return out


class KilnError(Exception):
    """A call to kilnd failed. ``code`` is the grpc.StatusCode (None for errors
    raised on the client side), ``details`` the server's message."""

    def __init__(self, details, code=None, method=None):
        super().__init__(details)
        self.details = details
        self.code = code
        self.method = method
        self.diagnostics = parse_diagnostics(details or "")

    def __str__(self):
        return self.details or (self.code.name if self.code else "kiln error")


class InvalidArgument(KilnError):
    """INVALID_ARGUMENT: a bad binding, option or request."""


class CompileError(InvalidArgument):
    """INVALID_ARGUMENT with located diagnostics: the program does not compile.
    ``diagnostics[0]`` is the first error (file, line, col, message). When the client
    sent the source text (``Client.compile``), ``str(e)`` quotes each located line of
    the source with a caret under its column; ``details`` stays the server's message."""

    source = None
    source_file = None

    def attach_source(self, file_name, source):
        self.source_file, self.source = file_name, source

    def __str__(self):
        if not self.source or not self.details:
            return super().__str__()
        return with_source_snippets(self.details, self.source_file, self.source)


_MAX_SHOWN = 120  # characters of a quoted line; longer ones show a window around the column


def _snippet(line_text, line_no, col):
    """Two lines: the source line and a caret under byte column ``col`` (1-based)."""
    raw = line_text.encode("utf-8", "surrogatepass")
    prefix = raw[:max(col - 1, 0)].decode("utf-8", "replace")
    text = line_text
    start = 0
    if len(text) > _MAX_SHOWN:
        start = max(len(prefix) - _MAX_SHOWN // 2, 0)
    shown = text[start:start + _MAX_SHOWN]
    lead = "..." if start > 0 else ""
    tail = "..." if start + _MAX_SHOWN < len(text) else ""
    clean = "".join(c if c == "\t" or (c.isprintable() and c != "\x7f") else " " for c in shown)
    indent = "".join("\t" if c == "\t" else " " for c in prefix[start:])
    number = str(line_no)
    return (f"  {number} | {lead}{clean}{tail}\n"
            f"  {' ' * len(number)} | {' ' * len(lead)}{indent}^")


def with_source_snippets(message, file_name, source):
    """``message`` with the quoted source line and a caret after each line that is
    located in ``file_name`` (the same rendering as kiln-opt and ``kiln compile``)."""
    lines = source.split("\n")
    out = []
    for text in message.split("\n"):
        out.append(text)
        m = _LOCATED.match(text)
        if not m or m.group("file") != file_name:
            continue
        line_no, col = int(m.group("line")), int(m.group("col"))
        if 1 <= line_no <= len(lines) and col >= 1:
            out.append(_snippet(lines[line_no - 1].rstrip("\r"), line_no, col))
    return "\n".join(out)


class NotFound(KilnError):
    """NOT_FOUND: an unknown artifact key, job id or device id."""


class AlreadyExists(KilnError):
    """ALREADY_EXISTS."""


class FailedPrecondition(KilnError):
    """FAILED_PRECONDITION: e.g. no device of the daemon runs the target."""


class ResourceExhausted(KilnError):
    """RESOURCE_EXHAUSTED: a full queue, a full cache, device memory."""


class Aborted(KilnError):
    """ABORTED: the kernel crashed or faulted on the daemon's device."""


class DeadlineExceeded(KilnError):
    """DEADLINE_EXCEEDED: the call's timeout, or a kernel past its limit."""


class Unavailable(KilnError):
    """UNAVAILABLE: kilnd cannot be reached, is draining, or has no device workers."""


class Unauthenticated(KilnError):
    """UNAUTHENTICATED: a missing or wrong token."""


class PermissionDenied(KilnError):
    """PERMISSION_DENIED."""


class Cancelled(KilnError):
    """CANCELLED: the call or its job was cancelled."""


class DataLoss(KilnError):
    """DATA_LOSS: a stored record does not parse."""


class Internal(KilnError):
    """INTERNAL (and UNKNOWN): a bug on the server side."""


class Unimplemented(KilnError):
    """UNIMPLEMENTED: the daemon does not serve this call (an older kilnd)."""


class OutOfRange(KilnError):
    """OUT_OF_RANGE."""


class LaunchError(KilnError):
    """Launching a compiled kernel in this process failed (driver or CPU kernel error)."""


class BindingError(KilnError, TypeError):
    """@kiln.jit could not bind the call's arguments to the kernel's parameters."""


class TuneError(KilnError):
    """A sweep (kiln.autotune, use_best's tune on a miss) ended without a valid
    config; ``results`` holds the sweeps' TuneResults with every failure."""

    def __init__(self, details, results=()):
        super().__init__(details)
        self.results = list(results)


_BY_CODE = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.ALREADY_EXISTS: AlreadyExists,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPrecondition,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
    grpc.StatusCode.ABORTED: Aborted,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceeded,
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
    grpc.StatusCode.CANCELLED: Cancelled,
    grpc.StatusCode.DATA_LOSS: DataLoss,
    grpc.StatusCode.INTERNAL: Internal,
    grpc.StatusCode.UNKNOWN: Internal,
    grpc.StatusCode.UNIMPLEMENTED: Unimplemented,
    grpc.StatusCode.OUT_OF_RANGE: OutOfRange,
}


def error_from_rpc(err, method=None, address=None):
    """The typed exception for a grpc.RpcError."""
    code = err.code() if hasattr(err, "code") else None
    details = err.details() if hasattr(err, "details") else str(err)
    details = details or ""
    cls = _BY_CODE.get(code, KilnError)
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED) and address:
        details = f"kilnd at {address}: {details}"
    if cls is InvalidArgument and parse_diagnostics(details):
        cls = CompileError
    return cls(details, code=code, method=method)
