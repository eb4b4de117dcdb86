/// The one place where a callback becomes an `await`, for the async forms of the API
/// (`Asset.load`, `PlayerItem.seek(to:) async`, ...): `start` is given a function to call once with
/// the result, from any thread. Nothing in Marquee waits through this; threads wait with
/// `Monitor` and `Latch`.
func awaitCallback<Value: Sendable>(_ start: (@escaping @Sendable (Value) -> Void) -> Void) async -> Value {
    await withCheckedContinuation { continuation in
        start { continuation.resume(returning: $0) }
    }
}
