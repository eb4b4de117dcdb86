#!/usr/bin/env python3
"""Marquee's benchmark, side by side with ffmpeg (decode only) and mpv (EGL on llvmpipe under Xvfb).

Run through `make bench`, which builds Marquee in release mode, installs the peers and matplotlib,
and calls:  bench/bench.py --marquee PATH/TO/marquee

Writes bench/results.json (every figure), bench/RESULTS.md (tables with the ratios) and
bench/frame-intervals.png. Media is generated with the ffmpeg command and cached in bench/cache/.
"""

import argparse
import base64
import json
import os
import platform
import re
import signal
import statistics
import shutil
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = HERE / "cache"
MEDIA = CACHE / "media"
RUNS = CACHE / "runs"

# --------------------------------------------------------------------------------------------------
# Media (made once with the ffmpeg command, cached under bench/cache/media)

PACING_FPS = [24, 25, 30, 50, 60]
PACING_SECONDS = 2          # one loop of a pacing clip
LOOP_CLIP_FRAMES = 30       # the clip of the memory test: 1 s at 30 fps, as issue 3 states it


def _x264(preset="veryfast"):
    return ["-c:v", "libx264", "-preset", preset, "-pix_fmt", "yuv420p"]


CLIPS = {
    # The main clip: 1080p H.264 at 30 fps, 20 s (real-time runs play it once through).
    "h264-1080p30": dict(fps=30, frames=600, args=[
        "-f", "lavfi", "-i", "testsrc2=size=1920x1080:rate=30", "-t", "20", *_x264(), "-crf", "23", "-g", "60"]),
    # 4K HEVC, 1 s (its encoder is slow here).
    "hevc-2160p30": dict(fps=30, frames=30, args=[
        "-f", "lavfi", "-i", "testsrc2=size=3840x2160:rate=30", "-t", "1", "-c:v", "libx265", "-preset", "ultrafast",
        "-crf", "28", "-pix_fmt", "yuv420p", "-tag:v", "hvc1", "-x265-params", "log-level=error"]),
    # A flat 1080p picture: decoding it costs almost nothing, so playing it measures the draw ceiling.
    "flat-1080p30": dict(fps=30, frames=60, args=[
        "-f", "lavfi", "-i", "color=c=0x336699:size=1920x1080:rate=30", "-t", "2", *_x264("ultrafast")]),
    # The 1-second clip looped 1,000 times for the memory test.
    "loop-180p30-1s": dict(fps=30, frames=LOOP_CLIP_FRAMES, args=[
        "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30", "-frames:v", str(LOOP_CLIP_FRAMES), *_x264("ultrafast")]),
}
# The transition clip: 720p30, 2 s (a 1 s crossfade, the most its half allows, at every loop point).
CLIPS["h264-720p30-2s"] = dict(fps=30, frames=60, args=[
    "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=30", "-t", "2", *_x264(), "-g", "30"])
for _fps in PACING_FPS:
    # Pacing clips (the 24 fps one is the film-cadence clip): 2 s, looped.
    CLIPS[f"pacing-360p{_fps}"] = dict(fps=_fps, frames=_fps * PACING_SECONDS, args=[
        "-f", "lavfi", "-i", f"testsrc2=size=640x360:rate={_fps}", "-t", str(PACING_SECONDS), *_x264("ultrafast"),
        "-g", str(_fps)])


def make_media(name):
    path = MEDIA / f"{name}.mp4"
    if path.exists():
        return path
    MEDIA.mkdir(parents=True, exist_ok=True)
    part = MEDIA / f"{name}.part.mp4"
    log(f"  making {path.name} with ffmpeg")
    subprocess.run(["ffmpeg", "-nostdin", "-y", "-v", "error", *CLIPS[name]["args"], "-f", "mp4", str(part)],
                   check=True)
    part.rename(path)
    return path


# --------------------------------------------------------------------------------------------------
# Running things and measuring them

def log(message):
    print(message, file=sys.stderr, flush=True)


class Measured:
    """A finished child: wall time, CPU (user+sys of it and its waited-for children), peak RSS."""

    def __init__(self, wall, usage, status, stderr_path):
        self.wall = wall
        self.user = usage.ru_utime
        self.sys = usage.ru_stime
        self.cpu = usage.ru_utime + usage.ru_stime
        self.max_rss_kb = usage.ru_maxrss
        self.status = status
        self.stderr_path = stderr_path

    def check(self, what):
        if self.status != 0:
            tail = Path(self.stderr_path).read_text(errors="replace")[-2000:] if self.stderr_path else ""
            raise RuntimeError(f"{what} exited with status {self.status}:\n{tail}")
        return self


def run_measured(cmd, name, env=None, sampler=None, timeout=300):
    """Runs cmd, returns a Measured. `sampler(pid, t)` is called about every 5 ms while it runs."""
    RUNS.mkdir(parents=True, exist_ok=True)
    err_path = RUNS / f"{name}.stderr"
    with open(err_path, "wb") as err:
        start = time.monotonic()
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                env=env)
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG if sampler else 0)
            if pid:
                break
            now = time.monotonic() - start
            if now > timeout:
                proc.kill()
                os.wait4(proc.pid, 0)
                raise RuntimeError(f"{name}: still running after {timeout} s: {' '.join(map(str, cmd))}")
            sampler(proc.pid, now)
            time.sleep(0.005)
        wall = time.monotonic() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Measured(wall, usage, proc.returncode, err_path)


def stopped_counts(measured):
    """What marquee's stopped line says it showed and dropped, and who dropped it (presentation for
    lateness, the cadence, the decoder): {} when the run printed no such line."""
    text = Path(measured.stderr_path).read_text(errors="replace") if measured.stderr_path else ""
    lines = [l for l in text.splitlines() if "msg=stopped" in l]
    if not lines:
        return {}
    return {k: int(v) for k, v in re.findall(r"([a-z-]+)=(\d+)", lines[-1])}


def proc_cpu_seconds(pid):
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_status_kb(pid, key):
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return None


def median(values):
    return statistics.median(values) if values else None


def ratio(a, b):
    return a / b if a is not None and b else None


# --------------------------------------------------------------------------------------------------
# The players

class Marquee:
    def __init__(self, binary):
        self.binary = str(binary)
        self.label = None

    def config(self, clip, loop=True, mode="1920x1080@60", scanout="auto"):
        path = RUNS / f"config-{Path(clip).stem}-{'loop' if loop else 'once'}-{mode.replace('@', '_')}-{scanout}.json"
        RUNS.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"playlist": [{"uri": str(clip)}], "loop": loop,
                                    "display": {"output": "headless", "mode": mode, "scanout": scanout}}))
        return path

    def command(self, clip, clock, exit_after, trace, mode="1920x1080@60", loop=True, frames=None, scanout="auto"):
        """`scanout`: the headless output's (`auto`: without GL where the machine has no GPU)."""
        stop = ["--frames", str(frames)] if frames else ["--exit-after", f"{exit_after:.6f}"]
        return [self.binary, "--config", str(self.config(clip, loop, mode, scanout)), "--output", "headless",
                "--mode", mode, "--clock", clock] + stop + ["--trace", str(trace)]

    def version(self):
        root = HERE.parent
        try:
            commit = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                                    text=True).stdout.strip()
            dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                   capture_output=True, text=True).stdout.strip()
        except OSError:
            commit, dirty = "", ""
        swift = subprocess.run(["swift", "--version"], capture_output=True, text=True)
        swift_line = (swift.stdout + swift.stderr).strip().splitlines()
        return {"commit": (commit + ("+local changes" if dirty else "")) if commit else "unknown (not a git checkout)",
                "swift": next((l for l in swift_line if "Swift version" in l), None),
                "build": "release"}


class Xvfb:
    """One X server for every mpv run, so that no run pays for starting it."""

    def __init__(self):
        for n in range(90, 140):
            if not Path(f"/tmp/.X11-unix/X{n}").exists() and not Path(f"/tmp/.X{n}-lock").exists():
                self.display = f":{n}"
                break
        else:
            raise RuntimeError("no free X display number between :90 and :139")
        self.proc = subprocess.Popen(["Xvfb", self.display, "-screen", "0", "1920x1080x24", "-nolisten", "tcp"],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        socket = Path(f"/tmp/.X11-unix/X{self.display[1:]}")
        deadline = time.monotonic() + 10
        while not socket.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"Xvfb {self.display} did not come up within 10 s")
            time.sleep(0.05)
        time.sleep(0.2)

    def cpu_seconds(self):
        return proc_cpu_seconds(self.proc.pid)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Mpv:
    BASE = ["mpv", "--no-config", "--really-quiet", "--vo=gpu", "--gpu-api=opengl", "--opengl-es=yes",
            "--gpu-context=x11egl", "--hwdec=no", "--no-audio", "--no-osc", "--no-input-default-bindings"]

    def __init__(self, xvfb):
        self.xvfb = xvfb
        self.env = dict(os.environ, DISPLAY=xvfb.display)
        self.env.pop("WAYLAND_DISPLAY", None)

    def run(self, name, clip, extra, log_file=False, stats=False):
        cmd = list(self.BASE) + extra
        stats_path = RUNS / f"{name}.stats.json"
        log_path = RUNS / f"{name}.mpv.log"
        if stats:
            stats_path.unlink(missing_ok=True)
            cmd += [f"--script={HERE / 'mpv-stats.lua'}", f"--script-opts=benchstats-out={stats_path}"]
        if log_file:
            cmd += [f"--log-file={log_path}"]
        cmd.append(str(clip))
        x_before = self.xvfb.cpu_seconds()
        m = run_measured(cmd, name, env=self.env).check(name)
        m.xvfb_cpu = self.xvfb.cpu_seconds() - x_before
        m.stats = json.loads(stats_path.read_text()) if stats and stats_path.exists() else {}
        m.log_path = log_path
        return m

    def version(self):
        return subprocess.run(["mpv", "--version"], capture_output=True, text=True).stdout.splitlines()[0]

    def renderer(self, clip):
        m = self.run("mpv-renderer", clip, ["--frames=1"], log_file=True)
        text = m.log_path.read_text(errors="replace")
        found = re.search(r"GL_RENDERER='([^']*)'", text)
        version = re.search(r"GL_VERSION='([^']*)'", text)
        return {"renderer": found.group(1) if found else None, "gl_version": version.group(1) if version else None}


def ffmpeg_version():
    return subprocess.run(["ffmpeg", "-version"], capture_output=True, text=True).stdout.splitlines()[0]


# --------------------------------------------------------------------------------------------------
# Traces

def read_trace(path):
    lines = []
    for raw in Path(path).read_text().splitlines():
        raw = raw.strip()
        if not raw:
            continue
        try:
            lines.append(json.loads(raw))
        except json.JSONDecodeError:
            continue  # a line cut short by a kill
    return lines


def frame_lines(lines):
    return [l for l in lines if l.get("type") == "frame"]


def analyse_pacing(lines, fps, refresh, frames_per_clip):
    """Compares a trace with the ideal cadence, pass by pass: frame k of a pass belongs on vsync
    round(k * refresh / fps), halves up, after the vsync of the pass's first frame, and the next
    pass starts where frame `frames_per_clip` of this one would be (each item starts on a vsync, so
    no frame is lost at a seam). A frame k whose ideal vsync equals that of frame k+1 is an expected
    drop (60 fps on 59.94 Hz)."""
    frames = frame_lines(lines)
    blanks = sum(1 for l in lines if l.get("type") == "blank")
    per_vsync = Fraction(refresh) / fps

    def ideal(k):
        x = k * per_vsync + Fraction(1, 2)
        return x.numerator // x.denominator

    run, prev_index, repeats = 0, None, 0
    keyed = []  # (pass, frame number in it, vsync)
    for f in frames:
        index = round(f["pts"] * fps)
        if prev_index is not None:
            if index == prev_index:
                repeats += 1
                continue
            if index < prev_index:
                run += 1
        prev_index = index
        keyed.append((run, index, f["vsync"]))

    result = {"presented": len(frames), "blanks": blanks, "repeats": repeats, "cadence_errors": 0, "gaps": 0,
              "drops": 0, "expected_drops": 0, "extra_frames": 0, "max_position_error_vsyncs": 0,
              "interval_histogram": {}}
    if not keyed:
        return result
    shown = {(r, k) for r, k, _ in keyed}
    for r in range(keyed[0][0], keyed[-1][0] + 1):
        ks = [k for rr, k, _ in keyed if rr == r]
        first = ks[0] if r == keyed[0][0] else 0
        last = ks[-1] if r == keyed[-1][0] else frames_per_clip - 1
        for k in range(first, last + 1):
            if ideal(k + 1) == ideal(k):
                result["expected_drops"] += 1
                if (r, k) in shown:
                    result["extra_frames"] += 1
            elif (r, k) not in shown:
                result["drops"] += 1
    histogram = {}
    for (pr, pk, pv), (r, k, v) in zip(keyed, keyed[1:]):
        interval = v - pv
        want = ideal(k) - ideal(pk) if r == pr else ideal(frames_per_clip) - ideal(pk) + ideal(k)
        histogram[interval] = histogram.get(interval, 0) + 1
        if interval != want:
            result["cadence_errors"] += 1
            if interval > want:
                result["gaps"] += 1
    origin = {}
    for r, k, v in keyed:
        r0 = origin.setdefault(r, (k, v))
        error = abs((v - r0[1]) - (ideal(k) - ideal(r0[0])))
        result["max_position_error_vsyncs"] = max(result["max_position_error_vsyncs"], error)
    result["interval_histogram"] = {str(k): histogram[k] for k in sorted(histogram)}
    return result


# --------------------------------------------------------------------------------------------------
# The benchmarks
def bench_overlay(marquee, results, seconds=10, reps=2):
    """Issue 18's figure: CPU per presented frame playing 1080p30 at real time on the headless output,
    with a clock overlay (the local time, rendered again each second) and without; alternating runs."""
    clip = make_media("h264-1080p30")
    runs = {"without": [], "clock": []}
    for rep in range(reps):
        for case in ("without", "clock"):
            config = {"playlist": [{"uri": str(clip)}], "display": {"output": "headless", "mode": "1920x1080@60"}}
            if case == "clock":
                config["overlays"] = [{"clock": "%H:%M:%S", "anchor": "bottom-right", "offset": [40, 40], "size": 64,
                                       "opacity": 0.9}]
            path = RUNS / f"config-overlay-{case}.json"
            path.write_text(json.dumps(config))
            trace = RUNS / f"overlay-{case}-{rep}.jsonl"
            log(f"  overlay: marquee plays {seconds} s, {case} a clock overlay ({rep + 1}/{reps})")
            m = run_measured([marquee.binary, "--config", str(path), "--output", "headless", "--mode", "1920x1080@60",
                              "--clock", "real", "--exit-after", f"{seconds:.6f}", "--trace", str(trace)],
                             f"overlay-{case}-{rep}").check("marquee")
            shown = len(frame_lines(read_trace(trace)))
            runs[case].append({"cpu_s": m.cpu, "presented": shown, "cpu_ms_per_frame": 1000 * m.cpu / max(shown, 1)})
    per_frame = {case: median([r["cpu_ms_per_frame"] for r in v]) for case, v in runs.items()}
    results["overlay"] = {"clip": "h264-1080p30", "seconds": seconds, "reps": reps, "runs": runs,
                          "cpu_ms_per_frame": per_frame,
                          "ratio_clock_over_without": ratio(per_frame["clock"], per_frame["without"])}


def renderer_ceiling(results):
    """Builds and runs gl-ceiling.c: the EGL/GLES driver's own rate for uploading and drawing one
    1080p picture with no decoding (cheapest: one RGBA texture, nearest), and for 4:2:0 planes."""
    source = HERE / "gl-ceiling.c"
    binary = CACHE / "gl-ceiling"
    if not binary.exists() or binary.stat().st_mtime < source.stat().st_mtime:
        errors = []
        for cc in ("cc", "clang", "gcc"):
            try:
                done = subprocess.run([cc, "-O2", "-o", str(binary), str(source), "-lEGL", "-lGLESv2"],
                                      capture_output=True, text=True)
            except FileNotFoundError:
                errors.append(f"{cc}: not found")
                continue
            if done.returncode == 0:
                break
            errors.append(f"{cc}: {done.stderr.strip()[-300:]}")
        else:
            results["renderer_ceiling"] = {"error": "cannot build gl-ceiling.c: " + "; ".join(errors)}
            return
    log("  renderer ceiling: upload + draw of a 1920x1080 picture, no decoding")
    done = subprocess.run([str(binary), "1920", "1080", "40"], capture_output=True, text=True, timeout=120)
    try:
        results["renderer_ceiling"] = json.loads(done.stdout)
    except json.JSONDecodeError:
        results["renderer_ceiling"] = {"error": f"gl-ceiling exited {done.returncode}: {done.stderr.strip()[-300:]}"}


def bench_throughput(marquee, mpv, reps, results):
    """Untimed: frames per second from process start to exit, the same frames for every tool."""
    out = {}
    cases = [("h264-1080p30", 120), ("hevc-2160p30", 30), ("flat-1080p30", 120)]
    for clip_name, frames in cases:
        clip = make_media(clip_name)
        fps = CLIPS[clip_name]["fps"]
        per = {"marquee": [], "mpv": [], "ffmpeg": []}
        cpu = {"marquee": [], "mpv": [], "ffmpeg": []}
        presented, dropped = [], []
        for rep in range(reps):
            log(f"  throughput {clip_name} {frames} frames, run {rep + 1}/{reps}")
            trace = RUNS / f"tp-{clip_name}-{rep}.jsonl"
            m = run_measured(marquee.command(clip, "virtual", frames / fps, trace), f"tp-marquee-{clip_name}-{rep}")
            m.check("marquee")
            shown = len(frame_lines(read_trace(trace)))
            presented.append(shown)
            counts = stopped_counts(m)
            dropped.append(sum(counts.get(k, 0) for k in ("dropped", "cadence-dropped", "decoder-dropped")))
            per["marquee"].append(shown / m.wall)
            cpu["marquee"].append(m.cpu / max(shown, 1))
            f = run_measured(["ffmpeg", "-nostdin", "-v", "error", "-i", str(clip), "-frames:v", str(frames),
                              "-f", "null", "-"], f"tp-ffmpeg-{clip_name}-{rep}").check("ffmpeg")
            per["ffmpeg"].append(frames / f.wall)
            cpu["ffmpeg"].append(f.cpu / frames)
            if clip_name != "flat-1080p30" or rep == 0:
                p = mpv.run(f"tp-mpv-{clip_name}-{rep}", clip, ["--untimed", f"--frames={frames}"])
                per["mpv"].append(frames / p.wall)
                cpu["mpv"].append(p.cpu / frames)
        out[clip_name] = {
            "frames": frames, "marquee_presented": presented, "marquee_dropped": dropped,
            "fps": {k: v for k, v in per.items()}, "median_fps": {k: median(v) for k, v in per.items()},
            "cpu_ms_per_frame": {k: (median(v) * 1000 if v else None) for k, v in cpu.items()},
        }
    # The renderer's draw ceiling: the driver's cheapest full-screen picture (gl-ceiling.c), or
    # Marquee on the flat clip (its own shader, decoding nearly free) when that probe is missing.
    out["marquee_flat_clip_fps"] = out["flat-1080p30"]["median_fps"]["marquee"]
    probe = results.get("renderer_ceiling", {}).get("rgba_nearest", {}).get("fps")
    ceiling = probe or out["marquee_flat_clip_fps"]
    out["draw_ceiling_fps"] = ceiling
    out["draw_ceiling_source"] = "gl-ceiling rgba_nearest" if probe else "marquee on flat-1080p30"
    main = out["h264-1080p30"]["median_fps"]
    out["ratios_1080p"] = {
        "marquee_over_mpv": ratio(main["marquee"], main["mpv"]),
        "marquee_over_ffmpeg": ratio(main["marquee"], main["ffmpeg"]),
        "marquee_over_min_ffmpeg_ceiling": ratio(main["marquee"], min(main["ffmpeg"], ceiling)),
    }
    four = out["hevc-2160p30"]["median_fps"]
    out["ratios_2160p"] = {"marquee_over_mpv": ratio(four["marquee"], four["mpv"]),
                           "marquee_over_ffmpeg": ratio(four["marquee"], four["ffmpeg"])}
    results["throughput"] = out


def bench_realtime(marquee, mpv, results):
    """CPU seconds per presented frame playing 1080p30 for 20 s at real time, and peak RSS."""
    clip = make_media("h264-1080p30")
    seconds = 20
    log(f"  real time: marquee plays {seconds} s")
    trace = RUNS / "rt-marquee.jsonl"
    m = run_measured(marquee.command(clip, "real", seconds, trace), "rt-marquee").check("marquee")
    lines = read_trace(trace)
    shown = len(frame_lines(lines))
    pacing = analyse_pacing(lines, 30, Fraction(60), CLIPS["h264-1080p30"]["frames"])
    log(f"  real time: mpv plays {seconds} s")
    p = mpv.run("rt-mpv", clip, [f"--length={seconds}"], stats=True)
    decoded = p.stats.get("estimated-frame-number")
    dropped = p.stats.get("frame-drop-count", 0) + p.stats.get("decoder-frame-drop-count", 0)
    mpv_shown = (decoded - dropped) if decoded else None
    results["realtime"] = {
        "clip": "h264-1080p30", "seconds": seconds,
        "marquee": {"wall_s": m.wall, "cpu_s": m.cpu, "user_s": m.user, "sys_s": m.sys, "presented": shown,
                    "cpu_ms_per_frame": 1000 * m.cpu / max(shown, 1), "peak_rss_mb": m.max_rss_kb / 1024,
                    "pacing": pacing},
        "mpv": {"wall_s": p.wall, "cpu_s": p.cpu, "user_s": p.user, "sys_s": p.sys, "stats": p.stats,
                "presented": mpv_shown, "cpu_ms_per_frame": 1000 * p.cpu / mpv_shown if mpv_shown else None,
                "xvfb_cpu_s": p.xvfb_cpu,
                "cpu_ms_per_frame_with_xvfb": 1000 * (p.cpu + p.xvfb_cpu) / mpv_shown if mpv_shown else None,
                "peak_rss_mb": p.max_rss_kb / 1024},
    }
    r = results["realtime"]
    # The same two players each without GL: Marquee's other headless output, and mpv's software
    # output (swscale into the X server's shared memory).
    log(f"  real time: marquee with display.scanout gl plays {seconds} s")
    g_trace = RUNS / "rt-marquee-gl.jsonl"
    g = run_measured(marquee.command(clip, "real", seconds, g_trace, scanout="gl"), "rt-marquee-gl").check("marquee gl")
    g_shown = len(frame_lines(read_trace(g_trace)))
    log(f"  real time: mpv --vo=x11 plays {seconds} s")
    x = mpv.run("rt-mpv-x11", clip, [f"--length={seconds}", "--vo=x11"], stats=True)
    x_decoded = x.stats.get("estimated-frame-number")
    x_shown = (x_decoded - x.stats.get("frame-drop-count", 0) - x.stats.get("decoder-frame-drop-count", 0)) if x_decoded else None
    r["marquee_gl"] = {"cpu_s": g.cpu, "presented": g_shown, "cpu_ms_per_frame": 1000 * g.cpu / max(g_shown, 1),
                       "peak_rss_mb": g.max_rss_kb / 1024}
    r["mpv_x11"] = {"cpu_s": x.cpu, "xvfb_cpu_s": x.xvfb_cpu, "presented": x_shown,
                    "cpu_ms_per_frame": 1000 * x.cpu / x_shown if x_shown else None,
                    "cpu_ms_per_frame_with_xvfb": 1000 * (x.cpu + x.xvfb_cpu) / x_shown if x_shown else None,
                    "peak_rss_mb": x.max_rss_kb / 1024}
    r["ratios"] = {"cpu_per_frame_marquee_over_mpv": ratio(r["marquee"]["cpu_ms_per_frame"], r["mpv"]["cpu_ms_per_frame"]),
                   "peak_rss_marquee_over_mpv": ratio(r["marquee"]["peak_rss_mb"], r["mpv"]["peak_rss_mb"])}
    r["trace"] = str(trace.relative_to(HERE))


def bench_first_frame(marquee, mpv, reps, results):
    """Process start to the first presented frame. Both tools are timed from start to exit after
    showing one frame; where a trace line carries a wall-clock `wall` field (Unix seconds), or the
    trace file shows its first line while Marquee still runs, that time is recorded too. mpv's own
    log gives the time (from its start-up) at which it showed the first frame."""
    clip = make_media("h264-1080p30")
    marquee_exit, marquee_first, mpv_exit, mpv_logged = [], [], [], []
    for rep in range(reps):
        log(f"  first frame, run {rep + 1}/{reps}")
        trace = RUNS / f"ttff-marquee-{rep}.jsonl"
        first_seen = []

        def watch(pid, t, trace=trace, first_seen=first_seen):
            if not first_seen and trace.exists() and trace.stat().st_size > 0:
                first_seen.append(t)

        started = time.time()
        # Exit once one frame has been shown, as mpv's --frames=1 does.
        m = run_measured(marquee.command(clip, "real", None, trace, frames=1), f"ttff-marquee-{rep}", sampler=watch)
        m.check("marquee")
        frames = frame_lines(read_trace(trace))
        if not frames:
            sys.exit(f"bench: marquee exited without showing a frame (trace {trace})")
        marquee_exit.append(m.wall)
        if frames and "wall" in frames[0]:
            marquee_first.append(frames[0]["wall"] - started)
        elif first_seen and first_seen[0] < m.wall - 0.02:
            marquee_first.append(first_seen[0])
        p = mpv.run(f"ttff-mpv-{rep}", clip, ["--frames=1"], log_file=True)
        mpv_exit.append(p.wall)
        shown = re.search(r"\[\s*([\d.]+)\]\[v\]\[cplayer\] first video frame after restart shown",
                          p.log_path.read_text(errors="replace"))
        if shown:
            mpv_logged.append(float(shown.group(1)))
    results["first_frame"] = {
        "method": "process start to exit after one presented frame (both); plus first-frame times where measurable",
        "reps": reps,
        "marquee_start_to_exit_s": marquee_exit, "mpv_start_to_exit_s": mpv_exit,
        "median_marquee_s": median(marquee_exit), "median_mpv_s": median(mpv_exit),
        "ratio_marquee_over_mpv": ratio(median(marquee_exit), median(mpv_exit)),
        "marquee_first_frame_s": marquee_first or None,
        "mpv_first_frame_logged_s": mpv_logged or None,
        "median_mpv_first_frame_logged_s": median(mpv_logged),
    }


def bench_loop_memory(marquee, results):
    """Resident size while looping a 1 s clip 1,000 times with the virtual clock. VmRSS is sampled
    every ~5 ms; each sample is keyed by the loop count of the trace lines written so far (the trace
    is read as it grows; between flushes the loop count is interpolated in wall time)."""
    clip = make_media("loop-180p30-1s")
    info = CLIPS["loop-180p30-1s"]
    clip_seconds = info["frames"] / info["fps"]
    loops = 1000
    trace = RUNS / "loops-marquee.jsonl"
    samples = []   # (wall, rss_kb)
    marks = []     # (wall, loops completed according to the trace so far)
    state = {"size": 0, "stopped": False}
    budget_s = 240  # keeps `make bench` within its time: a slower build stops early, and says so

    def sample(pid, t):
        if t > budget_s and not state["stopped"]:
            state["stopped"] = True
            os.kill(pid, signal.SIGTERM)
        rss = proc_status_kb(pid, "VmRSS")
        if rss:
            samples.append((t, rss))
        try:
            size = trace.stat().st_size
        except FileNotFoundError:
            return
        if size != state["size"]:
            state["size"] = size
            with open(trace, "rb") as f:
                f.seek(max(0, size - 4096))
                tail = f.read().decode(errors="replace").splitlines()
            for raw in reversed(tail):
                try:
                    line = json.loads(raw)
                except json.JSONDecodeError:
                    continue
                if "t" in line:
                    marks.append((t, line["t"] / clip_seconds))
                    break

    log(f"  memory: {loops} loops of a {clip_seconds} s clip")
    m = run_measured(marquee.command(clip, "virtual", loops * clip_seconds + 1e-3, trace, mode="640x360@60"),
                     "loops-marquee", sampler=sample).check("marquee")
    lines = read_trace(trace)
    frames = frame_lines(lines)
    runs_seen = 1 + sum(1 for a, b in zip(frames, frames[1:]) if b["pts"] < a["pts"])
    # The first frame is at ~ the time to first frame (when the trace shows nothing earlier).
    ttff = results.get("first_frame", {}).get("median_marquee_s") or 0.3
    points = [(ttff, 0.0)] + [p for p in marks if p[0] > ttff]

    def wall_at(loop):
        for (w0, l0), (w1, l1) in zip(points, points[1:]):
            if l0 <= loop <= l1 and l1 > l0:
                return w0 + (w1 - w0) * (loop - l0) / (l1 - l0)
        return None

    def rss_at(loop):
        # The median over the last tenth of the loops up to `loop` (resident size swings by a few MB
        # as each loop's decoder is opened and freed), or the nearest sample.
        end, begin = wall_at(loop), wall_at(max(0.0, loop - max(1.0, loop / 10)))
        if end is None or not samples:
            return None
        window = [kb for t, kb in samples if (begin if begin is not None else end) <= t <= end]
        if not window:
            window = [min(samples, key=lambda s: abs(s[0] - end))[1]]
        return statistics.median(window) / 1024

    reached = max((l for _, l in points), default=0)
    key_loops = [l for l in [10, 100, 250, 500, 750, 999] if l <= reached]
    by_loop = {str(l): rss_at(l) for l in key_loops}
    after_10 = by_loop.get("10")
    after_1000 = by_loop[str(key_loops[-1])] if key_loops else None
    results["loop_memory"] = {
        "clip": "loop-180p30-1s", "clip_seconds": clip_seconds, "loops_requested": loops, "loops_in_trace": runs_seen,
        "stopped_after_s": budget_s if state["stopped"] else None,
        "last_loop_measured": key_loops[-1] if key_loops else None,
        "wall_s": m.wall, "peak_rss_mb": max(m.max_rss_kb, max((kb for _, kb in samples), default=0)) / 1024,
        "trace_marks": len(marks), "rss_mb_by_loop": by_loop,
        "rss_after_10_loops_mb": after_10, "rss_after_1000_loops_mb": after_1000,
        "growth_mb": (after_1000 - after_10) if after_10 is not None and after_1000 is not None else None,
        "rss_series": [(round(t, 3), kb) for t, kb in samples[:: max(1, len(samples) // 400)]],
    }


def bench_pacing(marquee, results):
    """Virtual clock: every pacing clip at 60 and 59.94 Hz, 2 s looped for 10 s of presentation."""
    out = {}
    seconds = 10
    for refresh_name, refresh in [("60", Fraction(60)), ("59.94", Fraction(60000, 1001))]:
        for fps in PACING_FPS:
            name = f"pacing-360p{fps}"
            clip = make_media(name)
            log(f"  pacing {fps} fps at {refresh_name} Hz")
            trace = RUNS / f"pacing-{fps}-{refresh_name}.jsonl"
            m = run_measured(marquee.command(clip, "virtual", seconds, trace, mode=f"640x360@{refresh_name}"),
                             f"pacing-{fps}-{refresh_name}").check("marquee")
            a = analyse_pacing(read_trace(trace), fps, refresh, CLIPS[name]["frames"])
            a["stopped"] = stopped_counts(m)
            a["trace"] = str(trace.relative_to(HERE))
            out[f"{fps}fps@{refresh_name}Hz"] = a
    results["pacing"] = out
    results["pacing_total_errors"] = sum(v["cadence_errors"] + v["drops"] + v["repeats"] + v["blanks"]
                                         + v["extra_frames"] for v in out.values())


def bench_transition(marquee, results):
    """Issue 18's figure: CPU of marquee (headless, 720p at 60 Hz, 20 s) looping a 2 s 720p30 clip
    with a 1 s crossfade at each loop point against the same clip with cut, at real time and on the
    virtual clock (every vsync drawn whatever the load: the same work in every run). A crossfade
    draws every vsync (60 pictures/s instead of 30) from two pictures; the trace says how many."""
    clip = make_media("h264-720p30-2s")
    seconds = 20
    out = {"clip": "h264-720p30-2s", "seconds": seconds, "mode": "1280x720@60"}
    for run, clock in [("", "real"), ("virtual_", "virtual")]:
        for kind, transition in [("cut", {"type": "cut"}), ("crossfade", {"type": "crossfade", "duration": 1})]:
            name = run + kind
            config = RUNS / f"config-transition-{kind}.json"
            config.write_text(json.dumps({"playlist": [{"uri": str(clip)}], "loop": True, "transition": transition,
                                          "display": {"output": "headless", "mode": "1280x720@60"}}))
            trace = RUNS / f"transition-{name}.jsonl"
            log(f"  transition: {kind}, {seconds} s, {clock} clock")
            m = run_measured([marquee.binary, "--config", str(config), "--output", "headless", "--mode", "1280x720@60",
                              "--clock", clock, "--exit-after", str(seconds), "--trace", str(trace)],
                             f"transition-{name}").check("marquee")
            frames = frame_lines(read_trace(trace))
            mixed = [l for l in frames if "mix" in l]
            out[name] = {"cpu_s": m.cpu, "wall_s": m.wall, "pictures_drawn": len(frames), "mixed_pictures": len(mixed),
                         "cpu_ms_per_second": 1000 * m.cpu / seconds,
                         "cpu_ms_per_picture": 1000 * m.cpu / max(len(frames), 1),
                         "peak_rss_mb": m.max_rss_kb / 1024}
    cut, xf = out["cut"], out["crossfade"]
    out["ratio_cpu_crossfade_over_cut"] = ratio(xf["cpu_s"], cut["cpu_s"])
    out["ratio_cpu_per_picture_crossfade_over_cut"] = ratio(xf["cpu_ms_per_picture"], cut["cpu_ms_per_picture"])
    vcut, vxf = out["virtual_cut"], out["virtual_crossfade"]
    out["virtual_ratio_cpu_crossfade_over_cut"] = ratio(vxf["cpu_s"], vcut["cpu_s"])
    out["virtual_ratio_cpu_per_picture_crossfade_over_cut"] = ratio(vxf["cpu_ms_per_picture"], vcut["cpu_ms_per_picture"])
    # The share of the run spent mixing, and the CPU of a second of crossfade drawn from it.
    share = xf["mixed_pictures"] / (60 * seconds)
    out["mixing_share"] = share
    if share > 0:
        extra = (xf["cpu_ms_per_second"] - cut["cpu_ms_per_second"]) / share
        out["cpu_ms_per_second_while_mixing"] = cut["cpu_ms_per_second"] + extra
        out["ratio_while_mixing_over_cut"] = ratio(out["cpu_ms_per_second_while_mixing"], cut["cpu_ms_per_second"])
    results["transition"] = out


# The width the dashboard asks its screenshots at: its picture's width on a laptop's page.
SCREENSHOT_WIDTH = 640


def bench_http(marquee, results, seconds=20, reps=3):
    """Issue 30's figure: what the HTTP API costs playback. Marquee plays 1080p30 H.264 at real time
    on the 1920x1080 headless output with HTTP off, with HTTP on and nobody asking, and with HTTP on
    while a dashboard polls as dashboard/app.js does (status, playlist and volume every second, the
    output's screenshot every 2 s at the width it shows it, with a view token); the cases
    alternate, medians of CPU seconds (the same presentation time in each). The polling runs in this process: only marquee's CPU is counted."""
    import hashlib
    import socket
    import urllib.request
    clip = make_media("h264-1080p30")
    token = "bench-" + os.urandom(12).hex()
    RUNS.mkdir(parents=True, exist_ok=True)
    tokens = RUNS / "http-tokens"
    tokens.write_text(f"view sha256:{hashlib.sha256(token.encode()).hexdigest()} dashboard\n")
    runs = {"off": [], "idle": [], "polled": []}
    for rep in range(reps):
        for case in runs:
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            config = {"playlist": [{"uri": str(clip)}], "display": {"output": "headless", "mode": "1920x1080@60"}}
            if case != "off":
                config["http"] = {"listen": f"127.0.0.1:{port}", "tokens": str(tokens)}
            path = RUNS / f"config-http-{case}.json"
            path.write_text(json.dumps(config))
            trace = RUNS / f"http-{case}-{rep}.jsonl"
            poll = {"next": 0.0, "tick": 0, "requests": 0, "failed": 0, "screenshots": 0, "output": None, "up": False}

            def get(route):
                request = urllib.request.Request(f"http://127.0.0.1:{port}{route}", headers={"Authorization": "Bearer " + token})
                with urllib.request.urlopen(request, timeout=5) as answer:
                    return answer.read()

            def dashboard(pid, t, poll=poll):
                # Once a second from the first answer on, as the dashboard's timers do (bounded:
                # one round a second for the run's length).
                if t < poll["next"]:
                    return
                poll["next"] = t + 1.0
                try:
                    status = json.loads(get("/api/v1/status"))
                    poll["up"] = True
                    get("/api/v1/playlist")
                    get("/api/v1/properties/volume")
                    poll["requests"] += 3
                    poll["output"] = poll["output"] or (status.get("outputs") or [{}])[0].get("name")
                    poll["tick"] += 1
                    if poll["tick"] % 2 == 0 and poll["output"]:
                        get(f"/api/v1/outputs/{poll['output']}/screenshot?width={SCREENSHOT_WIDTH}")
                        poll["requests"] += 1
                        poll["screenshots"] += 1
                except OSError:
                    # Before the server is up: asked again soon; after: a failed request, counted.
                    poll["failed"] += poll["up"]
                    poll["next"] = t + (1.0 if poll["up"] else 0.1)

            log(f"  http: marquee plays {seconds} s, HTTP {case} ({rep + 1}/{reps})")
            m = run_measured([marquee.binary, "--config", str(path), "--output", "headless", "--mode", "1920x1080@60",
                              "--clock", "real", "--socket", "none", "--exit-after", f"{seconds:.6f}", "--trace", str(trace)],
                             f"http-{case}-{rep}", sampler=dashboard if case == "polled" else None,
                             timeout=seconds + 60).check("marquee")
            shown = len(frame_lines(read_trace(trace)))
            runs[case].append({"cpu_s": m.cpu, "wall_s": m.wall, "presented": shown, "cpu_ms_per_frame": 1000 * m.cpu / max(shown, 1),
                               "cpu_percent": 100 * m.cpu / m.wall, "requests": poll["requests"],
                               "screenshots": poll["screenshots"], "failed_requests": poll["failed"]})
    per_request = http_request_costs(marquee, clip, tokens, token)
    # Every run plays the same presentation time (--exit-after at real time): its CPU seconds
    # compare directly. Per presented frame too (frames dropped under load show there).
    cpu = {case: median([r["cpu_s"] for r in v]) for case, v in runs.items()}
    per_frame = {case: median([r["cpu_ms_per_frame"] for r in v]) for case, v in runs.items()}
    extra = {case: ratio(cpu[case], cpu["off"]) for case in ("idle", "polled")}
    extra_per_frame = {case: ratio(per_frame[case], per_frame["off"]) for case in ("idle", "polled")}
    results["http"] = {"clip": "h264-1080p30", "seconds": seconds, "reps": reps, "runs": runs, "screenshot_width": SCREENSHOT_WIDTH,
                       "per_request": per_request,
                       "cpu_s": cpu, "cpu_ms_per_frame": per_frame,
                       "extra_percent": {case: None if r is None else 100 * (r - 1) for case, r in extra.items()},
                       "extra_percent_per_frame": {case: None if r is None else 100 * (r - 1) for case, r in extra_per_frame.items()}}


def http_request_costs(marquee, clip, tokens, token, rounds=2):
    """What one request costs marquee, more precisely than the runs' difference: one player with
    HTTP on; its CPU rate while nobody asks (0.5 s sleeps), then while requests of one kind come
    back to back; the CPU beyond that rate, per request (ms)."""
    import socket
    import urllib.request
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    path = RUNS / "config-http-requests.json"
    path.write_text(json.dumps({"playlist": [{"uri": str(clip)}], "display": {"output": "headless", "mode": "1920x1080@60"},
                                "http": {"listen": f"127.0.0.1:{port}", "tokens": str(tokens), "requestsPerSecond": 1000}}))

    def get(route):
        request = urllib.request.Request(f"http://127.0.0.1:{port}{route}", headers={"Authorization": "Bearer " + token})
        with urllib.request.urlopen(request, timeout=20) as answer:
            return answer.read()

    log("  http: what each request costs (one player, requests back to back)")
    player = subprocess.Popen([marquee.binary, "--config", str(path), "--output", "headless", "--mode", "1920x1080@60",
                               "--clock", "real", "--socket", "none", "--exit-after", "300"],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kinds = [("screenshot", 10, "/api/v1/outputs/headless-0/screenshot"),
             (f"screenshot at {SCREENSHOT_WIDTH} px", 20, f"/api/v1/outputs/headless-0/screenshot?width={SCREENSHOT_WIDTH}"),
             ("status", 100, "/api/v1/status"), ("playlist", 100, "/api/v1/playlist")]
    spent = {name: [0.0, 0.0, 0] for name, _, _ in kinds}
    idle = [0.0, 0.0]
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                get("/api/v1/health")
                break
            except OSError:
                if time.monotonic() > deadline:
                    return {"error": "the HTTP API did not answer within 20 s"}
                time.sleep(0.1)
        time.sleep(2)
        for _ in range(rounds):
            for name, count, route in [("idle", 12, None)] + kinds:
                cpu, start = proc_cpu_seconds(player.pid), time.monotonic()
                for _ in range(count):
                    get(route) if route else time.sleep(0.5)
                used, wall = proc_cpu_seconds(player.pid) - cpu, time.monotonic() - start
                if route:
                    spent[name][0] += used
                    spent[name][1] += wall
                    spent[name][2] += count
                else:
                    idle[0] += used
                    idle[1] += wall
    finally:
        player.terminate()
        player.wait()
    rate = idle[0] / idle[1]
    return {"playback_cpu_percent": 100 * rate,
            "ms_per_request": {name: 1000 * (cpu - rate * wall) / n for name, (cpu, wall, n) in spent.items()}}


def http_markdown(h):
    lines = ["", "## 11. HTTP API: playback CPU with a dashboard polling", ""]
    if not h:
        return lines + ["Not measured yet (`bench.py --only http`).", ""]
    lines += [f"1080p30 H.264 at real time on the 1920x1080 headless output for {h['seconds']} s: HTTP off, HTTP on with "
              "nobody asking, HTTP on while a dashboard polls as `dashboard/app.js` does (status, playlist and volume "
              f"every second, a PNG screenshot of the output every 2 s at {h.get('screenshot_width', 'full')} pixels wide, "
              "with a `view` token). The cases alternate "
              f"({h['reps']} rounds); medians. CPU: user + system of the marquee process, start to exit.", "",
              "| case | CPU s (median) | more than off | CPU ms per presented frame | more than off | runs (CPU s, frames, requests, failed) |",
              "|---|---|---|---|---|---|"]
    for case, label in (("off", "HTTP off"), ("idle", "HTTP on, idle"), ("polled", "HTTP on, dashboard polling")):
        each = ", ".join(f"{r['cpu_s']:.2f} ({r['presented']}, {r['requests']}, {r['failed_requests']})" for r in h["runs"][case])
        more = "" if case == "off" else fmt(h["extra_percent"][case], 1, "%")
        more_frame = "" if case == "off" else fmt(h["extra_percent_per_frame"][case], 1, "%")
        lines.append(f"| {label} | {fmt(h['cpu_s'][case], 2)} | {more} | {fmt(h['cpu_ms_per_frame'][case], 2)} | {more_frame} | {each} |")
    polled = h["extra_percent"]["polled"]
    lines += ["", f"With the dashboard polling, playback costs **{fmt(polled, 1, '%')}** more CPU than with HTTP off "
              f"(goal: at most 2%: {goal(None if polled is None else polled <= 2)}).", ""]
    pr = h.get("per_request") or {}
    if "ms_per_request" in pr:
        each = pr["ms_per_request"]
        shot = each.get(f"screenshot at {h.get('screenshot_width')} px")
        json_ms = (each.get("status", 0) + each.get("playlist", 0)) / 2
        # The dashboard: 3 JSON requests a second, a screenshot every 2 s.
        share = None if shot is None else (shot / 2 + 3 * json_ms) / (10 * pr["playback_cpu_percent"])
        lines += [f"Each request alone (one player, requests back to back, CPU beyond its playback's "
                  f"{pr['playback_cpu_percent']:.1f}% of a core): " + ", ".join(f"{k} {v:.1f} ms" for k, v in each.items())
                  + (f". So the dashboard's polling costs about **{fmt(100 * share, 1, '%')}** of playback's CPU." if share is not None else "."), ""]
    elif pr:
        lines += [f"Per request: not measured ({pr.get('error')}).", ""]
    return lines


# --------------------------------------------------------------------------------------------------
# Machine, report, plot

def bench_layer(marquee_binary, results):
    """Issue 5's figure: upload + draw time per 1080p frame for each pixel format (layerbench, built
    next to marquee)."""
    layerbench = marquee_binary.parent / "layerbench"
    if not os.access(layerbench, os.X_OK):
        results["layer"] = {"error": f"{layerbench} is not built"}
        return
    done = subprocess.run([str(layerbench), "--frames", "20"], capture_output=True, text=True, timeout=600)
    rows = []
    for line in done.stdout.splitlines():
        m = re.match(r"^(\S+) \(([^)]*)\)\s+([\d.]+) ms/frame\s+\(best\s+([\d.]+)\)\s+textures (\d+)", line)
        if m:
            rows.append({"format": m.group(1), "path": m.group(2), "ms_mean": float(m.group(3)),
                         "ms_best": float(m.group(4)), "textures": int(m.group(5))})
    results["layer"] = {"rows": rows, "header": done.stdout.splitlines()[0] if done.stdout else "",
                        "status": done.returncode}


def bench_before_after(marquee, before, reps, results):
    """The same measures for an earlier build (`--before`) and this one, alternated in one run (A B,
    then B A): so a change is judged against the machine's load of the same minutes. Throughput of
    1080p H.264 on the virtual clock, CPU per frame and peak memory playing it 10 s at real time,
    start to exit after the first frame, and a 1 s clip looped 60 times on the virtual clock."""
    clip = make_media("h264-1080p30")
    loop_clip = make_media("loop-180p30-1s")
    loop_info = CLIPS["loop-180p30-1s"]
    loop_seconds = 60 * loop_info["frames"] / loop_info["fps"]
    players = {"before": before, "after": marquee}
    keys = ("fps", "cpu_ms_per_frame", "rt_cpu_ms_per_frame", "rt_peak_rss_mb", "rt_dropped", "first_frame_s",
            "loop_cpu_s", "loop_peak_rss_mb")
    runs = {name: {k: [] for k in keys} for name in players}
    for rep in range(reps):
        order = list(players.items()) if rep % 2 == 0 else list(reversed(players.items()))
        for name, player in order:
            log(f"  before/after: {name}, run {rep + 1}/{reps}")
            r = runs[name]
            trace = RUNS / f"ba-tp-{name}-{rep}.jsonl"
            m = run_measured(player.command(clip, "virtual", 120 / 30, trace), f"ba-tp-{name}-{rep}").check(name)
            shown = len(frame_lines(read_trace(trace)))
            r["fps"].append(shown / m.wall)
            r["cpu_ms_per_frame"].append(1000 * m.cpu / max(shown, 1))
            trace = RUNS / f"ba-rt-{name}-{rep}.jsonl"
            m = run_measured(player.command(clip, "real", 10, trace), f"ba-rt-{name}-{rep}").check(name)
            shown = len(frame_lines(read_trace(trace)))
            counts = stopped_counts(m)
            r["rt_cpu_ms_per_frame"].append(1000 * m.cpu / max(shown, 1))
            r["rt_peak_rss_mb"].append(m.max_rss_kb / 1024)
            r["rt_dropped"].append(sum(counts.get(k, 0) for k in ("dropped", "cadence-dropped", "decoder-dropped")))
            trace = RUNS / f"ba-ff-{name}-{rep}.jsonl"
            m = run_measured(player.command(clip, "real", None, trace, frames=1), f"ba-ff-{name}-{rep}").check(name)
            r["first_frame_s"].append(m.wall)
            trace = RUNS / f"ba-loop-{name}-{rep}.jsonl"
            m = run_measured(player.command(loop_clip, "virtual", loop_seconds, trace, mode="640x360@60"),
                             f"ba-loop-{name}-{rep}").check(name)
            r["loop_cpu_s"].append(m.cpu)
            r["loop_peak_rss_mb"].append(m.max_rss_kb / 1024)
    medians = {name: {k: median(v) for k, v in r.items()} for name, r in runs.items()}
    results["before_after"] = {
        "before": str(before.label), "after": marquee_label(results), "reps": reps, "runs": runs, "median": medians,
        "ratio_after_over_before": {k: ratio(medians["after"][k], medians["before"][k]) for k in keys if k != "rt_dropped"},
    }


# The start's marks in the trace's `startup` line (Diagnostics/StartupMarks.swift), in the order
# they come when every step waits for the one before.
STARTUP_MARKS = [
    ("main", "main entered (loader, libraries' constructors, Swift runtime)"),
    ("config-read", "arguments and config read"),
    ("output-chosen", "output kind chosen"),
    ("output-open-start", "trace file opened"),
    ("early-probed", "first item's file opened early, beside the output's opening (`EarlyStart`)"),
    ("early-decoded", "first item's first frame decoded early, in software on one thread (`EarlyStart`; the preroll's two more follow)"),
    ("egl-context", "EGL display initialised, context made (the GL driver loaded)"),
    ("layer-made", "offscreen target (a 1080p RGBA texture) and player layer made"),
    ("output-open", "output open (its capabilities read)"),
    ("session-made", "session made (players, sound, control)"),
    ("probed", "first item probed"),
    ("early-taken", "the first reader took the early decoder and its frames (`EarlyStart`)"),
    ("decoder-open", "decoder open"),
    ("first-decoded", "first frame decoded"),
    ("prerolled", "preroll's frames decoded"),
    ("first-upload", "first picture converted and uploaded"),
    ("first-present", "first picture drawn and shown"),
]


def loader_statistics(binary, args):
    """The dynamic loader's own figures for one start (LD_DEBUG=statistics): milliseconds (its
    cycles at the CPU's clock, /proc/cpuinfo) and relocations; and how many libraries it maps."""
    env = dict(os.environ, LD_DEBUG="statistics")
    done = subprocess.run([binary] + args, env=env, capture_output=True, text=True, timeout=60)
    text = done.stderr
    cycles = re.search(r"total startup time in dynamic loader: (\d+) cycles", text)
    relocations = re.search(r"number of relocations: (\d+)", text)
    mhz = machine().get("cpu_mhz")
    listed = subprocess.run([binary], env=dict(os.environ, LD_TRACE_LOADED_OBJECTS="1"), capture_output=True,
                            text=True, timeout=60).stdout
    return {"cycles": int(cycles.group(1)) if cycles else None,
            "ms": int(cycles.group(1)) / (mhz * 1000) if cycles and mhz else None,
            "relocations": int(relocations.group(1)) if relocations else None,
            "libraries": sum(1 for l in listed.splitlines() if "=>" in l or l.strip().startswith("/"))}


def bench_startup(players, reps, results):
    """Where the time from exec to the first picture goes: Marquee's trace writes a `startup` line
    of monotonic-clock marks at its first picture; the exec is the benchmark's own monotonic time
    just before it starts the process (so the first phase includes the fork and exec). Start to
    exit after one picture, 1080p30 H.264, real clock, headless; medians of `reps` runs.
    `players`: (label, Marquee) pairs, run alternated (A B, then B A) when there are two, each
    kept under its label in results.json (labels measured in earlier runs are kept)."""
    clip = make_media("h264-1080p30")
    runs = {label: [] for label, _ in players}
    for rep in range(reps):
        for label, player in (players if rep % 2 == 0 else list(reversed(players))):
            log(f"  startup, {label}, run {rep + 1}/{reps}")
            trace = RUNS / f"startup-{label}-{rep}.jsonl"
            started = time.monotonic()
            m = run_measured(player.command(clip, "real", None, trace, frames=1), f"startup-{label}-{rep}").check(label)
            line = next((l for l in read_trace(trace) if l.get("type") == "startup"), None)
            if not line:
                sys.exit(f"bench: {player.binary} wrote no startup line (trace {trace}): a build from before the marks?")
            marks = {name: 1000 * (t - started) for name, t in line["marks"].items()}
            marks["exit"] = 1000 * m.wall
            runs[label].append(marks)

    # Each mark's time after the mark just before it in the same run (marks of threads that run
    # side by side may come in another order than the list's).
    def before(r, n):
        earlier = [t for k, t in r.items() if k != n and t <= r[n]]
        return max(earlier) if earlier else 0.0

    for label, player in players:
        names = {n for r in runs[label] for n in r}
        entry = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
                 "marquee": player.label or marquee_label(results), "binary": player.binary,
                 "alternated_with": [l for l, _ in players if l != label],
                 "load_average": os.getloadavg(), "reps": reps, "runs": runs[label],
                 "median_since_exec_ms": {n: median([r[n] for r in runs[label] if n in r]) for n in names},
                 "median_since_previous_ms": {n: median([r[n] - before(r, n) for r in runs[label] if n in r]) for n in names},
                 "loader": loader_statistics(player.binary, player.command(clip, "real", None, RUNS / "startup-ld.jsonl",
                                                                            frames=1)[1:])}
        results.setdefault("startup", {})[label] = entry


def startup_markdown(st):
    if not st:
        return []
    labels = list(st)
    lines = ["", "## 12. Where the start goes", "",
             "1080p30 H.264, headless, `--clock real --frames 1`: the time of each step of the start after the "
             "benchmark started the process (fork and exec included), from the monotonic-clock marks Marquee's trace "
             "writes at its first picture (`type: startup`); medians of each run's figures. \"after the step "
             "before\": after the mark that came just before it in that run (steps on other threads may overlap)."]
    for label in labels:
        e = st[label]
        ld = e["loader"]
        lines.append("")
        alternated = f" (alternated with {', '.join(e['alternated_with'])} in one run)" if e.get("alternated_with") else ""
        lines.append(f"- {label}: Marquee {e['marquee']}, {e['date']}, load average {e['load_average'][0]:.2f}, "
                     f"{e['reps']} runs{alternated}; the dynamic loader (`LD_DEBUG=statistics`): {fmt(ld['ms'], 1)} ms "
                     f"({ld['relocations']} relocations, {ld['libraries']} libraries)")
    header = "| step | " + " | ".join(f"{l}: ms after exec | {l}: ms after the step before" for l in labels) + " |"
    lines += ["", header, "|---|" + "---|---|" * len(labels)]
    names = [n for n, _ in STARTUP_MARKS] + ["exit"]
    described = dict(STARTUP_MARKS, exit="process exited")
    for n in names:
        if not any(n in st[l]["median_since_exec_ms"] for l in labels):
            continue
        cells = []
        for l in labels:
            cells += [fmt(st[l]["median_since_exec_ms"].get(n), 1), fmt(st[l]["median_since_previous_ms"].get(n), 1)]
        lines.append(f"| {described[n]} (`{n}`) | " + " | ".join(cells) + " |")
    return lines


# What a resident page is, from its mapping in /proc/PID/smaps (first match wins).
MEMORY_FILE_KINDS = [
    ("GL driver: Mesa and LLVM (files)", re.compile(r"libLLVM|/dri/|libgallium|libglapi|libEGL_mesa|libGLX_mesa")),
    ("Swift runtime and Foundation (files)", re.compile(r"/swift/|libswift|Foundation|libdispatch|libBlocksRuntime")),
    ("FFmpeg and its codecs (files)", re.compile(r"libav|libsw|libpostproc|libx26|libdav1d|libvpx|libaom|libSvt|librav1e|"
                                                  r"libopenmpt|libcodec2|libzvbi|libmfx|libjxl|libhwy|librsvg")),
]


def memory_map(pid):
    """Resident memory of `pid` by kind (MB): file-backed pages by library group; anonymous pages
    as the main heap, other malloc arenas (64 MB aligned reservations), thread stacks (8 MB
    mappings mostly untouched), large blocks (a mapping of 1 MB or more resident: picture buffers,
    textures, pools) and the rest. None once the process is gone."""
    try:
        text = Path(f"/proc/{pid}/smaps").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    kinds = {}
    current = None

    def add(kind, kb):
        kinds[kind] = kinds.get(kind, 0) + kb / 1024

    mappings = []
    for line in text.splitlines():
        m = re.match(r"^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$", line)
        if m:
            current = {"start": int(m.group(1), 16), "size_kb": (int(m.group(2), 16) - int(m.group(1), 16)) // 1024,
                       "name": m.group(4).strip(), "rss": 0, "anon": 0}
            mappings.append(current)
        elif current is not None and line.startswith("Rss:"):
            current["rss"] = int(line.split()[1])
        elif current is not None and line.startswith("Anonymous:"):
            current["anon"] = int(line.split()[1])
    for m in mappings:
        name, file_kb, anon_kb = m["name"], m["rss"] - m["anon"], m["anon"]
        if file_kb > 0 and name.startswith("/"):
            add(next((k for k, pattern in MEMORY_FILE_KINDS if pattern.search(name)), "other files (libraries, executable)"), file_kb)
        if anon_kb <= 0:
            continue
        if name == "[heap]":
            add("anonymous: main heap (brk)", anon_kb)
        elif name.startswith("[stack"):
            add("anonymous: thread stacks", anon_kb)
        elif name.startswith("/"):
            add("anonymous: libraries' written pages (relocations, data)", anon_kb)
        elif m["start"] % (64 << 20) == 0 and m["size_kb"] <= 64 << 10:
            add("anonymous: other malloc arenas", anon_kb)
        elif 8000 <= m["size_kb"] <= 8200 and anon_kb < 1024:
            add("anonymous: thread stacks", anon_kb)
        elif anon_kb >= 1024:
            add("anonymous: large blocks (pictures, textures, pools)", anon_kb)
        else:
            add("anonymous: small mappings", anon_kb)
    return kinds


def bench_memory(marquee, mpv, results, seconds=10):
    """What resident memory is made of while 1080p30 H.264 plays at real time: smaps sampled every
    0.25 s, the sample with the largest total kept (Marquee headless; mpv through EGL under Xvfb,
    its GL driver in its own process as Marquee's is)."""
    clip = make_media("h264-1080p30")
    out = {"clip": "h264-1080p30", "seconds": seconds}
    for name in ("marquee", "mpv"):
        peak = {"total": 0, "kinds": {}}
        last = [0.0]

        def sample(pid, t, peak=peak, last=last):
            if t - last[0] < 0.25:
                return
            last[0] = t
            kinds = memory_map(pid)
            if kinds and sum(kinds.values()) > peak["total"]:
                peak["total"], peak["kinds"], peak["t"] = sum(kinds.values()), kinds, t

        log(f"  memory: {name} plays {seconds} s")
        if name == "marquee":
            m = run_measured(marquee.command(clip, "real", seconds, RUNS / "memory-marquee.jsonl"), "memory-marquee",
                             sampler=sample).check("marquee")
        else:
            cmd = list(Mpv.BASE) + [f"--length={seconds}", str(clip)]
            m = run_measured(cmd, "memory-mpv", env=mpv.env, sampler=sample).check("mpv")
        out[name] = {"peak_sampled_mb": peak["total"], "at_s": peak.get("t"), "kinds_mb": peak["kinds"],
                     "peak_rss_mb": m.max_rss_kb / 1024}
    results["memory"] = out


def memory_markdown(mem):
    if not mem:
        return []
    kinds = sorted({k for p in ("marquee", "mpv") for k in mem[p]["kinds_mb"]},
                   key=lambda k: (k.startswith("anonymous"), -mem["marquee"]["kinds_mb"].get(k, 0)))
    lines = ["", "## 13. What the resident memory is", "",
             f"1080p30 H.264 at real time for {mem['seconds']} s (Marquee headless; mpv through EGL under Xvfb, its GL "
             "driver in its own process too): `/proc/PID/smaps` every 0.25 s, the sample with the most resident memory, "
             "by kind of mapping (MB). File pages are shared with other processes and the page cache; anonymous pages are "
             "the process's own.", "",
             "| kind | Marquee | mpv |", "|---|---|---|"]
    for k in kinds:
        lines.append(f"| {k} | {fmt(mem['marquee']['kinds_mb'].get(k, 0))} | {fmt(mem['mpv']['kinds_mb'].get(k, 0))} |")
    for label, key in (("all (the sample)", "peak_sampled_mb"), ("peak resident size of the run (getrusage)", "peak_rss_mb")):
        lines.append(f"| {label} | {fmt(mem['marquee'][key])} | {fmt(mem['mpv'][key])} |")
    return lines


class GStreamer:
    """gst-launch-1.0 with decodebin (playbin's own autoplugging) and an `identity eos-after=N` to
    stop after N frames; glimagesink through EGL (OpenGL ES) on llvmpipe under the bench's Xvfb,
    as mpv's output is."""

    def __init__(self, xvfb):
        self.xvfb = xvfb
        self.env = dict(os.environ, DISPLAY=xvfb.display, GST_GL_PLATFORM="egl", GST_GL_API="gles2", GST_GL_WINDOW="x11")
        self.env.pop("WAYLAND_DISPLAY", None)

    @staticmethod
    def available():
        return shutil.which("gst-launch-1.0") is not None

    def command(self, clip, frames, sink, sync, verbose=False):
        if sink == "glimagesink" and verbose:
            sink_el = ["fpsdisplaysink", "video-sink=glimagesink", "text-overlay=false", "fps-update-interval=100",
                       f"sync={'true' if sync else 'false'}"]
        else:
            sink_el = [sink, f"sync={'true' if sync else 'false'}"]
        return (["gst-launch-1.0", "-v" if verbose else "-q", "filesrc", f"location={clip}", "!", "decodebin", "!",
                 "identity", f"eos-after={frames}", "!"] + sink_el)

    def run(self, name, clip, frames, sink, sync, verbose=False):
        x_before = self.xvfb.cpu_seconds()
        cmd = self.command(clip, frames, sink, sync, verbose)
        if verbose:
            # -v's messages (fpsdisplaysink's counts) go to standard output: into the stderr file.
            cmd = ["sh", "-c", 'exec "$@" 1>&2', "sh"] + cmd
        m = run_measured(cmd, name, env=self.env).check(name)
        m.xvfb_cpu = self.xvfb.cpu_seconds() - x_before
        return m

    def version(self):
        done = subprocess.run(["gst-launch-1.0", "--version"], capture_output=True, text=True)
        return next((l for l in done.stdout.splitlines() if "GStreamer" in l), "GStreamer")


def gst_rendered(measured):
    """fpsdisplaysink's last counts (rendered, dropped) from gst-launch -v's output."""
    text = Path(measured.stderr_path).read_text(errors="replace")
    found = re.findall(r"rendered: (\d+), dropped: (\d+)", text)
    return (int(found[-1][0]), int(found[-1][1])) if found else (None, None)


def bench_gstreamer(marquee, mpv, reps, results):
    """GStreamer beside Marquee and mpv, alternated in one run: untimed throughput (decode only
    into fakesink, and decode + draw into glimagesink), CPU per presented frame and peak memory
    at real time, start to exit after the first frame. 1080p30 H.264."""
    if not GStreamer.available():
        log("bench: gstreamer skipped: no gst-launch-1.0 (make bench installs gstreamer1.0-tools)")
        return
    gst = GStreamer(mpv.xvfb)
    clip = make_media("h264-1080p30")
    frames, seconds = 120, 10
    keys = ["marquee", "mpv", "gst_decode", "gst_draw"]
    tp = {k: {"fps": [], "cpu_ms": []} for k in keys}
    for rep in range(reps):
        log(f"  gstreamer: throughput run {rep + 1}/{reps}")
        for k in (keys if rep % 2 == 0 else list(reversed(keys))):
            if k == "marquee":
                trace = RUNS / f"gst-tp-marquee-{rep}.jsonl"
                m = run_measured(marquee.command(clip, "virtual", frames / 30, trace), f"gst-tp-marquee-{rep}").check("marquee")
                shown = len(frame_lines(read_trace(trace)))
            elif k == "mpv":
                m = mpv.run(f"gst-tp-mpv-{rep}", clip, ["--untimed", f"--frames={frames}"])
                shown = frames
            else:
                m = gst.run(f"gst-tp-{k}-{rep}", clip, frames, "fakesink" if k == "gst_decode" else "glimagesink", False)
                shown = frames
            tp[k]["fps"].append(shown / m.wall)
            tp[k]["cpu_ms"].append(1000 * m.cpu / max(shown, 1))
    log(f"  gstreamer: real time, {seconds} s each")
    rt = {}
    trace = RUNS / "gst-rt-marquee.jsonl"
    m = run_measured(marquee.command(clip, "real", seconds, trace), "gst-rt-marquee").check("marquee")
    shown = len(frame_lines(read_trace(trace)))
    rt["marquee"] = {"presented": shown, "cpu_s": m.cpu, "cpu_ms_per_frame": 1000 * m.cpu / max(shown, 1),
                     "peak_rss_mb": m.max_rss_kb / 1024}
    p = mpv.run("gst-rt-mpv", clip, [f"--length={seconds}"], stats=True)
    decoded = p.stats.get("estimated-frame-number")
    dropped = p.stats.get("frame-drop-count", 0) + p.stats.get("decoder-frame-drop-count", 0)
    shown = (decoded - dropped) if decoded else None
    rt["mpv"] = {"presented": shown, "dropped": dropped, "cpu_s": p.cpu, "xvfb_cpu_s": p.xvfb_cpu,
                 "cpu_ms_per_frame": 1000 * p.cpu / shown if shown else None, "peak_rss_mb": p.max_rss_kb / 1024}
    g = gst.run("gst-rt-gst", clip, 30 * seconds, "glimagesink", True, verbose=True)
    rendered, gdropped = gst_rendered(g)
    rt["gst"] = {"presented": rendered, "dropped": gdropped, "cpu_s": g.cpu, "xvfb_cpu_s": g.xvfb_cpu,
                 "cpu_ms_per_frame": 1000 * g.cpu / rendered if rendered else None, "peak_rss_mb": g.max_rss_kb / 1024}
    ff = {"marquee": [], "mpv": [], "gst": []}
    for rep in range(max(reps, 5)):
        log(f"  gstreamer: first frame, run {rep + 1}/{max(reps, 5)}")
        for k in (list(ff) if rep % 2 == 0 else list(reversed(list(ff)))):
            if k == "marquee":
                m = run_measured(marquee.command(clip, "real", None, RUNS / f"gst-ff-marquee-{rep}.jsonl", frames=1),
                                 f"gst-ff-marquee-{rep}").check("marquee")
            elif k == "mpv":
                m = mpv.run(f"gst-ff-mpv-{rep}", clip, ["--frames=1"])
            else:
                m = gst.run(f"gst-ff-gst-{rep}", clip, 1, "glimagesink", True)
            ff[k].append(m.wall)
    results["gstreamer"] = {
        "version": gst.version(), "clip": "h264-1080p30", "reps": reps, "frames": frames, "seconds": seconds,
        "load_average": os.getloadavg(),
        "throughput": {k: {"fps": v["fps"], "median_fps": median(v["fps"]), "median_cpu_ms": median(v["cpu_ms"])}
                       for k, v in tp.items()},
        "realtime": rt, "first_frame_s": ff, "median_first_frame_s": {k: median(v) for k, v in ff.items()},
    }


def gstreamer_markdown(gs):
    if not gs:
        return []
    tp, rt, ff = gs["throughput"], gs["realtime"], gs["median_first_frame_s"]
    lines = ["", "## 14. GStreamer beside Marquee and mpv", "",
             f"{gs['version']}: `gst-launch-1.0 filesrc ! decodebin ! identity eos-after=N ! SINK` (decodebin is playbin's "
             "own autoplugging: avdec_h264 here), glimagesink through EGL (OpenGL ES) on llvmpipe under the bench's Xvfb "
             f"as mpv's output. 1080p30 H.264; the three alternated in one run (load average {gs['load_average'][0]:.2f} "
             "at its end).", "",
             f"Untimed, {gs['frames']} frames, start to exit (median of {gs['reps']}):", "",
             "| | Marquee (virtual clock, headless) | mpv (`--untimed`) | GStreamer, fakesink (decode only) | GStreamer, glimagesink |",
             "|---|---|---|---|---|",
             "| frames per second | " + " | ".join(fmt(tp[k]["median_fps"]) for k in ("marquee", "mpv", "gst_decode", "gst_draw")) + " |",
             "| CPU ms per frame | " + " | ".join(fmt(tp[k]["median_cpu_ms"]) for k in ("marquee", "mpv", "gst_decode", "gst_draw")) + " |",
             "", f"Real time, {gs['seconds']} s (Marquee headless; mpv and GStreamer into Xvfb: its CPU not counted; "
             "GStreamer's counts are fpsdisplaysink's last report, every 0.1 s):", "",
             "| | Marquee | mpv | GStreamer (glimagesink) |", "|---|---|---|---|",
             "| frames presented (dropped) | " + " | ".join(
                 f"{rt[k]['presented']} ({rt[k].get('dropped', 0)})" for k in ("marquee", "mpv", "gst")) + " |",
             "| CPU ms per presented frame | " + " | ".join(fmt(rt[k]["cpu_ms_per_frame"]) for k in ("marquee", "mpv", "gst")) + " |",
             "| peak resident size MB | " + " | ".join(fmt(rt[k]["peak_rss_mb"]) for k in ("marquee", "mpv", "gst")) + " |",
             "", "Start to exit after the first frame (s, median of "
             f"{len(gs['first_frame_s']['marquee'])}): Marquee {fmt(ff['marquee'], 3)}, mpv {fmt(ff['mpv'], 3)}, "
             f"GStreamer {fmt(ff['gst'], 3)} (Marquee / GStreamer {fmt(ratio(ff['marquee'], ff['gst']), 2)}x).", "",
             "GStreamer into fakesink only decodes: it shows nothing, so it is the decoder's own rate (Marquee, which also "
             "converts and draws each frame into the picture it shows, is at "
             f"{fmt(ratio(tp['marquee']['median_fps'], tp['gst_decode']['median_fps']), 2)}x of it); the player to compare "
             "with is glimagesink. On a KMS display (the QEMU guest), GStreamer's kmssink beside `mpv --vo=drm` and "
             "Marquee's planes path: bench/VM.md."]
    return lines



# --------------------------------------------------------------------------------------------------
# Glass to glass: an RTSP stream's frame number, from the source to each player's picture

GLASS_PLAYERS = ["marquee", "marquee_tight", "marquee_lowlat", "mpv", "gst"]
GLASS_LABELS = {"marquee_before": "Marquee (--before)", "marquee": "Marquee", "marquee_tight": "Marquee, `liveLatency` 0.1",
                "marquee_lowlat": "Marquee, `live.mode` `low-latency`", "mpv": "mpv `--profile=low-latency`",
                "gst": "GStreamer `rtspsrc latency=0`"}


class IPC:
    """One connection to an mpv-style JSON IPC socket (Marquee's or mpv's)."""

    def __init__(self, path, within=20):
        import socket as sockets
        deadline = time.monotonic() + within
        while True:
            try:
                self.s = sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM)
                self.s.connect(str(path))
                break
            except OSError:
                self.s.close()
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{path}: no IPC socket within {within} s")
                time.sleep(0.1)
        self.s.settimeout(10)
        self.buffer, self.next_id = b"", 1

    def request(self, command):
        """The reply (a dict) to `command`; events on the way are skipped."""
        rid, self.next_id = self.next_id, self.next_id + 1
        self.s.sendall(json.dumps({"command": command, "request_id": rid}).encode() + b"\n")
        while True:
            while b"\n" not in self.buffer:
                chunk = self.s.recv(1 << 20)
                if not chunk:
                    raise RuntimeError("IPC socket closed")
                self.buffer += chunk
            line, self.buffer = self.buffer.split(b"\n", 1)
            reply = json.loads(line)
            if reply.get("request_id") == rid and "event" not in reply:
                return reply

    def close(self):
        self.s.close()


def glass_counters(folder, shots):
    """The frame number each screenshot shows (None where it does not read cleanly): the PNGs made
    grey and 640x360 by one ffmpeg, read like the GStreamer player's buffers (g2g.read_counter)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("g2g", HERE / "g2g.py")
    g2g = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(g2g)
    if not shots:
        return []
    raw = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-f", "image2", "-i", str(folder / "%05d.png"),
                          "-vf", f"scale={g2g.WIDTH}:{g2g.HEIGHT},format=gray", "-f", "rawvideo", "pipe:1"],
                         capture_output=True, check=True).stdout
    size = g2g.WIDTH * g2g.HEIGHT
    return [g2g.read_counter(raw[i * size:(i + 1) * size], g2g.WIDTH, g2g.HEIGHT) if (i + 1) * size <= len(raw) else None
            for i in range(len(shots))]


def glass_screenshots(ipc, folder, seconds, interval, file_of):
    """Screenshots for `seconds` (at most one per `interval`, bounded in count): (request time,
    reply time) each; `file_of(i, reply)` writes shot i's PNG."""
    folder.mkdir(parents=True, exist_ok=True)
    shots, end = [], time.monotonic() + seconds
    while time.monotonic() < end and len(shots) < int(seconds / interval) + 1:
        began = time.monotonic()
        asked = time.time()
        reply = ipc.request(file_of(len(shots)))
        answered = time.time()
        if reply.get("error") == "success":
            picture = reply.get("data")
            if isinstance(picture, dict) and picture.get("format") == "png":  # Marquee's: in the reply
                (folder / f"{len(shots):05d}.png").write_bytes(base64.b64decode(picture["data"]))
            if (folder / f"{len(shots):05d}.png").exists():  # mpv's: the file it wrote
                shots.append((asked, answered))
        time.sleep(max(0.0, interval - (time.monotonic() - began)))
    return shots


def bench_glass(marquee, xvfb, results, rounds=3, seconds=12.0, settle=3.0, interval=0.1, before=None):
    """Glass-to-glass latency of one RTSP stream on loopback (bench/g2g.py's source: each frame's
    number drawn as blocks, its hand-over time logged), read back from each player's picture:
    Marquee (headless, the control socket's screenshot), mpv (`--profile=low-latency`, `--vo=gpu`
    under Xvfb, IPC `screenshot-to-file ... window`), GStreamer (appsink sync=true, each buffer
    read as the sink takes it). The players alternate, `rounds` runs of `seconds` each; the first
    `settle` s of each run (connecting, the first key frame) are left out. `before`: an earlier
    marquee binary, alternated with the others too."""
    players = (["marquee_before"] if before else []) + GLASS_PLAYERS
    if not GStreamer.available() or not Path("/usr/bin/python3").exists():
        log("bench: glass skipped: needs gst-launch-1.0 and Debian's python3-gi (make bench installs them)")
        return
    folder = RUNS / "glass"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    source_log = folder / "source.log"
    total = rounds * len(players) * (seconds + 15) + 60
    source = subprocess.Popen([str(HERE / "g2g.py"), "source", "127.0.0.1", str(source_log), str(total)],
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        line = source.stdout.readline().decode()
        if not line.startswith("port "):
            raise RuntimeError(f"glass: the RTSP source did not start ({line!r})")
        url = f"rtsp://127.0.0.1:{int(line.split()[1])}/counter"
        runs = {k: [] for k in players}
        for r in range(rounds):
            order = players if r % 2 == 0 else list(reversed(players))
            for k in order:
                log(f"  glass: round {r + 1}/{rounds}, {k}")
                runs[k].append(glass_run(k, url, before if k == "marquee_before" else marquee, xvfb, folder / f"{k}-{r}",
                                         seconds, settle, interval))
    finally:
        source.kill()
        source.wait()
    sent = {}
    for line in source_log.read_text().splitlines():
        n, t = line.split()
        sent[int(n)] = float(t)
    summary = {}
    for k, player_runs in runs.items():
        latencies, round_trips, unread = [], [], 0
        for run in player_runs:
            run["latency_ms"] = []
            for n, t, rt in run.pop("readings"):
                if t - run["began"] < settle:
                    continue
                if n is None:
                    unread += 1
                elif n in sent:
                    run["latency_ms"].append(1000 * (t - sent[n]))
                    if rt is not None:
                        round_trips.append(1000 * rt)
            latencies += run["latency_ms"]
            run["median_ms"] = median(run["latency_ms"]) if run["latency_ms"] else None
            run["readings"] = len(run.pop("latency_ms"))
        ordered = sorted(latencies)
        summary[k] = {"readings": len(ordered), "unread": unread,
                      "median_ms": median(ordered) if ordered else None,
                      "p95_ms": ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] if ordered else None,
                      "min_ms": ordered[0] if ordered else None, "max_ms": ordered[-1] if ordered else None,
                      "run_medians_ms": [run["median_ms"] for run in player_runs],
                      "screenshot_round_trip_median_ms": median(round_trips) if round_trips else None}
    results["glass"] = {"before": before.label if before else None, "rounds": rounds, "seconds": seconds, "settle_s": settle, "interval_s": interval,
                        "source": "bench/g2g.py source: 640x360 GRAY8 at 25 fps, openh264enc (I-frame each second), RTP over RTSP",
                        "load_average": os.getloadavg(), "players": summary, "runs": runs}


def glass_run(k, url, marquee, xvfb, folder, seconds, settle, interval):
    """One player's run: readings (frame number or None, time, screenshot round trip)."""
    folder.mkdir(parents=True, exist_ok=True)
    began = time.time()
    if k == "gst":
        out = folder / "gst.txt"
        done = subprocess.run([str(HERE / "g2g.py"), "gst", url, str(seconds), str(out)], capture_output=True,
                              timeout=seconds + 30)
        if done.returncode != 0:
            raise RuntimeError(f"glass: the GStreamer player failed: {done.stderr.decode(errors='replace')[-1500:]}")
        readings = [(int(n), float(t), None) for n, t in (l.split() for l in out.read_text().splitlines())]
        return {"began": began, "readings": readings}
    sock = folder / "ipc.sock"
    if k.startswith("marquee"):
        config = folder / "config.json"
        network = {"allow": ["rtsp://127.0.0.1"]}
        if k == "marquee_tight":
            network["liveLatency"] = 0.1
        item = {"uri": url, "live": {"mode": "low-latency"}} if k == "marquee_lowlat" else {"uri": url}
        config.write_text(json.dumps({"playlist": [item], "loop": True, "network": network,
                                      "display": {"output": "headless", "mode": "640x360@60"}}))
        cmd = [marquee.binary, "--config", str(config), "--output", "headless", "--mode", "640x360@60", "--clock", "real",
               "--exit-after", str(seconds + 60), "--socket", str(sock)]
        env = None
        shot = lambda i: ["screenshot"]
    else:
        cmd = list(Mpv.BASE) + ["--profile=low-latency", "--geometry=640x360", "--keep-open=no",
                                f"--input-ipc-server={sock}", "--screenshot-format=png", url]
        env = dict(os.environ, DISPLAY=xvfb.display)
        env.pop("WAYLAND_DISPLAY", None)
        shot = lambda i: ["screenshot-to-file", str(folder / f"{i:05d}.png"), "window"]
    err = open(folder / "stderr", "wb")
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=err, stderr=subprocess.STDOUT, env=env)
    try:
        ipc = IPC(sock)
        began = time.time()
        shots = glass_screenshots(ipc, folder, seconds, interval, shot)
        lag = ipc.request(["get_property", "live-lag"]).get("data") if k.startswith("marquee") else None
        ipc.close()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        err.close()
    counters = glass_counters(folder, shots)
    return {"began": began, "shots": len(shots), "live_lag_at_end_s": lag,
            "readings": [(n, asked, answered - asked) for n, (asked, answered) in zip(counters, shots)]}


def glass_markdown(g):
    if not g:
        return []
    p = g["players"]
    lines = ["", "## 15. Glass to glass: an RTSP stream on loopback", "",
             f"One RTSP source ({g['source']}) draws each frame's number as 16 black/white blocks over their "
             "complements and logs when it hands the frame to its encoder (CLOCK_REALTIME). Each player plays "
             "`rtsp://127.0.0.1:PORT/counter` in turn "
             f"({g['rounds']} rounds of {g['seconds']:.0f} s, alternating; the first {g['settle_s']:.0f} s of each left out), "
             f"and its picture is read back; latency = when the picture was read - when the frame it shows was handed "
             "over. A number is counted only when every block reads cleanly against its complement. Load average "
             f"{g['load_average'][0]:.2f} at the end.", "",
             "| player | readings | median (ms) | p95 (ms) | min - max (ms) | run medians (ms) | screenshot round trip (ms) |",
             "|---|---|---|---|---|---|---|"]
    for k in ["marquee_before"] + GLASS_PLAYERS:
        s = p.get(k)
        if not s:
            continue
        lines.append(f"| {GLASS_LABELS[k]} | {s['readings']} ({s['unread']} unread) | {fmt(s['median_ms'])} | {fmt(s['p95_ms'])} | "
                     f"{fmt(s['min_ms'])} - {fmt(s['max_ms'])} | {', '.join(fmt(x) for x in s['run_medians_ms'])} | "
                     f"{fmt(s['screenshot_round_trip_median_ms'])} |")
    if g.get("before"):
        lines[-len(p):] = [l.replace("Marquee (--before)", f"Marquee {g['before']}") for l in lines[-len(p):]]
    lines += ["", "What each figure holds: all include the source's encoding (openh264, shared by all), RTP over "
              "loopback, depacketising, decoding and the player's own buffering and pacing.",
              "- Marquee: headless output at 640x360@60; the control socket's `screenshot` copies the picture last "
              "presented, on the presenting thread at its next turn (within a vsync, 16.7 ms) after the request; the "
              "time taken is the request's, so the figure is low by up to that turn. No display scan-out is counted "
              "(headless). `liveLatency` 0.1: the same with `network.liveLatency` 0.1; `low-latency`: the item's "
              "`live.mode` (no demuxer buffering, a short probe, no RTP reordering queue).",
              "- mpv: `--profile=low-latency --vo=gpu` (EGL on llvmpipe) into an Xvfb window; IPC `screenshot-to-file "
              "FILE window` renders the frame mpv shows now into a picture; the request's time is taken, as for Marquee. "
              "Xvfb has no vsync: no scan-out is counted either.",
              "- GStreamer: `rtspsrc latency=0 ! decodebin ! videoconvert ! appsink sync=true` (bench/g2g.py): the time "
              "the sink takes each buffer at its presentation time; no window, no drawing, no scan-out.",
              "- The screenshot round trip (request to reply, the PNG encoded or written) is not in the figure."]
    return lines


def live_soak_markdown(paths):
    """Section 16 from `make live-soak`'s results (tools/soak.py --only live), those of `paths` there are."""
    lines = []
    for path in paths:
        try:
            whole = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        ls = whole.get("live")
        if not ls:
            continue
        if not lines:
            lines = ["", "## 16. A live source for 30 minutes", "",
                     "`make live-soak` (tools/soak.py --only live): a live source through a loopback proxy that cuts its "
                     "connection every few minutes, played by the release binary on the headless output, real clock; "
                     "polled every few seconds over the control socket and /proc. `live-lag` is the property (from e771c50 "
                     "on, a frame's age from when it arrived plus its wait to be shown; before, that wait alone); the latency on screen (RTSP only) is a screenshot's frame number "
                     "against the time the source handed that frame to its encoder (bench/g2g.py's blocks), reads in the 5 s "
                     "after a cut left out (the last picture stays up meanwhile)."]
        rtsp = ls["url"].startswith("rtsp:")
        load = whole.get("load_average_at_end")
        minutes = ls["seconds"] / 60
        lines += ["", f"**{path.name}**: {whole.get('started')}, {whole.get('marquee_commit', '')}; "
                  + ("bench/g2g.py's RTSP source (640x360 H.264 at 25 fps, openh264, RTP interleaved in the RTSP connection)"
                     if rtsp else f"netfixture's live source ({ls['size']} H.264 in live Matroska over HTTP, 25 fps)")
                  + f", cut every {fmt(ls['cut_every_s'], 1)} s, output {ls['size']}@60, `network.liveLatency` "
                  f"{ls['live_latency_bound_s']} s, {fmt(minutes, 1)} minutes, a read every {ls['poll_s']:.0f} s"
                  + (f"; load average at the end {load[0]}" if load else "") + ".", "",
                  "| minutes | live-lag median / max (s) | " + ("latency on screen median / max (s) | " if rtsp else "")
                  + "RSS min - max (MB) | fds | threads | frames shown | dropped to catch up |",
                  "|---|---|" + ("---|" if rtsp else "") + "---|---|---|---|---|"]
        if len(ls["windows"]) > 12:
            # Cut every few seconds: a row a minute (medians; the most fds and threads).
            lines[-2:] = ["| minute | live-lag median (s) | " + ("latency on screen median (s) | " if rtsp else "")
                          + "RSS median (MB) | fds (most) | threads (most) |", "|---|---|" + ("---|" if rtsp else "") + "---|---|---|"]
            for m in ls.get("per_minute", []):
                lines.append(f"| {m['minute']} | {fmt(m['lag_s'], 3)} | " + (f"{fmt(m['latency_s'], 3)} | " if rtsp else "")
                             + f"{fmt(m['rss_mb'])} | {m['fds']} | {m['threads']} |")
        for w in ls["windows"] if len(ls["windows"]) <= 12 else []:
            lines.append(f"| {w['from_s'] / 60:.0f}-{w['to_s'] / 60:.0f} | {fmt(w['lag_median_s'], 3)} / {fmt(w['lag_max_s'], 3)} | "
                         + (f"{fmt(w.get('latency_median_s'), 3)} / {fmt(w.get('latency_max_s'), 3)} | " if rtsp else "")
                         + f"{fmt(w['rss_min_mb'])} - {fmt(w['rss_max_mb'])} | {', '.join(map(str, w['fds']))} | "
                         f"{', '.join(map(str, w['threads']))} | {w['frames_shown']} | {w['decoder_drops']} |")
        back = [c["back_after_s"] for c in ls["cuts"]]
        backs = ", ".join(fmt(b, 2) for b in back) if len(back) <= 12 else \
            (f"{fmt(min(b for b in back if b is not None), 2)} - {fmt(max(b for b in back if b is not None), 2)} "
             f"(median {fmt(median([b for b in back if b is not None]), 2)}; {sum(1 for b in back if b is None)} not back within 20)")
        at = ", ".join(f"{c['at_s'] / 60:.1f}" for c in ls["cuts"]) if len(ls["cuts"]) <= 12 else \
            f"{len(ls['cuts'])} times, every {fmt(ls['cut_every_s'], 1)} s from {ls['cuts'][0]['at_s']:.0f} s"
        settle = ls["settle_s"] / 60
        cut = f"Cuts at {at} min" if len(ls["cuts"]) <= 12 else f"Cut {at}"
        lines += ["", f"{cut}; the picture back after {backs} s. Resident size at minute {fmt(settle, 1)}: "
                  f"{fmt(ls['rss_at_settle_mb'])} MB, at the end {fmt(ls['rss_at_end_mb'])} MB; from minute {fmt(settle, 1)} on "
                  f"{fmt(ls['rss_after_settle_min_mb'])} - {fmt(ls['rss_after_settle_max_mb'])} MB (spread "
                  f"{fmt(ls.get('rss_after_settle_spread_mb'), 2)} MB; the goal: within 5); per minute (medians): "
                  + ", ".join(fmt(m["rss_mb"]) for m in ls.get("per_minute", [])) + f". fds {ls['fds_after_settle']}, threads "
                  f"{ls['threads_after_settle']} from minute {fmt(settle, 1)} on. `live-lag` over the bound: {ls['lag_over_bound']} "
                  f"of {ls['lag_reads']} reads (max {fmt(ls['lag_max_s'], 3)} s)"
                  + (f"; the latency on screen over the bound: {ls.get('latency_over_bound')} of {ls.get('latency_reads')} reads "
                     f"(median {fmt(ls.get('latency_median_s'), 3)} s, max {fmt(ls.get('latency_max_s'), 3)} s; "
                     f"{ls.get('latency_unread')} screenshots unread)" if rtsp else "") + ". "
                  + ("Passed." if whole.get("passed") else "**Failed:** " + "; ".join(ls["failures"]) + ".")]
    return lines


def marquee_label(results):
    return results.get("versions", {}).get("marquee", {}).get("commit", "this build")


# Before/after rows: key, label, digits, whether higher is better.
BEFORE_AFTER_ROWS = [
    ("fps", "throughput 1080p H.264, virtual clock (fps)", 1, True),
    ("cpu_ms_per_frame", "CPU per frame, virtual clock (ms)", 2, False),
    ("rt_cpu_ms_per_frame", "CPU per frame, 10 s at real time (ms)", 2, False),
    ("rt_peak_rss_mb", "peak resident size, real time (MB)", 1, False),
    ("rt_dropped", "frames dropped, real time", 0, False),
    ("first_frame_s", "start to exit after the first frame (s)", 3, False),
    ("loop_cpu_s", "CPU, a 1 s clip looped 60 times (s)", 2, False),
    ("loop_peak_rss_mb", "peak resident size, 60 loops (MB)", 1, False),
]


def before_after_markdown(ba):
    if not ba:
        return []
    lines = ["", "## 10. Before and after", "",
             f"`{ba['before']}` (before) and `{ba['after']}` (after), each run {ba['reps']} times, alternated in one "
             "run (before, after, then after, before); medians. A ratio within a few percent of 1 is the machine's noise.", "",
             "| measure | before | after | after / before |", "|---|---|---|---|"]
    for key, label, digits, _ in BEFORE_AFTER_ROWS:
        b, a = ba["median"]["before"].get(key), ba["median"]["after"].get(key)
        r = ba["ratio_after_over_before"].get(key)
        lines.append(f"| {label} | {fmt(b, digits)} | {fmt(a, digits)} | {fmt(r, 3) + 'x' if r is not None else ''} |")
    return lines


def machine():
    cpuinfo = Path("/proc/cpuinfo").read_text()
    model = re.search(r"^model name\s*:\s*(.*)$", cpuinfo, re.M)
    mhz = re.search(r"^cpu MHz\s*:\s*(.*)$", cpuinfo, re.M)
    flags = re.search(r"^flags\s*:\s*(.*)$", cpuinfo, re.M)
    mem = re.search(r"^MemTotal:\s*(\d+)", Path("/proc/meminfo").read_text(), re.M)
    os_release = Path("/etc/os-release").read_text() if Path("/etc/os-release").exists() else ""
    pretty = re.search(r'^PRETTY_NAME="?([^"\n]*)', os_release, re.M)
    simd = [f for f in ("avx2", "avx512f", "sse4_2") if flags and f in flags.group(1).split()]
    return {"cpu": model.group(1) if model else platform.processor(), "cpu_mhz": float(mhz.group(1)) if mhz else None,
            "simd": simd, "nproc": os.cpu_count(),
            "nproc_available": len(os.sched_getaffinity(0)), "mem_total_mb": int(mem.group(1)) // 1024 if mem else None,
            "kernel": platform.release(), "os": pretty.group(1) if pretty else None,
            "load_average_at_start": os.getloadavg()}


def fmt(value, digits=1, suffix=""):
    if value is None:
        return "n/a"
    return f"{value:.{digits}f}{suffix}"


def goal(ok):
    return "n/a" if ok is None else ("met" if ok else "**missed**")


def write_markdown(results, path):
    tp = results["throughput"]
    rt = results["realtime"]
    ff = results["first_frame"]
    lm = results["loop_memory"]
    m = results["machine"]
    v = results["versions"]
    main = tp["h264-1080p30"]["median_fps"]
    four = tp["hevc-2160p30"]["median_fps"]
    flat = tp["flat-1080p30"]["median_fps"]
    r = tp["ratios_1080p"]
    lines = [
        "# Benchmark results",
        "",
        f"Written by `make bench` on {results['date']}. Machine: {m['cpu']}, {m['nproc']} CPUs, "
        f"{m['mem_total_mb']} MB, {m['os']}, kernel {m['kernel']}; load average at start "
        f"{', '.join(f'{x:.2f}' for x in m['load_average_at_start'])}. Renderer: {results['renderer'].get('renderer')} "
        f"({results['renderer'].get('gl_version')}). Marquee {v['marquee']['commit']} ({v['marquee']['swift']}), "
        f"{v['mpv']}, {v['ffmpeg']}. Every figure is in `results.json`.",
        "",
    ]
    runs = results.get("section_runs") or {}
    dates = {(run.get("date"), run.get("marquee")) for run in runs.values()}
    if len(dates) > 1:
        lines += ["Not every section comes from this run (`bench.py --only`); each section's run:", ""]
        for section, run in runs.items():
            load = run.get("load_average_at_start")
            lines.append(f"- {section}: {run.get('date')}, Marquee {run.get('marquee')}"
                         + (f", load average at start {load[0]:.2f}" if load else ""))
        lines.append("")
    busy = m["load_average_at_start"][0]
    if busy > 1.0:
        lines += [f"**The machine was busy** (load average {busy:.1f} at start on {m['nproc']} CPUs, "
                  f"{m.get('load_average_at_end', [0])[0]:.1f} at the end): wall-clock figures (frames per second, time to "
                  "first frame) are unreliable; CPU per frame, memory and pacing are steadier. Run it on an idle machine.", ""]
    lines += [
        "## Goals",
        "",
        "| goal | Marquee | peer | ratio | target | |",
        "|---|---|---|---|---|---|",
    ]
    tr = r["marquee_over_mpv"]
    lines.append(f"| throughput 1080p H.264 (fps) | {fmt(main['marquee'])} | mpv {fmt(main['mpv'])} | {fmt(tr, 2)}x | >= 2x | {goal(tr and tr >= 2)} |")
    cr = r["marquee_over_min_ffmpeg_ceiling"]
    lines.append(f"| throughput vs min(ffmpeg decode {fmt(main['ffmpeg'])}, draw ceiling {fmt(tp['draw_ceiling_fps'])}) | "
                 f"{fmt(main['marquee'])} | {fmt(min(main['ffmpeg'], tp['draw_ceiling_fps']))} | {fmt(cr, 2)}x | >= 0.9x | {goal(cr and cr >= 0.9)} |")
    c = rt["ratios"]["cpu_per_frame_marquee_over_mpv"]
    lines.append(f"| CPU per presented frame, 1080p30 real time (ms) | {fmt(rt['marquee']['cpu_ms_per_frame'])} | "
                 f"mpv {fmt(rt['mpv']['cpu_ms_per_frame'])} | {fmt(c, 2)}x | <= 0.5x | {goal(c and c <= 0.5)} |")
    t = ff["ratio_marquee_over_mpv"]
    lines.append(f"| start to first frame (and exit) (s) | {fmt(ff['median_marquee_s'], 3)} | mpv {fmt(ff['median_mpv_s'], 3)} | "
                 f"{fmt(t, 2)}x | <= 0.5x | {goal(t and t <= 0.5)} |")
    p = rt["ratios"]["peak_rss_marquee_over_mpv"]
    lines.append(f"| peak resident size, 1080p playback (MB) | {fmt(rt['marquee']['peak_rss_mb'])} | mpv {fmt(rt['mpv']['peak_rss_mb'])} | "
                 f"{fmt(p, 2)}x | <= 0.7x | {goal(p and p <= 0.7)} |")
    g = lm["growth_mb"]
    lines.append(f"| resident size after 1,000 loops minus after 10 (MB) | {fmt(g, 2)} | | | <= 5 MB | {goal(g is not None and g <= 5)} |")
    e = results["pacing_total_errors"]
    lines.append(f"| pacing errors (cadence, drops, repeats, blanks), 10 cases | {e} | | | 0 | {goal(e == 0)} |")
    h = (results.get("http") or {}).get("extra_percent", {}).get("polled")
    if h is not None:
        lines.append(f"| CPU with HTTP on and a dashboard polling, over HTTP off (section 11) | {fmt(h, 1, '%')} more | | | <= 2% | {goal(h <= 2)} |")
    lines += [
        "",
        "## 1. Throughput (untimed), frames per second, process start to exit",
        "",
        "Marquee: `--clock virtual` on the headless output at 1920x1080 (`display.scanout` `auto`: on a machine with no "
        "GPU render node decode + swscale into the picture in memory, else decode + upload + draw with GL). ffmpeg: "
        "`-f null` (decode only). mpv: `--untimed --vo=gpu` through EGL (OpenGL ES) on llvmpipe under Xvfb. "
        f"Median of {results['reps']} runs (mpv: one run on the flat clip).",
        "",
        "| clip | frames | Marquee shown / dropped or skipped (per run) | Marquee | mpv | ffmpeg decode | Marquee / mpv | Marquee / ffmpeg | CPU ms/frame M / mpv / ffmpeg |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name in ("h264-1080p30", "hevc-2160p30", "flat-1080p30"):
        d = tp[name]
        f = d["median_fps"]
        cpu = d["cpu_ms_per_frame"]
        shown = ", ".join(f"{p} / {q}" for p, q in zip(d["marquee_presented"], d.get("marquee_dropped", ["?"] * len(d["marquee_presented"]))))
        flag = "" if all(q == 0 for q in d.get("marquee_dropped", [1])) else " (frames dropped: the rate is not for every frame)"
        lines.append(f"| {name} | {d['frames']} | {shown}{flag} | {fmt(f['marquee'])} | {fmt(f['mpv'])} | {fmt(f['ffmpeg'])} | "
                     f"{fmt(ratio(f['marquee'], f['mpv']), 2)}x | {fmt(ratio(f['marquee'], f['ffmpeg']), 2)}x | "
                     f"{fmt(cpu['marquee'])} / {fmt(cpu['mpv'])} / {fmt(cpu['ffmpeg'])} |")
    lines += [
        "",
        f"The flat clip costs almost nothing to decode, so Marquee's rate on it ({fmt(flat['marquee'])} fps) is what "
        "its upload + draw path allows on this renderer.",
        "",
    ]
    rc = results.get("renderer_ceiling", {})
    if "error" in rc or not rc:
        lines += [f"Renderer ceiling probe: {rc.get('error', 'not run')}.", ""]
    else:
        lines += [
            f"Renderer ceiling (`bench/gl-ceiling.c`: EGL surfaceless on {rc.get('renderer')}, a fresh 1920x1080 "
            "picture uploaded and drawn each frame, no decoding, `glFinish` per frame):",
            "",
            "| variant | fps | CPU ms/frame |",
            "|---|---|---|",
        ]
        for key, what in [("rgba_nearest", "one RGBA texture, nearest (the ceiling used above)"),
                          ("yuv_nearest", "three 4:2:0 planes, nearest, colour matrix"),
                          ("yuv_bilinear", "three 4:2:0 planes, bilinear, colour matrix"),
                          ("fill", "constant colour, no texture")]:
            v = rc.get(key, {})
            lines.append(f"| {what} | {fmt(v.get('fps'))} | {fmt(v.get('cpu_ms_per_frame'))} |")
        lines.append("")
    lines += [
        "## 2. CPU per presented frame at real time, and peak memory",
        "",
        f"1080p30 H.264 played for {rt['seconds']} s. Marquee: `--clock real`; mpv: normal timed playback, frames "
        "presented = frames decoded minus mpv's drop counters. CPU = user + system of the process.",
        "",
        "| | Marquee | mpv | mpv + Xvfb |",
        "|---|---|---|---|",
        f"| frames presented | {rt['marquee']['presented']} | {rt['mpv']['presented']} | |",
        f"| CPU s | {fmt(rt['marquee']['cpu_s'], 2)} | {fmt(rt['mpv']['cpu_s'], 2)} | {fmt(rt['mpv']['cpu_s'] + rt['mpv']['xvfb_cpu_s'], 2)} |",
        f"| CPU ms per presented frame | {fmt(rt['marquee']['cpu_ms_per_frame'])} | {fmt(rt['mpv']['cpu_ms_per_frame'])} | {fmt(rt['mpv']['cpu_ms_per_frame_with_xvfb'])} |",
        f"| peak resident size MB | {fmt(rt['marquee']['peak_rss_mb'])} | {fmt(rt['mpv']['peak_rss_mb'])} | |",
        f"| frames shown late or dropped | {rt['marquee']['pacing']['gaps']} late, {rt['marquee']['pacing']['drops']} dropped | "
        f"{rt['mpv']['stats'].get('frame-drop-count', 'n/a')} dropped | |",
        "",
    ]
    if "marquee_gl" in rt:
        g, x = rt["marquee_gl"], rt["mpv_x11"]
        lines += [
            "Marquee's headless output is the one `display.scanout` `auto` chooses (without GL on a machine with no GPU "
            "render node). Beside it in the same run, each player's other way to draw without a GPU: Marquee's GL output "
            "(`display.scanout` `gl`, on llvmpipe) and mpv's `--vo=x11` (swscale into the X server's shared memory, no GL):",
            "",
            "| | Marquee gl | mpv --vo=x11 | mpv --vo=x11 + Xvfb |",
            "|---|---|---|---|",
            f"| frames presented | {g['presented']} | {x['presented']} | |",
            f"| CPU ms per presented frame | {fmt(g['cpu_ms_per_frame'])} | {fmt(x['cpu_ms_per_frame'])} | {fmt(x['cpu_ms_per_frame_with_xvfb'])} |",
            f"| peak resident size MB | {fmt(g['peak_rss_mb'])} | {fmt(x['peak_rss_mb'])} | |",
            "",
            f"Marquee's peak resident size over mpv --vo=x11's: {fmt(ratio(rt['marquee']['peak_rss_mb'], x['peak_rss_mb']), 2)}x; "
            f"its CPU per frame: {fmt(ratio(rt['marquee']['cpu_ms_per_frame'], x['cpu_ms_per_frame']), 2)}x.",
            "",
        ]
    lines += [
        "## 3. Time to first frame",
        "",
        f"Process start to exit after one presented frame (Marquee: `--clock real --frames 1`; mpv: "
        f"`--frames=1`), median of {ff['reps']}: Marquee {fmt(ff['median_marquee_s'], 3)} s, mpv "
        f"{fmt(ff['median_mpv_s'], 3)} s ({fmt(ff['ratio_marquee_over_mpv'], 2)}x). mpv's log puts its first frame at "
        f"{fmt(ff['median_mpv_first_frame_logged_s'], 3)} s after its own start-up. Marquee's first-frame time alone: "
        f"{'n/a (the trace is flushed at exit and has no wall-clock field)' if not ff['marquee_first_frame_s'] else fmt(median(ff['marquee_first_frame_s']), 3) + ' s'}.",
        "",
        "## 4. Memory over loops",
        "",
        f"A {lm['clip_seconds']} s 320x180 clip looped {lm['loops_requested']} times (`--clock virtual`, 640x360 output; "
        f"{lm['loops_in_trace']} runs in the trace). Resident size (VmRSS, median over the last tenth of the loops up to "
        "each one; loops keyed by the trace as it is written, interpolated in time between its flushes):",
        "",
        "| loop | " + " | ".join(lm["rss_mb_by_loop"].keys()) + " |",
        "|---" * (len(lm["rss_mb_by_loop"]) + 1) + "|",
        "| MB | " + " | ".join(fmt(x) for x in lm["rss_mb_by_loop"].values()) + " |",
        "",
        f"Growth from loop 10 to loop {lm['last_loop_measured']}: {fmt(lm['growth_mb'], 2)} MB; peak {fmt(lm['peak_rss_mb'])} MB"
        + (f" (stopped after {lm['stopped_after_s']} s, before all loops had played)." if lm.get("stopped_after_s") else "."),
        "",
        "## 5. Pacing (virtual clock)",
        "",
        "Each clip (640x360, 2 s) looped for 10 s of presentation on a 640x360 output. Ideal: frame k on vsync "
        "round(k x refresh / fps) after the first frame. Cadence errors: intervals that differ from the ideal; "
        "gaps: intervals longer than ideal; drops: frames missing that had a vsync of their own; expected drops: "
        "frames that share their ideal vsync with the next one (60 fps at 59.94 Hz).",
        "",
        "| case | presented | cadence errors | gaps | drops | expected drops | repeats | blanks | marquee's count: late / cadence / decoder | intervals (vsyncs: count) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for case, a in results["pacing"].items():
        hist = ", ".join(f"{k}: {n}" for k, n in a["interval_histogram"].items())
        st = a.get("stopped", {})
        own = " / ".join(str(st.get(k, "?")) for k in ("dropped", "cadence-dropped", "decoder-dropped"))
        lines.append(f"| {case} | {a['presented']} | {a['cadence_errors']} | {a['gaps']} | {a['drops']} | "
                     f"{a['expected_drops']} | {a['repeats']} | {a['blanks']} | {own} | {hist} |")
    layer = results.get("layer", {})
    lines += ["", "## 6. Player layer: upload + draw per 1080p frame, by pixel format", "",
              "`layerbench`: two alternating 1920x1080 frames of each format drawn on a 1920x1080 headless output "
              "(20 frames each); textures are made once per plane and reused. `rgba` is a frame already converted; "
              "`cpu` rows include the swscale conversion to RGBA (`display.conversion: cpu`).", ""]
    if layer.get("rows"):
        lines += ["| format | path | ms per frame (mean) | best | textures |", "|---|---|---|---|---|"]
        for r in layer["rows"]:
            lines.append(f"| {r['format']} | {r['path']} | {r['ms_mean']:.1f} | {r['ms_best']:.1f} | {r['textures']} |")
    else:
        lines.append(f"Not measured: {layer.get('error', 'no layerbench output')}.")
    ov = results.get("overlay")
    lines += ["", "## 7. Overlays: CPU per frame with a clock overlay", "",
              "1080p30 H.264 at real time on the 1920x1080 headless output, with a clock overlay (`%H:%M:%S`, 64 px, "
              "rendered with FreeType into a texture once a second, drawn over the video each picture) and without; "
              "runs alternate, medians.", ""]
    if ov:
        lines += ["| case | CPU ms per presented frame (median) | runs (ms per frame, frames) |", "|---|---|---|"]
        for case, label in (("without", "no overlay"), ("clock", "clock overlay")):
            each = ", ".join(f"{r['cpu_ms_per_frame']:.2f} ({r['presented']})" for r in ov["runs"][case])
            lines.append(f"| {label} | {fmt(ov['cpu_ms_per_frame'][case], 2)} | {each} |")
        lines += ["", f"Ratio, with / without: **{fmt(ov['ratio_clock_over_without'], 3)}x**."]
    else:
        lines.append("Not measured yet (`bench.py --only overlay`).")
    tr = results.get("transition")
    if tr:
        lines += ["", "## 8. Transitions: CPU with a crossfade running", "",
                  f"Marquee headless at {tr['mode']}, {tr['seconds']} s of presentation, looping {tr['clip']} with `cut` and "
                  "with a 1 s `crossfade` at each loop point (half the timeline mixing: every vsync drawn, from two "
                  "pictures), at real time and on the virtual clock (every vsync's picture drawn whatever the load). "
                  "While mixing (real time): the crossfade run's extra CPU over the cut run, divided by the share of vsyncs mixed.", "",
                  "| clock | transition | CPU (s) | CPU ms per second | pictures drawn | of them mixed | CPU ms per picture | peak RSS (MB) |",
                  "|---|---|---|---|---|---|---|---|"]
        for name in ("cut", "crossfade", "virtual_cut", "virtual_crossfade"):
            x = tr.get(name)
            if not x:
                continue
            clock, kind = ("virtual", name[8:]) if name.startswith("virtual_") else ("real", name)
            lines.append(f"| {clock} | {kind} | {x['cpu_s']:.2f} | {x['cpu_ms_per_second']:.1f} | {x['pictures_drawn']} | "
                         f"{x['mixed_pictures']} | {x['cpu_ms_per_picture']:.2f} | {x['peak_rss_mb']:.1f} |")
        lines += ["", f"CPU per picture drawn, crossfade over cut: {fmt(tr.get('ratio_cpu_per_picture_crossfade_over_cut'), 2)}x "
                  f"at real time, {fmt(tr.get('virtual_ratio_cpu_per_picture_crossfade_over_cut'), 2)}x on the virtual clock; "
                  f"CPU of the whole run {fmt(tr['ratio_cpu_crossfade_over_cut'], 2)}x at real time (share of vsyncs mixed "
                  f"{tr['mixing_share'] * 100:.0f}%, CPU while mixing {fmt(tr.get('cpu_ms_per_second_while_mixing'))} ms "
                  f"per second = {fmt(tr.get('ratio_while_mixing_over_cut'), 2)}x the cut's), "
                  f"{fmt(tr.get('virtual_ratio_cpu_crossfade_over_cut'), 2)}x on the virtual clock (the same vsyncs drawn)."]
    lines += ["", "![frame intervals](frame-intervals.png)", ""]
    lines += audio_markdown(results.get("audio"))
    lines += before_after_markdown(results.get("before_after"))
    lines += http_markdown(results.get("http"))
    lines += startup_markdown(results.get("startup"))
    lines += memory_markdown(results.get("memory"))
    lines += gstreamer_markdown(results.get("gstreamer"))
    lines += glass_markdown(results.get("glass"))
    lines += live_soak_markdown([HERE / "live-soak-results.json", HERE / "live-soak-http-results.json",
                                 HERE / "live-soak-reconnects-results.json"])
    path.write_text("\n".join(lines))


def plot(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(15, 9), constrained_layout=True)
    grid = fig.add_gridspec(3, len(PACING_FPS))
    for row, refresh_name in enumerate(["60", "59.94"]):
        for col, fps in enumerate(PACING_FPS):
            ax = fig.add_subplot(grid[row, col])
            case = f"{fps}fps@{refresh_name}Hz"
            frames = frame_lines(read_trace(HERE / results["pacing"][case]["trace"]))
            vs = [f["vsync"] for f in frames]
            intervals = [b - a for a, b in zip(vs, vs[1:])][:36]
            refresh = Fraction(60) if refresh_name == "60" else Fraction(60000, 1001)
            ax.plot(range(len(intervals)), intervals, marker="o", markersize=3, linewidth=0.8)
            ax.axhline(float(refresh / fps), color="grey", linestyle=":", linewidth=1)
            ax.set_title(f"{fps} fps at {refresh_name} Hz", fontsize=9)
            ax.set_ylim(0, max(intervals + [3]) + 1)
            if col == 0:
                ax.set_ylabel("vsyncs per frame")
            if row == 1:
                ax.set_xlabel("frame (first 36)")
    ax = fig.add_subplot(grid[2, :])
    frames = frame_lines(read_trace(HERE / results["realtime"]["trace"]))
    ts = [f["t"] for f in frames]
    ax.plot([1000 * (b - a) for a, b in zip(ts, ts[1:])], linewidth=0.8, label="Marquee, --clock real")
    ax.axhline(1000 / 30, color="grey", linestyle=":", linewidth=1, label="ideal 33.3 ms")
    ax.set_title("1080p30 H.264 at real time on the headless output (60 Hz): interval between presented frames")
    ax.set_xlabel("presented frame")
    ax.set_ylabel("ms")
    ax.legend(loc="upper right", fontsize=8)
    fig.suptitle("Marquee frame intervals (from --trace)")
    fig.savefig(path, dpi=90)


# --------------------------------------------------------------------------------------------------
# Sound (issue 17): the loop point's waveform, CPU per second of sound next to mpv's, and the
# click-vs-flash offset measured in the QEMU guest's loopback card (snd-aloop). Self-contained:
# its own clips, configs and plots (bench/audio-loop.png, bench/audio-offsets.png).

AUDIO_RATE = 48000
AUDIO_CLIPS = {
    # 1 s of a 1 kHz tone (a whole number of periods: authored to loop seamlessly), AAC in MP4 (its
    # priming and padding are trimmed on the way), with a tiny picture.
    "audio-tone-1s": ["-f", "lavfi", "-i", "color=c=gray:size=32x32:rate=30:duration=1",
                      "-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=48000:duration=1", "-ac", "2",
                      *_x264("ultrafast"), "-c:a", "aac", "-b:a", "256k"],
    # 30 s of pink noise (AAC 44.1 kHz stereo 192 kb/s: decoded, resampled to 48 kHz) under a tiny picture.
    "audio-noise-30s": ["-f", "lavfi", "-i", "color=c=gray:size=32x32:rate=30:duration=30",
                        "-f", "lavfi", "-i", "anoisesrc=color=pink:sample_rate=44100:amplitude=0.5:duration=30", "-ac", "2",
                        *_x264("ultrafast"), "-c:a", "aac", "-b:a", "192k"],
    # 30 s of a small black picture flashing white for 0.2 s at the start of each second, with a
    # 1 ms click at the start of each second (AAC 48 kHz stereo): the clip of the offset measure.
    "audio-click-flash-30s": ["-f", "lavfi", "-i", "color=c=black:size=160x90:rate=30:duration=30,"
                              "drawbox=color=white:t=fill:enable='lt(mod(n\\,30)\\,6)'",
                              "-f", "lavfi", "-i", "aevalsrc='if(lt(mod(t\\,1)\\,0.001)\\,0.9\\,0)|"
                              "if(lt(mod(t\\,1)\\,0.001)\\,0.9\\,0)':s=48000:d=30",
                              *_x264("ultrafast"), "-g", "30", "-c:a", "aac", "-b:a", "192k"],
}


def make_audio_media(name):
    path = MEDIA / f"{name}.mp4"
    if not path.exists():
        MEDIA.mkdir(parents=True, exist_ok=True)
        part = MEDIA / f"{name}.part.mp4"
        log(f"  making {path.name} with ffmpeg")
        subprocess.run(["ffmpeg", "-nostdin", "-y", "-v", "error", *AUDIO_CLIPS[name], "-f", "mp4", str(part)], check=True)
        part.rename(path)
    return path


def audio_home(name):
    """A HOME whose .asoundrc defines bench_capture: float32 stereo into a raw file (ALSA's file over null)."""
    home = RUNS / f"home-{name}"
    home.mkdir(parents=True, exist_ok=True)
    capture = RUNS / f"{name}.raw"
    capture.unlink(missing_ok=True)
    (home / ".asoundrc").write_text(
        'pcm.bench_capture {\n type file\n slave.pcm { type null }\n file "%s"\n format "raw"\n}\n' % capture)
    return home, capture


def marquee_audio_run(marquee, name, clip, seconds, audio):
    RUNS.mkdir(parents=True, exist_ok=True)
    config = RUNS / f"config-{name}.json"
    config.write_text(json.dumps({"playlist": [{"uri": str(clip)}], "loop": True,
                                  "display": {"output": "headless", "mode": "640x360@60"}, "audio": audio}))
    home, capture = audio_home(name)
    cmd = [marquee.binary, "--config", str(config), "--output", "headless", "--clock", "real",
           "--exit-after", str(seconds), "--trace", str(RUNS / f"{name}.jsonl")]
    m = run_measured(cmd, name, env=dict(os.environ, HOME=str(home))).check(f"marquee ({name})")
    return m, capture


def read_float_left(path):
    import array
    data = array.array("f")
    with open(path, "rb") as f:
        data.frombytes(f.read())
    return data[0::2]


def audio_loop_points(marquee, results_audio):
    """A 1 s tone looped by marquee for 8 s into the file plugin: the largest break of the sine
    anywhere (second difference x[n+1] - 2cos(w)x[n] + x[n-1]: zero for any sine, large at a gap or
    click) and around each loop point, and the samples there for the plot."""
    import math
    clip = make_audio_media("audio-tone-1s")
    m, capture = marquee_audio_run(marquee, "audio-loop", clip, 8, {"device": "bench_capture"})
    left = read_float_left(capture)
    start = next((i for i, v in enumerate(left) if abs(v) > 1e-4), None)
    if start is None:
        results_audio["loop"] = {"error": "no sound captured"}
        return
    c = 2 * math.cos(2 * math.pi * 1000 / AUDIO_RATE)
    d = [0.0] * len(left)
    for n in range(start + 48, len(left) - 1):
        d[n] = abs(left[n + 1] - c * left[n] + left[n - 1])
    end = len(left) - 480  # the run's end cuts the sound off
    worst = max(range(start + 48, end), key=lambda n: d[n]) if end > start + 48 else start
    points = []
    for k in range(1, 8):
        at = start + k * AUDIO_RATE
        if at + 480 >= end:
            break
        window = range(at - 96, at + 96)
        point = {"frame": at, "break": max(d[n] for n in window)}
        if k <= 3:  # the plot's
            point["samples"] = [round(left[n], 5) for n in range(at - 144, at + 144)]
        points.append(point)
    # A gap of one 10 ms silent block in this tone measures about 0.1; coding noise under 0.005.
    results_audio["loop"] = {
        "clip": "audio-tone-1s (AAC 48 kHz, 1 kHz tone, looped by the playlist)", "seconds": 8,
        "frames_captured": len(left), "sound_starts_at_frame": start,
        "largest_break": d[worst], "largest_break_at_s": (worst - start) / AUDIO_RATE,
        "loop_points": points, "cpu_s": m.cpu,
        # A realignment (the audio thread held up past the device's buffer on a busy machine) breaks
        # the sine, and moves the loop points after it off the k-second grid.
        "realignments": Path(m.stderr_path).read_text(errors="replace").count("audio realigned"),
    }


def audio_cpu(marquee, results_audio, reps=2):
    """CPU per second of sound: marquee playing 20 s of the noise clip with sound minus without
    (the same pictures), and mpv playing the same clip's sound alone (--vid=no --ao=alsa to the same
    file-over-null device, float 48 kHz: mpv is not paced by that device, marquee paces itself)."""
    clip = make_audio_media("audio-noise-30s")
    seconds = 20
    with_sound, without = [], []
    for rep in range(reps):
        m, _ = marquee_audio_run(marquee, f"audio-cpu-on-{rep}", clip, seconds, {"device": "bench_capture"})
        with_sound.append(m.cpu)
        m, _ = marquee_audio_run(marquee, f"audio-cpu-off-{rep}", clip, seconds, {"enabled": False})
        without.append(m.cpu)
    mpv_cpu = []
    for rep in range(reps):
        home, _ = audio_home(f"audio-cpu-mpv-{rep}")
        cmd = ["mpv", "--no-config", "--really-quiet", "--vid=no", "--ao=alsa", "--audio-device=alsa/bench_capture",
               "--audio-samplerate=48000", "--audio-format=float", f"--length={seconds}", str(clip)]
        mpv_cpu.append(run_measured(cmd, f"audio-cpu-mpv-{rep}", env=dict(os.environ, HOME=str(home))).check("mpv").cpu)
    marquee_ms = 1000 * (median(with_sound) - median(without)) / seconds
    mpv_ms = 1000 * median(mpv_cpu) / seconds
    results_audio["cpu"] = {
        "clip": "audio-noise-30s (AAC 44.1 kHz stereo 192 kb/s -> float32 48 kHz)", "seconds": seconds,
        "marquee_cpu_s_with_sound": with_sound, "marquee_cpu_s_without": without, "mpv_cpu_s": mpv_cpu,
        "marquee_ms_per_s": marquee_ms, "mpv_ms_per_s": mpv_ms, "marquee_over_mpv": ratio(marquee_ms, mpv_ms),
        "mpv_command": "mpv --vid=no --ao=alsa --audio-device=alsa/bench_capture --audio-samplerate=48000 --audio-format=float",
    }


def audio_offsets_vm(marquee, results_audio, seconds=60):
    """The click-vs-flash offset in the QEMU guest (deploy/vm/kms-run KMS_RUN_AUDIO=aloop): marquee's
    pictures on a small headless output on the real clock (the guest's virtio-gpu has no vblank),
    its sound into snd-aloop, whose capture side records with the card's timestamps;
    tools/av-offsets.py pairs each click with its flash's vsync in the trace."""
    import shutil
    if not shutil.which("qemu-system-x86_64"):
        results_audio["offsets"] = {"error": "qemu-system-x86_64 is not installed (make vm): not measured"}
        return
    clip = make_audio_media("audio-click-flash-30s")
    config = RUNS / "config-audio-vm.json"
    config.write_text(json.dumps({"playlist": [{"uri": str(clip)}], "loop": True,
                                  "display": {"output": "headless", "mode": "160x90@30"},
                                  "audio": {"device": "plughw:Loopback,0,0"}}))
    png = RUNS / "audio-vm.png"
    log(f"  sound in the VM: {seconds} s (boots a QEMU guest)")
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    run = subprocess.run([str(HERE.parent / "deploy/vm/kms-run"), str(config), str(png), str(seconds)],
                         env=dict(os.environ, MARQUEE=marquee.binary, KMS_RUN_AUDIO="aloop"),
                         capture_output=True, text=True)
    (RUNS / "audio-vm.log").write_text(run.stdout + run.stderr)
    base = str(png)[:-4]
    analysed = subprocess.run([sys.executable, str(HERE.parent / "tools/av-offsets.py"), base + "-capture.raw",
                               base + "-capture.stamps", base + "-trace.jsonl", "--flash-seconds", "0.2", "--skip", "5"],
                              capture_output=True, text=True)
    if run.returncode != 0 or analysed.returncode != 0:
        results_audio["offsets"] = {"error": f"kms-run status {run.returncode}, av-offsets status {analysed.returncode}: "
                                             + (run.stderr + analysed.stderr)[-500:]}
        return
    out = json.loads(analysed.stdout)
    out["seconds"] = seconds
    out["host_load_before"], out["host_load_after"] = load_before, " ".join(f"{x:.2f}" for x in os.getloadavg())
    out["realignments"] = (run.stdout + run.stderr).count("audio realigned")
    out["presentation_stalled"] = "presentation stalled" in run.stdout + run.stderr
    stopped = re.search(r'msg=stopped frames=(\d+) dropped=(\d+)', run.stdout + run.stderr)
    if stopped:
        out["run_pictures_shown"], out["run_pictures_dropped"] = int(stopped.group(1)), int(stopped.group(2))
    results_audio["offsets"] = out


def vm_run_judged(off):
    """Whether a guest run can judge sync (as AudioVMTests does): after the start it showed its
    pictures in real time (no stall, at most 3 in 100 of those due shown late or not at all: the
    trace's figures from av-offsets.py); else it measured a guest that fell behind."""
    shown, late, missing = off.get("pictures_shown"), off.get("pictures_late"), off.get("pictures_missing")
    if not shown or late is None or missing is None:
        return False
    return not off.get("presentation_stalled") and (late + missing) * 100 <= 3 * (shown + missing)


def record_audio_vm(path):
    """Puts a long guest run of bench/audio-vm.sh (its JSON) into results.json's audio section as
    `offsets_long` (make bench keeps it: the run takes over ten minutes) and rewrites RESULTS.md."""
    results = json.loads((HERE / "results.json").read_text())
    results.setdefault("audio", {})["offsets_long"] = json.loads(Path(path).read_text())
    (HERE / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    report(results)


def bench_audio(marquee, results):
    audio = {}
    try:  # the long guest run (bench/audio-vm.sh 600) is not part of make bench: keep its figures
        long_run = json.loads((HERE / "results.json").read_text()).get("audio", {}).get("offsets_long")
    except (OSError, json.JSONDecodeError):
        long_run = None
    if long_run:
        audio["offsets_long"] = long_run
    audio_loop_points(marquee, audio)
    audio_cpu(marquee, audio)
    audio_offsets_vm(marquee, audio)
    results["audio"] = audio
    plot_audio(audio)


def plot_audio(audio):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    loop = audio.get("loop", {})
    if loop.get("loop_points"):
        points = loop["loop_points"][:3]
        fig, axes = plt.subplots(1, len(points), figsize=(4 * len(points), 3), constrained_layout=True, squeeze=False)
        for ax, p in zip(axes[0], points):
            xs = [1000 * (i - 144) / AUDIO_RATE for i in range(len(p["samples"]))]
            ax.plot(xs, p["samples"], linewidth=0.8, marker=".", markersize=2)
            ax.axvline(0, color="grey", linestyle=":", linewidth=1)
            ax.set_title(f"loop point {loop['loop_points'].index(p) + 1}: break {p['break']:.4f}", fontsize=9)
            ax.set_xlabel("ms from the loop point")
        axes[0][0].set_ylabel("captured sample (left)")
        fig.suptitle("1 kHz tone looped by marquee (AAC, 1 s), captured through ALSA's file plugin")
        fig.savefig(HERE / "audio-loop.png", dpi=90)
        plt.close(fig)
    offsets = audio.get("offsets", {}).get("offsets")
    if offsets:
        fig, ax = plt.subplots(figsize=(8, 3), constrained_layout=True)
        ax.hist([o["ms"] for o in offsets], bins=range(int(min(o["ms"] for o in offsets)) - 1, int(max(o["ms"] for o in offsets)) + 2))
        ax.set_xlabel("click heard minus flash's vsync (ms)")
        ax.set_ylabel("clicks")
        ax.set_title("Click vs flash in the QEMU guest (snd-aloop capture timestamps vs the trace's vsync times)")
        fig.savefig(HERE / "audio-offsets.png", dpi=90)
        plt.close(fig)


def audio_markdown(audio):
    if not audio:
        return []
    lines = ["## 9. Sound", ""]
    loop = audio.get("loop", {})
    if "error" in loop:
        lines += [f"Loop point: not measured ({loop['error']}).", ""]
    elif loop:
        lines += [f"Loop point: {loop['clip']}, {loop['seconds']} s into ALSA's `file` plugin: largest break of the "
                  f"sine anywhere {loop['largest_break']:.4f} (at {loop['largest_break_at_s']:.3f} s; realignments in the run: "
                  f"{loop.get('realignments', '?')}); at the loop points "
                  + ", ".join(f"{p['break']:.4f}" for p in loop["loop_points"])
                  + " (a gap of silence measures about 0.1, AAC coding noise stays under 0.005). ![loop point](audio-loop.png)", ""]
    cpu = audio.get("cpu")
    if cpu:
        lines += ["| CPU per second of sound | marquee (with sound minus without) | mpv (sound only) | ratio |", "|---|---|---|---|",
                  f"| {cpu['clip']}, {cpu['seconds']} s | {fmt(cpu['marquee_ms_per_s'], 2)} ms/s | {fmt(cpu['mpv_ms_per_s'], 2)} ms/s "
                  f"| {fmt(cpu['marquee_over_mpv'], 2)}x |", "",
                  f"mpv: `{cpu['mpv_command']}` (that device takes samples as fast as they come: mpv runs unpaced; "
                  "marquee paces itself against the monotonic clock).", ""]
    off = audio.get("offsets", {})
    if "error" in off:
        lines += [f"Click vs flash: not measured ({off['error']}).", ""]
    elif off:
        lines += [vm_offsets_line(off, "Click vs flash in the QEMU guest"), ""]
        if off.get("offsets"):
            bins = {}
            for o in off["offsets"]:
                b = int(o["ms"] // 5) * 5
                bins[b] = bins.get(b, 0) + 1
            lines += ["| offset (5 ms bins) | clicks |", "|---|---|"] + [f"| [{b}, {b + 5}) | {bins[b]} |" for b in sorted(bins)]
            lines += ["", "![offsets](audio-offsets.png)", ""]
    long_run = audio.get("offsets_long")
    if long_run:
        lines += [vm_offsets_line(long_run, "The long guest run (`bench/audio-vm.sh`)"), ""]
        minutes = {}
        for o in long_run.get("offsets", []):
            minutes.setdefault(int(o["t"] // 60), []).append(o["ms"])
        if minutes:
            lines += ["| minute | offsets | median (ms) | worst abs (ms) |", "|---|---|---|---|"]
            for m in sorted(minutes):
                v = sorted(minutes[m])
                lines.append(f"| {m} | {len(v)} | {v[len(v) // 2]:.1f} | {max(abs(x) for x in v):.1f} |")
            lines.append("")
    return lines


def vm_offsets_line(off, title):
    judged = ("judged: the guest showed its pictures in real time" if vm_run_judged(off) else
              "not judged: the guest fell behind (a stall, or over 3 in 100 of its pictures late or never shown), so "
              "these figures measure the guest, not the sync")
    if "pictures_late" in off:
        pictures = (f"after the start {off['pictures_shown']} pictures shown, {off['pictures_late']} of them late, "
                    f"{off['pictures_missing']} never shown")
    else:  # a record from before av-offsets.py counted them: marquee's own totals
        pictures = f"{off.get('pictures_shown', '?')} pictures shown, {off.get('pictures_dropped', '?')} dropped"
    load = (f"; host load {off['host_load_before']} before, {off['host_load_after']} after"
            if off.get("host_load_before") else "")
    return (f"{title} ({off['seconds']} s, snd-aloop{load}): {off['offsets_measured']} offsets "
            f"({off['clicks_heard']} clicks heard, {off['flashes_shown']} flashes shown; "
            f"{pictures}; {off.get('realignments', '?')} sound realignments): "
            f"|offset| p50 {fmt(off['p50_ms'], 1)} ms, "
            f"p95 {fmt(off['p95_ms'], 1)} ms, max {fmt(off['max_ms'], 1)} ms; mean {fmt(off['mean_ms'], 1)} ms; "
            f"drift {fmt(off['drift_ms_per_minute'], 2)} ms/min; {judged}.")


# The sections in the order they run, and the keys of results.json each one writes.
SECTIONS = ["throughput", "realtime", "first_frame", "loop_memory", "pacing", "layer", "overlay", "transition", "audio",
            "before_after", "http", "startup", "memory", "gstreamer", "glass"]
SECTION_KEYS = {"throughput": ["throughput", "renderer_ceiling"], "realtime": ["realtime"],
                "first_frame": ["first_frame"], "loop_memory": ["loop_memory"],
                "pacing": ["pacing", "pacing_total_errors"], "layer": ["layer"],
                "overlay": ["overlay"], "transition": ["transition"], "audio": ["audio"],
                "before_after": ["before_after"], "http": ["http"], "startup": ["startup"], "memory": ["memory"], "gstreamer": ["gstreamer"],
                "glass": ["glass"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--marquee", help="the marquee binary (release build)")
    parser.add_argument("--before", metavar="BINARY",
                        help="an earlier marquee release binary, measured beside this one (section before_after; "
                             "`make bench BEFORE=REV` builds one)")
    parser.add_argument("--before-label", metavar="NAME", help="what --before is (a commit); by default its path")
    parser.add_argument("--startup-label", metavar="NAME", default="latest",
                        help="the name the startup section's figures are kept under in results.json (e.g. before, "
                             "after); RESULTS.md shows every name's figures side by side")
    parser.add_argument("--startup-before-label", metavar="NAME", default="before",
                        help="with --before: the name the startup section keeps the earlier build's figures under")
    parser.add_argument("--reps", type=int, default=3, help="repetitions of the throughput and first-frame runs")
    parser.add_argument("--report-only", action="store_true",
                        help="rewrite RESULTS.md and the plot from results.json and the cached traces")
    parser.add_argument("--only", metavar="SECTIONS",
                        help="run only these sections (comma-separated: " + ", ".join(SECTIONS) + "); the "
                             "figures of the others are kept from results.json, and RESULTS.md says which run "
                             "each section comes from")
    parser.add_argument("--record-audio-vm", metavar="JSON",
                        help="put a long guest run of bench/audio-vm.sh (its JSON) into results.json and RESULTS.md")
    args = parser.parse_args()
    if args.record_audio_vm:
        record_audio_vm(args.record_audio_vm)
        return
    if args.report_only:
        report(json.loads((HERE / "results.json").read_text()))
        return
    if not args.marquee:
        parser.error("--marquee PATH is needed")
    binary = Path(args.marquee).resolve()
    if not os.access(binary, os.X_OK):
        sys.exit(f"bench: {binary} is not an executable marquee binary (build with swift build -c release)")
    only = SECTIONS if not args.only else [x.strip() for x in args.only.split(",") if x.strip()]
    unknown = [x for x in only if x not in SECTIONS]
    if unknown:
        parser.error(f"--only: no section {', '.join(unknown)} (sections: {', '.join(SECTIONS)})")
    kept = {}
    if args.only:
        try:
            kept = json.loads((HERE / "results.json").read_text())
        except (OSError, json.JSONDecodeError) as error:
            sys.exit(f"bench: --only keeps the other sections' figures from results.json, which cannot be read: {error}")
    begun = time.monotonic()
    RUNS.mkdir(parents=True, exist_ok=True)
    log("bench: media")
    for name in CLIPS:
        make_media(name)
    xvfb = Xvfb()
    try:
        marquee, mpv = Marquee(binary), Mpv(xvfb)
        # "reps" is the throughput section's (its table says how many runs): kept when it is not run.
        reps = args.reps if "throughput" in only else kept.get("reps", args.reps)
        results = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "reps": reps, "machine": machine(),
                   "versions": {"marquee": marquee.version(), "mpv": mpv.version(), "ffmpeg": ffmpeg_version()},
                   "renderer": mpv.renderer(make_media("h264-1080p30"))}
        this_run = {"date": results["date"], "marquee": results["versions"]["marquee"]["commit"],
                    "load_average_at_start": results["machine"]["load_average_at_start"]}
        # The startup section adds its figures under its label to those kept.
        if isinstance(kept.get("startup"), dict):
            results["startup"] = dict(kept["startup"])
        for section in SECTIONS:
            if section not in only:
                continue
            log(f"bench: {SECTIONS.index(section) + 1}. {section}")
            if section == "throughput":
                renderer_ceiling(results)
                bench_throughput(marquee, mpv, args.reps, results)
            elif section == "realtime":
                bench_realtime(marquee, mpv, results)
            elif section == "first_frame":
                bench_first_frame(marquee, mpv, max(args.reps, 5), results)
            elif section == "loop_memory":
                bench_loop_memory(marquee, results)
            elif section == "pacing":
                bench_pacing(marquee, results)
            elif section == "layer":
                bench_layer(binary, results)
            elif section == "overlay":
                bench_overlay(marquee, results)
            elif section == "transition":
                bench_transition(marquee, results)
            elif section == "audio":
                bench_audio(marquee, results)
            elif section == "before_after":
                if args.before:
                    earlier = Marquee(Path(args.before).resolve())
                    earlier.label = args.before_label or args.before
                    bench_before_after(marquee, earlier, args.reps, results)
                else:
                    log("bench: before_after skipped: no --before binary (make bench BEFORE=REV)")
            elif section == "http":
                bench_http(marquee, results, reps=args.reps)
            elif section == "gstreamer":
                bench_gstreamer(marquee, mpv, args.reps, results)
            elif section == "memory":
                bench_memory(marquee, mpv, results)
            elif section == "glass":
                earlier = None
                if args.before:
                    earlier = Marquee(Path(args.before).resolve())
                    earlier.label = args.before_label or args.before
                bench_glass(marquee, xvfb, results, before=earlier)
            elif section == "startup":
                players = [(args.startup_label, marquee)]
                if args.before:
                    earlier = Marquee(Path(args.before).resolve())
                    earlier.label = args.before_label or args.before
                    players = [(args.startup_before_label, earlier)] + players
                bench_startup(players, max(args.reps, 5), results)
        # Which run each section's figures come from.
        results["section_runs"] = {section: (this_run if section in only else kept.get("section_runs", {}).get(
            section, {"date": kept.get("date"), "marquee": kept.get("versions", {}).get("marquee", {}).get("commit")}))
            for section in SECTIONS}
        for section in SECTIONS:
            if section not in only:
                for key in SECTION_KEYS[section]:
                    if key in kept:
                        results[key] = kept[key]
    finally:
        xvfb.stop()
    results["bench_wall_s"] = time.monotonic() - begun
    results["machine"]["load_average_at_end"] = os.getloadavg()
    log("bench: writing results")
    (HERE / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    report(results)
    log(f"bench: done in {results['bench_wall_s']:.0f} s; see bench/RESULTS.md, bench/results.json, bench/frame-intervals.png")


def report(results):
    traces = [HERE / v["trace"] for v in results.get("pacing", {}).values()] + [HERE / results["realtime"]["trace"]]
    missing = [t for t in traces if not t.exists()]
    if missing:
        log(f"bench: frame-intervals.png kept as it is: {len(missing)} of its traces are not in the cache "
            f"(e.g. {missing[0].relative_to(HERE)}); a full run draws it again")
    else:
        plot(results, HERE / "frame-intervals.png")
    write_markdown(results, HERE / "RESULTS.md")
    print((HERE / "RESULTS.md").read_text().split("## 1.")[0])


if __name__ == "__main__":
    main()
