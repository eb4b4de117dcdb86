#!/usr/bin/env python3
"""Click-vs-flash offsets from a timed capture and a presentation trace.

av-offsets.py CAPTURE.raw CAPTURE.stamps TRACE.jsonl [--flash-seconds S] [--skip SECONDS]

CAPTURE.raw: 48 kHz stereo S16 little-endian, as tools/alsa-stamp-capture.c records it;
CAPTURE.stamps: its "FRAME MONOTONIC-SECONDS" lines (the capture position at that time) and the
"# realtime-monotonic OFFSET" header; TRACE.jsonl: marquee's --trace (frame lines with the pts
shown and the Unix time of the vsync that showed it, "wall").

The clip has a click at the start of each second of its timeline and a white flash on the frames
of [k, k + S) (S = --flash-seconds). For each click heard (the first loud sample after 100 ms of
quiet), its time is read off the capture's own timestamps (their lower envelope: see frame_time), put
on Unix time, and compared with the first frame of the flash the trace shows near it: the sound
of that frame's pts p is heard at click + (p - k), and the offset is that minus the frame's vsync
time. Positive: the sound comes late. A flash whose first frame was shown after its vsync (the
trace's `late`) gives no offset (flashes_shown_late counts them): it would measure the picture's
lateness, which the picture timing counts, not the sound. Prints JSON: the offsets (ms, with the
time into the run), p50/p95/max of their magnitude, the drift (a line fitted to offset over time, ms per minute), the
capture clock's rate against the system clock (ppm), what was left unmatched, and how the pictures
kept time after the skip (shown, shown late, never shown: see picture_timing).
"""
import argparse
import array
import bisect
import json
import sys

RATE = 48000


def read_stamps(path):
    """The header's offset and the stamps (frame, time, segment): a segment ends at an overrun or
    error the helper noted (frames were lost there, so times are compared within a segment)."""
    offset, points, segment = None, [], 0
    for line in open(path):
        if line.startswith("# realtime-monotonic"):
            offset = float(line.split()[2])
        elif line.startswith("# overrun") or line.startswith("# error"):
            segment += 1
        elif line.strip() and not line.startswith("#"):
            frame, t = line.split()
            points.append((int(frame), float(t), segment))
    if offset is None or len(points) < 2:
        sys.exit(f"av-offsets: {path} has no timing (offset {offset}, {len(points)} stamps)")
    points.sort()
    return offset, points


def frame_time(points, frames, f, window=2 * RATE):
    """Monotonic time of capture frame f. A stamp says the device's pointer stood at a frame at a
    time, but that time is when the pointer was last updated, which can come after the frame was
    reached (snd-aloop moves its pointer on the kernel's timer ticks: 4 ms steps at HZ=250), never
    before it. So each stamp within `window` frames of f (in f's segment) is carried to f at the
    nominal rate and the earliest is taken: the lower envelope, where the stamps are exact."""
    i = bisect.bisect_left(frames, f)
    near = points[max(0, i - 1)] if points else None
    segment = near[2]
    lo, hi = bisect.bisect_left(frames, f - window), bisect.bisect_right(frames, f + window)
    carried = [t + (f - fr) / RATE for fr, t, seg in points[lo:hi] if seg == segment]
    if carried:
        return min(carried)
    fr, t, _ = near
    return t + (f - fr) / RATE


def clicks(samples, threshold=0.3 * 32768, quiet_frames=RATE // 10):
    """Frames (of the left channel) where a click starts: loud after at least quiet_frames of quiet."""
    found, last_loud = [], -quiet_frames - 1
    for n in range(0, len(samples), 2):
        if abs(samples[n]) > threshold:
            frame = n // 2
            if frame - last_loud > quiet_frames:
                found.append(frame)
            last_loud = frame
    return found


def fit_line(xs, ys):
    if len(xs) < 2:
        return None
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx


def percentile(sorted_values, q):
    if not sorted_values:
        return None
    k = min(len(sorted_values) - 1, max(0, int(round(q * (len(sorted_values) - 1)))))
    return sorted_values[k]


def picture_timing(shown, skip):
    """How the pictures kept time after the first `skip` seconds, from the trace's frame lines
    (wall, timeline t, pts) in the order shown: `late` pictures were shown on a later vsync than
    their time (a flash shown late moves its offset by that much whatever the sound does),
    `missing` were never shown (dropped, or skipped by the decoder: a jump in pts). A loop starts
    again where pts goes back. On time means t - pts at its smallest for that pass, within a
    quarter of a frame."""
    if not shown:
        return {"pictures_shown": 0, "pictures_late": 0, "pictures_missing": 0}
    start = shown[0][0] + skip
    passes, current = [], []
    for wall, t, pts in shown:
        if current and pts < current[-1][2]:
            passes.append(current)
            current = []
        current.append((wall, t, pts))
    passes.append(current)
    counted = late = missing = 0
    for frames in passes:
        steps = sorted(b[2] - a[2] for a, b in zip(frames, frames[1:]) if b[2] > a[2])
        duration = steps[len(steps) // 2] if steps else 1 / 30
        base = min(t - pts for _, t, pts in frames)
        for i, (wall, t, pts) in enumerate(frames):
            if wall < start:
                continue
            counted += 1
            if t - pts - base > duration / 4:
                late += 1
            if i > 0 and pts - frames[i - 1][2] > 1.5 * duration:
                missing += int(round((pts - frames[i - 1][2]) / duration)) - 1
    return {"pictures_shown": counted, "pictures_late": late, "pictures_missing": missing}


def analyse(raw_path, stamps_path, trace_path, flash_seconds=0.1, skip=0.0):
    offset, points = read_stamps(stamps_path)
    frames = [p[0] for p in points]
    samples = array.array("h")
    with open(raw_path, "rb") as f:
        samples.frombytes(f.read())
    if sys.byteorder != "little":
        samples.byteswap()
    flashes, shown = [], []
    for line in open(trace_path):
        try:
            e = json.loads(line)
        except json.JSONDecodeError:
            continue
        if e.get("type") != "frame" or "wall" not in e:
            continue
        pts = e["pts"]
        if "t" in e:
            shown.append((e["wall"], e["t"], pts))
        k = int(pts + 1e-6)
        if pts - k < flash_seconds - 1e-6:
            flashes.append((e["wall"], pts, k, e.get("late", 0)))
    flashes.sort()
    # The first frame shown of each flash (the flash of second k; a loop shows k again later),
    # and whether it was shown after its vsync (the trace's `late`).
    firsts, late_flashes, last_k, last_wall = [], set(), None, None
    for wall, pts, k, late in flashes:
        if k != last_k or wall - last_wall > 2 * flash_seconds + 0.1:
            if late:
                late_flashes.add(len(firsts))
            firsts.append((wall, pts, k))
        last_k, last_wall = k, wall
    heard = [frame_time(points, frames, f) + offset for f in clicks(samples)]
    start = (firsts[0][0] if firsts else 0) + skip
    results, unmatched_clicks, late_offsets = [], 0, 0
    used = set()
    walls = [w for w, _, _ in firsts]
    for t in heard:
        # The flash shown nearest the click (within half a second).
        i = bisect.bisect_left(walls, t)
        near = [j for j in (i - 1, i) if 0 <= j < len(firsts) and abs(firsts[j][0] - t) < 0.5]
        if not near:
            unmatched_clicks += 1
            continue
        j = min(near, key=lambda j: abs(firsts[j][0] - t))
        wall, pts, k = firsts[j]
        used.add(j)
        if wall < start:
            continue
        if j in late_flashes:
            # Shown after its vsync: the offset would measure the picture's lateness, which
            # pictures_late counts, not the sound.
            late_offsets += 1
            continue
        results.append({"t": wall - firsts[0][0], "ms": 1000 * (t + (pts - k) - wall), "pts": pts})
    magnitudes = sorted(abs(r["ms"]) for r in results)
    slope = fit_line([r["t"] for r in results], [r["ms"] for r in results])
    rate = fit_line([t for _, t, _ in points], [f for f, _, _ in points])
    span = (points[-1][1] - points[0][1])
    return {
        "clicks_heard": len(heard), "flashes_shown": len(firsts), "offsets_measured": len(results),
        "clicks_without_flash": unmatched_clicks, "flashes_without_click": len(firsts) - len(used),
        "flashes_shown_late": late_offsets,
        "seconds": span,
        "p50_ms": percentile(magnitudes, 0.5), "p95_ms": percentile(magnitudes, 0.95),
        "max_ms": magnitudes[-1] if magnitudes else None,
        "mean_ms": sum(r["ms"] for r in results) / len(results) if results else None,
        "drift_ms_per_minute": 60 * slope if slope is not None else None,
        "capture_clock_ppm": 1e6 * (rate / RATE - 1) if rate else None,
        **picture_timing(shown, skip),
        "offsets": results,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("raw")
    parser.add_argument("stamps")
    parser.add_argument("trace")
    parser.add_argument("--flash-seconds", type=float, default=0.1)
    parser.add_argument("--skip", type=float, default=0.0, help="leave out flashes in the first SKIP seconds")
    args = parser.parse_args()
    print(json.dumps(analyse(args.raw, args.stamps, args.trace, args.flash_seconds, args.skip), indent=1))


if __name__ == "__main__":
    main()
