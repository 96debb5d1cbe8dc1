#!/usr/bin/python3
"""ctest deploy/dashboard: every PromQL expression shipped names metrics kilnd exports.

Starts the real kilnd with a metrics port, compiles a program through it (so the RPC and
compile histograms have series), scrapes /metrics, and checks the expressions of
deploy/grafana/kiln-dashboard.json, deploy/k8s/prometheusrule.yaml, deploy/docker/alerts.yml
and the ```promql blocks of docs/metrics.md and docs/deploy.md: each metric name must be a
family of the scrape (or a histogram's _bucket/_count/_sum series, or Prometheus' own `up`),
and each label an expression filters or groups on must be one that family has (from the
scrape, or docs/metrics.md's table for families without series yet) or a target label.
docs/metrics.md's table must list exactly the scraped families. Also checks the
dashboard's structure and that alerts.yml holds the PrometheusRule's rules.

  check_dashboard.py --source-dir DIR --kilnd BUILD/kilnd --kiln BUILD/kiln
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.request

import yaml

# PromQL words that are not metric names.
KEYWORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless",
    "bool", "offset", "inf", "nan",
}
FUNCTIONS_AND_AGGREGATIONS = {
    "sum", "min", "max", "avg", "count", "stddev", "stdvar", "topk", "bottomk", "quantile",
    "count_values", "group", "rate", "irate", "increase", "delta", "idelta", "deriv",
    "histogram_quantile", "time", "absent", "absent_over_time", "clamp_min", "clamp_max",
    "label_values", "vector", "scalar", "sum_over_time", "avg_over_time", "max_over_time",
    "min_over_time", "changes", "resets", "abs", "ceil", "floor", "round",
}
# Labels Prometheus adds to every scraped series (and Kubernetes service discovery).
TARGET_LABELS = {"instance", "job", "namespace", "pod", "node", "service", "container", "le"}
PROMETHEUS_OWN = {"up"}

errors = []


def check(cond, message):
    if not cond:
        errors.append(message)
    return cond


def strip_strings(expr):
    return re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)


def metric_names(expr):
    """Metric names an expression selects."""
    e = strip_strings(expr)
    e = re.sub(r"\{[^}]*\}", "", e)  # label matchers
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", e)
    e = re.sub(r"\[[^\]]*\]", "", e)  # range selectors
    e = re.sub(r"\$\w+|\$\{[^}]*\}", "", e)  # dashboard variables
    names = set()
    for m in re.finditer(r"(?<![\w.])([A-Za-z_:][A-Za-z0-9_:]*)(\s*\()?", e):
        word, call = m.group(1), m.group(2)
        if call or word in KEYWORDS or re.fullmatch(r"[0-9.e+-]+", word):
            continue
        names.add(word)
    return names


def labels_used(expr):
    """(metric or None, label) pairs: matchers attach to their metric, groupings to none."""
    e = strip_strings(expr)
    pairs = set()
    for m in re.finditer(r"([A-Za-z_:][A-Za-z0-9_:]*)?\{([^}]*)\}", e):
        for label in re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)", m.group(2)):
            pairs.add((m.group(1), label))
    for m in re.finditer(r"\b(?:by|without)\s*\(([^)]*)\)", e):
        for label in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", m.group(1)):
            pairs.add((None, label))
    return pairs


def scrape(kilnd, kiln, source_dir):
    """(family -> type, family -> label names) from a real kilnd after one compile."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KILN_")}
        p = subprocess.Popen([kilnd, "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
                              "--cache-dir", tmp + "/cache", "--log-format", "text"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        try:
            line = p.stdout.readline()
            m = re.search(r"listening on (\S+) metrics on (\S+)", line)
            if not m:
                raise SystemExit(f"FAIL: kilnd did not start: {line}")
            binds = ["--bind", "M=77", "--bind", "N=130", "--bind", "block_M=16", "--bind", "block_N=64"]
            r = subprocess.run([kiln, "compile", os.path.join(source_dir, "examples/elementwise/add.py"), *binds,
                                "--target", "cpu", "--server", m.group(1)], capture_output=True, text=True)
            check(r.returncode == 0, f"compile through kilnd failed: {r.stderr}")
            text = urllib.request.urlopen(f"http://{m.group(2)}/metrics", timeout=10).read().decode()
        finally:
            p.terminate()
            p.wait(timeout=30)
    types, labels = {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            types[name] = kind
            labels.setdefault(name, set())
        elif line and not line.startswith("#"):
            m = re.match(r"([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s", line)
            name = m.group(1)
            family = re.sub(r"_(bucket|count|sum)$", "", name) if name not in types else name
            labels.setdefault(family, set()).update(re.findall(r'([A-Za-z_][A-Za-z0-9_]*)="', m.group(2) or ""))
    return types, labels


def documented(metrics_md):
    """family -> label names from docs/metrics.md's table."""
    out = {}
    for line in open(metrics_md):
        m = re.match(r"\|\s*`([a-z_]+)`\s*\|\s*(\w+)\s*\|([^|]*)\|", line)
        if m:
            out[m.group(1)] = set(re.findall(r"`([a-z_]+)`", m.group(3)))
    return out


def promql_blocks(md_path):
    if not os.path.exists(md_path):
        return []
    exprs, block = [], None
    for line in open(md_path):
        if line.startswith("```promql"):
            block = []
        elif line.startswith("```") and block is not None:
            exprs += [e for e in block if e.strip() and not e.lstrip().startswith("#")]
            block = None
        elif block is not None:
            block.append(line.rstrip("\n"))
    return exprs


def dashboard_exprs(dash, where):
    exprs = []
    ids = set()
    check(dash.get("uid") and dash.get("title") and dash.get("schemaVersion"), f"{where}: no uid/title/schemaVersion")
    variables = {v["name"] for v in dash.get("templating", {}).get("list", [])}
    for v in dash.get("templating", {}).get("list", []):
        q = v.get("query")
        if isinstance(q, dict):
            q = q.get("query")
        if v.get("type") == "query":
            inner = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)", q or "")
            if check(inner, f"{where}: variable {v['name']}: unexpected query {q!r}"):
                exprs.append((f"{where}: variable {v['name']}", inner.group(1)))
                exprs.append((f"{where}: variable {v['name']}", f"{inner.group(1)}{{{inner.group(2)}=\"\"}}"))

    def walk(panels):
        for p in panels:
            pw = f"{where}: panel {p.get('id')} '{p.get('title')}'"
            check(p.get("id") not in ids, f"{pw}: duplicate id")
            ids.add(p.get("id"))
            g = p.get("gridPos", {})
            check(all(k in g for k in "xywh") and g["x"] + g["w"] <= 24, f"{pw}: bad gridPos {g}")
            if p.get("type") != "row":
                check(p.get("targets"), f"{pw}: no queries")
            for t in p.get("targets", []):
                ds = t.get("datasource", {}).get("uid", "")
                check(ds.strip("${}") in variables, f"{pw}: data source {ds} is not a dashboard variable")
                for var in re.findall(r"\$(\w+)", t["expr"]):
                    check(var in variables or var.startswith("__"), f"{pw}: unknown variable ${var}")
                exprs.append((pw, t["expr"]))
            walk(p.get("panels", []))

    walk(dash.get("panels", []))
    check(len(exprs) > 10, f"{where}: only {len(exprs)} expressions")
    return exprs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--kilnd", required=True)
    ap.add_argument("--kiln", required=True)
    a = ap.parse_args()
    src = a.source_dir

    # The extractor itself, on cases with known answers.
    check(metric_names('sum by (le, method) (rate(kiln_rpc_duration_seconds_bucket{code="OK"}[$__rate_interval]))')
          == {"kiln_rpc_duration_seconds_bucket"}, "self-test: metric_names of a histogram_quantile input")
    check(metric_names("time() - max(process_start_time_seconds) > 0 and up == 1") == {"process_start_time_seconds", "up"},
          "self-test: metric_names with functions and keywords")
    check(labels_used('sum by (priority) (kiln_queue_depth{instance=~"$i"})') == {(None, "priority"), ("kiln_queue_depth", "instance")},
          "self-test: labels_used")

    types, labels = scrape(a.kilnd, a.kiln, src)
    docs = documented(os.path.join(src, "docs", "metrics.md"))
    check(set(docs) == set(types),
          f"docs/metrics.md lists {sorted(set(docs) - set(types))} that kilnd does not export and "
          f"misses {sorted(set(types) - set(docs))}")
    for family, names in docs.items():
        labels.setdefault(family, set()).update(names)

    def series_family(name):
        if name in types:
            return name
        base = re.sub(r"_(bucket|count|sum)$", "", name)
        return base if types.get(base) == "histogram" else None

    exprs = dashboard_exprs(json.load(open(os.path.join(src, "deploy", "grafana", "kiln-dashboard.json"))),
                            "kiln-dashboard.json")
    rule_files = {"deploy/k8s/prometheusrule.yaml": yaml.safe_load(open(os.path.join(src, "deploy/k8s/prometheusrule.yaml")))["spec"],
                  "deploy/docker/alerts.yml": yaml.safe_load(open(os.path.join(src, "deploy/docker/alerts.yml")))}
    for where, spec in rule_files.items():
        for g in spec["groups"]:
            for r in g["rules"]:
                exprs.append((f"{where}: {r['alert']}", r["expr"]))

    def normalized(spec):
        return json.dumps(spec["groups"], sort_keys=True).replace('up{job=\\"kilnd\\"}', 'up{namespace=\\"kiln\\"}')

    check(normalized(rule_files["deploy/k8s/prometheusrule.yaml"]) == normalized(rule_files["deploy/docker/alerts.yml"]),
          "deploy/docker/alerts.yml does not hold the rules of deploy/k8s/prometheusrule.yaml")
    for md in ("docs/metrics.md", "docs/deploy.md", "docs/operations.md"):
        for e in promql_blocks(os.path.join(src, md)):
            exprs.append((md, e))

    used = set()
    for where, expr in exprs:
        names = metric_names(expr)
        check(names, f"{where}: names no metric: {expr}")
        families = set()
        for n in names:
            fam = series_family(n)
            if n in PROMETHEUS_OWN:
                continue
            if check(fam, f"{where}: '{n}' is not a metric kilnd exports: {expr}"):
                families.add(fam)
                used.add(fam)
        for metric, label in labels_used(expr):
            if label in TARGET_LABELS:
                continue
            owners = {series_family(metric)} if metric else families
            owners.discard(None)
            check(any(label in labels.get(f, set()) for f in owners),
                  f"{where}: label '{label}' is not a label of {sorted(owners)}: {expr}")
    unused = set(types) - used
    check(not unused - {"process_start_time_seconds"}, f"families on no dashboard panel or alert: {sorted(unused)}")

    for e in errors:
        print("FAIL:", e)
    if errors:
        return 1
    print(f"dashboard ok: {len(exprs)} expressions over {len(used)} of kilnd's {len(types)} families")
    return 0


if __name__ == "__main__":
    sys.exit(main())
