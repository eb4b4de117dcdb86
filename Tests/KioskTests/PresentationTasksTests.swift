import Foundation
@testable import Kiosk
import Playback
import Render
import Synchronization
import Testing

@Suite struct PresentationTasksTests {
    struct Picture: ScreenshotSource {
        let image: RGBAImage
        func readBack() throws -> RGBAImage { image }
    }
    struct Broken: ScreenshotSource, Error, CustomStringConvertible {
        var description: String { "glReadPixels failed: 0x502" }
        func readBack() throws -> RGBAImage { throw self }
    }

    func context(_ screenshots: ScreenshotSource?) -> PresentationContext {
        PresentationContext(name: "headless-0", width: 4, height: 2, screenshots: screenshots,
                            clock: VirtualVsyncClock(refresh: RefreshRate(numerator: 60)))
    }

    /// Runs `request` on a thread of its own while this one, the presentation thread, drains the
    /// tasks until it has its answer.
    func answer<Value: Sendable>(_ tasks: PresentationTasks, _ context: PresentationContext,
                                 _ request: @escaping @Sendable () -> Value) -> Value {
        let answered = Latch<Value>()
        Thread { answered.set(request()) }.start()
        while true {
            tasks.drain(context)
            if let value = answered.wait(timeout: 0) { return value }
        }
    }

    @Test func aTaskRunsOnTheDrainingThreadWithItsContext() {
        let tasks = PresentationTasks()
        let context = context(nil)
        let name = answer(tasks, context) { tasks.run(timeout: 60) { context in "\(context.name) \(context.width)x\(context.height)" } }
        #expect(name == "headless-0 4x2")
    }

    @Test func aScreenshotIsAPNGOfTheOutputNamed() throws {
        let tasks = PresentationTasks()
        let image = RGBAImage(width: 4, height: 2, pixels: [UInt8](repeating: 200, count: 32), bottomRowFirst: true)
        let context = context(Picture(image: image))
        guard case .screenshot(let png, let width, let height, let output) = answer(tasks, context, { tasks.screenshot(of: "headless-0") }) else {
            Issue.record("no screenshot")
            return
        }
        #expect(width == 4 && height == 2 && output == "headless-0")
        #expect(Array(png.prefix(4)) == [0x89, 0x50, 0x4E, 0x47])
    }

    @Test func aScreenshotThatCannotBeTakenSaysWhy() {
        let tasks = PresentationTasks()
        #expect(answer(tasks, context(Picture(image: RGBAImage(width: 1, height: 1, pixels: [0, 0, 0, 0], bottomRowFirst: true))),
                       { tasks.screenshot(of: "hdmi-9") }).failure == "no output named hdmi-9 (this one is headless-0)")
        #expect(answer(tasks, context(nil), { tasks.screenshot(of: nil) }).failure == "the headless-0 output cannot take screenshots")
        #expect(answer(tasks, context(Broken()), { tasks.screenshot(of: nil) }).failure
            == "screenshot of headless-0 failed: glReadPixels failed: 0x502")
    }
}

extension KioskCommandResult {
    /// Why the command failed; nil when it did not.
    var failure: String? { if case .failed(let why) = self { why } else { nil } }
}
