extension Player {
    /// Every change of status, rate, currentItem and timeControlStatus from now on, handed to
    /// `body` in order on a thread of its own named `threadName` (`changes()` is the async form).
    /// The thread ends with the player.
    public func consumeChanges(onThread threadName: String, _ body: @escaping @Sendable (Change) -> Void) {
        changeBroadcast.consume(threadName: threadName, body)
    }

    /// Every item's notifications from now on, handed to `body` in order on a thread of its own
    /// named `threadName` (`events()` is the async form). The thread ends with the player.
    public func consumeEvents(onThread threadName: String, _ body: @escaping @Sendable (Event) -> Void) {
        eventBroadcast.consume(threadName: threadName, body)
    }
}
