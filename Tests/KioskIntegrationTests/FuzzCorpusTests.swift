import Foundation
import FuzzTargets
@testable import Kiosk
import Testing
@testable import KioskTests

/// The fuzz targets' committed inputs (seeds, and inputs that once crashed) replayed through the
/// same harnesses the fuzzers run, in the ordinary test build: a regression ends the test process.
@Suite struct FuzzCorpusTests {
    let unit = KioskTests.FuzzCorpusTests()   // its fixtures: replay
    typealias Unit = KioskTests.FuzzCorpusTests

    /// The config seeds (`*.json`; other files there are inputs that once crashed) are configs the
    /// reader accepts, so the fuzzer starts from the valid forms.
    @Test func configSeedsAreValid() throws {
        for file in inputFiles([Unit.fuzzFolder + "/corpus/config"]) where file.hasSuffix(".json") {
            let text = try String(contentsOfFile: file, encoding: .utf8)
            let folder = NSTemporaryDirectory() + "/marquee-fuzz-seeds-\(getpid())"
            try FileManager.default.createDirectory(atPath: folder + "/demo", withIntermediateDirectories: true)
            #expect(FileManager.default.createFile(atPath: folder + "/demo/demo.mp4", contents: Data()))
            #expect(FileManager.default.createFile(atPath: folder + "/list.m3u", contents: Data("demo/demo.mp4\n".utf8)))
            defer { try? FileManager.default.removeItem(atPath: folder) }
            #expect(throws: Never.self, "\(file)") { try KioskConfig.parse(text, baseDirectory: folder) }
        }
    }
}
