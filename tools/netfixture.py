#!/usr/bin/env python3
"""Loopback servers for the network tests (standard library only).

  netfixture.py serve DIR ADDRESS [PORT]   HTTP from DIR; /redirect/N answers 302 to the URL in
                                    DIR/redirect-N.txt; /stall/NAME sends half of NAME, then holds
  netfixture.py hang ADDRESS        accepts connections and never answers
  netfixture.py count ADDRESS       accepts connections, closes them, counts them

Each prints "port N" once listening (on PORT, or an ephemeral port of ADDRESS), then one line per
connection or request ("conn", "GET /path"), flushed, so a test can read what reached it.
Every server stops by itself after 300 s: a test that forgets one leaves nothing behind for long.
"""
import http.server
import os
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


def main():
    threading.Timer(LIFETIME, lambda: os._exit(0)).start()
    mode = sys.argv[1]
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
