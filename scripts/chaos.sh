#!/usr/bin/env bash
# The chaos suite (docs/reliability.md): a simulated sweep under worker kill -9s,
# coordinator kill -9s, a network partition, a hung Chromium and a full disk on the
# coordinator, then the checks: 0 records lost, 0 duplicated, every unit with an
# outcome, the partitioned worker's late records kept under their own attempts.
#
#   scripts/chaos.sh            full scale: 2 reps of the full grid (4,260 units), 5 worker
#                               kill -9s, 2 coordinator kill -9s, a partition, a SIGSTOP'd
#                               Chromium under a real worker, a full disk
#   scripts/chaos.sh --quick    the CI size: 60 units, 1 worker kill -9, 1 coordinator
#                               kill -9, a partition, a full disk; no Chromium
#
# Options: --skip-disk (no full-disk fault), --bin PATH (default target/debug/skillshift), --out DIR (kept; default a temp dir).
# The partition needs root and `ip netns`, the full disk root and tmpfs; without them those
# faults are skipped and the summary says so. Prints a summary and writes OUT/chaos.json.
set -euo pipefail

QUICK=0
SKIP_DISK=0
BIN=target/debug/skillshift
OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1 ;;
    --skip-disk) SKIP_DISK=1 ;;
    --bin) BIN="$2"; shift ;;
    --out) OUT="$2"; shift ;;
    *) echo "chaos.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
BIN=$(realpath "$BIN")
[ -x "$BIN" ] || { echo "chaos.sh: no skillshift binary at $BIN (cargo build first)" >&2; exit 2; }
if [ -z "$OUT" ]; then OUT=$(mktemp -d /tmp/skillshift-chaos.XXXXXX); fi
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
TOKEN="chaos-$$"
TTL_MS=2000
TAG=$(( $$ % 100000 ))
NS="sc${TAG}p"
VETH_HOST="sc${TAG}h"
VETH_NS="sc${TAG}n"
STORE_MNT="$OUT/store-mount"
PIDS=()
SKIPPED=()
T0=$(date +%s.%N)

log() { printf '[chaos %6.1fs] %s\n' "$(awk -v a="$(date +%s.%N)" -v b="$T0" 'BEGIN{print a-b}')" "$*" >&2; }

cleanup() {
  set +e
  for p in "${PIDS[@]:-}"; do
    [ -n "$p" ] || continue
    kill -CONT "$p" 2>/dev/null
    # A worker's chromedriver leads a process group of its own that holds the worker's Chromiums;
    # kill -9 of the worker would leave them running.
    for d in $(pgrep -P "$p" chromedriver 2>/dev/null); do kill -9 -- "-$d" 2>/dev/null; done
    kill -9 "$p" 2>/dev/null || true
  done
  [ -n "${CHROME_STOPPED:-}" ] && kill -CONT $CHROME_STOPPED 2>/dev/null || true
  ip netns del "$NS" 2>/dev/null || true
  if mountpoint -q "$STORE_MNT" 2>/dev/null; then umount -l "$STORE_MNT" || true; fi
}
trap cleanup EXIT

IS_ROOT=0; [ "$(id -u)" = 0 ] && IS_ROOT=1
CAN_NETNS=0
if [ $IS_ROOT = 1 ] && ip netns add "$NS" 2>/dev/null; then CAN_NETNS=1; fi
CAN_DISK=0
mkdir -p "$STORE_MNT"
if [ $SKIP_DISK = 0 ] && [ $IS_ROOT = 1 ] && mount -t tmpfs -o size=48m tmpfs "$STORE_MNT" 2>/dev/null; then CAN_DISK=1; fi
[ $SKIP_DISK = 1 ] && SKIPPED+=("full disk: --skip-disk")
[ $CAN_NETNS = 1 ] || SKIPPED+=("partition: needs root and ip netns")
[ $CAN_DISK = 1 ] || [ $SKIP_DISK = 1 ] || SKIPPED+=("full disk: needs root and tmpfs")

if [ $QUICK = 1 ]; then
  SIM_MS=1500; WORKERS=3; SLOTS=3; WORKER_KILLS=1; COORD_KILLS=1
  echo '{"sites": {"gitlab": {"families": [0, 1, 2, 3, 4]}}}' > "$OUT/families.json"
  SWEEP_ARGS=(--sites gitlab --families "$OUT/families.json" --count 2)
else
  SIM_MS=300; WORKERS=8; SLOTS=4; WORKER_KILLS=5; COORD_KILLS=2
  SWEEP_ARGS=(--count 2)
fi
CHROME=0
if [ $QUICK = 0 ] && command -v chromium >/dev/null && command -v chromedriver >/dev/null; then CHROME=1; fi
[ $QUICK = 1 ] && SKIPPED+=("hung Chromium: full mode only")
[ $QUICK = 0 ] && [ $CHROME = 0 ] && SKIPPED+=("hung Chromium: chromium or chromedriver missing")

DATA_DIR="$OUT/coordinator"; [ $CAN_DISK = 1 ] && DATA_DIR="$STORE_MNT/coordinator"
COORD_STARTS=0
PORT=""
start_coordinator() {
  COORD_STARTS=$((COORD_STARTS + 1))
  local listen="0.0.0.0:${PORT:-0}"
  "$BIN" coordinator --listen "$listen" --data-dir "$DATA_DIR" --token "$TOKEN" --lease-ttl-ms $TTL_MS \
    > "$OUT/coordinator-$COORD_STARTS.out" 2> "$OUT/coordinator-$COORD_STARTS.log" &
  COORD=$!
  PIDS+=("$COORD")
  for _ in $(seq 100); do
    grep -q "listening on" "$OUT/coordinator-$COORD_STARTS.out" 2>/dev/null && break
    kill -0 "$COORD" 2>/dev/null || { echo "chaos.sh: the coordinator did not start" >&2; cat "$OUT/coordinator-$COORD_STARTS.log" >&2; exit 1; }
    sleep 0.1
  done
  PORT=$(sed -n 's/.*listening on [^ ]*:\([0-9]*\).*/\1/p' "$OUT/coordinator-$COORD_STARTS.out" | head -1)
}

declare -A WPID
start_worker() { # name [extra args...]
  local name=$1; shift
  "$BIN" worker --coordinator "http://127.0.0.1:$PORT" --token "$TOKEN" --name "$name" \
    --outbox "$OUT/outbox-$name" "$@" 2>> "$OUT/$name.log" &
  WPID[$name]=$!
  PIDS+=("$!")
}

sweep() { SKILLSHIFT_COORDINATOR="http://127.0.0.1:$PORT" SKILLSHIFT_TOKEN="$TOKEN" "$BIN" sweep "$@"; }
field() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
status() { sweep status "$ID" --json 2>/dev/null || echo '{}'; }
done_units() { status | field 'd.get("units",{}).get("done",0) + d.get("units",{}).get("invalid",0)' 2>/dev/null || echo 0; }
wait_done_at_least() { # n
  while [ "$(done_units)" -lt "$1" ]; do sleep 0.3; done
}

start_coordinator
log "coordinator on port $PORT, store in $DATA_DIR"
for i in $(seq $WORKERS); do start_worker "sim-$i" --simulate $SIM_MS --slots $SLOTS; done

if [ $CAN_NETNS = 1 ]; then
  ip link add "$VETH_HOST" type veth peer name "$VETH_NS" netns "$NS"
  ip addr add 10.78.0.1/24 dev "$VETH_HOST"; ip link set "$VETH_HOST" up
  ip -n "$NS" addr add 10.78.0.2/24 dev "$VETH_NS"; ip -n "$NS" link set "$VETH_NS" up; ip -n "$NS" link set lo up
  ip netns exec "$NS" "$BIN" worker --coordinator "http://10.78.0.1:$PORT" --token "$TOKEN" --name partitioned \
    --outbox "$OUT/outbox-partitioned" --simulate $SIM_MS --slots $SLOTS 2>> "$OUT/partitioned.log" &
  PART=$!; PIDS+=("$PART")
fi
if [ $CHROME = 1 ]; then
  start_worker chromium --embedded-sites --slots 1
fi

ID=$(sweep start --simulated "${SWEEP_ARGS[@]}" --skills none --task-timeout 60 --max-retries 5 --seed 11)
TOTAL=$(status | field 'd["units"]["total"]')
log "sweep $ID: $TOTAL units"
T_SWEEP=$(date +%s.%N)

# The faults, spread over the sweep by its progress.
STEP=$(( TOTAL / (WORKER_KILLS + COORD_KILLS + 4) ))
AT=$STEP
for k in $(seq $WORKER_KILLS); do
  wait_done_at_least $AT; AT=$((AT + STEP))
  victim="sim-$(( (k - 1) % WORKERS + 1 ))"
  kill -9 "${WPID[$victim]}" 2>/dev/null || true
  log "kill -9 worker $victim at $(done_units)/$TOTAL; restarted on its outbox"
  start_worker "$victim" --simulate $SIM_MS --slots $SLOTS
  if [ $k = 1 ] && [ $CAN_NETNS = 1 ]; then
    ip link set "$VETH_HOST" down
    log "partition: the partitioned worker's link is down for $(( TTL_MS * 2 / 1000 + 1 )) s (TTL $((TTL_MS / 1000)) s)"
    ( sleep $(( TTL_MS * 2 / 1000 + 1 )); ip link set "$VETH_HOST" up; log "partition healed" ) &
  fi
  if [ $k = 2 ] && [ $CHROME = 1 ]; then
    # The worker starts each Chromium itself, in its chromedriver's process group.
    DRV=$(pgrep -P "${WPID[chromium]}" -f chromedriver | head -1)
    CHROME_STOPPED=$( [ -n "$DRV" ] && pgrep -P "${WPID[chromium]}" -g "$DRV" 2>/dev/null | grep -vx "$DRV" | tr '\n' ' ' || true)
    if [ -n "$CHROME_STOPPED" ]; then
      kill -STOP $CHROME_STOPPED; log "SIGSTOP Chromium ($CHROME_STOPPED) under the real worker"
    else
      SKIPPED+=("hung Chromium: no Chromium process found under the real worker")
    fi
  fi
done
COORD_KILLED=0
for k in $(seq $COORD_KILLS); do
  wait_done_at_least $AT; AT=$((AT + STEP))
  AT_KILL=$(done_units)
  kill -9 "$COORD"; wait "$COORD" 2>/dev/null || true
  COORD_KILLED=$((COORD_KILLED + 1))
  log "kill -9 coordinator at $AT_KILL/$TOTAL"
  start_coordinator
  log "coordinator restarted"
done
DISK_EXIT=""
if [ $CAN_DISK = 1 ]; then
  wait_done_at_least $AT
  dd if=/dev/zero of="$STORE_MNT/filler" bs=1M 2>/dev/null || true
  log "disk full at $(done_units)/$TOTAL"
  # Small writes may still fit in space the store holds (sled's current segment), so a large sweep is
  # submitted too: its units need space the store cannot get. The coordinator must exit 2 with one line
  # (the store's error, or its commit deadline if the disk blocks instead of failing), never acknowledge
  # the sweep half-written, and resume after a restart with space.
  EXTRA=$(sweep start --simulated --count 20 --skills none --seed 12 2>/dev/null || true)
  [ -n "$EXTRA" ] && log "a sweep of 42,600 units was acknowledged on the full disk: $EXTRA"
  for _ in $(seq 600); do
    kill -0 "$COORD" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$COORD" 2>/dev/null; then
    DISK_EXIT="hung"; DISK_LINE="did not exit within 60 s on the full disk"
    kill -9 "$COORD"; wait "$COORD" 2>/dev/null || true
  else
    set +e; wait "$COORD"; DISK_EXIT=$?; set -e
    DISK_LINE=$(tail -1 "$OUT/coordinator-$COORD_STARTS.log" | sed 's/\x1b\[[0-9;]*m//g')
  fi
  log "coordinator on the full disk: $DISK_EXIT: $DISK_LINE"
  rm -f "$STORE_MNT/filler"
  start_coordinator; log "coordinator restarted with space again"
  # The large sweep is whole or absent: never a sweep with part of its units.
  if [ -n "$EXTRA" ]; then
    EXTRA_UNITS=$(sweep status "$EXTRA" --json 2>/dev/null | field 'd["units"]["total"]' 2>/dev/null || echo absent)
    sweep cancel "$EXTRA" >/dev/null 2>&1 || true
    if [ "$EXTRA_UNITS" != 42600 ] && [ "$EXTRA_UNITS" != absent ]; then
      DISK_EXIT="partial"; DISK_LINE="the sweep acknowledged on the full disk came back with $EXTRA_UNITS of 42600 units"
    fi
  else
    EXTRA_LISTED=$(sweep list 2>/dev/null | grep -c "/42600" || true)
    if [ "$EXTRA_LISTED" != 0 ]; then
      DISK_EXIT="partial"; DISK_LINE="a refused sweep is in the store after the restart"
    fi
  fi
fi
[ -n "${CHROME_STOPPED:-}" ] && { kill -CONT $CHROME_STOPPED 2>/dev/null || true; log "Chromium continued"; }

while [ "$(status | field 'd.get("state","")')" != done ]; do sleep 0.5; done
T_DONE=$(date +%s.%N)
log "sweep done"
# Late records (the partitioned worker's) may still be on their way; give them a few seconds.
sleep 3
sweep export "$ID" --out "$OUT/per_task.jsonl" >/dev/null
STATUS=$(status)

python3 - "$OUT" "$STATUS" "$TOTAL" "$T_SWEEP" "$T_DONE" "$COORD_KILLED" "$WORKER_KILLS" "$CAN_NETNS" \
  "${DISK_EXIT:-skipped}" "${DISK_LINE:-}" "${CHROME_STOPPED:-}" "$QUICK" "$(printf '%s;' "${SKIPPED[@]:-}")" <<'EOF'
import collections, json, sys
out, status, total, t_sweep, t_done, coord_kills, worker_kills, netns, disk_exit, disk_line, chrome, quick, skipped = sys.argv[1:]
status = json.loads(status)
records = [json.loads(l) for l in open(f"{out}/per_task.jsonl")]
key = lambda r: (r.get("treatment"), r["uid"], r["condition"], r.get("rep", 0), r.get("attempt", 0))
keys = collections.Counter(key(r) for r in records)
duplicates = sum(n - 1 for n in keys.values() if n > 1)
units = collections.defaultdict(list)
for r in records:
    units[key(r)[:4]].append(r)
gaps = [u for u, rs in units.items() if sorted(r.get("attempt", 0) for r in rs) != list(range(len(rs)))]
decided = sum(1 for rs in units.values() if any(r.get("outcome") != "error" for r in rs))
errors = collections.Counter(r.get("error") for r in records if r.get("outcome") == "error")
lost_left = sum(1 for r in records if r.get("error") == "worker_lost")
s = {
    "mode": "quick" if quick == "1" else "full",
    "units": int(total), "units_with_records": len(units), "records": len(records),
    "units_done": status["units"]["done"], "units_invalid": status["units"]["invalid"],
    "units_decided": decided, "duplicates": duplicates, "units_with_attempt_gaps": len(gaps),
    "errors_by_reason": dict(errors), "worker_lost_left": lost_left, "worker_kills": int(worker_kills), "coordinator_kills": int(coord_kills),
    "partition": netns == "1", "full_disk_exit": disk_exit, "full_disk_line": disk_line,
    "chromium_stopped": chrome.strip() or None, "sweep_seconds": round(float(t_done) - float(t_sweep), 1),
    "skipped": [x for x in skipped.split(";") if x],
}
json.dump(s, open(f"{out}/chaos.json", "w"), indent=2)
print(json.dumps(s, indent=2))
ok = (duplicates == 0 and not gaps and len(units) == int(total)
      and status["units"]["done"] + status["units"]["invalid"] == int(total)
      and (disk_exit in ("skipped", "2")))
if not ok:
    print("chaos: FAILED", file=sys.stderr)
    sys.exit(1)
print("chaos: ok", file=sys.stderr)
EOF
