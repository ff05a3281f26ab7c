#!/usr/bin/env bash
# Validate deploy/k8s/*.yaml against the Kubernetes API schemas, strictly (an unknown field
# is an error), with PyPI's kubernetes-validate (it ships the schemas of each release),
# installed into .tools/. First it checks that the validator refuses a broken Deployment,
# so a validator that passes everything fails this script.
#
#   scripts/k8s-validate.sh [KUBERNETES_VERSION ...]   (default: 1.30.0 1.37.0)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
pin="kubernetes-validate==1.37.0"
tools=$root/.tools/kubernetes-validate
if [ ! -f "$tools/.installed-$pin" ]; then
  rm -rf "$tools"
  python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --target "$tools" "$pin" >&2
  touch "$tools/.installed-$pin"
fi
validate() { PYTHONPATH=$tools python3 -m kubernetes_validate --strict "$@"; }
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(1.30.0 1.37.0)

broken=$(mktemp --suffix=.yaml)
trap 'rm -f "$broken"' EXIT
cat >"$broken" <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata: {name: broken}
spec:
  replicas: two
  selector: {matchLabels: {app: broken}}
  template:
    metadata: {labels: {app: broken}}
    spec: {containers: [{name: app, image: botcraft, imagePullPolicyy: Never}]}
YAML
if validate --quiet "$broken" >/dev/null 2>&1; then
  echo "k8s-validate: the validator accepted a broken Deployment; it checks nothing" >&2
  exit 1
fi
for version in "${versions[@]}"; do
  validate -k "$version" deploy/k8s/*.yaml
done
