import Foundation
import Media
import Playback
import Sound
import Testing
import TestSupport

/// An app prints `error.localizedDescription` (as the AV Foundation guide does): it must say the
/// real reason, not "The operation could not be completed".
@Suite struct ErrorDescriptionTests {
    let generic = "The operation could not be completed"

    @Test func aMissingFilesAssetLoadSaysTheFileAndFFmpegsReason() async throws {
        let path = TestMedia.folder + "/missing-\(UUID().uuidString).mp4"
        let asset = Asset(url: URL(fileURLWithPath: path))
        do {
            _ = try await asset.load(.tracks)
            Issue.record("a missing file loaded")
        } catch {
            let text = error.localizedDescription
            #expect(text == "\(path): avformat_open_input failed: No such file or directory", "\(text)")
            #expect(text == "\(error)")
        }
        // The guide's key-based form gives the same error.
        let (status, error) = asset.statusOfValue(forKey: "tracks")
        #expect(status == .failed)
        #expect(error?.localizedDescription.contains("No such file or directory") == true, "\(String(describing: error))")
    }

    @Test func aFileThatIsNotMediaSaysFFmpegsReason() async throws {
        let path = try TestMedia.garbage()
        do {
            _ = try await Asset(url: URL(fileURLWithPath: path)).load(.tracks)
            Issue.record("garbage loaded")
        } catch {
            let text = error.localizedDescription
            #expect(text.hasPrefix(path + ": ") && text.contains("Invalid data found when processing input"), "\(text)")
            #expect(!text.contains(generic))
            let media = try #require(error as? MediaError)
            #expect(media.uri == path && media.code < 0 && text.hasSuffix(media.reason))
        }
    }

    @Test func playbackErrorsDescribeThemselves() {
        let errors: [any Error & CustomStringConvertible] = [
            AssetError(url: URL(fileURLWithPath: "/m/a.mp4"), reason: "\"foo\" not a key of an asset"),
            PlayerError.looperTimeRangeInvalid("it ends before it starts"),
            WaitTimeout(waitingFor: "the first frame", seconds: 2),
            NumberOutOfRange(field: "volume", reason: "2 is out of range (0 to 1)"),
            AudioPathError(device: "hdmi", reason: "no device"),
            MediaError(uri: "/m/b.mp4", call: "avcodec_open2", code: -22, reason: "Invalid argument"),
        ]
        for error in errors {
            #expect(error.localizedDescription == error.description)
            #expect(!error.localizedDescription.contains(generic))
        }
        #expect(errors[5].localizedDescription == "/m/b.mp4: avcodec_open2 failed: Invalid argument")
    }
}
