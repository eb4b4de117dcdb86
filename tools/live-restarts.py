#!/usr/bin/env python3
"""A live source on loopback, killed and started again, for marquee to come back to (run inside the
KMS test VM as deploy/vm/kms-run's KMS_RUN_GUEST, next to marquee, on the guest's clock).

usage: live-restarts.py KIND PORT RESTARTS [--up SECONDS] [--down SECONDS]

KIND: udp (ffmpeg's MPEG-TS sent to 127.0.0.1:PORT), hls (ffmpeg writing a live HLS window into a
folder for the whole run, its HTTP server on PORT restarted), rtsp (tools/rtspfixture.py on PORT),
http (tools/netfixture.py live on PORT: H.264 in live Matroska, the first request's encoder
running before it listens). The source starts, runs UP seconds, is killed, stays away DOWN seconds, and starts again, RESTARTS times. Prints `up TIME`
once each start can serve its stream (listening, or its first datagram sent) and `down TIME`
after each kill (Unix seconds).
"""
import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

TOOLS = os.path.dirname(os.path.abspath(__file__))
PICTURE = ["-re", "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=25", "-c:v", "libx264", "-preset", "ultrafast",
           "-tune", "zerolatency", "-g", "25", "-pix_fmt", "yuv420p"]


def say(line):
    print(line, flush=True)


def start(kind, port, folder):
    """The source's process, once it listens (a server prints `port N`) or has started sending."""
    if kind == "udp":
        # Sent from here, so that the source counts as up from its first datagram, not from
        # when its encoder was started (over a second in an emulated guest).
        process = subprocess.Popen(["ffmpeg", "-nostdin", "-v", "error", *PICTURE, "-f", "mpegts", "-flush_packets", "1",
                                    "pipe:1"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
        first = threading.Event()
        threading.Thread(target=send_udp, args=(process, port, first), daemon=True).start()
        first.wait(30)
        return process
    command = {
        "hls": [sys.executable, f"{TOOLS}/netfixture.py", "serve", folder or ".", "127.0.0.1", str(port)],
        "rtsp": [sys.executable, f"{TOOLS}/rtspfixture.py", "127.0.0.1", str(port)],
        "http": [sys.executable, f"{TOOLS}/netfixture.py", "live", "127.0.0.1", str(port), "warm"],
    }[kind]
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    for line in process.stdout:
        if line.startswith("port "):
            break
        if time.monotonic() > deadline:
            break
    # The rest of its output is not read: a pipe nobody reads would block it, so it goes nowhere.
    subprocess.Popen(["cat"], stdin=process.stdout, stdout=subprocess.DEVNULL)
    return process


def send_udp(process, port, first):
    """The encoder's MPEG-TS to 127.0.0.1:PORT, 7 packets a datagram; sets `first` at the first."""
    out = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    pending = b""
    while True:
        data = process.stdout.read1(65536)
        if not data:
            break
        pending += data
        while len(pending) >= 1316:
            out.sendto(pending[:1316], ("127.0.0.1", port))
            pending = pending[1316:]
            first.set()
    out.close()


def stop(process):
    process.send_signal(signal.SIGKILL)
    process.wait()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=["udp", "hls", "rtsp", "http"])
    parser.add_argument("port", type=int)
    parser.add_argument("restarts", type=int)
    parser.add_argument("--up", type=float, default=4)
    parser.add_argument("--down", type=float, default=2.5)
    args = parser.parse_args()
    if not 0 < args.port < 65536 or not 0 <= args.restarts <= 100 or not 0 < args.up <= 60 or not 0 < args.down <= 60:
        sys.exit("live-restarts: port 1-65535, restarts 0-100, up and down above 0 and at most 60 s")
    folder, encoder = None, None
    if args.kind == "hls":
        folder = tempfile.mkdtemp(prefix="live-hls-")
        encoder = subprocess.Popen(["ffmpeg", "-nostdin", "-v", "error", *PICTURE, "-f", "hls", "-hls_time", "1",
                                    "-hls_list_size", "4", "-hls_flags", "delete_segments",
                                    "-hls_segment_filename", f"{folder}/s%d.ts", f"{folder}/index.m3u8"],
                                   stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while not os.path.exists(f"{folder}/index.m3u8") and time.monotonic() < deadline:
            time.sleep(0.1)
    try:
        for round in range(args.restarts + 1):
            source = start(args.kind, args.port, folder)
            say(f"up {time.time():.6f}")
            time.sleep(args.up)
            stop(source)
            say(f"down {time.time():.6f}")
            if round < args.restarts:
                time.sleep(args.down)
    finally:
        if encoder:
            stop(encoder)
        if folder:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
