import Foundation
import Playback
import Render
import Synchronization

/// What a task on the presentation thread may use.
struct PresentationContext {
    let name: String
    let width: Int
    let height: Int
    let screenshots: ScreenshotSource?
    let clock: any VsyncClock
}

/// Work handed to the presentation thread (where the GL context is current), run between vsyncs.
/// It must be short (a copy, a restart): the PNG of a screenshot is encoded by the caller.
final class PresentationTasks: @unchecked Sendable {
    // @unchecked: the tasks (closures of the threads that hand them over) are kept in a Monitor.
    private let tasks = Monitor<[(PresentationContext) -> Void]>([])

    /// Runs `body` on the presentation thread and waits up to `timeout` seconds for its result
    /// (nil: none came in time).
    func run<Value: Sendable>(timeout: Double, _ body: @escaping (PresentationContext) -> Value) -> Value? {
        let done = Latch<Value>()
        tasks.withLock { $0.append { context in done.set(body(context)) } }
        return done.wait(timeout: timeout)
    }

    func drain(_ context: PresentationContext) {
        let pending = tasks.withLock { tasks -> [(PresentationContext) -> Void] in
            defer { tasks.removeAll() }
            return tasks
        }
        for task in pending { task(context) }
    }
}
