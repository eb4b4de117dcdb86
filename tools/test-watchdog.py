#!/usr/bin/env python3
"""Runs a test command and turns a hang into a failure that says where it hung.

`make test` runs `swift test` through this. The command's output passes through unchanged. When it
prints nothing for --quiet seconds, or runs longer than --limit seconds, this prints the tests that
started and never ended, the processes the run started (with their ages and command lines) and every
thread's stack of each (gdb), then kills them all and exits 124. Otherwise it exits with the
command's status.
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import threading
import time

STARTED = re.compile(r"Test (.+?) started\.")
# A frame without its arguments and source line.
FRAME = re.compile(r"^(#\d+\s+(?:0x[0-9a-f]+ in )?[^(]*?) \(.*$")
ENDED = re.compile(r"Test (.+?) (?:passed|failed|skipped)\b")


def descendants(root):
    """Pids of `root` and every process under it."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    found, queue = [], [root]
    while queue:
        pid = queue.pop()
        found.append(pid)
        queue.extend(children.get(pid, []))
    return found


def describe(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            args = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        age = time.time() - os.stat(f"/proc/{pid}").st_mtime
        return f"{pid} (about {age:.0f} s old): {args[:300]}"
    except OSError:
        return f"{pid}: gone"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quiet", type=float, default=600, help="seconds without output that count as a hang")
    parser.add_argument("--limit", type=float, default=3600, help="seconds the whole command may take")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    options = parser.parse_args()
    command = options.command[1:] if options.command[:1] == ["--"] else options.command
    if not command:
        parser.error("no command")

    # Line-buffered (stdbuf), so that what is seen here is what the run has printed: into a pipe
    # its output went in 4 KB blocks, and a hung run kept its last block.
    process = subprocess.Popen(["stdbuf", "-oL", "-eL"] + command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, start_new_session=True)
    state = {"last": time.monotonic(), "running": {}}
    lock = threading.Lock()

    def copy():
        for raw in iter(process.stdout.readline, b""):
            sys.stdout.buffer.write(raw)
            sys.stdout.buffer.flush()
            line = raw.decode(errors="replace")
            with lock:
                state["last"] = time.monotonic()
                if ended := ENDED.search(line):
                    state["running"].pop(ended.group(1), None)
                elif (started := STARTED.search(line)) and "Test case passing" not in line:
                    state["running"][started.group(1)] = time.monotonic()

    reader = threading.Thread(target=copy, daemon=True)
    reader.start()
    start = time.monotonic()
    while process.poll() is None:
        time.sleep(2)
        with lock:
            silent = time.monotonic() - state["last"]
            running = dict(state["running"])
        elapsed = time.monotonic() - start
        if silent < options.quiet and elapsed < options.limit:
            continue
        why = (f"no output for {silent:.0f} s" if silent >= options.quiet
               else f"still running after {elapsed:.0f} s (limit {options.limit:.0f} s)")
        report = [f"\ntest-watchdog: {' '.join(command)}: {why}; stopping it.",
                  "Tests started and not ended (the last lines may still sit in the run's output buffer):"]
        now = time.monotonic()
        report += [f"  {name} (for {now - since:.0f} s)" for name, since in sorted(running.items(), key=lambda x: x[1])]
        pids = descendants(process.pid)
        report.append("Processes:")
        report += ["  " + describe(pid) for pid in pids]
        # The stacks first and the summary last, so that a log cut to its end still shows the summary.
        for pid in pids[1:]:
            print(f"--- stacks of {describe(pid)}", flush=True)
            try:
                stacks = subprocess.run(["gdb", "-p", str(pid), "-batch", "-nx", "-ex", "thread apply all bt 30"],
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120, text=True)
                frames = [FRAME.sub(r"\1", l)[:200] for l in stacks.stdout.splitlines() if l.startswith(("Thread ", "#"))]
                print("\n".join(frames), flush=True)
            except (OSError, subprocess.TimeoutExpired) as error:
                print(f"no stacks: {error}", flush=True)
        print("\n".join(report), flush=True)
        for pid in reversed(pids):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        process.wait()
        return 124
    reader.join(timeout=10)
    return process.returncode


if __name__ == "__main__":
    sys.exit(main())
