#!/usr/bin/python3
"""An RTSP server for the network tests: GStreamer's (gir1.2-gst-rtsp-server-1.0 through
python3-gi), serving a live test picture (160x96, 25 fps, MJPEG over RTP) at /live.

  rtspfixture.py ADDRESS [PORT] [tcp|udp]

Prints "port N" once listening (PORT, or a free one), then "conn" per client and "setup T" per
SETUP request, T its Transport header (spaces as _). With tcp or udp, only that lower transport is
offered (a client asking for the other is refused). Stops by itself after 300 s.
"""
import os
import sys
import threading

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstRtsp", "1.0")
gi.require_version("GstRtspServer", "1.0")
from gi.repository import GLib, Gst, GstRtsp, GstRtspServer  # noqa: E402


def on_client(_server, client):
    print("conn", flush=True)

    def setup(_client, context):
        result, value = context.request.get_header(GstRtsp.RTSPHeaderField.TRANSPORT, 0)
        print("setup %s" % (value if result == GstRtsp.RTSPResult.OK else "-").replace(" ", "_"), flush=True)
    client.connect("setup-request", setup)


def main():
    threading.Timer(300, lambda: os._exit(0)).start()
    Gst.init(None)
    address = sys.argv[1]
    port = sys.argv[2] if len(sys.argv) > 2 else "0"
    only = sys.argv[3] if len(sys.argv) > 3 else None
    server = GstRtspServer.RTSPServer()
    server.set_address(address)
    server.set_service(port)
    factory = GstRtspServer.RTSPMediaFactory()
    factory.set_launch("( videotestsrc is-live=true ! video/x-raw,format=I420,width=160,height=96,framerate=25/1 "
                       "! jpegenc ! rtpjpegpay name=pay0 pt=26 )")
    factory.set_shared(True)
    if only:
        factory.set_protocols(GstRtsp.RTSPLowerTrans.TCP if only == "tcp" else GstRtsp.RTSPLowerTrans.UDP)
    server.get_mount_points().add_factory("/live", factory)
    server.attach(None)
    print("port %d" % server.get_bound_port(), flush=True)
    server.connect("client-connected", on_client)
    GLib.MainLoop().run()


if __name__ == "__main__":
    main()
