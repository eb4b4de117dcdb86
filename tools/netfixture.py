#!/usr/bin/env python3
"""Loopback servers for the network tests (standard library only).

  netfixture.py serve DIR ADDRESS [PORT]   HTTP from DIR; /redirect/N answers 302 to the URL in
                                    DIR/redirect-N.txt; /stall/NAME sends half of NAME, then holds;
                                    /cut/NAME announces NAME's whole length, sends half, closes
  netfixture.py hang ADDRESS        accepts connections and never answers
  netfixture.py count ADDRESS       accepts connections, closes them, counts them
  netfixture.py proxy TARGET ADDRESS  forwards each connection to 127.0.0.1:TARGET; SIGUSR1
                                    toggles holding: bytes stop flowing, connections stay open

Each prints "port N" once listening (on PORT, or an ephemeral port of ADDRESS), then one line per
connection or request ("conn", "GET /path"), flushed, so a test can read what reached it.
Every server stops by itself after 300 s: a test that forgets one leaves nothing behind for long.
"""
import http.server
import os
import signal
import socket
import sys
import threading
import time

LIFETIME = 300


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


def listener(address, port):
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((address, port))
    s.listen(64)
    return s


HOLD = threading.Event()


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


def proxy(target, address, port):
    def toggle(*_):
        if HOLD.is_set():
            HOLD.clear()
        else:
            HOLD.set()
        say("hold" if HOLD.is_set() else "flow")
    signal.signal(signal.SIGUSR1, toggle)
    # A parent may start us with the signal blocked (its own mask is inherited).
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1})
    s = listener(address, port)
    say("port %d" % s.getsockname()[1])
    while True:
        conn, _ = s.accept()
        say("conn")
        upstream = socket.create_connection(("127.0.0.1", target))
        threading.Thread(target=pump, args=(conn, upstream), daemon=True).start()
        threading.Thread(target=pump, args=(upstream, conn), daemon=True).start()


def main():
    threading.Timer(LIFETIME, lambda: os._exit(0)).start()
    mode = sys.argv[1]
    if mode == "proxy":
        proxy(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else 0)
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
