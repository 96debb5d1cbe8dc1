#!/usr/bin/python3
"""ctest deploy/manifests: validates deploy/k8s/ and the Helm chart deploy/helm/kiln.

Offline (no cluster, no helm): every manifest parses and has apiVersion, kind and
metadata.name (and a namespace where the kind is namespaced); the DaemonSet's containers
have tagged images, probes, GPU requests equal to limits, and mounts of declared volumes;
ConfigMaps and Secrets that volumes name exist (or are optional, or created by the
operator); the embedded kilnd config agrees with the container ports, the probes, the
mounts and the grace period; Services and the ServiceMonitor select the pods and name
existing ports; and the real kilnd accepts the embedded config (`--print-config`, then a
start with it, answered by `kiln health`).

The chart: Chart.yaml's fields, every .Values path its templates name exists in
values.yaml, every include is defined, and the chart renders (tests/deploy/helm_render.py)
with its defaults, with TLS and mutual TLS on, and with the optional parts off; each
rendering passes the checks above, and the default one matches deploy/k8s/ in what
matters (kinds, kilnd config, ports, probes, GPUs, mounts).

  validate_manifests.py --source-dir DIR --kilnd BUILD/kilnd
"""

import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile
import time

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import helm_render  # noqa: E402

CLUSTER_KINDS = {"Namespace", "ClusterRole", "ClusterRoleBinding"}
errors = []


def check(cond, message):
    if not cond:
        errors.append(message)
    return cond


def load_docs(text, source):
    docs = [d for d in yaml.safe_load_all(text) if d is not None]
    for d in docs:
        where = f"{source}: {d.get('kind', '?')}/{d.get('metadata', {}).get('name', '?')}"
        check(isinstance(d.get("apiVersion"), str) and d["apiVersion"], f"{where}: no apiVersion")
        check(isinstance(d.get("kind"), str) and d["kind"], f"{where}: no kind")
        check(d.get("metadata", {}).get("name"), f"{where}: no metadata.name")
        if d.get("kind") not in CLUSTER_KINDS:
            check(d.get("metadata", {}).get("namespace"), f"{where}: no metadata.namespace")
    return docs


def port_of(address):
    m = re.fullmatch(r"(?:\[[^\]]*\]|[^:]*):([0-9]+)", address or "")
    return int(m.group(1)) if m else None


def parse_duration_s(text):
    total, units = 0.0, {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    for n, u in re.findall(r"([0-9.]+)(ms|s|m|h)", str(text)):
        total += float(n) * units[u]
    return total


def under(path, mounts):
    """The mount whose mountPath holds `path`, or None."""
    for m in mounts:
        if path == m["mountPath"] or path.startswith(m["mountPath"].rstrip("/") + "/"):
            return m
    return None


def without_empty(d):
    """`d` without "" leaves and the sections they leave empty (kilnd's defaults)."""
    out = {}
    for k, v in d.items():
        v = without_empty(v) if isinstance(v, dict) else v
        if v not in ("", {}):
            out[k] = v
    return out


def check_set(docs, label, external_secrets=()):
    """Checks one set of manifests; returns (the kilnd config text, a summary to compare)."""
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)
    names = {(d["kind"], d["metadata"]["name"]) for d in docs}
    daemonsets = by_kind.get("DaemonSet", [])
    if not check(len(daemonsets) == 1, f"{label}: expected one DaemonSet, found {len(daemonsets)}"):
        return None, None
    ds = daemonsets[0]
    where = f"{label}: DaemonSet/{ds['metadata']['name']}"
    pod = ds["spec"]["template"]
    pod_labels = pod["metadata"].get("labels", {})
    selector = ds["spec"]["selector"]["matchLabels"]
    check(all(pod_labels.get(k) == v for k, v in selector.items()),
          f"{where}: selector {selector} does not match the pod labels {pod_labels}")
    spec = pod["spec"]
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    check(len(volumes) == len(spec.get("volumes", [])), f"{where}: duplicate volume names")
    containers = spec.get("initContainers", []) + spec["containers"]
    for c in containers:
        cw = f"{where}: container {c['name']}"
        image = c.get("image", "")
        check(re.fullmatch(r"[^:@\s]+(:[A-Za-z0-9_][A-Za-z0-9_.-]*|@sha256:[0-9a-f]{64})", image)
              and not image.endswith(":latest"), f"{cw}: image {image!r} has no fixed tag")
        for m in c.get("volumeMounts", []):
            check(m["name"] in volumes, f"{cw}: mounts undeclared volume {m['name']}")
        check("limits" in c.get("resources", {}), f"{cw}: no resource limits")
    for v in volumes.values():
        if "configMap" in v:
            cm = v["configMap"]["name"]
            check(("ConfigMap", cm) in names or v["configMap"].get("optional"),
                  f"{where}: volume {v['name']} names ConfigMap {cm}, which is not defined")
        if "secret" in v:
            s = v["secret"]["secretName"]
            check(("Secret", s) in names or v["secret"].get("optional") or s in external_secrets,
                  f"{where}: volume {v['name']} names Secret {s}, which is neither defined, optional "
                  "nor created by the operator")

    kilnd = [c for c in spec["containers"] if c["name"] == "kilnd"]
    if not check(len(kilnd) == 1, f"{where}: no container named kilnd"):
        return None, None
    c = kilnd[0]
    ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
    check({"grpc", "metrics"} <= set(ports), f"{where}: container ports grpc and metrics expected")
    res = c.get("resources", {})
    gpus = res.get("limits", {}).get("nvidia.com/gpu")
    check(isinstance(gpus, int) and gpus > 0, f"{where}: no nvidia.com/gpu limit")
    check(res.get("requests", {}).get("nvidia.com/gpu", gpus) == gpus,
          f"{where}: nvidia.com/gpu requests differ from limits")
    probes = {}
    for kind in ("startupProbe", "livenessProbe", "readinessProbe"):
        p = c.get(kind)
        if kind != "startupProbe" and not check(p, f"{where}: no {kind}"):
            continue
        if p is None:
            continue
        if "grpc" in p:
            probes[kind] = "grpc"
            check(p["grpc"]["port"] == ports.get("grpc"), f"{where}: {kind} is not on the grpc port")
        elif "httpGet" in p:
            probes[kind] = "http"
            check(p["httpGet"]["path"] == "/healthz" and p["httpGet"]["port"] in ("metrics", ports.get("metrics")),
                  f"{where}: {kind} must GET /healthz on the metrics port")
        else:
            check(False, f"{where}: {kind} is neither grpc nor httpGet")

    # The config the kilnd container reads: --config PATH inside a ConfigMap mount.
    args = c.get("args", [])
    config_path = args[args.index("--config") + 1] if "--config" in args else None
    mounts = c.get("volumeMounts", [])
    config_text = None
    if check(config_path, f"{where}: kilnd gets no --config"):
        m = under(config_path, mounts)
        if check(m and "configMap" in volumes[m["name"]], f"{where}: {config_path} is not in a ConfigMap mount"):
            cm_name = volumes[m["name"]]["configMap"]["name"]
            key = os.path.relpath(config_path, m["mountPath"])
            cms = [d for d in by_kind.get("ConfigMap", []) if d["metadata"]["name"] == cm_name]
            if check(cms and key in cms[0].get("data", {}), f"{where}: ConfigMap {cm_name} has no key {key}"):
                config_text = cms[0]["data"][key]
    config = yaml.safe_load(config_text) if config_text else {}
    if config_text:
        cw = f"{label}: kilnd config"
        check(port_of(config.get("listen")) == ports.get("grpc"),
              f"{cw}: listen {config.get('listen')} is not the grpc container port {ports.get('grpc')}")
        check(port_of(config.get("metrics", {}).get("listen")) == ports.get("metrics"),
              f"{cw}: metrics.listen is not the metrics container port {ports.get('metrics')}")
        tls_on = bool(config.get("tls", {}).get("cert_file"))
        check(not (tls_on and "grpc" in probes.values()),
              f"{cw}: TLS is on but a probe is grpc (the kubelet's gRPC probe speaks plaintext only)")
        cache_dir = config.get("cache", {}).get("dir", "")
        cm = next((m for m in mounts if m["mountPath"] == cache_dir), None)
        if check(cm, f"{cw}: cache.dir {cache_dir} is not a volume mount"):
            vol = volumes[cm["name"]]
            check("hostPath" in vol or "persistentVolumeClaim" in vol,
                  f"{cw}: the cache volume must be hostPath or a PVC (local disk), not {list(vol)}")
            check(not cm.get("readOnly"), f"{cw}: the cache mount is read-only")
        for key, value in [("auth.tokens_file", config.get("auth", {}).get("tokens_file")),
                           ("tls.cert_file", config.get("tls", {}).get("cert_file")),
                           ("tls.key_file", config.get("tls", {}).get("key_file")),
                           ("tls.client_ca_file", config.get("tls", {}).get("client_ca_file"))]:
            if value:
                m = under(value, mounts)
                check(m and "secret" in volumes[m["name"]], f"{cw}: {key} {value} is not in a Secret mount")
        grace = parse_duration_s(config.get("grace_period", "25s"))
        check(spec.get("terminationGracePeriodSeconds", 30) > grace,
              f"{cw}: terminationGracePeriodSeconds is not above grace_period ({grace} s)")
        annotations = pod["metadata"].get("annotations", {})
        if "prometheus.io/port" in annotations:
            check(annotations["prometheus.io/port"] == str(ports.get("metrics")),
                  f"{where}: prometheus.io/port is not the metrics port")

    services = by_kind.get("Service", [])
    check(services, f"{label}: no Service")
    for s in services:
        sw = f"{label}: Service/{s['metadata']['name']}"
        sel = s["spec"].get("selector", {})
        check(sel and all(pod_labels.get(k) == v for k, v in sel.items()), f"{sw}: selector {sel} selects no kilnd pod")
        for p in s["spec"]["ports"]:
            check(p["targetPort"] in ports or p["targetPort"] in ports.values(),
                  f"{sw}: targetPort {p['targetPort']} is no container port")
    for sm in by_kind.get("ServiceMonitor", []):
        mw = f"{label}: ServiceMonitor/{sm['metadata']['name']}"
        sel = sm["spec"]["selector"]["matchLabels"]
        hits = [s for s in services if all(s["metadata"].get("labels", {}).get(k) == v for k, v in sel.items())]
        if check(len(hits) == 1, f"{mw}: selects {len(hits)} Services, expected exactly one"):
            names_ = {p["name"] for p in hits[0]["spec"]["ports"]}
            for e in sm["spec"]["endpoints"]:
                check(e["port"] in names_, f"{mw}: endpoint port {e['port']} is not a port of the Service")
    rules = [r["expr"] for pr in by_kind.get("PrometheusRule", []) for g in pr["spec"]["groups"] for r in g["rules"]]
    summary = {
        "kinds": sorted({d["kind"] for d in docs} - {"Namespace", "Secret"}),
        "config": without_empty(config),
        "ports": ports,
        "probes": probes,
        "gpus": gpus,
        "mounts": sorted(m["mountPath"] for m in mounts),
        "rules": rules,
    }
    return config_text, summary


def make_certificates(d):
    cmd = (
        "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 1 -subj /CN=kiln-ca && "
        "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > san.ext && "
        "openssl req -newkey rsa:2048 -nodes -keyout tls.key -out tls.csr -subj /CN=kilnd && "
        "openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 -extfile san.ext -out tls.crt"
    )
    subprocess.run(cmd, shell=True, cwd=d, check=True, capture_output=True)


def accepted_by_kilnd(config_text, label, kilnd, kiln):
    """Starts the real kilnd on the config, its mounts laid out in a temp dir."""
    with tempfile.TemporaryDirectory() as tmp:
        for sub in ("config", "auth", "tls", "cache"):
            os.makedirs(os.path.join(tmp, sub))
        with open(os.path.join(tmp, "auth", "tokens"), "w") as f:
            f.write("kiln-deploy-test-token-0123456789 ci\n")
        make_certificates(os.path.join(tmp, "tls"))
        text = (config_text.replace("/etc/kiln/", tmp + "/").replace("/var/cache/kiln", tmp + "/cache"))
        path = os.path.join(tmp, "config", "kilnd.yaml")
        with open(path, "w") as f:
            f.write(text)
        env = {k: v for k, v in os.environ.items() if not k.startswith("KILN_")}
        r = subprocess.run([kilnd, "--config", path, "--print-config"], capture_output=True, text=True, env=env)
        if not check(r.returncode == 0, f"{label}: kilnd --print-config refused the config: {r.stderr.strip()}"):
            return
        # Each key of the file is in the effective config, taken from the file.
        def flat(d, prefix=""):
            for k, v in d.items():
                yield from flat(v, prefix + k + ".") if isinstance(v, dict) else [prefix + k]
        printed_keys = set(flat(yaml.safe_load(r.stdout)))
        for key in flat(yaml.safe_load(text)):
            check(key in printed_keys, f"{label}: kilnd --print-config does not show {key}")
        check(r.stdout.count(path) >= len(list(flat(yaml.safe_load(text)))),
              f"{label}: kilnd --print-config does not attribute every key to the file:\n{r.stdout}")
        # Start it on loopback ports (a node's ports are not this machine's).
        p = subprocess.Popen([kilnd, "--config", path, "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
                              "--log-format", "text"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             env=env)
        try:
            line = p.stdout.readline()
            m = re.search(r"listening on (\S+)", line)
            if not check(m, f"{label}: kilnd did not start with the config: {line}{p.stdout.read() if p.poll() is not None else ''}"):
                return
            args = [kiln, "health", "--server", m.group(1), "--timeout", "10"]
            if "tls:" in text and "cert_file: " + tmp in text:
                args += ["--tls-ca-file", os.path.join(tmp, "tls", "ca.crt"), "--tls-server-name", "localhost"]
                if "client_ca_file: " + tmp in text:
                    args += ["--tls-cert-file", os.path.join(tmp, "tls", "tls.crt"),
                             "--tls-key-file", os.path.join(tmp, "tls", "tls.key")]
            h = subprocess.run(args, capture_output=True, text=True)
            check(h.returncode == 0 and h.stdout.strip() == "SERVING",
                  f"{label}: kiln health against kilnd with the config: {h.stdout}{h.stderr}")
        finally:
            p.terminate()
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def check_chart(chart_dir, label):
    chart = yaml.safe_load(open(os.path.join(chart_dir, "Chart.yaml")))
    check(chart.get("apiVersion") == "v2", f"{label}: Chart.yaml apiVersion must be v2")
    check(chart.get("name") == os.path.basename(chart_dir), f"{label}: Chart.yaml name is not the folder's")
    check(re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?", str(chart.get("version", ""))),
          f"{label}: Chart.yaml version is not SemVer")
    check(chart.get("appVersion"), f"{label}: Chart.yaml has no appVersion")
    check(chart.get("type", "application") == "application", f"{label}: Chart.yaml type")
    values = yaml.safe_load(open(os.path.join(chart_dir, "values.yaml")))
    helpers = open(os.path.join(chart_dir, "templates", "_helpers.tpl")).read()
    renderer = helm_render.Chart(helpers)
    templates = {}
    for path in sorted(glob.glob(os.path.join(chart_dir, "templates", "*.yaml"))):
        templates[os.path.basename(path)] = open(path).read()
    for name, text in list(templates.items()) + [("_helpers.tpl", helpers)]:
        for ref in helm_render.values_references(text):
            v = values
            for key in ref.strip(".").split("."):
                if not check(isinstance(v, dict) and key in v, f"{label}: {name} names .Values{ref}, not in values.yaml"):
                    break
                v = v[key]
        for inc in re.findall(r'include\s+"([^"]+)"', text):
            check(inc in renderer.defines, f"{label}: {name} includes undefined template {inc}")
    return chart, values, renderer, templates


def render(chart, values, renderer, templates, overrides, label):
    context = {
        "Values": helm_render.deep_merge(values, overrides),
        "Release": {"Name": "kiln", "Namespace": "kiln", "Service": "Helm"},
        "Chart": {"Name": chart["name"], "Version": chart["version"], "AppVersion": chart["appVersion"]},
    }
    docs = []
    for name, text in templates.items():
        try:
            out = renderer.render(text, context, f"{label}/{name}")
        except helm_render.TemplateError as e:
            check(False, f"{label}: {e}")
            continue
        try:
            docs += load_docs(out, f"{label}/{name}")
        except yaml.YAMLError as e:
            check(False, f"{label}/{name}: the rendering is not YAML: {e}\n{out}")
    return docs


def mutated(docs, edit):
    """The errors check_set finds in a copy of `docs` changed by `edit`."""
    global errors
    saved, errors = errors, []
    copy = yaml.safe_load(yaml.safe_dump(docs))
    ds = next(d for d in copy if d["kind"] == "DaemonSet")
    edit(copy, ds["spec"]["template"]["spec"], next(d for d in copy if d["kind"] == "ConfigMap"))
    check_set(copy, "mutant", external_secrets=("kiln-tls",))
    found, errors = errors, saved
    return found


def self_test(plain):
    """The checks catch the mistakes they are there for."""
    def kilnd(spec):
        return next(c for c in spec["containers"] if c["name"] == "kilnd")

    def cache_on_empty_dir(docs, spec, cm):
        volume = next(v for v in spec["volumes"] if v["name"] == "cache")
        volume.pop("hostPath")
        volume["emptyDir"] = {}

    def set_config(cm, edit):
        config = yaml.safe_load(cm["data"]["kilnd.yaml"])
        edit(config)
        cm["data"]["kilnd.yaml"] = yaml.safe_dump(config)

    cases = [
        ("grpc port", "listen", lambda docs, spec, cm: kilnd(spec)["ports"][0].update(containerPort=7071)),
        ("tls with grpc probes", "plaintext only",
         lambda docs, spec, cm: set_config(cm, lambda c: c["tls"].update(cert_file="/etc/kiln/tls/tls.crt"))),
        ("undeclared volume", "undeclared volume",
         lambda docs, spec, cm: kilnd(spec)["volumeMounts"].append({"name": "nope", "mountPath": "/x"})),
        ("no gpus", "nvidia.com/gpu", lambda docs, spec, cm: kilnd(spec)["resources"]["limits"].pop("nvidia.com/gpu")),
        ("cache on emptyDir", "local disk", cache_on_empty_dir),
        ("tokens outside a secret", "not in a Secret mount",
         lambda docs, spec, cm: set_config(cm, lambda c: c["auth"].update(tokens_file="/etc/kiln/config/tokens"))),
        ("missing ConfigMap", "not defined",
         lambda docs, spec, cm: cm["metadata"].update(name="other")),
        ("latest image", "fixed tag", lambda docs, spec, cm: kilnd(spec).update(image="kiln:latest")),
        ("grace", "terminationGracePeriodSeconds",
         lambda docs, spec, cm: spec.update(terminationGracePeriodSeconds=20)),
    ]
    for name, expect, edit in cases:
        found = mutated(plain, edit)
        check(any(expect in e for e in found), f"self-test '{name}': expected an error about '{expect}', got {found}")
    check(helm_render.values_references("{{ .Values.a.b_c }} {{- if .Values.d }}") == [".a.b_c", ".d"],
          "self-test: values_references")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--kilnd", required=True)
    ap.add_argument("--kiln")
    a = ap.parse_args()
    kiln = a.kiln or os.path.join(os.path.dirname(a.kilnd), "kiln")
    k8s = os.path.join(a.source_dir, "deploy", "k8s")
    plain = []
    for path in sorted(glob.glob(os.path.join(k8s, "*.yaml"))):
        plain += load_docs(open(path).read(), os.path.relpath(path, a.source_dir))
    config_text, plain_summary = check_set(plain, "deploy/k8s", external_secrets=("kiln-tls",))
    self_test(plain)
    if config_text:
        accepted_by_kilnd(config_text, "deploy/k8s", a.kilnd, kiln)

    chart_dir = os.path.join(a.source_dir, "deploy", "helm", "kiln")
    chart, values, renderer, templates = check_chart(chart_dir, "helm")
    external = (values["auth"]["tokensSecret"], values["tls"]["secretName"])
    cases = [
        ("helm defaults", {}),
        ("helm tls", {"tls": {"enabled": True}}),
        ("helm mutual tls", {"tls": {"enabled": True, "clientCA": True}}),
        ("helm minimal", {"auth": {"enabled": False}, "localService": {"enabled": False},
                          "serviceMonitor": {"enabled": False}, "prometheusRule": {"enabled": False},
                          "prometheusAnnotations": False, "ports": {"grpc": 8443, "metrics": 9464}}),
    ]
    for label, overrides in cases:
        docs = render(chart, values, renderer, templates, overrides, label)
        text, summary = check_set(docs, label, external_secrets=external)
        if text:
            accepted_by_kilnd(text, label, a.kilnd, kiln)
        if label == "helm tls" and summary:
            check(set(summary["probes"].values()) == {"http"}, f"{label}: probes should be httpGet /healthz")
        if label == "helm defaults" and summary and plain_summary:
            for key in plain_summary:
                check(summary[key] == plain_summary[key],
                      f"helm defaults vs deploy/k8s: {key} differs:\n  helm: {summary[key]}\n  k8s:  {plain_summary[key]}")

    for e in errors:
        print("FAIL:", e)
    if errors:
        return 1
    print(f"manifests ok: deploy/k8s ({len(plain)} objects) and the chart in {len(cases)} configurations")
    return 0


if __name__ == "__main__":
    sys.exit(main())
