import Foundation
import Media
import Playback
import Testing
import TestSupport

@Suite struct VideoDecoderTests {

    @Test func missingFileNamesTheFileAndFFmpegsReason() throws {
        let path = TestMedia.folder + "/does-not-exist.mp4"
        let error = try #require(throws: MediaError.self) { try VideoDecoder(path: path) }
        #expect(error.uri == path)
        #expect(error.call == "avformat_open_input")
        #expect(error.description.contains("does-not-exist.mp4"))
        #expect(error.description.contains("No such file or directory"))
    }

    @Test func nonMediaFileNamesTheFileAndFFmpegsReason() throws {
        let path = try TestMedia.garbage()
        let error = try #require(throws: MediaError.self) { try VideoDecoder(path: path) }
        #expect(error.description.contains("garbage.mp4"))
        #expect(error.description.contains("Invalid data found when processing input"))
    }

}
