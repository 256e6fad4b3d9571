#!/usr/bin/env bash
# `netrollout-lab scenario bad-config --prometheus`: the shipped monitoring against a real
# Prometheus scraping the real lab. While the scenario runs, through Prometheus's HTTP API:
# - the targets are the configurator (job="netrollout-configurator") and one agent per node
#   (job="netrollout-agent", instance=<node name>), all up;
# - NetrolloutRolloutFailed fires (ALERTS{alertstate="firing"}) once the bad revision fails;
# - every query of deploy/monitoring/dashboard.json returns at least one series at some point;
# - `promtool check metrics` accepts what the configurator and an agent serve at /metrics.
# The scenario itself must pass, and its teardown must end Prometheus.
# Then, on an `up --prometheus` lab (ready: Prometheus sees every node reachable), analysis gates
# (docs/operations.md, "Analysis gates"): a
# RolloutAnalysis over the agents' tenant-loss metrics that passes lets a revision complete
# (AnalysisPassed Events; each wave measured initialDelaySeconds after it finished), one that cannot pass fails it after its first wave
# (AnalysisFailed Event, the `kubectl netrollout status` line, nodes back on the known-good
# revision), and a success condition outside the grammar is refused by the API server.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --locked --bins -q
state="${TMPDIR:-/tmp}/netrollout-lab-prometheus"
lab=target/debug/netrollout-lab
# A failed check leaves no lab running behind it (the suites after this one, or the next run).
pid=
trap '[ -z "$pid" ] || kill -9 "$pid" 2>/dev/null; $lab --state-dir "$state" down >/dev/null 2>&1 || true' EXIT
$lab --state-dir "$state" down >/dev/null
mkdir -p "$state"
# The logs of an earlier run must not pass for this one's (the waits below read them).
rm -f "$state/scenario.log" "$state/up.log"

# The agents' /metrics are out of reach in VM mode: the pair is refused before anything starts.
if out=$($lab --state-dir "$state" up --vm --prometheus 2>&1); then
  echo "FAIL: up --vm --prometheus started" >&2; exit 1
fi
echo "$out" | grep -q -- "--prometheus does not work with --vm" || { echo "FAIL: unclear message: $out" >&2; exit 1; }
echo "with --vm: $out"

log="$state/scenario.log"
$lab --state-dir "$state" scenario bad-config --prometheus >"$log" 2>&1 &
pid=$!

python3 - "$pid" "$log" deploy/monitoring/dashboard.json <<'PY'
import json, os, re, subprocess, sys, time, urllib.parse, urllib.request
pid, log, dashboard = int(sys.argv[1]), sys.argv[2], sys.argv[3]

def alive():
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False

def get(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.read().decode()

url = None
for _ in range(120):
    m = re.search(r"^prometheus: (http://\S+)", open(log).read(), re.M)
    if m:
        url = m.group(1)
        break
    if not alive():
        break
    time.sleep(1)
if not url:
    sys.exit("FAIL: the lab printed no Prometheus URL:\n" + open(log).read())
print(f"prometheus at {url}")

def query(expr):
    body = json.loads(get(f"{url}/api/v1/query?" + urllib.parse.urlencode({"query": expr})))
    if body["status"] != "success":
        sys.exit(f"FAIL: query {expr!r}: {body}")
    return body["data"]["result"]

exprs = [(p["title"], t["expr"]) for p in json.load(open(dashboard))["panels"] for t in p.get("targets", [])]
seen = set()
fired = None
targets_ok = metrics_ok = False
while alive():
    try:
        if not (targets_ok and metrics_ok):
            active = json.loads(get(f"{url}/api/v1/targets"))["data"]["activeTargets"]
            jobs = {}
            for t in active:
                jobs.setdefault(t["labels"]["job"], []).append(t)
            agents = jobs.get("netrollout-agent", [])
            conf = jobs.get("netrollout-configurator", [])
            up = [t for t in agents + conf if t["health"] == "up"]
            if agents and conf and len(up) == len(agents) + len(conf):
                instances = sorted(t["labels"]["instance"] for t in agents)
                if not all(re.fullmatch(r"lab-node-\d+", i) for i in instances):
                    sys.exit(f"FAIL: agent targets' instance labels are not node names: {instances}")
                print(f"targets up: configurator {[t['scrapeUrl'] for t in conf]}, agents {instances}")
                targets_ok = True
                for what, t in (("configurator", conf[0]), ("agent " + agents[0]["labels"]["instance"], agents[0])):
                    text = get(t["scrapeUrl"])
                    r = subprocess.run(["promtool", "check", "metrics"], input=text, text=True, capture_output=True)
                    if r.returncode != 0 or r.stdout.strip() or r.stderr.strip():
                        sys.exit(f"FAIL: promtool check metrics on the {what}'s /metrics:\n{r.stdout}{r.stderr}")
                    print(f"promtool check metrics: the {what}'s /metrics ({len(text.splitlines())} lines) is clean")
                metrics_ok = True
        if fired is None and query('ALERTS{alertname="NetrolloutRolloutFailed",alertstate="firing"}'):
            fired = time.strftime("%H:%M:%S")
            print(f"{fired}: NetrolloutRolloutFailed is firing")
        for i, (title, e) in enumerate(exprs):
            if i not in seen and query(e):
                seen.add(i)
                print(f"dashboard query has series: {title}: {e}")
    except OSError:
        # Prometheus is gone: the scenario tore the lab down.
        break
    time.sleep(1)

fail = []
if not targets_ok:
    fail.append("the configurator's and agents' targets were never all up")
if not metrics_ok:
    fail.append("promtool check metrics never ran on the lab's /metrics")
if fired is None:
    fail.append("NetrolloutRolloutFailed never fired during the bad-config run")
for i, (title, e) in enumerate(exprs):
    if i not in seen:
        fail.append(f"dashboard panel {title!r}: {e} returned no series during the run")
if fail:
    print(open(log).read())
    sys.exit("\n".join("FAIL: " + f for f in fail))
print(f"prometheus: the alert fired; all {len(exprs)} dashboard queries returned series")
PY

status=0
wait "$pid" || status=$?
pid=
cat "$log"
[ "$status" -eq 0 ] || { echo "FAIL: the bad-config scenario failed (exit $status)" >&2; exit 1; }
grep -q "^prometheus: http://" "$log"
if pgrep -af -- "prometheus --config.file=$state" ; then
  echo "FAIL: Prometheus outlived the lab's teardown" >&2; exit 1
fi

# A crashed lab (SIGKILL: no teardown of its own): `down` ends its Prometheus too.
$lab --state-dir "$state" up --nodes 2 --update-limit 1 --prometheus >"$state/up.log" 2>&1 &
pid=$!
for _ in $(seq 1 60); do
  grep -q "^prometheus: http://" "$state/up.log" && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 1
done
grep -q "^prometheus: http://" "$state/up.log" || { cat "$state/up.log"; echo "FAIL: up --prometheus printed no URL" >&2; exit 1; }
pgrep -f -- "prometheus --config.file=$state" >/dev/null || { echo "FAIL: no Prometheus running under up" >&2; exit 1; }

up_start=$(date +%s)
# Analysis gates on the same lab (its configurator has --prometheus-url): a check over the
# agents' tenant-loss metrics that passes lets a new revision complete wave by wave; one that
# cannot pass fails the revision after its first wave, which returns to the known-good one.
for _ in $(seq 1 90); do
  grep -q "^rollout succeeded" "$state/up.log" && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 1
done
grep -q "^rollout succeeded" "$state/up.log" || { cat "$state/up.log"; echo "FAIL: the lab's first rollout did not succeed" >&2; exit 1; }
grep -q "^rollout succeeded; tenant traffic flows" "$state/up.log" || { cat "$state/up.log"; echo "FAIL: the lab said it is ready with tenant traffic not flowing" >&2; exit 1; }
analysis_start=$(date +%s)
echo "analysis gates: the lab's first rollout took $((analysis_start - up_start))s after the Prometheus URL"
python3 - "$state/up.log" <<'PY'
import datetime, json, os, re, subprocess, sys, time, urllib.parse, urllib.request
env = dict(os.environ)
m = re.search(r"export KUBECONFIG=(\S+) PATH=(\S+):\$PATH", open(sys.argv[1]).read())
env["KUBECONFIG"], env["PATH"] = m.group(1), m.group(2) + ":" + env["PATH"]

log = open(sys.argv[1]).read()
prometheus = re.search(r"^prometheus: (http://\S+)", log, re.M).group(1)

def kubectl(*args, stdin=None):
    r = subprocess.run(["kubectl", *args], input=stdin, text=True, capture_output=True, env=env)
    if r.returncode != 0:
        sys.exit(f"FAIL: kubectl {' '.join(args)}: {r.stderr}")
    return r.stdout

def newest():
    items = json.loads(kubectl("get", "ncr", "-o", "json"))["items"]
    return max(items, key=lambda r: r["spec"]["sequence"])

LOSS = "sum((1 - netrollout_agent_tenant_reachable) and on (instance) (netrollout_agent_health_rounds_total > 0))"

def analysis(condition, delay=0):
    kubectl("apply", "-f", "-", stdin=json.dumps({
        "apiVersion": "netrollout.io/v1alpha1", "kind": "RolloutAnalysis",
        "metadata": {"name": "tenants"},
        "spec": {"checks": [{"name": "tenant-loss", "query": LOSS, "successCondition": condition,
                             "intervalSeconds": 1, "inconclusiveLimit": 5,
                             "initialDelaySeconds": delay}]}}))

def when(t):
    return datetime.datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp()

def roll_out(mtu, want):
    before = newest()["metadata"]["name"]
    kubectl("patch", "layer2", "vlan502", "--type", "merge", "-p", json.dumps({"spec": {"mtu": mtu}}))
    for _ in range(120):
        r = newest()
        if r["metadata"]["name"] != before and r.get("status", {}).get("phase") in ("Succeeded", "Failed"):
            break
        time.sleep(0.5)
    name, status = r["metadata"]["name"], r.get("status", {})
    if status.get("phase") != want:
        sys.exit(f"FAIL: revision {name} is {status.get('phase')}, not {want}: {json.dumps(status)}")
    gated = [a["name"] for a in r["spec"].get("analysis", [])]
    if gated != ["tenants"]:
        sys.exit(f"FAIL: revision {name} did not copy the RolloutAnalysis: {gated}")
    return name, status

bad = subprocess.run(["kubectl", "apply", "-f", "-"], text=True, capture_output=True, env=env, input=json.dumps({
    "apiVersion": "netrollout.io/v1alpha1", "kind": "RolloutAnalysis", "metadata": {"name": "typo"},
    "spec": {"checks": [{"name": "x", "query": "up", "successCondition": "result = 0"}]}}))
if bad.returncode == 0 or "successCondition" not in bad.stderr:
    sys.exit(f"FAIL: a success condition outside the grammar was not refused naming the field: {bad.stderr}")
print("refused:", bad.stderr.strip())

# The gate that must pass starts from a healthy fleet as Prometheus sees it: every node's agent
# scraped with health rounds run, none unreachable (the lab said so; the scrape may lag a second).
nodes = len(json.loads(kubectl("get", "nnc", "-o", "json"))["items"])
def prom(expr):
    q = urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(f"{prometheus}/api/v1/query?{q}", timeout=5) as r:
        return [float(x["value"][1]) for x in json.loads(r.read())["data"]["result"]]
for _ in range(60):
    healthy = prom(LOSS) == [0.0] and prom("count(netrollout_agent_health_rounds_total > 0)") == [float(nodes)]
    if healthy:
        break
    time.sleep(0.5)
else:
    sys.exit(f"FAIL: Prometheus does not see all {nodes} nodes reachable 30 s after the lab said so: "
             f"{LOSS} = {prom(LOSS)}")
print(f"prometheus: all {nodes} nodes reachable ({LOSS} = 0)")

DELAY = 3
analysis("result == 0", DELAY)
name, status = roll_out(1400, "Succeeded")
a = status.get("analysis", {})
nodes = status["total"]
if a.get("phase") != "Passed" or a.get("nodes") != nodes or a["checks"][0]["value"] != "0":
    sys.exit(f"FAIL: {name} succeeded without its analysis passing with all {nodes} nodes: {a}")
print(f"{name} Succeeded; analysis: {a['message']}")
# The last wave was measured initialDelaySeconds after its last node finished, not at once
# (both times are written to the second: a second of slack).
finished = max(when(n["status"]["finishedAt"]) for n in json.loads(kubectl("get", "nnc", "-o", "json"))["items"])
waited = when(a["time"]) - finished
if waited < DELAY - 1:
    sys.exit(f"FAIL: {name}'s last wave was measured {waited:.1f}s after its last node finished, "
             f"before initialDelaySeconds={DELAY}")
print(f"{name}: the last wave was measured {waited:.0f}s after its last node finished (initialDelaySeconds {DELAY})")
def events(name):
    items = json.loads(kubectl("get", "events.v1.events.k8s.io", "-n", "default", "-o", "json"))["items"]
    return [e for e in items if (e.get("regarding") or {}).get("name") == name]

passed = [e for e in events(name) if e["reason"] == "AnalysisPassed"]
if not passed:
    sys.exit(f"FAIL: no AnalysisPassed Event on {name}: {[e['reason'] for e in events(name)]}")
good = name

analysis("result > 1000")
name, status = roll_out(1450, "Failed")
a = status.get("analysis", {})
if a.get("phase") != "Failed" or "tenants/tenant-loss" not in a.get("message", ""):
    sys.exit(f"FAIL: {name} failed, but not by its analysis: {json.dumps(status)}")
if a.get("nodes") != 1 or not status.get("message", "").startswith(f"analysis of revision {name} failed"):
    sys.exit(f"FAIL: {name} was not halted after its first wave by the analysis: {json.dumps(status)}")
failed = [e for e in events(name) if e["reason"] == "AnalysisFailed" and e["type"] == "Warning"]
if not failed:
    sys.exit(f"FAIL: no AnalysisFailed Warning Event on {name}: {[e['reason'] for e in events(name)]}")
print(f"{name} Failed; Event AnalysisFailed: {failed[0].get('note')}")
for _ in range(60):
    specs = {n["metadata"]["name"]: n["spec"]["revision"] for n in json.loads(kubectl("get", "nnc", "-o", "json"))["items"]}
    if set(specs.values()) == {good}:
        break
    time.sleep(0.5)
else:
    sys.exit(f"FAIL: the nodes did not return to known-good revision {good}: {specs}")
# Exit 3: the newest revision failed (docs/kubectl-netrollout.md).
st = subprocess.run(["kubectl", "netrollout", "status"], text=True, capture_output=True, env=env)
if st.returncode != 3:
    sys.exit(f"FAIL: kubectl netrollout status exited {st.returncode}, not 3 (failed): {st.stderr}")
out = st.stdout
line = [l for l in out.splitlines() if l.strip().startswith(f"analysis of {name}: Failed")]
if not line:
    sys.exit(f"FAIL: kubectl netrollout status has no analysis line for {name}:\n{out}")
print("status:", line[0].strip())
kubectl("delete", "rolloutanalysis", "tenants")
PY
echo "analysis gates: passed in $(( $(date +%s) - analysis_start ))s"
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
pid=
$lab --state-dir "$state" down
sleep 0.5
if pgrep -af -- "prometheus --config.file=$state"; then
  echo "FAIL: Prometheus outlived netrollout-lab down after a crash" >&2; exit 1
fi
echo "after SIGKILL and down: no Prometheus left"
echo "lab prometheus: PASSED"
