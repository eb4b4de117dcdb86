import Foundation
import Media
import Playback
import Render
import Synchronization

extension PresentationTasks {
    /// PNG encoding for screenshots: one thread, at low priority, two more waiting at most (an
    /// encode that outlives its request's 30 s keeps its thread, not a new one per request).
    static let screenshotEncoder = ThreadPool(name: "marquee-screenshot", limit: 1, maxWaiting: 2)
    /// The PNG encoder, kept between thumbnails (a dashboard asks for one every few seconds).
    static let screenshotPNG = KeptPNGEncoder()

    /// A screenshot of the output presenting through these tasks: the presenting thread only copies the
    /// pixels (a few milliseconds at 1080p; less for a thumbnail the output scales as it copies); the PNG is encoded on a thread of its own at nice 10,
    /// while the caller waits (at most 4 s for the copy and 30 s for the PNG).
    /// `maxWidth`: scaled down (on the encoding thread) to at most that many pixels wide.
    func screenshot(of output: String?, maxWidth: Int? = nil) -> KioskCommandResult {
        let readBack = run(timeout: 4) { context -> Result<(RGBAImage, String), ScreenshotFailure> in
            if let output, output != context.name { return .failure(.init("no output named \(output) (this one is \(context.name))")) }
            guard let source = context.screenshots else { return .failure(.init("the \(context.name) output cannot take screenshots")) }
            do {
                return .success((try maxWidth.map(source.readBack(maxWidth:)) ?? source.readBack(), context.name))
            } catch {
                return .failure(.init("screenshot of \(context.name) failed: \(error)"))
            }
        }
        switch readBack {
        case nil:
            return .failed("the output did not answer within 4 s")
        case .failure(let failure)?:
            return .failed(failure.message)
        case .success(let (full, name))?:
            // At low priority: the presenting and decoding threads come first for the CPU.
            let encoded = Latch<Result<(Data, Int, Int), any Error>>()
            guard Self.screenshotEncoder.tryRun({
                lowerThisThreadsPriority()
                let picture = maxWidth.map { full.scaledDown(toWidth: $0) } ?? full
                // Opaque: a screen shows no alpha.
                encoded.set(Result { (try Self.screenshotPNG.encode(rgba: picture.pixels, width: picture.width, height: picture.height,
                                                                    bottomRowFirst: picture.bottomRowFirst, opaque: true),
                                      picture.width, picture.height) })
            }) else {
                return .failed("screenshot of \(name): earlier screenshots are still being encoded; try again later")
            }
            guard let result = encoded.wait(timeout: 30) else {
                return .failed("screenshot of \(name): the PNG was not encoded within 30 s")
            }
            switch result {
            case .success(let (png, width, height)): return .screenshot(png: png, width: width, height: height, output: name)
            case .failure(let error): return .failed("screenshot of \(name) failed: \(error)")
            }
        }
    }
}

/// Why a screenshot could not be read back.
struct ScreenshotFailure: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

/// Gives the calling thread a nice value of 10. (On Linux the nice value is each thread's own, and
/// `who` 0 is the calling thread.)
func lowerThisThreadsPriority() {
    _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 10)
}
