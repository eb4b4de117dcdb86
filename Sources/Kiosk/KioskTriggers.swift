import Foundation
import Inputs
import Playback
import Synchronization
import Triggers

/// A session's triggers: the inputs the config names feed the trigger engine, whose effects play
/// prerolled targets on the session's player, run commands, light signals and send the socket's
/// `trigger-start` / `trigger-end` events. Read once at start (a reload keeps them).
public final class KioskTriggers: @unchecked Sendable {
    // @unchecked: the engine is behind its Mutex; inputs, outputs and the stage are thread-safe
    // or immutable after init.
    let triggers: [TriggerConfig]
    let engine: Mutex<TriggerEngine>
    let stage: TriggerStage
    let logger: Logger
    weak var session: KioskSession?
    let controller: KioskController?
    var osc: OSCReceiver?
    var keys: KeyInputs?
    var gpio: GPIOInputs?
    /// The wall's cues (`wall.sync.cue`): plays on every node on the same vsync; nil: here alone.
    var cues: WallCues?
    /// Per trigger, its signal's output (nil where none, or it could not be opened).
    var signals: [Int: SignalOutput] = [:]
    /// Inputs handled so far, and the stop: what the engine's clock thread waits on.
    let wake = Monitor(Wake())
    struct Wake {
        var inputs = 0
        var stopped = false
    }
    /// Actions that failed, logged once each.
    let loggedFailures = Mutex(Set<String>())

    enum SignalOutput {
        case gpio(GPIOOutput)
        case osc(OSCSender, address: String)
    }

    /// The longest the engine's clock thread waits with nothing due (it looks again then).
    static let longestIdle = 1.0

    /// Starts the inputs `config.triggers` needs (nil when it has none). `controller` sets
    /// properties (`set`).
    public static func start(session: KioskSession, config: KioskConfig, controller: KioskController?, logger: Logger) -> KioskTriggers? {
        guard !config.triggers.isEmpty else { return nil }
        let made = KioskTriggers(session: session, config: config, controller: controller, logger: logger)
        made.startInputs(config)
        made.startCues(config)
        return made
    }

    init(session: KioskSession, config: KioskConfig, controller: KioskController?, logger: Logger) {
        triggers = config.triggers
        engine = Mutex(TriggerEngine(rules: config.triggers.map(\.rule)))
        self.session = session
        self.controller = controller
        self.logger = logger
        let backend: any MediaBackend = session.backend
        let triggers = config.triggers
        stage = TriggerStage(player: session.player) { rule in
            guard case .play(let items, _) = triggers[rule].action else { return [] }
            return items.map { PlayerItem(asset: Asset(url: URL(fileURLWithPath: $0.path), backend: backend)) }
        }
        stage.prepare(rules: triggers.indices.filter { triggers[$0].rule.plays && triggers[$0].preroll })
        for (index, trigger) in triggers.enumerated() {
            guard let signal = trigger.signal else { continue }
            do {
                switch signal {
                case .gpio(let line): signals[index] = .gpio(try GPIOOutput(line))
                case .osc(let endpoint, let address): signals[index] = .osc(try OSCSender(endpoint: endpoint), address: address)
                }
            } catch {
                logger.error("trigger signal cannot be opened; the trigger works without it", ["trigger": "\(index)", "error": "\(error)"])
            }
        }
    }

    func startInputs(_ config: KioskConfig) {
        let rules = triggers.map(\.rule)
        if let endpoint = config.inputs.osc {
            do {
                osc = try OSCReceiver(endpoint: endpoint, logger: logger) { [weak self] message in
                    guard let self else { return }
                    handle { $0.pulse(.osc(message.address), arguments: message.arguments.map(\.description), at: inputClockSeconds()) }
                }
                logger.info("OSC triggers listening", ["address": "\(endpoint)", "port": "\(osc?.boundPort ?? 0)"])
            } catch {
                logger.error("OSC triggers cannot listen; the other inputs work", ["error": "\(error)"])
            }
        } else if rules.contains(where: { if case .osc = $0.source { true } else { false } }) {
            logger.warning("OSC triggers configured but inputs.osc is not set: nothing listens for them")
        }
        if rules.contains(where: { if case .key = $0.source { true } else { false } }) {
            keys = KeyInputs(paths: config.inputs.keyDevices, logger: logger) { [weak self] code, level, time in
                self?.handle { Self.step(&$0, .key(code), level, time) }
            }
        }
        let lines = triggers.compactMap { if case .gpio(let line) = $0.input { line } else { nil } }
        if !lines.isEmpty {
            gpio = GPIOInputs(lines: Array(Set(lines)), logger: logger) { [weak self] line, level, time in
                self?.handle { Self.step(&$0, .gpio(chip: line.chip, line: line.line), level, time) }
            }
        }
        // The triggered item leaving the player's current place ends it.
        session?.player.consumeChanges(onThread: "marquee-trigger-items") { [weak self] change in
            guard let self, case .currentItem(let item) = change, !stage.isTriggered(item) else { return }
            handle { $0.triggeredItemEnded(at: inputClockSeconds()) }
        }
        // The engine's clock: advanced when something falls due (a long press, a bounce settling,
        // an idle return), waiting for that or for the next input, never ticking.
        startThread(named: "marquee-triggers") { [weak self] in
            while let self {
                let seen = wake.withLock { $0.inputs }
                let due = engine.withLock { $0.nextDeadline() }
                let wait = min(Self.longestIdle, max(0.001, (due ?? .infinity) - inputClockSeconds()))
                if wake.wait(until: { $0.stopped || $0.inputs != seen }, timeout: wait), wake.withLock({ $0.stopped }) { return }
                let now = inputClockSeconds()
                if let due, now >= due { handle(wakes: false) { $0.advance(to: now) } }
            }
        }
    }

    static func step(_ engine: inout TriggerEngine, _ source: InputSource, _ level: InputLevel, _ time: Double) -> [TriggerEngine.Effect] {
        level == .lost ? engine.lost(source, at: time) : engine.edge(source, pressed: level == .pressed, at: time)
    }

    /// Runs one step of the engine under its lock, then its effects outside it; an input's step
    /// wakes the clock thread (its deadline may have moved).
    func handle(wakes: Bool = true, _ step: (inout TriggerEngine) -> [TriggerEngine.Effect]) {
        let effects = engine.withLock { step(&$0) }
        if wakes { wake.update { $0.inputs &+= 1 } }
        for effect in effects { apply(effect) }
    }

    func apply(_ effect: TriggerEngine.Effect) {
        guard let session else { return }
        switch effect {
        case .fire(let index):
            let trigger = triggers[index]
            var ready = false
            if case .play = trigger.action { ready = stage.isReady(index) }
            logger.info("trigger", ["trigger": "\(index)", "on": "\(trigger.rule.source)", "prerolled": ready ? "yes" : "no"])
            switch trigger.action {
            case .play:
                guard let cues else { return play(index) }
                let at = cues.send(rule: index)
                cut(index, at: at)
            case .next: _ = session.perform(.next)
            case .previous: _ = session.perform(.previous)
            case .pause: _ = session.perform(.pause(true))
            case .toggle: _ = session.perform(.pause(!session.status.snapshot.paused))
            case .display(let on):
                // Waits for the presentation thread (at most 4 s); the input's next event waits too.
                if case .failed(let why) = session.perform(.displayPower(on)) { failed("trigger \(index): \(why)") }
            case .set(let property, let value):
                do { try controller?.setProperty(property, to: value) } catch { failed("trigger \(index): property \(property) cannot be set: \(error)") }
            }
        case .ended(let index):
            session.reporter.events.send(["event": "trigger-end", "trigger": .number(Double(index))], session.onEvent)
            signal(index, on: false)
            // Decoded again once its item is over, not while the cut's decoders start.
            if triggers[index].preroll { stage.prepare(rules: [index]) }
        case .idleReturn(let index):
            logger.info("trigger idle; back to the loop", ["trigger": "\(index)"])
            stage.leave()
        case .floodStarted(let source):
            logger.warning("trigger input flooding; presses past \(TriggerEngine.pressLimit) a second are dropped", ["input": "\(source)"])
        case .floodEnded(let source, let dropped):
            logger.info("trigger input flood over", ["input": "\(source)", "dropped": "\(dropped)"])
        }
    }

    /// Cuts rule `index`'s target in now, and says so.
    func play(_ index: Int) {
        guard let session, case .play(_, let then) = triggers[index].action else { return }
        let trigger = triggers[index]
        let ready = stage.isReady(index)
        guard stage.play(rule: index, then: then, prerollAgain: trigger.busy == .restart && trigger.preroll) else {
            failed("trigger \(index) could not play its items")
            _ = engine.withLock { $0.triggeredItemEnded(at: inputClockSeconds()) }
            return
        }
        session.reporter.events.send(["event": "trigger-start", "trigger": .number(Double(index)), "prerolled": .bool(ready)], session.onEvent)
        signal(index, on: true)
    }

    /// Cuts rule `index`'s target in on the first vsync at or after wall time `at` (a wall cue).
    func cut(_ index: Int, at: WallTime) {
        guard let session else { return }
        let added = session.cueGate.add(at: at) { [weak self] lateBy, vsync, wall in
            guard let self else { return }
            if let lateBy { cues?.late(rule: index, at: at, by: lateBy) }
            play(index)
            logger.info("wall cue cut", ["trigger": "\(index)", "cue_at": at.unixSeconds.formatted(decimals: 6), "vsync": "\(vsync)",
                                         "vsync_wall": wall.map { $0.unixSeconds.formatted(decimals: 6) } ?? "-"])
        }
        if !added {
            failed("trigger \(index): too many wall cues waiting; this one is dropped")
            _ = engine.withLock { $0.triggeredItemEnded(at: inputClockSeconds()) }
        }
    }

    /// Opens the wall's cue socket when the config has one (a wall on the clock).
    func startCues(_ config: KioskConfig) {
        guard let session, let wall = config.wall, wall.sync.mode == .clock, let settings = wall.sync.cue else { return }
        // The socket the wall's set agreement opened already: its cues come here from now on.
        if let shared = session.wallCues {
            let take: @Sendable (WallCue) -> Void = { [weak self] cue in self?.cued(cue) }
            shared.handlers.cue.withLock { $0 = (triggers.count, take) }
            cues = shared
            return
        }
        do {
            cues = try WallCues(settings: settings, node: session.node, rules: triggers.count, logger: logger) { [weak self] cue in
                self?.cued(cue)
            }
        } catch {
            logger.error("wall cues cannot listen; triggers play on this node alone", ["error": "\(error)"])
        }
    }

    /// Another node's cue: its rule plays here on the same vsync, whatever this node's phase.
    func cued(_ cue: WallCue) {
        let effects = engine.withLock { $0.cued(cue.rule, at: inputClockSeconds()) }
        wake.update { $0.inputs &+= 1 }
        for effect in effects {
            if case .fire(let index) = effect {
                logger.info("trigger from a wall cue", ["trigger": "\(index)", "prerolled": stage.isReady(index) ? "yes" : "no"])
                cut(index, at: cue.at)
            } else {
                apply(effect)
            }
        }
    }

    func signal(_ index: Int, on: Bool) {
        guard let output = signals[index] else { return }
        do {
            switch output {
            case .gpio(let line): try line.set(on)
            case .osc(let sender, let address): try sender.send(OSCMessage(address: address, arguments: [.int(on ? 1 : 0)]))
            }
        } catch {
            failed("trigger \(index) signal: \(error)")
        }
    }

    func failed(_ message: String) {
        guard loggedFailures.withLock({ $0.insert(message).inserted }) else { return }
        logger.error(message)
    }

    /// What the engine has counted.
    public var counters: TriggerEngine.Counters { engine.withLock { $0.counters } }

    /// Stops the inputs and the prerolls.
    public func stop() {
        wake.update { $0.stopped = true }
        osc?.stop()
        keys?.stop()
        gpio?.stop()
        cues?.stop()
        stage.discardAll()
    }
}
