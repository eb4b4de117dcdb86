import Display
import Foundation
@testable import Kiosk
import Media
import Playback
import Testing
import TestSupport
@testable import KioskTests

/// A whole session on the headless output with the real clock, supervised as `marquee` does.
@Suite(.serialized) struct SupervisedSessionTests {
    let unit = KioskTests.SupervisedSessionTests()   // its fixtures: config, tick, tickAndCollect

    @Test func aDecoderThatBlocksStallsHealthAndStopsTheWatchdogUntilPaused() throws {
        let clip = try TestMedia.clip(seconds: 4, fps: 30)
        let config = unit.config(clip)
        let made = BlockingBackends()
        let kiosk = KioskOnThread(config: config, logger: Logger(level: .error)) { output in
            KioskSession(config: config, configPath: nil, logger: Logger(level: .error), output: output, slowStorageLimit: 100, mediaLayer: { inner in
                made.make(inner: inner, frames: 40)
            })
        }
        defer {
            made.releaseAll()
            kiosk.stop()
        }
        let session = try #require(kiosk.waitForSession(), "the output did not open within 20 s")
        let socket = try NotifySocket()
        let notifier = ServiceNotifier(environment: ["NOTIFY_SOCKET": socket.path, "WATCHDOG_USEC": "400000"])
        let supervisor = ServiceSupervisor(notifier: notifier, status: session.status, logger: Logger(level: .error))
        let blocking = made.first

        // Frames come: the watchdog is fed (every 100 ms: a quarter of WATCHDOG_USEC).
        let playing = try #require(unit.tick(supervisor, socket, until: 20) { $0.summary.hasPrefix("playing item 1 of 1") },
                                   "never playing: \(session.status.supervision())")
        #expect(playing.status != "stalled" && playing.progressing, "\(playing)")
        // The decoder blocks after 40 frames (1.3 s): stalled within 2 s of the last picture.
        // (Waiting for the 40th frame too: a machine under heavy load may stall briefly before.)
        let stalled = try #require(unit.tick(supervisor, socket, until: 20) { $0.status == "stalled" && blocking?.isBlocking == true },
                                   "never stalled: \(session.status.supervision())")
        #expect(!stalled.progressing)
        #expect(stalled.reasons.first?.contains("stalled: no new picture for") == true, "\(stalled.reasons)")
        let whileStalled = unit.tickAndCollect(supervisor, socket, for: 1.0)
        #expect(!whileStalled.contains("WATCHDOG=1"), "the watchdog was fed while the picture was frozen: \(whileStalled)")

        // Paused by command: rightly idle, the watchdog is fed again and STATUS= says so.
        _ = session.perform(.pause(true))
        // (A loaded machine may have dropped frames before the stall: "degraded", never "stalled".)
        let paused = try #require(unit.tick(supervisor, socket, until: 3) { $0.summary.hasPrefix("paused by command") },
                                  "\(session.status.supervision())")
        #expect(paused.progressing && paused.status != "stalled", "\(paused)")
        #expect(paused.reasons.allSatisfy { !$0.contains("stalled") }, "\(paused.reasons)")
        let whilePaused = unit.tickAndCollect(supervisor, socket, for: 0.6)
        #expect(whilePaused.filter { $0 == "WATCHDOG=1" }.count >= 3, "\(whilePaused)")
    }

    @Test func theSupervisorSaysWhyInStatusWhenItStopsFeedingTheWatchdog() throws {
        let status = KioskStatus()
        let t0 = ContinuousClock.now
        status.update {
            $0.started = t0
            $0.outputs = [.init(name: "headless-0", mode: "320x180@30")]
            $0.outputs[0].lastBeat = t0
            $0.outputs[0].dueSince = t0
            $0.outputs[0].lastPicture = t0
        }
        let socket = try NotifySocket()
        let notifier = ServiceNotifier(environment: ["NOTIFY_SOCKET": socket.path, "WATCHDOG_USEC": "400000"])
        let supervisor = ServiceSupervisor(notifier: notifier, status: status, logger: Logger(level: .error))
        supervisor.tick(now: t0 + .milliseconds(100))
        #expect(socket.collect(for: 0.2).sorted() == ["STATUS=presenting", "WATCHDOG=1"])
        status.update { $0.outputs[0].lastBeat = t0 + .seconds(3) }
        supervisor.tick(now: t0 + .seconds(3))
        #expect(socket.collect(for: 0.2) == ["STATUS=stalled: no new picture on headless-0 for over 2.0 s (see health)"])
        supervisor.tick(now: t0 + .seconds(4))
        #expect(socket.collect(for: 0.2) == [], "nothing more while stalled: no ping, the same status")
    }

    @Test func aSlowProbeDegradesHealthAsSlowStorage() throws {
        let clip = try TestMedia.clip(seconds: 4, fps: 30)
        // No output: the session is given capabilities that keep frames as decoded.
        let session = KioskSession(config: unit.config(clip), configPath: nil, logger: Logger(level: .error), output: .unconstrained, slowStorageLimit: 0.2, mediaLayer: { inner in
            BlockingBackend(inner: inner, frames: .max, probeDelay: 0.4)
        })
        defer { session.player.removeAllItems() }
        let deadline = Date(timeIntervalSinceNow: 10)
        while session.status.snapshot.slowStorage.isEmpty && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        let slow = try #require(session.status.snapshot.slowStorage[clip], "no slow probe recorded")
        #expect(slow.operation == "probe" && slow.seconds >= 0.4 && slow.limit == 0.2)
        let health = session.status.health()
        #expect(health.reasons.contains { $0.hasPrefix("slow storage: \(clip): a probe over 0.2 s") }, "\(health)")
    }

}
