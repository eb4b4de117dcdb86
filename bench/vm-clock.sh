#!/bin/bash
# vm-clock.sh [SECONDS [FRAMES]]
#
# Plays the same 720p30 H.264 clip at real time for SECONDS (default 10) on the KMS display of the
# QEMU guest (deploy/vm: TCG, virtio-gpu without virgl, so llvmpipe is its only GL), with marquee,
# `mpv --vo=drm` and GStreamer's kmssink in turn, in one boot of the VM, and reports for each how far
# its timeline moved per second of wall time, how many pictures it showed per second (both from the
# first picture on) and its peak resident size (GNU time's %M). marquee runs with display.scanout
# auto, which on this card is the planes path (no GL: swscale into dumb buffers); GStreamer decodes
# with libav and converts and scales on the CPU too (videoconvertscale into kmssink).
# Then, untimed, each shows the first FRAMES (default 150) pictures of the clip as fast as it can
# (marquee --clock virtual --frames, mpv --untimed --frames, GStreamer sync=false): pictures per
# second. Last, start to exit after the first picture, 5 times each, alternated (the guest's clock).
#   marquee: from its trace (pts and wall time of every picture shown), and its stop line (drops)
#   mpv:     from bench/mpv-stats.lua (time-pos against mp.get_time(), frame counters); pictures
#            shown = frames in the time played - frame-drop-count - decoder-frame-drop-count
#   gst:     from fpsdisplaysink's counts (rendered, dropped, average rate since the first picture)
#            and gst-launch's time from PLAYING (the first picture prerolled) to the end of stream
# Writes bench/cache/vm-clock/result.json (and the run's trace and logs in last-run/) and prints a
# summary. CPU heavy: run it with nice. The VM runs under TCG, so the figures depend on how busy the
# host is: compare the players within one run only.
#
# Environment: MARQUEE (default .build/release/marquee, else .build/debug/marquee), KMS_VM_CACHE (as
# deploy/vm/kms-run).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
seconds=${1:-10}
[[ $seconds =~ ^[0-9]+$ ]] && [ "$seconds" -ge 2 ] && [ "$seconds" -le 120 ] \
    || { echo "vm-clock: SECONDS must be a whole number from 2 to 120, not $seconds" >&2; exit 2; }
frames=${2:-150}
[[ $frames =~ ^[0-9]+$ ]] && [ "$frames" -ge 10 ] && [ "$frames" -le 3000 ] \
    || { echo "vm-clock: FRAMES must be a whole number from 10 to 3000, not $frames" >&2; exit 2; }
# The untimed runs need FRAMES of clip (30 per second).
clip_seconds=$(( (frames / 30 + 2) > (seconds + 4) ? (frames / 30 + 2) : (seconds + 4) ))
marquee=${MARQUEE:-}
if [ -z "$marquee" ]; then
    for candidate in "$repo/.build/release/marquee" "$repo/.build/debug/marquee"; do
        [ -x "$candidate" ] && { marquee=$candidate; break; }
    done
fi
[ -n "$marquee" ] && [ -x "$marquee" ] || { echo "vm-clock: no marquee binary (swift build -c release, or set MARQUEE)" >&2; exit 2; }
marquee=$(realpath "$marquee")
for tool in qemu-system-x86_64 ffmpeg mpv gst-launch-1.0 /usr/bin/time python3; do
    command -v $tool >/dev/null || { echo "vm-clock: $tool is missing (make vm / the Makefile's BENCH_PACKAGES install it)" >&2; exit 125; }
done

cache="$here/cache/vm-clock"
mkdir -p "$cache"
# The clip: long enough that neither player reaches its end; x264's default B-frames (non-reference
# ones among them), one keyframe a second.
clip="$cache/h264-720p30-${clip_seconds}s.mp4"
if [ ! -f "$clip" ]; then
    echo "vm-clock: making $clip"
    ffmpeg -nostdin -y -v error -f lavfi -i "testsrc2=size=1280x720:rate=30" -t $clip_seconds \
        -c:v libx264 -preset veryfast -g 30 -pix_fmt yuv420p "$clip.part.mp4"
    mv "$clip.part.mp4" "$clip"
fi
printf '{"playlist": [{"uri": "%s"}], "loop": false}\n' "$clip" > "$cache/config.json"

guest=$("$repo/deploy/vm/build-guest") || exit 125
run=$(mktemp -d "${TMPDIR:-/tmp}/vm-clock.XXXXXX")
trap 'rm -rf "$run"' EXIT
q() { printf '%q' "$1"; }
# GStreamer: the clip decoded by libav, converted and scaled (with borders, as the others do) to the
# connector's first mode by one videoconvertscale, shown by kmssink on virtio-gpu's primary plane
# (which must cover the whole screen); stops after FRAMES frames parsed (a stretch of the timeline)
# or decoded (the first picture); fpsdisplaysink's counts go to standard output every 0.1 s (-v).
cat > "$run/gst.sh" <<GST
# gst.sh FRAMES SYNC parsed|decoded; written by vm-clock.sh, runs inside the guest.
mode=\$(head -n 1 /sys/class/drm/card0-Virtual-1/modes)
count="identity eos-after=\$1"
if [ "\$3" = decoded ]; then before=""; after="! \$count"; else before="! \$count"; after=""; fi
exec gst-launch-1.0 -v filesrc location=$(q "$clip") ! qtdemux ! h264parse \$before ! avdec_h264 \$after \\
    ! videoconvertscale ! video/x-raw,format=BGRx,width=\${mode%x*},height=\${mode#*x},pixel-aspect-ratio=1/1 \\
    ! fpsdisplaysink text-overlay=false fps-update-interval=100 sync=\$2 \\
    video-sink="kmssink driver-name=virtio_gpu force-modesetting=true" < /dev/null
GST
cat > "$run/job.sh" <<JOB
# Written by vm-clock.sh; runs inside the guest, chrooted into the host's root.
cd $(q "$repo")
echo 0 > /sys/class/graphics/fbcon/cursor_blink 2>/dev/null || true
start=\$(date +%s.%N)
/usr/bin/time -f %M -o /run/out/marquee.maxrss \
$(q "$marquee") --config $(q "$cache/config.json") --output kms --clock real --exit-after $seconds \
    --trace /run/out/marquee.jsonl --socket none < /dev/null > /run/out/marquee.log 2>&1
echo \$? > /run/out/marquee.status
echo "\$start \$(date +%s.%N)" > /run/out/marquee.times
sleep 1
start=\$(date +%s.%N)
/usr/bin/time -f %M -o /run/out/mpv.maxrss \
mpv --no-config --vo=drm --no-audio --really-quiet --length=$seconds --script=$(q "$here/mpv-stats.lua") \
    --script-opts=benchstats-out=/run/out/mpv.json $(q "$clip") < /dev/null > /run/out/mpv.log 2>&1
echo \$? > /run/out/mpv.status
echo "\$start \$(date +%s.%N)" > /run/out/mpv.times
sleep 1
/usr/bin/time -f %M -o /run/out/gst.maxrss sh /run/out/gst.sh $((30 * seconds)) true parsed > /run/out/gst.log 2>&1
echo \$? > /run/out/gst.status
sleep 1
$(q "$marquee") --config $(q "$cache/config.json") --output kms --clock virtual --frames $frames \
    --trace /run/out/marquee-untimed.jsonl --socket none < /dev/null > /run/out/marquee-untimed.log 2>&1
echo \$? > /run/out/marquee-untimed.status
sleep 1
mpv --no-config --vo=drm --no-audio --really-quiet --untimed --frames=$frames --script=$(q "$here/mpv-stats.lua") \
    --script-opts=benchstats-out=/run/out/mpv-untimed.json $(q "$clip") < /dev/null > /run/out/mpv-untimed.log 2>&1
echo \$? > /run/out/mpv-untimed.status
sleep 1
sh /run/out/gst.sh $frames false parsed > /run/out/gst-untimed.log 2>&1
echo \$? > /run/out/gst-untimed.status
# Start to exit after the first picture, 5 times each, alternated.
for run in 1 2 3 4 5; do
    for player in marquee mpv gst; do
        sleep 1
        start=\$(date +%s.%N)
        case \$player in
            marquee) $(q "$marquee") --config $(q "$cache/config.json") --output kms --clock real --frames 1 \
                         --socket none < /dev/null > /run/out/first-marquee.log 2>&1 ;;
            mpv) mpv --no-config --vo=drm --no-audio --really-quiet --frames=1 $(q "$clip") < /dev/null > /run/out/first-mpv.log 2>&1 ;;
            gst) sh /run/out/gst.sh 1 true decoded > /run/out/first-gst.log 2>&1 ;;
        esac
        echo "\$player \$? \$start \$(date +%s.%N)" >> /run/out/first.times
    done
done
exit 0
JOB

echo "vm-clock: booting the VM (marquee, mpv and GStreamer: $seconds s each, $frames frames untimed each, then 5 first pictures each)"
timeout $((12 * seconds + 3 * frames + 900)) qemu-system-x86_64 -machine q35,accel=tcg -smp 2 -m 2048 \
    -kernel "$guest/vmlinuz" -initrd "$guest/initrd.cpio.gz" \
    -append "console=ttyS0 panic=-1 quiet loglevel=4" -no-reboot -display none \
    -serial "file:$run/serial.log" -monitor none -vga none -device virtio-gpu-pci \
    -virtfs local,path=/,mount_tag=host,security_model=none,readonly=on,multidevs=remap,id=host \
    -virtfs "local,path=$run,mount_tag=out,security_model=none,id=out" > "$run/qemu.log" 2>&1 || true
for f in marquee.log mpv.log marquee-untimed.log mpv-untimed.log job.log; do
    [ -s "$run/$f" ] && { echo "--- $f"; tail -n 15 "$run/$f"; }
done
[ -f "$run/marquee.status" ] || { echo "vm-clock: the VM did not run the job" >&2; tail -n 20 "$run/serial.log" >&2; exit 125; }
# The last run's trace, logs and mpv's figures stay in the cache for a closer look.
rm -rf "$cache/last-run" && mkdir -p "$cache/last-run"
cp "$run"/*.log "$run"/*.jsonl "$run"/*.json "$run"/*.times "$run"/*.maxrss "$cache/last-run/" 2>/dev/null || true
python3 - "$run" "$seconds" "$cache/result.json" "$frames" <<'PY'
import json, re, sys
run, seconds, out, untimed_frames = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
result = {"seconds": seconds, "clip": "h264-720p30"}
def trace(path):
    frames = []
    try:
        lines = open(path)
    except OSError:
        return frames
    for line in lines:
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if obj.get("type") == "frame":
            frames.append(obj)
    return frames
def status(name):
    try:
        return int(open(f"{run}/{name}.status").read().strip() or -1)
    except (OSError, ValueError):
        return None
# marquee: pictures from the trace, from the first on.
frames = trace(f"{run}/marquee.jsonl")
log = open(f"{run}/marquee.log", errors="replace").read()
m = {"status": int(open(f"{run}/marquee.status").read().strip() or -1), "pictures": len(frames)}
chosen = re.search(r'msg="scan-out chosen" scanout=(\w+)', log)
m["scanout"] = chosen.group(1) if chosen else "gl (no scan-out choice logged)"
shown = re.search(r'msg="display released".*?renderMs=([0-9.]+)', log)
if shown:
    m["last_render_ms"] = float(shown.group(1))
if len(frames) >= 2:
    wall = frames[-1]["wall"] - frames[0]["wall"]
    m.update(wall_s=round(wall, 3), timeline_s=round(frames[-1]["pts"] - frames[0]["pts"], 3))
    m["timeline_per_wall"] = round(m["timeline_s"] / wall, 3) if wall > 0 else None
    m["pictures_per_s"] = round((len(frames) - 1) / wall, 2) if wall > 0 else None
stop = [l for l in log.splitlines() if 'msg="stopped"' in l or "msg=stopped" in l]
if stop:
    for key in ["dropped", "delayed", "decoder-dropped", "stalls"]:
        found = re.search(rf'\b{key}="?(\d+)', stop[-1])
        if found:
            m[key] = int(found.group(1))
result["marquee"] = m
# mpv
p = {"status": int(open(f"{run}/mpv.status").read().strip() or -1)}
try:
    stats = json.load(open(f"{run}/mpv.json"))
    p.update(stats)
    wall, timeline = stats.get("wall"), stats.get("timeline")
    if wall and timeline is not None:
        p["timeline_per_wall"] = round(timeline / wall, 3)
        dropped = stats.get("frame-drop-count", 0) + stats.get("decoder-frame-drop-count", 0)
        shown = round(timeline * 30) + 1 - dropped
        p["pictures"] = shown
        p["pictures_per_s"] = round(shown / wall, 2)
except (OSError, ValueError) as error:
    p["error"] = f"no stats from mpv: {error}"
result["mpv"] = p
def fps_counts(name):
    """fpsdisplaysink's last counts in gst-launch -v's output: rendered, dropped, average rate."""
    try:
        text = open(f"{run}/{name}.log", errors="replace").read()
    except OSError:
        return {}
    found = re.findall(r"rendered: (\d+), dropped: (\d+), current: [0-9.]+, average: ([0-9.]+)", text)
    if not found:
        return {"error": "no counts from fpsdisplaysink: " + " ".join(text.split()[-30:])}
    rendered, dropped, average = found[-1]
    counts = {"rendered": int(rendered), "dropped": int(dropped), "average": float(average)}
    ended = re.search(r"Execution ended after (\d+):(\d+):([0-9.]+)", text)
    if ended:
        counts["playing_s"] = round(3600 * int(ended.group(1)) + 60 * int(ended.group(2)) + float(ended.group(3)), 3)
    return counts
# GStreamer: pictures per second are fpsdisplaysink's average (pictures since the first over the
# time since it; its counts come every 0.1 s). The timeline is the frames it was given (eos-after),
# played from the first picture (prerolled before PLAYING) to the end of stream.
g = {"status": status("gst"), **fps_counts("gst")}
if g.get("average"):
    g["pictures_per_s"] = g["average"]
if g.get("playing_s"):
    g["timeline_per_wall"] = round(seconds / g["playing_s"], 3)
result["gst"] = g
for name, entry in (("marquee", m), ("mpv", p), ("gst", g)):
    try:
        entry["peak_rss_mb"] = round(int(open(f"{run}/{name}.maxrss").read().split()[-1]) / 1024, 1)
    except (OSError, ValueError, IndexError):
        pass
mp, pp, gp = m.get("pictures_per_s"), p.get("pictures_per_s"), g.get("pictures_per_s")
result["marquee_over_mpv_pictures"] = round(mp / pp, 2) if mp and pp else None
result["marquee_over_gst_pictures"] = round(mp / gp, 2) if mp and gp else None
# Untimed: every frame decoded and shown as fast as possible, frames per second from the first
# picture to the last.
u = {"frames_asked": untimed_frames}
mu = {"status": status("marquee-untimed")}
uframes = trace(f"{run}/marquee-untimed.jsonl")
mu["pictures"] = len(uframes)
if len(uframes) >= 2 and uframes[-1]["wall"] > uframes[0]["wall"]:
    mu["wall_s"] = round(uframes[-1]["wall"] - uframes[0]["wall"], 3)
    mu["fps"] = round((len(uframes) - 1) / mu["wall_s"], 2)
pu = {"status": status("mpv-untimed")}
try:
    stats = json.load(open(f"{run}/mpv-untimed.json"))
    pu.update(stats)
    if stats.get("wall"):
        dropped = stats.get("frame-drop-count", 0) + stats.get("decoder-frame-drop-count", 0)
        pu["pictures"] = round(stats.get("timeline", 0) * 30) + 1 - dropped
        pu["fps"] = round((pu["pictures"] - 1) / stats["wall"], 2)
except (OSError, ValueError) as error:
    pu["error"] = f"no stats from mpv: {error}"
gu = {"status": status("gst-untimed"), **fps_counts("gst-untimed")}
if gu.get("average"):
    gu["fps"] = gu["average"]
u["marquee"], u["mpv"], u["gst"] = mu, pu, gu
u["marquee_over_mpv_fps"] = round(mu["fps"] / pu["fps"], 2) if mu.get("fps") and pu.get("fps") else None
u["marquee_over_gst_fps"] = round(mu["fps"] / gu["fps"], 2) if mu.get("fps") and gu.get("fps") else None
result["untimed"] = u
# Start to exit after the first picture (the guest's clock), each player's runs and median.
first = {}
try:
    for line in open(f"{run}/first.times"):
        player, code, start, end = line.split()
        first.setdefault(player, []).append(round(float(end) - float(start), 3) if code == "0" else None)
except (OSError, ValueError):
    pass
def median(values):
    values = sorted(v for v in values if v is not None)
    return values[len(values) // 2] if values else None
result["first_picture_s"] = {k: {"runs": v, "median": median(v)} for k, v in first.items()}
fm = {k: median(v) for k, v in first.items()}
for peer in ("mpv", "gst"):
    if fm.get("marquee") and fm.get(peer):
        result["first_picture_s"][f"marquee_over_{peer}"] = round(fm["marquee"] / fm[peer], 2)
json.dump(result, open(out, "w"), indent=1)
print(json.dumps(result, indent=1))
PY
