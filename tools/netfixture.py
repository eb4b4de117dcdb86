#!/usr/bin/env python3
"""Loopback servers for the network tests (standard library only).

  netfixture.py serve DIR ADDRESS [PORT]   HTTP from DIR; /redirect/N answers 302 to the URL in
                                    DIR/redirect-N.txt; /stall/NAME sends half of NAME, then holds;
                                    /cut/NAME announces NAME's whole length, sends half, closes;
                                    /v/NAME serves NAME with validators (ETag: a hash of its bytes,
                                    Last-Modified), answers If-None-Match / If-Modified-Since with
                                    304 and Range (with If-Range) with 206; while NAME.cut exists,
                                    the next answer with a body, to a client other than FFmpeg,
                                    sends half of it and closes (the marker is removed);
                                    /norange/NAME is /v/NAME ignoring Range.
                                    Each /v/ request says "GET path status=S sent=B range=R
                                    if-range=I if-none-match=E if-modified-since=M agent=A" (-: none)
  netfixture.py hang ADDRESS        accepts connections and never answers
  netfixture.py count ADDRESS       accepts connections, closes them, counts them
  netfixture.py proxy TARGET ADDRESS  forwards each connection to 127.0.0.1:TARGET; SIGUSR1
                                    toggles holding: bytes stop flowing, connections stay open;
                                    SIGUSR2 cuts every connection open now ("cut N")
  netfixture.py live ADDRESS        HTTP: each GET is a live picture (H.264 in live Matroska) from
                                    an ffmpeg of its own, in real time, with no length, until the
                                    client goes; GET /burst/S/NAME holds the first S seconds back
                                    and sends them at once (as an HLS window does), then goes on live;
                                    `live ADDRESS PORT warm` starts the first GET's ffmpeg before it
                                    listens, as a live server has its encoder running

Each prints "port N" once listening (on PORT, or an ephemeral port of ADDRESS), then one line per
connection or request ("conn", "GET /path"), flushed, so a test can read what reached it.
Every server stops by itself after 300 s (NETFIXTURE_LIFETIME seconds where set, for a soak): a
test that forgets one leaves nothing behind for long. A live GET may ask another picture size
with `?size=WxH` (default 160x90).
"""
import email.utils
import hashlib
import http.server
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

LIFETIME = int(os.environ.get("NETFIXTURE_LIFETIME", "300"))


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


class Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        say("GET " + self.path)
        if self.path.startswith("/redirect/"):
            name = os.path.join(self.directory, "redirect-%s.txt" % os.path.basename(self.path))
            with open(name) as f:
                target = f.read().strip()
            self.send_response(302)
            self.send_header("Location", target)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.path.startswith("/cut/"):
            name = os.path.join(self.directory, os.path.basename(self.path))
            with open(name, "rb") as f:
                data = f.read()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        if self.path.startswith("/v/") or self.path.startswith("/norange/"):
            self.validating(ranges=self.path.startswith("/v/"))
            return
        if self.path.startswith("/stall/"):
            name = os.path.join(self.directory, os.path.basename(self.path))
            with open(name, "rb") as f:
                data = f.read()
            self.send_response(200)
            self.send_header("Content-Type", "video/mp2t")
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            time.sleep(60)
            return
        super().do_GET()


    def validating(self, ranges):
        name = os.path.join(self.directory, os.path.basename(self.path))
        if not os.path.isfile(name):
            say("GET %s status=404 sent=0" % self.path)
            self.send_error(404)
            return
        with open(name, "rb") as f:
            data = f.read()
        etag = '"%s"' % hashlib.sha256(data).hexdigest()[:16]
        modified = email.utils.formatdate(os.stat(name).st_mtime, usegmt=True)
        asked = {k: self.headers.get(k) for k in ("Range", "If-Range", "If-None-Match", "If-Modified-Since")}
        status, start = 200, 0
        if asked["If-None-Match"] is not None:
            if etag in [t.strip() for t in asked["If-None-Match"].split(",")]:
                status = 304
        elif asked["If-Modified-Since"] is not None and asked["If-Modified-Since"] == modified:
            status = 304
        rng = asked["Range"]
        if status == 200 and ranges and rng and rng.startswith("bytes=") and rng.endswith("-"):
            if asked["If-Range"] is None or asked["If-Range"] in (etag, modified):
                first = int(rng[6:-1])
                if first < len(data):
                    status, start = 206, first
        body = b"" if status == 304 else data[start:]
        # FFmpeg's opens (Lavf: a --check-config probe) do not take the cut: it is meant for the cache's download.
        agent = self.headers.get("User-Agent") or ""
        cut = os.path.exists(name + ".cut") and len(body) > 0 and not agent.startswith("Lavf")
        self.send_response(status)
        self.send_header("ETag", etag)
        self.send_header("Last-Modified", modified)
        if status != 304:
            self.send_header("Content-Length", str(len(body)))
        if status == 206:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
        self.end_headers()
        sent = body[: len(body) // 2] if cut else body
        if cut:
            os.remove(name + ".cut")
        say("GET %s status=%d sent=%d range=%s if-range=%s if-none-match=%s if-modified-since=%s agent=%s"
            % (self.path, status, len(sent), *[(asked[k] or "-").replace(" ", "_") for k in ("Range", "If-Range", "If-None-Match", "If-Modified-Since")],
               (self.headers.get("User-Agent") or "-").replace(" ", "_")))
        try:
            self.wfile.write(sent)
            self.wfile.flush()
        except OSError:
            pass
        if cut:
            self.close_connection = True


def live_encoder(size):
    return subprocess.Popen(
        ["ffmpeg", "-nostdin", "-v", "error", "-re", "-f", "lavfi", "-i", "testsrc2=size=%s:rate=25" % size,
         "-t", str(LIFETIME), "-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-g", "25",
         "-pix_fmt", "yuv420p", "-f", "matroska", "-live", "1", "-cluster_time_limit", "40", "pipe:1"],
        stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # a client gone: broken pipe


WARM = []  # (encoder, its first bytes) for the first GET without a size, with `live ... warm`


def take_warm():
    try:
        return WARM.pop()
    except IndexError:  # taken by another request meanwhile
        return None


class Live(http.server.BaseHTTPRequestHandler):
    """A live picture per request, paced in real time, ended by the client. Matroska, not MPEG-TS:
    a TS reader probes its first 5 s (its streams may change), this one its first few frames;
    short clusters, so that the frames leave as they are made, not a second at a time."""

    def log_message(self, *args):
        pass

    def do_GET(self):
        say("GET " + self.path)
        path, _, query = self.path.partition("?")
        size = re.fullmatch(r"size=([0-9]{2,4}x[0-9]{2,4})", query)
        warm = take_warm() if not size else None
        encoder, first = warm or (live_encoder(size.group(1) if size else "160x90"), b"")
        parts = path.split("/")
        burst = float(parts[2]) if len(parts) > 3 and parts[1] == "burst" else 0.0
        try:
            self.send_response(200)
            self.send_header("Content-Type", "video/x-matroska")
            self.end_headers()
            held, until = b"", time.monotonic() + min(burst, 10.0)
            while time.monotonic() < until:
                data = encoder.stdout.read1(65536)
                if not data:
                    break
                held += data
            if first or held:
                self.wfile.write(first + held)
                self.wfile.flush()
            while True:
                data = encoder.stdout.read1(65536)
                if not data:
                    break
                self.wfile.write(data)
                self.wfile.flush()
        except OSError:
            pass
        finally:
            encoder.kill()
            encoder.wait()


def listener(address, port):
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((address, port))
    s.listen(64)
    return s


HOLD = threading.Event()
OPEN = set()  # the proxy's connections now: (client, upstream) pairs
OPEN_LOCK = threading.Lock()


def pump(source, sink):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            while HOLD.is_set():
                time.sleep(0.02)
            sink.sendall(data)
    except OSError:
        pass
    for s in (source, sink):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
    with OPEN_LOCK:
        # Both pumps of a pair end here; the second finds it gone.
        pair = next((p for p in OPEN if source in p), None)
        if pair:
            OPEN.discard(pair)
    if pair:
        for s in pair:
            s.close()


def proxy(target, address, port):
    def toggle(*_):
        if HOLD.is_set():
            HOLD.clear()
        else:
            HOLD.set()
        say("hold" if HOLD.is_set() else "flow")
    def cut(*_):
        # shutdown wakes both pumps of each pair, which close it; the client sees its stream end.
        with OPEN_LOCK:
            pairs = list(OPEN)
        for pair in pairs:
            for s in pair:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        say("cut %d" % len(pairs))
    signal.signal(signal.SIGUSR1, toggle)
    signal.signal(signal.SIGUSR2, cut)
    # A parent may start us with the signals blocked (its own mask is inherited).
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1, signal.SIGUSR2})
    s = listener(address, port)
    say("port %d" % s.getsockname()[1])
    while True:
        conn, _ = s.accept()
        say("conn")
        upstream = socket.create_connection(("127.0.0.1", target))
        with OPEN_LOCK:
            OPEN.add((conn, upstream))
        threading.Thread(target=pump, args=(conn, upstream), daemon=True).start()
        threading.Thread(target=pump, args=(upstream, conn), daemon=True).start()


def main():
    threading.Timer(LIFETIME, lambda: os._exit(0)).start()
    mode = sys.argv[1]
    if mode == "proxy":
        proxy(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else 0)
    if mode == "live":
        if sys.argv[4:5] == ["warm"]:  # before it listens: no client waits on the encoder's start
            encoder = live_encoder("160x90")
            first = encoder.stdout.read1(65536)  # once it has made its first bytes
            if first:  # else it failed: each GET starts its own
                WARM.append((encoder, first))
        http.server.ThreadingHTTPServer.allow_reuse_address = True
        server = http.server.ThreadingHTTPServer((sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 0), Live)
        server.daemon_threads = True
        say("port %d" % server.server_address[1])
        server.serve_forever()
    if mode == "serve":
        directory, address = sys.argv[2], sys.argv[3]
        port = int(sys.argv[4]) if len(sys.argv) > 4 else 0
        handler = lambda *a, **k: Handler(*a, directory=directory, **k)
        http.server.ThreadingHTTPServer.allow_reuse_address = True
        server = http.server.ThreadingHTTPServer((address, port), handler)
        server.daemon_threads = True
        say("port %d" % server.server_address[1])
        server.serve_forever()
    s = listener(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 0)
    say("port %d" % s.getsockname()[1])
    held = []
    while True:
        conn, _ = s.accept()
        say("conn")
        if mode == "hang":
            held.append(conn)
        else:
            conn.close()


if __name__ == "__main__":
    main()
