# Marquee: `make run` plays the demo loop, `make test` runs every test. Both install what they need.

SWIFT ?= swift
# Everything the project needs from Debian: the C libraries it links (DRM, GBM, EGL, GLES, FFmpeg),
# Mesa's software renderer for the headless output, and the ffmpeg command for test media.
DEBIAN_PACKAGES := pkg-config libdrm-dev libgbm-dev libegl-dev libgles-dev libegl-mesa0 libgl1-mesa-dri \
	libavformat-dev libavcodec-dev libavutil-dev libswscale-dev ffmpeg
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)

.PHONY: all deps build release run test clean

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

test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

clean:
	rm -rf .build
