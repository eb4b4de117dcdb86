#!/usr/bin/env python3
"""Reads a Marquee presentation trace (JSON Lines) and reports, per output, what a viewer would
have seen go wrong: gaps (a blank or a late first frame at an item change or loop), drops (a frame
of the item never shown), repeats (the same frame shown twice in a row, or an extra vsync; a frame drawn again during a
transition with new weights, a line with a different "mix", is a mix step, not a repeat) and
cadence errors (a frame not on the vsync round(t * refresh) of its place on the timeline).

Usage: check-trace.py TRACE [--refresh HZ] [--json]
Exit status: 0 when every figure is zero, 1 otherwise, 2 for unreadable input.
Python 3 standard library only.
"""
import json
import math
import sys
from collections import Counter, defaultdict
from fractions import Fraction


def vsyncs(seconds, hz):
    """round(seconds * hz), halves up, as Marquee's scheduler does; traces keep 6 decimals."""
    return math.floor(seconds * float(hz) + 0.5 + 1e-4)


def load(path):
    lines = []
    with open(path, encoding="utf-8") as f:
        for number, text in enumerate(f, 1):
            text = text.strip()
            if not text:
                continue
            try:
                lines.append(json.loads(text))
            except json.JSONDecodeError as e:
                raise SystemExit(f"{path}:{number}: not JSON: {e}")
    return lines


def frame_durations(frames):
    """The usual pts step of each item (the most common positive difference)."""
    steps = defaultdict(Counter)
    for a, b in zip(frames, frames[1:]):
        if a["item"] == b["item"] and b["pts"] > a["pts"]:
            steps[a["item"]][Fraction(b["pts"] - a["pts"]).limit_denominator(100000)] += 1
    return {item: c.most_common(1)[0][0] for item, c in steps.items()}


def check(lines, refresh=None):
    report = {}
    outputs = defaultdict(list)
    for line in lines:
        if line.get("type") in ("frame", "blank"):
            outputs[line.get("output", "?")].append(line)
    for output, shown in outputs.items():
        frames = [l for l in shown if l["type"] == "frame"]
        hz = refresh
        if hz is None:
            timed = [l for l in shown if l["t"] > 0]
            hz = Fraction(round(timed[-1]["vsync"] / timed[-1]["t"] * 1000), 1000) if timed else Fraction(60)
            if abs(hz - round(hz)) < Fraction(1, 100):
                hz = Fraction(round(hz))
        step = frame_durations(frames)
        figures = {"frames": len(frames), "runs": 0, "item_changes": 0, "gaps": 0, "drops": 0,
                   "repeats": 0, "cadence_errors": 0, "blanks_after_start": 0, "mix_steps": 0, "problems": []}
        # Split into runs: a run is one item played from some pts on; a new run starts when the
        # item changes or its pts go back (a loop).
        runs = []
        last_mix = None
        for line in shown:
            if line["type"] == "blank":
                if runs:
                    figures["blanks_after_start"] += 1
                    figures["problems"].append(f"blank on vsync {line['vsync']}")
                runs.append(None)
                continue
            current = runs[-1] if runs else None
            if current is not None and current[-1]["item"] == line["item"] and abs(line["pts"] - current[-1]["pts"]) < 1e-9:
                # A transition draws the same frame again with new weights: a mix step, not a repeat.
                if line.get("mix") != last_mix:
                    figures["mix_steps"] += 1
                    last_mix = line.get("mix")
                    continue
                figures["repeats"] += 1
                figures["problems"].append(f"frame repeated on vsync {line['vsync']} (item {line['item']} pts {line['pts']})")
                continue
            last_mix = line.get("mix")
            if current is None or current[-1]["item"] != line["item"] or line["pts"] < current[-1]["pts"]:
                runs.append([line])
            else:
                current.append(line)
        previous = None
        for run in runs:
            if run is None:
                previous = None
                continue
            figures["runs"] += 1
            item = run[0]["item"]
            d = step.get(item)
            start = run[0]["vsync"]
            if previous is not None:
                figures["item_changes"] += 1
                last = previous[-1]
                ld = step.get(last["item"])
                if ld is not None:
                    expected = previous[0]["vsync"] + vsyncs(last["pts"] + float(ld) - previous[0]["pts"], hz)
                    if start > expected:
                        figures["gaps"] += 1
                        figures["problems"].append(f"gap: item {item} starts on vsync {start}, expected {expected}")
                    elif start < expected:
                        figures["cadence_errors"] += 1
                        figures["problems"].append(f"early: item {item} starts on vsync {start}, expected {expected}")
            for a, b in zip(run, run[1:]):
                if d is not None and Fraction(b["pts"] - a["pts"]).limit_denominator(100000) > d * Fraction(3, 2):
                    missing = round(Fraction(b["pts"] - a["pts"]).limit_denominator(100000) / d) - 1
                    figures["drops"] += missing
                    figures["problems"].append(f"{missing} frame(s) of item {item} dropped before vsync {b['vsync']}")
            for line in run:
                expected = start + vsyncs(line["pts"] - run[0]["pts"], hz)
                if line["vsync"] != expected:
                    figures["cadence_errors"] += 1
                    figures["problems"].append(f"item {item} pts {line['pts']} on vsync {line['vsync']}, expected {expected}")
            previous = run
        figures["problems"] = figures["problems"][:50]
        report[output] = figures
    return report


def main(argv):
    argv = list(argv)
    refresh = None
    if "--refresh" in argv:
        at = argv.index("--refresh")
        if at + 1 >= len(argv):
            print(__doc__, file=sys.stderr)
            return 2
        refresh = Fraction(argv[at + 1])
        del argv[at:at + 2]
    args = [a for a in argv[1:] if not a.startswith("--")]
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        lines = load(args[0])
    except OSError as e:
        print(f"{args[0]}: {e.strerror}", file=sys.stderr)
        return 2
    report = check(lines, refresh)
    if "--json" in argv:
        print(json.dumps(report, indent=1))
    else:
        for output, f in report.items():
            print(f"{output}: {f['frames']} frames, {f['runs']} runs, {f['item_changes']} item changes/loops; "
                  f"gaps {f['gaps']}, drops {f['drops']}, repeats {f['repeats']}, "
                  f"cadence errors {f['cadence_errors']}, blanks {f['blanks_after_start']}, mix steps {f['mix_steps']}")
            for p in f["problems"]:
                print("  " + p)
    bad = any(f["gaps"] or f["drops"] or f["repeats"] or f["cadence_errors"] or f["blanks_after_start"] for f in report.values())
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
