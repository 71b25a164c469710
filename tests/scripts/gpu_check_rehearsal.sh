#!/usr/bin/env bash
# scripts/gpu-check rehearsed on the CPU (--rehearse: the same stages, tiny
# sizes, no compiler run), so the one command a lent GPU gets cannot rot
# between loans. Twice into the same folder: the second call resumes the
# ListOps run from the first one's checkpoint.
#   gpu_check_rehearsal.sh BUILD_DIR
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; echo "--- summary"; cat "$tmp/out/summary.md" 2>/dev/null; exit 1; }

run() {
  LRA_GPU_CHECK_PORT=$((20000 + $$ % 20000)) "$repo/scripts/gpu-check" --rehearse --build "$build" \
    --out "$tmp/out" --data-dir "$tmp/data" --pack "$tmp/$1.tgz" >"$tmp/$1.txt" 2>&1
  echo $? >"$tmp/$1.rc"
  cat "$tmp/$1.txt"
}
row() { grep "^| $1 |" "$tmp/out/summary.md"; }

run first
[[ -f "$tmp/out/summary.md" && -f "$tmp/out/summary.json" ]] || fail "no summary written"
for s in build tests bench peers suite listops; do row "$s" >/dev/null || fail "no row for stage $s"; done
# No JAX and no torch.compile on this CPU: the peers stage reports its
# failed sides and, with them, the whole check; every other stage passes.
[[ $(cat "$tmp/first.rc") == 1 ]] || fail "exit $(cat "$tmp/first.rc"), expected 1 (the peers without JAX)"
for s in build tests bench suite listops; do
  row "$s" | grep -q "| passed |" || fail "stage $s did not pass: $(row "$s")"
done
row tests | grep -q "device parity: passed" || fail "device parity: $(row tests)"
row tests | grep -q "inspect --check: 2/2 passed" || fail "inspect: $(row tests)"
row tests | grep -q "one-rank run: gloo world size 1" || fail "one-rank run: $(row tests)"
row tests | grep -q "Python mixer run: passed" || fail "Python mixer run: $(row tests)"
row tests | grep -q "cuDNN attention: not checked (no CUDA device)" || fail "cuDNN attention check: $(row tests)"
row bench | grep -q "2 plugins measured" || fail "bench: $(row bench)"
[[ -s "$tmp/out/bench/all/bench.md" ]] || fail "no merged bench report"
row peers | grep -q "lrahost [0-9.]* steps/s" || fail "peers: $(row peers)"
row peers | grep -q "pytorch eager [0-9.]* steps/s" || fail "peers: $(row peers)"
# --stop-after counts wall-clock seconds, so the update it stops at depends on
# the machine's speed (50 on the slower VMs, 100 or 150 on a faster one): the
# checks below follow the update the summary names, whatever it is.
first_stop=$(row listops | sed -n 's/.*stopped with a checkpoint: at update \([0-9]*\) of.*/\1/p')
[[ -n "$first_stop" ]] || fail "listops: $(row listops)"
[[ -d "$tmp/out/listops/checkpoints/step-$first_stop" && ! -e "$tmp/out/listops/result.json" ]] ||
  fail "listops checkpoint: no checkpoints/step-$first_stop, or a result.json"

# --pack: one small file, without the checkpoint.
tar tzf "$tmp/first.tgz" >"$tmp/first.list" || fail "--pack wrote no readable $tmp/first.tgz"
grep -q "summary.md" "$tmp/first.list" || fail "--pack holds no summary.md"
! grep -q "checkpoints" "$tmp/first.list" || fail "--pack holds the checkpoint"

# A later call resumes the run instead of starting over.
run second
grep -q "resumed from .*step-$first_stop\b" "$tmp/out/listops/run.log" ||
  fail "the second call did not resume ListOps from step-$first_stop"
second_stop=$(row listops | sed -n 's/.*stopped with a checkpoint: at update \([0-9]*\) of.*/\1/p')
[[ -n "$second_stop" ]] && ((second_stop > first_stop)) ||
  fail "listops resumed from update $first_stop but did not go on: $(row listops)"

# A bad argument: exit 2 and nothing written.
"$repo/scripts/gpu-check" --budget soon --out "$tmp/bad" >/dev/null 2>&1
[[ $? == 2 && ! -e "$tmp/bad" ]] || fail "--budget soon was not refused with exit 2 before any output"
"$repo/scripts/gpu-check" --stages build,listopz --out "$tmp/bad" >/dev/null 2>&1
[[ $? == 2 && ! -e "$tmp/bad" ]] || fail "--stages listopz was not refused with exit 2 before any output"

# The speed items' A/B (asked for by name): five ways, one table (the CPU cannot
# capture, so its CUDA-graphs way runs --cuda-graphs off: the ladder's bookkeeping).
"$repo/scripts/gpu-check" --rehearse --build "$build" --stages speed --out "$tmp/speed" >"$tmp/speed.log" 2>&1 ||
  fail "--stages speed failed: $(tail -5 "$tmp/speed.log"; cat "$tmp/speed/logs/speed.log" 2>/dev/null | tail -20)"
grep -q "^speed	passed	[0-9]*	listops: fused [0-9.]*x, pad [0-9.]*x, eval x4 [0-9.]*x, CUDA graphs [0-9.]*x" "$tmp/speed/stages.tsv" ||
  fail "speed: $(cat "$tmp/speed/stages.tsv")"
[[ $(grep -c "^| listops |" "$tmp/speed/speed/speed.md") == 5 ]] || fail "speed.md: $(cat "$tmp/speed/speed/speed.md")"
/usr/bin/python3 - "$tmp/speed/speed" <<'PY' || fail "the eval x4 way did not time passes 4x as large"
import json, sys
run = lambda w: json.load(open(f"{sys.argv[1]}/{w}/bench.json"))["runs"][0]
sys.exit(0 if run("fused+pad+eval4")["eval_pass"] == 4 * run("fused+pad")["eval_pass"] > 0 else 1)
PY

# The campaign: the queue's next runs that fit, each verified; a run whose data
# are missing (Text) gives its time to the next; done and too-long runs are
# never started.
campaign_queue="$repo/tests/fixtures/campaign/queue.toml"
"$repo/scripts/gpu-check" --rehearse --build "$build" --stages campaign --queue "$campaign_queue" \
  --data-dir "$tmp/data" --out "$tmp/campaign" >"$tmp/campaign.log" 2>&1 ||
  fail "--stages campaign failed: $(tail -5 "$tmp/campaign.log"; tail -20 "$tmp/campaign/logs/campaign.log" 2>/dev/null)"
row_c=$(grep "^campaign	passed" "$tmp/campaign/stages.tsv") || fail "campaign: $(cat "$tmp/campaign/stages.tsv")"
for words in "listops seed 1: open, " "text seed 0: no data here (exit 5)" "listops seed 2: open, "; do
  [[ $row_c == *"$words"* ]] || fail "campaign: no '$words' in: $row_c"
done
for s in 1 2; do
  [[ -s "$tmp/campaign/campaign/transformer/listops/seed-$s/result.json" &&
     -s "$tmp/campaign/campaign/transformer/listops/seed-$s/run.log" ]] || fail "campaign: no result of listops seed $s"
done
[[ ! -e "$tmp/campaign/campaign/transformer/listops/seed-0" && ! -e "$tmp/campaign/campaign/transformer/pathfinder" ]] ||
  fail "campaign: started a done run or one that does not fit"
printf 'schema = "lrahost.campaign/v1"\n' >"$tmp/bad-queue.toml"
"$repo/scripts/gpu-check" --rehearse --stages campaign --queue "$tmp/bad-queue.toml" --out "$tmp/bad" >/dev/null 2>&1
[[ $? == 2 && ! -e "$tmp/bad" ]] || fail "a malformed queue was not refused with exit 2 before any output"

# --stages: only the stages asked for, the others not even listed.
"$repo/scripts/gpu-check" --rehearse --stages suite --out "$tmp/only" >"$tmp/only.log" 2>&1 ||
  fail "--stages suite failed: $(tail -5 "$tmp/only.log")"
[[ $(wc -l <"$tmp/only/stages.tsv") == 1 ]] && grep -q "^suite	passed" "$tmp/only/stages.tsv" ||
  fail "--stages suite ran: $(cat "$tmp/only/stages.tsv")"
echo "gpu-check rehearsal: passed"
