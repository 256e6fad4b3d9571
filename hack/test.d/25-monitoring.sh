#!/usr/bin/env bash
# The monitoring shipped in deploy/monitoring/, checked with Prometheus's own tools:
# - promtool check rules: the plain rules file parses, every expression is valid PromQL;
# - promtool test rules: rules-test.yaml's unit tests pass, and every alert has a case where it
#   fires and one where it must stay silent;
# - the PrometheusRule carries exactly the groups of rules.yaml;
# - every query of the Grafana dashboard is valid PromQL (checked as recording rules) and
#   reads only netrollout's metrics, its recording rules or `up`.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=deploy/monitoring
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

promtool check rules "$dir/rules.yaml"
(cd "$dir" && promtool test rules rules-test.yaml)

python3 - "$dir" "$work" <<'PY'
import json, re, sys, yaml
d, work = sys.argv[1], sys.argv[2]
rules = yaml.safe_load(open(f"{d}/rules.yaml"))
tests = yaml.safe_load(open(f"{d}/rules-test.yaml"))
cr = yaml.safe_load(open(f"{d}/prometheusrule.yaml"))
fail = []

if cr.get("kind") != "PrometheusRule" or cr.get("spec") != rules:
    fail.append("prometheusrule.yaml: spec.groups differ from rules.yaml; copy rules.yaml's groups into it")

alerts = [r["alert"] for g in rules["groups"] for r in g["rules"] if "alert" in r]
records = [r["record"] for g in rules["groups"] for r in g["rules"] if "record" in r]
fires, silent = set(), set()
for t in tests["tests"]:
    for a in t.get("alert_rule_test", []):
        (fires if a.get("exp_alerts") else silent).add(a["alertname"])
for a in alerts:
    if a not in fires:
        fail.append(f"rules-test.yaml: no case where {a} fires")
    if a not in silent:
        fail.append(f"rules-test.yaml: no case where {a} must stay silent")

dash = json.load(open(f"{d}/dashboard.json"))
exprs = [(p["title"], t["expr"]) for p in dash["panels"] for t in p.get("targets", [])]
if not exprs:
    fail.append("dashboard.json: no queries")
known = set(records) | {"up"}
keywords = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool", "offset"}
for title, e in exprs:
    bare = re.sub(r'\{[^}]*\}|\[[^\]]*\]|"[^"]*"', " ", e)
    bare = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", bare)
    for name in re.findall(r"(?<![\w:.])([a-zA-Z_:][\w:]*)(?![\w:])(?!\s*\()", bare):
        if name in keywords:
            continue
        if not (name.startswith("netrollout_") or name in known):
            fail.append(f"dashboard.json: panel {title!r} reads {name}, not a netrollout metric or recording rule")
with open(f"{work}/dashboard-rules.yaml", "w") as f:
    yaml.safe_dump({"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:query{i}", "expr": e} for i, (_, e) in enumerate(exprs)]}]}, f)
if fail:
    print("\n".join("FAIL: " + x for x in fail), file=sys.stderr)
    sys.exit(1)
print(f"monitoring: {len(alerts)} alerts, each firing and silent in a test; {len(records)} recording rules; "
      f"PrometheusRule equal to rules.yaml; {len(exprs)} dashboard queries")
PY
promtool check rules "$work/dashboard-rules.yaml" >/dev/null
echo "monitoring: ok"
