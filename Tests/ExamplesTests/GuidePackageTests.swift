import Foundation
import Testing
import TestSupport

/// Issue 27's check that Marquee is a library people can depend on: a package outside the
/// repository (Examples/GuidePackage, copied into a temporary folder with the checkout's absolute
/// path as its dependency) builds against the `Display` product, runs the guide's "Putting It All
/// Together", and prints the real reason of a failed asset load through `localizedDescription`.
///
/// The first build compiles Marquee again for the outside package (minutes); its scratch folder,
/// `.build/guide-package` in the checkout, keeps that for the next run. Nested in ExamplesTests,
/// whose tests run one at a time, so that the build does not run beside their timed playback.
extension ExamplesTests {
    @Suite struct GuidePackage {
        /// `swift` on PATH, or nil.
        static let swift: String? = {
            let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
            return path.split(separator: ":").map { "\($0)/swift" }.first { FileManager.default.isExecutableFile(atPath: $0) }
        }()

        /// The checkout: the folder whose Package.swift is Marquee's, found from this test's source or
        /// from the working directory `swift test` runs in.
        static let repository: URL? = {
            [Command.repository, FileManager.default.currentDirectoryPath].map { URL(fileURLWithPath: $0) }.first { folder in
                let manifest = try? String(contentsOf: folder.appendingPathComponent("Package.swift"), encoding: .utf8)
                return manifest?.contains("name: \"Marquee\"") == true
                    && FileManager.default.fileExists(atPath: folder.appendingPathComponent("Examples/GuidePackage/Package.swift").path)
            }
        }()

        struct Failure: Error, CustomStringConvertible { let description: String }

        /// Runs `executable` with standard error merged into standard output; a hang ends after `timeout` seconds.
        static func run(_ executable: String, _ arguments: [String], timeout: Double) throws -> (status: Int32, text: String, lines: [String]) {
            let result = try Command.run(executable, arguments, mergeErrors: true, timeout: timeout)
            return (result.status, result.text, result.text.split(separator: "\n").map(String.init))
        }

        /// The outside package, built once for the suite: the path of its GuidePlayer executable.
        static let built: Result<String, Failure> = {
            guard let swift, let repository else { return .failure(Failure(description: "no swift on PATH, or no checkout found")) }
            do {
                let package = FileManager.default.temporaryDirectory.appendingPathComponent("marquee-guide-\(UUID().uuidString)")
                defer { try? FileManager.default.removeItem(at: package) }
                let example = repository.appendingPathComponent("Examples/GuidePackage")
                try FileManager.default.createDirectory(at: package, withIntermediateDirectories: true)
                try FileManager.default.copyItem(at: example.appendingPathComponent("Sources"), to: package.appendingPathComponent("Sources"))
                // The example's manifest as written, with the checkout's absolute path for "../..".
                let manifest = try String(contentsOf: example.appendingPathComponent("Package.swift"), encoding: .utf8)
                guard manifest.components(separatedBy: #"path: "../..""#).count == 2 else {
                    return .failure(Failure(description: "Examples/GuidePackage/Package.swift names no path \"../..\" to replace"))
                }
                let pathLiteral = repository.path.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
                try manifest.replacingOccurrences(of: #"path: "../..""#, with: "path: \"\(pathLiteral)\"")
                    .write(to: package.appendingPathComponent("Package.swift"), atomically: true, encoding: .utf8)
                let scratch = repository.appendingPathComponent(".build/guide-package").path
                let options = ["--package-path", package.path, "--scratch-path", scratch]
                let build = try run(swift, ["build"] + options, timeout: 1800)
                guard build.status == 0 else {
                    return .failure(Failure(description: "swift build of the guide package failed (\(build.status)):\n\(build.text.suffix(6000))"))
                }
                let bin = try run(swift, ["build", "--show-bin-path"] + options, timeout: 300)
                let executable = (bin.lines.last ?? "") + "/GuidePlayer"
                guard bin.status == 0, FileManager.default.isExecutableFile(atPath: executable) else {
                    return .failure(Failure(description: "no GuidePlayer built: \(bin.text)"))
                }
                return .success(executable)
            } catch {
                return .failure(Failure(description: "the guide package could not be set up: \(error)"))
            }
        }()

        @Test(.enabled(if: swift != nil, "swift is not on PATH: the outside package cannot be built"),
              .enabled(if: repository != nil, "the Marquee checkout was not found"))
        func anOutsidePackagePrintsTheRealReasonOfAFailedLoad() throws {
            let executable = try Self.built.get()
            let missing = FileManager.default.temporaryDirectory.appendingPathComponent("marquee-missing-\(UUID().uuidString).mp4").path
            let run = try Self.run(executable, [missing], timeout: 60)
            #expect(run.status == 1, "\(run.text)")
            // The guide's NSLog(@"The asset's tracks were not loaded:\n%@", [error localizedDescription]).
            let lines = run.lines
            let said = try #require(lines.firstIndex(of: "GuidePlayer: The asset's tracks were not loaded:"), "\(run.text)")
            #expect(said + 1 < lines.count && lines[said + 1] == "\(missing): avformat_open_input failed: No such file or directory", "\(run.text)")
            #expect(!run.text.contains("The operation could not be completed"), "\(run.text)")

            // A file that is not media: FFmpeg's reason for that.
            let garbage = try TestMedia.garbage()
            let bad = try Self.run(executable, [garbage], timeout: 60)
            #expect(bad.status == 1, "\(bad.text)")
            #expect(bad.lines.contains { $0.hasPrefix(garbage + ": ") && $0.hasSuffix("Invalid data found when processing input") }, "\(bad.text)")
        }

        @Test(.enabled(if: swift != nil, "swift is not on PATH: the outside package cannot be built"),
              .enabled(if: repository != nil, "the Marquee checkout was not found"))
        func anOutsidePackagePlaysTheGuidesWay() throws {
            let executable = try Self.built.get()
            let clip = try TestMedia.clip(seconds: 1, fps: 30)
            let run = try Self.run(executable, [clip, "2"], timeout: 60)
            #expect(run.status == 0, "\(run.text)")
            let lines = run.lines
            // The button is disabled until the item is ready (its status observed with .initial:
            // unknown first; syncUI reads the status now, so "enabled" may come before the update
            // that says ready), then pressed; at the end the player pauses and the controller seeks to zero.
            func index(_ line: String) -> Int { lines.firstIndex(of: "GuidePlayer: " + line) ?? -1 }
            let steps = ["play button disabled", "item status: unknown", "play button enabled", "play", "didPlayToEndTime: seeking to zero"]
            #expect(!steps.map(index).contains(-1) && steps.map(index) == steps.map(index).sorted(), "\(run.text)")
            #expect(index("item status: unknown") < index("item status: readyToPlay"), "\(run.text)")
            #expect(lines.contains { $0.hasPrefix("GuidePlayer: seek to zero landed at {0/") }, "\(run.text)")
            #expect(lines.filter { $0.hasSuffix("didPlayToEndTime: seeking to zero") }.count == 1, "paused at the end: \(run.text)")
            let last = try #require(lines.last { $0.contains("stopped after 2.0 s:") }, "\(run.text)")
            // "... N frames presented, D dropped": the clip's 30 frames once, then frame 0 again after
            // the seek (paused there); a frame late on a busy machine is dropped, not lost.
            let words = last.split(separator: " ")
            let presented = words.firstIndex(of: "frames").flatMap { Int(words[$0 - 1]) } ?? -1
            let dropped = words.firstIndex(of: "dropped").flatMap { Int(words[$0 - 1]) } ?? -1
            #expect(presented > 0 && dropped >= 0 && (30...32).contains(presented + dropped), "\(last)")
        }
    }
}
