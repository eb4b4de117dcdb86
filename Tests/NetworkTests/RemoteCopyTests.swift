import Network
import Testing

/// A remote file's copy on a virtual clock: first download, verification, refresh, stale while the
/// server is away, backoff, and a changed file swapped in as a new version.
@Suite struct RemoteCopyTests {
    let policy = RemoteCopy.Policy(refresh: 60, initialDelay: 1, maximumDelay: 8)

    @Test func theFirstCopyIsDownloadedVerifiedAndThenPlays() {
        var c = RemoteCopy(policy: policy)
        #expect(c.state == .absent && c.copy == nil)
        #expect(c.tick(at: 0) == .download)
        #expect(c.state == .downloading(since: 0, copy: nil))
        #expect(c.tick(at: 0.5) == .none, "one download at a time")
        c.downloaded(at: 2)
        #expect(c.state == .verifying(since: 2, copy: nil))
        #expect(c.copy == nil, "nothing plays before the check")
        let first = c.verified(at: 2.5, changed: true)
        #expect(first == RemoteCopy.Copy(version: 1, confirmed: 2.5))
        #expect(c.state == .ready(first, checkAt: 62.5))
        #expect(c.degradation(source: "u", now: 3) == nil)
        #expect(c.tick(at: 62) == .none)
        #expect(c.tick(at: 62.5) == .download, "checked again after refresh seconds")
        #expect(c.copy == first, "the copy plays while it is checked")
    }

    @Test func aFailedFirstDownloadBacksOffAndPlaysNothing() {
        var c = RemoteCopy(policy: policy)
        var t = 0.0
        var waits: [Double] = []
        for _ in 0..<6 {
            #expect(c.tick(at: t) == .download)
            c.failed(at: t, reason: "the body ended after 10 of 20 bytes announced")
            guard case .failed(let retryAt, _, _) = c.state else { Issue.record("\(c.state)"); return }
            #expect(c.tick(at: retryAt - 0.01) == .none)
            waits.append(retryAt - t)
            t = retryAt
        }
        #expect(waits == [1, 2, 4, 8, 8, 8])
        #expect(c.copy == nil)
        #expect(c.degradation(source: "http://h/a.mp4", now: t)?.contains("not cached (the body ended after 10 of 20 bytes announced; 6 failed)") == true)
        // It comes back: the failures are forgotten.
        #expect(c.tick(at: t) == .download)
        c.downloaded(at: t)
        c.verified(at: t, changed: true)
        #expect(c.previousFailures == 0 && c.copy?.version == 1)
    }

    @Test func theBackoffNeverWaitsLongerThanARefresh() {
        let short = RemoteCopy(policy: RemoteCopy.Policy(refresh: 3, initialDelay: 1, maximumDelay: 60))
        #expect((1...6).map { short.delay(afterFailures: $0) } == [1, 2, 3, 3, 3, 3])
        let tiny = RemoteCopy(policy: RemoteCopy.Policy(refresh: 0.5, initialDelay: 1, maximumDelay: 60))
        #expect(tiny.delay(afterFailures: 5) == 1, "at least the first wait")
        #expect(RemoteCopy(policy: policy).delay(afterFailures: 10) == 8, "the maximum below a longer refresh")
    }

    @Test func theServerAwayMakesTheCopyStaleNotGone() {
        var c = RemoteCopy(policy: policy)
        _ = c.tick(at: 0)
        c.downloaded(at: 1)
        let first = c.verified(at: 1, changed: true)
        // Ten minutes with the server away: every check fails, the copy stays.
        var t = 61.0
        var tries = 0
        while t < 661 {
            if c.tick(at: t) == .download {
                tries += 1
                c.failed(at: t, reason: "Connection refused")
                #expect(c.copy == first)
            }
            t += 0.25
        }
        guard case .stale(let copy, _, let failures, "Connection refused") = c.state else { Issue.record("\(c.state)"); return }
        #expect(copy == first && failures == tries)
        #expect(tries >= 70 && tries <= 80, "a try every 8 s at most: \(tries)")
        #expect(c.degradation(source: "u", now: 661)?.hasPrefix("u: not refreshed for 660.0 s (Connection refused;") == true)
        // Back, unchanged: the same version, fresh again.
        while c.tick(at: t) != .download { t += 0.25 }
        c.downloaded(at: t)
        #expect(c.verified(at: t, changed: false) == RemoteCopy.Copy(version: 1, confirmed: t))
        #expect(c.degradation(source: "u", now: t) == nil)
    }

    @Test func aChangedFileIsANewVersion() {
        var c = RemoteCopy(policy: policy)
        _ = c.tick(at: 0)
        c.downloaded(at: 0)
        c.verified(at: 0, changed: true)
        #expect(c.tick(at: 60) == .download)
        c.downloaded(at: 61)
        #expect(c.state == .verifying(since: 61, copy: RemoteCopy.Copy(version: 1, confirmed: 0)))
        #expect(c.verified(at: 61, changed: true).version == 2)
        // A corrupt new version fails its check: the old one plays on, stale.
        #expect(c.tick(at: 121) == .download)
        c.downloaded(at: 121)
        c.failed(at: 121, reason: "no decodable frame")
        #expect(c.state == .stale(RemoteCopy.Copy(version: 2, confirmed: 61), retryAt: 122, failures: 1, reason: "no decodable frame"))
    }

    @Test func aCopyLeftByAnEarlierRunPlaysAndIsCheckedAtOnce() {
        var c = RemoteCopy(policy: policy)
        c.adopt(at: 5)
        #expect(c.copy?.version == 1)
        #expect(c.tick(at: 5) == .download)
    }
}

extension RemoteCopyTests {
    @Test func dueSaysSinceWhenAndWhetherACopyPlays() {
        var c = RemoteCopy(policy: policy)
        #expect(c.due(at: 0)?.hasCopy == false)
        _ = c.tick(at: 0)
        #expect(c.due(at: 100) == nil, "not while downloading")
        c.downloaded(at: 1)
        c.verified(at: 1, changed: true)
        #expect(c.due(at: 60) == nil)
        #expect(c.due(at: 70)! == (since: 61, hasCopy: true))
    }
}

extension RemoteCopyTests {
    @Test func anEvictedCopyWaitsARefreshBeforeItsNextDownload() {
        var c = RemoteCopy(policy: policy)
        _ = c.tick(at: 0)
        c.downloaded(at: 0)
        c.verified(at: 0, changed: true)
        c.evicted(at: 10, reason: "evicted")
        #expect(c.copy == nil)
        #expect(c.tick(at: 69.9) == .none)
        #expect(c.tick(at: 70) == .download)
    }

    @Test func aCopyTheServerSaysIsCurrentIsConfirmedWithoutACheck() {
        var c = RemoteCopy(policy: policy)
        _ = c.tick(at: 0)
        c.notModified(at: 0.5)
        #expect(c.state == .downloading(since: 0, copy: nil), "no copy yet: a 304 confirms nothing")
        c.downloaded(at: 1)
        let first = c.verified(at: 2, changed: true)
        #expect(c.tick(at: 62) == .download)
        c.notModified(at: 62.1)
        #expect(c.state == .ready(RemoteCopy.Copy(version: first.version, confirmed: 62.1), checkAt: 122.1))
    }
}
