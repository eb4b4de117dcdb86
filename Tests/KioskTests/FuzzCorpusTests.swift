import Foundation
import FuzzTargets
@testable import Kiosk
import Testing

/// The fuzz targets' committed inputs (seeds, and inputs that once crashed) replayed through the
/// same harnesses the fuzzers run, in the ordinary test build: a regression ends the test process.
@Suite struct FuzzCorpusTests {
    static let fuzzFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fuzz").path

    func replay(_ target: String, through harness: ([UInt8]) -> Void) throws {
        let files = inputFiles([Self.fuzzFolder + "/corpus/" + target])
        #expect(files.count >= 5, "the \(target) seeds are in Fuzz/corpus/\(target)")
        for file in files {
            let data = try #require(FileManager.default.contents(atPath: file), "cannot read \(file)")
            harness(Array(data))
        }
    }

    @Test func jsonCorpus() throws { try replay("json", through: fuzzJSON) }
    @Test func configCorpus() throws { try replay("config", through: fuzzConfig) }
    @Test func controlCorpus() throws { try replay("control", through: fuzzControl) }
    @Test func m3uCorpus() throws { try replay("m3u", through: fuzzM3U) }

}

@Suite struct ControlSessionTests {
    func text(_ line: [UInt8]?) -> String? { line.map { String(decoding: $0, as: UTF8.self) } }

    @Test func repliesWithoutASocket() throws {
        let handler = FakeHandler()
        let session = ControlSession(clientID: 7, handler: handler, maxObserved: 1)
        #expect(session.reply(to: Array("   ".utf8)) == nil, "a blank line gets no reply")
        #expect(text(session.reply(to: Array(#"{"command":["client_name"],"request_id":3}"#.utf8)))
                == #"{"data":"client7","request_id":3,"error":"success"}"# + "\n")
        #expect(text(session.reply(to: Array("{not json".utf8))) == #"{"request_id":0,"error":"invalid parameter"}"# + "\n")
        #expect(session.reply(to: Array("not json".utf8)) == nil, "mpv's text form: no reply")
        // The player's part is handed back as work, run where the caller likes.
        guard case .player(let work)? = session.request(Array(#"{"command":["playlist-next"],"request_id":4}"#.utf8)) else {
            Issue.record("playlist-next is the player's")
            return
        }
        #expect(handler.position == 0, "nothing runs before the work does")
        #expect(text(work()) == #"{"data":null,"request_id":4,"error":"success"}"# + "\n")
        #expect(handler.position == 1)
        #expect(text(session.reply(to: Array(#"{"command":["observe_property",1,"pause"]}"#.utf8))) == #"{"request_id":0,"error":"success"}"# + "\n")
        #expect(text(session.reply(to: Array(#"{"command":["observe_property",2,"pause"]}"#.utf8)))?.contains("at most 1 observed") == true)
        #expect(session.observedNames == ["pause"])
        #expect(session.propertyChanges(["pause": false]).map(\.encoded) == [#"{"event":"property-change","id":1,"name":"pause","data":false}"#])
        #expect(session.propertyChanges(["pause": false]).isEmpty, "an unchanged property is not reported again")
        #expect(session.propertyChanges(["pause": true]).count == 1)
    }
}
