"""The load-and-compare step of the tests/support/check_*_npy.py scripts: each computes
its NumPy reference from the arrays kiln-run --save wrote, then compares the kernel's
outputs with it here, one line per output (PASS with the largest error, or FAIL with the
count and the first element that differs), and exits 0 when every output matched, 1
otherwise. An element matches when |got - ref| <= atol + rtol * |ref| (NumPy's isclose
rule, without NaN equality: a NaN never matches)."""
import os
import sys

import numpy as np


def load(directory, name, dtype=np.float64):
    """DIRECTORY/NAME.npy as `dtype` (None: as saved)."""
    a = np.load(os.path.join(directory, name + ".npy"))
    return a if dtype is None else a.astype(dtype)


def compare(name, got, ref, atol, rtol, note=""):
    """Prints the verdict for one output; True when it matches. `note` is appended to the
    PASS line (the configuration the reference used, say)."""
    got, ref = np.asarray(got), np.asarray(ref)
    if got.shape != ref.shape:
        print("FAIL: %s has shape %s, expected %s" % (name, got.shape, ref.shape))
        return False
    bad = np.argwhere(~(np.abs(got - ref) <= atol + rtol * np.abs(ref)))
    if bad.size:
        i = tuple(bad[0])
        print("FAIL: %s: %d of %d elements differ; first at %s: %r, expected %r"
              % (name, len(bad), ref.size, i, got[i], ref[i]))
        return False
    err = np.abs(got - ref).max() if ref.size else 0.0
    print("PASS: %s %s%s, max abs err %.3g" % (name, ref.shape, note, err))
    return True


def finish(*results):
    """Exits 0 when every compare() result is True, 1 otherwise."""
    sys.exit(0 if all(results) else 1)
