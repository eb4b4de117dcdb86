@testable import Sound
import Testing

@Suite("The audio writer's mode: following, coasting past an end, backing off after a failure")
struct AudioWriterModeTests {
    /// Binary fractions (1/64 s blocks, 1/8 s grace), so that sums are exact.
    func mode() -> AudioWriterMode { AudioWriterMode(grace: 0.125, backoff: 0.5) }

    @Test("an end with a loop's start primed coasts for the grace's worth of sound, once per end")
    func coastsOncePerEnd() {
        var m = mode()
        m.observe(playing: true, ended: false, loopPrimed: true)
        #expect(m.phase == .following && !m.isCoasting)
        m.observe(playing: false, ended: true, loopPrimed: true)
        #expect(m.isCoasting)
        for _ in 0..<7 { m.wrote(seconds: 1.0 / 64) }
        #expect(m.isCoasting, "7/64 s written of 8/64")
        m.wrote(seconds: 1.0 / 64)
        #expect(!m.isCoasting && m.phase == .coasting(written: 0.125))
        // The same end seen again does not start a new grace.
        m.observe(playing: false, ended: true, loopPrimed: true)
        #expect(!m.isCoasting)
        // The loop's seek came: playing again; the next end coasts afresh.
        m.observe(playing: true, ended: false, loopPrimed: true)
        #expect(m.phase == .following)
        m.observe(playing: false, ended: true, loopPrimed: true)
        #expect(m.phase == .coasting(written: 0))
    }

    @Test("no coasting at an end without a primed loop, or at a pause")
    func noCoasting() {
        var m = mode()
        m.observe(playing: false, ended: true, loopPrimed: false)
        #expect(m.phase == .following)
        m.observe(playing: false, ended: false, loopPrimed: true)
        #expect(m.phase == .following)
        m.wrote(seconds: 1)
        #expect(m.phase == .following)
    }

    @Test("a failure stops writing for the back-off, then the writer follows again")
    func backsOff() {
        var m = mode()
        var ok = m.mayWrite(now: 10)
        #expect(ok)
        m.observe(playing: false, ended: true, loopPrimed: true)
        m.failed(now: 10)
        ok = m.mayWrite(now: 10.25)
        #expect(!ok && !m.isCoasting)
        m.observe(playing: true, ended: false, loopPrimed: false)   // the player goes on meanwhile
        #expect(m.phase == .failed(until: 10.5))
        ok = m.mayWrite(now: 10.499)
        #expect(!ok)
        ok = m.mayWrite(now: 10.5)
        #expect(ok && m.phase == .following)
        // A second failure backs off from its own moment.
        m.failed(now: 20)
        let early = m.mayWrite(now: 20.4), later = m.mayWrite(now: 20.6)
        #expect(!early && later)
    }
}
