import FuzzTargets

// libFuzzer's entry point. With `--sanitize=fuzzer` this file is compiled as a library and
// libFuzzer's `main` drives it; in a normal build the global below replays the files named on the
// command line (`FuzzControl crash-... Fuzz/corpus/control`).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    fuzzControl(data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
    return 0
}

// Lazily initialised (never) when compiled as a library, run at start as a script.
let replayed: Void = replayInputs(Array(CommandLine.arguments.dropFirst()), through: fuzzControl)
