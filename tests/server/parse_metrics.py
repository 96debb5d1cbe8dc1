#!/usr/bin/env python3
"""Scrapes a Prometheus endpoint and reports what a real parser makes of it.

Usage: parse_metrics.py URL

Prints, for metrics_test.cc to compare:
  content-type <the response's Content-Type>
  family ["name", "type", "help"]            (prometheus_client's view)
  sample ["name", {"label": "value"}, value]  (labels sorted; value as JSON)

prometheus_client's parser is lax ("successful parsing does not imply that
the parsed text meets the specification"), so the text is first checked line
by line against the text format 0.0.4 grammar, and histograms against their
invariants. Any violation is printed as "error ..." and the exit status is 1.
"""
import json
import math
import re
import sys
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL_NAME = r"[a-zA-Z_][a-zA-Z0-9_]*"
LABEL_VALUE = r'"(?:[^"\\\n]|\\[\\"n])*"'
LABEL = LABEL_NAME + "=" + LABEL_VALUE
FLOAT = r"(?:[+-]?Inf|NaN|[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)"
SAMPLE = re.compile(
    r"^(" + NAME + r")(?:\{(" + LABEL + r"(?:," + LABEL + r")*)?\})? (" + FLOAT + r")$")
HELP = re.compile(r"^# HELP (" + NAME + r") (.*)$")
TYPE = re.compile(r"^# TYPE (" + NAME + r") (counter|gauge|histogram|summary|untyped)$")
SUFFIXES = {"histogram": ["_bucket", "_sum", "_count"], "summary": ["_sum", "_count", ""]}

errors = []


def error(message):
    errors.append(message)


def strict_check(body):
    """The grammar of each line, HELP/TYPE once per family and before its
    samples, families contiguous, histogram buckets cumulative up to +Inf."""
    if body and not body.endswith("\n"):
        error("the body does not end with a newline")
    helps, types, finished = set(), {}, set()
    current = None  # the family whose lines we are in
    buckets = {}  # (family, labels without le) -> [(le, value)]
    counts = {}
    for number, line in enumerate(body.split("\n")[:-1], 1):
        m = HELP.match(line) or TYPE.match(line)
        if m:
            family = m.group(1)
            seen = helps if line.startswith("# HELP") else types
            if family in seen:
                error("line %d: second %s for %s" % (number, line.split()[1], family))
            if line.startswith("# HELP"):
                helps.add(family)
                if not re.fullmatch(r"(?:[^\\]|\\[\\n])*", m.group(2)):
                    error("line %d: bad escape in HELP" % number)
            else:
                types[family] = m.group(2)
            if family != current:
                if current is not None:
                    finished.add(current)
                if family in finished:
                    error("line %d: family %s is not contiguous" % (number, family))
                current = family
            continue
        if line.startswith("#") or line == "":
            error("line %d: unexpected line %r" % (number, line))
            continue
        m = SAMPLE.match(line)
        if not m:
            error("line %d: not a sample line: %r" % (number, line))
            continue
        name, labels, value = m.group(1), m.group(2) or "", m.group(3)
        family = current
        suffixes = SUFFIXES.get(types.get(current), [""])
        if current is None or name not in [current + s for s in suffixes]:
            error("line %d: sample %s outside its family's HELP/TYPE block" % (number, name))
            continue
        label_names = re.findall(r"(" + LABEL_NAME + r')="', labels)
        if len(label_names) != len(set(label_names)):
            error("line %d: repeated label name" % number)
        if types.get(family) == "histogram":
            le = re.search(r'(?:^|,)le="([^"]*)"', labels)
            rest = re.sub(r'(?:^|,)le="[^"]*"', "", labels)
            if name.endswith("_bucket"):
                if not le:
                    error("line %d: bucket without le" % number)
                    continue
                buckets.setdefault((family, rest), []).append((float(le.group(1)), float(value)))
            elif name.endswith("_count"):
                counts[(family, rest)] = float(value)
    for key, series in buckets.items():
        les = [le for le, _ in series]
        if les != sorted(les) or len(set(les)) != len(les):
            error("%s{%s}: le not increasing" % key)
        values = [v for _, v in series]
        if values != sorted(values):
            error("%s{%s}: bucket counts not cumulative" % key)
        if not les or les[-1] != math.inf:
            error("%s{%s}: no le=\"+Inf\" bucket" % key)
        elif counts.get(key) != values[-1]:
            error("%s{%s}: _count differs from the +Inf bucket" % key)


def main():
    with urllib.request.urlopen(sys.argv[1], timeout=10) as response:
        content_type = response.headers.get("Content-Type")
        body = response.read().decode("utf-8")
    print("content-type", content_type)
    strict_check(body)
    for family in text_string_to_metric_families(body):
        print("family", json.dumps([family.name, family.type, family.documentation]))
        for sample in family.samples:
            labels = dict(sorted(sample.labels.items()))
            print("sample", json.dumps([sample.name, labels, sample.value]))
    for message in errors:
        print("error", message)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
