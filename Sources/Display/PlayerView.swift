import Foundation
import Media
import Playback
import Render

/// A view that shows a player (the AV Foundation Programming Guide's `PlayerView`, whose layer is
/// an `AVPlayerLayer`): it owns an output (headless or a KMS display) and the thread that
/// presents on it, so that setting `player` is all an app does to see it play.
///
///     let view = try PlayerView(output: .kms())
///     view.player = player
///     player.play()
///     ...
///     try view.close()
///
/// Underneath is the same presentation loop the kiosk uses (`PlayerPresenter` over the output):
/// the view's thread runs it for the current player, and for none shows the background. A player is
/// shown by one view at a time; replacing `player` lets the old one go (it stops advancing until a
/// view shows it again, and goes on from there). Setting a player that another view still shows
/// leaves this view on its background and logs why (`lastError` says it too).
///
/// `close()` ends the thread (waiting for it, with a timeout), closes the output and, for a KMS
/// display, puts back what the display showed before.
public final class PlayerView: Sendable {
    /// The output a view owns.
    public enum Output: Sendable {
        /// No screen: EGL surfaceless rendering into an offscreen picture of `mode`, paced by the
        /// wall clock (`.real`, as a display) or as fast as frames are ready (`.virtual`, for tests).
        case headless(mode: DisplayMode = PlayerView.defaultHeadlessMode, clock: ClockKind = .real)
        /// A DRM/KMS display (a connector of a card), as `KMSOutput` drives it.
        case kms(KMSSettings = KMSSettings())
    }

    /// 1280x720 at 60 Hz.
    public static let defaultHeadlessMode = DisplayMode(width: 1280, height: 720, refresh: RefreshRate(numerator: 60))

    private struct State {
        var player: Player?
        /// Counts changes of `player`: the presentation thread starts over for each.
        var generation = 0
        var closing = false
        var readyForDisplay = false
        var lastError: String?
        var outputName = ""
        var refresh = RefreshRate(numerator: 60)
        /// Work waiting for the presentation thread (screenshots).
        var tasks: [@Sendable (any PresentationSurface) -> Void] = []
    }

    private let state: Monitor<State>
    private let ended = Latch<Void>()
    private let logger: Logger

    /// Opens `output` on a thread of the view's own (its GL context lives there) and starts
    /// presenting: the background until `player` is set. Throws what opening the output threw, or a
    /// `WaitTimeout` when it did not open within `openTimeout` seconds.
    public init(output: Output = .headless(), background: RGBColor = .black, trace: TraceWriter? = nil,
                logger: Logger = Logger(level: .error), openTimeout: Double = 10) throws {
        let state = Monitor(State())
        let opened = Latch<Result<Void, any Error>>()
        let ended = ended
        self.state = state
        self.logger = logger
        startThread(named: "player-view") {
            defer { ended.set(()) }
            switch output {
            case .headless(let mode, let clock):
                let made = Result { try HeadlessOutput(mode: mode, clock: clock, background: background) }
                guard case .success(let output) = made else { opened.set(made.map { _ in }); return }
                Self.present(on: output, state: state, opened: opened, trace: trace, logger: logger, close: {})
            case .kms(let settings):
                let made = Result { try KMSOutput(settings: settings, background: background, logger: logger) }
                guard case .success(let output) = made else { opened.set(made.map { _ in }); return }
                Self.present(on: output, state: state, opened: opened, trace: trace, logger: logger, close: { output.close() })
            }
        }
        guard let result = opened.wait(timeout: openTimeout) else {
            state.update { $0.closing = true }
            throw WaitTimeout(waitingFor: "the player view's output to open", seconds: openTimeout)
        }
        try result.get()
    }

    deinit {
        // An app that forgot `close()`: the thread still ends (not waited for long).
        state.update { $0.closing = true }
        _ = ended.wait(timeout: 1)
    }

    /// The player shown; nil shows the background. Takes effect on the next vsync.
    public var player: Player? {
        get { state.withLock { $0.player } }
        set {
            let replaced = state.update { state -> Player?? in
                guard state.player !== newValue else { return nil }
                defer {
                    state.player = newValue
                    state.generation += 1
                    state.readyForDisplay = false
                }
                return .some(state.player)
            }
            // A presentation loop waiting while the old player is paused sees the change now.
            if case .some(let old?) = replaced { old.wakePresentation() }
        }
    }

    /// True once a frame of the current player is on the output (`AVPlayerLayer.isReadyForDisplay`);
    /// false again when `player` changes.
    public var isReadyForDisplay: Bool { state.withLock { $0.readyForDisplay } }

    /// Why the view last could not present (a player shown by another view, an output error), or nil.
    public var lastError: String? { state.withLock { $0.lastError } }

    /// The output's name (`headless-0`, `kms-HDMI-A-1`), as traces and logs call it.
    public var outputName: String { state.withLock { $0.outputName } }

    /// True until `close()` (or a failure of the output) ended the presentation thread.
    public var isPresenting: Bool { !ended.isSet }

    /// The picture on the output now, top row first (headless outputs only: a KMS display's
    /// scan-out buffer is not read back). Waits up to `timeout` seconds for the presentation thread
    /// to take it.
    public func screenshot(timeout: Double = 5) throws -> RGBAImage {
        let answer = Latch<Result<RGBAImage, any Error>>()
        let queued = state.update { state -> Bool in
            guard !state.closing else { return false }
            state.tasks.append { surface in answer.set(Result { try surface.screenshot() }) }
            return true
        }
        guard queued, isPresenting else { throw PlayerViewError.closed }
        return try answer.wait(timeout: timeout, waitingFor: "a screenshot from the player view's thread").get()
    }

    /// Ends presentation: the thread stops after the vsync it is on and the view waits for it (up to
    /// `timeout` seconds), the player is let go, the output is closed (a KMS display gets back what it
    /// showed before the view opened it). Later calls return at once.
    public func close(timeout: Double = 5) throws(WaitTimeout) {
        state.update { $0.closing = true }
        guard ended.wait(timeout: timeout) != nil else {
            throw WaitTimeout(waitingFor: "the player view's presentation thread to end", seconds: timeout)
        }
    }

    // MARK: The presentation thread

    private static func present<O: OutputDriver & PresentationSurface>(
        on output: O, state: Monitor<State>, opened: Latch<Result<Void, any Error>>, trace: TraceWriter?,
        logger: Logger, close: () -> Void
    ) where O.Frame == VideoFrame {
        state.withLock { state in
            state.outputName = output.name
            state.refresh = output.clock.refresh
        }
        opened.set(.success(()))
        let logger = logger.with(["output": output.name])
        var background = BackgroundPresenter(output: output)
        // Vsync numbers only go forward on the output, across players and the background.
        var lastVsync: Int64 = -1
        while true {
            let (player, generation, closing) = state.withLock { ($0.player, $0.generation, $0.closing) }
            if closing { break }
            let current: @Sendable () -> Bool = {
                state.withLock { $0.generation == generation && !$0.closing }
            }
            do {
                if let player {
                    let presenter: PlayerPresenter<O>
                    do {
                        presenter = try PlayerPresenter(player: player, output: output, trace: trace, logger: logger)
                    } catch {
                        // Shown by another view (one output per player): this one keeps its background.
                        record("\(error)", state: state, logger: logger)
                        try background.show(generation: generation, state: state, lastVsync: &lastVsync)
                        continue
                    }
                    defer { presenter.videoOutput.detach() }
                    presenter.onVsync = { _ in runTasks(state: state, output: output) }
                    presenter.didPresent = { _, _, _ in
                        state.withLock { if $0.generation == generation { $0.readyForDisplay = true } }
                    }
                    presenter.lastVsync = lastVsync
                    defer { lastVsync = presenter.lastVsync }
                    _ = try presenter.run(while: current)
                    background.forget()
                } else {
                    try background.show(generation: generation, state: state, lastVsync: &lastVsync)
                }
            } catch {
                // The output failed (a flip that never came, a lost GL context): the view stops.
                record("\(error)", state: state, logger: logger)
                break
            }
        }
        // Tasks that came too late get an answer.
        runTasks(state: state, output: output)
        close()
    }

    private static func record(_ error: String, state: Monitor<State>, logger: Logger) {
        logger.error("player view cannot present", ["why": error])
        state.withLock { $0.lastError = error }
    }

    private static func runTasks(state: Monitor<State>, output: any PresentationSurface) {
        let tasks = state.withLock { state in
            defer { state.tasks.removeAll() }
            return state.tasks
        }
        for task in tasks { task(output) }
    }

    /// The background of a view with no player: drawn once (again after the display came back),
    /// then the thread waits for `player` to change.
    private struct BackgroundPresenter<O: OutputDriver & PresentationSurface> where O.Frame == VideoFrame {
        let output: O
        var drawn = false
        /// How long one wait lasts before the display's events are looked at again.
        let slice = 0.25

        init(output: O) { self.output = output }

        mutating func forget() { drawn = false }

        /// Shows the background until `player` changes from what it was at `generation`, or the view closes.
        mutating func show(generation: Int, state: Monitor<State>, lastVsync: inout Int64) throws {
            let changed: @Sendable (State) -> Bool = { $0.generation != generation || $0.closing }
            while !state.withLock({ changed($0) }) {
                if !output.isReady {
                    _ = try output.waitForEvent(timeout: slice)
                    drawn = false
                    continue
                }
                if !drawn {
                    try output.draw([nil])
                    let vsync = output.clock.earliestVsync(after: lastVsync)
                    try output.queue(forVsync: vsync)
                    if let shown = try awaitFlip() {
                        lastVsync = max(vsync, shown)
                        drawn = true
                    }
                    continue
                }
                // Nothing to draw: wait for a new player (or a task), looking at the display's
                // events between waits (a display output notices a lost display there).
                state.wait(until: { !$0.tasks.isEmpty || changed($0) }, timeout: slice)
                runTasks(state: state, output: output)
                if case .lost = try output.waitForEvent(timeout: 0) { drawn = false }
            }
        }

        /// The vsync the background was shown on; nil when the display was lost with it.
        private func awaitFlip() throws -> Int64? {
            var waited = 0.0
            while waited < 5 {
                switch try output.waitForEvent(timeout: slice) {
                case .flipped(let vsync): return vsync
                case .lost: return nil
                case .timedOut: waited += slice
                }
            }
            throw WaitTimeout(waitingFor: "the background on \(output.name) to be shown", seconds: waited)
        }
    }
}

/// What a `PlayerView`'s output can do besides presenting.
protocol PresentationSurface {
    func screenshot() throws -> RGBAImage
}

extension HeadlessOutput: PresentationSurface {}

extension KMSOutput: PresentationSurface {
    func screenshot() throws -> RGBAImage { throw PlayerViewError.noScreenshot(name) }
}

/// Errors of a `PlayerView`.
public enum PlayerViewError: LocalizedError, Equatable, CustomStringConvertible {
    public var errorDescription: String? { description }
    case closed
    case noScreenshot(String)

    public var description: String {
        switch self {
        case .closed: "the player view is closed"
        case .noScreenshot(let output): "\(output) cannot be read back (only a headless output's picture can)"
        }
    }
}
