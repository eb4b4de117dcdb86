#!/usr/bin/env python3
"""A repro, not a test: marquee (headless, real clock) plays netfixture's live HTTP source through the
proxy, which holds the bytes HOLD s, then lets them flow; prints the frames shown from 3 s after the
release (about 300 when the picture came back), then live-lag and health every 1.5 s.

  stall-repro.py MARQUEE_BINARY HOLD_SECONDS [ITEM_LIVE_JSON]    e.g. 4 '{"mode": "low-latency"}'

With `live.mode` `low-latency` a 4 s hold leaves the player stalled for good; without, it comes back.
"""
import importlib.util
import json
import os
import signal
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("soak", os.path.join(HERE, "soak.py"))
soak = importlib.util.module_from_spec(spec)
spec.loader.exec_module(soak)


def main(binary, hold, live):
    folder = tempfile.mkdtemp(prefix="stall-repro-")
    server = soak.Fixture(["live", "127.0.0.1"], 200)
    proxy = soak.Fixture(["proxy", str(server.port), "127.0.0.1"], 200)
    item = {"uri": f"http://127.0.0.1:{proxy.port}/live.mkv?size=640x360"}
    if live:
        item["live"] = live
    config = os.path.join(folder, "config.json")
    with open(config, "w") as f:
        json.dump({"playlist": [item], "loop": True, "log": {"level": "info"}, "network": {"allow": ["http://127.0.0.1"]}}, f)
    m = soak.Marquee(binary, config, folder, "marquee", mode="640x360@60", exit_after=120, clock="real")
    try:
        time.sleep(8)
        proxy.process.send_signal(signal.SIGUSR1)  # hold
        held = time.time()
        time.sleep(hold)
        proxy.process.send_signal(signal.SIGUSR1)  # flow
        reads = []
        for _ in range(10):
            time.sleep(1.5)
            lag = (m.request(["get_property", "live-lag"]) or {}).get("data")
            health = ((m.request(["get_property", "health"]) or {}).get("data") or {}).get("status")
            reads.append((round(time.time() - held, 1), lag, health))
        m.request(["quit"])
    finally:
        m.stop()
        proxy.stop()
        server.stop()
    shown = [w for w in soak.trace_frame_walls(m.trace) if w > held + hold + 3]
    print(f"held {hold} s; frames shown from 3 s after the release: {len(shown)} (25 fps: about {25 * 12} if it came back)")
    print("(seconds since the hold, live-lag, health):", reads)
    print("\n".join(l for l in m.log.splitlines() if "stall" in l or "live source" in l))
    return 0 if len(shown) > 200 else 1


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], float(sys.argv[2]), json.loads(sys.argv[3]) if len(sys.argv) == 4 and sys.argv[3] else None))
