#!/usr/bin/python3
"""The glass-to-glass section's GStreamer parts (bench.py's `glass` section runs them; Debian's
python3-gi and GStreamer, so /usr/bin/python3, not the bench's venv):

  g2g.py source ADDRESS LOG SECONDS [tcp]   an RTSP server on ADDRESS (a free port, printed as
        "port N") serving /counter: a 640x360 picture at 25 fps whose frame number is drawn as 16
        black/white blocks with their complements below (COUNTER_LAYOUT), H.264 (openh264enc, no
        B-frames, an I-frame each second) over RTP. Each frame's number and the CLOCK_REALTIME time
        it was handed to the encoder go to LOG ("N T" lines). Stops after SECONDS. With `tcp`, RTP
        only interleaved in the RTSP connection (so that a proxy in front carries, and cuts, it all).
  g2g.py gst URL SECONDS OUT      GStreamer as a player: rtspsrc latency=0 ! decodebin !
        videoconvert ! appsink sync=true; each buffer as the sink takes it (at its presentation
        time) is read for its number, written to OUT as "N T" (T: CLOCK_REALTIME then).

A frame number read back is trusted only when every block and its complement differ by over 64
grey levels and the two read as complements (read_counter): a picture caught between two frames or
smeared by compression is left out, not misread.
"""
import os
import sys
import threading
import time

WIDTH, HEIGHT, FPS, BITS = 640, 360, 25, 16
# Blocks 40 px wide across the picture; the number's row at y 40..120, its complement's at 160..240.
BLOCK, ROW, COMPLEMENT, ROW_HEIGHT = WIDTH // BITS, 40, 160, 80


def frame_bytes(n):
    """A GRAY8 picture showing n (mid grey around the blocks)."""
    bits = [(n >> (BITS - 1 - i)) & 1 for i in range(BITS)]
    row = b"".join((b"\xeb" if b else b"\x10") * BLOCK for b in bits)
    complement = b"".join((b"\x10" if b else b"\xeb") * BLOCK for b in bits)
    grey = b"\x80" * WIDTH
    return (grey * ROW + row * ROW_HEIGHT + grey * (COMPLEMENT - ROW - ROW_HEIGHT) + complement * ROW_HEIGHT
            + grey * (HEIGHT - COMPLEMENT - ROW_HEIGHT))


def read_counter(gray, width, height):
    """The number in a GRAY8 picture of any size (blocks sampled at their centres, 9 points each),
    or None when it does not read cleanly."""
    sx, sy = width / WIDTH, height / HEIGHT

    def level(x, y):
        total = 0
        for dx in (-8, 0, 8):
            for dy in (-16, 0, 16):
                total += gray[int((y + dy) * sy) * width + int((x + dx) * sx)]
        return total / 9

    n = 0
    for i in range(BITS):
        x = i * BLOCK + BLOCK // 2
        a, b = level(x, ROW + ROW_HEIGHT // 2), level(x, COMPLEMENT + ROW_HEIGHT // 2)
        if abs(a - b) < 64:
            return None
        n = (n << 1) | (1 if a > b else 0)
    return n


def gst():
    import gi
    gi.require_version("Gst", "1.0")
    gi.require_version("GstApp", "1.0")
    from gi.repository import Gst
    return Gst


def source(address, log_path, seconds, tcp_only=False):
    Gst = gst()
    import gi
    gi.require_version("GstRtspServer", "1.0")
    gi.require_version("GstRtsp", "1.0")
    from gi.repository import GLib, GstRtsp, GstRtspServer
    Gst.init(None)
    threading.Timer(seconds, lambda: os._exit(0)).start()
    log = open(log_path, "w", buffering=1)
    started = time.monotonic()
    server = GstRtspServer.RTSPServer()
    server.set_address(address)
    server.set_service("0")
    factory = GstRtspServer.RTSPMediaFactory()
    factory.set_launch(
        f"( appsrc name=src is-live=true format=time do-timestamp=true "
        f"caps=video/x-raw,format=GRAY8,width={WIDTH},height={HEIGHT},framerate={FPS}/1 "
        "! videoconvert ! video/x-raw,format=I420 ! openh264enc complexity=low gop-size=25 rate-control=bitrate "
        "bitrate=2000000 ! video/x-h264,profile=constrained-baseline ! h264parse config-interval=1 "
        "! rtph264pay name=pay0 pt=96 config-interval=1 )")
    factory.set_shared(True)
    if tcp_only:
        factory.set_protocols(GstRtsp.RTSPLowerTrans.TCP)

    def push(appsrc):
        # Numbers follow the clock from the server's start, so that one media's frames never repeat
        # another's.
        n = int((time.monotonic() - started) * FPS)
        while True:
            due = started + n / FPS
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            buffer = Gst.Buffer.new_wrapped(frame_bytes(n & 0xFFFF))
            buffer.duration = Gst.SECOND // FPS
            log.write(f"{n & 0xFFFF} {time.time():.6f}\n")
            if appsrc.emit("push-buffer", buffer) != Gst.FlowReturn.OK:
                return  # the media is gone (its clients left)
            n += 1

    def configure(_factory, media):
        appsrc = media.get_element().get_child_by_name("src")
        threading.Thread(target=push, args=(appsrc,), daemon=True).start()

    factory.connect("media-configure", configure)
    server.get_mount_points().add_factory("/counter", factory)
    server.attach(None)
    print(f"port {server.get_bound_port()}", flush=True)
    GLib.MainLoop().run()


def player(url, seconds, out_path):
    Gst = gst()
    Gst.init(None)
    pipeline = Gst.parse_launch(
        f"rtspsrc location={url} latency=0 ! decodebin ! videoconvert ! video/x-raw,format=GRAY8 "
        "! appsink name=sink sync=true emit-signals=false max-buffers=2 drop=false")
    sink = pipeline.get_by_name("sink")
    pipeline.set_state(Gst.State.PLAYING)
    out = open(out_path, "w")
    end = time.monotonic() + seconds
    read = 0
    while time.monotonic() < end:
        sample = sink.emit("try-pull-sample", Gst.SECOND // 2)
        if sample is None:
            continue
        taken = time.time()
        caps = sample.get_caps().get_structure(0)
        width, height = caps.get_value("width"), caps.get_value("height")
        buffer = sample.get_buffer()
        ok, info = buffer.map(Gst.MapFlags.READ)
        if ok:
            # GRAY8 rows are padded to 4 bytes: the stride is the width here (640).
            n = read_counter(info.data, width, height)
            buffer.unmap(info)
            if n is not None:
                out.write(f"{n} {taken:.6f}\n")
                read += 1
    pipeline.set_state(Gst.State.NULL)
    out.close()
    print(f"read {read}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) in (5, 6) and sys.argv[1] == "source":
        source(sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5:] == ["tcp"])
    elif len(sys.argv) == 5 and sys.argv[1] == "gst":
        player(sys.argv[2], float(sys.argv[3]), sys.argv[4])
    else:
        sys.exit(__doc__)
