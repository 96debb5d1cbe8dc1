"""The client's read-through cache directory, in the C++ client's layout
(clients/cpp/client/local_cache.h), so both clients can share one folder:

    DIR/artifacts/<key>/metadata.pb      ArtifactMetadata (binary proto)
    DIR/artifacts/<key>/<kind>           one file per kind: cubin, ptx, hsaco, so, source, kir
    DIR/compile/<sha256>                 "<key>\\n<unix ms written>\\n"

The memo's name is the SHA-256 of two length-prefixed fields (8-byte little-endian
length, then the bytes): the daemon's address and the CompileRequest serialized
deterministically; the same bytes the C++ client hashes.

Writes go to a unique temporary file in the same folder, are fsynced and renamed
into place, so a reader sees a whole file or none. Reads are verified (the
metadata's key equals its folder, a file's SHA-256 equals the metadata's digest);
a file that fails is removed and reported absent, to be fetched again.
Thread-safe: no state besides the path.
"""
import hashlib
import os
import re
import struct
import time

from ._proto.v1 import service_pb2 as pb

_KEY = re.compile(r"[0-9a-f]{64}")

# ArtifactKind -> file name (the C++ KindFileName).
KIND_FILES = {pb.ARTIFACT_KIND_CUBIN: "cubin", pb.ARTIFACT_KIND_PTX: "ptx",
              pb.ARTIFACT_KIND_HSACO: "hsaco", pb.ARTIFACT_KIND_SHARED_OBJECT: "so",
              pb.ARTIFACT_KIND_SOURCE: "source", pb.ARTIFACT_KIND_IR_TEXT: "kir"}


def is_key(key):
    return isinstance(key, str) and _KEY.fullmatch(key) is not None


def memo_id(address, request):
    h = hashlib.sha256()
    for field in (address.encode(), request.SerializeToString(deterministic=True)):
        h.update(struct.pack("<Q", len(field)))
        h.update(field)
    return h.hexdigest()


def now_ms():
    return int(time.time() * 1000)


def _remove(path):
    try:
        os.remove(path)
    except OSError:
        pass


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def write_atomically(path, data):
    """temp file in the same folder, fsync, rename; raises OSError."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp.{os.getpid()}.{int.from_bytes(os.urandom(4), 'little')}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        _remove(tmp)
        raise
    os.close(fd)
    try:
        os.rename(tmp, path)
    except BaseException:
        _remove(tmp)
        raise


class LocalCache:
    MISSING, CORRUPT = "missing", "corrupt"

    def __init__(self, directory):
        self.dir = os.path.abspath(os.path.expanduser(os.fspath(directory)))
        try:
            os.makedirs(self.dir, exist_ok=True)
        except OSError as e:
            raise ValueError(f"cannot create the client cache directory {self.dir}: "
                             f"{e.strerror or e}") from None
        self.corrupt_files = 0  # files found damaged and removed (for tests and stats)

    def _artifact_dir(self, key):
        return os.path.join(self.dir, "artifacts", key)

    def metadata(self, key):
        """The stored ArtifactMetadata of ``key``, or None (absent or damaged)."""
        if not is_key(key):
            return None
        path = os.path.join(self._artifact_dir(key), "metadata.pb")
        data = _read(path)
        if data is None:
            return None
        m = pb.ArtifactMetadata()
        try:
            m.ParseFromString(data)
            ok = m.key == key
        except Exception:  # a DecodeError, whatever the protobuf runtime calls it
            ok = False
        if not ok:
            _remove(path)
            self.corrupt_files += 1
            return None
        return m

    def file(self, metadata, kind):
        """The verified bytes of one file (an ArtifactKind) of an artifact, or None."""
        listed = next((f for f in metadata.files if f.kind == kind), None)
        if listed is None or not is_key(metadata.key) or kind not in KIND_FILES:
            return None
        path = os.path.join(self._artifact_dir(metadata.key), KIND_FILES[kind])
        data = _read(path)
        if data is None:
            return None
        if hashlib.sha256(data).hexdigest() != listed.blob_digest:
            _remove(path)
            self.corrupt_files += 1
            return None
        return data

    def has_all_files(self, metadata):
        """Every file the metadata lists is on disk with its size (a cheap check; reads
        verify the digest)."""
        for f in metadata.files:
            name = KIND_FILES.get(f.kind)
            if name is None:
                return False
            try:
                size = os.path.getsize(os.path.join(self._artifact_dir(metadata.key), name))
            except OSError:
                return False
            if size != f.size_bytes:
                return False
        return True

    def put_metadata(self, metadata):
        if is_key(metadata.key):
            write_atomically(os.path.join(self._artifact_dir(metadata.key), "metadata.pb"),
                             metadata.SerializeToString())

    def put_file(self, metadata, kind, data):
        listed = next((f for f in metadata.files if f.kind == kind), None)
        if listed is None or not is_key(metadata.key) or kind not in KIND_FILES:
            return
        if hashlib.sha256(data).hexdigest() != listed.blob_digest:
            return  # never store bytes that do not match (the caller reports DataLoss)
        write_atomically(os.path.join(self._artifact_dir(metadata.key), KIND_FILES[kind]), data)

    def compile_key(self, memo, ttl_seconds, now=None):
        """The key recorded for a memo id within ``ttl_seconds``, or None."""
        if ttl_seconds <= 0:
            return None
        path = os.path.join(self.dir, "compile", memo)
        data = _read(path)
        if data is None:
            return None
        lines = data.decode("utf-8", "replace").split("\n")
        try:
            key, written = lines[0], int(lines[1])
        except (IndexError, ValueError):
            key, written = "", 0
        if not is_key(key):
            _remove(path)
            self.corrupt_files += 1
            return None
        age = (now if now is not None else now_ms()) - written
        if age < 0 or age > ttl_seconds * 1000:
            return None
        return key

    def put_compile_key(self, memo, key, now=None):
        write_atomically(os.path.join(self.dir, "compile", memo),
                         f"{key}\n{now if now is not None else now_ms()}\n".encode())
