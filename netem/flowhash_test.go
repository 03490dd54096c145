package netem

import (
	"encoding/binary"
	"net/netip"
	"testing"
)

// ipv4 builds an IPv4 header plus the first bytes of a transport header.
func ipv4(src, dst string, proto byte, sport, dport uint16) []byte {
	b := make([]byte, 20, 40)
	b[0] = 0x45
	b[9] = proto
	s, d := netip.MustParseAddr(src).As4(), netip.MustParseAddr(dst).As4()
	copy(b[12:], s[:])
	copy(b[16:], d[:])
	b = binary.BigEndian.AppendUint16(b, sport)
	b = binary.BigEndian.AppendUint16(b, dport)
	return append(b, make([]byte, 16)...)
}

func ipv6(src, dst string, proto byte, ext []byte, sport, dport uint16) []byte {
	b := make([]byte, 40, 80)
	b[0] = 0x60
	b[6] = proto
	s, d := netip.MustParseAddr(src).As16(), netip.MustParseAddr(dst).As16()
	copy(b[8:], s[:])
	copy(b[24:], d[:])
	b = append(b, ext...)
	b = binary.BigEndian.AppendUint16(b, sport)
	b = binary.BigEndian.AppendUint16(b, dport)
	return append(b, make([]byte, 16)...)
}

func TestFlowHashDistinguishesFlows(t *testing.T) {
	base := ipv4("10.0.0.1", "10.0.0.2", protoTCP, 40000, 443)
	differ := map[string][]byte{
		"source port":   ipv4("10.0.0.1", "10.0.0.2", protoTCP, 40001, 443),
		"dest port":     ipv4("10.0.0.1", "10.0.0.2", protoTCP, 40000, 80),
		"protocol":      ipv4("10.0.0.1", "10.0.0.2", protoUDP, 40000, 443),
		"source":        ipv4("10.0.0.3", "10.0.0.2", protoTCP, 40000, 443),
		"destination":   ipv4("10.0.0.1", "10.0.0.4", protoTCP, 40000, 443),
		"reverse":       ipv4("10.0.0.2", "10.0.0.1", protoTCP, 443, 40000),
		"ipv6 same ish": ipv6("::ffff:10.0.0.1", "::ffff:10.0.0.2", protoTCP, nil, 40000, 443),
	}
	h := FlowHash(base)
	if h == 0 {
		t.Fatal("a TCP packet hashed to 0")
	}
	for name, b := range differ {
		if FlowHash(b) == h {
			t.Errorf("packets differing in %s hash alike", name)
		}
	}
	// The payload and the rest of the header do not matter.
	same := ipv4("10.0.0.1", "10.0.0.2", protoTCP, 40000, 443)
	same[8] = 3 // TTL
	same[len(same)-1] = 0xff
	if FlowHash(same) != h {
		t.Error("TTL or payload changed the flow hash")
	}
}

func TestFlowHashIPv6ExtensionHeaders(t *testing.T) {
	plain := ipv6("2001:db8::1", "2001:db8::2", protoUDP, nil, 5000, 53)
	// A hop-by-hop options header (8 bytes) before UDP.
	hbh := []byte{protoUDP, 0, 0, 0, 0, 0, 0, 0}
	withExt := ipv6("2001:db8::1", "2001:db8::2", protoHopOpts, hbh, 5000, 53)
	if FlowHash(plain) != FlowHash(withExt) {
		t.Error("a hop-by-hop header changed the flow hash")
	}
	other := ipv6("2001:db8::1", "2001:db8::2", protoHopOpts, hbh, 5001, 53)
	if FlowHash(other) == FlowHash(withExt) {
		t.Error("ports behind an extension header were not hashed")
	}
	// A non-first fragment carries no ports: it hashes as the bare addresses.
	frag := []byte{protoUDP, 0, 0x01, 0x00, 0, 0, 0, 1}
	a := ipv6("2001:db8::1", "2001:db8::2", protoFragment, frag, 1, 2)
	b := ipv6("2001:db8::1", "2001:db8::2", protoFragment, frag, 3, 4)
	if FlowHash(a) != FlowHash(b) {
		t.Error("a non-first fragment's payload was hashed as ports")
	}
}

func TestFlowHashTruncated(t *testing.T) {
	full := ipv4("10.0.0.1", "10.0.0.2", protoTCP, 40000, 443)
	for n := range len(full) {
		h := FlowHash(full[:n])
		if n < 20 && h != 0 {
			t.Errorf("%d bytes of header hashed to %x, want 0", n, h)
		}
	}
	if FlowHash(full[:22]) != FlowHash(full[:20]) {
		t.Error("half a port pair was hashed")
	}
	if FlowHash([]byte{0x45}) != 0 || FlowHash(nil) != 0 || FlowHash([]byte{0x15, 0, 0}) != 0 {
		t.Error("non-IP input did not hash to 0")
	}
}

func FuzzFlowHash(f *testing.F) {
	f.Add(ipv4("10.0.0.1", "10.0.0.2", protoTCP, 40000, 443))
	f.Add(ipv6("2001:db8::1", "2001:db8::2", protoHopOpts, []byte{protoUDP, 0, 0, 0, 0, 0, 0, 0}, 5000, 53))
	f.Add(ipv6("2001:db8::1", "2001:db8::2", protoAH, []byte{protoTCP, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 1, 2))
	f.Fuzz(func(t *testing.T, b []byte) {
		h := FlowHash(b)
		if h != FlowHash(append([]byte(nil), b...)) {
			t.Fatal("hash not deterministic")
		}
	})
}
