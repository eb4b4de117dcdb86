import CShim
import Foundation

/// Caps glibc's malloc arenas for the rest of the process, unless `MALLOC_ARENA_MAX` in the
/// environment already says how many. glibc gives new threads arenas of their own (up to eight per
/// core) and keeps the memory freed in each resident; as each item's decoder threads come and go,
/// resident memory then wanders by several MB and creeps up over thousands of items with no leak
/// behind it. Call it before the process starts its threads. Returns the cap now in force (nil:
/// the environment's, or glibc refused).
@discardableResult
public func limitMallocArenas(to count: Int32) -> Int32? {
    guard count > 0, ProcessInfo.processInfo.environment["MALLOC_ARENA_MAX"] == nil else { return nil }
    return mq_limit_malloc_arenas(count) == 1 ? count : nil
}
