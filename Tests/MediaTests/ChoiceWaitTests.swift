import Foundation
import Testing
import Media

/// The output's choices that decode threads wait for (conversion, texture size): a wait ends when
/// the choice is made, or at its timeout with the default.
@Suite struct ChoiceWaitTests {
    private func seconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    @Test func anUndecidedConversionWaitsItsTimeoutThenFallsBackToTheShader() {
        let choice = ColorConversionSwitch.undecided()
        let start = ContinuousClock.now
        #expect(choice.waitForChoice(timeout: 0.1) == .shader)
        #expect(seconds(since: start) >= 0.1)
    }

    @Test func aConversionChosenOnAnotherThreadEndsTheWaitAtOnce() {
        let choice = ColorConversionSwitch.undecided()
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: 0.05)
            choice.set(.cpu)
        }
        let start = ContinuousClock.now
        #expect(choice.waitForChoice(timeout: 30) == .cpu)
        #expect(seconds(since: start) < 10)
        #expect(ColorConversionSwitch(.cpu).waitForChoice(timeout: 0) == .cpu)
    }

    @Test func aTextureLimitIsWaitedForUntilItIsKnown() {
        let limit = TextureSizeLimit()
        #expect(limit.waitForValue(timeout: 0.05) == nil)
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: 0.05)
            limit.set(4096)
        }
        let start = ContinuousClock.now
        #expect(limit.waitForValue(timeout: 30) == 4096)
        #expect(seconds(since: start) < 10)
        #expect(TextureSizeLimit(-3).maxSide == nil)
    }
}
