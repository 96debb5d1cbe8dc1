#!/usr/bin/python3
"""ctest deploy/docker: what can be checked of the image without Docker (none runs here).

deploy/docker/Dockerfile: a debian:12 build stage whose RUN steps are the repository's own
scripts (scripts/install_deps.sh, scripts/build.sh, deploy/bundle.sh: each exists, is
executable, and is the same step the README/CI run) and a runtime stage that runs as a
non-root user, has a HEALTHCHECK through `kiln health`, keeps the config's cache.dir on a
VOLUME, EXPOSEs the config's ports and starts kilnd; every COPY source exists and is not
excluded by .dockerignore. The image's config (deploy/docker/kilnd.yaml) is accepted by the
real kilnd, and the HEALTHCHECK's command line answers SERVING against it.
deploy/docker/compose.yaml: its services, build context, mounted files, the Prometheus
scrape target (kilnd's metrics port) and Grafana's provisioning paths agree.

  check_docker.py --source-dir DIR --kilnd BUILD/kilnd
"""

import argparse
import fnmatch
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

import yaml

errors = []


def check(cond, message):
    if not cond:
        errors.append(message)
    return cond


def instructions(path):
    """(INSTRUCTION, argument text) with continuation lines joined, comments dropped."""
    out, cur = [], ""
    for line in open(path):
        line = line.rstrip("\n")
        if not cur and (not line.strip() or line.lstrip().startswith("#")):
            continue
        cur += line[:-1] + " " if line.endswith("\\") else line
        if not line.endswith("\\"):
            word, _, rest = cur.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
            cur = ""
    return out


def ignored(path, patterns):
    hit = False
    for p in patterns:
        neg = p.startswith("!")
        p = p.lstrip("!")
        parts = path.split("/")
        if any(fnmatch.fnmatch("/".join(parts[:i]), p) for i in range(1, len(parts) + 1)) or \
                any(fnmatch.fnmatch(part, p.replace("**/", "")) for part in parts if p.startswith("**/")):
            hit = not neg
    return hit


def port_of(address):
    return int(address.rsplit(":", 1)[1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--kilnd", required=True)
    a = ap.parse_args()
    src = a.source_dir
    kiln = os.path.join(os.path.dirname(a.kilnd), "kiln")
    dockerignore = [l.strip() for l in open(os.path.join(src, ".dockerignore"))
                    if l.strip() and not l.startswith("#")]
    steps = instructions(os.path.join(src, "deploy", "docker", "Dockerfile"))
    stages, cur = {}, None
    for word, rest in steps:
        if word == "FROM":
            m = re.fullmatch(r"(\S+)(?:\s+AS\s+(\S+))?", rest, re.I)
            cur = m.group(2) or str(len(stages))
            stages[cur] = {"from": m.group(1), "steps": []}
        elif cur:
            stages[cur]["steps"].append((word, rest))
    if not check(set(stages) == {"build", "runtime"}, f"Dockerfile: stages {sorted(stages)}, expected build and runtime"):
        return report()
    build, runtime = stages["build"], stages["runtime"]
    check(build["from"] == "debian:12", "Dockerfile: the build stage must be FROM debian:12 (what CI runs on)")
    run_text = " ".join(r for w, r in build["steps"] if w == "RUN")
    for script in ("scripts/install_deps.sh", "scripts/build.sh", "deploy/bundle.sh"):
        check(script in run_text, f"Dockerfile: the build stage does not run {script}")
        check(os.access(os.path.join(src, script), os.X_OK), f"{script} is missing or not executable")
    check(re.search(r"scripts/build\.sh kilnd kiln-worker kiln\b", run_text), "Dockerfile: build.sh must build kilnd kiln-worker kiln")
    serve = open(os.path.join(src, "scripts", "serve.sh")).read()
    check("scripts/build.sh" in serve and "scripts/install_deps.sh" in serve,
          "scripts/serve.sh no longer builds through scripts/install_deps.sh and scripts/build.sh")
    check(re.search(r"deploy/bundle\.sh --build-dir build-release --tree (\S+)", run_text),
          "Dockerfile: bundle.sh must lay the tree from build-release")
    tree = re.search(r"--tree (\S+)", run_text).group(1) if "--tree" in run_text else None
    for stage in (build, runtime):
        for word, rest in stage["steps"]:
            if word == "COPY" and "--from=" not in rest:
                for source in shlex.split(rest)[:-1]:
                    if source == ".":
                        continue
                    check(os.path.exists(os.path.join(src, source)), f"Dockerfile: COPY {source}: no such file")
                    check(not ignored(source, dockerignore), f"Dockerfile: COPY {source} is excluded by .dockerignore")
    for must_keep in ("scripts/install_deps.sh", "CMakeLists.txt", "server/kilnd_main.cc", "deploy/bundle.sh"):
        check(not ignored(must_keep, dockerignore), f".dockerignore excludes {must_keep}, which the build needs")
    for must_drop in ("build/kilnd", ".git/HEAD", "build-release/kilnd"):
        check(ignored(must_drop, dockerignore), f".dockerignore keeps {must_drop} in the build context")

    rt = {}
    for word, rest in runtime["steps"]:
        rt.setdefault(word, []).append(rest)
    copies = [r for r in rt.get("COPY", []) if "--from=build" in r]
    check(tree and any(r.split()[1] == tree for r in copies), "Dockerfile: the runtime stage does not copy the bundle tree")
    user = rt.get("USER", ["root"])[-1]
    check(user not in ("root", "0") and not user.startswith("0:"), f"Dockerfile: runs as {user}")
    check(re.search(rf"useradd .*{re.escape(user)}\b", " ".join(rt.get("RUN", []))), f"Dockerfile: user {user} is never created")
    env = " ".join(rt.get("ENV", []))
    config_in_image = re.search(r"KILN_CONFIG=(\S+)", env)
    check(config_in_image, "Dockerfile: no KILN_CONFIG")
    config_copy = [r.split() for r in rt.get("COPY", []) if "--from" not in r]
    local_config = next((c[0] for c in config_copy if config_in_image and c[-1] == config_in_image.group(1)), None)
    if not check(local_config, "Dockerfile: KILN_CONFIG names no copied file"):
        return report()
    config_text = open(os.path.join(src, local_config)).read()
    config = yaml.safe_load(config_text)
    volume = json.loads(rt["VOLUME"][-1]) if rt.get("VOLUME", [""])[-1].startswith("[") else rt.get("VOLUME", [""])[-1].split()
    check(config["cache"]["dir"] in volume, f"Dockerfile: cache.dir {config['cache']['dir']} is not a VOLUME ({volume})")
    exposed = {int(p.split("/")[0]) for r in rt.get("EXPOSE", []) for p in r.split()}
    ports = {port_of(config["listen"]), port_of(config["metrics"]["listen"])}
    check(exposed == ports, f"Dockerfile: EXPOSE {sorted(exposed)} is not the config's ports {sorted(ports)}")
    entry = json.loads(rt.get("ENTRYPOINT", ["[]"])[-1])
    check(entry == ["kilnd"], f"Dockerfile: ENTRYPOINT {entry}, expected [\"kilnd\"]")
    hc = rt.get("HEALTHCHECK", [""])[-1]
    m = re.search(r"CMD\s+(\[.*\])", hc)
    health = json.loads(m.group(1)) if m else []
    check(health[:2] == ["kiln", "health"], f"Dockerfile: HEALTHCHECK is not `kiln health`: {hc}")
    check("--server" in health and port_of(health[health.index("--server") + 1]) == port_of(config["listen"]),
          "Dockerfile: the HEALTHCHECK does not ask the config's gRPC port")

    # The image's config and HEALTHCHECK against the real kilnd.
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "kilnd.yaml")
        open(path, "w").write(config_text.replace(config["cache"]["dir"], tmp + "/cache"))
        env_ = {k: v for k, v in os.environ.items() if not k.startswith("KILN_")}
        env_["KILN_CONFIG"] = path
        r = subprocess.run([a.kilnd, "--print-config"], capture_output=True, text=True, env=env_)
        check(r.returncode == 0 and path in r.stdout, f"kilnd refuses {local_config}: {r.stderr}")
        p = subprocess.Popen([a.kilnd, "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--log-format", "text"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env_)
        try:
            line = p.stdout.readline()
            addr = re.search(r"listening on (\S+)", line)
            if check(addr, f"kilnd did not start with {local_config}: {line}"):
                argv = [kiln] + health[1:]
                argv[argv.index("--server") + 1] = addr.group(1)
                h = subprocess.run(argv, capture_output=True, text=True)
                check(h.returncode == 0 and h.stdout.strip() == "SERVING", f"HEALTHCHECK command: {h.stdout}{h.stderr}")
        finally:
            p.terminate()
            p.wait(timeout=30)

    # compose.yaml
    compose_dir = os.path.join(src, "deploy", "docker")
    compose = yaml.safe_load(open(os.path.join(compose_dir, "compose.yaml")))
    services = compose.get("services", {})
    check({"kilnd", "prometheus", "grafana"} <= set(services), f"compose: services {sorted(services)}")
    b = services["kilnd"].get("build", {})
    check(os.path.normpath(os.path.join(compose_dir, b.get("context", ""), b.get("dockerfile", "")))
          == os.path.normpath(os.path.join(src, "deploy/docker/Dockerfile")), "compose: kilnd's build does not use the Dockerfile")
    mounts = {}
    for name, svc in services.items():
        check(svc.get("image") and ":" in svc["image"] and not svc["image"].endswith(":latest"),
              f"compose: {name} has no pinned image")
        for v in svc.get("volumes", []):
            host, target = v.split(":")[:2]
            mounts[(name, target)] = host
            if host.startswith("."):
                check(os.path.exists(os.path.join(compose_dir, host)), f"compose: {name} mounts missing {host}")
            else:
                check(host in compose.get("volumes", {}), f"compose: {name} uses undeclared volume {host}")
    check(mounts.get(("kilnd", config["cache"]["dir"])), "compose: kilnd's cache.dir is not on a volume")
    prom = yaml.safe_load(open(os.path.join(compose_dir, "prometheus.yml")))
    targets = [t for j in prom["scrape_configs"] for s in j.get("static_configs", []) for t in s["targets"]]
    check(f"kilnd:{port_of(config['metrics']['listen'])}" in targets, f"prometheus.yml scrapes {targets}, not kilnd's metrics port")
    for rule in prom.get("rule_files", []):
        check(any(t == rule for (svc, t) in mounts if svc == "prometheus"), f"prometheus.yml: rule file {rule} is not mounted")
    ds = yaml.safe_load(open(os.path.join(compose_dir, "grafana/provisioning/datasources/prometheus.yaml")))
    check(ds["datasources"][0]["url"] == "http://prometheus:9090", "grafana: data source is not the compose Prometheus")
    dp = yaml.safe_load(open(os.path.join(compose_dir, "grafana/provisioning/dashboards/kiln.yaml")))
    dash_path = dp["providers"][0]["options"]["path"]
    host = mounts.get(("grafana", dash_path))
    check(host and os.path.exists(os.path.join(compose_dir, host, "kiln-dashboard.json")),
          f"grafana: the dashboards path {dash_path} does not hold deploy/grafana/kiln-dashboard.json")
    return report()


def report():
    for e in errors:
        print("FAIL:", e)
    if errors:
        return 1
    print("docker ok: Dockerfile stages, scripts, runtime user/healthcheck/volume/ports, image config, compose")
    return 0


if __name__ == "__main__":
    sys.exit(main())
