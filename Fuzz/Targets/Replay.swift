import Foundation

/// The entry point of a fuzz executable in a normal build (without `--sanitize=fuzzer`, where
/// libFuzzer's own `main` runs instead): runs `body` on every file named on the command line, and
/// on every file in each folder named, then exits 0. A crash ends the process as it would under
/// the fuzzer, so a corpus or a crash file can be replayed in the debugger. Does not return.
public func replayInputs(_ arguments: [String], through body: ([UInt8]) -> Void) {
    guard !arguments.isEmpty else {
        FileHandle.standardError.write(Data("usage: \(CommandLine.arguments.first ?? "fuzz") FILE|FOLDER...\n".utf8))
        exit(2)
    }
    var count = 0
    for file in inputFiles(arguments) {
        guard let data = FileManager.default.contents(atPath: file) else {
            FileHandle.standardError.write(Data("cannot read \(file)\n".utf8))
            exit(1)
        }
        body(Array(data))
        count += 1
    }
    print("\(count) inputs run")
    exit(0)
}

/// The files `paths` name: each file itself, each folder's regular files in name order.
public func inputFiles(_ paths: [String]) -> [String] {
    paths.flatMap { path -> [String] in
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), isFolder.boolValue else { return [path] }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        return names.sorted().map { path + "/" + $0 }.filter { !$0.hasSuffix("/.gitkeep") }
    }
}

/// A folder of this process's own, made once and removed at exit: in memory (/dev/shm) where there
/// is one, since a file rewritten on a disk is flushed on close (ext4 does for a truncated file),
/// about 4 ms a run.
func scratchFolder(_ name: String) -> String {
    let folder = scratchRoot() + "/" + name
    try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    atexit { try? FileManager.default.removeItem(atPath: scratchRoot()) }
    return folder
}

private func scratchRoot() -> String {
    (access("/dev/shm", W_OK) == 0 ? "/dev/shm" : NSTemporaryDirectory()) + "/marquee-fuzz-\(getpid())"
}
