# Marquee: `make run` plays the demo loop, `make test` runs every test, `make check` the unit tests only.
# All install what they need.

SWIFT ?= swift
# Everything the project needs from Debian: the C libraries it links (DRM, GBM, EGL, GLES, FFmpeg, ALSA,
# FreeType for text overlays, with DejaVu Sans as their default font; liblo, libevdev and libgpiod for
# trigger inputs: OSC, keys, GPIO lines; libmicrohttpd with its GnuTLS for the HTTP API, libmosquitto
# for fleet control over MQTT, libcurl for network.cache's downloads),
# Mesa's software renderer for the headless output, and the ffmpeg command for test media.
DEBIAN_PACKAGES := pkg-config libdrm-dev libgbm-dev libegl-dev libgles-dev libegl-mesa0 libgl1-mesa-dri \
	libavformat-dev libavcodec-dev libavutil-dev libswscale-dev libswresample-dev libasound2-dev ffmpeg \
	libfreetype-dev fonts-dejavu-core liblo-dev libevdev-dev libgpiod-dev libmicrohttpd-dev libmosquitto-dev \
	libcurl4-openssl-dev
# `make bench` also needs the peers it compares with (mpv and GStreamer; Xvfb so that they render through EGL on
# llvmpipe) and Python's venv for matplotlib (from PyPI, into bench/.venv); its glass-to-glass section serves
# RTSP from GStreamer's server through its introspection bindings (bench/g2g.py). bench/vm-clock.sh reads each
# player's peak memory with GNU time.
BENCH_PACKAGES := mpv xvfb xauth python3 python3-venv gstreamer1.0-tools gstreamer1.0-plugins-good gstreamer1.0-plugins-bad gstreamer1.0-libav gstreamer1.0-gl \
	python3-gi gir1.2-gst-rtsp-server-1.0 time
# The KMS tests boot Debian's kernel under QEMU with a virtio-gpu display (deploy/vm/kms-run): QEMU,
# a static busybox for the guest's initramfs, netpbm for the screen captures, python3 for QMP;
# systemd, udev and kmod for deploy/vm/boot-test (systemd as PID 1, udev loading the GPU driver) and
# the unit test's systemd-analyze.
VM_PACKAGES := qemu-system-x86 busybox-static netpbm python3 systemd udev kmod
# `make soak` runs tools/soak.py (Python's standard library only) and makes its media with ffmpeg;
# `make live-soak` serves its RTSP source from GStreamer (bench/g2g.py: openh264enc, RTP, the RTSP server).
SOAK_PACKAGES := python3
LIVE_SOAK_PACKAGES := python3 python3-gi gir1.2-gst-rtsp-server-1.0 gstreamer1.0-plugins-good gstreamer1.0-plugins-bad
# `make test` also compares the control socket with mpv's (MPVClientTests: mpv itself, and
# python-mpv-jsonipc from PyPI in a venv the test makes under .build); it serves network sources on
# loopback: HTTP/HLS from Python, RTSP from GStreamer's server through its introspection bindings
# (tools/netfixture.py, tools/rtspfixture.py); the HTTP API's tests parse /metrics with Prometheus'
# Python client, make a TLS certificate with openssl, ask over TLS with curl, walk the web dashboard in
# headless Chromium driven by Selenium (tools/dashboard-browser-test.py), and run ten players on a
# Mosquitto broker (mosquitto_sub and mosquitto_pub watch and command them); gdb prints the stacks of
# a run that hangs (tools/test-watchdog.py).
TEST_PACKAGES := mpv python3 python3-venv python3-gi gir1.2-gst-rtsp-server-1.0 gstreamer1.0-plugins-base \
	gstreamer1.0-plugins-good python3-prometheus-client openssl curl chromium chromium-driver python3-selenium \
	mosquitto mosquitto-clients gdb
# `make deb` builds the Debian package from debian/ into .build/deb: debhelper, and help2man for the
# man pages (made from --help). `make deb-test` checks it with lintian and installs it into a fresh
# Debian 12 chroot that mmdebstrap makes (tools/deb-test).
DEB_PACKAGES := debhelper help2man dpkg-dev
DEB_TEST_PACKAGES := lintian mmdebstrap
DEB_DIR := .build/deb
# `make image` builds a bootable x86-64 disk image from Debian packages and the .deb
# (deploy/image/build-image: mmdebstrap, mkfs.ext4 -d, mkfs.vfat + mtools, sfdisk); `make image-test`
# boots it under QEMU and checks the playlist is on screen, `make power-cut-test` cuts its power.
IMAGE_PACKAGES := mmdebstrap e2fsprogs dosfstools mtools fdisk
IMAGE_DIR := .build/image
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)

.PHONY: all deps build release run check test hw-test vm-test bench soak live-soak vm clean deb deb-test image image-test power-cut-test fuzz-build fuzz fuzz-short sanitize

all: build

# Installs only what is missing, so repeated runs cost one dpkg-query.
deps:
	@missing=$$(for p in $(DEBIAN_PACKAGES); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "Installing Debian packages:" $$missing; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

build: deps
	$(SWIFT) build

# The Swift runtime and Foundation linked in, as the package ships them (debian/rules): about 15
# fewer libraries for the dynamic loader to map and search at each start.
release: deps
	$(SWIFT) build -c release --static-swift-stdlib

# ARGS passes options through, e.g. make run ARGS="--clock virtual --exit-after 10"
run: release
	.build/release/marquee $(ARGS)

# The VM the KMS tests run in: its packages, and the kernel + initramfs cached in .build/vm.
vm: DEBIAN_PACKAGES += $(VM_PACKAGES)
vm: deps
	deploy/vm/build-guest

# The fast inner loop (issue 27): builds the tests, then runs only the unit test targets: about 15 s
# after a build on a 2-core machine. A unit test starts no process (marquee, ffmpeg, mpv, qemu, python), reads
# no media made by ffmpeg, boots no VM and lets no real time pass on purpose (no sleep, no timeout
# meant to expire, no wall-clock rate): fakes (FakeBackend), virtual time and in-memory data. The
# rest, processes, media, the VM, the mpv comparison and real time, is in the integration targets
# (*IntegrationTests, ExamplesTests), which only `make test` runs. So `make check` needs no VM guest,
# mpv, PyPI venv or fuzzing. Package.swift lists the targets of each kind.
UNIT_TEST_TARGETS := PlaybackTests TriggersTests SoundTests MediaTests RenderTests KioskTests SystemCallsTests DisplayTests AudioTests NetworkTests RemoteTests
empty :=
space := $(empty) $(empty)
check: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build --filter '^($(subst $(space),|,$(UNIT_TEST_TARGETS)))\.'

# The suites that boot a QEMU guest run after the rest (kms-run already boots one guest at a time):
# a TCG guest takes a core, and guest and real-time tests starve each other otherwise (in CI the
# sound-against-picture guest, run beside the real-time tests, dropped 1.8% of its pictures and its
# sound stepped 10.7 ms; alone it drops none and stays within 1.2 ms).
# tools/test-watchdog.py turns a hang (10 minutes without output, 25 in a VM suite) into a failure
# that names the tests still running and prints every thread's stack (gdb): CI once sat silent past
# its 90 minutes in the middle of the suite.
VM_SUITES := AudioVMTests KMSVMTests
WATCHDOG := python3 tools/test-watchdog.py
test: DEBIAN_PACKAGES += $(VM_PACKAGES) $(TEST_PACKAGES)
test: vm
	$(SWIFT) build --build-tests
	$(WATCHDOG) --quiet 600 --limit 2400 -- $(SWIFT) test --skip-build --skip '\.($(subst $(space),|,$(VM_SUITES)))\b'
	for suite in $(VM_SUITES); do $(WATCHDOG) --quiet 1500 --limit 2700 -- $(SWIFT) test --skip-build --filter "\.$$suite\b" || exit 1; done
	$(MAKE) fuzz-short

# libFuzzer targets (Fuzz/): the JSON parser, the config reader, the control protocol, the M3U reader.
# libFuzzer ships with the Swift toolchain (-sanitize=fuzzer), so no package is needed. Built in
# release mode into .build/fuzz, one product at a time (the other executables are not fuzzer entry points).
FUZZ_PRODUCTS := FuzzJSON FuzzConfig FuzzControl FuzzM3U
FUZZ_SECONDS ?= 600
FUZZ_SHORT_SECONDS ?= 30
fuzz-build: deps
	for product in $(FUZZ_PRODUCTS); do \
		$(SWIFT) build -c release --sanitize=fuzzer --build-path .build/fuzz --product $$product || exit 1; done

# Each target for FUZZ_SECONDS (default 10 minutes), in turn; found inputs are kept in .build/fuzz/corpus.
fuzz: fuzz-build
	tools/fuzz $(FUZZ_SECONDS)

# What `make test` runs: each target for FUZZ_SHORT_SECONDS (30 s), after replaying its seeds.
fuzz-short: fuzz-build
	tools/fuzz $(FUZZ_SHORT_SECONDS)

# The test suite under AddressSanitizer, then ThreadSanitizer, each in a build folder of its own
# (the processes the tests start, marquee and the examples, are built the same way).
# SANITIZE_ARGS passes options to `swift test`, e.g. SANITIZE_ARGS="--skip KMSVMTests".
# Leak checking is off: LeakSanitizer cannot follow the pointer to a Swift object's weak-reference
# side table (kept shifted inside the object's reference count) nor objects held by async task frames
# when a process exits, so it reports those as leaks; memory growth is the soak's to measure.
# tools/tsan.supp: what ThreadSanitizer cannot see (Synchronization.Mutex's lock), with the reason.
SANITIZE_ARGS ?=
sanitize: deps
	$(SWIFT) build --build-tests --sanitize=address --build-path .build/asan
	ASAN_OPTIONS=detect_leaks=0 $(SWIFT) test --skip-build --sanitize=address --build-path .build/asan $(SANITIZE_ARGS)
	$(SWIFT) build --build-tests --sanitize=thread --build-path .build/tsan
	TSAN_OPTIONS="suppressions=$(CURDIR)/tools/tsan.supp" \
		$(SWIFT) test --skip-build --sanitize=thread --build-path .build/tsan $(SANITIZE_ARGS)

# Zero-copy hardware decode end to end (VAAPI or DRM decoder -> DMA-BUF -> EGL image), on a machine
# with a render node; elsewhere the test prints what is missing.
hw-test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build --filter 'ZeroCopyHardwareTests|DMABufMappingTests|HardwareDecodeTests'

# Boots a VM straight into the playlist through the installed unit under systemd (deploy/vm/boot-test,
# about a minute): the playlist on screen, READY, the watchdog, the time from kernel to first frame.
vm-test: DEBIAN_PACKAGES += $(VM_PACKAGES)
vm-test: vm
	$(SWIFT) build
	$(SUDO) env MARQUEE="$$($(SWIFT) build --show-bin-path)/marquee" deploy/vm/boot-test  # needs root, as apt does

# Benchmarks against ffmpeg and mpv (bench/bench.py): writes bench/results.json, bench/RESULTS.md and
# bench/frame-intervals.png. Takes a few minutes; media is generated once into bench/cache/.
bench: DEBIAN_PACKAGES += $(BENCH_PACKAGES)
# BEFORE=REV also measures REV's release build beside this one, alternated (bench/build-before.sh).
bench: release
	bench/run.sh "$$($(SWIFT) build -c release --show-bin-path)/marquee" \
		$(if $(BEFORE),--before "$$(bench/build-before.sh $(BEFORE))" --before-label "$(BEFORE)")

# Reliability (tools/soak.py, a few minutes): 10,000 item transitions of a mixed good/bad playlist
# with memory, fds and threads sampled, then hostile media, each between good clips; media is made
# at run time. Writes bench/soak-results.json; SOAK_ARGS passes options, e.g. SOAK_ARGS="--transitions 500".
soak: DEBIAN_PACKAGES += $(SOAK_PACKAGES)
soak: release
	nice -n 10 python3 tools/soak.py --marquee "$$($(SWIFT) build -c release --show-bin-path)/marquee" \
		--results bench/soak-results.json $(SOAK_ARGS)

# A live source for 30 minutes at real time (tools/soak.py --only live, half an hour): bench/g2g.py's
# RTSP source through a proxy that cuts it every 5 minutes; live-lag, the picture's true latency
# (screenshots), memory, fds and threads. Writes bench/live-soak-results.json (bench/RESULTS.md
# shows it); LIVE_SOAK_ARGS passes options, e.g. LIVE_SOAK_ARGS="--live-seconds 300".
live-soak: DEBIAN_PACKAGES += $(LIVE_SOAK_PACKAGES)
live-soak: release
	python3 tools/soak.py --marquee "$$($(SWIFT) build -c release --show-bin-path)/marquee" --only live \
		--live-source rtsp --results bench/live-soak-results.json $(LIVE_SOAK_ARGS)

# The package is built with the Swift runtime linked in (debian/rules), in .build/debian; the .deb,
# .buildinfo and .changes go to $(DEB_DIR), not to the folder above the repository.
deb: DEBIAN_PACKAGES += $(DEB_PACKAGES)
deb: deps
	@command -v $(SWIFT) >/dev/null || { echo "make deb: $(SWIFT) is not on PATH (the Swift toolchain)" >&2; exit 1; }
	mkdir -p $(DEB_DIR)
	rm -f $(DEB_DIR)/marquee*
	version=$$(dpkg-parsechangelog -S Version); arch=$$(dpkg-architecture -qDEB_HOST_ARCH); \
	SWIFT=$(SWIFT) DEB_DESTDIR=$(CURDIR)/$(DEB_DIR) dpkg-buildpackage -b -uc -us \
		--buildinfo-option=-u$(DEB_DIR) --changes-option=-u$(DEB_DIR) \
		--buildinfo-file=$(DEB_DIR)/marquee_$${version}_$${arch}.buildinfo \
		--changes-file=$(DEB_DIR)/marquee_$${version}_$${arch}.changes
	@ls -l $(DEB_DIR)/*.deb

# A few minutes (the chroot is made from the mirror each time), so not part of `make test`. Exit
# status 77 from tools/deb-test is a skip (not root, no mmdebstrap); it says why.
deb-test: DEBIAN_PACKAGES += $(DEB_TEST_PACKAGES)
deb-test: deb
	$(SUDO) tools/deb-test $(DEB_DIR) || [ $$? -eq 77 ]

# A few minutes (packages from the mirror, cached in $(IMAGE_DIR)/apt-cache); needs root.
image: DEBIAN_PACKAGES += $(DEB_PACKAGES) $(IMAGE_PACKAGES)
image: deb
	@start=$$(date +%s); \
	$(SUDO) env IMAGE_DIR=$(CURDIR)/$(IMAGE_DIR) deploy/image/build-image $$(ls -t $(DEB_DIR)/marquee_*.deb | head -n 1) && \
	echo "make image: $(IMAGE_DIR)/marquee.img, $$(du -m --apparent-size $(IMAGE_DIR)/marquee.img | cut -f1) MiB" \
		"($$(du -m $(IMAGE_DIR)/marquee.img | cut -f1) MiB allocated), image built in $$(( $$(date +%s) - start )) s"

# Boots the image built by `make image` (not rebuilt here) under QEMU TCG twice, its kernel booted
# directly, then by UEFI firmware (OVMF) and the image's boot loader: about 2 minutes.
image-test: DEBIAN_PACKAGES += $(VM_PACKAGES) $(IMAGE_PACKAGES) ovmf
image-test: deps
	$(SUDO) env IMAGE_BOOT=kernel deploy/image/image-test $(IMAGE_DIR)
	$(SUDO) env IMAGE_BOOT=efi deploy/image/image-test $(IMAGE_DIR)

# 20 power cuts (POWER_CUTS=N for another count) of the image while it plays and imports media.
POWER_CUTS ?= 20
power-cut-test: DEBIAN_PACKAGES += $(VM_PACKAGES) $(IMAGE_PACKAGES)
power-cut-test: deps
	$(SUDO) deploy/image/power-cut-test $(IMAGE_DIR) $(POWER_CUTS)

clean:
	rm -rf .build
