#!/bin/sh
# The systemd root file system of the QEMU guests (scripts/qemu-guest), built into DIR by
# mmdebstrap: Debian minbase plus what a login session on a real machine has (systemd as PID 1,
# logind through libpam-systemd, dbus, udev so the serial console appears without a 90 s wait),
# and what faultscale's LKP program needs on a test box (ruby for its summary, xz-utils for the
# kept JSON: its pkg/depends).
# The guest boots it as its initramfs, so it needs no disk driver; the kernel's own modules
# (virtio, 9p) are appended per kernel by the runner. scripts/qemu-guest keys its cache on this
# file's checksum: any change here rebuilds the image.
#
# usage: scripts/guest/rootfs.sh DIR [MIRROR]
set -eu
dir=$1
mirror=${2:-http://deb.debian.org/debian}
mmdebstrap --quiet --variant=minbase \
    --include=systemd,systemd-sysv,dbus,libpam-systemd,udev,procps,kmod,ruby,xz-utils \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    bookworm "$dir" "$mirror"

echo faultscale-guest > "$dir/etc/hostname"
# pam_env reads it at every login; without it each su -l logs a warning.
: > "$dir/etc/default/locale"
# The kernel starts /init from an initramfs: systemd, which boots the image as a normal root
# (no /etc/initrd-release), multi-user.target.
ln -sf /lib/systemd/systemd "$dir/init"
ln -sf /lib/systemd/system/multi-user.target "$dir/etc/systemd/system/default.target"
# Nothing periodic may start in the middle of a measurement, and no login prompt is needed.
for unit in apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer e2scrub_all.timer \
    fstrim.timer systemd-tmpfiles-clean.timer serial-getty@ttyS0.service getty@tty1.service; do
    ln -sf /dev/null "$dir/etc/systemd/system/$unit"
done

# The job: mount the runner's two 9p shares (in: read-only, the binary and scripts; out: the
# results), run in/job.sh, keep its output and exit code in out, and power the guest off
# whatever happens (the unit's Success/FailureAction).
cat > "$dir/usr/local/sbin/guest-job" <<'JOB'
#!/bin/sh
modprobe -a virtio_pci 9pnet_virtio 9p
mkdir -p /mnt/in /mnt/out
mount -t 9p -o trans=virtio,version=9p2000.L,ro in /mnt/in || exit 90
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 out /mnt/out || exit 91
cd /mnt/out
FS_IN=/mnt/in FS_OUT=/mnt/out sh /mnt/in/job.sh > /mnt/out/job.log 2>&1
echo $? > /mnt/out/job.rc
sync
exit 0
JOB
chmod 755 "$dir/usr/local/sbin/guest-job"
cat > "$dir/etc/systemd/system/guest-job.service" <<'UNIT'
[Unit]
Description=faultscale guest job
After=multi-user.target systemd-logind.service systemd-user-sessions.service
SuccessAction=poweroff-force
FailureAction=poweroff-force

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/guest-job
StandardOutput=journal+console
StandardError=journal+console

[Install]
WantedBy=multi-user.target
UNIT
mkdir -p "$dir/etc/systemd/system/multi-user.target.wants"
ln -sf ../guest-job.service "$dir/etc/systemd/system/multi-user.target.wants/guest-job.service"
