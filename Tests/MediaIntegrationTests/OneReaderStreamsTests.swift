import Foundation
@testable import Media
import Playback
import Synchronization
import Testing

/// Probes of a stream one reader at a time can take never open it beside another open (real
/// threads and waits: an integration test).
@Suite struct OneReaderStreamsTests {
    static let description = AssetDescription(duration: .indefinite, tracks: [AssetTrack(trackID: 1, mediaType: .video)])

    @Test("while a reader holds the stream, a probe takes the description read before and opens nothing")
    func aProbeWhileHeldOpensNothing() throws {
        let streams = OneReaderStreams()
        let uri = "udp://127.0.0.1:5000"
        let opens = Atomic(0)
        _ = try streams.probe(uri, limit: 1) { opens.add(1, ordering: .relaxed); return Self.description }
        let hold = streams.hold(uri)
        let again = try streams.probe(uri, limit: 1) { opens.add(1, ordering: .relaxed); return Self.description }
        #expect(opens.load(ordering: .relaxed) == 1 && again.tracks.count == 1)
        withExtendedLifetime(hold) {}
    }

    @Test("a probe while another of the same stream is under way waits for it, then takes its description")
    func aSecondProbeWaitsForTheFirst() throws {
        let streams = OneReaderStreams()
        let uri = "rtsp://127.0.0.1/camera"
        let opens = Atomic(0), inside = Atomic(0), most = Atomic(0)
        let done = DispatchGroup()
        for _ in 0..<2 {
            DispatchQueue.global().async(group: done) {
                _ = try? streams.probe(uri, limit: 5) {
                    opens.add(1, ordering: .relaxed)
                    let now = inside.add(1, ordering: .relaxed).newValue
                    most.max(now, ordering: .relaxed)
                    Thread.sleep(forTimeInterval: 0.05)
                    inside.subtract(1, ordering: .relaxed)
                    return Self.description
                }
            }
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(most.load(ordering: .relaxed) == 1 && opens.load(ordering: .relaxed) == 1)
    }

    @Test("held with no description: a probe waits its limit for the readers to go, then says why")
    func heldWithoutADescriptionTimesOutNamingTheStream() {
        let streams = OneReaderStreams()
        let uri = "udp://127.0.0.1:5001"
        let hold = streams.hold(uri)
        #expect {
            _ = try streams.probe(uri, limit: 0.05) { Self.description }
        } throws: { "\($0)".contains(uri) && "\($0)".contains("one reader at a time") }
        withExtendedLifetime(hold) {}
    }
}
