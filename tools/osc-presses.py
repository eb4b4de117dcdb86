#!/usr/bin/env python3
"""Sends OSC presses (messages with no arguments) to 127.0.0.1:PORT, SPACING seconds apart, and
prints each one's Unix send time: `press TIME ADDRESS`. With `--alternate`, every other press goes
to the second address. Used inside the KMS test VM (deploy/vm/kms-run, KMS_RUN_GUEST), where the
trigger runs next to marquee on the guest's clock.

usage: osc-presses.py PORT COUNT SPACING ADDRESS [--alternate ADDRESS2] [--delay SECONDS]
"""
import argparse
import socket
import sys
import time


def osc(address):
    """An OSC message with no arguments: the address padded to 4 bytes, then ',' padded."""
    data = address.encode() + b"\0"
    data += b"\0" * (-len(data) % 4)
    return data + b",\0\0\0"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("count", type=int)
    parser.add_argument("spacing", type=float)
    parser.add_argument("address")
    parser.add_argument("--alternate")
    parser.add_argument("--delay", type=float, default=0)
    args = parser.parse_args()
    if not 0 < args.port < 65536 or not 0 < args.count <= 10000 or not 0 < args.spacing <= 60:
        sys.exit("osc-presses: port must be 1-65535, count 1-10000, spacing above 0 and at most 60 s")
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    time.sleep(args.delay)
    start = time.monotonic()
    for i in range(args.count):
        # By the clock from the first press: a slow guest's late wake does not push the rest back.
        time.sleep(max(0, start + i * args.spacing - time.monotonic()))
        address = args.alternate if args.alternate and i % 2 == 1 else args.address
        sent = time.time()
        sender.sendto(osc(address), ("127.0.0.1", args.port))
        print(f"press {sent:.6f} {address}", flush=True)


if __name__ == "__main__":
    main()
