"""Peer for bench/frontend_bench: CPython's own parser on the same files.

    python3 bench/python_ast_peer.py examples/attention/flash_attention_fwd.py ...

Prints the best-of-7 mean time of ast.parse per file, in microseconds: the
cost of only *parsing* the file in CPython, against which Kiln's whole
frontend (parse + evaluate + lower + verify + canonicalize + hash) compares.
"""
import ast
import sys
import timeit


def main(paths):
    for path in paths:
        with open(path, encoding="utf-8") as f:
            src = f.read()
        number = 2000
        best = min(timeit.repeat(lambda: ast.parse(src), number=number, repeat=7)) / number
        print(f"{path}\tast.parse\t{best * 1e6:.1f} us")


if __name__ == "__main__":
    main(sys.argv[1:])
