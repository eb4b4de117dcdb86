#!/bin/sh
# audio-vm.sh [SECONDS] [MARQUEE]
#
# The click-vs-flash offset over a long run with real clocks (issue 17: 10 minutes): marquee in the
# QEMU guest (deploy/vm/kms-run KMS_RUN_AUDIO=aloop) shows a looped 30 s clip that flashes white at
# the start of each second on a small headless output on the real clock (the guest's virtio-gpu has
# no vblank: its flips complete at once), and plays its click of each second into snd-aloop; the
# capture side records with the card's CLOCK_MONOTONIC timestamps. tools/av-offsets.py
# pairs each click with its flash's vsync in marquee's trace. Prints the summary (offset p50/p95/max,
# drift), the offsets by minute, and writes everything to bench/cache/runs/audio-vm-SECONDS.json.
# SECONDS defaults to 600; MARQUEE to the release build (swift build -c release).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
seconds=${1:-600}
marquee=${2:-$repo/.build/release/marquee}
[ -x "$marquee" ] || { echo "audio-vm: no marquee at $marquee (swift build -c release)" >&2; exit 2; }
runs="$here/cache/runs"
media="$here/cache/media"
mkdir -p "$runs" "$media"
clip="$media/audio-click-flash-30s.mp4"
if [ ! -f "$clip" ]; then
    ffmpeg -nostdin -y -v error \
        -f lavfi -i "color=c=black:size=160x90:rate=30:duration=30,drawbox=color=white:t=fill:enable='lt(mod(n\,30)\,6)'" \
        -f lavfi -i "aevalsrc='if(lt(mod(t\,1)\,0.001)\,0.9\,0)|if(lt(mod(t\,1)\,0.001)\,0.9\,0)':s=48000:d=30" \
        -c:v libx264 -preset ultrafast -pix_fmt yuv420p -g 30 -c:a aac -b:a 192k -f mp4 "$clip.part.mp4"
    mv "$clip.part.mp4" "$clip"
fi
config="$runs/config-audio-vm-$seconds.json"
cat > "$config" <<EOF
{"playlist": [{"uri": "$clip"}], "loop": true,
 "display": {"output": "headless", "mode": "160x90@30"},
 "audio": {"device": "plughw:Loopback,0,0"}}
EOF
png="$runs/audio-vm-$seconds.png"
echo "audio-vm: $seconds s in the guest (boots QEMU; the run takes longer than that)" >&2
# The host's load goes with the figures: under TCG the guest keeps real time only while the host
# gives QEMU the CPU it needs.
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
MARQUEE="$marquee" KMS_RUN_AUDIO=aloop KMS_RUN_PROBE=1 "$repo/deploy/vm/kms-run" "$config" "$png" "$seconds" > "$runs/audio-vm-$seconds.log" 2>&1 \
    || { echo "audio-vm: kms-run failed, see $runs/audio-vm-$seconds.log" >&2; tail -n 20 "$runs/audio-vm-$seconds.log" >&2; exit 1; }
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
base="${png%.png}"
python3 "$repo/tools/av-offsets.py" "$base-capture.raw" "$base-capture.stamps" "$base-trace.jsonl" \
    --flash-seconds 0.2 --skip 5 > "$runs/audio-vm-$seconds.json"
python3 - "$runs/audio-vm-$seconds.json" "$runs/audio-vm-$seconds.log" "$seconds" "$started" "$load_before" "$load_after" \
    "$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)" "$marquee" <<'PY'
import json, re, sys
r = json.load(open(sys.argv[1]))
log = open(sys.argv[2], errors="replace").read()
stopped = re.search(r"msg=stopped frames=(\d+) dropped=(\d+)", log)
r.update({"seconds": int(sys.argv[3]), "started": sys.argv[4], "host_load_before": sys.argv[5],
          "host_load_after": sys.argv[6], "commit": sys.argv[7], "marquee": "release" if "/release/" in sys.argv[8] else sys.argv[8],
          "realignments": log.count("audio realigned"), "presentation_stalled": "presentation stalled" in log})
if stopped:
    r["run_pictures_shown"], r["run_pictures_dropped"] = int(stopped.group(1)), int(stopped.group(2))
json.dump(r, open(sys.argv[1], "w"), indent=1)
print(f"host load {r['host_load_before']} before, {r['host_load_after']} after (1, 5, 15 min); started {r['started']}")
stopped = re.search(r"msg=stopped frames=(\d+) dropped=(\d+)", log)
print(f"clicks heard {r['clicks_heard']}, flashes shown {r['flashes_shown']}, offsets {r['offsets_measured']}; "
      f"realignments {log.count('audio realigned')}; pictures shown/dropped in the run "
      f"{stopped.group(1) + '/' + stopped.group(2) if stopped else '?'}; after the start {r['pictures_shown']} shown, "
      f"{r['pictures_late']} of them late, {r['pictures_missing']} never shown")
fmt = lambda v, d=1: "-" if v is None else f"{v:.{d}f}"
print(f"|offset| p50 {fmt(r['p50_ms'])} ms, p95 {fmt(r['p95_ms'])} ms, max {fmt(r['max_ms'])} ms; mean {fmt(r['mean_ms'])} ms; "
      f"drift {fmt(r['drift_ms_per_minute'], 2)} ms/min; capture clock {fmt(r['capture_clock_ppm'], 0)} ppm against CLOCK_MONOTONIC")
minutes = {}
for o in r["offsets"]:
    minutes.setdefault(int(o["t"] // 60), []).append(o["ms"])
print("| minute | offsets | median (ms) | worst |offset| (ms) |")
print("|---|---|---|---|")
for m in sorted(minutes):
    v = sorted(minutes[m])
    print(f"| {m} | {len(v)} | {v[len(v) // 2]:.1f} | {max(abs(x) for x in v):.1f} |")
PY
# A run of ten minutes or more is the long run bench/RESULTS.md shows (results.json: audio.offsets_long).
if [ "$seconds" -ge 600 ]; then
    python3 "$here/bench.py" --record-audio-vm "$runs/audio-vm-$seconds.json" > /dev/null \
        && echo "audio-vm: recorded in bench/results.json and bench/RESULTS.md" >&2
fi
