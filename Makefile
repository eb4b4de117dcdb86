# Marquee: `make run` plays the demo loop, `make test` runs every test. Both install what they need.

SWIFT ?= swift
# Everything the project needs from Debian: the C libraries it links (DRM, GBM, EGL, GLES, FFmpeg),
# Mesa's software renderer for the headless output, and the ffmpeg command for test media.
DEBIAN_PACKAGES := pkg-config libdrm-dev libgbm-dev libegl-dev libgles-dev libegl-mesa0 libgl1-mesa-dri \
	libavformat-dev libavcodec-dev libavutil-dev libswscale-dev ffmpeg
# `make bench` also needs the peers it compares with (mpv; Xvfb so that mpv renders through EGL on
# llvmpipe) and Python's venv for matplotlib (from PyPI, into bench/.venv).
BENCH_PACKAGES := mpv xvfb xauth python3 python3-venv
# The KMS tests boot Debian's kernel under QEMU with a virtio-gpu display (deploy/vm/kms-run): QEMU,
# a static busybox for the guest's initramfs, netpbm for the screen captures, python3 for QMP;
# systemd, udev and kmod for deploy/vm/boot-test (systemd as PID 1, udev loading the GPU driver) and
# the unit test's systemd-analyze.
VM_PACKAGES := qemu-system-x86 busybox-static netpbm python3 systemd udev kmod
# `make soak` runs tools/soak.py (Python's standard library only) and makes its media with ffmpeg.
SOAK_PACKAGES := python3
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)

.PHONY: all deps build release run test hw-test vm-test bench soak vm clean

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

release: deps
	$(SWIFT) build -c release

# ARGS passes options through, e.g. make run ARGS="--clock virtual --exit-after 10"
run: release
	.build/release/marquee $(ARGS)

# The VM the KMS tests run in: its packages, and the kernel + initramfs cached in .build/vm.
vm: DEBIAN_PACKAGES += $(VM_PACKAGES)
vm: deps
	deploy/vm/build-guest

test: DEBIAN_PACKAGES += $(VM_PACKAGES)
test: vm
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

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
bench: release
	bench/run.sh "$$($(SWIFT) build -c release --show-bin-path)/marquee"

# Reliability (tools/soak.py, a few minutes): 10,000 item transitions of a mixed good/bad playlist
# with memory, fds and threads sampled, then hostile media, each between good clips; media is made
# at run time. Writes bench/soak-results.json; SOAK_ARGS passes options, e.g. SOAK_ARGS="--transitions 500".
soak: DEBIAN_PACKAGES += $(SOAK_PACKAGES)
soak: release
	nice -n 10 python3 tools/soak.py --marquee "$$($(SWIFT) build -c release --show-bin-path)/marquee" \
		--results bench/soak-results.json $(SOAK_ARGS)

clean:
	rm -rf .build
