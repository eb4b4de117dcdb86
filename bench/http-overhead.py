#!/usr/bin/env python3
"""What the HTTP API costs playback: marquee's CPU time while it plays a 1280x720 30 fps clip
(headless, real clock) with the API on but idle, then with a dashboard's polling (status,
playlist and volume every second, a screenshot every 2 s), alternating, each run 20 s.

Usage: bench/http-overhead.py MARQUEE [--runs N] [--seconds S]
Standard library only; the clip is made with ffmpeg.
"""
import argparse
import hashlib
import json
import os
import socket
import subprocess
import tempfile
import time
import urllib.request

parser = argparse.ArgumentParser()
parser.add_argument("marquee")
parser.add_argument("--runs", type=int, default=2)
parser.add_argument("--seconds", type=float, default=20)
args = parser.parse_args()

work = tempfile.mkdtemp(prefix="marquee-http-bench-")
clip = os.path.join(work, "hd.mp4")
subprocess.run(["ffmpeg", "-y", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=1280x720:rate=30", "-t", "5",
                "-pix_fmt", "yuv420p", clip], check=True)
token = "bench-" + os.urandom(8).hex()
with open(os.path.join(work, "tokens"), "w") as f:
    f.write("control sha256:%s bench\n" % hashlib.sha256(token.encode()).hexdigest())
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
with open(os.path.join(work, "config.json"), "w") as f:
    json.dump({"playlist": [{"uri": clip}], "http": {"listen": "127.0.0.1:%d" % port, "tokens": "tokens", "requestsPerSecond": 1000}}, f)


def cpu_seconds(pid):
    fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def get(path):
    request = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), headers={"Authorization": "Bearer " + token})
    return urllib.request.urlopen(request, timeout=10).read()


def run(poll):
    player = subprocess.Popen([args.marquee, "--config", os.path.join(work, "config.json"), "--output", "headless",
                               "--mode", "1280x720@60", "--clock", "real", "--socket", "none", "--exit-after", str(args.seconds + 15)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                get("/api/v1/health")
                break
            except OSError:
                time.sleep(0.1)
        time.sleep(2)
        start_cpu, start, requests, tick = cpu_seconds(player.pid), time.monotonic(), 0, 0
        while time.monotonic() - start < args.seconds:
            if poll:
                for path in ["/api/v1/status", "/api/v1/playlist", "/api/v1/properties/volume"]:
                    get(path)
                    requests += 1
                tick += 1
                if tick % 2 == 0:
                    get("/api/v1/outputs/headless-0/screenshot")
                    requests += 1
            time.sleep(1)
        elapsed = time.monotonic() - start
        return 100 * (cpu_seconds(player.pid) - start_cpu) / elapsed, requests
    finally:
        player.terminate()
        player.wait()


results = {"idle": [], "polled": []}
for _ in range(args.runs):
    for mode in ["idle", "polled"]:
        percent, requests = run(mode == "polled")
        results[mode].append(percent)
        print("%-6s %5.1f%% of a core (%d requests)" % (mode, percent, requests), flush=True)
idle, polled = (sum(v) / len(v) for v in (results["idle"], results["polled"]))
print("extra CPU with the dashboard's polling: %.1f points of a core (%.1f%% -> %.1f%%)" % (polled - idle, idle, polled))
