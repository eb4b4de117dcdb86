# Sourced by image-test and power-cut-test: boots a copy of the image under QEMU (TCG, virtio-gpu,
# virtio-blk, direct kernel boot with the image's own kernel and initramfs) and looks at it from outside.
# Needs: image_dir (build-image's output), run (a scratch folder), vm_dir (deploy/vm).

image_need() {
    for tool in qemu-system-x86_64 python3 ffmpeg e2fsck debugfs dumpe2fs fsck.vfat mcopy mdeltree mtype; do
        command -v $tool >/dev/null || { echo "$0: $tool is missing (make image-test installs the VM and image packages)" >&2; exit 125; }
    done
    for file in marquee.img vmlinuz initrd.img cmdline partitions; do
        [ -f "$image_dir/$file" ] || { echo "$0: no $image_dir/$file: run make image first" >&2; exit 2; }
    done
}

# part NAME: "START_MIB SIZE_MIB" of a partition (build-image's partitions file).
part() { awk -v n="$1" '$1 == n {print $2, $3}' "$image_dir/partitions"; }
part_offset() { echo $(( $(part "$1" | cut -d' ' -f1) * 1048576 )); }
part_bytes() { echo $(( $(part "$1" | cut -d' ' -f2) * 1048576 )); }

# The quadrant clips the tests play: NAME PATTERN SECONDS NOISE [QUADRANT]. NOISE > 0 adds temporal
# noise of that strength, which makes the file large (x264 lossless), so that copying it takes a while.
make_clip() {
    local out=$1 pattern=$2 seconds=$3 noise=$4 size=${5:-320x240} inputs=() colour letter filter
    [ -f "$out" ] && return 0
    for letter in $(echo "$pattern" | fold -w1); do
        case $letter in r) colour=red;; g) colour=0x00ff00;; b) colour=blue;; w) colour=white;; k) colour=black;; esac
        inputs+=(-f lavfi -i "color=c=$colour:size=$size:rate=10")
    done
    filter="[0][1][2][3]xstack=inputs=4:layout=0_0|w0_0|0_h0|w0_h0"
    [ "$noise" -gt 0 ] && filter="$filter,noise=alls=$noise:allf=t"
    ffmpeg -nostdin -loglevel error -y "${inputs[@]}" -filter_complex "$filter,format=yuv420p" \
        -t "$seconds" -c:v libx264 -qp 0 -preset ultrafast -pix_fmt yuv420p -f mp4 "$out.part"
    mv "$out.part" "$out"
}

# put_content DISK FOLDER: the content partition of DISK holds FOLDER's config.json and media/ (as an
# operator's laptop would write them).
put_content() {
    local img="$1@@$(part_offset content)"
    mdeltree -i "$img" ::/media 2>/dev/null || true
    mdel -i "$img" ::/config.json 2>/dev/null || true
    mcopy -i "$img" -s "$2/config.json" "$2/media" ::/
}

# boot DISK: starts QEMU on DISK in the background ($qemu is its PID); the guest's journal is forwarded
# to its serial console ($run/serial.log) with the kernel's timestamps. IMAGE_BOOT=kernel (default)
# boots the image's kernel and initramfs directly; IMAGE_BOOT=efi boots the disk through UEFI firmware
# (OVMF) and the image's own boot loader, with the same command line (set_efi_cmdline). One virtual
# CPU unless IMAGE_VM_SMP says otherwise: with two, under TCG on a loaded host, boots showed soft
# lockups in modprobe and once hung (likely one vCPU spinning in the guest kernel for the other, whose
# host thread waited for a CPU: module loading patches code on every CPU); one vCPU has no one to wait for.
boot() {
    local smp=${IMAGE_VM_SMP:-1} start=()
    [[ $smp =~ ^[1-8]$ ]] || { echo "$0: IMAGE_VM_SMP must be 1 to 8, not $smp" >&2; exit 2; }
    case ${IMAGE_BOOT:-kernel} in
        kernel) start=(-kernel "$image_dir/vmlinuz" -initrd "$image_dir/initrd.img" -append "$(cat "$image_dir/cmdline") $test_cmdline");;
        efi) local firmware; firmware=$(ovmf) || exit 125; start=(-bios "$firmware"); set_efi_cmdline "$1";;
        *) echo "$0: IMAGE_BOOT is kernel or efi, not $IMAGE_BOOT" >&2; exit 2;;
    esac
    : > "$run/serial.log"
    rm -f "$run/qmp.sock"
    # -nodefaults: no NIC, CD-ROM or parallel port the image has no use for (fewer modules for udev to load).
    qemu-system-x86_64 -machine q35,accel=tcg -smp "$smp" -m 2048 -nodefaults "${start[@]}" \
        -no-reboot -display none -serial "file:$run/serial.log" -monitor none -device virtio-gpu-pci \
        -drive "file=$1,format=raw,if=virtio,cache=writeback" \
        -qmp "unix:$run/qmp.sock,server=on,wait=off" > "$run/qemu.log" 2>&1 &
    qemu=$!
    boot_started=$(date +%s.%N)
}
# What the tests add to the image's command line: the journal forwarded to the serial console.
test_cmdline="console=ttyS0 loglevel=4 consoleblank=0 systemd.show_status=0 systemd.journald.forward_to_console=1 systemd.journald.max_level_console=info"

ovmf() {
    local f
    for f in /usr/share/ovmf/OVMF.fd /usr/share/OVMF/OVMF.fd; do [ -f "$f" ] && { echo "$f"; return 0; }; done
    echo "$0: no OVMF firmware (the ovmf package) for IMAGE_BOOT=efi" >&2; exit 125
}

# set_efi_cmdline DISK: the boot loader entry on DISK's EFI partition boots with the tests' command
# line too (mtools, as on any FAT partition).
set_efi_cmdline() {
    local img="$1@@$(part_offset esp)" entry="$run/marquee.conf"
    mtype -i "$img" ::/loader/entries/marquee.conf > "$entry"
    grep -q "$test_cmdline" "$entry" || sed -i "s|^options .*|& $test_cmdline|" "$entry"
    mcopy -o -i "$img" "$entry" ::/loader/entries/marquee.conf
}

since_boot() { awk -v s="$boot_started" -v e="$(date +%s.%N)" 'BEGIN {printf "%.1f", e - s}'; }

# wait_serial REGEX SECONDS: waits until the serial log has a line matching REGEX; prints that line.
wait_serial() {
    local deadline=$(( $(date +%s) + $2 )) line
    while [ "$(date +%s)" -lt "$deadline" ] && kill -0 "$qemu" 2>/dev/null; do
        line=$(grep -a -m1 -E "$1" "$run/serial.log" || true)
        [ -n "$line" ] && { echo "$line"; return 0; }
        sleep 0.2
    done
    return 1
}

# serial_time LINE: the guest's seconds since kernel start that a forwarded journal line carries.
serial_time() { sed -nE 's/^.*\[ *([0-9]+\.[0-9]+)\].*$/\1/p' <<< "$1" | head -n 1; }

# wait_screen SECONDS TOLERANCE PATTERN...: screendumps until one shows a pattern; prints it.
wait_screen() {
    local seconds=$1 deadline n=0
    shift
    deadline=$(( $(date +%s) + seconds ))
    while [ "$(date +%s)" -lt "$deadline" ] && kill -0 "$qemu" 2>/dev/null; do
        n=$((n + 1))
        if "$vm_dir/qmp-screendump" "$run/qmp.sock" "$run/shot.ppm" 2>/dev/null && \
                "$here/screen-check" "$run/shot.ppm" "$@" 2>"$run/screen-check.log"; then
            return 0
        fi
        sleep 1
    done
    cat "$run/screen-check.log" >&2 || true
    return 1
}

# qmp COMMAND: one QMP command (no arguments).
qmp() {
    python3 - "$run/qmp.sock" "$1" <<'PY'
import json, socket, sys
with socket.socket(socket.AF_UNIX) as s:
    s.settimeout(10)
    s.connect(sys.argv[1])
    f = s.makefile("rw")
    f.readline()
    for c in ({"execute": "qmp_capabilities"}, {"execute": sys.argv[2]}):
        f.write(json.dumps(c) + "\n"); f.flush()
        while True:
            m = json.loads(f.readline())
            if "return" in m or "error" in m:
                break
PY
}

# fsck_partition DISK NAME: checks an ext4 partition of DISK by offset, read-only (e2fsck -fn), then a
# copy of it the way a boot would (journal replay, then e2fsck -fy): prints "clean", or what was
# repaired and returns 1. A journal that needs replaying is what ext4 leaves after a cut: not a repair.
fsck_partition() {
    local disk=$1 name=$2 copy="$run/fsck-$2.ext4" out
    out=$(e2fsck -fn "$disk?offset=$(part_offset "$name")" 2>&1) && { echo clean; return 0; }
    dd if="$disk" of="$copy" bs=1M skip="$(part "$name" | cut -d' ' -f1)" count="$(part "$name" | cut -d' ' -f2)" \
        conv=sparse status=none
    local status
    out=$(e2fsck -fy "$copy" 2>&1) && status=0 || status=$?
    rm -f "$copy"
    if [ $status -ge 2 ] || grep -q '? yes' <<< "$out"; then
        echo "repaired (e2fsck -fy status $status): $(grep '? yes' <<< "$out" | head -n 5 | tr '\n' ' ')"
        return 1
    fi
    echo "clean after journal replay"
}
