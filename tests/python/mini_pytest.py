"""A stand-in for pytest, just enough to run test_gpu.py where pytest is not installed
(the H200 machine may have none and cannot download it): importorskip, skip, fail,
fixtures (scopes, params, generators, `request.param`), mark.parametrize and capsys.

    python3 mini_pytest.py test_gpu.py

Prints one line per test (PASS / SKIP reason / FAIL with the traceback) and exits 1
when a test failed or when every test was skipped, else 0.
"""
import contextlib
import importlib
import importlib.util
import inspect
import itertools
import sys
import traceback
import types


class Skipped(Exception):
    pass


class Failed(AssertionError):
    pass


def _fake_pytest():
    m = types.ModuleType("pytest")
    m.__kiln_mini__ = True

    def importorskip(name, reason=None, **_):
        try:
            return importlib.import_module(name)
        except ImportError:
            raise Skipped(reason or f"could not import {name}") from None

    def skip(reason="", allow_module_level=False):
        raise Skipped(reason)

    def fail(msg=""):
        raise Failed(msg)

    def fixture(fn=None, *, scope="function", params=None, **_):
        def mark(f):
            f._mini_fixture = (scope, params)
            return f
        return mark if fn is None else mark(fn)

    class _Mark:
        @staticmethod
        def parametrize(names, values, **_):
            def mark(f):
                f._mini_params = getattr(f, "_mini_params", []) + [
                    ([n.strip() for n in names.split(",")] if isinstance(names, str) else
                     list(names), list(values))]
                return f
            return mark

        def __getattr__(self, name):
            return lambda *a, **k: (lambda f: f)

    @contextlib.contextmanager
    def raises(exc, match=None):
        info = types.SimpleNamespace(value=None)
        try:
            yield info
        except exc as e:
            if match is not None:
                import re
                assert re.search(match, str(e)), f"{e!r} does not match {match!r}"
            info.value = e
            return
        raise Failed(f"did not raise {exc}")

    m.importorskip, m.skip, m.fail, m.fixture, m.mark, m.raises = (
        importorskip, skip, fail, fixture, _Mark(), raises)
    m.skip.Exception = Skipped
    return m


class _Request:
    def __init__(self, param=None):
        self.param = param


class _Capsys:
    @contextlib.contextmanager
    def disabled(self):
        yield


def main(paths):
    sys.modules.setdefault("pytest", _fake_pytest())
    fixtures, session, finalizers = {}, {}, []
    results = []
    for path in paths:
        name = path.rsplit("/", 1)[-1][:-3]
        try:
            spec = importlib.util.spec_from_file_location(name, path)
            mod = importlib.util.module_from_spec(spec)
            sys.modules[name] = mod
            spec.loader.exec_module(mod)
        except Skipped as e:
            results.append(("SKIP", name, str(e)))
            continue
        for modname in ("conftest", name):
            for obj in vars(sys.modules[modname]).values():
                if callable(obj) and hasattr(obj, "_mini_fixture"):
                    fixtures[obj.__name__] = obj

        def value(fname, param_choice, local):
            if fname == "capsys":
                return _Capsys()
            if fname == "tmp_path":
                import pathlib
                import tempfile
                return pathlib.Path(tempfile.mkdtemp(prefix="mini-pytest-"))
            fn = fixtures[fname]
            scope, params = fn._mini_fixture
            key = (fname, param_choice.get(fname))
            if scope == "session" and key in session:
                return session[key]
            args = [value(a, param_choice, local) if a != "request" else
                    _Request(param_choice.get(fname)) for a in inspect.signature(fn).parameters]
            out = fn(*args)
            if inspect.isgenerator(out):
                gen, out = out, next(out)
                (finalizers if scope == "session" else local).append(gen)
            if scope == "session":
                session[key] = out
            return out

        for tname, test in list(vars(mod).items()):
            if not (tname.startswith("test") and callable(test)):
                continue
            argnames = list(inspect.signature(test).parameters)
            axes = []
            for names, values in getattr(test, "_mini_params", []):
                axes.append([dict(zip(names, v if len(names) > 1 else (v,))) for v in values])
            fixture_params = {a: fixtures[a]._mini_fixture[1] for a in argnames
                              if a in fixtures and fixtures[a]._mini_fixture[1]}
            for a, ps in fixture_params.items():
                axes.append([{("__fixture__", a): p} for p in ps])
            for combo in itertools.product(*axes) if axes else [()]:
                given, choice = {}, {}
                for part in combo:
                    for k, v in part.items():
                        if isinstance(k, tuple):
                            choice[k[1]] = v
                        else:
                            given[k] = v
                label = tname + ("[" + "-".join(str(v) for v in list(given.values()) +
                                                list(choice.values())) + "]" if combo else "")
                local = []
                try:
                    kwargs = {a: given[a] if a in given else value(a, choice, local)
                              for a in argnames}
                    test(**kwargs)
                    results.append(("PASS", label, ""))
                except Skipped as e:
                    results.append(("SKIP", label, str(e)))
                except Exception:  # noqa: BLE001
                    results.append(("FAIL", label, traceback.format_exc()))
                finally:
                    for gen in reversed(local):
                        next(gen, None)
    for gen in reversed(finalizers):
        next(gen, None)
    for status, label, detail in results:
        print(f"{status} {label}" + (f": {detail}" if status == "SKIP" else ""))
        if status == "FAIL":
            print(detail)
    failed = sum(r[0] == "FAIL" for r in results)
    passed = sum(r[0] == "PASS" for r in results)
    print(f"mini_pytest: {passed} passed, {failed} failed, "
          f"{len(results) - passed - failed} skipped")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
