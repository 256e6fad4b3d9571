#!/usr/bin/env bash
# `netrollout-lab scenario bad-config --prometheus`: the shipped monitoring against a real
# Prometheus scraping the real lab. While the scenario runs, through Prometheus's HTTP API:
# - the targets are the configurator (job="netrollout-configurator") and one agent per node
#   (job="netrollout-agent", instance=<node name>), all up;
# - NetrolloutRolloutFailed fires (ALERTS{alertstate="firing"}) once the bad revision fails;
# - every query of deploy/monitoring/dashboard.json returns at least one series at some point;
# - `promtool check metrics` accepts what the configurator and an agent serve at /metrics.
# The scenario itself must pass, and its teardown must end Prometheus.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --locked --bins -q
state="${TMPDIR:-/tmp}/netrollout-lab-prometheus"
lab=target/debug/netrollout-lab
$lab --state-dir "$state" down >/dev/null
mkdir -p "$state"

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
cat "$log"
[ "$status" -eq 0 ] || { echo "FAIL: the bad-config scenario failed (exit $status)" >&2; exit 1; }
grep -q "^prometheus: http://" "$log"
if pgrep -af -- "prometheus --config.file=$state" ; then
  echo "FAIL: Prometheus outlived the lab's teardown" >&2; exit 1
fi

# A crashed lab (SIGKILL: no teardown of its own): `down` ends its Prometheus too.
$lab --state-dir "$state" up --nodes 2 --prometheus >"$state/up.log" 2>&1 &
pid=$!
for _ in $(seq 1 60); do
  grep -q "^prometheus: http://" "$state/up.log" && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 1
done
grep -q "^prometheus: http://" "$state/up.log" || { cat "$state/up.log"; echo "FAIL: up --prometheus printed no URL" >&2; exit 1; }
pgrep -f -- "prometheus --config.file=$state" >/dev/null || { echo "FAIL: no Prometheus running under up" >&2; exit 1; }
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
$lab --state-dir "$state" down
sleep 0.5
if pgrep -af -- "prometheus --config.file=$state"; then
  echo "FAIL: Prometheus outlived netrollout-lab down after a crash" >&2; exit 1
fi
echo "after SIGKILL and down: no Prometheus left"
echo "lab prometheus: PASSED"
