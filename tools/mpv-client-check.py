#!/usr/bin/env python3
"""Drives a running player through python-mpv-jsonipc, the most used Python client of mpv's JSON
IPC, as a kiosk script would: attach to its socket (the client reads property-list and
command-list), read and set properties, observe playlist-pos and time-pos, and record the events
around a playlist-next. Prints what it saw as one JSON object; the caller judges it.

Usage: mpv-client-check.py SOCKET
"""
import json
import sys
import threading
import time

from python_mpv_jsonipc import MPV, MPVError


def main():
    socket_path = sys.argv[1]
    report = {}
    started = time.monotonic()
    mpv = MPV(start_mpv=False, ipc_socket=socket_path)
    report["attach_s"] = round(time.monotonic() - started, 3)
    report["properties"] = sorted(mpv.properties)
    report["has_playlist_next"] = callable(getattr(mpv, "playlist_next", None))

    # Until the first item plays (mpv too answers `property unavailable` for its duration before).
    deadline = time.monotonic() + 20
    while mpv.time_pos is None and time.monotonic() < deadline:
        time.sleep(0.05)

    # Properties as attributes, as the client's users read them.
    report["playlist_count"] = mpv.playlist_count
    report["playlist_pos"] = mpv.playlist_pos
    report["path"] = mpv.path
    report["filename"] = mpv.filename
    report["duration"] = mpv.duration
    report["idle_active"] = mpv.idle_active
    report["playlist"] = mpv.playlist
    report["version"] = mpv.command("get_version")
    try:
        mpv.command("get_property", "no-such-property")
        report["unknown_property_error"] = None
    except MPVError as error:
        report["unknown_property_error"] = str(error)

    # Set a property and read it back.
    report["pause_before"] = mpv.pause
    mpv.pause = True
    report["pause_after_true"] = mpv.pause
    mpv.command("set_property", "pause", "no")  # a string, as mpv converts it
    report["pause_after_no"] = mpv.pause

    lock = threading.Lock()
    positions, events, times = [], [], []

    def on_position(_name, value):
        with lock:
            positions.append(value)

    def on_time(_name, value):
        with lock:
            times.append((time.monotonic(), value))

    def on_event(data):
        with lock:
            events.append(data)

    mpv.bind_property_observer("playlist-pos", on_position)
    for name in ("start-file", "end-file", "file-loaded", "video-reconfig", "playback-restart", "seek"):
        mpv.bind_event(name, on_event)

    # time-pos observed for 2 s: how many changes arrive.
    observer = mpv.bind_property_observer("time-pos", on_time)
    time.sleep(2)
    mpv.unbind_property_observer(observer)
    with lock:
        report["time_pos_events_2s"] = len([t for t in times if t[1] is not None])
        report["time_pos_increasing"] = all(b[1] >= a[1] for a, b in zip(times, times[1:]) if a[1] is not None and b[1] is not None)

    with lock:
        events.clear()
        report["positions_before_next"] = list(positions)
    before = mpv.playlist_pos
    mpv.playlist_next()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        with lock:
            if any(e.get("event") == "playback-restart" for e in events) and positions and positions[-1] != before:
                break
        time.sleep(0.05)
    time.sleep(0.3)
    with lock:
        report["position_before_next"] = before
        report["positions"] = list(positions)
        report["events_after_next"] = list(events)
    report["playlist_pos_after_next"] = mpv.playlist_pos
    mpv.terminate()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
