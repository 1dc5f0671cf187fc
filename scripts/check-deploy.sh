#!/usr/bin/env bash
# Validates deploy/ offline (docs/deploy.md, "Validation"):
#  1. every manifest in deploy/k8s and deploy/k8s/optional against the Kubernetes
#     OpenAPI schemas in strict mode (unknown fields are errors), with kubernetes-validate
#     from PyPI, for each version in K8S_VERSIONS; custom resources (KEDA) have no schema
#     there and are checked by step 3;
#  2. the kustomization rendered by `kubectl kustomize` (when kubectl is installed), the same way;
#  3. the project's own checks (scripts/deploy_check.py): the token never a literal, probes
#     on every serving container and on endpoints skillshift really serves, the
#     coordinator's --data-dir on its claimed volume, the drain inside the grace period,
#     pinned images, the compose file; then a self-test that breaks the manifests in
#     memory and expects each break to be reported.
# Whether each flag of a command line exists is checked against the built binary by
# `cargo test -p skillshift --test deploy_manifests`, which also runs this script.
#
# The Python venv is cached in target/deploy-venv. Exit status: 0 valid, 1 invalid,
# 3 PyPI could not be reached to make the venv, so nothing was validated.
#   scripts/check-deploy.sh            validate
#   scripts/check-deploy.sh --argv     print the command lines (for the test), nothing else
set -euo pipefail
cd "$(dirname "$0")/.."

KV_VERSION=1.34.1
K8S_VERSIONS=${K8S_VERSIONS:-"1.34.0 1.30.0"}
VENV=target/deploy-venv

venv() {
    if [ -x "$VENV/bin/kubernetes-validate" ] \
        && [ "$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("kubernetes-validate"))' 2>/dev/null)" = "$KV_VERSION" ]; then
        return 0
    fi
    echo "check-deploy: creating $VENV with kubernetes-validate $KV_VERSION" >&2
    rm -rf "$VENV"
    mkdir -p target
    if ! python3 -m venv "$VENV" >&2; then
        rm -rf "$VENV"
        echo "check-deploy: python3 -m venv $VENV failed (is Python's venv module installed?)" >&2
        exit 1
    fi
    if ! "$VENV/bin/pip" install --quiet --disable-pip-version-check "kubernetes-validate==$KV_VERSION" >&2; then
        # Unreachable index (exit 3, "skipped") or a real failure (exit 1)? Ask the index, through
        # pip and so through the same configuration.
        if "$VENV/bin/pip" index versions --disable-pip-version-check kubernetes-validate >/dev/null 2>&1; then
            rm -rf "$VENV"
            echo "check-deploy: PyPI answers, but kubernetes-validate $KV_VERSION did not install (above)" >&2
            exit 1
        fi
        rm -rf "$VENV"
        echo "check-deploy: PyPI cannot be reached: kubernetes-validate $KV_VERSION not installed; nothing validated" >&2
        exit 3
    fi
}

venv
PY="$VENV/bin/python"

if [ "${1:-}" = "--argv" ]; then
    exec "$PY" scripts/deploy_check.py argv .
fi

manifests=()
for f in deploy/k8s/*.yaml deploy/k8s/optional/*.yaml; do
    [ "$(basename "$f")" = kustomization.yaml ] || manifests+=("$f")
done

status=0
for v in $K8S_VERSIONS; do
    echo "== kubernetes-validate $KV_VERSION --strict, Kubernetes $v: ${#manifests[@]} files"
    # Warnings name documents without a bundled schema (the KEDA ScaledObject).
    if ! "$VENV/bin/kubernetes-validate" --strict --quiet -k "$v" "${manifests[@]}"; then
        status=1
    fi
done

# The validator must reject what it is meant to reject, or a pass means nothing.
bad=$(mktemp -d)
trap 'rm -rf "$bad"' EXIT
cat >"$bad/typo.yaml" <<'EOF'
apiVersion: apps/v1
kind: Deployment
metadata: {name: typo}
spec:
  selector: {matchLabels: {app: typo}}
  template:
    metadata: {labels: {app: typo}}
    spec:
      containers:
        - name: c
          image: busybox:1.36
          readinessProbes: {httpGet: {path: /, port: 80}}
EOF
if "$VENV/bin/kubernetes-validate" --strict --quiet -k 1.34.0 "$bad/typo.yaml" >/dev/null 2>&1; then
    echo "check-deploy: kubernetes-validate accepted a misspelt field; its verdicts cannot be trusted" >&2
    status=1
else
    echo "== kubernetes-validate rejects a misspelt field (readinessProbes): ok"
fi

if command -v kubectl >/dev/null 2>&1; then
    echo "== kubectl kustomize deploy/k8s, rendered output validated"
    if kubectl kustomize deploy/k8s >"$bad/rendered.yaml"; then
        for v in $K8S_VERSIONS; do
            "$VENV/bin/kubernetes-validate" --strict --quiet -k "$v" "$bad/rendered.yaml" || status=1
        done
        echo "   $(grep -c '^kind:' "$bad/rendered.yaml") objects rendered"
    else
        status=1
    fi
else
    echo "== kubectl not installed: the kustomization was not rendered (its resources are checked below)"
fi

echo "== project checks"
"$PY" scripts/deploy_check.py check . || status=1
"$PY" scripts/deploy_check.py selftest . || status=1

if [ "$status" -eq 0 ]; then
    echo "check-deploy: deploy/ is valid"
else
    echo "check-deploy: deploy/ has problems (above)" >&2
fi
exit "$status"
