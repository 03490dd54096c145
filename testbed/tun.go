package testbed

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// MTU of every emulated interface. A TUN device without IFF_VNET_HDR gets no
// GSO/TSO, so each packet the emulator shapes is one wire-sized packet.
const MTU = 1500

// bufSize holds any packet of an MTU-sized device.
const bufSize = 2048

// openTUN creates the TUN device name (IP packets, no packet-info header) in
// the calling thread's namespace and returns its non-blocking fd. The device
// lives as long as the fd.
func openTUN(name string) (int, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return -1, fmt.Errorf("open /dev/net/tun: %w", err)
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("tun device name %q: %w", name, err)
	}
	ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("TUNSETIFF %q: %w", name, err)
	}
	return fd, nil
}
