#!/bin/sh
# Installs Marquee as a service: the binary, the systemd unit, a config, the demo clip and a
# `marquee` user in the video and render groups. Run as root from the source tree after
# `make release` (or give the binary's folder as $1).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$here/.build/release}
prefix=${PREFIX:-/usr/local}

[ "$(id -u)" -eq 0 ] || { echo "install.sh: run as root" >&2; exit 1; }
[ -x "$bin/marquee" ] || { echo "install.sh: $bin/marquee not found; run make release first" >&2; exit 1; }

install -d "$prefix/bin" /etc/marquee /usr/share/marquee/demo /usr/share/doc/marquee
install -m 0755 "$bin/marquee" "$prefix/bin/marquee"
[ -x "$bin/marqueectl" ] && install -m 0755 "$bin/marqueectl" "$prefix/bin/marqueectl"
install -m 0644 "$here/configs/demo/demo.mp4" /usr/share/marquee/demo/demo.mp4
install -m 0644 "$here/README.md" "$here"/docs/*.md /usr/share/doc/marquee/
# Keep an existing config: it is the operator's.
if [ ! -f /etc/marquee/config.json ]; then
    install -m 0644 "$here/configs/single-screen.json" /etc/marquee/config.json
    sed -i 's#"uri": *"demo/demo.mp4"#"uri": "/usr/share/marquee/demo/demo.mp4"#' /etc/marquee/config.json
fi

getent group render >/dev/null || groupadd --system render
getent passwd marquee >/dev/null || useradd --system --home-dir /nonexistent --shell /usr/sbin/nologin \
    --user-group --groups video,render marquee

install -m 0644 "$here/deploy/marquee.service" /etc/systemd/system/marquee.service
if [ -d /run/systemd/system ]; then
    systemctl daemon-reload
    systemctl enable marquee.service
    echo "Installed. Start with: systemctl start marquee"
else
    echo "Installed (systemd is not running here; enable marquee.service on the target)."
fi
echo "Console blanking: add consoleblank=0 to the kernel command line so that the screen never sleeps."
