#!/usr/bin/env python3
"""The "start a player on the press" way (pi_video_looper's), for comparison with marquee's
triggers in the KMS test VM: it stands in for marquee in deploy/vm/kms-run
(MARQUEE=tools/mpv-on-press.py), which passes `--config FILE`, a JSON object
{"loop": PATH, "film": PATH, "port": N, "mode": "WxH"}.

mpv plays the loop on the DRM card (--vo=drm: dumb buffers, as marquee's planes scan-out). An OSC
message to 127.0.0.1:PORT stops that mpv and starts another on the film, as pi_video_looper starts
a player per video; when the film ends the loop starts again from its beginning. Presses that come
while the film plays are counted and ignored.

Page flips are read from the kernel: tracefs' drm_vblank_event_delivered, on CLOCK_MONOTONIC, put
on Unix time by an offset read at start. For each press it prints
`mpv-press RECEIVED STOPPED STARTED FIRST-FLIP` (Unix seconds): the press received, the loop's mpv
gone, the film's mpv started, and the first flip event delivered after it started (the loop's mpv
has closed the card by then, so that flip is the film's first picture: vo=drm sets its mode
without an event and flips with one for each picture). It prints `presenting on` once the loop's
first flip is seen, as marquee does.
"""
import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time

TRACING = "/sys/kernel/tracing"
FLIP = re.compile(r"\s(\d+\.\d+): drm_vblank_event_delivered:")


def tracefs():
    if not os.path.exists(f"{TRACING}/trace_pipe"):
        subprocess.run(["mount", "-t", "tracefs", "nodev", TRACING], check=False)
    for path, value in (("trace_clock", "mono"), ("events/drm/drm_vblank_event_delivered/enable", "1"), ("tracing_on", "1")):
        with open(f"{TRACING}/{path}", "w") as f:
            f.write(value)


class Flips:
    """Flip times (Unix seconds) from the trace pipe, read by a thread."""

    def __init__(self):
        self.offset = time.time() - time.monotonic()
        self.times = []
        self.lock = threading.Condition()
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        with open(f"{TRACING}/trace_pipe") as pipe:
            for line in pipe:
                match = FLIP.search(line)
                if match:
                    with self.lock:
                        self.times.append(float(match.group(1)) + self.offset)
                        self.lock.notify_all()

    def first_after(self, moment, timeout):
        deadline = time.monotonic() + timeout
        with self.lock:
            while True:
                later = [t for t in self.times if t >= moment]
                if later:
                    return later[0]
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.lock.wait(left)


def mpv(path, mode, loop):
    args = ["mpv", "--vo=drm", f"--drm-mode={mode}", "--no-audio", "--no-config", "--really-quiet",
            "--keepaspect=no", path]
    if loop:
        args.insert(1, "--loop-file=inf")
    return subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=sys.stderr)


def stop(player):
    player.terminate()
    try:
        player.wait(timeout=5)
    except subprocess.TimeoutExpired:
        player.kill()
        player.wait()


def main():
    if len(sys.argv) < 3 or sys.argv[1] != "--config":
        sys.exit("usage: mpv-on-press.py --config FILE")
    with open(sys.argv[2]) as f:
        config = json.load(f)
    port = int(config["port"])
    if not 0 < port < 65536:
        sys.exit(f"mpv-on-press: port {port} is not 1-65535")
    tracefs()
    flips = Flips()
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", port))
    ending = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: ending.set())

    started = time.time()
    player = mpv(config["loop"], config["mode"], loop=True)
    if flips.first_after(started, 120) is None:
        stop(player)
        sys.exit("mpv-on-press: the loop's mpv made no page flip in 120 s")
    print("presenting on the card (mpv)", flush=True)
    ignored = 0
    while not ending.is_set():
        ready, _, _ = select.select([receiver], [], [], 0.2)
        if not ready:
            if player.poll() is not None:  # the film ended: the loop again, from its start
                player = mpv(config["loop"], config["mode"], loop=True)
            continue
        receiver.recv(1024)
        received = time.time()
        if player.args[1] != "--loop-file=inf":
            ignored += 1
            continue
        stop(player)
        stopped = time.time()
        player = mpv(config["film"], config["mode"], loop=False)
        launched = time.time()
        first = flips.first_after(launched, 30)
        print(f"mpv-press {received:.6f} {stopped:.6f} {launched:.6f} {first if first else 'none'}", flush=True)
    stop(player)
    print(f"mpv-on-press: {ignored} presses came while a film played", flush=True)


if __name__ == "__main__":
    main()
