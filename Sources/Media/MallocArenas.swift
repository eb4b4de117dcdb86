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

/// Blocks of at least `bytes` (picture planes, RGBA frames: a 1080p luma plane is 2 MB, a chroma
/// plane 0.5 MB) are mapped on their own from now on, and so go back to the system as soon as
/// they are freed, unless `MALLOC_MMAP_THRESHOLD_` in the environment says otherwise. By default
/// glibc raises this threshold to the size of each such block freed (up to 32 MB): the next
/// item's frames then come from the heap, where the memory freed with a decoder stays resident.
/// Returns the threshold now in force (nil: the environment's, or glibc refused).
@discardableResult
public func mapLargeBlocks(from bytes: Int32 = 512 << 10) -> Int32? {
    guard bytes > 0, ProcessInfo.processInfo.environment["MALLOC_MMAP_THRESHOLD_"] == nil else { return nil }
    return mq_malloc_mmap_threshold(bytes) == 1 ? bytes : nil
}

/// Gives the memory malloc holds free back to the system (`malloc_trim`): called when a decoder
/// goes, whose contexts and tables leave free pages in the arenas its threads used.
func releaseFreedMemory() {
    _ = mq_malloc_trim()
}
