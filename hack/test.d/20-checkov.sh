#!/usr/bin/env bash
# The deploy bundle against the policy checker and the Kubernetes schemas: checkov (every check of
# its kubernetes framework except the justified skips in hack/checkov.yaml) and
# kubernetes-validate (strict: no unknown fields) for Kubernetes 1.32. Both are installed from
# PyPI by hack/install-deps.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
bundle=deploy/netrollout.yaml
for tool in checkov kubernetes-validate; do
  command -v "$tool" >/dev/null || { echo "FAIL: $tool is missing; run hack/install-deps.sh" >&2; exit 1; }
done
checkov --config-file hack/checkov.yaml -f "$bundle"
kubernetes-validate --strict --quiet -k 1.32.0 "$bundle"
echo "20-checkov: $bundle passes checkov and kubernetes-validate"
