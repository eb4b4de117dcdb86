import Network
import Testing

/// What an item's `live` options ask of FFmpeg, and which HLS variant plays on which output.
@Suite struct LiveSourceOptionsTests {
    typealias V = LiveSourceOptions.Variant

    @Test func demuxerOptions() {
        #expect(LiveSourceOptions().demuxerOptions(scheme: "rtsp").isEmpty, "by default FFmpeg's own")
        let tcp = LiveSourceOptions(transport: .tcp)
        #expect(tcp.demuxerOptions(scheme: "rtsp").map { "\($0.key)=\($0.value)" } == ["rtsp_transport=tcp"])
        #expect(tcp.demuxerOptions(scheme: "https").isEmpty, "the transport is RTSP's")
        let low = LiveSourceOptions(transport: .udp, mode: .lowLatency)
        #expect(low.demuxerOptions(scheme: "rtsp").map { "\($0.key)=\($0.value)" }
            == ["rtsp_transport=udp", "fflags=+nobuffer", "probesize=262144", "analyzeduration=500000", "reorder_queue_size=0", "max_delay=0"])
        #expect(low.demuxerOptions(scheme: "https").map(\.key) == ["fflags", "probesize", "analyzeduration"])
    }

    @Test func theVariantThatFitsTheOutput() {
        let variants = [V(program: 0, height: 360, bitrate: 900_000), V(program: 1, height: 180, bitrate: 300_000),
                        V(program: 2, height: 720, bitrate: 2_500_000), V(program: 3, height: 720, bitrate: 3_000_000)]
        let fit = LiveSourceOptions()
        #expect(fit.variant(of: variants, outputHeight: 180)?.program == 1)
        #expect(fit.variant(of: variants, outputHeight: 200)?.program == 0, "the smallest not scaled up")
        #expect(fit.variant(of: variants, outputHeight: 1080)?.program == 3, "none that tall: the tallest, its best bitrate")
        #expect(fit.variant(of: variants, outputHeight: nil) == nil, "no output height: FFmpeg's choice")
        #expect(fit.variant(of: [], outputHeight: 720) == nil)
        #expect(fit.variant(of: [V(program: 0, height: 0, bitrate: 1)], outputHeight: 720) == nil, "heights unknown")
    }

    @Test func maxHeightOverridesTheOutput() {
        let variants = [V(program: 0, height: 360, bitrate: 900_000), V(program: 1, height: 180, bitrate: 300_000)]
        #expect(LiveSourceOptions(maxHeight: 200).variant(of: variants, outputHeight: 1080)?.program == 1)
        #expect(LiveSourceOptions(maxHeight: 360).variant(of: variants, outputHeight: 100)?.program == 0)
        #expect(LiveSourceOptions(maxHeight: 100).variant(of: variants, outputHeight: nil)?.program == 1, "none low enough: the shortest")
    }
}
