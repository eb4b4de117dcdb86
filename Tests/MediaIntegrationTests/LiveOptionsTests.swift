import CFFmpeg
import Foundation
@testable import Media
import Network
import Playback
import Testing
import TestSupport
@testable import MediaTests

/// An item's `live` options reaching FFmpeg, against servers on loopback started here: the HLS
/// variant that fits the output is the one whose segments are fetched, and RTSP's transport is the
/// one the server is asked for.
@Suite(.serialized) struct LiveOptionsTests {
    func limits(_ allow: [String], source: LiveSourceOptions = LiveSourceOptions(), fitHeight: Int? = nil) throws -> MediaIOLimits {
        var limits = MediaIOLimits(open: 10, read: 5)
        limits.network = try NetworkAllowList(entries: allow)
        limits.source = source
        limits.fitHeight = fitHeight
        return limits
    }

    @Test func theHLSVariantThatFitsTheOutputIsTheOneFetched() throws {
        let server = try LoopbackServer("serve", [try TestMedia.hlsVariants()])
        let url = "\(server.url)/master.m3u8"
        // (output height, maxHeight, the height that must play)
        for (fit, maxHeight, height) in [(180, nil, 180), (1080, nil, 360), (1080, 200, 180), (100, 360, 360)] as [(Int, Int?, Int)] {
            let before = server.events.count
            var frames = 0
            do {
                let decoder = try VideoDecoder(path: url, threads: 1, limits: limits(["http://127.0.0.1"], source: LiveSourceOptions(maxHeight: maxHeight), fitHeight: fit))
                #expect(decoder.info.height == height, "output \(fit), maxHeight \(String(describing: maxHeight)): \(decoder.info.width)x\(decoder.info.height)")
                while frames < 400, try decoder.nextFrame() != nil { frames += 1 }
            }
            let requests = server.settledEvents().dropFirst(before)
            let (v0, v1) = (requests.filter { $0.hasPrefix("GET /v0/seg") }.count, requests.filter { $0.hasPrefix("GET /v1/seg") }.count)
            let (chosen, other) = height == 360 ? (v0, v1) : (v1, v0)
            #expect(frames >= 190, "\(frames) frames")
            #expect(chosen == 8, "all 8 segments of the \(height)p variant: \(chosen)")
            #expect(other <= 2, "the other variant's segments beyond the probe: \(other)")
            print("HLS variant for output \(fit)p, maxHeight \(maxHeight.map(String.init) ?? "-"): \(height)p played (\(frames) frames); segments fetched: 360p \(v0), 180p \(v1)")
        }
        // Without an output height or maxHeight: FFmpeg's own choice, every variant fetched.
        let before = server.events.count
        var frames = 0
        let shown: Int
        do {
            let decoder = try VideoDecoder(path: url, threads: 1, limits: limits(["http://127.0.0.1"]))
            shown = decoder.info.height
            while frames < 400, try decoder.nextFrame() != nil { frames += 1 }
        }
        let requests = server.settledEvents().dropFirst(before)
        print("HLS without a choice (FFmpeg's): \(shown)p played; segments fetched: 360p \(requests.filter { $0.hasPrefix("GET /v0/seg") }.count), 180p \(requests.filter { $0.hasPrefix("GET /v1/seg") }.count)")
    }

    /// The SETUP request the RTSP server sees asks for the transport the item names (and FFmpeg's
    /// default, UDP, without one); a server offering TCP only refuses UDP and plays over TCP.
    @Test func theRTSPTransportIsTheOneTheServerIsAskedFor() throws {
        if let missing = LoopbackServer.rtspMissing {
            print("skipped: \(missing)")
            return
        }
        let server = try LoopbackServer.rtsp()
        let url = "rtsp://127.0.0.1:\(server.port)/live"
        func setups(after count: Int) -> [String] {
            // The server's lines come through a pipe: a second at most for the SETUP's.
            let end = Date().addingTimeInterval(2)
            while Date() < end, !server.events.dropFirst(count).contains(where: { $0.hasPrefix("setup ") }) { Thread.sleep(forTimeInterval: 0.02) }
            return server.events.dropFirst(count).filter { $0.hasPrefix("setup ") }
        }
        let cases: [(LiveSourceOptions.Transport?, LiveSourceOptions.Mode, String)] = [
            (nil, .smooth, "RTP/AVP/UDP"), (.tcp, .smooth, "RTP/AVP/TCP"), (.udp, .smooth, "RTP/AVP/UDP"),
            (.tcp, .lowLatency, "RTP/AVP/TCP"), (.udp, .lowLatency, "RTP/AVP/UDP"),
        ]
        for (transport, mode, asked) in cases {
            let before = server.events.count
            // How long the open and first picture take (a figure, not a bound).
            let start = Date()
            do {
                let decoder = try VideoDecoder(path: url, threads: 1, limits: limits(["rtsp://127.0.0.1"], source: LiveSourceOptions(transport: transport, mode: mode)))
                #expect(try decoder.nextFrame() != nil)
            }
            let firstPicture = Date().timeIntervalSince(start)
            let seen = setups(after: before)
            #expect(seen.count == 1 && seen[0].contains(asked), "transport \(transport?.rawValue ?? "default"): \(seen)")
            print("RTSP transport \(transport?.rawValue ?? "default"), \(mode.rawValue): the server was asked \(seen); first picture after \(Int(firstPicture * 1000)) ms")
        }
        // TCP first: GStreamer's shared media answers 5XX for a moment after a client it refused.
        let tcpOnly = try LoopbackServer.rtsp(only: "tcp")
        let only = "rtsp://127.0.0.1:\(tcpOnly.port)/live"
        do {
            let decoder = try VideoDecoder(path: only, threads: 1, limits: limits(["rtsp://127.0.0.1"], source: LiveSourceOptions(transport: .tcp, mode: .lowLatency)))
            #expect(try decoder.nextFrame() != nil, "TCP, low latency, on the TCP-only server")
        }
        do {
            _ = try VideoDecoder(path: only, threads: 1, limits: limits(["rtsp://127.0.0.1"], source: LiveSourceOptions(transport: .udp)))
            Issue.record("UDP opened on a server offering TCP only")
        } catch let error as MediaError {
            print("RTSP over UDP on a TCP-only server: \(error)")
        }
    }

    /// An item's `latency` is its live source's lag bound, over the backend's (`network.liveLatency`).
    @Test func anItemsLatencyIsItsSourcesLagBound() throws {
        let server = try LoopbackServer("live", [])
        let url = URL(string: "\(server.url)/a.mkv")!
        var backend = FFmpegBackend(threads: 1)
        backend.limits = try limits(["http://127.0.0.1"])
        backend.liveLagBound = 1
        #expect(try backend.openReader(url).liveLagBound == 1)
        backend.sourceOptions = { $0 == url.absoluteString ? LiveSourceOptions(latency: 0.2) : nil }
        #expect(try backend.openReader(url).liveLagBound == 0.2)
    }

    /// A reopened live source is not timed again: the rate its first open found is given
    /// (`MediaIOLimits.knownFrameRate`), and the probe stops at the stream's parameters instead of
    /// reading 20 more frames (0.8 s of this 25 fps stream) to measure it. Given 30 fps, which the
    /// stream is not, the decoder keeps 30: the probe measured nothing.
    @Test func aReopenTakesTheFrameRateItIsGivenAndDoesNotMeasureIt() throws {
        if let missing = LoopbackServer.rtspMissing {
            print("skipped: \(missing)")
            return
        }
        let server = try LoopbackServer.rtsp()
        let url = "rtsp://127.0.0.1:\(server.port)/live"
        var limits = try limits(["rtsp://127.0.0.1"])
        let first = try VideoDecoder(path: url, threads: 1, limits: limits)
        #expect(first.info.frameRate == 25, "the first open measures the stream's rate: \(first.info.frameRate)")
        limits.knownFrameRate = AVRational(num: 30, den: 1)
        let reopened = try VideoDecoder(path: url, threads: 1, limits: limits)
        #expect(reopened.info.frameRate == 30, "a reopen keeps the rate it is given: \(reopened.info.frameRate)")
        #expect(try reopened.nextFrame() != nil)
    }
}
