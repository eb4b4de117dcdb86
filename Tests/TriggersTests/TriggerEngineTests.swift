import Testing
import Triggers

/// The trigger state machine on a virtual clock (seconds as numbers): bounce, floods, holds,
/// long presses, lock-out, queueing, re-arm and idle return.
@Suite("Trigger engine")
struct TriggerEngineTests {
    let button = InputSource.gpio(chip: "gpiochip0", line: 17)

    func fires(_ effects: [TriggerEngine.Effect]) -> [Int] {
        effects.compactMap { if case .fire(let rule) = $0 { rule } else { nil } }
    }

    @Test("a contact bouncing 20 times in 5 ms is one press, fired on its first edge")
    func chatterIsOnePress() {
        var engine = TriggerEngine(rules: [TriggerRule(source: button, plays: true)])
        var effects: [TriggerEngine.Effect] = []
        // 20 edges 0.25 ms apart, starting with the press, ending pressed.
        for i in 0..<20 {
            let e = engine.edge(button, pressed: i % 2 == 0 || i == 19, at: 10 + Double(i) * 0.00025)
            if i == 0 { #expect(fires(e) == [0], "the press fires on its first edge") }
            effects += e
        }
        effects += engine.advance(to: 10.1)
        // The release bounces too.
        for i in 0..<20 { effects += engine.edge(button, pressed: i % 2 == 1 && i != 19, at: 10.5 + Double(i) * 0.00025) }
        effects += engine.advance(to: 11)
        #expect(fires(effects) == [0])
        #expect(engine.counters.presses == 1)
        #expect(engine.counters.bounces == 38)
    }

    @Test("1,000 presses a second: 10 pass, the rest are dropped and counted, the flood is said once and its end once")
    func floodIsRateLimited() {
        var engine = TriggerEngine(rules: [TriggerRule(source: .osc("/next"), plays: false)])
        var effects: [TriggerEngine.Effect] = []
        for i in 0..<1000 {
            let now = Double(i) / 1000
            effects += engine.pulse(.osc("/next"), at: now)
            effects += engine.advance(to: now)
        }
        effects += engine.advance(to: 2.5)
        #expect(fires(effects).count == TriggerEngine.pressLimit)
        #expect(engine.counters.dropped == 1000 - TriggerEngine.pressLimit)
        let floods = effects.filter { if case .floodStarted = $0 { true } else { false } }
        #expect(floods == [.floodStarted(.osc("/next"))])
        #expect(effects.contains(.floodEnded(.osc("/next"), dropped: 990)))
        // Afterwards a press fires again.
        #expect(fires(engine.pulse(.osc("/next"), at: 3)) == [0])
    }

    @Test("a key held for an hour: one press, the long press once, nothing after; then released")
    func hourLongHold() {
        var engine = TriggerEngine(rules: [TriggerRule(source: .key(30), plays: false),
                                           TriggerRule(source: .key(30), hold: 2, plays: false)])
        var effects = engine.edge(.key(30), pressed: true, at: 0)
        var t = 0.0
        while t < 3600 {
            t += 0.5
            effects += engine.advance(to: t)
        }
        #expect(fires(effects) == [1], "only the long press, once")
        effects = engine.edge(.key(30), pressed: false, at: 3600.2)
        #expect(fires(effects).isEmpty, "a release after a long press fires nothing")
        // A short press then fires the short rule on release.
        _ = engine.edge(.key(30), pressed: true, at: 3601)
        #expect(fires(engine.edge(.key(30), pressed: false, at: 3601.3)) == [0])
        #expect(engine.counters.presses == 2)
    }

    @Test("a triggered item locks out presses (busy ignore), then the re-arm delay, then fires again")
    func lockOutAndRearm() {
        var engine = TriggerEngine(rules: [TriggerRule(source: button, plays: true, busy: .ignore, rearm: 1)])
        #expect(fires(engine.edge(button, pressed: true, at: 0)) == [0])
        _ = engine.edge(button, pressed: false, at: 0.1)
        #expect(engine.phase == .playing(rule: 0, lastInput: 0))
        _ = engine.edge(button, pressed: true, at: 5)
        _ = engine.edge(button, pressed: false, at: 5.1)
        #expect(engine.counters.lockedOut == 1)
        #expect(engine.triggeredItemEnded(at: 30) == [.ended(rule: 0)])
        #expect(engine.phase == .rearming(until: 31))
        #expect(fires(engine.edge(button, pressed: true, at: 30.5)).isEmpty)
        _ = engine.edge(button, pressed: false, at: 30.6)
        #expect(engine.counters.lockedOut == 2)
        _ = engine.advance(to: 31)
        #expect(engine.phase == .armed)
        #expect(fires(engine.edge(button, pressed: true, at: 31.5)) == [0])
    }

    @Test("busy queue: one press waits for the end and plays then; busy restart: ends the item and fires at once")
    func queueAndRestart() {
        var queueing = TriggerEngine(rules: [TriggerRule(source: .osc("/a"), plays: true, busy: .queue),
                                             TriggerRule(source: .osc("/b"), plays: true)])
        _ = queueing.pulse(.osc("/a"), at: 0)
        #expect(fires(queueing.pulse(.osc("/b"), at: 1)).isEmpty)
        _ = queueing.pulse(.osc("/a"), at: 2)
        #expect(queueing.queued == 1 && queueing.counters.lockedOut == 1)
        #expect(queueing.triggeredItemEnded(at: 10) == [.ended(rule: 0), .fire(rule: 1)])
        #expect(queueing.phase == .playing(rule: 1, lastInput: 10))

        var restarting = TriggerEngine(rules: [TriggerRule(source: .osc("/a"), plays: true, busy: .restart)])
        _ = restarting.pulse(.osc("/a"), at: 0)
        #expect(restarting.pulse(.osc("/a"), at: 1) == [.ended(rule: 0), .fire(rule: 0)])
    }

    @Test("idle timeout: no press for the idle time while the item plays goes back to the loop; a press resets it")
    func idleReturn() {
        var engine = TriggerEngine(rules: [TriggerRule(source: .key(2), plays: true, rearm: 0, idle: 30),
                                           TriggerRule(source: .key(3), plays: false)])
        _ = engine.edge(.key(2), pressed: true, at: 0)
        _ = engine.edge(.key(2), pressed: false, at: 0.1)
        #expect(engine.advance(to: 20).isEmpty)
        _ = engine.edge(.key(3), pressed: true, at: 20)  // any press keeps it playing
        #expect(engine.advance(to: 49).isEmpty)
        #expect(engine.advance(to: 50) == [.idleReturn(rule: 0), .ended(rule: 0)])
        #expect(engine.phase == .armed)
        #expect(engine.triggeredItemEnded(at: 50.1).isEmpty, "the end that follows is not a second end")
    }

    @Test("a device removed mid-press: neither the long press nor a short press fires; the next press works")
    func deviceRemovedMidPress() {
        var engine = TriggerEngine(rules: [TriggerRule(source: .key(30), plays: true),
                                           TriggerRule(source: .key(30), hold: 2, plays: false)])
        var effects = engine.edge(.key(30), pressed: true, at: 0)
        effects += engine.advance(to: 1)
        effects += engine.lost(.key(30), at: 1.5)
        effects += engine.advance(to: 10)
        #expect(fires(effects).isEmpty)
        #expect(engine.phase == .armed)
        _ = engine.edge(.key(30), pressed: true, at: 20)
        #expect(fires(engine.edge(.key(30), pressed: false, at: 20.5)) == [0], "plugged in again, a short press plays")
    }

    @Test("the next deadline is when advance has work: a settling bounce, a due long press, idle, re-arm; none when idle")
    func deadlines() {
        var engine = TriggerEngine(rules: [TriggerRule(source: .key(30), plays: true, rearm: 1, idle: 30),
                                           TriggerRule(source: .key(30), hold: 2, plays: false)])
        #expect(engine.nextDeadline() == nil)
        _ = engine.edge(.key(30), pressed: true, at: 10)
        #expect(engine.nextDeadline() == 12, "the long press")
        _ = engine.edge(.key(30), pressed: false, at: 10.005)  // a bounce: settles 20 ms after it
        #expect(engine.nextDeadline() == 10.005 + 0.02)
        // The release settles at its deadline, before the hold: the short press fires then.
        #expect(engine.advance(to: 10.005 + 0.02) == [.fire(rule: 0)])
        #expect(engine.nextDeadline() == 10.005 + 0.02 + 30, "idle, from when it fired")
        _ = engine.triggeredItemEnded(at: 20)
        #expect(engine.nextDeadline() == 21, "re-arm")
        _ = engine.advance(to: 21)
        #expect(engine.phase == .armed)
        #expect(engine.nextDeadline() == nil)
    }

    @Test("stepping only at the deadlines gives the effects stepping at every instant gives")
    func deadlinesMissNothing() {
        // Times in 1/64 s, exact in binary: ticking at every 1/64 s meets every deadline exactly.
        let rules = [TriggerRule(source: .key(1), debounce: 1.0 / 32, plays: true, busy: .queue, rearm: 0.75, idle: 3),
                     TriggerRule(source: .key(1), hold: 1.5, plays: false),
                     TriggerRule(source: .key(2), debounce: 1.0 / 32, plays: true, rearm: 0.75)]
        var generator = SplitMix(seed: 7)
        var events: [(tick: Int, key: Int, pressed: Bool)] = []
        var tick = 0
        for _ in 0..<400 {
            tick += Int(generator.next() % 60)
            events.append((tick, generator.next() % 2 == 0 ? 1 : 2, generator.next() % 2 == 0))
        }
        var ticking = TriggerEngine(rules: rules), waiting = TriggerEngine(rules: rules)
        var ticked: [TriggerEngine.Effect] = [], waited: [TriggerEngine.Effect] = []
        var now = 0
        var wakes = 0
        for event in events {
            let time = Double(event.tick) / 64
            while now < event.tick {
                now += 1
                ticked += ticking.advance(to: Double(now) / 64)
            }
            while let due = waiting.nextDeadline(), due <= time {
                waited += waiting.advance(to: due)
                wakes += 1
            }
            ticked += ticking.edge(.key(event.key), pressed: event.pressed, at: time)
            waited += waiting.edge(.key(event.key), pressed: event.pressed, at: time)
        }
        #expect(ticked == waited)
        #expect(ticking.counters == waiting.counters)
        #expect(ticking.counters.fired > 10)
        #expect(wakes < now / 4, "\(wakes) wakes for \(now) ticks")
    }

    @Test("OSC arguments select the rule; unknown inputs are counted, not tracked")
    func oscArgumentsAndUnknownInputs() {
        var engine = TriggerEngine(rules: [TriggerRule(source: .osc("/play"), arguments: ["1"], plays: false),
                                           TriggerRule(source: .osc("/play"), arguments: ["2"], plays: false)])
        #expect(fires(engine.pulse(.osc("/play"), arguments: ["2"], at: 0)) == [1])
        #expect(fires(engine.pulse(.osc("/play"), arguments: ["3"], at: 1)).isEmpty)
        #expect(engine.pulse(.osc("/other"), at: 2).isEmpty)
        #expect(engine.edge(.key(1), pressed: true, at: 3).isEmpty)
        #expect(engine.counters.unmatched == 3)
    }
}
