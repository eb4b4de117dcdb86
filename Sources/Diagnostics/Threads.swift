import Foundation

/// Starts a thread named `name` that runs `body`: the one way Marquee's code starts a thread.
///
/// The name is given to the operating system from inside the thread (written to
/// `/proc/thread-self/comm`, as `pthread_setname_np` does; at most 15 bytes: longer names are cut), so it shows in `top -H`, `ps -L`, gdb and
/// `/proc/<pid>/task/<tid>/comm`. Foundation's `Thread.name` alone does not reach the kernel here.
@discardableResult
public func startThread(named name: String, stackSize: Int? = nil,
                        _ body: @escaping @Sendable () -> Void) -> Thread {
    let thread = Thread {
        nameThisThread(name)
        body()
    }
    thread.name = name
    if let stackSize { thread.stackSize = stackSize }
    thread.start()
    return thread
}

/// Names the calling thread for the operating system (15 bytes at most; cut on a character
/// boundary).
public func nameThisThread(_ name: String) {
    var bytes = 0
    var cut = ""
    for character in name {
        let size = character.utf8.count
        guard bytes + size <= 15 else { break }
        bytes += size
        cut.append(character)
    }
    // Glibc's pthread_setname_np is not visible to Swift here; it writes the same file.
    let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
    guard fd >= 0 else { return }  // no /proc: the name stays Foundation's only
    defer { close(fd) }
    _ = Array(cut.utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
}
