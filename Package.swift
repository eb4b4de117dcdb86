// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Marquee",
    products: [
        .executable(name: "marquee", targets: ["marquee"]),
        .executable(name: "marqueectl", targets: ["marqueectl"]),
        // The libraries an app depends on (docs/library.md). Public API, kept compatible: Playback
        // (the AVFoundation-style model), Media (FFmpeg: `Asset(url:)`), Display (`PlayerView`;
        // `import Display` brings Playback and Media), Render (GL drawing of a player), Sound (a
        // player's sound path) and Audio (ALSA). Playback brings Timing and Diagnostics. Control, the control socket's client, is public but unsupported: it changes with
        // marquee. Kiosk (the marquee app itself), SystemCalls and the C modules are internal: no
        // product. No unsafe pointer crosses a product's public API (`package` access where one
        // module hands raw buffers to another).
        .library(name: "Playback", targets: ["Playback"]),
        .library(name: "Media", targets: ["Media"]),
        .library(name: "Display", targets: ["Display"]),
        .library(name: "Render", targets: ["Render"]),
        .library(name: "Sound", targets: ["Sound"]),
        .library(name: "Audio", targets: ["Audio"]),
        .library(name: "Control", targets: ["Control"]),
    ],
    targets: [
        // C system libraries (headers and link flags only).
        .systemLibrary(name: "CFFmpeg", path: "Sources/CFFmpeg", pkgConfig: "libavformat",
                       providers: [.apt(["libavformat-dev", "libavcodec-dev", "libavutil-dev", "libswscale-dev", "libswresample-dev"])]),
        .systemLibrary(name: "CEGL", path: "Sources/CEGL", pkgConfig: "egl", providers: [.apt(["libegl-dev"])]),
        .systemLibrary(name: "CGLES", path: "Sources/CGLES", pkgConfig: "glesv2", providers: [.apt(["libgles-dev"])]),
        .systemLibrary(name: "CDRM", path: "Sources/CDRM", pkgConfig: "libdrm", providers: [.apt(["libdrm-dev"])]),
        .systemLibrary(name: "CGBM", path: "Sources/CGBM", pkgConfig: "gbm", providers: [.apt(["libgbm-dev"])]),
        .systemLibrary(name: "CFreeType", path: "Sources/CFreeType", pkgConfig: "freetype2", providers: [.apt(["libfreetype-dev"])]),
        .systemLibrary(name: "CALSA", path: "Sources/CALSA", pkgConfig: "alsa", providers: [.apt(["libasound2-dev"])]),
        .systemLibrary(name: "CLiblo", path: "Sources/CLiblo", pkgConfig: "liblo", providers: [.apt(["liblo-dev"])]),
        .systemLibrary(name: "CEvdev", path: "Sources/CEvdev", pkgConfig: "libevdev", providers: [.apt(["libevdev-dev"])]),
        .systemLibrary(name: "CGpiod", path: "Sources/CGpiod", pkgConfig: "libgpiod", providers: [.apt(["libgpiod-dev"])]),
        .systemLibrary(name: "CMosquitto", path: "Sources/CMosquitto", pkgConfig: "libmosquitto", providers: [.apt(["libmosquitto-dev"])]),
        .systemLibrary(name: "CCurl", path: "Sources/CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", path: "Sources/CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),
        // The one C shim: what Swift cannot import (function-like and struct-valued macros).
        .target(name: "CShim", dependencies: ["CFFmpeg"], path: "Sources/CShim"),

        // Time and checked values: MediaTime, rates, vsync clocks, the cadence, wall time, the calendar.
        .target(name: "Timing"),
        // Owned file descriptors, system calls that throw errors naming the call and errno, and
        // journald's socket.
        .target(name: "SystemCalls"),
        // The logger, the trace, threads, pools and waits with timeouts.
        .target(name: "Diagnostics", dependencies: ["Timing", "SystemCalls"]),
        // The playback model (assets, items, players, looper, observers, the presentation loop) and
        // the protocols the C-backed modules implement.
        .target(name: "Playback", dependencies: ["Timing", "Diagnostics"]),
        // The player's sound path: its decode thread, the writer that keeps sound on the picture's
        // timeline, the clock sync, and the sink protocol devices implement.
        .target(name: "Sound", dependencies: ["Playback"]),
        // Network sources' rules: the allow-list (URLs, addresses, blocks, DNS answers) and a live
        // source's health (stalls, reopening with backoff); pure Swift.
        .target(name: "Network"),
        .target(name: "Media", dependencies: ["Playback", "Sound", "CFFmpeg", "CShim", "CCurl", "SystemCalls", "Network"]),
        .target(name: "Render", dependencies: ["Playback", "Media", "CEGL", "CGLES", "CGBM", "CFreeType"]),
        // ALSA devices (alsa-lib) as Sound's sink: one PCM device, its latency, underrun recovery.
        .target(name: "Audio", dependencies: ["Playback", "Sound", "CALSA"]),
        .target(name: "Display", dependencies: ["Playback", "Render", "CDRM", "SystemCalls"]),
        // The control socket's protocol and client: JSON, the socket path, a blocking client (no C libraries).
        .target(name: "Control", dependencies: ["Playback", "SystemCalls"]),
        // Triggers: debounced, rate-limited presses through a state machine, and the prerolled
        // targets they cut into the player (no C).
        .target(name: "Triggers", dependencies: ["Playback"]),
        // Inputs for triggers: OSC over UDP (liblo), keys (libevdev), GPIO lines (libgpiod).
        .target(name: "Inputs", dependencies: ["Playback", "SystemCalls", "CLiblo", "CEvdev", "CGpiod"]),
        // An HTTP(S) server on libmicrohttpd (its GnuTLS), with SHA-256: no C names outside.
        .target(name: "HTTPServer", dependencies: ["CMicroHTTPD", "SystemCalls", "Diagnostics"]),
        .target(name: "Kiosk", dependencies: ["HTTPServer", "Triggers", "Inputs", "Control", "Playback", "Media", "Network", "Render", "Display", "SystemCalls", "Sound", "Audio"]),
        // The HTTP API over the kiosk (issue 30): tokens and roles, Host/Origin checks, REST mirroring the
        // control socket, metrics, uploads, events.
        .target(name: "Remote", dependencies: ["Kiosk", "HTTPServer", "Control", "Playback", "SystemCalls"]),
        // Fleet control over MQTT (libmosquitto): status and health published, commands taken by id, group or all.
        .target(name: "Fleet", dependencies: ["Kiosk", "CMosquitto", "Control", "Playback"]),
        .executableTarget(name: "marquee", dependencies: ["Kiosk", "Remote", "Fleet", "Playback", "Media", "Display"]),
        .executableTarget(name: "marqueectl", dependencies: ["Control", "Playback"]),
        // Upload + draw time per 1080p frame for each pixel format (run by `make bench`).
        .executableTarget(name: "layerbench", dependencies: ["Display", "Render", "Media", "Playback"], path: "bench/layerbench"),
        // The examples of issue 3: AV Foundation Programming Guide playback with this API (run by ExamplesTests).
        .executableTarget(name: "PlayFileExample", dependencies: ["Playback", "Media", "Display"], path: "Examples/PlayFile"),
        .executableTarget(name: "QueuePlayerExample", dependencies: ["Playback", "Media", "Display"], path: "Examples/QueuePlayer"),

        // libFuzzer targets (`make fuzz`, Fuzz/README.md): the harnesses, and one executable each whose
        // entry point is LLVMFuzzerTestOneInput under `--sanitize=fuzzer` (a corpus replayer otherwise).
        .target(name: "FuzzTargets", dependencies: ["Kiosk", "Playback", "Render"], path: "Fuzz/Targets"),
        .executableTarget(name: "FuzzJSON", dependencies: ["FuzzTargets"], path: "Fuzz/JSON"),
        .executableTarget(name: "FuzzConfig", dependencies: ["FuzzTargets"], path: "Fuzz/Config"),
        .executableTarget(name: "FuzzControl", dependencies: ["FuzzTargets"], path: "Fuzz/Control"),
        .executableTarget(name: "FuzzM3U", dependencies: ["FuzzTargets"], path: "Fuzz/M3U"),

        // Test helpers: media made with the ffmpeg command at test time, configs checked by the schema
        // and `marquee --check-config`, processes run to their end.
        .target(name: "TestSupport", dependencies: ["SystemCalls"], path: "Tests/Support"),
        // The Playback tests' scripted backend and hand-driven display (FakeBackend, VirtualDisplay).
        .target(name: "PlaybackTestSupport", dependencies: ["Playback"], path: "Tests/PlaybackSupport"),

        // Unit tests (`make check`): no child process (marquee, ffmpeg, mpv, qemu, python), no media
        // made by ffmpeg, no VM, and no real time let pass on purpose (a sleep, a timeout meant to
        // expire, a wall-clock rate): they wait only for other threads' work, which ends as soon as it
        // is done. Fakes, virtual time and in-memory data instead.
        .testTarget(name: "PlaybackTests", dependencies: ["Playback", "PlaybackTestSupport", "TestSupport"]),
        .testTarget(name: "TriggersTests", dependencies: ["Triggers", "Inputs", "Playback", "PlaybackTestSupport"]),
        .testTarget(name: "SoundTests", dependencies: ["Sound", "Playback"]),
        .testTarget(name: "MediaTests", dependencies: ["Media", "Sound", "Playback", "TestSupport"]),
        .testTarget(name: "RenderTests", dependencies: ["Render", "Display", "Media", "Playback", "TestSupport"]),
        .testTarget(name: "KioskTests", dependencies: ["Kiosk", "Sound", "Display", "Media", "Playback", "PlaybackTestSupport", "TestSupport", "FuzzTargets"]),
        .testTarget(name: "SystemCallsTests", dependencies: ["SystemCalls"]),
        .testTarget(name: "NetworkTests", dependencies: ["Network"]),
        .testTarget(name: "DisplayTests", dependencies: ["Display", "Media", "Playback", "Render", "TestSupport"]),
        .testTarget(name: "AudioTests", dependencies: ["Audio", "Sound", "Media", "Playback", "TestSupport"]),
        .testTarget(name: "RemoteTests", dependencies: ["Remote", "HTTPServer", "Kiosk", "Playback", "TestSupport"]),

        // Integration tests (`make test` runs them with the unit tests): processes, ffmpeg-made media,
        // the VM, peer comparisons (mpv), real time.
        .testTarget(name: "PlaybackIntegrationTests", dependencies: ["PlaybackTests", "Playback", "PlaybackTestSupport", "TestSupport"]),
        .testTarget(name: "MediaIntegrationTests", dependencies: ["MediaTests", "Media", "Sound", "Playback", "TestSupport"]),
        .testTarget(name: "RenderIntegrationTests", dependencies: ["RenderTests", "Render", "Display", "Media", "Playback", "TestSupport"]),
        .testTarget(name: "KioskIntegrationTests", dependencies: ["KioskTests", "Kiosk", "Sound", "Display", "Media", "Playback", "TestSupport", "FuzzTargets"]),
        .testTarget(name: "SystemCallsIntegrationTests", dependencies: ["SystemCallsTests", "SystemCalls"]),
        .testTarget(name: "DisplayIntegrationTests", dependencies: ["DisplayTests", "Display", "Media", "Playback", "Render", "TestSupport"]),
        .testTarget(name: "AudioIntegrationTests", dependencies: ["AudioTests", "Audio", "Sound", "Media", "Playback", "TestSupport"]),
        .testTarget(name: "TriggersIntegrationTests", dependencies: ["TriggersTests", "Triggers", "Inputs", "Playback", "PlaybackTestSupport"]),
        .testTarget(name: "RemoteIntegrationTests", dependencies: ["RemoteTests", "Remote", "HTTPServer", "Kiosk", "Playback", "TestSupport"]),
        .testTarget(name: "FleetIntegrationTests", dependencies: ["RemoteTests", "Fleet", "Kiosk", "Playback", "TestSupport"]),
        .testTarget(name: "ExamplesTests", dependencies: ["TestSupport"]),
    ]
)
