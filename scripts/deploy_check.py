#!/usr/bin/env python3
"""The project's own checks of deploy/ (docs/deploy.md, "Validation").

    deploy_check.py check ROOT     problems in deploy/k8s, deploy/compose.yaml and the
                                   Dockerfiles; exit 1 when there is one
    deploy_check.py argv ROOT      every skillshift command line in deploy/ and in the
                                   deployment docs, one per line: where it is, a tab,
                                   then its arguments after `skillshift`, tab-separated
    deploy_check.py selftest ROOT  breaks a copy of the manifests in memory, one way per
                                   check, and fails unless each break is reported

Schemas are kubernetes-validate's job (scripts/check-deploy.sh); whether each flag of a
command line exists is tests/deploy_manifests.rs's, against the built binary. Needs PyYAML.
"""

import copy
import json
import re
import shlex
import sys
from pathlib import Path

import yaml

NAMESPACE = "skillshift"
TOKEN_SECRET = ("skillshift-token", "token")
# Variables whose value is a credential: never a literal in a manifest.
SECRET_VARS = {"SKILLSHIFT_TOKEN", "OPENAI_API_KEY"}
# Worker shutdown beyond --drain-timeout: outbox delivery (10 s), metrics server and span
# flush (5 s each), and a margin (worker/src/remote, src/cmd/worker.rs).
DRAIN_EXTRA_S = 30
WORKER_DRAIN_DEFAULT_S = 60
CLUSTER_SCOPED = {"Namespace"}
WORKLOADS = {"Deployment", "StatefulSet", "DaemonSet", "Job"}
# Fields of a KEDA ScaledObject (keda.sh/docs, ScaledObject specification); no schema of it
# ships with kubernetes-validate.
KEDA_SPEC_KEYS = {"scaleTargetRef", "pollingInterval", "cooldownPeriod", "initialCooldownPeriod",
                  "idleReplicaCount", "minReplicaCount", "maxReplicaCount", "fallback", "advanced",
                  "triggers"}
KEDA_PROMETHEUS_KEYS = {"serverAddress", "query", "threshold", "activationThreshold", "namespace",
                        "customHeaders", "ignoreNullValues", "unsafeSsl", "queryParameters"}
# The worker's --sites file (worker/src/sites.rs; docs/formats.md, "--sites FILE").
SITES_KEYS = {"backend", "control_path", "reset_policy", "reset_timeout_s", "sites"}
SITE_ENTRY_KEYS = {"url", "digest", "login", "reset_command", "env_ctrl", "auto_login", "storage_state"}
DOC_FILES = ["docs/deploy.md", "deploy/README.md"]


class Bundle:
    """What is checked: every manifest document, the compose file, the Dockerfiles."""

    def __init__(self, root):
        self.root = Path(root)
        k8s = self.root / "deploy/k8s"
        self.kustomization = yaml.safe_load((k8s / "kustomization.yaml").read_text())
        self.docs = []  # (relative path, document)
        for path in sorted(k8s.glob("*.yaml")) + sorted((k8s / "optional").glob("*.yaml")):
            if path.name == "kustomization.yaml":
                continue
            for doc in yaml.safe_load_all(path.read_text()):
                if doc is not None:
                    self.docs.append((str(path.relative_to(self.root)), doc))
        self.compose = yaml.safe_load((self.root / "deploy/compose.yaml").read_text())
        self.dockerfiles = {}
        for path in sorted((self.root / "deploy").glob("Dockerfile.*")):
            if path.suffix != ".dockerignore":
                self.dockerfiles[path.name] = dockerfile(path.read_text())
        self.metrics_source = (self.root / "telemetry/src/metrics/coordinator.rs").read_text()


def dockerfile(text):
    """FROM images, ENTRYPOINT and CMD (exec form) of a Dockerfile."""
    out = {"from": [], "entrypoint": None, "cmd": None}
    for line in text.splitlines():
        words = line.split(None, 1)
        if len(words) < 2:
            continue
        op, rest = words[0].upper(), words[1].strip()
        if op == "FROM":
            out["from"].append(rest.split()[0])
        elif op in ("ENTRYPOINT", "CMD"):
            try:
                value = json.loads(rest)
            except json.JSONDecodeError:
                value = rest  # shell form: reported by the checks
            out[op.lower()] = value
    return out


def name_of(doc):
    return f"{doc.get('kind')}/{doc.get('metadata', {}).get('name')}"


def pod_spec(doc):
    spec = doc.get("spec", {})
    if doc.get("kind") in WORKLOADS:
        return spec.get("template", {}).get("spec", {})
    return None


def containers(pod):
    """(kind, container) of a pod spec: its containers and its init containers."""
    for c in pod.get("initContainers", []) or []:
        yield "initContainer", c
    for c in pod.get("containers", []) or []:
        yield "container", c


def image_dockerfile(bundle, image):
    """The Dockerfile that builds a skillshift image, from the image's name."""
    repo = image.rsplit("/", 1)[-1].split("@")[0].split(":")[0]
    if not repo.startswith("skillshift-"):
        return None
    return bundle.dockerfiles.get("Dockerfile." + repo[len("skillshift-"):])


def k8s_argv(bundle, container):
    """The full command line of a container, the image's ENTRYPOINT/CMD filling gaps."""
    command, args = container.get("command"), container.get("args")
    df = image_dockerfile(bundle, container.get("image", ""))
    if command is None and df is not None:
        command = df["entrypoint"] if isinstance(df["entrypoint"], list) else None
        if args is None:
            args = df["cmd"] if isinstance(df["cmd"], list) else None
    return [str(t) for t in (command or []) + (args or [])]


def compose_argv(bundle, service):
    df = None
    build = service.get("build")
    if isinstance(build, dict) and build.get("dockerfile"):
        df = bundle.dockerfiles.get(Path(build["dockerfile"]).name)
    elif service.get("image"):
        df = image_dockerfile(bundle, service["image"])
    entry = service.get("entrypoint")
    if entry is None and df is not None:
        entry = df["entrypoint"] if isinstance(df["entrypoint"], list) else None
    command = service.get("command")
    if command is None and df is not None:
        command = df["cmd"] if isinstance(df["cmd"], list) else None
    if isinstance(command, str):
        command = shlex.split(command)
    return [str(t) for t in (entry or []) + (command or [])]


def is_skillshift(word):
    return word == "skillshift" or word.endswith("/skillshift")


def after_skillshift(argv):
    """The arguments after the `skillshift` binary, or None when it is not what runs: it must
    be the command word (after any `NAME=value` assignments) or follow a `--` (as in
    `tini -- skillshift` or `kubectl exec POD -- skillshift`)."""
    words = list(argv)
    while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
        words.pop(0)
    if words and is_skillshift(words[0]):
        return words[1:]
    for i, t in enumerate(words[:-1]):
        if t == "--" and is_skillshift(words[i + 1]):
            return words[i + 2:]
    return None


def flag_value(args, flag):
    """The value of `--flag V` or `--flag=V` in an argument list, else None."""
    for i, t in enumerate(args):
        if t == flag and i + 1 < len(args):
            return args[i + 1]
        if t.startswith(flag + "="):
            return t[len(flag) + 1:]
    return None


def port_of(addr):
    m = re.search(r":(\d+)$", addr or "")
    return int(m.group(1)) if m else None


def under(path, mount):
    return path == mount or path.startswith(mount.rstrip("/") + "/")


def skillshift_pods(bundle):
    """(source, doc, pod, container, args) for every container that runs skillshift."""
    for source, doc in bundle.docs:
        pod = pod_spec(doc)
        if pod is None:
            continue
        for _, c in containers(pod):
            args = after_skillshift(k8s_argv(bundle, c))
            if args is not None:
                yield source, doc, pod, c, args


def subcommand(args):
    return next((a for a in args if not a.startswith("-")), None)


# ---------------------------------------------------------------- the checks

def check_layout(bundle):
    problems = []
    k8s = bundle.root / "deploy/k8s"
    listed = bundle.kustomization.get("resources", [])
    on_disk = sorted(p.name for p in k8s.glob("*.yaml") if p.name != "kustomization.yaml")
    for r in listed:
        if not (k8s / r).is_file():
            problems.append(f"kustomization.yaml: resource {r} does not exist")
        if r.startswith("optional"):
            problems.append(f"kustomization.yaml: {r} is optional and must not be applied by default")
    for name in on_disk:
        if name not in listed:
            problems.append(f"kustomization.yaml: deploy/k8s/{name} is not listed in resources")
    if bundle.kustomization.get("namespace") != NAMESPACE:
        problems.append(f"kustomization.yaml: namespace must be {NAMESPACE}")
    for source, doc in bundle.docs:
        ns = doc.get("metadata", {}).get("namespace")
        if doc.get("kind") not in CLUSTER_SCOPED and ns != NAMESPACE:
            problems.append(f"{source}: {name_of(doc)} has namespace {ns!r}, expected {NAMESPACE}")
    return problems


def check_token(bundle):
    problems = []
    for source, doc in bundle.docs:
        if doc.get("kind") == "Secret" and (doc.get("data") or doc.get("stringData")):
            problems.append(f"{source}: {name_of(doc)} carries secret values; create it with kubectl instead")
        if doc.get("kind") == "ConfigMap":
            for key in (doc.get("data") or {}):
                if re.search(r"TOKEN|API_KEY|PASSWORD", key, re.I):
                    problems.append(f"{source}: {name_of(doc)} key {key} looks like a credential")
        pod = pod_spec(doc)
        if pod is None:
            continue
        for _, c in containers(pod):
            where = f"{source}: {name_of(doc)} container {c.get('name')}"
            if any(t == "--token" or t.startswith("--token=") for t in k8s_argv(bundle, c)):
                problems.append(f"{where}: --token on the command line; use SKILLSHIFT_TOKEN from the Secret")
            for env in c.get("env", []) or []:
                if env.get("name") not in SECRET_VARS:
                    continue
                ref = (env.get("valueFrom") or {}).get("secretKeyRef")
                if "value" in env or ref is None:
                    problems.append(f"{where}: {env['name']} must come from a secretKeyRef, not a value")
                elif env["name"] == "SKILLSHIFT_TOKEN" and (ref.get("name"), ref.get("key")) != TOKEN_SECRET:
                    problems.append(f"{where}: SKILLSHIFT_TOKEN must read secret {TOKEN_SECRET[0]} key "
                                    f"{TOKEN_SECRET[1]} (the one docs/deploy.md creates)")
                elif env["name"] == "SKILLSHIFT_TOKEN" and ref.get("optional"):
                    problems.append(f"{where}: SKILLSHIFT_TOKEN must not be optional")
    for source, doc, pod, c, args in skillshift_pods(bundle):
        names = {e.get("name") for e in c.get("env", []) or []}
        if "SKILLSHIFT_TOKEN" not in names:
            problems.append(f"{source}: {name_of(doc)} container {c.get('name')} runs skillshift without "
                            "SKILLSHIFT_TOKEN")
    for name, svc in (bundle.compose.get("services") or {}).items():
        env = svc.get("environment") or {}
        if isinstance(env, list):
            env = dict(e.split("=", 1) if "=" in e else (e, None) for e in env)
        for var in SECRET_VARS & set(env):
            value = str(env[var] or "")
            if var == "SKILLSHIFT_TOKEN" and not re.fullmatch(r"\$\{SKILLSHIFT_TOKEN:\?[^}]*\}", value):
                problems.append(f"compose.yaml: service {name}: SKILLSHIFT_TOKEN must be "
                                "${SKILLSHIFT_TOKEN:?...} (required, no default)")
            if var != "SKILLSHIFT_TOKEN" and not re.fullmatch(r"\$\{" + var + r"(:-)?\}", value):
                problems.append(f"compose.yaml: service {name}: {var} must come from the environment")
        if any(t == "--token" or t.startswith("--token=") for t in compose_argv(bundle, svc)):
            problems.append(f"compose.yaml: service {name}: --token on the command line")
    return problems


def probe_port_ok(c, probe):
    http = probe.get("httpGet") or probe.get("tcpSocket") or probe.get("grpc")
    if http is None:
        return "exec" in probe
    port = http.get("port")
    declared = {p.get("name") for p in c.get("ports", [])} | {p.get("containerPort") for p in c.get("ports", [])}
    return port in declared


def check_probes(bundle):
    problems = []
    for source, doc in bundle.docs:
        pod = pod_spec(doc)
        if pod is None:
            continue
        for kind, c in containers(pod):
            where = f"{source}: {name_of(doc)} {kind} {c.get('name')}"
            serves = bool(c.get("ports"))
            sidecar = kind == "initContainer" and c.get("restartPolicy") == "Always"
            if kind == "initContainer" and not sidecar:
                continue
            for probe in ("readinessProbe", "livenessProbe"):
                if serves and probe not in c:
                    problems.append(f"{where}: serves ports but has no {probe}")
                if probe in c and not probe_port_ok(c, c[probe]):
                    problems.append(f"{where}: {probe} uses a port the container does not declare")
            if "resources" not in c or not c["resources"].get("requests") or not c["resources"].get("limits"):
                problems.append(f"{where}: needs resource requests and limits")
    # The probes of skillshift's own containers go to endpoints the binary really serves.
    for source, doc, pod, c, args in skillshift_pods(bundle):
        where = f"{source}: {name_of(doc)} container {c.get('name')}"
        sub = subcommand(args)
        ports = {p.get("name"): p.get("containerPort") for p in c.get("ports", [])}
        if sub == "coordinator":
            port, paths = port_of(flag_value(args, "--http")), {"/healthz", "/metrics", "/api/status", "/"}
            if port is None:
                problems.append(f"{where}: the coordinator needs --http for its probes and /metrics")
        elif sub == "worker":
            port, paths = port_of(flag_value(args, "--metrics-addr")), {"/metrics", "/healthz", "/readyz"}
            if port is None:
                problems.append(f"{where}: the worker needs --metrics-addr: its HTTP endpoint, for probes")
            # Liveness must survive a drain and a lost coordinator; readiness says the worker takes work.
            for probe, want in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
                got = ((c.get(probe) or {}).get("httpGet") or {}).get("path")
                if got != want:
                    problems.append(f"{where}: the worker's {probe} must use {want}, found {got}")
        else:
            continue
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            http = (c.get(probe) or {}).get("httpGet")
            if http is None:
                continue
            p = ports.get(http.get("port"), http.get("port"))
            if p != port:
                problems.append(f"{where}: {probe} probes port {p}, but the process serves HTTP on {port}")
            if http.get("path") not in paths:
                problems.append(f"{where}: {probe} path {http.get('path')} is not served by skillshift {sub} "
                                f"({', '.join(sorted(paths))})")
    return problems


def check_storage(bundle):
    problems = []
    for source, doc, pod, c, args in skillshift_pods(bundle):
        where = f"{source}: {name_of(doc)} container {c.get('name')}"
        sub = subcommand(args)
        mounts = {m.get("mountPath"): m.get("name") for m in c.get("volumeMounts", []) or []}
        volumes = {v.get("name"): v for v in pod.get("volumes", []) or []}
        if sub == "coordinator":
            if doc.get("kind") != "StatefulSet":
                problems.append(f"{where}: the coordinator must run as a StatefulSet")
                continue
            claims = {t.get("metadata", {}).get("name") for t in doc["spec"].get("volumeClaimTemplates", [])}
            data_dir = flag_value(args, "--data-dir")
            if data_dir is None:
                problems.append(f"{where}: --data-dir not set (the default is relative to the working folder)")
                continue
            hits = [name for path, name in mounts.items() if under(data_dir, path)]
            if not hits or hits[0] not in claims:
                problems.append(f"{where}: --data-dir {data_dir} is not on a volume from volumeClaimTemplates "
                                f"({', '.join(sorted(claims)) or 'none'})")
            if doc["spec"].get("replicas", 1) != 1:
                problems.append(f"{where}: one coordinator holds the queue: replicas must be 1")
        elif sub == "worker":
            outbox = flag_value(args, "--outbox")
            hits = [name for path, name in mounts.items() if outbox and under(outbox, path)]
            if not hits or "emptyDir" not in volumes.get(hits[0], {}):
                problems.append(f"{where}: --outbox must be set and on an emptyDir volume")
            shm = mounts.get("/dev/shm")
            if shm is None or (volumes.get(shm, {}).get("emptyDir") or {}).get("medium") != "Memory":
                problems.append(f"{where}: /dev/shm must be an emptyDir with medium Memory")
            drain = int(flag_value(args, "--drain-timeout") or WORKER_DRAIN_DEFAULT_S)
            grace = pod.get("terminationGracePeriodSeconds", 30)
            if grace < drain + DRAIN_EXTRA_S:
                problems.append(f"{where}: terminationGracePeriodSeconds {grace} < --drain-timeout {drain} + "
                                f"{DRAIN_EXTRA_S}: the kubelet would kill the drain")
    return problems


def image_pinned(image):
    if "@sha256:" in image:
        return True
    last = image.rsplit("/", 1)[-1]
    return ":" in last and last.split(":", 1)[1] not in ("", "latest")


def check_images(bundle):
    problems = []
    for source, doc in bundle.docs:
        pod = pod_spec(doc)
        for _, c in containers(pod or {}):
            if not image_pinned(c.get("image", "")):
                problems.append(f"{source}: {name_of(doc)} container {c.get('name')}: image "
                                f"{c.get('image')!r} must carry a tag other than latest, or a digest")
    for name, svc in (bundle.compose.get("services") or {}).items():
        if not image_pinned(svc.get("image", "")):
            problems.append(f"compose.yaml: service {name}: image {svc.get('image')!r} is not pinned")
    for name, df in bundle.dockerfiles.items():
        for image in df["from"]:
            if not image_pinned(image):
                problems.append(f"deploy/{name}: FROM {image} is not pinned")
        for op in ("entrypoint", "cmd"):
            if df[op] is not None and not isinstance(df[op], list):
                problems.append(f"deploy/{name}: {op.upper()} must be in exec form (a JSON list)")
    return problems


def check_telemetry(bundle):
    problems = []
    maps = {doc["metadata"]["name"]: doc.get("data") or {} for _, doc in bundle.docs if doc.get("kind") == "ConfigMap"}
    for source, doc, pod, c, args in skillshift_pods(bundle):
        env = {e.get("name") for e in c.get("env", []) or []}
        for ref in c.get("envFrom", []) or []:
            env |= set(maps.get((ref.get("configMapRef") or {}).get("name"), {}))
        for var in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_SERVICE_NAME"):
            if var not in env:
                problems.append(f"{source}: {name_of(doc)} container {c.get('name')}: {var} is not set")
    return problems


def registered_metrics(source):
    """Metric names the coordinator exports: registry prefix `skillshift`, gauges as named."""
    return {"skillshift_" + m for m in re.findall(r'r\.register\(\s*"([a-z_]+)"', source)}


def check_keda(bundle):
    problems = []
    deployments = {doc["metadata"]["name"]: doc for _, doc in bundle.docs if doc.get("kind") == "Deployment"}
    metrics = registered_metrics(bundle.metrics_source)
    for source, doc in bundle.docs:
        if doc.get("kind") != "ScaledObject":
            continue
        spec = doc.get("spec") or {}
        for key in set(spec) - KEDA_SPEC_KEYS:
            problems.append(f"{source}: ScaledObject spec has no field {key}")
        target = deployments.get((spec.get("scaleTargetRef") or {}).get("name"))
        if target is None:
            problems.append(f"{source}: scaleTargetRef names no Deployment of deploy/k8s")
            continue
        slots = None
        for _, c in containers(pod_spec(target)):
            args = after_skillshift(k8s_argv(bundle, c))
            if args is not None and subcommand(args) == "worker":
                slots = int(flag_value(args, "--slots") or 1)
        for trig in spec.get("triggers") or []:
            meta = trig.get("metadata") or {}
            if trig.get("type") != "prometheus":
                continue
            for key in set(meta) - KEDA_PROMETHEUS_KEYS:
                problems.append(f"{source}: prometheus trigger has no field {key}")
            used = set(re.findall(r"\bskillshift_[a-z_]+", meta.get("query", "")))
            if not used:
                problems.append(f"{source}: the query uses no skillshift metric")
            for m in sorted(used - metrics):
                problems.append(f"{source}: the coordinator exports no metric {m} "
                                f"(it has {', '.join(sorted(metrics))})")
            if slots is not None and str(meta.get("threshold")) != str(slots):
                problems.append(f"{source}: threshold {meta.get('threshold')} is not the workers' --slots {slots}")
    return problems


def check_sites(bundle):
    """A --sites ConfigMap parses, uses known keys, and its ports are the sidecars' ports."""
    problems = []
    maps = {doc["metadata"]["name"]: (source, doc) for source, doc in bundle.docs if doc.get("kind") == "ConfigMap"}
    for source, doc, pod, c, args in skillshift_pods(bundle):
        path = flag_value(args, "--sites")
        if path is None:
            continue
        where = f"{source}: {name_of(doc)}"
        mounts = {m.get("mountPath"): m.get("name") for m in c.get("volumeMounts", []) or []}
        volumes = {v.get("name"): v for v in pod.get("volumes", []) or []}
        hit = [(mp, name) for mp, name in mounts.items() if under(path, mp)]
        cm_name = (volumes.get(hit[0][1], {}).get("configMap") or {}).get("name") if hit else None
        if cm_name not in maps:
            problems.append(f"{where}: --sites {path} is not in a ConfigMap of deploy/k8s")
            continue
        key = path[len(hit[0][0]):].lstrip("/")
        try:
            cfg = json.loads((maps[cm_name][1].get("data") or {})[key])
        except (KeyError, json.JSONDecodeError) as e:
            problems.append(f"{where}: --sites {path}: {e}")
            continue
        for k in set(cfg) - SITES_KEYS:
            problems.append(f"{where}: sites file has no key {k}")
        served = set()
        for _, side in containers(pod):
            if side is c:
                continue
            served |= {p.get("containerPort") for p in side.get("ports", [])}
            for e in side.get("env", []) or []:
                if e.get("name") == "WA_ENV_CTRL_PORT":
                    if int(e.get("value", 0)) not in served:
                        problems.append(f"{where}: {side.get('name')}: env-ctrl port {e.get('value')} not declared")
        for image, entry in (cfg.get("sites") or {}).items():
            for k in set(entry) - SITE_ENTRY_KEYS:
                problems.append(f"{where}: sites.{image} has no key {k}")
            if not re.fullmatch(r"(gitlab|magento|wordpress)-v[12]", image):
                problems.append(f"{where}: sites.{image}: not an image name like gitlab-v1")
            urls = [entry.get("url", ""), entry.get("env_ctrl") or ""]
            urls += re.findall(r"https?://[^\s\"']+", entry.get("reset_command", ""))
            for url in urls:
                m = re.match(r"https?://(localhost|127\.0\.0\.1)(?::(\d+))?", url)
                if m and int(m.group(2) or 80) not in served:
                    problems.append(f"{where}: sites.{image}: {url} is on no port a sidecar declares")
            if cfg.get("backend") == "external" and not entry.get("reset_command"):
                problems.append(f"{where}: sites.{image}: the external backend needs reset_command")
    return problems


def check_compose(bundle):
    problems = []
    for name, svc in (bundle.compose.get("services") or {}).items():
        build = svc.get("build")
        if isinstance(build, dict) and not (bundle.root / "deploy" / build.get("context", ".") /
                                            build.get("dockerfile", "Dockerfile")).is_file():
            problems.append(f"compose.yaml: service {name}: dockerfile {build.get('dockerfile')} not found")
        args = after_skillshift(compose_argv(bundle, svc))
        if args is None:
            continue
        if subcommand(args) == "worker":
            drain = int(flag_value(args, "--drain-timeout") or WORKER_DRAIN_DEFAULT_S)
            grace = svc.get("stop_grace_period", "10s")
            seconds = int(re.fullmatch(r"(\d+)s", str(grace)).group(1)) if re.fullmatch(r"\d+s", str(grace)) else 0
            if seconds < drain + DRAIN_EXTRA_S:
                problems.append(f"compose.yaml: service {name}: stop_grace_period {grace} < --drain-timeout "
                                f"{drain} + {DRAIN_EXTRA_S}s")
    return problems


def unwired_skillshift_images(bundle):
    """skillshift images whose container runs no visible `skillshift` (so its flags go unchecked)."""
    problems = []
    for source, doc in bundle.docs:
        for kind, c in containers(pod_spec(doc) or {}):
            if image_dockerfile(bundle, c.get("image", "")) is not None and \
                    after_skillshift(k8s_argv(bundle, c)) is None:
                problems.append(f"{source}: {name_of(doc)} {kind} {c.get('name')}: runs a skillshift image "
                                "without a visible `skillshift` command line")
    return problems


CHECKS = [check_layout, check_token, check_probes, check_storage, check_images, check_telemetry,
          check_keda, check_sites, check_compose, unwired_skillshift_images]


def problems_of(bundle):
    return [p for check in CHECKS for p in check(bundle)]


# ---------------------------------------------------------------- command lines

def doc_command_lines(text):
    """Shell lines of the fenced code blocks of a Markdown file (console blocks: `$ ` lines)."""
    out, fence, joined = [], None, ""
    for n, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fence = None if fence is not None else (line.strip()[3:] or "sh")
            continue
        if fence is None:
            continue
        if fence == "console":
            if not line.startswith("$ "):
                continue
            line = line[2:]
        joined += line
        if joined.endswith("\\"):
            joined = joined[:-1] + " "
            continue
        out.append((n, joined))
        joined = ""
    return out


def comment_command_lines(text):
    """Example commands in `#`-comments: lines of `#` and at least two spaces of indent."""
    return [(n, m.group(1)) for n, line in enumerate(text.splitlines(), 1)
            if (m := re.match(r"\s*#\s{2,}(\S.*)$", line))]


def shell_argvs(line):
    """The simple commands of one shell line that run skillshift, split at operators."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        tokens = list(lexer)
    except ValueError:
        return []
    tokens = tokens[:tokens.index("#")] if "#" in tokens else tokens
    argvs, current = [], []
    for t in tokens + [";"]:
        if t and all(ch in "();<>|&" for ch in t):
            if current:
                argvs.append(current)
            current = []
        else:
            current.append(t)
    return [a for a in (after_skillshift(v) for v in argvs) if a is not None]


def command_lines(bundle):
    """(where, args after skillshift) of every skillshift command line."""
    out = []
    for source, doc in bundle.docs:
        pod = pod_spec(doc)
        for kind, c in containers(pod or {}):
            args = after_skillshift(k8s_argv(bundle, c))
            if args is not None:
                out.append((f"{source}: {name_of(doc)} {kind} {c.get('name')}", args))
    for name, svc in (bundle.compose.get("services") or {}).items():
        args = after_skillshift(compose_argv(bundle, svc))
        if args is not None:
            out.append((f"deploy/compose.yaml: service {name}", args))
    for name, df in bundle.dockerfiles.items():
        argv = (df["entrypoint"] if isinstance(df["entrypoint"], list) else []) + \
               (df["cmd"] if isinstance(df["cmd"], list) else [])
        args = after_skillshift(argv)
        if args is not None:
            out.append((f"deploy/{name}: ENTRYPOINT + CMD", args))
    texts = [p for p in sorted((bundle.root / "deploy").rglob("*")) if p.suffix in (".yaml", "") and p.is_file()
             and (p.suffix == ".yaml" or p.name.startswith("Dockerfile."))]
    for path in texts:
        for n, line in comment_command_lines(path.read_text()):
            for args in shell_argvs(line):
                out.append((f"{path.relative_to(bundle.root)}:{n}", args))
    for rel in DOC_FILES:
        path = bundle.root / rel
        if path.is_file():
            for n, line in doc_command_lines(path.read_text()):
                for args in shell_argvs(line):
                    out.append((f"{rel}:{n}", args))
    return out




# ---------------------------------------------------------------- self-test

def find(bundle, kind, name):
    return next(doc for _, doc in bundle.docs if doc.get("kind") == kind and doc["metadata"]["name"] == name)


def main_container(doc):
    return doc["spec"]["template"]["spec"]["containers"][0]


def set_arg(c, flag, value):
    args = c["args"]
    args[args.index(flag) + 1] = value


def breakages():
    """(what, how to break a bundle, a phrase the report must contain)."""
    def coord(b):
        return main_container(find(b, "StatefulSet", "skillshift-coordinator"))

    def worker(b):
        return main_container(find(b, "Deployment", "skillshift-worker"))

    def literal_token(b):
        env = next(e for e in coord(b)["env"] if e["name"] == "SKILLSHIFT_TOKEN")
        env.pop("valueFrom")
        env["value"] = "s3cret"

    def token_flag(b):
        worker(b)["args"] += ["--token", "s3cret"]

    def secret_object(b):
        b.docs.append(("deploy/k8s/x.yaml", {"apiVersion": "v1", "kind": "Secret",
                                             "metadata": {"name": "t", "namespace": NAMESPACE},
                                             "stringData": {"token": "s3cret"}}))

    def no_readiness(b):
        worker(b).pop("readinessProbe")

    def wrong_probe_path(b):
        coord(b)["livenessProbe"]["httpGet"]["path"] = "/health"

    def worker_probe_off_port(b):
        set_arg(worker(b), "--metrics-addr", "0.0.0.0:9999")

    def data_dir_off_volume(b):
        set_arg(coord(b), "--data-dir", "/tmp/store")

    def short_grace(b):
        find(b, "Deployment", "skillshift-worker")["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 30

    def outbox_off_volume(b):
        set_arg(worker(b), "--outbox", "/tmp/outbox")

    def latest_image(b):
        worker(b)["image"] = "skillshift-worker:latest"

    def untagged_image(b):
        coord(b)["image"] = "skillshift-coordinator"

    def keda_metric(b):
        so = find(b, "ScaledObject", "skillshift-worker")
        so["spec"]["triggers"][0]["metadata"]["query"] = 'sum(skillshift_queue_depth)'

    def keda_threshold(b):
        set_arg(worker(b), "--slots", "4")

    def compose_token_default(b):
        b.compose["services"]["coordinator"]["environment"]["SKILLSHIFT_TOKEN"] = "${SKILLSHIFT_TOKEN:-change-me}"

    def compose_grace(b):
        b.compose["services"]["worker-1"].pop("stop_grace_period")

    def sites_port(b):
        cm = find(b, "ConfigMap", "skillshift-sites-webarena-verified")
        cm["data"]["sites.json"] = cm["data"]["sites.json"].replace("127.0.0.1:8024", "127.0.0.1:8877")

    def no_otlp(b):
        main_container(find(b, "Deployment", "skillshift-worker")).pop("envFrom")

    def worker_ready_on_metrics(b):
        main_container(find(b, "Deployment", "skillshift-worker"))["readinessProbe"]["httpGet"]["path"] = "/metrics"

    return [
        ("a literal token", literal_token, "secretKeyRef"),
        ("--token in args", token_flag, "--token on the command line"),
        ("a Secret with values", secret_object, "carries secret values"),
        ("a missing readiness probe", no_readiness, "no readinessProbe"),
        ("a probe path the coordinator lacks", wrong_probe_path, "is not served"),
        ("a worker ready on /metrics", worker_ready_on_metrics, "readinessProbe must use /readyz"),
        ("a probe on the wrong port", worker_probe_off_port, "probes port"),
        ("--data-dir off the claimed volume", data_dir_off_volume, "not on a volume from volumeClaimTemplates"),
        ("a grace period shorter than the drain", short_grace, "would kill the drain"),
        ("an outbox off its emptyDir", outbox_off_volume, "emptyDir"),
        ("an image tagged latest", latest_image, "must carry a tag"),
        ("an untagged image", untagged_image, "must carry a tag"),
        ("a metric the coordinator does not export", keda_metric, "exports no metric"),
        ("a threshold that is not --slots", keda_threshold, "is not the workers' --slots"),
        ("a compose token with a default", compose_token_default, "required, no default"),
        ("a compose worker without grace", compose_grace, "stop_grace_period"),
        ("a reset URL on no sidecar port", sites_port, "on no port a sidecar declares"),
        ("a worker without OTLP settings", no_otlp, "OTEL_EXPORTER_OTLP_ENDPOINT"),
    ]


def selftest(root):
    base = Bundle(root)
    clean = problems_of(base)
    if clean:
        print("selftest: the unbroken manifests already have problems:", *clean, sep="\n  ")
        return 1
    missed = 0
    for what, breaker, phrase in breakages():
        b = copy.deepcopy(base)
        breaker(b)
        found = problems_of(b)
        if any(phrase in p for p in found):
            print(f"selftest: caught {what}")
        else:
            missed += 1
            print(f"selftest: MISSED {what} (expected a problem containing {phrase!r}; got {found})")
    print(f"selftest: {len(breakages()) - missed}/{len(breakages())} breakages caught")
    return 1 if missed else 0


def main(argv):
    if len(argv) != 3 or argv[1] not in ("check", "argv", "selftest"):
        print(__doc__, file=sys.stderr)
        return 2
    root = Path(argv[2])
    if argv[1] == "selftest":
        return selftest(root)
    bundle = Bundle(root)
    if argv[1] == "argv":
        for where, args in command_lines(bundle):
            if any("\t" in a or "\n" in a for a in args):
                print(f"deploy_check: {where}: an argument holds a tab or newline", file=sys.stderr)
                return 1
            print("\t".join([where] + args))
        return 0
    problems = problems_of(bundle)
    for p in problems:
        print(f"problem: {p}")
    print(f"project checks: {len(bundle.docs)} manifest documents, {len(bundle.compose.get('services', {}))} "
          f"compose services, {len(bundle.dockerfiles)} Dockerfiles: {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
