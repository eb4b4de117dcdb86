import Foundation
@testable import Kiosk
import SystemCalls
import Testing

/// Errors made from another say their reason through `localizedDescription` and carry the other.
@Suite struct ErrorCauseTests {
    @Test func aConfigThatDoesNotParseCarriesTheSyntaxError() throws {
        let error = try #require(throws: ConfigError.self) { _ = try KioskConfig.parse(#"{"playlist": [}"#, baseDirectory: "/") }
        #expect(error.localizedDescription == error.description && error.localizedDescription.hasPrefix("config: syntax error at line 1, column "),
                "\(error.localizedDescription)")
        let syntax = try #require(error.cause as? JSONSyntaxError)
        #expect(error.localizedDescription.hasSuffix(syntax.localizedDescription))
    }

    @Test func aMissingM3UFileCarriesTheFileError() throws {
        let file = "/nonexistent-\(getpid())/list.m3u"
        var skipped: [SkippedEntry] = []
        let error = try #require(throws: PlaylistError.self) { _ = try expandPlaylist(.m3u(file), skipped: &skipped, first: .max) }
        #expect(error.localizedDescription == "the M3U file \(file) cannot be opened: No such file or directory")
        let cause = try #require(error.cause as? RegularFileError)
        #expect(cause.errno == ENOENT && cause.cause?.errno == ENOENT)
    }

    @Test func aControlErrorSaysTheReplyAndWhy() {
        #expect(ControlError.propertyNotFound.localizedDescription == "property not found")
        #expect(ControlError.commandFailed("nothing is playing").localizedDescription == "error running command: nothing is playing")
    }
}
