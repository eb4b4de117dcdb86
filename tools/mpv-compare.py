#!/usr/bin/env python3
"""Sends the same requests to a running Marquee and to mpv (started here: --vo=null --idle=yes
--input-ipc-server, on the same clips) and compares the replies' shapes: the reply's keys, the
error string, and the type of `data` (int and float told apart; for an object, every key mpv gives
with the same type; for a list, the union of its elements' shapes). The requests are the rows of
the table of mpv IPC requests in docs/control.md marked `same`; `CLIP` in a request stands for the first clip.
Also compares the events around a playlist-next and the event for an observed unknown property.
Prints a JSON report; exits 0 when everything agrees, 1 otherwise.

Usage: mpv-compare.py --marquee SOCKET --doc docs/control.md CLIP...
"""
import argparse
import json
import os
import re
import select
import socket
import subprocess
import sys
import tempfile
import time


class Connection:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(path)
        self.buffer = b""
        self.events = []
        self.next_id = 1000

    def lines(self, timeout):
        end = time.monotonic() + timeout
        while True:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                if line.strip():
                    yield json.loads(line)
            left = end - time.monotonic()
            if left <= 0:
                return
            ready, _, _ = select.select([self.sock], [], [], left)
            if not ready:
                return
            data = self.sock.recv(1 << 16)
            if not data:
                return
            self.buffer += data

    def request(self, command, timeout=10):
        """The reply to `command` (a list), events set aside; None when none came."""
        self.next_id += 1
        rid = self.next_id
        self.sock.sendall((json.dumps({"command": command, "request_id": rid}) + "\n").encode())
        for message in self.lines(timeout):
            if "event" in message:
                self.events.append(message)
            elif message.get("request_id") == rid:
                return message
        return None

    def text(self, line, wait=0.5):
        """Sends a line in mpv's text form: anything but events that comes back within `wait` s."""
        self.sock.sendall((line + "\n").encode())
        replies = []
        for message in self.lines(wait):
            (self.events if "event" in message else replies).append(message)
        return replies

    def collect(self, seconds):
        for message in self.lines(seconds):
            if "event" in message:
                self.events.append(message)


def shape(value):
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    if isinstance(value, list):
        merged = None
        for item in value:
            merged = merge(merged, shape(item))
        return ["list", merged]
    return {key: shape(item) for key, item in value.items()}


def merge(a, b):
    if a is None:
        return b
    if isinstance(a, list) and isinstance(b, list) and a[:1] == b[:1] == ["list"]:
        return ["list", merge(a[1], b[1])]
    if b is None:
        return a
    if isinstance(a, dict) and isinstance(b, dict):
        out = dict(a)
        for key, value in b.items():
            out[key] = merge(out.get(key), value)
        return out
    return a if a == b else ["one of", a, b]


def covers(ours, theirs, path="data"):
    """Why `ours` (Marquee's shape) does not have everything of `theirs` (mpv's); None if it does."""
    if isinstance(theirs, dict):
        if not isinstance(ours, dict):
            return f"{path}: mpv gives an object, Marquee {ours}"
        for key, value in theirs.items():
            if key not in ours:
                return f"{path}.{key}: missing (mpv: {value})"
            why = covers(ours[key], value, f"{path}.{key}")
            if why:
                return why
        return None
    if isinstance(theirs, list) and theirs and theirs[0] == "list":
        if not (isinstance(ours, list) and ours and ours[0] == "list"):
            return f"{path}: mpv gives a list, Marquee {ours}"
        if theirs[1] is None or ours[1] is None:
            return None
        return covers(ours[1], theirs[1], path + "[]")
    return None if ours == theirs else f"{path}: Marquee {ours}, mpv {theirs}"


def table_rows(doc):
    """The requests of the doc's mpv table marked `same`: (text, is_json)."""
    rows = []
    in_table = False
    for line in open(doc, encoding="utf-8"):
        if line.startswith("| Request"):
            in_table = True
            continue
        if in_table and not line.startswith("|"):
            break
        if not in_table or line.startswith("|---"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        match = re.match(r"`(.*)`$", cells[0])
        if match and cells[-1].startswith("same"):
            text = match.group(1)
            rows.append((text, text.startswith("[")))
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--marquee", required=True)
    parser.add_argument("--doc", required=True)
    parser.add_argument("clips", nargs="+")
    args = parser.parse_args()
    rows = table_rows(args.doc)
    folder = tempfile.mkdtemp(prefix="mpv-compare-")
    mpv_socket = os.path.join(folder, "mpv.sock")
    mpv = subprocess.Popen(["mpv", "--no-config", "--vo=null", "--ao=null", "--idle=yes", "--loop-playlist=inf",
                            "--input-ipc-server=" + mpv_socket] + args.clips,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    report = {"rows": [], "problems": []}
    try:
        for _ in range(200):
            if os.path.exists(mpv_socket):
                break
            time.sleep(0.05)
        theirs = Connection(mpv_socket)
        ours = Connection(args.marquee)
        def settle(connection):
            # Until an item plays: requests right after a change of item (mpv refuses a seek
            # while it opens the file) are not compared mid-change.
            for _ in range(100):
                reply = connection.request(["get_property", "time-pos"])
                if reply and reply.get("error") == "success":
                    return
                time.sleep(0.05)

        for text, is_json in rows:
            settle(theirs)
            settle(ours)
            request = json.loads(text.replace("CLIP", json.dumps(args.clips[0])[1:-1])) if is_json else text
            if is_json:
                mine, mpvs = ours.request(request), theirs.request(request)
                row = {"request": text, "marquee": mine, "mpv": mpvs}
                if mine is None or mpvs is None:
                    row["why"] = "no reply"
                elif set(mine) - {"detail"} != set(mpvs):
                    row["why"] = f"keys: Marquee {sorted(mine)}, mpv {sorted(mpvs)}"
                elif mine["error"] != mpvs["error"]:
                    row["why"] = f"error: Marquee {mine['error']!r}, mpv {mpvs['error']!r}"
                elif "data" in mpvs:
                    row["why"] = covers(shape(mine["data"]), shape(mpvs["data"]))
            else:
                mine, mpvs = ours.text(request), theirs.text(request)
                row = {"request": text, "marquee": mine, "mpv": mpvs}
                if mine != mpvs:
                    row["why"] = "text form: replies differ"
            row["ok"] = not row.get("why")
            report["rows"].append(row)

        # Events around a playlist-next: the same names in the same order, end-file with reason stop.
        sequences = {}
        for name, connection in (("mpv", theirs), ("marquee", ours)):
            connection.collect(1.0)
            connection.events.clear()
            connection.request(["playlist-next"])
            connection.collect(2.0)
            names = []
            for event in connection.events:
                if event["event"] in ("end-file", "start-file", "file-loaded", "playback-restart"):
                    label = event["event"] + (f"({event['reason']})" if event["event"] == "end-file" else "")
                    if not names or names[-1] != label:
                        names.append(label)
            sequences[name] = names
        report["events_after_next"] = sequences
        if not sequences["mpv"]:
            report["problems"].append("no events from mpv after playlist-next: nothing to compare with")
        elif sequences["mpv"] != sequences["marquee"]:
            report["problems"].append(f"events after playlist-next: Marquee {sequences['marquee']}, mpv {sequences['mpv']}")

        # An observed unknown property: success, then a change event without data.
        for name, connection in (("mpv", theirs), ("marquee", ours)):
            reply = connection.request(["observe_property", 77, "no-such-property"])
            connection.collect(0.5)
            seen = [e for e in connection.events if e.get("event") == "property-change" and e.get("id") == 77]
            report[f"unknown_observed_{name}"] = {"reply": reply, "events": seen}
            if not reply or reply.get("error") != "success" or not seen or "data" in seen[0]:
                report["problems"].append(f"{name}: observing an unknown property: {reply} then {seen}")
    finally:
        # Asked to quit, then ended (a signal the caller ignores is ignored by mpv too).
        try:
            Connection(mpv_socket).sock.sendall(b'{"command":["quit"]}\n')
            mpv.wait(5)
        except (OSError, subprocess.TimeoutExpired):
            mpv.kill()
            mpv.wait(5)
    report["compared"] = len(report["rows"])
    if not report["rows"]:
        report["problems"].append("no rows marked `same` found in the doc's table: nothing was compared")
    report["problems"] += [f"{row['request']}: {row['why']}" for row in report["rows"] if not row["ok"]]
    print(json.dumps(report))
    sys.exit(0 if not report["problems"] else 1)


if __name__ == "__main__":
    main()
