#!/usr/bin/env bash
# Soak benchmark (issue 7 item 6; a script, not a CI test): trains the main job (Fashion-MNIST, MLP)
# with 3 workers through the launcher, on the demo's default engine (auto: shm on one host with JDK
# >= 22, else Gloo), for a given time, samples every worker's (and the
# launcher's) resident memory and open file descriptors, and says whether they grew after warm-up.
#
#   scripts/soak.sh [--minutes 20] [--workers 3] [--interval 5] [--warmup-minutes W] [--model mlp|cnn]
#                   [--max-rss-growth 10] [--out DIR] [-- TRAINER OPTIONS...]
#
# Samples go to DIR/samples.csv (seconds,process,pid,rss_kb,fds,threads,heap_committed_kb,heap_used_kb;
# the Java heap columns from one `jstat -gc` per JVM, to tell heap sizing from native growth), the run's output to
# DIR/run.log, the verdict to DIR/verdict.txt and stdout. Verdict, per process: the median of the
# first window after warm-up against the median of the last window (each window a quarter of the
# time after warm-up, at least 3 samples). It fails (exit 1) when RSS grew by more than
# --max-rss-growth percent or the open descriptors grew at all; exit 3 when the training ended or
# a worker disappeared before the time was up; 2 for bad options. Warm-up defaults to a fifth of
# the run, at least 1 minute and at most 5. The run checkpoints every 200 steps (the two newest are
# kept), so checkpoint writing and the progress marker are part of what is soaked.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

minutes=20 workers=3 interval=5 warmup="" model=mlp max_rss_growth=10 out="" extra=()
usage() { sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
need_value() { [ "$#" -ge 2 ] && [ -n "$2" ] || { echo "soak: $1 needs a value" >&2; exit 2; }; }
while [ "$#" -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --minutes) need_value "$@"; minutes="$2"; shift 2 ;;
    --workers) need_value "$@"; workers="$2"; shift 2 ;;
    --interval) need_value "$@"; interval="$2"; shift 2 ;;
    --warmup-minutes) need_value "$@"; warmup="$2"; shift 2 ;;
    --model) need_value "$@"; model="$2"; shift 2 ;;
    --max-rss-growth) need_value "$@"; max_rss_growth="$2"; shift 2 ;;
    --out) need_value "$@"; out="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "soak: unknown option '$1' (trainer options go after --)" >&2; exit 2 ;;
  esac
done
number() { [[ "$2" =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "soak: $1 must be a number, got '$2'" >&2; exit 2; }; }
number --minutes "$minutes"; number --interval "$interval"; number --max-rss-growth "$max_rss_growth"
[[ "$workers" =~ ^[1-9][0-9]*$ ]] || { echo "soak: --workers must be a whole number >= 1, got '$workers'" >&2; exit 2; }
if [ -z "$warmup" ]; then
  warmup=$(python3 -c "print(min(5.0, max(1.0, $minutes / 5)))")
fi
number --warmup-minutes "$warmup"
python3 -c "import sys; sys.exit(0 if $warmup < $minutes else 1)" \
  || { echo "soak: --warmup-minutes ($warmup) must be less than --minutes ($minutes)" >&2; exit 2; }
out="${out:-$ROOT/out/soak-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
csv="$out/samples.csv" log="$out/run.log"
duration_s=$(python3 -c "print(int($minutes * 60))")

# The training: enough epochs to outlast the soak, stopped with SIGTERM when the time is up.
echo "soak: $workers workers, $model, $minutes min (warm-up $warmup min), a sample every $interval s; output in $out" >&2
"$ROOT/cohort" demo --workers "$workers" --model "$model" --epochs 100000 --json "$out/summary.json" \
  --lr-schedule constant --checkpoint-dir "$out/checkpoints" --checkpoint-every 200 \
  ${extra[@]+"${extra[@]}"} >"$log" 2>&1 &
demo=$!
launcher="" jstats=()

# No pipeline here may end before its input does (grep -q, head): under pipefail the writer's
# SIGPIPE would make it fail at random.
children() { ps -o pid= --ppid "$1" 2>/dev/null | tr -d ' ' || true; }
descendants() { local c; for c in $(children "$1"); do echo "$c"; descendants "$c"; done; }
is_java() { [ "$(basename "$(readlink "/proc/$1/exe" 2>/dev/null)")" = java ]; }
is_launcher() { is_java "$1" && grep -aq 'dev\.cohort\.launcher\.LauncherMain' "/proc/$1/cmdline" 2>/dev/null; }
rank_of() { local v; v=$(grep -az '^RANK=' "/proc/$1/environ" 2>/dev/null | tr -d '\0') || true; echo "${v#RANK=}"; }

# Stops the whole run: the launcher first (it stops its workers), then every other process under
# the demo script (a build, the script itself), SIGKILL to whatever is left after 20 s.
stop_run() {
  local procs p
  for p in ${jstats[@]+"${jstats[@]}"}; do kill "$p" 2>/dev/null || true; done
  procs="$(descendants "$demo") $demo"
  [ -n "$launcher" ] || for p in $procs; do is_launcher "$p" && launcher="$p"; done
  [ -z "$launcher" ] || kill -TERM "$launcher" 2>/dev/null || true
  for p in $procs; do kill -TERM "$p" 2>/dev/null || true; done
  for _ in $(seq 1 40); do
    alive=""
    for p in $procs; do kill -0 "$p" 2>/dev/null && alive="$alive $p"; done
    [ -n "$alive" ] || return 0
    sleep 0.5
  done
  echo "soak: still running after 20 s, killing:$alive" >&2
  for p in $alive; do kill -KILL "$p" 2>/dev/null || true; done
}
trap 'stop_run' EXIT
trap 'exit 130' INT TERM

# Wait for the launcher (the JVM running LauncherMain, under the demo script; not a Maven build's)
# and its workers (its java descendants with RANK set).
declare -A worker_pid=()
deadline=$((SECONDS + 600))   # a first build may take minutes
while :; do
  kill -0 "$demo" 2>/dev/null || { echo "soak: the run ended before it started; see $log" >&2; tail -n 20 "$log" >&2; exit 3; }
  if [ -z "$launcher" ]; then
    for c in $(descendants "$demo"); do is_launcher "$c" && launcher="$c"; done
  fi
  if [ -n "$launcher" ]; then
    worker_pid=()
    for p in $(descendants "$launcher"); do
      is_java "$p" || continue
      r=$(rank_of "$p"); [ -z "$r" ] || worker_pid[$r]="$p"
    done
    [ "${#worker_pid[@]}" -eq "$workers" ] && break
  fi
  [ "$SECONDS" -lt "$deadline" ] || { echo "soak: the workers did not start within 10 minutes; see $log" >&2; exit 3; }
  sleep 1
done
echo "soak: launcher pid $launcher; workers $(for r in $(printf '%s\n' "${!worker_pid[@]}" | sort -n); do printf 'rank %s pid %s; ' "$r" "${worker_pid[$r]}"; done)" >&2

# The Java heap of each JVM: one jstat each (the JDK's, next to the launcher's java), printing every
# interval; a sample reads its last line. Committed = S0C+S1C+EC+OC, used = S0U+S1U+EU+OU (KiB).
jstat="$(dirname "$(readlink "/proc/$launcher/exe")")/jstat"
watch_heap() {   # NAME PID
  [ -x "$jstat" ] || return 0
  "$jstat" -gc "$2" "$(python3 -c "print(int($interval * 1000))")ms" >"$out/jstat-$1.txt" 2>&1 &
  jstats+=($!)
}
heap_of() {   # NAME: "committed,used" from the last line of its jstat output, or ","
  [ -s "$out/jstat-$1.txt" ] || { echo ","; return; }
  awk 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next } $1 ~ /^[0-9.]+$/ { split($0, f) ; ok = 1 }
       END { if (!ok || !("OC" in h)) { print ","; exit }
             printf "%d,%d\n", f[h["S0C"]] + f[h["S1C"]] + f[h["EC"]] + f[h["OC"]], f[h["S0U"]] + f[h["S1U"]] + f[h["EU"]] + f[h["OU"]] }' \
      "$out/jstat-$1.txt"
}
for r in "${!worker_pid[@]}"; do watch_heap "rank$r" "${worker_pid[$r]}"; done
watch_heap launcher "$launcher"

sample() {   # NAME PID ELAPSED: one CSV line, or nothing when the process is gone
  local name="$1" pid="$2" t="$3" rss threads fds
  rss=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$pid/status" 2>/dev/null) || return 1
  threads=$(sed -n 's/^Threads:[[:space:]]*//p' "/proc/$pid/status" 2>/dev/null) || return 1
  fds=$(ls "/proc/$pid/fd" 2>/dev/null | wc -l) || return 1
  [ -n "$rss" ] || return 1
  echo "$t,$name,$pid,$rss,$fds,$threads,$(heap_of "$name")" >>"$csv"
}

echo "seconds,process,pid,rss_kb,fds,threads,heap_committed_kb,heap_used_kb" >"$csv"
start=$SECONDS
ended=""
while [ $((SECONDS - start)) -lt "$duration_s" ]; do
  t=$((SECONDS - start))
  for r in $(printf '%s\n' "${!worker_pid[@]}" | sort -n); do
    sample "rank$r" "${worker_pid[$r]}" "$t" || { ended="rank $r (pid ${worker_pid[$r]}) is gone after $t s"; break 2; }
  done
  sample launcher "$launcher" "$t" || { ended="the launcher is gone after $t s"; break; }
  sleep "$interval"
done
# Informational, after the windows: one full GC in each JVM, then RSS again. Native memory that
# JavaCPP frees only once the Java objects owning it are collected shows up as a drop here.
jcmd="$(dirname "$jstat")/jcmd"
if [ -z "$ended" ] && [ -x "$jcmd" ]; then
  echo "process,rss_kb_before_gc,rss_kb_after_gc" >"$out/after-gc.csv"
  declare -A before=()
  for r in "${!worker_pid[@]}"; do
    before[$r]=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/${worker_pid[$r]}/status" 2>/dev/null || true)
    "$jcmd" "${worker_pid[$r]}" GC.run >/dev/null 2>&1 || true
  done
  sleep 5
  for r in "${!worker_pid[@]}"; do
    echo "rank$r,${before[$r]},$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/${worker_pid[$r]}/status" 2>/dev/null || true)" \
      >>"$out/after-gc.csv"
  done
fi
stop_run
trap - EXIT
if [ -n "$ended" ]; then
  echo "soak: FAILED: $ended; the training ended early. Last lines of $log:" | tee "$out/verdict.txt" >&2
  grep -v WARNING "$log" | tail -n 20 >&2
  exit 3
fi

python3 - "$csv" "$warmup" "$max_rss_growth" "$out/verdict.txt" "$out/after-gc.csv" <<'PY'
import csv, os, statistics, sys
path, warmup_min, max_growth, verdict_path, gc_path = (sys.argv[1], float(sys.argv[2]), float(sys.argv[3]),
                                                      sys.argv[4], sys.argv[5])
rows = list(csv.DictReader(open(path)))
after_gc = {r["process"]: r for r in csv.DictReader(open(gc_path))} if os.path.exists(gc_path) else {}
warm = warmup_min * 60
num = lambda v: int(v) if v not in ("", None) else None
by = {}
for r in rows:
    by.setdefault(r["process"], []).append((int(r["seconds"]), int(r["rss_kb"]), int(r["fds"]), int(r["threads"]),
                                            num(r.get("heap_committed_kb"))))
med = lambda xs: statistics.median(xs) if xs else float("nan")
mb = lambda kb: kb / 1024
lines, failed, w = [], False, 0
lines.append(f"{'process':<9} {'samples':>7} {'RSS first MiB':>13} {'RSS last MiB':>12} {'growth':>7} {'RSS max MiB':>11} "
             f"{'heap first MiB':>14} {'heap last MiB':>13} {'fds':>7} {'threads':>7} {'after GC':>8}  verdict")
for name in sorted(by, key=lambda n: (n == "launcher", n)):
    s = [x for x in by[name] if x[0] >= warm]
    if len(s) < 6:
        lines.append(f"{name:<9} only {len(s)} samples after warm-up; run longer or sample more often")
        failed = True
        continue
    w = max(3, len(s) // 4)
    first, last = s[:w], s[-w:]
    rss0, rss1 = med([x[1] for x in first]), med([x[1] for x in last])
    fd0, fd1 = med([x[2] for x in first]), med([x[2] for x in last])
    th0, th1 = med([x[3] for x in first]), med([x[3] for x in last])
    hp0, hp1 = med([x[4] for x in first if x[4] is not None]), med([x[4] for x in last if x[4] is not None])
    growth = 100.0 * (rss1 - rss0) / rss0
    bad = []
    if growth > max_growth:
        bad.append(f"RSS +{growth:.1f}% > {max_growth:g}%")
    if fd1 > fd0:
        bad.append(f"fds {fd0:g} -> {fd1:g}")
    failed |= bool(bad)
    gc = after_gc.get(name, {}).get("rss_kb_after_gc")
    gc_growth = 100.0 * (int(gc) - rss0) / rss0 if gc else None
    if growth > max_growth and gc_growth is not None and gc_growth <= max_growth:
        bad[0] += f" (but {gc_growth:+.1f}% after a full GC: memory awaiting collection rather than retained)"
    lines.append(f"{name:<9} {len(s):>7} {mb(rss0):>13.1f} {mb(rss1):>12.1f} {growth:>+6.1f}% "
                 f"{mb(max(x[1] for x in s)):>11.1f} {mb(hp0):>14.1f} {mb(hp1):>13.1f} {f'{fd0:g}->{fd1:g}':>7} "
                 f"{f'{th0:g}->{th1:g}':>7} {'' if gc_growth is None else f'{gc_growth:+.1f}%':>8}  " + ("FAIL: " + ", ".join(bad) if bad else "ok"))
span = max(int(r["seconds"]) for r in rows)
lines.append(f"windows: medians of the first and last {w} samples after {warmup_min:g} min of warm-up, of {span} s "
             "sampled; heap = Java heap committed (jstat), RSS - heap is native memory, metaspace, code and stacks")
if after_gc:
    lines.append("after GC: RSS 5 s after one full GC at the end (jcmd GC.run) against the first window, informational: "
                 "native memory that JavaCPP frees only when its owning Java objects are collected drops there")
lines.append("soak: " + ("FAILED: growth after warm-up" if failed else "PASSED: no growth after warm-up"))
text = "\n".join(lines)
print(text)
open(verdict_path, "w").write(text + "\n")
sys.exit(1 if failed else 0)
PY
