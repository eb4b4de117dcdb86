#!/usr/bin/env python3
"""Reliability soak for the `marquee` process (make soak).

Two parts, each with media made at run time with the ffmpeg command:

soak     N item transitions (default 10,000) of a mixed playlist: tiny clips of three sizes and
         rates, a missing file, random bytes, an empty file, an audio-only file and an MP4 without
         its moov, on the virtual clock with headless output. The process's resident memory
         (VmRSS), open file descriptors and threads are read from /proc twenty times a second,
         keyed by the transition count (the trace's start-file events), and, every N/20
         transitions, with the player paused (over the control socket) so that nothing moves.
         Resident memory swings by several MB from one reading to the next (glibc gives each
         item's decoder threads their own malloc arenas, which keep their free memory), so each
         end is the median over a window of N/10 transitions: N/10..2N/10 against the last N/10.
         Passes when: that median grew less than --max-rss-growth-kb (2048) (judged from N =
         5,000 on: shorter runs only report it); the paused fd and thread counts at the end are
         at most --tolerance (2) above those at N/10, and no paused reading is more above; the trace (tools/check-trace.py,
         in pieces between the pauses) has no gap, drop, repeat, cadence error or blank; every
         pass of a good item shows all its frames; every bad item ends with an error naming the
         file, in the trace and the log.
torture  Each hostile file (zero bytes, random bytes, text named .mp4, truncated at several
         points, bit-flipped with several seeds, no moov, audio only, huge dimensions, timestamp
         jumps) is played between two good clips, for a few passes, by a process of its own. Then a
         folder playlist whose files are replaced, rewritten, deleted, added, and completed after
         a partial copy while it plays; once it stands still, every file in it must play again.
         Passes when the process stays up and exits 0 when asked, shows no blank, the good clips
         show every frame with no gap around the hostile item, no picture of the hostile item
         stays up over 1 s (a frozen picture), and a hostile item that shows no frame ends with an
         error naming the file (in the trace and the log).

Usage: soak.py [--marquee PATH] [--transitions N] [--only soak|torture] [--results FILE] [--keep]
Exit status: 0 when every check passes, 1 when one fails, 2 for a usage or setup error.
Python 3 standard library only.
"""
import argparse
import importlib.util
import json
import os
import random
import re
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def load_check_trace():
    spec = importlib.util.spec_from_file_location("check_trace", os.path.join(HERE, "check-trace.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


check_trace = load_check_trace()


# ---------------------------------------------------------------------------------------------
# Media


def ffmpeg(out, args):
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y"] + args + [out], check=True)
    return out


def clip(folder, name, size, rate, frames, extra=()):
    """A tiny H.264 clip of `frames` frames of testsrc2."""
    return ffmpeg(os.path.join(folder, name), [
        "-f", "lavfi", "-i", f"testsrc2=size={size}:rate={rate}", "-frames:v", str(frames),
        "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", *extra])


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return path


def png_chunk(kind, body):
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)


def png_claiming(width, height):
    """A PNG whose header claims width x height, with one tiny (wrong-sized) IDAT."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", header)
            + png_chunk(b"IDAT", zlib.compress(b"\x00" * 64)) + png_chunk(b"IEND", b""))


def without_moov(data):
    """The MP4 `data` with its top-level moov box cut out. (Renaming it `free` is not enough:
    FFmpeg reads a moov found inside a free box.)"""
    at = 0
    while at + 8 <= len(data):
        size = struct.unpack(">I", data[at:at + 4])[0]
        if data[at + 4:at + 8] == b"moov":
            return data[:at] + data[at + size:]
        if size < 8:
            break
        at += size
    raise ValueError("no moov box")


def bit_flipped(data, seed, flips=40, skip=48):
    """`data` with `flips` random bits flipped past the first `skip` bytes (seeded: reproducible)."""
    rng = random.Random(seed)
    out = bytearray(data)
    for _ in range(flips):
        at = rng.randrange(skip, len(out))
        out[at] ^= 1 << rng.randrange(8)
    return bytes(out)


def make_hostile(folder):
    """The hostile files: a list of (kind, path)."""
    src = os.path.join(folder, "src")
    os.makedirs(src, exist_ok=True)
    # A 2 s source (60 frames, keyframe every 10) with its moov at the end, and a faststart copy.
    tail_moov = clip(src, "tail.mp4", "96x54", 30, 60, ["-g", "10"])
    fast = clip(src, "fast.mp4", "96x54", 30, 60, ["-g", "10", "-movflags", "+faststart"])
    frag = clip(src, "frag.mp4", "96x54", 30, 60, ["-g", "10", "-movflags", "frag_keyframe+empty_moov"])
    tail_data, fast_data, frag_data = (open(p, "rb").read() for p in (tail_moov, fast, frag))
    h = []
    add = lambda kind, name, data: h.append((kind, write(os.path.join(folder, name), data)))
    add("zero bytes", "zero.mp4", b"")
    add("random bytes", "random.mp4", random.Random(1).randbytes(64 * 1024))
    add("text named .mp4", "text.mp4", b"This is not a video.\nJust a note someone saved as .mp4.\n" * 20)
    for cut in (0.1, 0.5, 0.9):
        add(f"truncated at {int(cut * 100)}% (moov at end)", f"trunc-tail-{int(cut * 100)}.mp4", tail_data[:int(len(tail_data) * cut)])
    for cut in (0.1, 0.5, 0.9):
        add(f"truncated at {int(cut * 100)}% (faststart)", f"trunc-fast-{int(cut * 100)}.mp4", fast_data[:int(len(fast_data) * cut)])
    for seed in (1, 2, 3):
        add(f"bit-flipped (seed {seed}, 40 bits)", f"flipped-{seed}.mp4", bit_flipped(fast_data, seed))
    add("no moov (box cut out)", "nomoov.mp4", without_moov(fast_data))
    add("fragmented, cut mid-fragment", "frag-cut.mp4", frag_data[:int(len(frag_data) * 0.55)])
    h.append(("audio only", ffmpeg(os.path.join(folder, "audio.mp4"),
                                   ["-f", "lavfi", "-i", "sine=frequency=440:duration=1", "-c:a", "aac"])))
    h.append(("huge PNG 16400x16", ffmpeg(os.path.join(folder, "wide.png"),
                                          ["-f", "lavfi", "-i", "color=c=blue:size=16400x16", "-frames:v", "1", "-c:v", "png", "-f", "image2"])))
    add("PNG header claiming 65535x65535", "claims-65535.png", png_claiming(65535, 65535))
    add("y4m header claiming 65535x65535", "claims-65535.y4m",
        b"YUV4MPEG2 W65535 H65535 F30:1 Ip A1:1 C420jpeg\nFRAME\n" + b"\x80" * 4096)
    # Concatenated MPEG-TS recordings: the second part's timestamps jump back, or 100 s forward.
    a = clip(src, "a.ts", "96x54", 30, 30, ["-f", "mpegts"])
    back = clip(src, "back.ts", "96x54", 30, 30, ["-f", "mpegts", "-output_ts_offset", "0"])
    fwd = clip(src, "fwd.ts", "96x54", 30, 30, ["-f", "mpegts", "-output_ts_offset", "100"])
    a_data = open(a, "rb").read()
    add("timestamps jump back (concatenated TS)", "jump-back.ts", a_data + open(back, "rb").read())
    add("timestamps jump 100 s forward (concatenated TS)", "jump-forward.ts", a_data + open(fwd, "rb").read())
    return h


# ---------------------------------------------------------------------------------------------
# The process


def read_proc(pid):
    """(VmRSS in kB, open fds, threads), or None once the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        return rss, len(os.listdir(f"/proc/{pid}/fd")), len(os.listdir(f"/proc/{pid}/task"))
    except (OSError, StopIteration):
        return None


def thread_names(pid):
    """How many threads of each name (/proc/PID/task/*/comm) the process has."""
    names = {}
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{task}/comm") as f:
                    name = f.read().strip()
                names[name] = names.get(name, 0) + 1
            except OSError:
                pass
    except OSError:
        pass
    return dict(sorted(names.items()))


class Marquee:
    """A marquee process on the virtual clock with headless output, its trace followed as it grows."""

    def __init__(self, binary, config, folder, name, mode="160x90@60", exit_after=1e6, clock="virtual"):
        self.trace = os.path.join(folder, f"{name}.jsonl")
        self.log_path = os.path.join(folder, f"{name}.log")
        self.socket = os.path.join(folder, f"{name}.sock")
        self.log_file = open(self.log_path, "wb")
        self.process = subprocess.Popen(
            ["nice", "-n", "10", binary, "--config", config, "--output", "headless", "--mode", mode,
             "--clock", clock, "--exit-after", str(exit_after), "--trace", self.trace,
             "--socket", self.socket],
            stdin=subprocess.DEVNULL, stdout=self.log_file, stderr=subprocess.STDOUT)
        self.lines = []
        self.transitions = 0
        self._offset = 0
        self._partial = b""

    @property
    def pid(self):
        return self.process.pid

    def poll_trace(self):
        """Reads what the trace gained; returns the start-file count so far."""
        try:
            with open(self.trace, "rb") as f:
                f.seek(self._offset)
                data = f.read()
        except FileNotFoundError:
            return self.transitions
        self._offset += len(data)
        data = self._partial + data
        *complete, self._partial = data.split(b"\n")
        for raw in complete:
            if raw.strip():
                line = json.loads(raw)
                self.lines.append(line)
                if line.get("type") == "event" and line.get("event") == "start-file":
                    self.transitions += 1
        return self.transitions

    def request(self, command, timeout=5):
        """One control-socket request; its reply, or None."""
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(timeout)
                s.connect(self.socket)
                s.sendall(json.dumps({"command": command, "request_id": 1}).encode() + b"\n")
                buffer = b""
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        return None
                    buffer += chunk
                    while b"\n" in buffer:
                        line, buffer = buffer.split(b"\n", 1)
                        reply = json.loads(line)
                        if reply.get("request_id") == 1 and "event" not in reply:
                            return reply
        except (OSError, ValueError):
            return None

    def stop(self, timeout=20):
        """SIGTERM, then the exit status (None if it had to be killed)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            status = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            status = None
        self.log_file.close()
        self.poll_trace()
        return status

    @property
    def log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")


def write_config(path, uris=None, directory=None):
    playlist = {"directory": directory} if directory else [u if isinstance(u, dict) else {"uri": u} for u in uris]
    with open(path, "w") as f:
        json.dump({"playlist": playlist, "loop": True, "log": {"level": "info"}}, f)
    return path


def figures_of(lines):
    """check-trace's figures for the one output."""
    report = check_trace.check(lines, None)
    return next(iter(report.values()), {"frames": 0, "gaps": 0, "drops": 0, "repeats": 0,
                                        "cadence_errors": 0, "blanks_after_start": 0, "problems": []})


def frame_runs(lines):
    """Consecutive frame lines of one item, as (item, uri, [pts]) runs in order."""
    runs = []
    for line in lines:
        if line.get("type") != "frame":
            continue
        if runs and runs[-1][0] == line["item"] and line["pts"] > runs[-1][2][-1]:
            runs[-1][2].append(line["pts"])
        else:
            runs.append((line["item"], line["uri"], [line["pts"]]))
    return runs


def item_errors(lines):
    """uri -> the error of each end-file event with reason error."""
    errors = {}
    for line in lines:
        if line.get("event") == "end-file" and line.get("reason") == "error":
            errors.setdefault(line["uri"], []).append(line.get("error", ""))
    return errors


# ---------------------------------------------------------------------------------------------
# Part 1: the soak


def soak(binary, folder, transitions, max_growth_kb, tolerance):
    clips = {  # name -> frames
        "c0.mp4": 3, "c1.mp4": 5, "c2.mp4": 2,
    }
    c0 = clip(folder, "c0.mp4", "64x36", 30, 3)
    c1 = clip(folder, "c1.mp4", "80x44", 25, 5)  # 0.2 s: each item a whole number of 60 Hz vsyncs
    c2 = clip(folder, "c2.mp4", "48x28", 30, 2)
    missing = os.path.join(folder, "missing.mp4")
    corrupt = write(os.path.join(folder, "corrupt.mp4"), random.Random(7).randbytes(32 * 1024))
    empty = write(os.path.join(folder, "empty.mp4"), b"")
    # Two that fail after the container opened: no video stream, and no moov (the error paths
    # that must close what they opened).
    audio = ffmpeg(os.path.join(folder, "audio.mp4"), ["-f", "lavfi", "-i", "sine=duration=0.5", "-c:a", "aac"])
    nomoov = write(os.path.join(folder, "nomoov.mp4"), without_moov(open(clip(folder, "whole.mp4", "64x36", 30, 3, ["-movflags", "+faststart"]), "rb").read()))
    uris = [c0, missing, c1, corrupt, c2, audio, c0, empty, c1, nomoov]
    bad = {missing, corrupt, empty, audio, nomoov}
    config = write_config(os.path.join(folder, "soak.json"), uris)

    mark = max(1, transitions // 10)
    step = max(1, transitions // 20)  # a paused reading every `step` transitions
    started = time.monotonic()
    m = Marquee(binary, config, folder, "soak")
    samples = []  # running: (transitions, seconds, rss kB, fds, threads)
    paused = []   # paused readings, the same fields
    names = {}    # transitions -> thread names, paused
    splits = []   # trace line counts at the pauses
    failures = []
    print(f"soak: {transitions} transitions of {len(uris)} items ({len(bad)} bad), pid {m.pid}", flush=True)
    next_pause = step
    while True:
        count = m.poll_trace()
        sample = read_proc(m.pid)
        if sample is None or m.process.poll() is not None:
            failures.append(f"the process ended after {count} transitions (status {m.process.poll()})")
            break
        samples.append((count, round(time.monotonic() - started, 3), *sample))
        if count >= next_pause:
            # The reading that counts is taken paused: running, resident memory swings by several
            # MB as decoders and their frame pools open and close at each transition, and the
            # thread count with them. Paused, one item's decoder is open and nothing moves; the
            # reading waits out the thread pools' 2 s idle time (ThreadPool.idleSeconds), or the
            # pools' threads of the last transitions count (3 more at the end once, under load).
            if m.request(["set_property", "pause", True]) is None:
                failures.append(f"no answer to pause at transition {count}")
                break
            time.sleep(2.5)
            reading = read_proc(m.pid)
            count = m.poll_trace()
            if reading is None:
                continue
            paused.append((count, round(time.monotonic() - started, 3), *reading))
            names[count] = thread_names(m.pid)
            splits.append(len(m.lines))
            print(f"  {count:6d} transitions  {time.monotonic() - started:7.1f} s  paused: rss {reading[0]} kB  "
                  f"fds {reading[1]}  threads {reading[2]}", flush=True)
            if count >= transitions:
                break
            m.request(["set_property", "pause", False])
            next_pause = (count // step + 1) * step
        if time.monotonic() - started > 3600:
            failures.append(f"timed out after {count} transitions")
            break
        time.sleep(0.05)
    health = m.request(["get_property", "health"])
    status = m.stop()
    elapsed = time.monotonic() - started
    if status != 0:
        failures.append(f"exit status {status} after SIGTERM (0 expected)")

    def window(rows, lo, hi, field):
        return [r[field] for r in rows if lo <= r[0] <= hi]

    # Memory: resident memory swings by several MB from one reading to the next, paused or not
    # (glibc gives the decoder threads of each item their own malloc arenas, whose free memory is
    # kept), so each end is the median of the running samples in a window of `mark` transitions:
    # N/10..2N/10 against the last N/10. Fds and threads: the paused readings, where nothing moves.
    result = {"transitions": m.transitions, "target": transitions, "seconds": round(elapsed, 1),
              "items": [os.path.basename(u) for u in uris], "bad_items": sorted(os.path.basename(u) for u in bad),
              "mark": mark, "pause_every": step, "windows": [[mark, 2 * mark], [transitions - mark, transitions]],
              "running_samples": len(samples), "paused_readings": [[r[0], r[2], r[3], r[4]] for r in paused]}
    early_rss, late_rss = window(samples, mark, 2 * mark, 2), window(samples, transitions - mark, transitions + mark, 2)
    early = {f: window(paused, mark, 2 * mark, f) for f in (2, 3, 4)}
    late = {f: window(paused, transitions - mark, transitions + mark, f) for f in (2, 3, 4)}
    if paused and paused[-1][0] >= transitions and early[2] and late[2] and early_rss and late_rss:
        growth = int(statistics.median(late_rss) - statistics.median(early_rss))
        first = next(r for r in paused if r[0] >= mark)
        result.update({
            "rss_kb_early": int(statistics.median(early_rss)), "rss_kb_late": int(statistics.median(late_rss)),
            "rss_growth_kb": growth,
            "rss_kb_paused_early": int(statistics.median(early[2])), "rss_kb_paused_late": int(statistics.median(late[2])),
            "rss_kb_paused_at_mark": first[2], "rss_kb_paused_at_end": paused[-1][2],
            "transition_at_mark": first[0], "transition_at_end": paused[-1][0],
            "thread_names_at_mark": names.get(first[0]), "thread_names_at_end": names.get(paused[-1][0]),
            "fds_early": int(statistics.median(early[3])), "fds_late": int(statistics.median(late[3])),
            "threads_early": int(statistics.median(early[4])), "threads_late": int(statistics.median(late[4])),
        })
        later = [r for r in samples if r[0] >= mark]
        xs, ys = [r[0] for r in later], [r[2] for r in later]
        mx, my = statistics.fmean(xs), statistics.fmean(ys)
        sxx = sum((x - mx) ** 2 for x in xs)
        # Least-squares slope of resident memory over transitions, in kB per 1,000 transitions.
        result["rss_slope_kb_per_1000"] = round(1000 * sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx, 1) if sxx else 0
        result["memory_judged"] = transitions >= 5000
        if growth >= max_growth_kb and transitions >= 5000:
            failures.append(f"resident memory grew {growth} kB (median over transitions {transitions - mark}..{transitions} "
                            f"against {mark}..{2 * mark}; limit {max_growth_kb} kB)")
        paused_later = [r for r in paused if r[0] >= mark]
        for name, field in (("fds", 3), ("threads", 4)):
            a, b = result[f"{name}_early"], result[f"{name}_late"]
            highest = max(r[field] for r in paused_later)
            # Only growth is a leak: fewer at the end is a pool's idle threads gone (probes).
            if b - a > tolerance or highest > a + tolerance:
                failures.append(f"{name}: {b} (paused, transitions {transitions - mark}..{transitions}) against {a} "
                                f"({mark}..{2 * mark}), highest paused reading {highest} (tolerance +{tolerance})")
    else:
        failures.append(f"only {m.transitions} of {transitions} transitions")
    # Running fds and threads, reported: (lowest, median, highest) over the two windows.
    for name, field in (("rss_kb", 2), ("fds", 3), ("threads", 4)):
        for label, lo, hi in (("early", mark, 2 * mark), ("late", transitions - mark, transitions + mark)):
            values = window(samples, lo, hi, field)
            if values:
                result[f"running_{name}_{label}"] = [min(values), int(statistics.median(values)), max(values)]

    # The trace: no gap, drop, repeat, cadence error or blank; every good pass complete. A pause
    # moves the virtual clock on by however many vsyncs the paused loop let pass (a few: it
    # waits while every player is paused), so the trace is checked in pieces between the pauses:
    # each piece ends at a `pause` line (a picture pulled before the pause may be drawn, and its
    # frame line written, after it) and the next starts at the first start-file after the
    # `unpause` line (the item that was paused resumes off its vsync grid: a 25 fps frame is 2.4
    # vsyncs, so the resumed remainder is left out). Wall times say nothing here: a starved
    # process writes its lines late.
    figures = {"frames": 0, "item_changes": 0, "gaps": 0, "drops": 0, "repeats": 0, "cadence_errors": 0,
               "blanks_after_start": 0, "problems": []}
    result["pauses"] = len(splits)
    pieces, lo, paused_at = [], 0, None
    for i, line in enumerate(m.lines):
        event = line.get("event") if line.get("type") == "event" else None
        if event == "pause" and paused_at is None:
            pieces.append((lo, i))
            paused_at = i
        elif event == "unpause" and paused_at is not None:
            lo = next((j for j in range(i, len(m.lines)) if m.lines[j].get("event") == "start-file"), len(m.lines))
            paused_at = None
    if paused_at is None:
        pieces.append((lo, len(m.lines)))
    result["trace_pieces"] = len(pieces)
    for lo, hi in pieces:
        piece = figures_of(m.lines[lo:hi])
        for key in figures:
            figures[key] += piece.get(key, 0 if key != "problems" else [])
    for name in ("gaps", "drops", "repeats", "cadence_errors", "blanks_after_start"):
        result[name] = figures[name]
        if figures[name]:
            failures.append(f"trace: {figures[name]} {name}: " + "; ".join(figures["problems"][:5]))
    result["frames"] = figures["frames"]
    result["item_changes_checked"] = figures["item_changes"]
    runs = frame_runs(m.lines)
    incomplete = [(uri, len(pts)) for _, uri, pts in runs[:-1] if uri not in bad and len(pts) != clips[os.path.basename(uri)]]
    result["good_runs"] = len(runs)
    result["incomplete_good_runs"] = len(incomplete)
    if incomplete:
        failures.append(f"{len(incomplete)} passes of a good item did not show all its frames, e.g. {incomplete[:3]}")
    shown_bad = {uri for _, uri, _ in runs if uri in bad}
    if shown_bad:
        failures.append(f"bad items showed frames: {sorted(shown_bad)}")
    starts = [l["uri"] for l in m.lines if l.get("event") == "start-file"]
    errors = item_errors(m.lines)
    log = m.log
    for uri in sorted(bad):
        started_n = sum(1 for u in starts if u == uri)
        named = [e for e in errors.get(uri, []) if uri in e]
        slack = 1 if starts and starts[-1] == uri else 0  # only the run's last start may be cut by the stop
        if started_n and len(named) < started_n - slack:
            failures.append(f"{uri}: {started_n} starts but {len(named)} end-file errors naming it")
        if not re.search(r"level=error.*" + re.escape(uri) + r".*error=", log):
            failures.append(f"{uri}: no error line naming it in the log")
    result["bad_item_errors"] = {os.path.basename(u): (errors.get(u) or ["(none)"])[0] for u in sorted(bad)}
    result["health_at_end"] = (health or {}).get("data")
    result["exit_status"] = status
    result["failures"] = failures
    print(f"soak: {m.transitions} transitions in {elapsed:.1f} s; median rss {result.get('rss_kb_early')} kB over transitions "
          f"{mark}..{2 * mark} -> {result.get('rss_kb_late')} kB over {transitions - mark}..{transitions} "
          f"(growth {result.get('rss_growth_kb')} kB, slope {result.get('rss_slope_kb_per_1000')} kB/1000; paused readings "
          f"{result.get('rss_kb_paused_early')} -> {result.get('rss_kb_paused_late')} kB); paused fds {result.get('fds_early')} -> "
          f"{result.get('fds_late')}, threads {result.get('threads_early')} -> {result.get('threads_late')}; running (lowest, median, "
          f"highest): fds {result.get('running_fds_early')} -> {result.get('running_fds_late')}, threads "
          f"{result.get('running_threads_early')} -> {result.get('running_threads_late')}; "
          f"trace: {figures['frames']} frames, gaps {figures['gaps']}, drops {figures['drops']}, "
          f"repeats {figures['repeats']}, cadence errors {figures['cadence_errors']}, blanks {figures['blanks_after_start']}",
          flush=True)
    return result


# ---------------------------------------------------------------------------------------------
# Part 2: the torture run


def play_until(m, predicate, limit):
    """Follows the trace until predicate(m) or the process ends or `limit` wall seconds pass."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        m.poll_trace()
        if predicate(m) or m.process.poll() is not None:
            return
        time.sleep(0.05)


def torture_one(binary, folder, kind, path, before, after, passes=3):
    """`before`, the hostile file, `after`, looped `passes` times by a process of its own."""
    name = re.sub(r"[^a-z0-9]+", "-", os.path.basename(path).lower())
    # A picture shows for its item's duration: 0.5 s here, so that the 1 s freeze limit holds.
    item = {"uri": path, "duration": 0.5} if path.endswith(".png") else path
    config = write_config(os.path.join(folder, f"t-{name}.json"), [before, item, after])
    m = Marquee(binary, config, folder, f"t-{name}")
    started = time.monotonic()
    play_until(m, lambda m: m.transitions > 3 * passes, 60)
    alive = m.process.poll() is None
    status = m.stop()
    seconds = time.monotonic() - started
    runs = frame_runs(m.lines)
    figures = figures_of(m.lines)
    starts = [l for l in m.lines if l.get("event") == "start-file" and l["uri"] == path]
    errors = item_errors(m.lines).get(path, [])
    shown = [pts for _, uri, pts in runs if uri == path]
    good_runs = [(uri, len(pts)) for _, uri, pts in runs[:-1] if uri in (before, after)]
    # Problems that concern a good clip (a gap at its start, a drop in it) or the screen (a blank).
    good_items = {l["item"] for l in m.lines if l.get("type") == "frame" and l["uri"] in (before, after)}
    good_problems = [p for p in figures["problems"]
                     if p.startswith("blank") or any(int(i) in good_items for i in re.findall(r"item (\d+)", p)[:1])]
    log_lines = [l for l in m.log.splitlines() if path in l and "level=error" in l]
    warnings = [l for l in m.log.splitlines() if path in l and "level=warning" in l]
    # The longest time one picture of the hostile item stayed up (a timestamp jump can freeze it).
    frames = [l for l in m.lines if l.get("type") == "frame"]
    held = [(b["t"] - a["t"], a["pts"]) for a, b in zip(frames, frames[1:]) if a["uri"] == path]
    longest_hold = max(held, default=(0.0, None))
    outcome = {"kind": kind, "file": os.path.basename(path), "bytes": os.path.getsize(path) if os.path.exists(path) else None,
               "passes": len(starts), "alive_at_end": alive, "exit_status": status, "seconds": round(seconds, 1),
               "frames_shown": sum(len(p) for p in shown), "trace_error": errors[0] if errors else None,
               "log_error": log_lines[0] if log_lines else None, "log_warning": warnings[0] if warnings else None,
               "longest_hold_s": round(longest_hold[0], 3),
               "good_passes": len(good_runs), "incomplete_good_passes": sum(1 for _, n in good_runs if n != 10),
               "gaps": figures["gaps"], "blanks": figures["blanks_after_start"], "problems_of_good_items": good_problems[:5],
               "other_problems": [p for p in figures["problems"] if p not in good_problems][:3]}
    failures = []
    if not alive or status != 0:
        tail = "\n".join(m.log.splitlines()[-5:])
        failures.append(f"the process {'ended' if not alive else 'did not exit cleanly'} (status {status}); "
                        f"log tail:\n{tail}")
    if len(starts) < 2 and alive:
        failures.append(f"the hostile item started {len(starts)} times in {seconds:.0f} s (the playlist stalled?)")
    if good_problems:
        failures.append("good clips: " + "; ".join(good_problems[:3]))
    if longest_hold[0] > 1.0:
        failures.append(f"the picture froze {longest_hold[0]:.1f} s on pts {longest_hold[1]} (a frame held over 1 s)")
    if outcome["incomplete_good_passes"]:
        failures.append(f"{outcome['incomplete_good_passes']} passes of a good clip did not show its 10 frames")
    if not shown and alive:
        # Not played at all: it must be an error naming the file, in the trace and the log.
        if not errors or not all(path in e for e in errors):
            failures.append(f"skipped without an end-file error naming the file: {errors[:1]}")
        if not log_lines:
            failures.append("no error line naming the file in the log")
    outcome["outcome"] = ("crashed or hung" if not alive or status != 0 else
                          f"played {outcome['frames_shown']} frames over {len(starts)} passes" + (f", then error: {errors[0]}" if errors else "")
                          + ("" if log_lines or warnings else " (no warning or error in the log)")
                          if shown else f"skipped: {errors[0] if errors else '(no error)'}")
    outcome["failures"] = failures
    return outcome


def torture_churn(binary, folder, seconds=12):
    """A folder playlist whose files are replaced, rewritten, deleted and added while it plays."""
    watched = os.path.join(folder, "watched")
    os.makedirs(watched, exist_ok=True)
    src = os.path.join(folder, "src")
    os.makedirs(src, exist_ok=True)
    variants = [clip(src, f"v{i}.mp4", size, 30, 10) for i, size in enumerate(("64x36", "80x44", "96x54", "48x28"))]
    for name, v in (("a.mp4", 0), ("b.mp4", 1), ("c.mp4", 2)):
        shutil.copy(variants[v], os.path.join(watched, name))
    # f.mp4 is a third written (a copy still in progress) for the whole churn, and completed at its
    # end: once complete it must play (a failed probe is retried).
    late = open(variants[2], "rb").read()
    write(os.path.join(watched, "f.mp4"), late[:len(late) // 3])
    config = write_config(os.path.join(folder, "churn.json"), directory=watched)
    m = Marquee(binary, config, folder, "churn")
    rng = random.Random(5)
    actions = []
    started = time.monotonic()
    d_appeared = None
    step = 0
    while time.monotonic() - started < seconds and m.process.poll() is None:
        time.sleep(0.15 + rng.random() * 0.2)
        step += 1
        choice = step % 5
        if choice == 0:  # b.mp4 replaced atomically (rename over it) by another clip
            tmp = os.path.join(watched, ".b.tmp")
            shutil.copy(variants[rng.randrange(4)], tmp)
            os.replace(tmp, os.path.join(watched, "b.mp4"))
            actions.append("b.mp4 replaced by rename")
        elif choice == 1:  # c.mp4 rewritten in place, slowly (truncated, then written in pieces)
            data = open(variants[rng.randrange(4)], "rb").read()
            with open(os.path.join(watched, "c.mp4"), "wb") as f:
                for at in range(0, len(data), 1024):
                    f.write(data[at:at + 1024])
                    f.flush()
                    time.sleep(0.002)
            actions.append("c.mp4 rewritten in place")
        elif choice == 2:  # a.mp4 deleted, or put back
            a = os.path.join(watched, "a.mp4")
            if os.path.exists(a):
                os.unlink(a)
                actions.append("a.mp4 deleted")
            else:
                shutil.copy(variants[0], a)
                actions.append("a.mp4 appeared")
        elif choice == 3:  # d.mp4 appears (once), e.mp4 appears half-written then is completed
            d = os.path.join(watched, "d.mp4")
            if not os.path.exists(d):
                shutil.copy(variants[3], d)
                d_appeared = time.monotonic()
                actions.append("d.mp4 appeared")
            else:
                data = open(variants[1], "rb").read()
                e = os.path.join(watched, "e.mp4")
                write(e, data[:len(data) // 3])
                time.sleep(0.05)
                write(e, data)
                actions.append("e.mp4 appeared half-written, then completed")
        else:  # a junk file appears and goes
            junk = os.path.join(watched, "junk.mp4")
            if os.path.exists(junk):
                os.unlink(junk)
                actions.append("junk.mp4 deleted")
            else:
                write(junk, random.Random(step).randbytes(8192))
                actions.append("junk.mp4 (random bytes) appeared")
        m.poll_trace()
    write(os.path.join(watched, "f.mp4"), late)
    actions.append("f.mp4 completed")
    # Settle: the folder stays as it is now. Every clip in it must play again (at most 20 s).
    final = sorted(n for n in os.listdir(watched) if n.endswith(".mp4") and n != "junk.mp4")
    settled = len(m.lines)
    shown_after = lambda m: {os.path.basename(uri) for _, uri, _ in frame_runs(m.lines[settled:])}
    play_until(m, lambda m: set(final) <= shown_after(m) and m.transitions > 12, 20)
    alive = m.process.poll() is None
    status = m.stop()
    figures = figures_of(m.lines)
    played = {os.path.basename(uri) for _, uri, _ in frame_runs(m.lines)}
    missing = sorted(set(final) - shown_after(m))
    errors = {os.path.basename(u): e[0] for u, e in item_errors(m.lines).items()}
    failures = []
    if not alive or status != 0:
        failures.append(f"the process {'ended' if not alive else 'did not exit cleanly'} (status {status})")
    for name in ("gaps", "blanks_after_start"):
        if figures[name]:
            failures.append(f"trace: {figures[name]} {name}: " + "; ".join(figures["problems"][:3]))
    if missing and alive:
        failures.append(f"not played again within 20 s once the folder stood still: {missing}")
    if d_appeared is not None and "d.mp4" not in played:
        failures.append("d.mp4, added while playing, never played")
    result = {"kind": "files replaced/rewritten/deleted/appearing in a folder playlist", "seconds": seconds,
              "actions": len(actions), "action_kinds": sorted(set(actions)), "transitions": m.transitions,
              "played": sorted(played), "final_files": final, "not_played_at_end": missing, "errors": errors, "alive_at_end": alive, "exit_status": status,
              "gaps": figures["gaps"], "drops": figures["drops"], "repeats": figures["repeats"],
              "cadence_errors": figures["cadence_errors"], "blanks": figures["blanks_after_start"],
              "problems": figures["problems"][:5], "failures": failures}
    result["outcome"] = (f"{len(actions)} changes over {seconds} s; {m.transitions} transitions; played {sorted(played)}; "
                         f"{len(errors)} files failed at least once")
    return result


def torture(binary, folder):
    good_a = clip(folder, "good-a.mp4", "64x36", 30, 10)
    good_b = clip(folder, "good-b.mp4", "80x44", 30, 10)
    results = []
    for kind, path in make_hostile(folder):
        outcome = torture_one(binary, folder, kind, path, good_a, good_b)
        mark = "FAIL" if outcome["failures"] else "ok  "
        print(f"torture {mark} {kind}: {outcome['outcome']}", flush=True)
        for f in outcome["failures"]:
            print(f"    {f}", flush=True)
        results.append(outcome)
    churn = torture_churn(binary, folder)
    print(f"torture {'FAIL' if churn['failures'] else 'ok  '} {churn['kind']}: {churn['outcome']}", flush=True)
    for f in churn["failures"]:
        print(f"    {f}", flush=True)
    results.append(churn)
    return results


# ---------------------------------------------------------------------------------------------
# Part 3: the live soak


class Fixture:
    """A tools/netfixture.py server (or another command that prints "port N" first)."""

    def __init__(self, args, lifetime, command=None):
        env = dict(os.environ, NETFIXTURE_LIFETIME=str(int(lifetime)))
        command = command or [sys.executable, os.path.join(HERE, "netfixture.py")]
        self.process = subprocess.Popen(command + args, env=env,
                                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        first = self.process.stdout.readline().decode()
        if not first.startswith("port "):
            raise RuntimeError(f"netfixture {args}: no port ({first!r})")
        self.port = int(first.split()[1])

    def stop(self):
        self.process.kill()
        self.process.wait()


def trace_frame_walls(path):
    """The wall time (CLOCK_REALTIME) of every frame the trace shows (read once, after the run:
    marquee writes its trace in batches)."""
    walls = []
    with open(path, "rb") as f:
        for raw in f:
            if b'"frame"' in raw:
                line = json.loads(raw)
                if line.get("type") == "frame" and "wall" in line:
                    walls.append(line["wall"])
    return walls


def load_g2g():
    spec = importlib.util.spec_from_file_location("g2g", os.path.join(REPO, "bench", "g2g.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def shown_number(m, g2g):
    """(the frame number on the output now, the request's CLOCK_REALTIME time), read from a
    screenshot (bench/g2g.py's blocks); the number is None when it does not read cleanly."""
    import base64
    asked = time.time()
    reply = m.request(["screenshot"], timeout=10)
    picture = (reply or {}).get("data")
    if not isinstance(picture, dict) or "data" not in picture:
        return None, asked
    gray = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-f", "png_pipe", "-i", "pipe:0", "-vf",
                           f"scale={g2g.WIDTH}:{g2g.HEIGHT},format=gray", "-f", "rawvideo", "pipe:1"],
                          input=base64.b64decode(picture["data"]), capture_output=True).stdout
    if len(gray) < g2g.WIDTH * g2g.HEIGHT:
        return None, asked
    return g2g.read_counter(gray, g2g.WIDTH, g2g.HEIGHT), asked


def per_minute(rows):
    """Each minute's medians of the polled figures (the raw reads are not kept)."""
    minutes = {}
    for r in rows:
        minutes.setdefault(int(r["t"] // 60), []).append(r)
    out = []
    for minute, part in sorted(minutes.items()):
        def med(key, skip_cuts=True):
            # Lag and latency read while a cut source is away are not the lag: left out.
            values = [r[key] for r in part if r.get(key) is not None and not (skip_cuts and r.get("after_cut"))]
            return round(statistics.median(values), 4) if values else None
        out.append({"minute": minute, "rss_mb": round(med("rss_kb", False) / 1024, 2), "lag_s": med("lag"),
                    "latency_s": med("latency"), "fds": max(r["fds"] for r in part), "threads": max(r["threads"] for r in part)})
    return out


def live_soak(binary, folder, seconds, cut_every, poll, size, bound, settle, source="http"):
    """A live source played on the headless output at real time for `seconds`, through the
    cutting proxy, which cuts the connection every `cut_every` s. The source: `http`, netfixture
    live (H.264 in live Matroska, real time, 25 fps, `size`); `rtsp`, bench/g2g.py's RTSP source
    (its frame numbers drawn as blocks, 640x360, RTP interleaved in the RTSP connection), whose
    number on screen is read from a screenshot at each poll: the picture's true latency. Every
    `poll` s: live-lag, the drop counters, VmRSS, fds, threads. Passes when every lag read (and,
    for rtsp, every latency read after `settle` s but the 5 s after a cut) is within `bound`, the
    source is back after each cut, and resident memory after `settle` s stays within 5 MB
    (max - min)."""
    lifetime = seconds + 300
    g2g = None
    if source == "rtsp":
        g2g = load_g2g()
        size = f"{g2g.WIDTH}x{g2g.HEIGHT}"
        sent_log = os.path.join(folder, "live-soak-sent.log")
        server = Fixture(["source", "127.0.0.1", sent_log, str(lifetime), "tcp"], lifetime,
                         command=[os.path.join(REPO, "bench", "g2g.py")])
        proxy = Fixture(["proxy", str(server.port), "127.0.0.1"], lifetime)
        url = f"rtsp://127.0.0.1:{proxy.port}/counter"
        allow = "rtsp://127.0.0.1"
    else:
        server = Fixture(["live", "127.0.0.1"], lifetime)
        proxy = Fixture(["proxy", str(server.port), "127.0.0.1"], lifetime)
        url = f"http://127.0.0.1:{proxy.port}/live.mkv?size={size}"
        allow = "http://127.0.0.1"
    config = os.path.join(folder, "live-soak.json")
    with open(config, "w") as f:
        json.dump({"playlist": [{"uri": url}], "loop": True, "log": {"level": "info"},
                   "network": {"allow": [allow], "liveLatency": bound}}, f)
    m = Marquee(binary, config, folder, "live-soak", mode=f"{size}@60", exit_after=seconds + 120, clock="real")
    rows, cuts, failures = [], [], []

    def prop(name):
        reply = m.request(["get_property", name])
        return reply.get("data") if reply and reply.get("error") == "success" else None

    try:
        deadline = time.monotonic() + 30
        while prop("live-lag") is None:
            if time.monotonic() > deadline or m.process.poll() is not None:
                raise RuntimeError("no live-lag within 30 s; log:\n" + m.log[-3000:])
            time.sleep(0.2)
        started, started_wall = time.monotonic(), time.time()
        next_cut = cut_every
        while (t := time.monotonic() - started) < seconds:
            if m.process.poll() is not None:
                failures.append(f"marquee exited ({m.process.returncode}) at {t:.0f} s")
                break
            if t >= next_cut:
                backs = m.log.count("live source back")
                proxy.process.send_signal(signal.SIGUSR2)
                cut_at = time.monotonic()
                back = None
                while time.monotonic() - cut_at < 20:  # bounded: the source is back within 3 s
                    if m.log.count("live source back") > backs:
                        back = time.monotonic() - cut_at
                        break
                    time.sleep(0.05)
                cuts.append({"at_s": round(cut_at - started, 1), "back_after_s": None if back is None else round(back, 2)})
                if back is None:
                    failures.append(f"cut at {cut_at - started:.0f} s: the source not back within 20 s")
                next_cut += cut_every
                continue
            lag = prop("live-lag")
            drops = {name: prop(name) for name in ("decoder-frame-drop-count", "frame-drop-count")}
            proc = read_proc(m.pid)
            shown, asked = shown_number(m, g2g) if g2g else (None, None)
            if proc:
                rows.append({"t": round(time.monotonic() - started, 2), "lag": lag, "rss_kb": proc[0], "fds": proc[1],
                             "threads": proc[2], "shown": shown, "asked": asked, "decoder_drops": drops["decoder-frame-drop-count"],
                             "late_drops": drops["frame-drop-count"]})
            time.sleep(max(0.0, poll - (time.monotonic() - started - t)))
        threads_at_end = thread_names(m.pid)
        m.request(["quit"])
        status = m.stop()
        if status != 0:
            failures.append(f"exit status {status}")
    finally:
        if m.process.poll() is None:
            m.stop()
        proxy.stop()
        server.stop()

    walls = [w - started_wall for w in trace_frame_walls(m.trace)]
    for c in cuts:
        # The picture back: the first frame shown after the cut's gap (frames queued before the
        # cut may still show for a moment after it).
        after = [w for w in walls if w > c["at_s"]]
        gap = next((i for i in range(len(after) - 1) if after[i + 1] - after[i] > 0.3), None)
        c["picture_back_after_s"] = round(after[gap + 1] - c["at_s"], 2) if gap is not None else None
    if g2g:
        sent = {}
        with open(sent_log) as f:
            for line in f:
                n, t = line.split()
                sent[int(n)] = float(t)
        cut_times = [c["at_s"] for c in cuts]
        for r in rows:
            r["latency"] = round(r["asked"] - sent[r["shown"]], 4) if r["shown"] in sent else None
            # While a cut source is away its last picture stays up: reads then are not the lag.
            r["after_cut"] = any(0 <= r["t"] - c < 5 for c in cut_times)

    def window_of(lo, hi):
        part = [r for r in rows if lo <= r["t"] < hi]
        lags = sorted(r["lag"] for r in part if r["lag"] is not None)
        rss = [r["rss_kb"] for r in part]
        before = [r for r in rows if r["t"] < lo]
        shown = sum(1 for w in walls if lo <= w < hi)
        latency = sorted(r["latency"] for r in part if r.get("latency") is not None and not r["after_cut"])
        return {"from_s": lo, "to_s": hi, "reads": len(part), "lag_reads": len(lags),
                "lag_median_s": round(statistics.median(lags), 4) if lags else None,
                "lag_max_s": round(lags[-1], 4) if lags else None,
                "rss_min_mb": round(min(rss) / 1024, 2) if rss else None, "rss_max_mb": round(max(rss) / 1024, 2) if rss else None,
                "fds": sorted({r["fds"] for r in part}), "threads": sorted({r["threads"] for r in part}),
                "frames_shown": shown, "latency_reads": len(latency),
                "latency_median_s": round(statistics.median(latency), 4) if latency else None,
                "latency_max_s": round(latency[-1], 4) if latency else None,
                "decoder_drops": (part[-1]["decoder_drops"] or 0) - ((before[-1]["decoder_drops"] or 0) if before else 0) if part else 0}

    step = cut_every if cut_every > 0 else 300
    windows = [window_of(lo, min(lo + step, seconds)) for lo in range(0, int(seconds), int(step))]
    lags = [r["lag"] for r in rows if r["lag"] is not None]
    after = [r for r in rows if r["t"] >= settle]
    near_settle = min(after, key=lambda r: r["t"]) if after else None
    results = {
        "seconds": seconds, "cut_every_s": cut_every, "poll_s": poll, "size": size, "live_latency_bound_s": bound,
        "settle_s": settle, "url": url, "reads": len(rows), "lag_reads": len(lags),
        "lag_max_s": round(max(lags), 4) if lags else None,
        "lag_median_s": round(statistics.median(lags), 4) if lags else None,
        "lag_over_bound": sum(1 for x in lags if x > bound + 1e-3),
        "rss_at_settle_mb": round(near_settle["rss_kb"] / 1024, 2) if near_settle else None,
        "rss_at_end_mb": round(rows[-1]["rss_kb"] / 1024, 2) if rows else None,
        "rss_after_settle_min_mb": round(min(r["rss_kb"] for r in after) / 1024, 2) if after else None,
        "rss_after_settle_max_mb": round(max(r["rss_kb"] for r in after) / 1024, 2) if after else None,
        "fds_after_settle": sorted({r["fds"] for r in after}), "threads_after_settle": sorted({r["threads"] for r in after}),
        "threads_at_end": threads_at_end, "frames_shown": sum(1 for w in walls if 0 <= w < seconds),
        "decoder_drops": rows[-1]["decoder_drops"] if rows else None, "late_drops": rows[-1]["late_drops"] if rows else None,
        "cuts": cuts, "windows": windows, "per_minute": per_minute(rows),
    }
    if g2g:
        judged = [r for r in rows if r["t"] >= settle and not r["after_cut"]]
        latency = sorted(r["latency"] for r in judged if r["latency"] is not None)
        results.update({"latency_reads": len(latency), "latency_unread": sum(1 for r in judged if r["latency"] is None),
                        "latency_median_s": round(statistics.median(latency), 4) if latency else None,
                        "latency_max_s": round(latency[-1], 4) if latency else None,
                        "latency_after_cuts_max_s": max((r["latency"] for r in rows if r["after_cut"] and r["latency"] is not None), default=None),
                        "latency_over_bound": sum(1 for x in latency if x > bound)})
        if not latency and judged:
            failures.append("no frame number read from the screenshots")
        elif results["latency_over_bound"]:
            failures.append(f"{results['latency_over_bound']} of {len(latency)} screenshots showed a frame older than "
                            f"the bound {bound} s (max {results['latency_max_s']} s)")
    if not lags:
        failures.append("no live-lag read")
    if results["lag_over_bound"]:
        failures.append(f"{results['lag_over_bound']} lag reads over the bound {bound} s (max {results['lag_max_s']})")
    if after:
        spread = results["rss_after_settle_max_mb"] - results["rss_after_settle_min_mb"]
        results["rss_after_settle_spread_mb"] = round(spread, 2)
        if spread > 5:
            failures.append(f"resident memory after {settle} s moved {spread:.2f} MB (over 5)")
    results["failures"] = failures
    for w in windows:
        print(f"live-soak {w['from_s']:5.0f}-{w['to_s']:5.0f} s: lag median {w['lag_median_s']} max {w['lag_max_s']} s, "
              f"latency on screen median {w['latency_median_s']} max {w['latency_max_s']} s, "
              f"RSS {w['rss_min_mb']}-{w['rss_max_mb']} MB, fds {w['fds']}, threads {w['threads']}, "
              f"{w['frames_shown']} frames shown, {w['decoder_drops']} dropped", flush=True)
    print(f"live-soak: cuts {cuts}; RSS at {settle} s {results['rss_at_settle_mb']} MB, at the end {results['rss_at_end_mb']} MB, "
          f"after {settle} s {results['rss_after_settle_min_mb']}-{results['rss_after_settle_max_mb']} MB", flush=True)
    return results


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--marquee", default=os.path.join(REPO, ".build", "release", "marquee"))
    parser.add_argument("--transitions", type=int, default=10000)
    parser.add_argument("--only", choices=("soak", "torture", "live"),
                        help="live (never run by default): the live soak, --live-seconds long")
    parser.add_argument("--live-seconds", type=float, default=1800)
    parser.add_argument("--live-cut-every", type=float, default=300, help="seconds between the proxy's cuts")
    parser.add_argument("--live-poll", type=float, default=2.0)
    parser.add_argument("--live-size", default="640x360")
    parser.add_argument("--live-bound", type=float, default=1.0, help="network.liveLatency")
    parser.add_argument("--live-settle", type=float, default=180, help="resident memory judged from here on")
    parser.add_argument("--live-source", choices=("http", "rtsp"), default="http",
                        help="http: netfixture live; rtsp: bench/g2g.py's numbered frames, read back from screenshots")
    parser.add_argument("--max-rss-growth-kb", type=int, default=2048)
    parser.add_argument("--tolerance", type=int, default=2, help="fds and threads: allowed difference")
    parser.add_argument("--results", help="write the figures here as JSON")
    parser.add_argument("--keep", action="store_true", help="keep the media, traces and logs")
    args = parser.parse_args(argv[1:])
    if args.transitions < 20:
        parser.error("--transitions must be at least 20")
    if not os.access(args.marquee, os.X_OK):
        print(f"{args.marquee}: not an executable (make release builds it)", file=sys.stderr)
        return 2
    if shutil.which("ffmpeg") is None:
        print("ffmpeg: not found (make deps installs it)", file=sys.stderr)
        return 2
    folder = tempfile.mkdtemp(prefix="marquee-soak-")
    results = {"marquee": args.marquee, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "MALLOC_ARENA_MAX": os.environ.get("MALLOC_ARENA_MAX")}
    failed = False
    try:
        if args.only in (None, "soak"):
            results["soak"] = soak(args.marquee, folder, args.transitions, args.max_rss_growth_kb, args.tolerance)
            failed |= bool(results["soak"]["failures"])
            for f in results["soak"]["failures"]:
                print(f"soak FAIL: {f}", flush=True)
        if args.only in (None, "torture"):
            results["torture"] = torture(args.marquee, folder)
            failed |= any(r["failures"] for r in results["torture"])
        if args.only == "live":
            results["live"] = live_soak(args.marquee, folder, args.live_seconds, args.live_cut_every, args.live_poll,
                                        args.live_size, args.live_bound, args.live_settle, args.live_source)
            failed |= bool(results["live"]["failures"])
            for f in results["live"]["failures"]:
                print(f"live-soak FAIL: {f}", flush=True)
    finally:
        if args.keep:
            print(f"media, traces and logs kept in {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
    results["passed"] = not failed
    results["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    try:
        # The checkout's commit names the binary only when it was built here.
        if not os.path.realpath(args.marquee).startswith(REPO + os.sep):
            raise OSError("the binary was built elsewhere")
        commit = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True).stdout.strip()
        results["marquee_commit"] = f"Marquee {commit}" + ("+local changes" if dirty else "")
    except OSError:
        pass
    if args.results:
        # The media folder and the checkout's path are machine-specific: written as <media> and .
        text = json.dumps(results, indent=1).replace(folder, "<media>").replace(REPO + "/", "")
        with open(args.results, "w") as f:
            f.write(text + "\n")
    print("soak: PASSED" if not failed else "soak: FAILED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
